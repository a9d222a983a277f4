//! The accuracy section's Web Worker: evaluates the 125 published runs
//! (`planner_core::edges::validation::page_summary`, the same code as `meshplan validate`)
//! off the page's thread, so the page's first-load wasm does not carry the
//! evaluation of the dataset.
//!
//! trunk builds it as a classic worker (`data-type="worker"`, wasm-bindgen
//! `no-modules`, `app-worker_loader.js`). On load it posts [`PageReply::Ready`];
//! on the page's `validate` message it replies with [`PageReply::Summary`] (or
//! [`PageReply::Failed`]) as record text (`PageReply::to_text`).
//!
//! It is also the serving latency view's worker: any other message is a
//! [`planner_core::edges::serving_page::ServingRequest`] (JSON text): the worker computes the
//! concurrency curve (and the deployment search when asked) and answers with their drawing
//! ([`serving_markup`], a [`ViewReply`]), so `serving_time`, `serving_search`,
//! `serving_disagg` and the charts' code stay out of the page's wasm. That worker stays
//! alive and answers in order.
//!
//! It searches the mesh explorer's cluster too: a message that is a
//! [`planner_core::edges::mesh_page::MeshRequest`] is answered with the search's progress
//! (at most every [`PROGRESS_MS`]) and then its whole result as record text
//! (`mesh_page::MeshReply::to_text`, posted as its UTF-8 bytes in a transferred buffer),
//! so the mesh search never runs on the page's thread and its code stays out of the
//! page's wasm.
//!
//! It answers the run's bill section too: a message that is a
//! [`planner_core::edges::bill_page::BillRequest`] (the rankings, the smallest cluster for a
//! deadline, the fewest GPUs for a request rate) is answered with progress and then the
//! answer drawn ([`bill_markup`]).
//!
//! And it reads the page's imports ([`bench_import`]): a message that is a
//! [`planner_core::edges::import_page::Job`] (a `config.json`, or a benchmark file with the
//! scenario's link) is answered with that module's plain-text reply, so the parsers and the
//! fit stay out of the page's wasm too.
//!
//! Its one listener (`onmessage`) is a web-sys closure, not gloo-events: BUNDLE_MEASUREMENT
//! (wasm-release, wasm-bindgen `no-modules`, `wasm-opt -Oz`, `gzip -9`): 358,561 B (wasm +
//! JS glue) with the closure, 358,785 B with `gloo_events::EventListener` (+224 B).

// Product functions fit on a screen (clippy.toml sets the threshold); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
mod bench_import;
mod bill_markup;
mod serving_markup;

use planner_core::edges::bill_page::{self, BillReply, BillRequest};
use planner_core::edges::mesh_page::{self, MeshReply, MeshRequest};
use planner_core::edges::serving_page::{self, PageView, ServingReply, ViewReply};
use planner_core::edges::validation::{page_summary, PageReply, PUBLIC_RUNS_JSON};
use wasm_bindgen::prelude::*;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

/// Posts a reply's record text (`PageReply::to_text`, `ViewReply::to_text`, the import replies).
fn post(scope: &DedicatedWorkerGlobalScope, text: &str) {
    if let Err(e) = scope.post_message(&JsValue::from_str(text)) {
        web_sys::console::error_1(&e);
    }
}

/// Milliseconds between two progress messages of a mesh search: a bar that moves without
/// a message per block (a 16,384-GPU search has hundreds).
const PROGRESS_MS: f64 = 50.0;

/// Searches a mesh request, posting its progress and then its result.
fn mesh_search(
    scope: &DedicatedWorkerGlobalScope,
    request: Result<MeshRequest, String>,
    now: &dyn Fn() -> f64,
) {
    let request = match request {
        Ok(r) => r,
        Err(message) => {
            post(scope, &MeshReply::Failed { seq: 0, message }.to_text());
            return;
        }
    };
    let mut last = now();
    let reply = mesh_page::answer(&request, now, &mut |p| {
        if now() - last >= PROGRESS_MS {
            last = now();
            post(scope, &p.to_text());
        }
    });
    match reply {
        // A finished search: its text's bytes in a transferred buffer (`mesh_page`'s
        // `Read::from_bytes`), not a string the page would convert in one task.
        MeshReply::Done(_) => post_bytes(scope, reply.to_text().into_bytes()),
        _ => post(scope, &reply.to_text()),
    }
}

/// Runs a bill request's search, posting its progress (at most every [`PROGRESS_MS`]) and
/// then its answer drawn ([`bill_markup`]).
fn bill_search(
    scope: &DedicatedWorkerGlobalScope,
    request: Result<BillRequest, String>,
    now: &dyn Fn() -> f64,
) {
    let request = match request {
        Ok(r) => r,
        Err(message) => {
            let job = bill_page::BillJob::Rankings;
            post(
                scope,
                &BillReply::Failed {
                    job,
                    seq: 0,
                    message,
                }
                .to_text(),
            );
            return;
        }
    };
    let (job, seq) = (request.job, request.seq);
    let t0 = now();
    let mut last = t0;
    let answer = bill_page::answer(&request, &mut |done, all| {
        if now() - last >= PROGRESS_MS {
            last = now();
            post(
                scope,
                &BillReply::Progress {
                    job,
                    seq,
                    done,
                    all,
                }
                .to_text(),
            );
        }
    });
    let reply = match answer {
        Ok(a) => BillReply::Done {
            job,
            seq,
            worker_ms: now() - t0,
            html: bill_markup::draw(&a),
        },
        Err(message) => BillReply::Failed { job, seq, message },
    };
    post(scope, &reply.to_text());
}

/// Posts `bytes` as a `Uint8Array` whose buffer is transferred (moved to the page, not
/// cloned).
fn post_bytes(scope: &DedicatedWorkerGlobalScope, bytes: Vec<u8>) {
    let array = js_sys::Uint8Array::from(bytes.as_slice());
    drop(bytes);
    let transfer = js_sys::Array::of1(&array.buffer());
    if let Err(e) = scope.post_message_with_transfer(&array, &transfer) {
        web_sys::console::error_1(&e);
    }
}

/// The serving view's answer to `request`, drawn.
fn serving_view(request: &str, now: &dyn Fn() -> f64) -> ViewReply {
    match serving_page::answer(request, now) {
        ServingReply::Page(p) => ViewReply::View(PageView {
            seq: p.seq,
            curve_html: serving_markup::curve(&p),
            search_html: serving_markup::search(&p),
            curve_ms: p.curve_ms,
            search_ms: p.search.as_ref().map(|s| s.worker_ms),
        }),
        ServingReply::Ready => ViewReply::Ready,
        ServingReply::Failed(e) => ViewReply::Failed(e),
    }
}

fn main() {
    console_error_panic_hook::set_once();
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let worker_scope = scope.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let clock = worker_scope.performance();
        let now = || clock.as_ref().map_or(0.0, |p| p.now());
        let text = ev.data().as_string().unwrap_or_default();
        if let Some(request) = MeshRequest::from_text(&text) {
            mesh_search(&worker_scope, request, &now);
            return;
        }
        if let Some(request) = BillRequest::from_text(&text) {
            bill_search(&worker_scope, request, &now);
            return;
        }
        if let Some(reply) = bench_import::answer(&text) {
            post(&worker_scope, &reply);
            return;
        }
        if text != "validate" {
            post(&worker_scope, &serving_view(&text, &now).to_text());
            return;
        }
        let t0 = now();
        let reply = match page_summary(PUBLIC_RUNS_JSON) {
            Ok(mut summary) => {
                summary.worker_ms = now() - t0;
                PageReply::Summary(summary)
            }
            Err(e) => PageReply::Failed(format!("{}: {}", e.field, e.message)),
        };
        post(&worker_scope, &reply.to_text());
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    // The worker lives as long as its handler: the page terminates it after the reply.
    onmessage.forget();
    post(&scope, &PageReply::Ready.to_text());
}
