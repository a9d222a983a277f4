//! Serving latency: TTFT and TPOT of the scenario's replica against concurrency, the
//! throughput–latency plane of every deployment with its Pareto front, and the deployment
//! table (a row applies its shape and concurrency to the scenario). planner-core computes
//! every number (`serving_search::concurrency_curve`, `serving_search::serve_search`); this
//! file only places them.

use leptos::prelude::*;
use planner_core::serving_search::{
    concurrency_curve, serve_search, ConcurrencyPoint, Percentile, ServeRejectReason,
    ServeSearchResult, ServeSearchSpace, ServeTarget,
};
use planner_core::serving_time::ServingLoad;

use crate::app::Ctx;
use crate::inputs::{DecimalField, NumberField};

/// Largest concurrency the curve plots.
const CURVE_MAX_CONCURRENCY: u32 = 512;
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

/// TTFT and TPOT (ms, shared axis) against log₂ concurrency.
fn latency_svg(curve: &[ConcurrencyPoint], current: u32) -> impl IntoView {
    let xs: Vec<f64> = curve
        .iter()
        .map(|p| f64::from(p.concurrency).log2())
        .collect();
    let (x0, x1) = (
        xs.first().copied().unwrap_or(0.0),
        xs.last().copied().unwrap_or(1.0),
    );
    let y1 = curve
        .iter()
        .map(|p| p.ttft_s.max(p.tpot_s))
        .fold(1e-6, f64::max);
    let px = |x: f64| scale(x, x0, x1.max(x0 + 1.0), PAD, W - 8.0);
    let py = |y: f64| scale(y, 0.0, y1, H - PAD, 8.0);
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
            aria-label="TTFT and TPOT against concurrency">
            <line x1=PAD y1=H - PAD x2=W - 8.0 y2=H - PAD class="axis" />
            <line x1=PAD y1=8.0 x2=PAD y2=H - PAD class="axis" />
            <text x=PAD y=H - 10.0 class="tick">{format!("c = {}", curve.first().map_or(1, |p| p.concurrency))}</text>
            <text x=W - 60.0 y=H - 10.0 class="tick">{format!("c = {}", curve.last().map_or(1, |p| p.concurrency))}</text>
            <text x=2.0 y=14.0 class="tick">{ms(y1)}</text>
            <polyline points=ttft class="ttft" fill="none" />
            <polyline points=tpot class="tpot" fill="none" />
            {marker.map(|x| view! { <line x1=x y1=8.0 x2=x y2=H - PAD class="current" /> })}
            <text x=W - 150.0 y=18.0 class="ttft-label">"TTFT (percentile)"</text>
            <text x=W - 150.0 y=32.0 class="tpot-label">"TPOT"</text>
        </svg>
    }
}

/// Tokens/s per GPU against TPOT for every (deployment, concurrency), Pareto front joined.
fn tradeoff_svg(r: &ServeSearchResult) -> impl IntoView {
    let x1 = r.points.iter().map(|p| p.tpot_s).fold(1e-6, f64::max);
    let y1 = r
        .points
        .iter()
        .map(|p| p.throughput_per_gpu)
        .fold(1e-6, f64::max);
    let px = |x: f64| scale(x, 0.0, x1, PAD, W - 8.0);
    let py = |y: f64| scale(y, 0.0, y1, H - PAD, 8.0);
    let mut front: Vec<(f64, f64)> = r
        .points
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
    let dots = r
        .points
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
            <text x=W - 90.0 y=H - 10.0 class="tick">{format!("TPOT {}", ms(x1))}</text>
            <text x=2.0 y=14.0 class="tick">{format!("{y1:.0} tok/s/GPU")}</text>
            {dots}
            <polyline points=front_line class="front" fill="none" />
        </svg>
    }
}

/// The latency part of the serving section.
#[component]
pub fn ServingLatency(
    /// The scenario, current only while the section is near the screen.
    #[prop(into)]
    scenario: Signal<planner_core::scenario::Scenario>,
) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let s = ctx.scenario;
    let prompt = RwSignal::new(ServingLoad::default().prompt_tokens);
    let output = RwSignal::new(ServingLoad::default().output_tokens);
    let ttft_ms = RwSignal::new(2000.0f64);
    let tpot_ms = RwSignal::new(50.0f64);
    let load = move |concurrency: u32| ServingLoad {
        prompt_tokens: prompt.get(),
        output_tokens: output.get(),
        concurrency,
        ..ServingLoad::default()
    };
    let curve = Memo::new(move |_| {
        crate::perf::timed("serving-latency", || {
            let model = ctx.model.get()?;
            let sc = scenario.get();
            let l = load(sc.serving.target_concurrency);
            concurrency_curve(&model, &sc, &l, Percentile::P99, CURVE_MAX_CONCURRENCY)
                .map(|c| (c, sc.serving.target_concurrency))
                .map_err(|e| e.to_string())
        })
    });
    // The search does not depend on the scenario's own replica shape or concurrency, so a
    // row applied to the scenario does not search again.
    let search_input = Memo::new(move |_| {
        let mut sc = scenario.get();
        sc.serving.tp = 1;
        sc.serving.pp = 1;
        sc.serving.target_concurrency = 1;
        sc
    });
    let search = Memo::new(move |_| {
        crate::perf::timed("serving-search", || {
            let model = ctx.model.get()?;
            let sc = search_input.get();
            let target = ServeTarget {
                ttft_s: Some(ttft_ms.get() / 1e3),
                tpot_s: Some(tpot_ms.get() / 1e3),
                percentile: Percentile::P99,
            };
            let space = ServeSearchSpace {
                top: 10,
                max_rejected: 0,
                ..ServeSearchSpace::default()
            };
            serve_search(&model, &sc, &load(1), &target, &space).map_err(|e| e.to_string())
        })
    });
    let current = move || {
        curve.with(|c| match c {
            Err(e) => view! { <p class="issue error" data-testid="serve-latency-error">{e.clone()}</p> }.into_any(),
            Ok((points, c)) => {
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
        search.with(|r| match r {
            Err(e) => view! { <p class="issue error" data-testid="serve-search-error">{e.clone()}</p> }.into_any(),
            Ok(r) => {
                let reasons = r
                    .rejections
                    .iter()
                    .map(|c| {
                        let msg = ServeRejectReason::ALL
                            .iter()
                            .find(|x| x.key() == c.reason)
                            .map_or(c.reason.as_str(), |x| x.message());
                        format!("{msg}: {}", c.candidates)
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                let rows = r
                    .ranked
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let (tp, pp) = d.deployment.serving_shape();
                        let c = d.deployment.concurrency;
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
                view! {
                    {tradeoff_svg(r)}
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
        {current}
        {table}
    }
}
