//! meshplan explorer: a client-side Leptos app over planner-core.
//!
//! The app computes nothing itself: every number on the page comes from
//! planner-core, and every input event recomputes every view.

mod app;
mod charts;
mod format;
mod inputs;
mod share;
mod views;

fn main() {
    // Panics become readable console errors instead of "unreachable executed".
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
