//! The `file://` URIs of paths, as resources, links and update
//! notifications name them.

use std::path::Path;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// The characters written as they are in a file URI's path.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The `file://` URI of an absolute path.
pub(crate) fn file_uri(path: &Path) -> String {
    format!(
        "file://{}",
        utf8_percent_encode(&path.to_string_lossy(), PATH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_percent_encoded() {
        let uri = file_uri(Path::new("/tmp/a b/ü#.txt"));
        assert_eq!(uri, "file:///tmp/a%20b/%C3%BC%23.txt");
    }
}
