//! RFC 6570 templates and the matching of URIs against them, as a server
//! finds the resource template a `resources/read` belongs to. The first
//! line is the template, the rest the URI.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_server::TemplateDef;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (template, uri) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(def) = TemplateDef::new(template, "fuzz", |_, _, _| async { Ok(Vec::new()) }) else {
        return;
    };
    if let Some(vars) = def.matches(uri) {
        assert!(
            vars.values().all(|v| !v.is_empty()),
            "{template:?} on {uri:?}: {vars:?}"
        );
    }
});
