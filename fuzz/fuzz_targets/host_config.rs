//! The host's readers of the files users already have: MCP config files
//! (Claude, Cursor, VS Code, Zed dialects, JSONC) with their variables, and
//! the host's TOML settings. The first byte picks the reader.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mcp_host::HostSettings;
use mcp_host::config::{self, Variables};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if which % 2 == 0 {
        let env = BTreeMap::from([
            ("HOME".to_owned(), "/home/fuzz".to_owned()),
            ("TOKEN".to_owned(), "t".to_owned()),
        ]);
        let vars = Variables::from_map(env).workspace("/work");
        let _ = config::parse(text, Path::new("mcp.json"), &vars);
    } else {
        let _ = HostSettings::parse(text);
    }
});
