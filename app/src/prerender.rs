//! The build-time copy of the page (`#meshplan-prerender`, written into `index.html`
//! by `cargo run -p e2e --bin prerender`): it covers the live page while the live page
//! lays out and draws, and is removed one frame after the first live chart is drawn,
//! so the visitor never sees an empty chart. Also the `performance` marks the
//! end-to-end tests read: `meshplan:mounted`, `meshplan:first-chart`, `meshplan:live`.
//!
//! Timeouts are gloo-timers'; the frame callbacks stay `request_animation_frame` through
//! web-sys (gloo-timers has no frames; leptos' `request_animation_frame` allocates the same
//! closure). BUNDLE_MEASUREMENT (wasm-release, `wasm-opt -Oz`, `gzip -9`, wasm + JS glue):
//! gloo-timers here with gloo-events for the page's listeners (`app.rs`, `deferred.rs`,
//! `views/visibility.rs`) against web-sys closures: first load 78 B smaller, deferred module
//! 0.4 KB larger.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

/// The copy's element id.
const ID: &str = "meshplan-prerender";
/// Longest the copy stays after the app mounted, when no chart draws (an invalid link,
/// a page scrolled past every chart).
const FALLBACK_MS: u32 = 1500;

fn mark(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = p.mark(name);
    }
}

fn in_frames(frames: u32, f: impl FnOnce() + 'static) {
    let Some(w) = web_sys::window() else { return };
    if frames == 0 {
        f();
        return;
    }
    let cb = Closure::once_into_js(move || in_frames(frames - 1, f));
    let _ = w.request_animation_frame(cb.unchecked_ref());
}

/// Work queued for later, run once.
type Queued = Vec<Box<dyn FnOnce()>>;

thread_local! {
    /// What waits for the first screen ([`after_first_screen`]); `None` once it has run.
    static WAITING: std::cell::RefCell<Option<Queued>> = std::cell::RefCell::new(Some(Vec::new()));
}

/// Runs `f` in a task after the frame that shows the live first screen (the copy retired,
/// the first chart drawn), or after [`FALLBACK_MS`] if no chart draws; at once (in a task)
/// if that has passed. The page mounts what lies below its first screen this way, so the
/// first chart waits for none of it.
pub fn after_first_screen(f: impl FnOnce() + 'static) {
    let f: Box<dyn FnOnce()> = Box::new(f);
    let late = WAITING.with(|w| match w.borrow_mut().as_mut() {
        Some(list) => {
            list.push(f);
            None
        }
        None => Some(f),
    });
    if let Some(f) = late {
        in_a_task(f);
    }
}

/// Runs `f` in a task of its own: queued from a frame's callback, after that frame is rendered.
fn in_a_task(f: impl FnOnce() + 'static) {
    gloo_timers::callback::Timeout::new(0, f).forget();
}

/// Removes the copy (once; later calls do nothing) and marks `meshplan:live`; then, after
/// this frame, runs what waits for the first screen ([`after_first_screen`]: the sections
/// below it, whose mount loads the deferred module) and starts the warm-up
/// (`warm_up::start`, once; it runs when the page is idle, after those).
fn retire() {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if let Some(el) = doc.get_element_by_id(ID) {
        el.remove();
        mark("meshplan:live");
    }
    if WAITING.with(|w| w.borrow().is_some()) {
        in_a_task(|| {
            for f in WAITING.with(|w| w.borrow_mut().take()).unwrap_or_default() {
                f();
            }
        });
    }
    crate::warm_up::start();
}

/// Right after the app mounted: marks `meshplan:mounted` and removes the copy after
/// [`FALLBACK_MS`] if no chart has drawn by then.
pub fn mounted() {
    mark("meshplan:mounted");
    gloo_timers::callback::Timeout::new(FALLBACK_MS, retire).forget();
}

thread_local! {
    static FIRST_CHART: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// In the deferred module: the page's first chart has been drawn before it loaded.
pub fn first_chart_already_drawn() {
    FIRST_CHART.with(|f| f.set(true));
}

/// A chart canvas drew: the first time, marks `meshplan:first-chart` and removes the
/// copy after the next frame, which shows the live chart.
pub fn chart_drawn() {
    if FIRST_CHART.with(|f| f.replace(true)) {
        return;
    }
    mark("meshplan:first-chart");
    in_frames(1, retire);
}
