//! meshplan explorer: a client-side Leptos app over planner-core.
//!
//! The app computes nothing itself: every number on the page comes from
//! planner-core, and every input event recomputes every view.
//!
//! Two wasm modules are built from this library (`ARCHITECTURE.md`): the page
//! (`src/main.rs`, [`start_page`]), which index.html loads, and the deferred sections
//! (`src/bin/app-deferred.rs`, [`deferred::start`]), which the page loads once its first
//! chart is on screen. Each links only the code its own views reach.

// Product functions fit on a screen (clippy.toml sets the threshold); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
pub mod app;
mod canvas_backend;
mod charts;
mod control_specs;
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

    /// Resolves after `ms` milliseconds (a `setTimeout`).
    async fn sleep_ms(ms: i32) {
        let promise = js_sys::Promise::new(&mut |resolve, _| {
            if let Some(w) = web_sys::window() {
                let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
            }
        });
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }

    /// The whole app mounts in a real browser and its views show planner-core figures; the
    /// sections below the first screen mount after its first chart (`prerender::after_first_screen`).
    #[wasm_bindgen_test]
    async fn app_mounts_and_shows_every_view() {
        // As the page starts (mount_to_body leaves the app mounted for the page's lifetime).
        crate::start_page();
        // The first screen is there at once; the serving section below it is not yet.
        assert!(text("[data-testid=state-total-3]").is_some_and(|t| !t.trim().is_empty()));
        assert_eq!(text("[data-testid=max-concurrent]"), None);
        // Then within the fallback's 1.5 s (a frame or two after the first chart, normally).
        for _ in 0..300 {
            if text("[data-testid=max-concurrent]").is_some() {
                break;
            }
            sleep_ms(10).await;
        }
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
