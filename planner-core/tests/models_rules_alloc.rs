//! `layout_rule_violations` allocates nothing when every rule holds (the mesh
//! search calls it for every candidate). Own test binary: it installs a counting allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use planner_core::resolve::presets::{article_mesh_scenario, model_preset};
use planner_core::resolve::validate::layout_rule_violations;

struct Counting;

// Per thread: the test harness's own threads (output capture, the "running for over 60
// seconds" notice on a loaded machine) allocate too, and must not count.
thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // `try_with`: the slot may be gone while the thread is being torn down.
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn no_allocation_without_violations() {
    let s = article_mesh_scenario();
    let model = model_preset("llama-3.1-70b").unwrap();
    let before = allocations();
    let mut found = 0;
    for _ in 0..1000 {
        found += layout_rule_violations(&model, &s).len();
    }
    let after = allocations();
    assert_eq!(found, 0);
    assert_eq!(after - before, 0);
}
