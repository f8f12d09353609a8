//! Pagination cursors: any text a client sends as a cursor is refused
//! with -32602 unless this server made it, and one it made points where
//! it was made to point.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mcp_server::Signer;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    kind: &'a str,
    generation: u64,
    offset: u32,
    cursor: &'a str,
}

fuzz_target!(|input: Input| {
    static SIGNER: std::sync::OnceLock<Signer> = std::sync::OnceLock::new();
    let signer = SIGNER.get_or_init(Signer::random);
    if let Err(error) = signer.offset(input.kind, input.generation, input.cursor) {
        assert_eq!(error.code, -32602);
    }
    let made = signer.cursor(input.kind, input.generation, input.offset as usize);
    assert_eq!(
        signer.offset(input.kind, input.generation, &made).ok(),
        Some(input.offset as usize)
    );
    assert!(
        signer
            .offset(input.kind, input.generation.wrapping_add(1), &made)
            .is_err()
    );
});
