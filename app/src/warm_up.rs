//! Warm-up: while the page is idle after its first chart, it visits every state one control
//! away from the scenario (each slider position, the number fields doubled and halved, every
//! schedule, model and GPU), [`PASSES`] times, through its own signal and comes back within
//! the same task, so a person's first drag of any control runs as fast as the later ones.
//!
//! Why: the first time a page shows a state costs more than the next times. V8 compiles each
//! wasm function when it is first called (lazy compilation with its baseline compiler,
//! v8.dev/docs/wasm-compilation-pipeline) and recompiles the hot ones with TurboFan in the
//! background (dynamic tiering, v8.dev/blog/wasm-dynamic-tiering); Blink shapes each new run
//! of text once and caches the result (`third_party/blink/renderer/platform/fonts/shaping/
//! shape_cache.h`), for the page's layout and for canvas text alike. Measured in headless
//! Chromium on the project's 2-core machine (issue 16, docs/pp-move-latency.md), 100 PP moves
//! after the page had been idle, p95 over five pages each: 8.9–10.1 ms (median 9.9) with the
//! warm-up this replaced (the views' code on a detached canvas), 7.3–8.7 (8.4) after one
//! visit of each neighbour, 7.1–8.9 (7.7) after three.
//!
//! How: a visit sets the page's scenario to the neighbour, lets every effect that change woke
//! run (the views recompute and redraw, the deferred module hears of it), forces layout, then
//! sets the scenario back and does the same; all of it in one idle callback and the microtasks
//! after it, so no frame is rendered in between and the page never shows the neighbour.
//! While a visit runs, [`visiting`] is true: the effects that start a worker's search or
//! rewrite the URL skip it (they would search or write a state nobody asked for), and
//! `perf` records nothing for the views (the tests read their figures per real move).
//! Visits run only while the page and its controls' panel are scrolled to their tops (a
//! neighbour laid out shorter than a scroll offset would clamp it) and no form control has
//! focus (the neighbour would move a caret), each only with [`MIN_IDLE_MS`] of the idle period
//! left (as many in one period as it has time for): the browser runs idle callbacks after a
//! frame is rendered and after every pending task, so a visit never lands between an input and
//! its frame. It ends at the person's first change of the scenario.
//! When it ends, the root element gets `data-warm-up="done"` and `window.__meshplanWarmUpMs`
//! the time since navigation.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leptos::prelude::*;
use planner_core::input::hardware::gpu_presets;
use planner_core::input::layout::Schedule;
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::view::presets::model_presets;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use crate::inputs::power_of_two_steps;

/// Idle time a callback needs before it runs a visit: a visit (there and back, layout forced)
/// took median 5.2–5.9 ms, p95 10.2–12.6 ms and at most 22–53 ms on the 2-core machine (e2e
/// `the_idle_warm_up_leaves_the_page_as_it_found_it`, five `cargo xtask test` passes); the
/// longest are the first few (22–33 ms for the very first in two quiet runs), which pay the
/// compilation that a person's first move would pay without them. With less left it waits for
/// the next idle period: up to 50 ms when no frame is due, under one frame while a drag or an
/// animation asks for frames, so a visit never runs while the page is producing frames; an
/// input that arrives during a visit waits for its end.
const MIN_IDLE_MS: f64 = 30.0;
/// Visits per neighbour: V8 tiers a function up after it has run enough (above); the p95 of
/// PP moves fell from 8.4 to 7.7 ms (medians over five pages) going from one pass to three,
/// at about 0.9 s of idle time in all instead of 0.35 s.
const PASSES: usize = 3;
/// Executor ticks after each change before layout is forced: each tick runs every task
/// queued before it, so the effects a change woke and the ones they woke in turn have run
/// (eight is more than the page's effects chain; a tick costs microseconds).
const SETTLE_TICKS: usize = 8;

thread_local! {
    /// The page's scenario (set once by the app).
    static SOURCE: RefCell<Option<RwSignal<Scenario>>> = const { RefCell::new(None) };
    /// Started (once).
    static STARTED: Cell<bool> = const { Cell::new(false) };
    /// A visit is under way.
    static VISITING: Cell<bool> = const { Cell::new(false) };
    /// This is the deferred module (`deferred::start`): the visits are the page's.
    static IN_DEFERRED_MODULE: Cell<bool> = const { Cell::new(false) };
}

/// `window`'s property that says a visit is under way, for the deferred module, whose views
/// hear of each visit's scenarios (`deferred::SCENARIO_EVENT`) but share no memory with the page.
const VISITING_PROPERTY: &str = "__meshplanVisiting";

/// Remembers the page's scenario for [`start`].
pub fn watch(scenario: RwSignal<Scenario>) {
    SOURCE.with(|s| *s.borrow_mut() = Some(scenario));
}

/// Whether the scenario now is a warm-up's neighbour (or its way back), not the user's.
pub fn visiting() -> bool {
    VISITING.with(Cell::get) || (IN_DEFERRED_MODULE.with(Cell::get) && page_visiting())
}

/// In the deferred module: [`visiting`] follows the page's visits from now on.
pub fn follow_the_page() {
    IN_DEFERRED_MODULE.with(|d| d.set(true));
}

/// The page's [`VISITING_PROPERTY`].
fn page_visiting() -> bool {
    web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &VISITING_PROPERTY.into()).ok())
        .is_some_and(|v| v.is_truthy())
}

/// Sets [`VISITING`] and its [`VISITING_PROPERTY`] on `window`.
fn set_visiting(on: bool) {
    VISITING.with(|v| v.set(on));
    if let Some(w) = web_sys::window() {
        let _ = js_sys::Reflect::set(&w, &VISITING_PROPERTY.into(), &on.into());
    }
}

/// The states one control away from `s`: every other position of the DP, TP and PP sliders
/// (`inputs::power_of_two_steps`, as the sliders offer them), the micro-batch, sequence and
/// global batch doubled and halved, and every other schedule, model preset and GPU preset.
fn neighbours(s: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    let mut push = |f: &dyn Fn(&mut Scenario)| {
        let mut v = s.clone();
        f(&mut v);
        if v != *s && !out.contains(&v) {
            out.push(v);
        }
    };
    type Knob = fn(&mut Scenario) -> &mut u32;
    let world = u32::try_from(s.cluster.world_size()).unwrap_or(u32::MAX);
    let sliders: [Knob; 3] = [
        |v| &mut v.layout.pp,
        |v| &mut v.layout.dp,
        |v| &mut v.layout.tp,
    ];
    for knob in sliders {
        let current = *knob(&mut s.clone());
        for step in power_of_two_steps(world, current) {
            push(&|v| *knob(v) = step);
        }
    }
    let fields: [Knob; 3] = [
        |v| &mut v.layout.micro_batch,
        |v| &mut v.training.seq_len,
        |v| &mut v.training.global_batch,
    ];
    for knob in fields {
        push(&|v| *knob(v) = knob(v).saturating_mul(2));
        push(&|v| *knob(v) = (*knob(v) / 2).max(1));
    }
    for schedule in Schedule::ALL {
        push(&|v| v.layout.schedule = schedule);
    }
    for preset in model_presets() {
        push(&|v| v.model = ModelChoice::Preset(preset.id.to_string()));
    }
    for gpu in gpu_presets() {
        push(&|v| v.cluster.gpu = gpu.clone());
    }
    out
}

/// Waits until the effects woken so far, and those they wake, have run.
async fn settle() {
    for _ in 0..SETTLE_TICKS {
        leptos::task::tick().await;
    }
}

/// Lays the page out now, as the frame after a real move would.
fn force_layout() {
    if let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    {
        std::hint::black_box(body.get_bounding_client_rect());
    }
}

/// One visit: `scenario` to `to` and back, each followed by its effects and a layout. Ends
/// within the task that called it (the executor runs in microtasks).
async fn visit(scenario: RwSignal<Scenario>, to: Scenario) {
    let Some(from) = scenario.try_get_untracked() else {
        return;
    };
    set_visiting(true);
    scenario.set(to);
    settle().await;
    force_layout();
    scenario.set(from);
    settle().await;
    force_layout();
    set_visiting(false);
}

/// Whether a visit may run now: the page and its controls' panel (a scroll box of its own,
/// whose length depends on the model: expert, custom-shape and adapter controls) scrolled to
/// their tops, and no form control focused.
fn page_is_still() -> bool {
    let Some(w) = web_sys::window() else {
        return false;
    };
    let Some(d) = w.document() else {
        return false;
    };
    let at_top = w.scroll_y().is_ok_and(|y| y == 0.0);
    let controls_at_top = d
        .query_selector("aside.controls")
        .ok()
        .flatten()
        .is_none_or(|a| a.scroll_top() == 0);
    let typing = d
        .active_element()
        .is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"));
    at_top && controls_at_top && !typing
}

/// Marks the root element and records when the warm-up ended.
fn finish() {
    let Some(w) = web_sys::window() else { return };
    let _ = js_sys::Reflect::set(
        &w,
        &"__meshplanWarmUpMs".into(),
        &crate::perf::now_ms().into(),
    );
    if let Some(root) = w.document().and_then(|d| d.document_element()) {
        let _ = root.set_attribute("data-warm-up", "done");
    }
}

/// What the warm-up visits: the neighbours of the scenario it started on.
struct Plan {
    /// The scenario the page had when the warm-up started.
    origin: Scenario,
    /// Its neighbours, in the order they are visited.
    neighbours: Vec<Scenario>,
}

impl Plan {
    /// The `i`-th visit's neighbour; none once every neighbour has had [`PASSES`] visits or
    /// the page's scenario is no longer the one the warm-up started on.
    fn visit_at(&self, scenario: RwSignal<Scenario>, i: usize) -> Option<Scenario> {
        let moved = scenario
            .try_with_untracked(|s| *s != self.origin)
            .unwrap_or(true);
        let count = self.neighbours.len() * PASSES;
        (!moved && i < count).then(|| self.neighbours[i % self.neighbours.len()].clone())
    }
}

/// Asks for the next idle period; visits the next neighbour in it when there is time and the
/// page is still, or asks again. Ends when every neighbour has had [`PASSES`] visits, or as
/// soon as the scenario is no longer the one the warm-up started on: the person has moved a
/// control, their own moves run the code from then on, and the list is no longer one control
/// away from what they see.
fn next(scenario: RwSignal<Scenario>, plan: Rc<Plan>, i: usize) {
    let Some(w) = web_sys::window() else { return };
    let cb = Closure::once_into_js(move |deadline: web_sys::IdleDeadline| {
        let Some(to) = plan.visit_at(scenario, i) else {
            finish();
            return;
        };
        if deadline.time_remaining() < MIN_IDLE_MS || !page_is_still() {
            next(scenario, plan, i);
            return;
        }
        leptos::task::spawn_local(async move {
            let (mut i, mut to) = (i, to);
            loop {
                let t0 = crate::perf::now_ms();
                visit(scenario, to).await;
                let ms = crate::perf::now_ms() - t0;
                crate::perf::record("warm_up", ms);
                crate::perf::mark("warm_up", t0, ms);
                i += 1;
                // The next visit in the same idle period while it has [`MIN_IDLE_MS`] left:
                // a visit leaves the page to be painted again, and the browser starts its
                // next long idle period only a frame or two after that, so one visit per
                // period took 3 s in all (one per 22 ms).
                match plan.visit_at(scenario, i) {
                    None => {
                        finish();
                        return;
                    }
                    Some(after) if deadline.time_remaining() >= MIN_IDLE_MS && page_is_still() => {
                        to = after;
                    }
                    Some(_) => break,
                }
            }
            next(scenario, plan, i);
        });
    });
    let _ = w.request_idle_callback(cb.unchecked_ref());
}

/// Starts the warm-up (once; after the first chart, see `prerender`).
pub fn start() {
    if STARTED.with(|s| s.replace(true)) {
        return;
    }
    let Some(scenario) = SOURCE.with(|s| *s.borrow()) else {
        return;
    };
    let Some(origin) = scenario.try_get_untracked() else {
        return;
    };
    let neighbours = neighbours(&origin);
    next(scenario, Rc::new(Plan { origin, neighbours }), 0);
}

#[cfg(test)]
mod tests {
    use super::{neighbours, visit, visiting};
    use leptos::prelude::*;
    use planner_core::view::presets::{default_scenario, model_presets};
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// Every slider position, both halvings and doublings and every other option are listed
    /// once, none is the scenario itself.
    #[wasm_bindgen_test]
    fn neighbours_cover_every_position_of_every_control() {
        let s = default_scenario();
        let all = neighbours(&s);
        assert!(all.iter().all(|v| *v != s));
        let world = u32::try_from(s.cluster.world_size()).unwrap();
        let positions = crate::inputs::power_of_two_steps(world, s.layout.pp).len() - 1;
        let pp_moves = all.iter().filter(|v| v.layout.pp != s.layout.pp).count();
        assert_eq!(pp_moves, positions, "every other PP position, once");
        assert!(all
            .iter()
            .any(|v| v.layout.micro_batch == s.layout.micro_batch * 2));
        assert!(all
            .iter()
            .any(|v| v.training.seq_len == s.training.seq_len / 2));
        let models = all.iter().filter(|v| v.model != s.model).count();
        assert_eq!(models, model_presets().len() - 1);
        for (i, v) in all.iter().enumerate() {
            assert!(!all[..i].contains(v), "listed twice: {v:?}");
        }
    }

    /// A visit shows its neighbour to the effects, comes back to the scenario it started
    /// from, and says so only while it runs.
    #[wasm_bindgen_test]
    async fn a_visit_runs_the_effects_on_the_neighbour_and_comes_back() {
        // The page's `mount_to` sets the executor up; a test has to (a second call is refused).
        let _ = any_spawner::Executor::init_wasm_bindgen();
        let owner = Owner::new();
        owner.set();
        let s = default_scenario();
        let scenario = RwSignal::new(s.clone());
        let seen: Rc<RefCell<Vec<(u32, bool)>>> = Rc::default();
        let log = Rc::clone(&seen);
        Effect::new(move |_| {
            let pp = scenario.with(|sc| sc.layout.pp);
            log.borrow_mut().push((pp, visiting()));
        });
        leptos::task::tick().await;
        let mut to = s.clone();
        to.layout.pp = s.layout.pp * 2;
        visit(scenario, to).await;
        assert_eq!(scenario.get_untracked(), s, "the scenario it started from");
        assert!(!visiting());
        let seen = seen.borrow();
        assert!(
            seen.contains(&(s.layout.pp * 2, true)),
            "the effect ran on the neighbour, flagged: {seen:?}"
        );
        assert_eq!(
            seen.last(),
            Some(&(s.layout.pp, true)),
            "and on the way back, still flagged"
        );
    }
}
