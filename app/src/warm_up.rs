//! Warm-up: the views' per-move code run on the scenario's neighbours while the page is
//! idle after its first chart, so the first slider moves run optimized code.
//!
//! Why: V8 compiles a wasm function with its baseline compiler (Liftoff) when it is first
//! called and recompiles it with its optimizing compiler (TurboFan), in the background,
//! only once it has run often: "dynamic tiering" (v8.dev/blog/wasm-dynamic-tiering,
//! v8.dev/docs/wasm-compilation-pipeline). Without this, the first moves after a load run
//! baseline code while TurboFan competes for the same cores: in headless Chromium on this
//! project's 2-core development machine, 200 PP moves on a fresh page took p50 7.3–7.6 ms /
//! p95 13.4–16.5 ms over the first 100 moves against 6.4–6.7 / 9.4–11.5 ms over the next
//! 100 (a Chrome trace showed 2.4 ms of `wasm.TopTierCompilation` on worker threads per
//! move).
//!
//! What runs: for each neighbour of the scenario (each input one step up and down, the
//! other schedules, models and GPUs), the memory and pipeline views' figures and charts,
//! drawn into a canvas that is never attached to the page, and the controls' issues and
//! share link. Neighbours run in idle callbacks (`requestIdleCallback`), at most
//! [`PER_CALLBACK`] per callback and each only with [`MIN_IDLE_MS`] left before the next
//! frame: the browser runs idle callbacks only after a frame is rendered and after every
//! pending task (an input's effects, the frame it paints), so warm-up never lands between
//! a move and its frame and never delays an input by more than a few neighbours' work
//! (about 3 ms each).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leptos::prelude::*;
use planner_core::edges::link;
use planner_core::input::hardware::gpu_presets;
use planner_core::input::layout::Schedule;
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::resolve::presets::model_presets;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;

use crate::charts::Theme;

/// Passes over the neighbour list: each view's functions run this many times per
/// neighbour kind, enough calls for V8 to tier most of them up.
const PASSES: usize = 3;
/// Most neighbours one idle callback runs: the browser gives a callback up to 50 ms when
/// no frame is due, and an input arriving meanwhile waits for it.
const PER_CALLBACK: usize = 3;
/// Idle time a callback needs before it runs a neighbour (one takes about 3 ms; less
/// left and it waits for the next idle period).
const MIN_IDLE_MS: f64 = 8.0;
/// The detached canvas's CSS width: the views' charts at the page's 1440-pixel layout.
const CSS_WIDTH: f64 = 700.0;

thread_local! {
    /// The page's scenario and theme (set once by the app).
    static SOURCE: RefCell<Option<(RwSignal<Scenario>, RwSignal<Theme>)>> = const { RefCell::new(None) };
    /// Started (once).
    static STARTED: Cell<bool> = const { Cell::new(false) };
}

/// Remembers the page's scenario and theme for [`start`].
pub fn watch(scenario: RwSignal<Scenario>, theme: RwSignal<Theme>) {
    SOURCE.with(|s| *s.borrow_mut() = Some((scenario, theme)));
}

/// The scenario's neighbours: every input the latency table moves, one step each way.
fn neighbours(s: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    // A step that changes nothing (a micro-batch of 1 halved, the current schedule, model
    // or GPU) or lands on a neighbour already listed adds no work worth running.
    let mut push = |f: &dyn Fn(&mut Scenario)| {
        let mut v = s.clone();
        f(&mut v);
        if v != *s && !out.contains(&v) {
            out.push(v);
        }
    };
    type Knob = fn(&mut Scenario) -> &mut u32;
    // Only what a control can set: the DP, TP and PP sliders step over powers of two up to
    // the cluster's GPUs (`inputs::power_of_two_steps`); the number fields take any whole
    // number from 1.
    let world = u32::try_from(s.cluster.world_size()).unwrap_or(u32::MAX);
    let sliders: [Knob; 3] = [
        |v| &mut v.layout.dp,
        |v| &mut v.layout.tp,
        |v| &mut v.layout.pp,
    ];
    let fields: [Knob; 3] = [
        |v| &mut v.layout.micro_batch,
        |v| &mut v.training.seq_len,
        |v| &mut v.training.global_batch,
    ];
    for knob in sliders {
        push(&|v| *knob(v) = knob(v).saturating_mul(2).min(world).max(1));
        push(&|v| *knob(v) = (*knob(v) / 2).max(1));
    }
    for knob in fields {
        push(&|v| *knob(v) = knob(v).saturating_mul(2));
        push(&|v| *knob(v) = (*knob(v) / 2).max(1));
    }
    for schedule in Schedule::ALL {
        push(&|v| v.layout.schedule = schedule);
    }
    for preset in model_presets().into_iter().take(4) {
        push(&|v| v.model = ModelChoice::Preset(preset.id.to_string()));
    }
    for gpu in gpu_presets().into_iter().take(3) {
        push(&|v| v.cluster.gpu = gpu.clone());
    }
    out
}

/// One neighbour's work: what a move to it runs in the memory and pipeline views and
/// the controls.
fn run_one(s: &Scenario, canvas: &HtmlCanvasElement, theme: &Theme) {
    crate::views::warm_up(s, canvas, CSS_WIDTH, theme);
    let model = s.model_spec().map_err(|e| e.to_string());
    std::hint::black_box(crate::app::collect_issues(s, &model));
    std::hint::black_box(link::encode(s));
}

/// Runs the next neighbours while this idle period has time for them, then asks for the next
/// idle period, until every neighbour has run [`PASSES`] times.
fn step(tasks: Rc<Vec<Scenario>>, i: usize, canvas: HtmlCanvasElement, theme: Theme) {
    let Some(w) = web_sys::window() else { return };
    let next = Closure::once_into_js(move |deadline: web_sys::IdleDeadline| {
        let mut i = i;
        let mut ran = 0;
        while ran < PER_CALLBACK
            && i < tasks.len() * PASSES
            && deadline.time_remaining() >= MIN_IDLE_MS
        {
            crate::perf::timed("warm_up", || {
                run_one(&tasks[i % tasks.len()], &canvas, &theme);
            });
            i += 1;
            ran += 1;
        }
        if i < tasks.len() * PASSES {
            step(tasks, i, canvas, theme);
        }
    });
    let _ = w.request_idle_callback(next.unchecked_ref());
}

/// Starts the warm-up (once; after the first chart, see `prerender`).
pub fn start() {
    if STARTED.with(|s| s.replace(true)) {
        return;
    }
    let Some((scenario, theme)) = SOURCE.with(|s| *s.borrow()) else {
        return;
    };
    let Some(canvas) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("canvas").ok())
        .and_then(|c| c.dyn_into::<HtmlCanvasElement>().ok())
    else {
        return;
    };
    let (Some(s), Some(theme)) = (scenario.try_get_untracked(), theme.try_get_untracked()) else {
        return;
    };
    let tasks = neighbours(&s);
    if !tasks.is_empty() {
        step(Rc::new(tasks), 0, canvas, theme);
    }
}

#[cfg(test)]
mod tests {
    use super::{neighbours, run_one};
    use planner_core::resolve::presets::default_scenario;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// Every input the latency table moves has a neighbour, none is the scenario itself,
    /// and each runs the views' code without a panic (a panic would end the page's module).
    #[wasm_bindgen_test]
    fn every_neighbour_is_a_move_away_and_runs() {
        let s = default_scenario();
        let all = neighbours(&s);
        assert!(all.iter().all(|v| *v != s));
        let moved = |f: fn(&planner_core::input::scenario::Scenario) -> String| {
            all.iter().any(|v| f(v) != f(&s))
        };
        assert!(moved(|v| v.layout.dp.to_string()));
        assert!(moved(|v| v.layout.tp.to_string()));
        assert!(moved(|v| v.layout.pp.to_string()));
        assert!(moved(|v| v.layout.micro_batch.to_string()));
        assert!(moved(|v| v.training.seq_len.to_string()));
        assert!(moved(|v| v.training.global_batch.to_string()));
        assert!(moved(|v| format!("{:?}", v.layout.schedule)));
        assert!(moved(|v| format!("{:?}", v.model)));
        assert!(moved(|v| v.cluster.gpu.id.clone()));
        let canvas: web_sys::HtmlCanvasElement = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.create_element("canvas").ok())
            .and_then(|c| c.dyn_into().ok())
            .expect("a canvas");
        let theme = crate::charts::Theme::new(false);
        for v in &all {
            run_one(v, &canvas, &theme);
        }
        assert!(
            canvas.width() > 0,
            "the charts sized the canvas they drew into"
        );
    }
}
