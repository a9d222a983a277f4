//! "How accurate is this?": planner-core's validation against the published
//! training runs of `validation/public-runs.json` (`planner_core::edges::validation`, the same code as `meshplan validate`),
//! its summary, and the published rows nearest the current scenario.
//!
//! The evaluation runs in a Web Worker (`app-worker/`, built by trunk as a classic
//! worker next to the page) that is not fetched until the section is opened, so the
//! page's first-load wasm carries neither the dataset nor its evaluation. The page
//! creates the worker on open, posts one message once the worker says it is ready,
//! and parses the reply ([`PageReply`], record text: `PageReply::from_text`); it never blocks on the work.
//! The nearest rows are ranked here from the reply's fields by planner-core's
//! [`nearest_rows`], so they follow the scenario without asking the worker again.

use leptos::prelude::*;
use planner_core::edges::validation::{nearest_rows, PageGroup, PageReply, PageRow, PageSummary};
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, Worker};

use crate::app::Ctx;
use crate::format;
use crate::perf::now_ms;
use crate::views::worker_handle::spawn_worker;

/// Published rows shown as "nearest to your scenario".
const NEAREST_ROWS: usize = 5;

/// Where the section stands.
#[derive(Clone, Default)]
enum Progress {
    /// Not opened yet.
    #[default]
    Idle,
    /// The worker is loading or evaluating.
    Running,
    /// The worker's summary, and the page's wall time from open to reply.
    Done(PageSummary, f64),
    /// Why there is no summary.
    Failed(String),
}

/// Starts the worker once; its reply lands in `state`.
fn start(state: RwSignal<Progress>) {
    if !state.with_untracked(|p| matches!(p, Progress::Idle)) {
        return;
    }
    let started = now_ms();
    let on_message = move |worker: &Worker, ev: MessageEvent| {
        let text = ev.data().as_string().unwrap_or_default();
        match PageReply::from_text(&text) {
            Ok(PageReply::Ready) => {
                if let Err(e) = worker.post_message(&JsValue::from_str("validate")) {
                    state.set(Progress::Failed(format!(
                        "posting to the validation worker failed: {e:?}"
                    )));
                }
            }
            Ok(PageReply::Summary(s)) => {
                state.set(Progress::Done(s, now_ms() - started));
                worker.terminate();
            }
            Ok(PageReply::Failed(e)) => {
                state.set(Progress::Failed(e));
                worker.terminate();
            }
            Err(e) => {
                state.set(Progress::Failed(format!(
                    "the validation worker's reply did not parse: {e}"
                )));
                worker.terminate();
            }
        }
    };
    let on_error = move |message: String| {
        state.set(Progress::Failed(format!(
            "the validation worker failed: {message}"
        )));
    };
    // The section starts its worker once.
    match spawn_worker(on_message, on_error) {
        Ok(_) => state.set(Progress::Running),
        Err(e) => state.set(Progress::Failed(format!(
            "the validation worker did not start: {e}"
        ))),
    }
}

fn stat(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), format::percent)
}

fn summary_table(groups: Vec<PageGroup>) -> impl IntoView {
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
                        view! {
                            <tr data-group=g.group.clone()>
                                <td>{g.group.clone()}</td>
                                <td>{g.stats.rows}</td>
                                <td data-testid="accuracy-compared">{g.stats.compared}</td>
                                <td data-median=g.stats.median.unwrap_or(f64::NAN).to_string()>
                                    {stat(g.stats.median)}
                                </td>
                                <td>{stat(g.stats.p90)}</td>
                                <td>{stat(g.stats.max)}</td>
                                <td>{stat(g.stats.within_10)}</td>
                                <td>{stat(g.stats.within_25)}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// The rows that entered the dataset after the model was built, by their error when first
/// seen and today, group for group (the honest figure: the model was not developed
/// against them).
fn first_seen_table(first: Vec<PageGroup>, today: Vec<PageGroup>) -> impl IntoView {
    view! {
        <table class="accuracy-summary" data-testid="accuracy-first-seen">
            <thead>
                <tr>
                    <th>"quantity"</th>
                    <th>"rows"</th>
                    <th>"median |error| when first seen"</th>
                    <th>"p90"</th>
                    <th>"max"</th>
                    <th>"median today"</th>
                    <th>"p90"</th>
                    <th>"max"</th>
                </tr>
            </thead>
            <tbody>
                {first
                    .into_iter()
                    .zip(today)
                    .map(|(f, t)| {
                        view! {
                            <tr data-group=f.group.clone()>
                                <td>{f.group.clone()}</td>
                                <td>{f.stats.rows}</td>
                                <td data-first-median=f.stats.median.unwrap_or(f64::NAN).to_string()>
                                    {stat(f.stats.median)}
                                </td>
                                <td>{stat(f.stats.p90)}</td>
                                <td>{stat(f.stats.max)}</td>
                                <td data-today-median=t.stats.median.unwrap_or(f64::NAN).to_string()>
                                    {stat(t.stats.median)}
                                </td>
                                <td>{stat(t.stats.p90)}</td>
                                <td>{stat(t.stats.max)}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// The rows nearest the current scenario.
fn nearest(rows: &[PageRow], ctx: &Ctx) -> Vec<PageRow> {
    let Some(model) = ctx.model.with(|m| m.as_ref().ok().cloned()) else {
        return Vec::new();
    };
    ctx.scenario.with(|s| {
        nearest_rows(
            rows,
            model.params() / 1e9,
            s.cluster.world_size(),
            &s.cluster.gpu.id,
            s.layout.tp,
            s.layout.pp,
            NEAREST_ROWS,
        )
        .into_iter()
        .cloned()
        .collect()
    })
}

fn nearest_table(rows: Vec<PageRow>) -> impl IntoView {
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
                    .map(|row| {
                        view! {
                            <tr data-id=row.id.clone()>
                                <td title=row.notes.clone()>
                                    {format!("{} — {}", row.model_name, row.source)}
                                </td>
                                <td>{row.layout.clone()}</td>
                                <td>{row.quantity.clone()}</td>
                                <td>{format::sig3(row.measured)}</td>
                                <td>{format::sig3(row.predicted)}</td>
                                <td>{format!("{:+.1}%", row.relative_error * 100.0)}</td>
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
        state.with(|p| match p {
            Progress::Idle => ().into_any(),
            Progress::Running => view! {
                <p data-testid="accuracy-progress">
                    "Evaluating the published runs in a background worker…"
                </p>
            }
            .into_any(),
            Progress::Failed(e) => view! { <p class="issue error">{e.clone()}</p> }.into_any(),
            Progress::Done(summary, wall_ms) => {
                let near = nearest(&summary.rows, &ctx);
                view! {
                    <div
                        data-testid="accuracy-done"
                        data-worker-ms=summary.worker_ms.to_string()
                        data-wall-ms=wall_ms.to_string()
                        data-compared-rows=summary.rows.len().to_string()
                    >
                        <p class="hint">
                            {format!(
                                "{} published training runs (Narayanan et al. 2021, Korthikanti et al. 2022, Megatron-LM, NeMo, Megatron-Bridge, torchtitan, Llama 3, BLOOM, vLLM), each mapped to a scenario and evaluated by the same planner-core code as `meshplan validate`, in a background worker: {:.0} ms of evaluation, {:.0} ms from opening this section with the worker's download; |error| = |predicted / measured − 1|. The targets are a median under 10% and p90 under 25%: where the numbers miss, trust the ranking less than the figures.",
                                summary.dataset_rows,
                                summary.worker_ms,
                                wall_ms
                            )}
                        </p>
                        <h3>"On rows the model was developed against, and since"</h3>
                        {summary_table(summary.groups.clone())}
                        <h3>"On rows when they were first seen"</h3>
                        <p class="hint">
                            "Rows that entered the dataset after the model was built, scored by the model as it stood when each was first seen, beside the same rows today. This is the honest figure: a run you plan is one the model has not seen."
                        </p>
                        {first_seen_table(summary.first_seen.clone(), summary.first_seen_today.clone())}
                        <h3>"Published runs nearest your scenario"</h3>
                        {nearest_table(near)}
                    </div>
                }
                .into_any()
            }
        })
    };
    view! {
        <section class="view accuracy-view" data-testid="accuracy-view">
            <details on:toggle=move |ev| {
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
