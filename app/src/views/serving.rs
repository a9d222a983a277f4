//! Serving view: KV cache per token and per sequence, concurrent sequences per
//! replica under the memory cap for TP/PP choices, and the recommendation.

use leptos::prelude::*;
use planner_core::scenario::ServeDtype;

use crate::app::Ctx;
use crate::inputs::{power_of_two_steps, DecimalField, NumberField, Select, StepSlider};

/// The serving section.
#[component]
pub fn ServingView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let s = ctx.scenario;
    let dtype_options = || {
        ServeDtype::ALL
            .iter()
            .map(|d| (d.id().to_string(), d.id().to_uppercase()))
            .collect::<Vec<_>>()
    };
    let node = Signal::derive(move || s.with(|sc| sc.cluster.gpus_per_node));
    view! {
        <section class="view" aria-labelledby="serving-title" data-testid="serving-view">
            <h2 id="serving-title">"Serving"</h2>
            <p class="explain">
                "At inference there is no optimizer state or gradient: a GPU holds the weights once and a key/value cache that grows with every token of every sequence it serves. If one GPU holds the weights with room for the cache, more independent replicas serve more traffic with no communication. Otherwise tensor parallelism inside a node splits weights and cache heads; pipeline stages across nodes come last, since they add a hop per token."
            </p>
            <div class="serving-inputs">
                <Select
                    label="Weights"
                    field="serve_w"
                    hint="Dtype of the served weights."
                    options=dtype_options()
                    value=Signal::derive(move || s.with(|sc| sc.serving.weight_dtype.id().to_string()))
                    on_change=Callback::new(move |id: String| {
                        if let Some(d) = ServeDtype::from_id(&id) {
                            s.update(|sc| sc.serving.weight_dtype = d);
                        }
                    })
                />
                <Select
                    label="KV cache"
                    field="serve_kv"
                    hint="Dtype of the cached keys and values."
                    options=dtype_options()
                    value=Signal::derive(move || s.with(|sc| sc.serving.kv_dtype.id().to_string()))
                    on_change=Callback::new(move |id: String| {
                        if let Some(d) = ServeDtype::from_id(&id) {
                            s.update(|sc| sc.serving.kv_dtype = d);
                        }
                    })
                />
                <NumberField
                    label="Context"
                    field="serve_ctx"
                    unit="tokens"
                    hint="Prompt plus output tokens each sequence keeps in cache."
                    value=Signal::derive(move || s.with(|sc| sc.serving.context_len))
                    on_change=Callback::new(move |v| s.update(|sc| sc.serving.context_len = v))
                />
                <NumberField
                    label="Target concurrency"
                    field="serve_conc"
                    unit="sequences"
                    hint="Sequences one replica should serve at once."
                    value=Signal::derive(move || s.with(|sc| sc.serving.target_concurrency))
                    on_change=Callback::new(move |v| s.update(|sc| sc.serving.target_concurrency = v))
                />
                <StepSlider
                    label="Replica TP"
                    field="serve_tp"
                    hint="GPUs one replica's weights and KV heads are split over, inside a node."
                    steps=Signal::derive(move || power_of_two_steps(node.get(), s.with(|sc| sc.serving.tp)))
                    value=Signal::derive(move || s.with(|sc| sc.serving.tp))
                    on_change=Callback::new(move |v| s.update(|sc| sc.serving.tp = v))
                />
                <StepSlider
                    label="Replica PP"
                    field="serve_pp"
                    hint="Pipeline stages of one replica, across nodes."
                    steps=Signal::derive(move || power_of_two_steps(16, s.with(|sc| sc.serving.pp)))
                    value=Signal::derive(move || s.with(|sc| sc.serving.pp))
                    on_change=Callback::new(move |v| s.update(|sc| sc.serving.pp = v))
                />
                <DecimalField
                    label="Memory utilization"
                    field="serve_util"
                    unit="of GPU"
                    hint="Share of GPU memory the engine may use (vLLM gpu_memory_utilization, default 0.9)."
                    step="0.01"
                    value=Signal::derive(move || s.with(|sc| sc.serving.memory_utilization))
                    on_change=Callback::new(move |v| s.update(|sc| sc.serving.memory_utilization = v))
                />
            </div>
        </section>
    }
}
