//! `layout_rule_violations` allocates nothing when every rule holds (the mesh
//! search calls it for every candidate). Own test binary: it installs a counting allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use planner_core::presets::{article_mesh_scenario, model_preset};
use planner_core::validate::layout_rule_violations;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
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
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let mut found = 0;
    for _ in 0..1000 {
        found += layout_rule_violations(&model, &s).len();
    }
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(found, 0);
    assert_eq!(after - before, 0);
}
