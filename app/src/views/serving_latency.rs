//! Serving latency: TTFT and TPOT of the scenario's replica against concurrency, the
//! throughput–latency plane of every deployment with its Pareto front, and the deployment
//! table (a row applies its shape and concurrency to the scenario). planner-core computes
//! every number (the deployment search and the concurrency curve) in the Web Worker (`app-worker/`, `planner_core::serving_page`), so neither reaches the
//! page's wasm: the page posts a request (debounced, only while the section is near the
//! screen), shows "computing…" until the reply, and only places what comes back.

use std::time::Duration;

use leptos::prelude::*;
use planner_core::link;
use planner_core::scenario::Scenario;
use planner_core::serving_page::{
    default_tokens, search_scenario, ConcurrencyPoint, SearchPage, ServingReply, ServingRequest,
};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker};

use crate::app::Ctx;
use crate::inputs::{DecimalField, NumberField};
use crate::views::accuracy::WORKER_URL;

/// How long the inputs stay still before the page asks the worker.
const SETTLE: Duration = Duration::from_millis(120);
const W: f64 = 360.0;
const H: f64 = 180.0;
const PAD: f64 = 34.0;

fn ms(s: f64) -> String {
    if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// Maps data to the plot box: x in [x0, x1], y in [0, y1].
fn scale(v: f64, lo: f64, hi: f64, out_lo: f64, out_hi: f64) -> f64 {
    let span = (hi - lo).max(1e-12);
    out_lo + (v - lo) / span * (out_hi - out_lo)
}

fn polyline(points: &[(f64, f64)]) -> String {
    points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// TTFT and TPOT (shared log axis, so a TTFT that climbs near saturation does not flatten
/// the TPOT line) against log₂ concurrency.
fn latency_svg(curve: &[ConcurrencyPoint], current: u32) -> impl IntoView {
    let xs: Vec<f64> = curve
        .iter()
        .map(|p| f64::from(p.concurrency).log2())
        .collect();
    let (x0, x1) = (
        xs.first().copied().unwrap_or(0.0),
        xs.last().copied().unwrap_or(1.0),
    );
    let positive = |v: f64| v.max(1e-6);
    let y_hi = curve
        .iter()
        .map(|p| positive(p.ttft_s.max(p.tpot_s)))
        .fold(1e-6, f64::max);
    let y_lo = curve
        .iter()
        .map(|p| positive(p.ttft_s.min(p.tpot_s)))
        .fold(y_hi, f64::min);
    // Half a decade of margin below the smallest value, one decade at least in all.
    let (l0, l1) = (y_lo.log10() - 0.2, y_hi.log10().max(y_lo.log10() + 1.0));
    let px = |x: f64| scale(x, x0, x1.max(x0 + 1.0), PAD, W - 8.0);
    let py = |y: f64| scale(positive(y).log10(), l0, l1, H - PAD, 8.0);
    let line = |f: fn(&ConcurrencyPoint) -> f64| {
        polyline(
            &curve
                .iter()
                .zip(&xs)
                .map(|(p, &x)| (px(x), py(f(p))))
                .collect::<Vec<_>>(),
        )
    };
    let ttft = line(|p| p.ttft_s);
    let tpot = line(|p| p.tpot_s);
    let marker = curve
        .iter()
        .zip(&xs)
        .find(|(p, _)| p.concurrency == current)
        .map(|(_, &x)| px(x));
    view! {
        <svg class="serve-chart" viewBox=format!("0 0 {W} {H}") role="img" data-testid="latency-chart"
            aria-label="TTFT and TPOT against concurrency, logarithmic time axis">
            <line x1=PAD y1=H - PAD x2=W - 8.0 y2=H - PAD class="axis" />
            <line x1=PAD y1=8.0 x2=PAD y2=H - PAD class="axis" />
            <text x=PAD y=H - 10.0 class="tick">{format!("c = {}", curve.first().map_or(1, |p| p.concurrency))}</text>
            <text x=W - 60.0 y=H - 10.0 class="tick">{format!("c = {}", curve.last().map_or(1, |p| p.concurrency))}</text>
            <text x=2.0 y=14.0 class="tick">{ms(10f64.powf(l1))}</text>
            <text x=2.0 y=H - PAD - 2.0 class="tick">{ms(10f64.powf(l0))}</text>
            <polyline points=ttft class="ttft" fill="none" />
            <polyline points=tpot class="tpot" fill="none" />
            {marker.map(|x| view! { <line x1=x y1=8.0 x2=x y2=H - PAD class="current" /> })}
            <text x=W - 150.0 y=18.0 class="ttft-label">"TTFT (percentile)"</text>
            <text x=W - 150.0 y=32.0 class="tpot-label">"TPOT (log axis)"</text>
        </svg>
    }
}

/// Tokens/s per GPU against TPOT for every (deployment, concurrency), Pareto front joined.
/// The TPOT axis ends at twice the target (or the slowest point, if sooner), so one slow
/// deployment does not squeeze the rest; points beyond it are counted under the chart.
fn tradeoff_svg(r: &SearchPage, tpot_target_s: f64) -> impl IntoView {
    let slowest = r.points.iter().map(|p| p.tpot_s).fold(1e-6, f64::max);
    let x1 = if tpot_target_s > 0.0 {
        slowest.min(2.0 * tpot_target_s)
    } else {
        slowest
    };
    let shown: Vec<_> = r.points.iter().filter(|p| p.tpot_s <= x1).collect();
    let beyond = r.points.len() - shown.len();
    let y1 = shown
        .iter()
        .map(|p| p.throughput_per_gpu)
        .fold(1e-6, f64::max);
    let px = |x: f64| scale(x, 0.0, x1, PAD, W - 8.0);
    let py = |y: f64| scale(y, 0.0, y1, H - PAD, 8.0);
    let mut front: Vec<(f64, f64)> = shown
        .iter()
        .filter(|p| p.pareto)
        .map(|p| (p.tpot_s, p.throughput_per_gpu))
        .collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    let front_line = polyline(
        &front
            .iter()
            .map(|&(x, y)| (px(x), py(y)))
            .collect::<Vec<_>>(),
    );
    let target_x = (tpot_target_s > 0.0 && tpot_target_s <= x1).then(|| px(tpot_target_s));
    let dots = shown
        .iter()
        .map(|p| {
            let class = match (p.pareto, p.aggregated) {
                (true, _) => "dot front",
                (false, true) => "dot agg",
                (false, false) => "dot disagg",
            };
            view! {
                <circle cx=px(p.tpot_s) cy=py(p.throughput_per_gpu) r="2.5" class=class>
                    <title>{format!("{} at c = {}: TPOT {}, {:.0} tok/s/GPU", p.label, p.concurrency, ms(p.tpot_s), p.throughput_per_gpu)}</title>
                </circle>
            }
        })
        .collect_view();
    view! {
        <svg class="serve-chart" viewBox=format!("0 0 {W} {H}") role="img" data-testid="tradeoff-chart"
            aria-label="Output tokens per second per GPU against TPOT, Pareto front joined">
            <line x1=PAD y1=H - PAD x2=W - 8.0 y2=H - PAD class="axis" />
            <line x1=PAD y1=8.0 x2=PAD y2=H - PAD class="axis" />
            {target_x.map(|x| view! { <line x1=x y1=8.0 x2=x y2=H - PAD class="current" /> })}
            <text x=W - 90.0 y=H - 10.0 class="tick">{format!("TPOT {}", ms(x1))}</text>
            <text x=2.0 y=14.0 class="tick">{format!("{y1:.0} tok/s/GPU")}</text>
            {dots}
            <polyline points=front_line class="front" fill="none" />
        </svg>
        {(beyond > 0).then(|| view! {
            <p class="hint" data-testid="tradeoff-beyond">
                {format!("{beyond} point(s) slower than TPOT {} are off the chart.", ms(x1))}
            </p>
        })}
    }
}

/// The curve part of a reply, or why there is none.
type Curve = Result<(Vec<ConcurrencyPoint>, u32), String>;

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
    curve: RwSignal<Option<Curve>>,
    search: RwSignal<Option<Result<SearchPage, String>>>,
}

impl Channel {
    fn new() -> Self {
        Channel {
            worker: StoredValue::new_local(None),
            ready: StoredValue::new(false),
            queued: StoredValue::new(None),
            sent: RwSignal::new(0),
            received: RwSignal::new(0),
            curve: RwSignal::new(None),
            search: RwSignal::new(None),
        }
    }

    fn fail(self, msg: String) {
        self.received.set(self.sent.get_untracked());
        self.curve.set(Some(Err(msg.clone())));
        self.search.set(Some(Err(msg)));
    }

    fn read(self, text: &str) {
        match ServingReply::from_json(text) {
            Ok(ServingReply::Ready) => {
                self.ready.set_value(true);
                if let Some(q) = self.queued.try_update_value(Option::take).flatten() {
                    self.post_now(&q);
                }
            }
            Ok(ServingReply::Page(p)) => {
                crate::perf::record("serving-latency", p.curve_ms);
                self.curve.set(Some(match p.curve_error {
                    Some(e) => Err(e),
                    None => Ok((p.curve, p.concurrency)),
                }));
                if let Some(s) = p.search {
                    crate::perf::record("serving-search", s.worker_ms);
                    self.search.set(Some(Ok(s)));
                } else if let Some(e) = p.search_error {
                    self.search.set(Some(Err(e)));
                }
                self.received.set(p.seq);
            }
            Ok(ServingReply::Failed(e)) => self.fail(e),
            Err(e) => self.fail(format!("the serving worker's reply did not parse: {e}")),
        }
    }

    fn start(self) -> Option<Worker> {
        if let Some(w) = self.worker.with_value(Clone::clone) {
            return Some(w);
        }
        let worker = match Worker::new(WORKER_URL) {
            Ok(w) => w,
            Err(e) => {
                self.fail(format!("the serving worker did not start: {e:?}"));
                return None;
            }
        };
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            self.read(&ev.data().as_string().unwrap_or_default());
        });
        let onerror = Closure::<dyn FnMut(ErrorEvent)>::new(move |ev: ErrorEvent| {
            self.fail(format!("the serving worker failed: {}", ev.message()));
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        // One pair per page: the worker lives as long as the page.
        onmessage.forget();
        onerror.forget();
        self.worker.set_value(Some(worker.clone()));
        Some(worker)
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
        let text = request.to_json();
        if self.ready.get_value() {
            self.post_now(&text);
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
    Effect::new(move |_| {
        let key = SearchKey {
            scenario: scenario.get(),
            prompt_tokens: prompt.get(),
            output_tokens: output.get(),
            ttft_ms: ttft_ms.get(),
            tpot_ms: tpot_ms.get(),
        };
        if !visible.get() {
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
    let computing = move || {
        (channel.sent.get() > channel.received.get()).then(|| {
            view! { <p class="hint" data-testid="serve-computing">"computing…"</p> }
        })
    };
    let current = move || {
        channel.curve.with(|c| match c {
            None => ().into_any(),
            Some(Err(e)) => view! { <p class="issue error" data-testid="serve-latency-error">{e.clone()}</p> }.into_any(),
            Some(Ok((points, c))) => {
                let here = points.iter().find(|p| p.concurrency == *c).copied();
                view! {
                    <dl class="figures-inline">
                        {here.map(|p| view! {
                            <div><dt>"TTFT p99"</dt><dd data-testid="serve-ttft" data-seconds=p.ttft_s.to_string()>{ms(p.ttft_s)}</dd></div>
                            <div><dt>"TPOT"</dt><dd data-testid="serve-tpot" data-seconds=p.tpot_s.to_string()>{ms(p.tpot_s)}</dd></div>
                            <div><dt>"Output tokens/s per GPU"</dt><dd data-testid="serve-throughput">{format!("{:.0}", p.throughput_per_gpu)}</dd></div>
                        })}
                    </dl>
                    {latency_svg(points, *c)}
                }
                .into_any()
            }
        })
    };
    let table = move || {
        channel.search.with(|r| match r {
            None => ().into_any(),
            Some(Err(e)) => view! { <p class="issue error" data-testid="serve-search-error">{e.clone()}</p> }.into_any(),
            Some(Ok(r)) => {
                let reasons = r.rejections.join("; ");
                let rows = r
                    .rows
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let (tp, pp, c) = (d.tp, d.pp, d.concurrency);
                        view! {
                            <tr
                                data-testid=format!("deploy-row-{i}")
                                tabindex="0"
                                title="Apply this replica shape and concurrency to the scenario"
                                on:click=move |_| s.update(|sc| {
                                    sc.serving.tp = tp;
                                    sc.serving.pp = pp;
                                    sc.serving.target_concurrency = c;
                                })
                            >
                                <td>{d.label.clone()}</td>
                                <td>{c}</td>
                                <td>{ms(d.ttft_s)}</td>
                                <td>{ms(d.tpot_s)}</td>
                                <td>{format!("{:.0}", d.throughput_per_gpu)}</td>
                            </tr>
                        }
                    })
                    .collect_view();
                let tpot_target_s = searched.with_value(|k| k.as_ref().map_or(0.0, |k| k.tpot_ms / 1e3));
                view! {
                    {tradeoff_svg(r, tpot_target_s)}
                    <p class="hint" data-testid="serve-search-summary">
                        {format!("{} deployments of {} GPUs, {} meet the target. Rejected: {reasons}", r.candidates, r.gpus, r.feasible_count)}
                    </p>
                    <div class="table-scroll">
                        <table class="deployments" data-testid="deployment-table">
                            <caption>"Deployments meeting the target, most output tokens/s per GPU first (click a row to apply it)"</caption>
                            <thead><tr><th>"Deployment"</th><th>"Concurrency"</th><th>"TTFT p99"</th><th>"TPOT"</th><th>"tok/s/GPU"</th></tr></thead>
                            <tbody>{rows}</tbody>
                        </table>
                    </div>
                }
                .into_any()
            }
        })
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
        {current}
        {table}
    }
}
