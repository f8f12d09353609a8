//! The JSON-RPC frame parser, as a transport reads what a peer sends: a
//! single message or a batch, with the `_meta` of a stateless request
//! recognised. A frame that parses is written back and must parse again
//! to the same messages.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mcp_core::{Role, ServerIdentity, SessionConfig};
use mcp_schema::jsonrpc::{Frame, Message};
use mcp_schema::{Implementation, ServerCapabilities};

fn server_config() -> &'static SessionConfig {
    static CONFIG: std::sync::OnceLock<SessionConfig> = std::sync::OnceLock::new();
    CONFIG.get_or_init(|| {
        let identity = ServerIdentity::new(
            Implementation::new("fuzz", "0"),
            ServerCapabilities::default(),
        );
        SessionConfig::new(Role::Server(Arc::new(identity)))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Message::parse_frame(text);
    let read = server_config().read_frame(text);
    assert_eq!(
        parsed.is_ok(),
        read.is_ok(),
        "the two readers disagree on {text:?}"
    );
    if let Ok(Frame::Single(message)) = parsed {
        let written = message.to_json();
        let again = Message::parse(&written)
            .unwrap_or_else(|e| panic!("{written:?} written from {text:?} does not parse: {e:?}"));
        assert_eq!(
            again.to_json(),
            written,
            "writing is not stable for {text:?}"
        );
    }
});
