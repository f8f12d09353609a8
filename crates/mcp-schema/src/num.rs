//! Serialization of `f64` fields: integral values are written as integers,
//! so `50` read from the wire is written back as `50`, not `50.0`.

use serde::Serializer;

/// The largest integer an `f64` represents exactly (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

/// Writes an `f64`, as an integer when it is one.
pub(crate) fn f64<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() <= EXACT {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

/// Writes an optional `f64` (only called when present), as an integer when it is one.
pub(crate) fn opt_f64<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => f64(v, s),
        None => s.serialize_none(),
    }
}
