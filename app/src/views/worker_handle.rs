//! The page's end of a worker (`app-worker/`): spawned with its two handlers, which live as
//! long as the worker. [`kept_worker`] keeps one for the page (the mesh search, the serving
//! search, the bill); the accuracy section starts one when opened, `worker_job::ask` one per
//! import.
//!
//! The handlers are gloo-events listeners. BUNDLE_MEASUREMENT (wasm-release, `wasm-opt -Oz`,
//! `gzip -9`, wasm + JS glue): against `set_onmessage`/`set_onerror` with web-sys closures, the
//! page's first load is 89 B smaller and the deferred module 250 B larger (the glue drops the
//! two setters; gloo-events' code is already linked for the page's other listeners).
//!
//! The worker itself is spawned on web-sys, not gloo-worker: gloo-worker's bridge speaks its own protocol
//! (bincode-encoded messages through its `Codec`, a worker registered with its `Registrable`
//! entry point), while these workers speak planner-core's text protocol
//! (`planner_core::edges::validation::PageReply` and each page's request/reply) and the mesh
//! search answers with a transferred byte buffer; moving to it would rewrite the worker's side
//! too and add bincode and serde's derive code to both modules.

use gloo_events::EventListener;
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker};

/// The worker's loader (trunk's `data-loader-shim`: `importScripts` of the
/// no-modules glue, then its wasm), relative to the page.
pub const WORKER_URL: &str = "./app-worker_loader.js";

/// Starts the worker; `on_message` gets the worker and each message, `on_error` each
/// failure's message. Errs with why it did not start.
pub fn spawn_worker(
    on_message: impl FnMut(&Worker, MessageEvent) + 'static,
    mut on_error: impl FnMut(String) + 'static,
) -> Result<Worker, String> {
    let worker = Worker::new(WORKER_URL).map_err(|e| format!("{e:?}"))?;
    let mut on_message = on_message;
    let handle = worker.clone();
    // The listeners live as long as the worker: one pair per worker, and a page starts one
    // per kept worker (another only after it fails) and one per import (a user's action).
    EventListener::new(&worker, "message", move |ev| {
        on_message(&handle, ev.unchecked_ref::<MessageEvent>().clone());
    })
    .forget();
    EventListener::new(&worker, "error", move |ev| {
        on_error(ev.unchecked_ref::<ErrorEvent>().message());
    })
    .forget();
    Ok(worker)
}

/// The worker kept in `slot`, spawned into it on first use (see [`spawn_worker`]).
pub fn kept_worker(
    slot: StoredValue<Option<Worker>, LocalStorage>,
    on_message: impl FnMut(&Worker, MessageEvent) + 'static,
    on_error: impl FnMut(String) + 'static,
) -> Result<Worker, String> {
    if let Some(w) = slot.with_value(Clone::clone) {
        return Ok(w);
    }
    let worker = spawn_worker(on_message, on_error)?;
    slot.set_value(Some(worker.clone()));
    Ok(worker)
}

/// Terminates the worker kept in `slot`, if any: a worker that failed answers nothing more,
/// and the next use starts another.
pub fn drop_worker(slot: StoredValue<Option<Worker>, LocalStorage>) {
    if let Some(w) = slot.try_update_value(Option::take).flatten() {
        w.terminate();
    }
}
