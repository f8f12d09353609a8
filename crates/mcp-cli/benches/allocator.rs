//! `mcp`'s own mimalloc `GlobalAlloc` (`src/allocator.rs`, which takes
//! mimalloc's plain entry points where a word's alignment is enough)
//! against the `mimalloc` crate's (which always takes the aligned ones),
//! in one process on one mimalloc heap: the bench's global allocator
//! hands each call to one or the other as a switch says, so both pay the
//! same switch.
//!
//! In the group `allocator`:
//! - `json/{own,crate}`: what a request costs in allocations: a
//!   `tools/call` parsed into a `serde_json::Value` and its result
//!   serialized back, as the engine's slow path does.
//! - `blocks/{own,crate}`: 64 blocks of the sizes a request allocates
//!   most (16 to 1024 bytes, alignment 1 and 8), taken and given back.
//!
//! Run: `cargo bench -p mcp-cli --bench allocator`

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "../src/allocator.rs"]
mod own;

/// Whether the crate's allocator serves the calls (else `mcp`'s own).
static CRATE: AtomicBool = AtomicBool::new(false);

/// The bench's allocator: `mcp`'s own or the crate's, as [`CRATE`] says.
/// Both free and resize any mimalloc block, so switching is sound at any
/// time.
struct Switch;

// SAFETY: each call goes to one of two mimalloc GlobalAllocs, whose blocks
// either can free and resize.
unsafe impl GlobalAlloc for Switch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            if CRATE.load(Ordering::Relaxed) {
                mimalloc::MiMalloc.alloc(layout)
            } else {
                own::MiMalloc.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            if CRATE.load(Ordering::Relaxed) {
                mimalloc::MiMalloc.alloc_zeroed(layout)
            } else {
                own::MiMalloc.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on; both free with mi_free.
        unsafe { own::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            if CRATE.load(Ordering::Relaxed) {
                mimalloc::MiMalloc.realloc(ptr, layout, new_size)
            } else {
                own::MiMalloc.realloc(ptr, layout, new_size)
            }
        }
    }
}

#[global_allocator]
static ALLOCATOR: Switch = Switch;

/// The allocators compared, by name.
const CHOICES: [(&str, bool); 2] = [("own", false), ("crate", true)];

/// A request's allocations: a `tools/call` parsed, its result serialized.
fn json_round_trip(request: &str) -> String {
    let parsed: Value = serde_json::from_str(request).expect("the request is JSON");
    let text = parsed["params"]["arguments"]["message"]
        .as_str()
        .unwrap_or_default();
    let response = json!({
        "jsonrpc": "2.0",
        "id": parsed["id"],
        "result": {"content": [{"type": "text", "text": format!("Echo: {text}")}]},
    });
    serde_json::to_string(&response).expect("the response serializes")
}

/// The sizes and alignments a request allocates most.
const BLOCKS: [(usize, usize); 8] = [
    (16, 8),
    (24, 8),
    (32, 1),
    (48, 8),
    (80, 8),
    (128, 1),
    (256, 8),
    (1024, 1),
];

/// 64 blocks of a request's usual sizes, taken, then given back.
fn blocks() {
    let layouts = (0..64).map(|i| {
        let (size, align) = BLOCKS[i % BLOCKS.len()];
        Layout::from_size_align(size, align).expect("a valid layout")
    });
    let mut taken = [(std::ptr::null_mut(), Layout::new::<u8>()); 64];
    for (slot, layout) in taken.iter_mut().zip(layouts) {
        // SAFETY: a non-zero size.
        *slot = (unsafe { std::alloc::alloc(layout) }, layout);
    }
    for (block, layout) in black_box(taken) {
        // SAFETY: each block was taken above with this layout, and is given
        // back once.
        unsafe { std::alloc::dealloc(block, layout) }
    }
}

fn allocator(c: &mut Criterion) {
    let request = serde_json::to_string(&json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hello, benchmark"},
                   "_meta": {"progressToken": 7}},
    }))
    .expect("the request serializes");
    let mut group = c.benchmark_group("allocator");
    for (name, crate_one) in CHOICES {
        CRATE.store(crate_one, Ordering::Relaxed);
        group.bench_function(format!("json/{name}"), |b| {
            b.iter(|| json_round_trip(black_box(&request)))
        });
        group.bench_function(format!("blocks/{name}"), |b| b.iter(blocks));
    }
    group.finish();
}

criterion_group!(benches, allocator);
criterion_main!(benches);
