//! The SSE parser of the HTTP client. Fed in chunks cut anywhere (the
//! first byte says where), it must find exactly the events it finds in
//! the whole stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_http::sse::SseParser;

fuzz_target!(|data: &[u8]| {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let mut whole = SseParser::new();
    let expected = whole.feed(stream);
    let mut chunked = SseParser::new();
    let mut found = Vec::new();
    for chunk in stream.chunks(usize::from(step % 16) + 1) {
        found.extend(chunked.feed(chunk));
    }
    assert_eq!(found, expected, "chunks of {} bytes", step % 16 + 1);
    assert_eq!(chunked.last_event_id(), whole.last_event_id());
    assert_eq!(chunked.retry(), whole.retry());
});
