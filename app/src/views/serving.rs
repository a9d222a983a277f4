//! Serving view: KV cache per token and per sequence, concurrent sequences per
//! replica under the memory cap for TP/PP choices, and the recommendation.

use leptos::prelude::*;
use planner_core::base::explain::Term;
use planner_core::input::scenario::Scenario;
use planner_core::input::scenario::ServeDtype;
use planner_core::input::serving_engine::ServingEngine;
use planner_core::view::serving::{
    serving, ConcurrencyCell, Decision, ServingView as ServingData, TABLE_PP, TABLE_TP,
};

use crate::app::Ctx;
use crate::views::markup::SectionHead;
use crate::views::serving_latency::ServingLatency;
use crate::views::visibility::{model_while_visible, near_screen, scenario_while_visible};

use crate::control_specs::{
    number, slider, ChoiceSpec, Control, DecimalSpec, Options, ScenarioControls,
};
use crate::format;
use crate::inputs::power_of_two_steps;

/// The engine choices: id and display name.
fn engine_options() -> Vec<(String, String)> {
    ServingEngine::ALL
        .iter()
        .map(|e| {
            let label = match e {
                ServingEngine::Vllm => "vLLM",
                ServingEngine::Sglang => "SGLang",
            };
            (e.id().to_string(), label.to_string())
        })
        .collect()
}

fn decision_label(d: Decision) -> &'static str {
    match d {
        Decision::Replicas => "Run independent replicas",
        Decision::TensorParallel => "Shard each replica with tensor parallelism inside a node",
        Decision::PipelineAcrossNodes => "Add pipeline stages across nodes",
        Decision::DoesNotFit => "Does not fit this cluster",
    }
}

/// One figure: label, value, and its formula with numbers on hover/focus.
#[component]
fn Figure(#[prop(into)] label: String, #[prop(into)] testid: String, term: Term) -> impl IntoView {
    // The term says its unit (bytes, or a count of sequences).
    let value = term.unit.format(term.value);
    let title = format!("{}\n{}\n{}", term.formula, term.worked, term.assumption);
    view! {
        <div tabindex="0" title=title>
            <dt>{label}</dt>
            <dd data-testid=testid data-bytes=term.value.to_string()>{value}</dd>
            <dd class="hint">{term.worked.clone()}</dd>
        </div>
    }
}

/// The serving inputs, in order.
static SERVING_CONTROLS: [Control; 8] = [
    Control::Choice(ChoiceSpec {
        label: "Weights",
        field: "serve_w",
        hint: "Format of the served weights, block scales counted: NVFP4 and MXFP4 run on FP4 tensor cores where the GPU has them, else dequantized at the BF16 rate; mxfp4-moe is gpt-oss as shipped (MXFP4 experts, the rest BF16).",
        options: Options::Fixed(|| dtype_options(|_| true)),
        get: |sc| sc.serving.weight_dtype.id().to_string(),
        put: |sc, id| put_dtype(sc, id, |sc, d| sc.serving.weight_dtype = d),
    }),
    Control::Choice(ChoiceSpec {
        label: "KV cache",
        field: "serve_kv",
        hint: "Dtype of the cached keys and values.",
        options: Options::Fixed(|| dtype_options(|d| d.is_kv_format())),
        get: |sc| sc.serving.kv_dtype.id().to_string(),
        put: |sc, id| put_dtype(sc, id, |sc, d| sc.serving.kv_dtype = d),
    }),
    number! { "Context", "serve_ctx", "tokens", serving.context_len, "Prompt plus output tokens each sequence keeps in cache." },
    number! { "Target concurrency", "serve_conc", "sequences", serving.target_concurrency, "Sequences one replica should serve at once." },
    slider! { "Replica TP", "serve_tp", serving.tp, |sc| power_of_two_steps(sc.cluster.gpus_per_node, sc.serving.tp), "GPUs one replica's weights and KV heads are split over, inside a node." },
    slider! { "Replica PP", "serve_pp", serving.pp, |sc| power_of_two_steps(16, sc.serving.pp), "Pipeline stages of one replica, across nodes." },
    Control::Choice(ChoiceSpec {
        label: "Engine",
        field: "serve_engine",
        hint: "Whose accounting sizes the KV pool: vLLM (utilization bounds weights, activations and cache) or SGLang (mem_fraction_static bounds weights and cache).",
        options: Options::Fixed(engine_options),
        get: |sc| sc.serving.engine.id().to_string(),
        // An unknown id (never offered) leaves the engine as it is.
        put: |sc, id| {
            sc.serving.engine = ServingEngine::from_id(id).unwrap_or(sc.serving.engine);
            true
        },
    }),
    Control::Decimal(DecimalSpec {
        label: "Memory utilization",
        field: "serve_util",
        unit: "of GPU",
        hint: "Share of GPU memory the engine may use (vLLM gpu_memory_utilization, default 0.9).",
        step: "0.01",
        get: |sc| sc.serving.memory_utilization,
        put: |sc, v| sc.serving.memory_utilization = v,
    }),
];

/// The dtypes `keep` keeps, as options.
fn dtype_options(keep: fn(&ServeDtype) -> bool) -> Vec<(String, String)> {
    ServeDtype::ALL
        .iter()
        .filter(|d| keep(d))
        .map(|d| (d.id().to_string(), d.id().to_ascii_uppercase()))
        .collect()
}

/// Writes the dtype `id` names with `put`; says whether it read.
fn put_dtype(sc: &mut Scenario, id: &str, put: fn(&mut Scenario, ServeDtype)) -> bool {
    ServeDtype::from_id(id).map(|d| put(sc, d)).is_some()
}

/// The serving section.
#[component]
pub fn ServingView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let section = NodeRef::<leptos::html::Section>::new();
    let near = near_screen(section);
    let scenario = scenario_while_visible(ctx.scenario, near);
    let model = model_while_visible(scenario);
    // Serving depends on the model, the serving inputs and the GPU, not on the training layout.
    let inputs = Memo::new(move |_| scenario.with(|sc| (sc.serving.clone(), sc.cluster.clone())));
    let data = Memo::new(move |_| {
        crate::perf::timed("serving", || {
            let (serving_inputs, cluster) = inputs.get();
            let model = model.get()?;
            serving(&model, &serving_inputs, &cluster)
        })
    });
    let outputs = move || {
        data.with(|d| match d {
            Err(e) => view! { <p class="issue error" data-testid="serving-error">{e.clone()}</p> }
                .into_any(),
            Ok(d) => serving_outputs(d),
        })
    };
    view! {
        <section node_ref=section class="view" aria-labelledby="serving-title" data-testid="serving-view">
            <SectionHead id="serving-title" title="Serving" explain="At inference there is no optimizer state or gradient: a GPU holds the weights once and a key/value cache that grows with every token of every sequence it serves. If one GPU holds the weights with room for the cache, more independent replicas serve more traffic with no communication. Otherwise tensor parallelism inside a node splits weights and cache heads; pipeline stages across nodes come last, since they add a hop per token." />
            <div class="serving-inputs">
                <ScenarioControls specs=&SERVING_CONTROLS />
            </div>
            {outputs}
            <ServingLatency scenario=scenario visible=near />
        </section>
    }
}

/// The plan's figures, the recommendation and the concurrency table.
fn serving_outputs(d: &ServingData) -> AnyView {
    let p = &d.plan;
    let r = &p.recommendation;
    view! {
        <dl class="figures-inline">
            <Figure label="KV cache per token" testid="kv-per-token" term=p.kv_bytes_per_token.clone() />
            <Figure label="KV cache per sequence" testid="kv-per-sequence" term=p.kv_bytes_per_sequence.clone() />
            <Figure label="Engine memory per GPU" testid="serve-usable" term=p.usable_per_gpu.clone() />
            <Figure label="Weights per GPU" testid="serve-weights" term=p.weights_per_gpu.clone() />
            // What the engine takes before the pool (planner-core's engine_kv_pool), in order.
            {p.pool_terms
                .iter()
                .map(|t| {
                    let testid = format!("pool-{}", t.key.trim_start_matches("serving."));
                    view! { <Figure label=t.label.clone() testid=testid term=t.clone() /> }
                })
                .collect_view()}
            <Figure label="KV pool per GPU" testid="kv-budget" term=p.kv_budget_per_gpu.clone() />
            <Figure label="Concurrent sequences per replica" testid="max-concurrent" term=p.max_concurrent_sequences.clone() />
        </dl>
        <div class="recommendation" data-testid="serving-recommendation" role="status">
            <strong>{format!("{}: TP {} × PP {}", decision_label(r.decision), r.tp, r.pp)}</strong>
            {format!(
                "{} replica(s) of that shape on this cluster, each holding {} sequences of {} tokens. ",
                format::thousands(r.replicas),
                format::thousands(r.max_concurrent_sequences),
                format::thousands(u64::from(d.context_len)),
            )}
            {r.reason.clone()}
        </div>
        {concurrency_table(d, (p.tp, p.pp))}
    }
    .into_any()
}

/// Concurrent sequences per replica for each TP × PP, the scenario's shape marked.
fn concurrency_table(d: &ServingData, current: (u32, u32)) -> impl IntoView {
    view! {
        <div class="table-scroll">
            <table class="conc" data-testid="concurrency-table">
                <caption>
                    {format!(
                        "Concurrent {}-token sequences per replica (green: meets the target of {})",
                        format::thousands(u64::from(d.context_len)),
                        d.target_concurrency,
                    )}
                </caption>
                <thead>
                    <tr>
                        <th scope="col">"TP \\ PP"</th>
                        {TABLE_PP.iter().map(|pp| view! { <th scope="col">{format!("PP {pp}")}</th> }).collect_view()}
                    </tr>
                </thead>
                <tbody>
                    {TABLE_TP
                        .iter()
                        .map(|&tp| {
                            let cells: Vec<ConcurrencyCell> = d.table.iter().filter(|c| c.tp == tp).cloned().collect();
                            view! {
                                <tr>
                                    <th scope="row">{format!("TP {tp}")}</th>
                                    {cells
                                        .into_iter()
                                        .map(|c| {
                                            let class = if !c.valid {
                                                "nofit"
                                            } else if c.fits_target {
                                                "fit"
                                            } else {
                                                ""
                                            };
                                            let title = c.note.clone().unwrap_or_else(|| c.term.worked.clone());
                                            let text = if c.valid { format::thousands(c.max_concurrent_sequences) } else { "—".to_string() };
                                            view! {
                                                <td
                                                    class=class
                                                    class:current={(c.tp, c.pp) == current}
                                                    title=title
                                                    tabindex="0"
                                                    data-testid=format!("conc-tp{}-pp{}", c.tp, c.pp)
                                                >
                                                    {text}
                                                </td>
                                            }
                                        })
                                        .collect_view()}
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}
