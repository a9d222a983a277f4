//! Serving latency: TTFT and TPOT of the scenario's replica against concurrency, the
//! throughput–latency plane of every deployment with its Pareto front, and the deployment
//! table (a row applies its shape and concurrency to the scenario). planner-core computes
//! every number (the concurrency curve and the deployment search) and `app-worker`'s
//! `serving_markup` draws them, in the Web Worker (`planner_core::edges::serving_page`), so
//! neither the model nor the charts' code reaches the page's wasm: the page posts a
//! request (debounced, only while the section is near the screen), shows "computing…"
//! until the reply, places the markup, and applies a clicked row's `data-tp`, `data-pp`
//! and `data-c`.

use std::time::Duration;

use leptos::prelude::*;
use planner_core::edges::link;
use planner_core::edges::serving_page::{
    default_tokens, search_scenario, view_inputs, ServingRequest, ViewReply, MARKUP_PIECE,
    POINTS_TESTID,
};
use planner_core::input::scenario::Scenario;
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, Worker};

use crate::app::Ctx;
use crate::frames::after_this_frame_is_drawn;
use crate::inputs::{DecimalField, NumberField};
use crate::views::worker_handle::kept_worker;

/// How long the inputs stay still before the page asks the worker.
const SETTLE: Duration = Duration::from_millis(120);

/// The page's end of the serving worker: created on the first request, kept for the page.
#[derive(Clone, Copy)]
struct Channel {
    worker: StoredValue<Option<Worker>, LocalStorage>,
    /// Whether the worker has said it is ready.
    ready: StoredValue<bool>,
    /// The latest request made before the worker was ready.
    queued: StoredValue<Option<String>>,
    /// Number of the latest request sent, and of the latest reply read.
    sent: RwSignal<u64>,
    received: RwSignal<u64>,
    /// Why the worker gave no answer.
    error: RwSignal<Option<String>>,
    /// The worker's markup of the curve, and of the search.
    curve: RwSignal<String>,
    search: RwSignal<String>,
    /// Where the search's markup is placed, and the number of the latest placement (a later
    /// reply stops an earlier one's remaining pieces).
    search_box: NodeRef<leptos::html::Div>,
    placing: StoredValue<u64>,
}

impl Channel {
    fn new() -> Self {
        Channel {
            worker: StoredValue::new_local(None),
            ready: StoredValue::new(false),
            queued: StoredValue::new(None),
            sent: RwSignal::new(0),
            received: RwSignal::new(0),
            error: RwSignal::new(None),
            curve: RwSignal::new(String::new()),
            search: RwSignal::new(String::new()),
            search_box: NodeRef::new(),
            placing: StoredValue::new(0),
        }
    }

    fn fail(self, msg: String) {
        self.received.set(self.sent.get_untracked());
        self.error.set(Some(msg));
    }

    fn read(self, text: &str) {
        match ViewReply::from_text(text) {
            Ok(ViewReply::Ready) => {
                self.ready.set_value(true);
                if let Some(q) = self.queued.try_update_value(Option::take).flatten() {
                    self.post_now(&q);
                }
            }
            Ok(ViewReply::View(v)) => {
                crate::perf::record("serving-latency", v.curve_ms);
                self.curve.set(v.curve_html);
                self.error.set(None);
                match v.search_html {
                    // The search's markup is placed in the following frames: its chart,
                    // summary and table in the next, then a piece of the chart's points a
                    // frame (placed with the curve at once, they made one frame of over 60 ms).
                    Some(html) => {
                        if let Some(ms) = v.search_ms {
                            crate::perf::record("serving-search", ms);
                        }
                        let token = self.placing.get_value().wrapping_add(1);
                        self.placing.set_value(token);
                        let mut pieces = html.split(MARKUP_PIECE).map(str::to_string);
                        let first = pieces.next().unwrap_or_default();
                        let rest: Vec<String> = pieces.collect();
                        request_animation_frame(move || {
                            if self.placing.get_value() != token {
                                return;
                            }
                            self.search.set(first);
                            self.place_pieces(rest.into_iter(), token, v.seq);
                        });
                    }
                    None => self.received.update(|r| *r = (*r).max(v.seq)),
                }
            }
            Ok(ViewReply::Failed(e)) => self.fail(e),
            Err(e) => self.fail(format!("the serving worker's reply did not parse: {e}")),
        }
    }

    /// Adds the search's point pieces to its chart, one per animation frame; the reply
    /// counts as read once the last is placed.
    fn place_pieces(self, mut pieces: std::vec::IntoIter<String>, token: u64, seq: u64) {
        request_animation_frame(move || {
            if self.placing.get_value() != token {
                return;
            }
            let Some(piece) = pieces.next() else {
                // A later reply may have been read in between: keep the latest.
                self.received.update(|r| *r = (*r).max(seq));
                return;
            };
            let group = self.search_box.get_untracked().and_then(|b| {
                b.query_selector(&format!("[data-testid={POINTS_TESTID}]"))
                    .ok()
                    .flatten()
            });
            if let Some(group) = group {
                // Markup from the worker (`serving_markup`), which escapes every label.
                let _ = group.insert_adjacent_html("beforeend", &piece);
            }
            self.place_pieces(pieces, token, seq);
        });
    }

    fn start(self) -> Option<Worker> {
        let on_message = move |_: &Worker, ev: MessageEvent| {
            self.read(&ev.data().as_string().unwrap_or_default());
        };
        let on_error = move |message: String| {
            self.fail(format!("the serving worker failed: {message}"));
        };
        kept_worker(self.worker, on_message, on_error)
            .map_err(|e| self.fail(format!("the serving worker did not start: {e}")))
            .ok()
    }

    fn post_now(self, text: &str) {
        let Some(worker) = self.start() else { return };
        if let Err(e) = worker.post_message(&JsValue::from_str(text)) {
            self.fail(format!("posting to the serving worker failed: {e:?}"));
        }
    }

    /// Sends `request` (its `seq` is set here) once the worker is ready.
    fn post(self, mut request: ServingRequest) {
        let seq = self.sent.get_untracked() + 1;
        request.seq = seq;
        self.sent.set(seq);
        let text = request.to_text();
        if self.ready.get_value() {
            // After the frame that shows "computing…" is drawn, as the mesh search posts:
            // posted at once, the worker started beside that frame's rendering, where the
            // one late frame callback of session 22's passes came (21.9 ms after the one
            // before, the frames' begin times 16.7 ms apart, under load 3 on 2 cores).
            after_this_frame_is_drawn(move || self.post_now(&text));
        } else {
            self.queued.set_value(Some(text));
            self.start();
        }
    }
}

/// What the search depends on: a change asks the worker to search again.
#[derive(Clone, PartialEq)]
struct SearchKey {
    scenario: Scenario,
    prompt_tokens: u32,
    output_tokens: u32,
    ttft_ms: f64,
    tpot_ms: f64,
}

/// The latency part of the serving section.
#[component]
pub fn ServingLatency(
    /// The scenario, current only while the section is near the screen.
    #[prop(into)]
    scenario: Signal<Scenario>,
    /// Whether the section is near the screen: the worker is asked only then.
    #[prop(into)]
    visible: Signal<bool>,
) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let s = ctx.scenario;
    let (prompt_tokens, output_tokens) = default_tokens();
    let prompt = RwSignal::new(prompt_tokens);
    let output = RwSignal::new(output_tokens);
    let ttft_ms = RwSignal::new(2000.0f64);
    let tpot_ms = RwSignal::new(50.0f64);
    let channel = Channel::new();
    let searched = StoredValue::new(None::<SearchKey>);
    let generation = StoredValue::new(0_u64);
    // Ask the worker once the inputs have been still for SETTLE, while near the screen; the
    // search only when its own inputs changed.
    // What the worker reads of the scenario: a training or layout edit changes nothing here.
    let inputs = Memo::new(move |_| scenario.with(view_inputs));
    Effect::new(move |_| {
        let key = SearchKey {
            scenario: inputs.get(),
            prompt_tokens: prompt.get(),
            output_tokens: output.get(),
            ttft_ms: ttft_ms.get(),
            tpot_ms: tpot_ms.get(),
        };
        // Off screen, or a warm-up's neighbour (and its way back): nothing to ask.
        if !visible.get() || crate::warm_up::visiting() {
            return;
        }
        let mine = generation.get_value().wrapping_add(1);
        generation.set_value(mine);
        set_timeout(
            move || {
                if generation.get_value() != mine || !visible.get_untracked() {
                    return;
                }
                let search_key = SearchKey {
                    scenario: search_scenario(&key.scenario),
                    ..key.clone()
                };
                let search = searched.with_value(|k| k.as_ref() != Some(&search_key));
                if search {
                    searched.set_value(Some(search_key));
                }
                channel.post(ServingRequest {
                    seq: 0,
                    query: link::encode(&key.scenario),
                    prompt_tokens: key.prompt_tokens,
                    output_tokens: key.output_tokens,
                    ttft_target_s: key.ttft_ms / 1e3,
                    tpot_target_s: key.tpot_ms / 1e3,
                    search,
                });
            },
            SETTLE,
        );
    });
    // The note keeps its line while hidden: removed, the section below it moved up and the
    // page laid out again in the frame after each answer.
    let busy = move || channel.sent.get() > channel.received.get();
    let computing = view! {
        <p
            class="hint"
            data-testid=move || if busy() { "serve-computing" } else { "serve-answered" }
            style:visibility=move || if busy() { "visible" } else { "hidden" }
        >
            "computing…"
        </p>
    };
    let error = move || {
        channel
            .error
            .get()
            .map(|e| view! { <p class="issue error" data-testid="serve-worker-error">{e}</p> })
    };
    // A click on a row of the worker's table applies its shape and concurrency.
    let apply = move |ev: leptos::ev::MouseEvent| {
        let row = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|e| e.closest("tr[data-tp]").ok().flatten());
        let Some(row) = row else { return };
        let read = |name: &str| row.get_attribute(name).and_then(|v| v.parse::<u32>().ok());
        if let (Some(tp), Some(pp), Some(c)) = (read("data-tp"), read("data-pp"), read("data-c")) {
            s.update(|sc| {
                sc.serving.tp = tp;
                sc.serving.pp = pp;
                sc.serving.target_concurrency = c;
            });
        }
    };
    view! {
        <h3>"Latency and deployments"</h3>
        <div class="serving-inputs">
            <NumberField label="Prompt" field="serve_prompt" unit="tokens" hint="Prompt tokens per request."
                value=Signal::derive(move || prompt.get()) on_change=Callback::new(move |v| prompt.set(v)) />
            <NumberField label="Output" field="serve_output" unit="tokens" hint="Output tokens per request."
                value=Signal::derive(move || output.get()) on_change=Callback::new(move |v| output.set(v)) />
            <DecimalField label="TTFT target (p99)" field="serve_ttft_ms" unit="ms" hint="Bound on the 99th-percentile time to first token."
                value=Signal::derive(move || ttft_ms.get()) on_change=Callback::new(move |v| ttft_ms.set(v)) />
            <DecimalField label="TPOT target" field="serve_tpot_ms" unit="ms" hint="Bound on the mean time per output token."
                value=Signal::derive(move || tpot_ms.get()) on_change=Callback::new(move |v| tpot_ms.set(v)) />
        </div>
        {computing}
        {error}
        <div inner_html=move || channel.curve.get()></div>
        <div node_ref=channel.search_box on:click=apply inner_html=move || channel.search.get()></div>
    }
}
