//! meshplan explorer: a client-side Leptos app over planner-core.
//!
//! The app computes nothing itself: every number on the page comes from
//! planner-core, and every input event recomputes every view.
//!
//! Two wasm modules are built from this library (`ARCHITECTURE.md`): the page
//! (`src/main.rs`, [`start_page`]), which index.html loads, and the deferred sections
//! (`src/bin/app-deferred.rs`, [`deferred::start`]), which the page loads once its first
//! chart is on screen. Each links only the code its own views reach.

pub mod app;
mod canvas_backend;
mod charts;
pub mod deferred;
mod format;
mod frames;
mod inputs;
mod perf;
mod prerender;
mod share;
mod views;
mod warm_up;

/// The page module's entry: mounts the page and starts the pre-rendered copy's retirement.
pub fn start_page() {
    // Panics become readable console errors instead of "unreachable executed".
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
    prerender::mounted();
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

    wasm_bindgen_test_configure!(run_in_browser);

    fn text(selector: &str) -> Option<String> {
        web_sys::window()?
            .document()?
            .query_selector(selector)
            .ok()??
            .text_content()
    }

    /// The whole app mounts in a real browser and its views show planner-core figures.
    #[wasm_bindgen_test]
    fn app_mounts_and_shows_every_view() {
        // mount_to_body leaves the app mounted for the page's lifetime.
        leptos::mount::mount_to_body(crate::app::App);
        for testid in [
            "state-total-0",
            "state-total-3",
            "peak-total-1",
            "bubble-idle",
            "kv-per-token",
            "max-concurrent",
        ] {
            let t = text(&format!("[data-testid={testid}]"));
            assert!(
                t.as_deref().is_some_and(|t| !t.trim().is_empty()),
                "{testid} is empty: {t:?}"
            );
        }
        // Llama 3.1 70B, BF16 KV: 2 × 80 layers × 8 KV heads × 128 × 2 B = 327,680 B.
        assert_eq!(
            text("[data-testid=kv-per-token]").as_deref(),
            Some("328 KB")
        );
    }
}
