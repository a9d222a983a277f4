//! Timing in the browser (`performance.now()`): how long each view's work takes
//! per input, for the end-to-end tests to read and report.

use wasm_bindgen::JsCast;

/// Milliseconds since the page loaded.
pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// Runs `f` and adds its wall time to `window.__meshplanMs[name]` (milliseconds)
/// and one to `window.__meshplanRuns[name]`, so end-to-end tests can see what
/// each view costs per input and how often it ran.
pub fn timed<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let t0 = now_ms();
    let out = f();
    let dt = now_ms() - t0;
    add("__meshplanMs", name, dt);
    add("__meshplanRuns", name, 1.0);
    out
}

/// Adds `ms` measured elsewhere (a worker's own clock) to `window.__meshplanMs[name]`
/// and one to `window.__meshplanRuns[name]`, as [`timed`] does.
pub fn record(name: &str, ms: f64) {
    add("__meshplanMs", name, ms);
    add("__meshplanRuns", name, 1.0);
}

/// `window[table][name] += amount`, creating the table on first use; nothing while the
/// warm-up visits a neighbour (`warm_up::visiting`: the tables are per real move).
fn add(table: &str, name: &str, amount: f64) {
    if crate::warm_up::visiting() {
        return;
    }
    let Some(w) = web_sys::window() else { return };
    let key = wasm_bindgen::JsValue::from_str(table);
    let table = js_sys::Reflect::get(&w, &key)
        .ok()
        .filter(|v| v.is_object())
        .unwrap_or_else(|| {
            let o: wasm_bindgen::JsValue = js_sys::Object::new().into();
            let _ = js_sys::Reflect::set(&w, &key, &o);
            o
        });
    let name = wasm_bindgen::JsValue::from_str(name);
    let prev = js_sys::Reflect::get(&table, &name)
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0);
    let _ = js_sys::Reflect::set(
        &table,
        &name,
        &wasm_bindgen::JsValue::from_f64(prev + amount),
    );
}

/// Appends `[name, start_ms, duration_ms]` to `window.__meshplanTimeline` when a test has
/// made it an array (nothing otherwise): where in a frame each piece of work ran, for the
/// end-to-end tests to print next to the frame gaps.
pub fn mark(name: &str, start_ms: f64, duration_ms: f64) {
    if crate::warm_up::visiting() {
        return;
    }
    let Some(w) = web_sys::window() else { return };
    let Ok(line) = js_sys::Reflect::get(&w, &wasm_bindgen::JsValue::from_str("__meshplanTimeline"))
    else {
        return;
    };
    let Some(line) = line.dyn_ref::<js_sys::Array>() else {
        return;
    };
    let entry = js_sys::Array::new();
    entry.push(&wasm_bindgen::JsValue::from_str(name));
    entry.push(&wasm_bindgen::JsValue::from_f64(start_ms));
    entry.push(&wasm_bindgen::JsValue::from_f64(duration_ms));
    line.push(&entry);
}

/// Runs `f`, adds its time as [`timed`] does and marks it on the timeline ([`mark`]).
pub fn timed_mark<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let t0 = now_ms();
    let out = timed(name, f);
    mark(name, t0, now_ms() - t0);
    out
}
