//! Timing in the browser (`performance.now()`): how long each view's work takes
//! per input, for the end-to-end tests to read and report.

/// Milliseconds since the page loaded.
pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// Runs `f` and adds its wall time to `window.__meshplanMs[name]` (milliseconds),
/// so end-to-end tests can see what each view costs per input.
pub fn timed<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let t0 = now_ms();
    let out = f();
    let dt = now_ms() - t0;
    if let Some(w) = web_sys::window() {
        let key = wasm_bindgen::JsValue::from_str("__meshplanMs");
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
        let _ = js_sys::Reflect::set(&table, &name, &wasm_bindgen::JsValue::from_f64(prev + dt));
    }
    out
}
