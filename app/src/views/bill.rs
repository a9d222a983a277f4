//! The run's bill: what the whole training run costs in days, GPU-hours, dollars and energy,
//! what failures and checkpoints take (`planner_core::view::bill::bill_view`, each figure a
//! `Term` whose formula and worked numbers its row carries), its inputs as controls (each
//! default marked "default to replace" with its cited source), and the searches that need
//! the mesh or deployment search: the leaders by time, dollars and energy, the smallest
//! cluster that meets a deadline, the fewest GPUs that hold a request rate. Those run in the
//! page's worker (`planner_core::edges::bill_page`), with progress, never on this thread; the
//! worker's time is recorded as `bill_<job>_worker` in `window.__meshplanMs`.
//!
//! Every control sets its link parameter through `planner_core::edges::link::with_parameter`:
//! the same parsing and validation as a share link; a refused value leaves the scenario as it
//! was and says why, naming the parameter.

use leptos::prelude::*;
use planner_core::edges::bill_page::{BillJob, BillReply, BillRequest};
use planner_core::edges::link;
use planner_core::edges::validation::PageReply;
use planner_core::input::bill::PriceKind;
use planner_core::input::scenario::Scenario;
use planner_core::view::bill::{bill_view, goal_inputs, BillInput, BillView};
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, Worker};

use crate::app::Ctx;
use crate::perf::now_ms;
use crate::views::markup::{column_heads, SectionHead};
use crate::views::visibility::section_inputs;
use crate::views::worker_handle::{drop_worker, kept_worker};

/// One search's state on the page.
#[derive(Clone, Copy)]
struct Job {
    job: BillJob,
    /// Number of the latest request; replies to older ones are dropped.
    seq: StoredValue<u64>,
    running: RwSignal<bool>,
    progress: RwSignal<(usize, usize)>,
    /// The answer's markup, or why there is none.
    result: RwSignal<Option<Result<String, String>>>,
    /// The worker's milliseconds for the latest answer, and the page's from ask to answer.
    timing: RwSignal<Option<(f64, f64)>>,
    asked_ms: StoredValue<f64>,
    /// The link query the shown answer was asked for (stale when the scenario moved on).
    asked_query: RwSignal<String>,
}

impl Job {
    fn new(job: BillJob) -> Self {
        Job {
            job,
            seq: StoredValue::new(0),
            running: RwSignal::new(false),
            progress: RwSignal::new((0, 0)),
            result: RwSignal::new(None),
            timing: RwSignal::new(None),
            asked_ms: StoredValue::new(0.0),
            asked_query: RwSignal::new(String::new()),
        }
    }

    fn handle(self, reply: BillReply) {
        match reply {
            BillReply::Progress { seq, done, all, .. } if seq == self.seq.get_value() => {
                self.progress.set((done, all));
            }
            BillReply::Done {
                seq,
                worker_ms,
                html,
                ..
            } if seq == self.seq.get_value() => {
                let page_ms = now_ms() - self.asked_ms.get_value();
                crate::perf::record(&format!("bill_{}_worker", self.job.id()), worker_ms);
                crate::perf::record(&format!("bill_{}_page", self.job.id()), page_ms);
                self.timing.set(Some((worker_ms, page_ms)));
                self.result.set(Some(Ok(html)));
                self.running.set(false);
            }
            BillReply::Failed { seq, message, .. } if seq == self.seq.get_value() || seq == 0 => {
                self.result.set(Some(Err(message)));
                self.running.set(false);
            }
            _ => {}
        }
    }
}

/// The section's worker: created with the first search, kept for the page; requests wait
/// until it says it is ready, then go in order (it answers one at a time).
#[derive(Clone, Copy)]
struct BillWorker {
    worker: StoredValue<Option<Worker>, LocalStorage>,
    ready: StoredValue<bool>,
    queued: StoredValue<Vec<String>>,
    jobs: [Job; 3],
}

impl BillWorker {
    fn job(self, job: BillJob) -> Job {
        self.jobs[BillJob::ALL.iter().position(|j| *j == job).unwrap_or(0)]
    }

    fn ask(self, job: BillJob, scenario: &Scenario) {
        let j = self.job(job);
        let seq = j.seq.get_value() + 1;
        j.seq.set_value(seq);
        j.running.set(true);
        j.progress.set((0, 0));
        j.asked_ms.set_value(now_ms());
        let query = link::encode(scenario);
        j.asked_query.set(query.clone());
        let text = BillRequest { job, seq, query }.to_text();
        let Some(worker) = self.worker() else { return };
        if self.ready.get_value() {
            self.post(&worker, &text);
        } else {
            self.queued.update_value(|q| q.push(text));
        }
    }

    fn post(self, worker: &Worker, text: &str) {
        if let Err(e) = worker.post_message(&JsValue::from_str(text)) {
            self.fail_all(format!("posting to the bill's worker failed: {e:?}"));
        }
    }

    fn fail_all(self, message: String) {
        for j in self.jobs {
            if j.running.get_untracked() {
                j.result.set(Some(Err(message.clone())));
                j.running.set(false);
            }
        }
    }

    fn worker(self) -> Option<Worker> {
        let on_message = move |worker: &Worker, ev: MessageEvent| {
            let text = ev.data().as_string().unwrap_or_default();
            if text == PageReply::Ready.to_text() {
                self.ready.set_value(true);
                for q in self
                    .queued
                    .try_update_value(std::mem::take)
                    .unwrap_or_default()
                {
                    self.post(worker, &q);
                }
                return;
            }
            match BillReply::from_text(&text) {
                Some(Ok(reply)) => {
                    let job = match &reply {
                        BillReply::Progress { job, .. }
                        | BillReply::Done { job, .. }
                        | BillReply::Failed { job, .. } => *job,
                    };
                    self.job(job).handle(reply);
                }
                Some(Err(why)) => self.fail_all(format!("the bill's reply did not parse: {why}")),
                None => {}
            }
        };
        let on_error = move |message: String| {
            drop_worker(self.worker);
            self.ready.set_value(false);
            self.fail_all(format!("the bill's worker failed: {message}"));
        };
        kept_worker(self.worker, on_message, on_error)
            .map_err(|e| self.fail_all(format!("the bill's worker did not start: {e}")))
            .ok()
    }
}

/// One input as a control: its value, the default's source when it is the default, and the
/// message when the last value typed was refused.
#[component]
fn InputRow(input: BillInput) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let error = RwSignal::new(None::<String>);
    let key = input.key;
    let placeholder = match key {
        "bill_tok" => "20 × parameters",
        "bill_steps" => "from tokens",
        "bill_board_w" => "datasheet",
        "bill_budget" => "none",
        "fleet_ttft_ms" | "fleet_tpot_ms" => "unbounded",
        "bill_nodes" => "powers of two",
        "fleet_gpus" => "every priced GPU",
        _ => "",
    };
    // The value shown: empty where a placeholder stands for "none".
    let value = if input.value == placeholder
        || ["20 × Ψ", "from tokens", "datasheet"].contains(&input.value.as_str())
    {
        String::new()
    } else {
        input.value.clone()
    };
    let on_change = move |ev: leptos::ev::Event| {
        let text = event_target_value(&ev);
        let next = ctx
            .scenario
            .with_untracked(|s| link::with_parameter(s, key, &text));
        match next {
            Ok(s) => {
                error.set(None);
                ctx.scenario.set(s);
            }
            Err(e) => error.set(Some(format!("{}: {}", e.field, e.message))),
        }
    };
    let source = input.default_source;
    view! {
        <tr data-testid=format!("bill-input-{key}")>
            <th scope="row"><label for=format!("bill-{key}")>{input.label}</label></th>
            <td>
                <input
                    id=format!("bill-{key}")
                    type="text"
                    inputmode="decimal"
                    data-testid=format!("input-{key}")
                    prop:value=value
                    placeholder=placeholder
                    on:change=on_change
                />
            </td>
            <td class="bill-source">
                {source.map(|s| view! {
                    <span class="default-badge" data-testid=format!("bill-default-{key}") title=s>"default to replace"</span>
                    " "
                    <span class="hint">{s}</span>
                })}
                {move || error.get().map(|e| view! { <span class="issue error" role="alert" data-testid=format!("bill-error-{key}")>{e}</span> })}
            </td>
        </tr>
    }
}

/// How the GPUs are paid for; a change moves the hourly price to the new kind's default when
/// it was the old kind's.
#[component]
fn PriceKindRow(kind: PriceKind) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let on_change = move |ev: leptos::ev::Event| {
        let id = event_target_value(&ev);
        let next = ctx.scenario.with_untracked(|s| {
            let old = s.bill.price_kind.default_usd_per_gpu_hour();
            let out = link::with_parameter(s, "bill_price", &id).ok()?;
            let new = out.bill.price_kind.default_usd_per_gpu_hour();
            if s.bill.usd_per_gpu_hour == old && new > 0.0 {
                return link::with_parameter(&out, "bill_usd_h", &new.to_string()).ok();
            }
            Some(out)
        });
        if let Some(s) = next {
            ctx.scenario.set(s);
        }
    };
    view! {
        <tr data-testid="bill-input-bill_price">
            <th scope="row"><label for="bill-bill_price">"GPUs paid"</label></th>
            <td>
                <select id="bill-bill_price" data-testid="input-bill_price" on:change=on_change>
                    {PriceKind::ALL
                        .into_iter()
                        .map(|k| view! { <option value=k.id() selected=k == kind>{k.id()}</option> })
                        .collect_view()}
                </select>
            </td>
            <td class="bill-source hint">"on-demand and reserved: the hourly price holds power; owned: purchase amortised + electricity"</td>
        </tr>
    }
}

fn inputs_table(
    inputs: Vec<BillInput>,
    kind: Option<PriceKind>,
    testid: &'static str,
) -> impl IntoView {
    view! {
        <table class="figures bill-inputs" data-testid=testid>
            <tbody>
                {inputs
                    .into_iter()
                    .map(|i| match (i.key, kind) {
                        ("bill_price", Some(k)) => view! { <PriceKindRow kind=k /> }.into_any(),
                        _ => view! { <InputRow input=i /> }.into_any(),
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// The bill's figures, each row's tooltip its formula; the worked numbers beside it.
fn terms_table(v: &BillView) -> AnyView {
    if let Some(e) = &v.error {
        return view! { <p class="issue error" data-testid="bill-error">{e.clone()}</p> }
            .into_any();
    }
    view! {
        <table class="figures bill-terms" data-testid="bill-terms">
            <thead>
                {column_heads(&["Figure", "Value", "Formula with numbers"])}
            </thead>
            <tbody>
                {v.terms
                    .iter()
                    .map(|t| {
                        let tip = format!("{}\n{}\n{}", t.formula, t.worked, t.assumption);
                        view! {
                            <tr tabindex="0" title=tip data-testid=format!("bill-term-{}", t.key) data-value=t.value.to_string()>
                                <th scope="row">{t.label.clone()}</th>
                                <td class="num">{t.unit.format(t.value)}</td>
                                <td><code>{t.worked.clone()}</code></td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// A search's button, progress and answer.
#[component]
fn JobPanel(
    worker: BillWorker,
    job: BillJob,
    label: &'static str,
    scenario: Memo<Scenario>,
) -> impl IntoView {
    let j = worker.job(job);
    let id = job.id();
    let stale = Memo::new(move |_| {
        let asked = j.asked_query.get();
        !asked.is_empty() && scenario.with(|s| link::encode(s) != asked)
    });
    view! {
        <div class="bill-job" data-testid=format!("bill-{id}")>
            <button
                data-testid=format!("bill-run-{id}")
                on:click=move |_| scenario.with_untracked(|s| worker.ask(job, s))
            >
                {label}
            </button>
            " "
            <span class="status" role="status" data-testid=format!("bill-status-{id}")
                data-running=move || if j.running.get() { "1" } else { "0" }>
                {move || {
                    if j.running.get() {
                        let (done, all) = j.progress.get();
                        if all > 0 { format!("searching in the worker… {done} of {all}") } else { "searching in the worker…".into() }
                    } else if let Some((w, p)) = j.timing.get() {
                        format!("worker {w:.0} ms, answer on the page {p:.0} ms after the click")
                    } else {
                        String::new()
                    }
                }}
            </span>
            <Show when=move || j.running.get()>
                <progress
                    max=move || j.progress.get().1.max(1)
                    value=move || j.progress.get().0
                    aria-label="Search progress"
                ></progress>
            </Show>
            <Show when=move || stale.get() && !j.running.get()>
                <p class="hint" data-testid=format!("bill-stale-{id}")>"For the scenario as it was when asked: ask again for this one."</p>
            </Show>
            <div class="bill-result" class:stale=move || stale.get() data-testid=format!("bill-result-{id}")
                inner_html=move || match j.result.get() {
                    Some(Ok(html)) => html,
                    _ => String::new(),
                }
            ></div>
            {move || match j.result.get() {
                Some(Err(e)) => Some(view! { <p class="issue error" data-testid=format!("bill-failed-{id}")>{e}</p> }),
                _ => None,
            }}
        </div>
    }
}

/// The run's bill section.
#[component]
pub fn BillSection() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let (section, scenario, model) = section_inputs(ctx.scenario);
    let bill = Memo::new(move |_| {
        crate::perf::timed("bill", || {
            scenario.with(|s| {
                model.with(|m| match m {
                    Ok(spec) => bill_view(s, spec),
                    Err(e) => BillView {
                        inputs: planner_core::view::bill::bill_inputs(&s.bill),
                        terms: Vec::new(),
                        error: Some(e.clone()),
                        rankings: Vec::new(),
                    },
                })
            })
        })
    });
    let goals = Memo::new(move |_| scenario.with(|s| goal_inputs(&s.bill)));
    let worker = BillWorker {
        worker: StoredValue::new_local(None),
        ready: StoredValue::new(false),
        queued: StoredValue::new(Vec::new()),
        jobs: BillJob::ALL.map(Job::new),
    };
    view! {
        <section node_ref=section id="bill" class="view bill" aria-labelledby="bill-title" data-testid="bill-view">
            <SectionHead id="bill-title" title="The run's bill" explain="The whole training run at this layout: its days, GPU-hours, dollars and energy, and what failures and checkpoints cost at this scale. Hover a figure for its formula; the inputs marked as defaults are published figures to replace with yours." />
            <div class="bill-columns">
                <div>
                    <h3>"Inputs"</h3>
                    {move || {
                        let v = bill.get();
                        let kind = scenario.with(|s| s.bill.price_kind);
                        inputs_table(v.inputs, Some(kind), "bill-inputs")
                    }}
                </div>
                <div>
                    <h3>"Bill"</h3>
                    {move || bill.with(terms_table)}
                </div>
            </div>
            <h3>"Leaders by time, dollars and energy"</h3>
            <p class="explain">"Every mesh of this cluster (the mesh explorer's full search), each priced as a whole run."</p>
            <JobPanel worker=worker job=BillJob::Rankings label="Rank the meshes" scenario=scenario />
            <div class="bill-inverse" data-testid="bill-inverse">
            <h3>"The inverse questions"</h3>
            <p class="explain">"Train the token budget by a deadline (within a budget): the smallest cluster from the node counts listed, every size a full mesh search. Serve a request rate within p99 TTFT and TPOT bounds: the fewest GPUs of each type, ranked by dollars per million output tokens."</p>
            {move || inputs_table(goals.get(), None, "bill-goals")}
            <JobPanel worker=worker job=BillJob::Deadline label="Smallest cluster for the deadline" scenario=scenario />
            <JobPanel worker=worker job=BillJob::Fleet label="Fewest GPUs for the rate" scenario=scenario />
            </div>
        </section>
    }
}
