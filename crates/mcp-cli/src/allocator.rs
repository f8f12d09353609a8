//! The allocator of the `mcp` process: mimalloc, which serves the many
//! small, short-lived allocations of a request (JSON texts, futures, maps)
//! in far fewer instructions than the system allocator, and hands freed
//! memory back to the system.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// Every mimalloc block is aligned to a machine word at least.
const BLOCK_ALIGN: usize = std::mem::align_of::<usize>();

/// mimalloc, asked for a plain block where the layout needs no more than
/// the alignment every block has (most of them), and through its aligned
/// entry points, which check and adjust alignment at some cost, only
/// otherwise.
pub struct MiMalloc;

/// A block for `layout` from `plain` where a word's alignment is enough,
/// else from `aligned`.
///
/// # Safety
///
/// `layout` has a non-zero size, and the two functions are the same
/// mimalloc allocation in its plain and aligned forms.
unsafe fn block_for(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    let block = if layout.align() <= BLOCK_ALIGN {
        // SAFETY: a plain allocation of any size is sound.
        unsafe { plain(layout.size()) }
    } else {
        // SAFETY: the alignment is a power of two, as Layout ensures.
        unsafe { aligned(layout.size(), layout.align()) }
    };
    block.cast()
}

// SAFETY: each method hands the layout's size (and, past a word, its
// alignment) to the mimalloc function made for it; mimalloc's plain blocks
// are word-aligned, so those meet any layout of word alignment or less.
// Blocks from either kind of entry point are freed and resized by the same
// allocator.
unsafe impl GlobalAlloc for MiMalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: GlobalAlloc's contract gives a non-zero size.
        unsafe { block_for(layout, mi_malloc, mi_malloc_aligned) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe { block_for(layout, mi_zalloc, mi_zalloc_aligned) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract).
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let block = if layout.align() <= BLOCK_ALIGN {
            // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract).
            unsafe { mi_realloc(ptr.cast::<c_void>(), new_size) }
        } else {
            // SAFETY: as above; the alignment is a power of two.
            unsafe { mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()) }
        };
        block.cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_meet_their_layouts_and_keep_their_contents() {
        let allocator = MiMalloc;
        for (size, align) in [(1, 1), (24, 8), (40, 8), (48, 16), (100, 32), (4096, 4096)] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: non-zero sizes; each block is used within its size and
            // freed once, by the allocator that made it.
            unsafe {
                let zeroed = allocator.alloc_zeroed(layout);
                assert_eq!(zeroed as usize % align, 0, "{size}/{align} zeroed");
                assert!((0..size).all(|i| *zeroed.add(i) == 0));
                allocator.dealloc(zeroed, layout);

                let block = allocator.alloc(layout);
                assert_eq!(block as usize % align, 0, "{size}/{align}");
                block.write_bytes(0xAB, size);
                let grown = allocator.realloc(block, layout, size * 3);
                assert_eq!(grown as usize % align, 0, "{size}/{align} grown");
                assert!((0..size).all(|i| *grown.add(i) == 0xAB));
                allocator.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
            }
        }
    }
}
