//! "How accurate is this?": planner-core's validation against 125 published
//! training runs (`planner_core::validation`, the same code as `meshplan validate`),
//! its summary, and the published rows nearest the current scenario.
//!
//! Nothing runs until the section is opened; then the rows are evaluated a few per
//! animation frame within a time budget, off the slider path, so the page stays
//! responsive; the total and the longest slice are shown (and kept as data
//! attributes for the end-to-end test).

use leptos::prelude::*;
use planner_core::validation::{
    nearness, parse_runs, summarize, validate_run, PublishedRun, RowResult, ValidationReport,
    PUBLIC_RUNS_JSON,
};

use crate::app::Ctx;
use crate::format;
use crate::perf::now_ms;

/// Milliseconds of validation per animation frame.
const SLICE_BUDGET_MS: f64 = 4.0;
/// Published rows shown as "nearest to your scenario".
const NEAREST_ROWS: usize = 5;

/// Evaluation state: rows done so far, then the summary.
#[derive(Clone, Default)]
struct Progress {
    runs: Vec<PublishedRun>,
    rows: Vec<RowResult>,
    report: Option<ValidationReport>,
    error: Option<String>,
    busy_ms: f64,
    longest_slice_ms: f64,
    wall_ms: f64,
    frames: u32,
}

fn pump(state: RwSignal<Progress>, started: f64) {
    request_animation_frame(move || {
        let t0 = now_ms();
        let mut done = false;
        state.update(|p| {
            while p.rows.len() < p.runs.len() && now_ms() - t0 < SLICE_BUDGET_MS {
                let (row, _) = validate_run(&p.runs[p.rows.len()]);
                p.rows.push(row);
            }
            let slice = now_ms() - t0;
            p.busy_ms += slice;
            p.longest_slice_ms = p.longest_slice_ms.max(slice);
            p.frames += 1;
            if p.rows.len() == p.runs.len() {
                let t1 = now_ms();
                p.report = Some(summarize(p.runs.len(), p.rows.clone(), None));
                let finish = now_ms() - t1;
                p.busy_ms += finish;
                p.longest_slice_ms = p.longest_slice_ms.max(slice + finish);
                p.wall_ms = now_ms() - started;
                done = true;
            }
        });
        if !done {
            pump(state, started);
        }
    });
}

fn start(state: RwSignal<Progress>) {
    if !state.with_untracked(|p| p.runs.is_empty() && p.error.is_none()) {
        return;
    }
    match parse_runs(PUBLIC_RUNS_JSON) {
        Ok(runs) => {
            state.update(|p| p.runs = runs);
            pump(state, now_ms());
        }
        Err(e) => state.update(|p| p.error = Some(format!("{}: {}", e.field, e.message))),
    }
}

fn stat(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), format::percent)
}

fn summary_table(report: &ValidationReport) -> impl IntoView {
    let groups = report.by_quantity.clone();
    view! {
        <table class="accuracy-summary" data-testid="accuracy-summary">
            <thead>
                <tr>
                    <th>"quantity"</th>
                    <th>"rows"</th>
                    <th>"compared"</th>
                    <th>"median |error|"</th>
                    <th>"p90"</th>
                    <th>"max"</th>
                    <th>"≤ 10%"</th>
                    <th>"≤ 25%"</th>
                </tr>
            </thead>
            <tbody>
                {groups
                    .into_iter()
                    .map(|g| {
                        let s = g.stats;
                        view! {
                            <tr data-group=g.group.clone()>
                                <td>{g.group.clone()}</td>
                                <td>{s.rows}</td>
                                <td data-testid="accuracy-compared">{s.compared}</td>
                                <td data-median=s.median.unwrap_or(f64::NAN).to_string()>
                                    {stat(s.median)}
                                </td>
                                <td>{stat(s.p90)}</td>
                                <td>{stat(s.max)}</td>
                                <td>{stat(s.within_10)}</td>
                                <td>{stat(s.within_25)}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// The rows nearest the current scenario, by [`nearness`].
fn nearest(p: &Progress, ctx: &Ctx) -> Vec<(PublishedRun, RowResult)> {
    let Some(model) = ctx.model.with(|m| m.as_ref().ok().cloned()) else {
        return Vec::new();
    };
    ctx.scenario.with(|s| {
        let params_b = model.params() / 1e9;
        let mut scored: Vec<(f64, usize)> = p
            .runs
            .iter()
            .zip(&p.rows)
            .enumerate()
            .filter(|(_, (_, r))| r.comparison.is_some())
            .map(|(i, (run, _))| {
                let d = nearness(
                    run,
                    params_b,
                    s.cluster.world_size(),
                    &s.cluster.gpu.id,
                    s.layout.tp,
                    s.layout.pp,
                );
                (d, i)
            })
            .collect();
        scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(NEAREST_ROWS)
            .map(|(_, i)| (p.runs[i].clone(), p.rows[i].clone()))
            .collect()
    })
}

fn nearest_table(rows: Vec<(PublishedRun, RowResult)>) -> impl IntoView {
    view! {
        <table class="accuracy-nearest" data-testid="accuracy-nearest">
            <thead>
                <tr>
                    <th>"published run"</th>
                    <th>"layout"</th>
                    <th>"quantity"</th>
                    <th>"measured"</th>
                    <th>"meshplan"</th>
                    <th>"error"</th>
                </tr>
            </thead>
            <tbody>
                {rows
                    .into_iter()
                    .map(|(run, row)| {
                        let c = row.comparison.clone();
                        let predicted = c.as_ref().map_or(f64::NAN, |c| c.predicted);
                        let error = c.as_ref().map_or(f64::NAN, |c| c.relative_error);
                        view! {
                            <tr data-id=row.id.clone()>
                                <td title=run.notes.clone()>
                                    {format!("{} — {}", run.model_name, run.source)}
                                </td>
                                <td>{row.layout.clone()}</td>
                                <td>{row.quantity.id()}</td>
                                <td>{format::sig3(row.measured)}</td>
                                <td>{format::sig3(predicted)}</td>
                                <td>{format!("{:+.1}%", error * 100.0)}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// The accuracy section.
#[component]
pub fn AccuracyView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let state = RwSignal::new(Progress::default());
    let body = move || {
        state.with(|p| {
            if let Some(e) = &p.error {
                return view! { <p class="issue error">{e.clone()}</p> }.into_any();
            }
            let Some(report) = &p.report else {
                return view! {
                    <p data-testid="accuracy-progress">
                        {format!("Evaluating published runs: {} of {}…", p.rows.len(), p.runs.len())}
                    </p>
                }
                .into_any();
            };
            let near = nearest(p, &ctx);
            view! {
                <div
                    data-testid="accuracy-done"
                    data-wall-ms=p.wall_ms.to_string()
                    data-busy-ms=p.busy_ms.to_string()
                    data-longest-slice-ms=p.longest_slice_ms.to_string()
                    data-frames=p.frames.to_string()
                >
                    <p class="hint">
                        {format!(
                            "{} published training runs (Narayanan et al. 2021, Korthikanti et al. 2022, Megatron-LM, NeMo, Megatron-Bridge, torchtitan), each mapped to a scenario and evaluated here by the same planner-core code as `meshplan validate`; |error| = |predicted / measured − 1|. Evaluated in {:.0} ms over {} frames (longest slice {:.1} ms). The targets are a median under 10% and p90 under 25%: where the numbers miss, trust the ranking less than the figures.",
                            report.dataset_rows,
                            p.busy_ms,
                            p.frames,
                            p.longest_slice_ms
                        )}
                    </p>
                    {summary_table(report)}
                    <h3>"Published runs nearest your scenario"</h3>
                    {nearest_table(near)}
                </div>
            }
            .into_any()
        })
    };
    view! {
        <section class="view accuracy-view" data-testid="accuracy-view">
            <details on:toggle=move |ev| {
                use wasm_bindgen::JsCast;
                let open = ev
                    .target()
                    .and_then(|t| t.dyn_into::<web_sys::HtmlDetailsElement>().ok())
                    .is_some_and(|d| d.open());
                if open {
                    start(state);
                }
            }>
                <summary data-testid="accuracy-open">
                    <h2>"How accurate is this?"</h2>
                </summary>
                {body}
            </details>
        </section>
    }
}
