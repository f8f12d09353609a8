//! The header-value codec of 2026-07-28 (`=?base64?...?=`) and the reading
//! of `x-mcp-header` annotations from a tool's input schema. Any text
//! encodes to a header-safe value that decodes back to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_schema::header_params::{decode_header_value, encode_header_value, header_params};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = decode_header_value(text);
    let encoded = encode_header_value(text);
    assert!(
        encoded
            .bytes()
            .all(|b| b == b'\t' || (0x20..0x7f).contains(&b)),
        "{text:?} encodes to {encoded:?}, not a header value"
    );
    let decoded = decode_header_value(&encoded)
        .unwrap_or_else(|e| panic!("{encoded:?} (from {text:?}) does not decode: {e:?}"));
    assert_eq!(decoded, text, "round trip through {encoded:?}");
    if let Ok(schema) = serde_json::from_str::<serde_json::Value>(text) {
        let _ = header_params(&schema);
    }
});
