//! The page: one `Scenario` signal that every input writes and every view
//! reads. The URL always holds the whole scenario (share links).

use leptos::prelude::*;
use planner_core::input::finetune::{FineTuneMode, LoraTargets, TARGET_PRESETS};
use planner_core::input::framework::Framework;
use planner_core::input::hardware::{gpu_presets, Cluster};
use planner_core::input::kernels::Kernels;
use planner_core::input::layout::{Recompute, Schedule, ZeroStage};
use planner_core::input::model::ModelSpec;
use planner_core::input::moe_routing::CHOICES;
use planner_core::input::overlap::{AppliedOverlap, OverlapChoice, Switch};
use planner_core::input::precision::{Precision, PrecisionRecipe};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::view::issues::issues;
use planner_core::view::presets::{self, model_presets};

use crate::charts::Theme;
use crate::inputs::{power_of_two_steps, Issues, NumberField, Select, StepSlider, Toggle};
use crate::share;
use wasm_bindgen::JsCast;

use crate::deferred::DeferredViews;
use crate::views::{CalibrationBadge, MemoryView, PipelineView, ServingView};

/// What the views read: the scenario and its resolved model.
#[derive(Clone, Copy)]
pub struct Ctx {
    /// The scenario every input writes.
    pub scenario: RwSignal<Scenario>,
    /// The resolved model shapes (or why they could not be resolved).
    pub model: Memo<Result<ModelSpec, String>>,
    /// Light or dark chart colours.
    pub theme: RwSignal<Theme>,
}

fn prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}

/// The chart colours, following the browser's colour scheme as it changes.
pub fn page_theme() -> RwSignal<Theme> {
    let theme = RwSignal::new(Theme::new(prefers_dark()));
    if let Some(mq) =
        web_sys::window().and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
    {
        let handler = wasm_bindgen::closure::Closure::<dyn Fn(web_sys::Event)>::new(
            move |_: web_sys::Event| theme.set(Theme::new(prefers_dark())),
        );
        // `add_event_listener`, not `onchange`: the page and the deferred module each keep one.
        let _ = mq.add_event_listener_with_callback("change", handler.as_ref().unchecked_ref());
        // The listener lives as long as the page.
        handler.forget();
    }
    theme
}

/// The scenario's model shapes (or why they could not be resolved).
pub fn resolved_model(scenario: RwSignal<Scenario>) -> Memo<Result<ModelSpec, String>> {
    Memo::new(move |_| scenario.with(|s| s.model_spec().map_err(|e| e.to_string())))
}

/// The whole page.
#[component]
pub fn App() -> impl IntoView {
    let (initial, link_errors) = share::load_from_location();
    let scenario = RwSignal::new(initial);
    let link_notice = RwSignal::new(link_errors);
    let theme = page_theme();
    let model = resolved_model(scenario);
    let issues = Memo::new(move |_| {
        crate::perf::timed("issues", || scenario.with(|s| model.with(|m| issues(s, m))))
    });
    provide_context(Issues(issues));
    let ctx = Ctx {
        scenario,
        model,
        theme,
    };
    provide_context(ctx);
    share::sync_url(scenario);
    crate::warm_up::watch(scenario);
    // The sections below the first screen mount after the frame that shows its first chart:
    // until then the page's one task builds, lays out and draws only what a visitor sees.
    let below_first_screen = RwSignal::new(false);
    crate::prerender::after_first_screen(move || below_first_screen.set(true));

    view! {
        <header class="top">
            <div class="brand">
                <h1>"meshplan"</h1>
                <p class="tagline">
                    "Memory, pipeline and serving arithmetic for training and serving LLMs on many GPUs. Every number comes with its formula: hover or focus it."
                </p>
            </div>
            <CalibrationBadge />
            <share::ShareBar scenario=scenario />
        </header>
        {move || {
            let notes = link_notice.get();
            (!notes.is_empty())
                .then(|| {
                    view! {
                        <div class="notice" role="alert" data-testid="link-notice">
                            <strong>"This link had problems; defaults were used for: "</strong>
                            <ul>
                                {notes
                                    .into_iter()
                                    .map(|(field, message)| {
                                        view! {
                                            <li>
                                                <code>{field}</code>
                                                ": "
                                                {message}
                                            </li>
                                        }
                                    })
                                    .collect_view()}
                            </ul>
                            <button on:click=move |_| link_notice.set(Vec::new())>"Dismiss"</button>
                        </div>
                    }
                })
        }}
        <main class="layout">
            <aside class="controls" aria-label="Inputs">
                <Controls />
            </aside>
            <div class="views">
                <MemoryView />
                <PipelineView />
                {move || {
                    below_first_screen
                        .get()
                        .then(|| {
                            view! {
                                <ServingView />
                                // The mesh explorer, step-time breakdown, accuracy, topology,
                                // learn, model import, measured numbers, fine-tuning and exports.
                                <DeferredViews />
                            }
                        })
                }}
            </div>
        </main>
        <footer class="foot">
            <p>
                "Decimal units (1 GB = 10⁹ bytes), as the article and GPU datasheets use. Estimates from planner-core; measure before you buy."
            </p>
        </footer>
    }
}

/// Example scenarios one click away.
#[component]
fn Examples() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let load = move |s: Scenario| ctx.scenario.set(s);
    view! {
        <div class="examples" role="group" aria-label="Examples">
            <span class="hint">"Examples:"</span>
            <button
                data-testid="example-default"
                title="Llama 3.1 70B on 8 nodes × 8 H100, TP 8 × DP 8, ZeRO-1"
                on:click=move |_| load(presets::default_scenario())
            >
                "Default"
            </button>
            <button
                data-testid="example-article-70b"
                title="The article's chart: a 70B model (Ψ = 70e9) on 64 H100 with DP 64"
                on:click=move |_| load(presets::article_70b_scenario())
            >
                "Article: 70B on 64 GPUs"
            </button>
            <button
                data-testid="example-article-mesh"
                title="The article's mesh: Llama 3.1 70B, 32K context, TP 8 × PP 4 × CP 4 × DP 4 on 512 H100"
                on:click=move |_| load(presets::article_mesh_scenario())
            >
                "Article: 512-GPU mesh"
            </button>
            <button
                data-testid="example-finetune"
                title="Llama 3.1 8B QLoRA (r = 16 on every linear layer) on one GPU, 2,048-token packed sequences: opens the fine-tuning section's will-it-fit"
                on:click=move |_| {
                    load(presets::finetune_scenario());
                    scroll_to("finetune");
                }
            >
                "Fine-tune: 8B QLoRA"
            </button>
        </div>
    }
}

/// Scrolls the element with `id` into view, if the page has it (the deferred sections may
/// still be loading).
fn scroll_to(id: &str) {
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
    {
        el.scroll_into_view();
    }
}

/// One parallel-degree slider: its label, link parameter, hint, and the layout
/// degree it moves (the power-of-two steps of the cluster's size).
struct DegreeSlider {
    label: &'static str,
    field: &'static str,
    hint: &'static str,
    get: fn(&Scenario) -> u32,
    put: fn(&mut Scenario, u32),
}

/// A [`DegreeSlider`] of `Layout`'s `member`.
macro_rules! degree_slider {
    ($label:literal, $field:literal, $member:ident, $hint:literal) => {
        DegreeSlider {
            label: $label,
            field: $field,
            hint: $hint,
            get: |sc| sc.layout.$member,
            put: |sc, v| sc.layout.$member = v,
        }
    };
}

/// The parallel-degree sliders, in the panel's order.
const DEGREE_SLIDERS: [DegreeSlider; 6] = [
    degree_slider!(
        "Data parallel (DP)",
        "dp",
        dp,
        "Replicas that each take a slice of the batch; ZeRO shards model state over them."
    ),
    degree_slider!(
        "Tensor parallel (TP)",
        "tp",
        tp,
        "Splits every weight matrix across GPUs; all-reduces each layer, so keep it inside a node."
    ),
    degree_slider!(
        "Pipeline parallel (PP)",
        "pp",
        pp,
        "Splits the layers into stages; micro-batches flow through them, leaving a bubble."
    ),
    degree_slider!(
        "Context parallel (CP)",
        "cp",
        cp,
        "Splits each sequence across GPUs; attention passes keys and values around a ring."
    ),
    degree_slider!(
        "Expert parallel (EP)",
        "ep",
        ep,
        "Splits routed experts of MoE layers across the TP × CP × DP ranks (Megatron's MoE parallel folding); tokens travel by all-to-all."
    ),
    degree_slider!(
        "Expert tensor parallel (expert TP)",
        "etp",
        expert_tp,
        "Splits each routed expert's FFN across this many GPUs; 1 keeps experts whole."
    ),
];

/// One overlap switch of the panel: its label, link parameter, hint, and the member of
/// [`OverlapChoice`] it sets and of [`AppliedOverlap`] the framework's default resolves to.
struct OverlapControl {
    label: &'static str,
    field: &'static str,
    hint: &'static str,
    get: fn(&OverlapChoice) -> Switch,
    put: fn(&mut OverlapChoice, Switch),
    applied: fn(&AppliedOverlap) -> bool,
}

/// An [`OverlapControl`] of `OverlapChoice`'s (and `AppliedOverlap`'s) `member`.
macro_rules! overlap_control {
    ($label:literal, $field:literal, $member:ident, $hint:literal) => {
        OverlapControl {
            label: $label,
            field: $field,
            hint: $hint,
            get: |o| o.$member,
            put: |o, v| o.$member = v,
            applied: |a| a.$member,
        }
    };
}

/// The overlap switches, in the panel's order: one line each.
const OVERLAP_CONTROLS: [OverlapControl; 4] = [
    overlap_control!(
        "TP communication overlap",
        "ov_tp",
        tp_comm,
        "Tensor-parallel collectives pipelined with the GEMMs they feed (Megatron --tp-comm-overlap)."
    ),
    overlap_control!(
        "Gradient reduce overlap",
        "ov_grad",
        grad_reduce,
        "Data-parallel gradient reduce-scatter / all-reduce during backward (Megatron --overlap-grad-reduce)."
    ),
    overlap_control!(
        "Parameter gather overlap",
        "ov_param",
        param_gather,
        "The distributed optimizer's parameter all-gather during the next forward (Megatron --overlap-param-gather)."
    ),
    overlap_control!(
        "EP all-to-all overlap",
        "ov_ep",
        ep_comm,
        "MoE dispatch/combine of one micro-batch hidden behind another's compute (Megatron --overlap-moe-expert-parallel-comm, combined 1F1B; needs EP > 1, no full recompute, virtual stages with PP)."
    ),
];

/// The framework's short name in an option's text (display only).
fn framework_name(framework: Framework) -> &'static str {
    match framework {
        Framework::Article => "the article",
        Framework::MegatronCore => "Megatron-Core",
        Framework::Torchtitan => "torchtitan",
        Framework::DeepSpeed => "DeepSpeed",
        Framework::DeepSpeed2021 => "DeepSpeed of 2021",
        Framework::HfTransformers => "Transformers",
        Framework::HfDeepSpeed => "DeepSpeed with Transformers",
        Framework::Torchtune => "torchtune",
    }
}

/// A switch's options, the default's text naming what `framework`'s default resolves to.
fn overlap_options(framework: Framework, default_on: bool) -> Vec<(String, String)> {
    Switch::ALL
        .iter()
        .map(|sw| {
            let text = match sw {
                Switch::Default => format!(
                    "Default: {} ({})",
                    if default_on {
                        "overlapped"
                    } else {
                        "not overlapped"
                    },
                    framework_name(framework)
                ),
                Switch::On => "On: overlapped with compute".to_string(),
                Switch::Off => "Off: on the critical path".to_string(),
            };
            (sw.id().to_string(), text)
        })
        .collect()
}

/// The kernel choices, the default's text naming what `framework`'s default resolves to.
fn kernel_options(framework: Framework) -> Vec<(String, String)> {
    Kernels::ALL
        .iter()
        .map(|k| {
            let text = match k {
                Kernels::FrameworkDefault => format!(
                    "Default: {} ({})",
                    k.applied(framework).label(),
                    framework_name(framework)
                ),
                _ => k.label().to_string(),
            };
            (k.id().to_string(), text)
        })
        .collect()
}

/// The step-time choices of the framework: kernels and every overlap switch. Their
/// options are rebuilt only when the framework (which names each default) changes.
#[component]
fn StepTimeChoices() -> impl IntoView {
    let s = expect_context::<Ctx>().scenario;
    let framework = Memo::new(move |_| s.with(|sc| sc.overheads.framework));
    move || {
        let fw = framework.get();
        let defaults = OverlapChoice::default().applied(fw);
        let kernels = view! {
            <Select
                label="Kernels"
                field="kernels"
                hint="Which kernels run each layer's memory-bound work (norms, activations, residuals, RoPE): fused, PyTorch eager, or torch.compile."
                options=kernel_options(fw)
                value=Signal::derive(move || s.with(|sc| sc.overheads.kernels.id().to_string()))
                on_change=Callback::new(move |id: String| {
                    if let Some(k) = Kernels::from_id(&id) {
                        s.update(|sc| sc.overheads.kernels = k);
                    }
                })
            />
        };
        let switches = OVERLAP_CONTROLS
            .iter()
            .map(|c| {
                let (get, put) = (c.get, c.put);
                view! {
                    <Select
                        label=c.label
                        field=c.field
                        hint=c.hint
                        options=overlap_options(fw, (c.applied)(&defaults))
                        value=Signal::derive(move || s.with(|sc| get(&sc.overheads.overlap).id().to_string()))
                        on_change=Callback::new(move |id: String| {
                            if let Some(v) = Switch::from_id(&id) {
                                s.update(|sc| put(&mut sc.overheads.overlap, v));
                            }
                        })
                    />
                }
            })
            .collect_view();
        view! { {kernels} {switches} <MoeRoutingChoice /> }
    }
}

/// How an MoE model's layers route (planner-core `input::moe_routing`): dropless or one of
/// the listed capacity factors (a link may carry another; the list then shows none chosen).
/// Dense models ignore it.
#[component]
fn MoeRoutingChoice() -> impl IntoView {
    let s = expect_context::<Ctx>().scenario;
    let options: Vec<(String, String)> = CHOICES
        .iter()
        .map(|c| (c.id.to_string(), c.label.to_string()))
        .collect();
    view! {
        <Select
            label="MoE routing"
            field="moe_cf"
            hint="MoE models only. Dropless waits for the busiest expert-parallel rank; a capacity factor caps each expert's tokens (--moe-expert-capacity-factor), padding fills it (--moe-pad-expert-input-to-capacity)."
            options=options
            value=Signal::derive(move || s.with(|sc| sc.overheads.moe_routing.choice_id().unwrap_or_default().to_string()))
            on_change=Callback::new(move |id: String| {
                s.update(|sc| {
                    if let Some(r) = sc.overheads.moe_routing.with_choice(&id) {
                        sc.overheads.moe_routing = r;
                    }
                })
            })
        />
    }
}

/// The input panel.
#[component]
fn Controls() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let s = ctx.scenario;
    let set = move |f: Box<dyn FnOnce(&mut Scenario)>| s.update(|sc| f(sc));

    let mut model_options: Vec<(String, String)> = model_presets()
        .into_iter()
        .map(|p| (p.id.to_string(), p.spec.name.clone()))
        .collect();
    model_options.push(("custom".into(), "Custom shapes…".into()));
    let model_value = Signal::derive(move || {
        s.with(|sc| match &sc.model {
            ModelChoice::Preset(id) => id.clone(),
            ModelChoice::Custom(_) => "custom".into(),
        })
    });
    let on_model = Callback::new(move |id: String| {
        if id == "custom" {
            let spec = ctx.model.get_untracked();
            if let Ok(spec) = spec {
                set(Box::new(move |sc| sc.model = ModelChoice::Custom(spec)));
            }
        } else {
            set(Box::new(move |sc| sc.model = ModelChoice::Preset(id)));
        }
    });

    let recipe_options: Vec<(String, String)> = PrecisionRecipe::ALL
        .iter()
        .map(|r| (r.id().to_string(), r.label().to_string()))
        .collect();
    let gpu_options: Vec<(String, String)> = gpu_presets()
        .into_iter()
        .map(|g| (g.id.clone(), g.name.clone()))
        .collect();
    let schedule_options: Vec<(String, String)> = Schedule::ALL
        .iter()
        .map(|x| (x.id().to_string(), x.label().to_string()))
        .collect();
    let framework_options: Vec<(String, String)> = Framework::ALL
        .iter()
        .map(|f| (f.id().to_string(), f.label().to_string()))
        .collect();
    let zero_options: Vec<(String, String)> = ZeroStage::ALL
        .iter()
        .map(|z| (z.number().to_string(), z.label().to_string()))
        .collect();
    let offload_options: Vec<(String, String)> = planner_core::input::offload::Offload::ALL
        .iter()
        .map(|o| (o.id().to_string(), o.label().to_string()))
        .collect();
    let recompute_options: Vec<(String, String)> = Recompute::ALL
        .iter()
        .map(|r| (r.id().to_string(), recompute_label(*r).to_string()))
        .collect();

    let ft_options: Vec<(String, String)> = FineTuneMode::ALL
        .iter()
        .map(|m| (m.id().to_string(), m.label().to_string()))
        .collect();
    let ft_on = move || s.with(|sc| sc.training.finetune.adapters().is_some());

    let world = Signal::derive(move || s.with(|sc| sc.cluster.world_size()));
    let world_u32 = move || u32::try_from(world.get()).unwrap_or(u32::MAX);
    let degree_steps = move |pick: fn(&Scenario) -> u32| {
        Signal::derive(move || power_of_two_steps(world_u32(), s.with(pick)))
    };
    let vs_steps = Signal::derive(move || {
        let current = s.with(|sc| sc.layout.virtual_stages);
        let mut v: Vec<u32> = (1..=8).collect();
        if !v.contains(&current) {
            v.push(current);
            v.sort_unstable();
        }
        v
    });
    let used = move || s.with(|sc| sc.layout.world_size());
    // The stage splits that fit this model on pp × v (planner-core lists them); the select
    // keeps its element and updates only the options that change.
    let split_choices = Memo::new(move |_| {
        s.with(|sc| {
            let layers = sc.model_spec().map_or(0, |m| m.layers);
            planner_core::input::stage_split::split_choices(
                layers,
                sc.layout.pp,
                sc.layout.virtual_stages,
                &sc.layout.stage_split,
            )
        })
    });

    view! {
        <Examples />
        <fieldset>
            <legend>"Model"</legend>
            <Select
                label="Model"
                field="model"
                hint="A preset from its published config.json, or your own shapes."
                options=model_options
                value=model_value
                on_change=on_model
            />
            {move || {
                matches!(s.with(|sc| sc.model.clone()), ModelChoice::Custom(_))
                    .then(|| view! { <CustomShapes /> })
            }}
            <p class="derived" data-testid="param-count">
                {move || {
                    ctx.model
                        .with(|m| match m {
                            Ok(spec) => {
                                format!(
                                    "Ψ = {} parameters{}",
                                    crate::format::sig3(spec.params() / 1e9) + "B",
                                    if spec.moe.is_some() {
                                        format!(
                                            ", {}B active per token",
                                            crate::format::sig3(spec.active_params() / 1e9),
                                        )
                                    } else {
                                        String::new()
                                    },
                                )
                            }
                            Err(e) => e.clone(),
                        })
                }}
            </p>
            <Select
                label="Precision recipe"
                field="prec"
                hint="Bytes per parameter for weights, gradients, master copy and optimizer moments."
                options=recipe_options
                value=Signal::derive(move || s.with(|sc| sc.precision.recipe.id().to_string()))
                on_change=Callback::new(move |id: String| {
                    if let Some(r) = PrecisionRecipe::from_id(&id) {
                        set(Box::new(move |sc| sc.precision = Precision::from_recipe(r)));
                    }
                })
            />
        </fieldset>
        <fieldset>
            <legend>"Batch"</legend>
            <NumberField
                label="Sequence length"
                field="seq"
                unit="tokens"
                hint="Tokens per training sequence; activations grow with it."
                value=Signal::derive(move || s.with(|sc| sc.training.seq_len))
                on_change=Callback::new(move |v| set(Box::new(move |sc| sc.training.seq_len = v)))
            />
            <NumberField
                label="Micro-batch"
                field="mbs"
                unit="sequences"
                hint="Sequences one data-parallel rank runs per forward/backward pass."
                value=Signal::derive(move || s.with(|sc| sc.layout.micro_batch))
                on_change=Callback::new(move |v| set(Box::new(move |sc| sc.layout.micro_batch = v)))
            />
            <NumberField
                label="Global batch"
                field="gbs"
                unit="sequences"
                hint="Sequences per optimizer step over all data-parallel ranks."
                value=Signal::derive(move || s.with(|sc| sc.training.global_batch))
                on_change=Callback::new(move |v| set(Box::new(move |sc| sc.training.global_batch = v)))
            />
            <Select
                label="Activation recompute"
                field="recompute"
                hint="Recompute activations in the backward pass instead of keeping them (Korthikanti et al. 2022)."
                options=recompute_options
                value=Signal::derive(move || s.with(|sc| sc.layout.recompute.id().to_string()))
                on_change=Callback::new(move |id: String| {
                    if let Some(r) = Recompute::from_id(&id) {
                        set(Box::new(move |sc| sc.layout.recompute = r));
                    }
                })
            />
            <Select
                label="Fine-tuning"
                field="ft"
                hint="Full: every weight trains. LoRA: frozen base with low-rank adapters. QLoRA: the base in 4-bit NF4."
                options=ft_options
                value=Signal::derive(move || s.with(|sc| sc.training.finetune.mode.id().to_string()))
                on_change=Callback::new(move |id: String| {
                    if let Some(m) = FineTuneMode::from_id(&id) {
                        set(Box::new(move |sc| sc.training.finetune.mode = m));
                    }
                })
            />
            {move || ft_on().then(|| view! { <AdapterControls /> })}
            <Toggle
                label="Pack examples"
                field="pack"
                hint="Short examples packed into full sequences (torchtune packed, TRL packing): the epoch counts tokens; off, one padded example per sequence."
                value=Signal::derive(move || s.with(|sc| sc.training.packing))
                on_change=Callback::new(move |on| set(Box::new(move |sc| sc.training.packing = on)))
            />
        </fieldset>
        <fieldset>
            <legend>"Cluster"</legend>
            <Select
                label="GPU"
                field="gpu"
                hint="Memory, compute and link speeds from the vendor datasheet."
                options=gpu_options
                value=Signal::derive(move || s.with(|sc| sc.cluster.gpu.id.clone()))
                on_change=Callback::new(move |id: String| {
                    if let Some(g) = planner_core::input::hardware::gpu_preset(&id) {
                        set(
                            Box::new(move |sc| {
                                let gpn = sc.cluster.gpus_per_node;
                                let mut c = Cluster::of(g, sc.cluster.nodes);
                                c.gpus_per_node = gpn;
                                sc.cluster = c;
                            }),
                        );
                    }
                })
            />
            <NumberField
                label="GPUs per node"
                field="gpn"
                unit="GPUs"
                hint="GPUs inside one server: joined by NVLink/NVSwitch, or by PCIe alone on PCIe cards."
                value=Signal::derive(move || s.with(|sc| sc.cluster.gpus_per_node))
                on_change=Callback::new(move |v| set(Box::new(move |sc| sc.cluster.gpus_per_node = v)))
            />
            <NumberField
                label="Nodes"
                field="gpus"
                unit="nodes"
                hint="Servers joined by the network (InfiniBand/RoCE)."
                value=Signal::derive(move || s.with(|sc| sc.cluster.nodes))
                on_change=Callback::new(move |v| set(Box::new(move |sc| sc.cluster.nodes = v)))
            />
            <p class="derived" data-testid="world-size">
                {move || format!("{} GPUs; the layout uses dp × tp × pp × cp = {}", world.get(), used())}
            </p>
        </fieldset>
        <fieldset>
            <legend>"Parallel layout"</legend>
            {DEGREE_SLIDERS
                .iter()
                .map(|d| {
                    let (get, put) = (d.get, d.put);
                    view! {
                        <StepSlider
                            label=d.label
                            field=d.field
                            hint=d.hint
                            steps=degree_steps(get)
                            value=Signal::derive(move || s.with(get))
                            on_change=Callback::new(move |v| set(Box::new(move |sc| put(sc, v))))
                        />
                    }
                })
                .collect_view()}
            <StepSlider
                label="Virtual stages"
                field="vpp"
                hint="Layer chunks per pipeline rank for the interleaved schedule; shrinks the bubble."
                steps=vs_steps
                value=Signal::derive(move || s.with(|sc| sc.layout.virtual_stages))
                on_change=Callback::new(move |v| set(Box::new(move |sc| sc.layout.virtual_stages = v)))
            />
            <Select
                label="Stage split"
                field="split"
                hint="Decoder layers per pipeline stage: even, or lighter first and last stages (which also hold the embedding and the LM head)."
                options=split_choices
                value=Signal::derive(move || s.with(|sc| sc.layout.stage_split.to_link()))
                on_change=Callback::new(move |id: String| {
                    if let Ok(x) = planner_core::input::layout::StageSplit::from_link(&id) {
                        set(Box::new(move |sc| sc.layout.stage_split = x));
                    }
                })
            />
            <Select
                label="Pipeline schedule"
                field="sched"
                hint="Order in which stages run forward and backward passes of micro-batches."
                options=schedule_options
                value=Signal::derive(move || s.with(|sc| sc.layout.schedule.id().to_string()))
                on_change=Callback::new(move |id: String| {
                    if let Some(x) = Schedule::from_id(&id) {
                        set(Box::new(move |sc| sc.layout.schedule = x));
                    }
                })
            />
            <Select
                label="ZeRO stage"
                field="zero"
                hint="What the DP group shards: 1 optimizer state, 2 also gradients, 3 also weights (FSDP)."
                options=zero_options
                value=Signal::derive(move || s.with(|sc| sc.layout.zero.number().to_string()))
                on_change=Callback::new(move |id: String| {
                    if let Some(z) = id.parse::<u8>().ok().and_then(ZeroStage::from_number) {
                        set(Box::new(move |sc| sc.layout.zero = z));
                    }
                })
            />
            <Select
                label="Offload"
                field="offload"
                hint="Optimizer state (and with ZeRO-3 the parameters) in CPU memory or on NVMe: GPU memory falls, host memory and PCIe/NVMe time appear (DeepSpeed ZeRO-Offload / ZeRO-Infinity, FSDP2 CPUOffloadPolicy)."
                options=offload_options
                value=Signal::derive(move || s.with(|sc| sc.training.offload.id().to_string()))
                on_change=Callback::new(move |id: String| {
                    if let Some(o) = planner_core::input::offload::Offload::from_id(&id) {
                        set(Box::new(move |sc| sc.training.offload = o));
                    }
                })
            />
            <Select
                label="Framework"
                field="framework"
                hint="Whose memory semantics the loss and recompute transients follow."
                options=framework_options
                value=Signal::derive(move || s.with(|sc| sc.overheads.framework.id().to_string()))
                on_change=Callback::new(move |id: String| {
                    if let Some(f) = Framework::from_id(&id) {
                        set(Box::new(move |sc| sc.overheads.framework = f));
                    }
                })
            />
            <StepTimeChoices />
            <Toggle
                label="Sequence parallel"
                field="sp"
                hint="Splits the norm and dropout activations over the TP group too (Megatron SP)."
                value=Signal::derive(move || s.with(|sc| sc.layout.sequence_parallel))
                on_change=Callback::new(move |v| set(Box::new(move |sc| sc.layout.sequence_parallel = v)))
            />
        </fieldset>
    }
}

/// Rank and target modules of LoRA/QLoRA adapters.
#[component]
fn AdapterControls() -> impl IntoView {
    let s = expect_context::<Ctx>().scenario;
    let current = s.with_untracked(|sc| sc.training.finetune.lora.targets.to_list());
    let mut options: Vec<(String, String)> = TARGET_PRESETS
        .iter()
        .map(|(v, l)| (v.to_string(), l.to_string()))
        .collect();
    if !options.iter().any(|(v, _)| *v == current) {
        options.push((current.clone(), current));
    }
    view! {
        <NumberField
            label="LoRA rank"
            field="lora_r"
            unit="r"
            hint="Rank r of each adapter B·A; adapters add r·(d_in + d_out) parameters per targeted linear."
            value=Signal::derive(move || s.with(|sc| sc.training.finetune.lora.rank))
            on_change=Callback::new(move |v| s.update(|sc| sc.training.finetune.lora.rank = v))
        />
        <Select
            label="Adapter targets"
            field="lora_mod"
            hint="Linear layers that carry adapters (PEFT target_modules)."
            options=options
            value=Signal::derive(move || s.with(|sc| sc.training.finetune.lora.targets.to_list()))
            on_change=Callback::new(move |v: String| {
                if let Ok(t) = LoraTargets::parse(&v) {
                    s.update(|sc| sc.training.finetune.lora.targets = t);
                }
            })
        />
    }
}

fn recompute_label(r: Recompute) -> &'static str {
    match r {
        Recompute::None => "None: keep every activation",
        // torchtitan's selective is its per-op policy (planner-core input/sac_policy.rs).
        Recompute::Selective => "Selective: attention core (torchtitan: every 2nd matmul)",
        Recompute::Full => "Full: keep layer inputs only",
    }
}

/// Shape fields of a custom model.
#[component]
fn CustomShapes() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let s = ctx.scenario;
    let get = move |pick: fn(&ModelSpec) -> u32| {
        Signal::derive(move || {
            s.with(|sc| match &sc.model {
                ModelChoice::Custom(m) => pick(m),
                ModelChoice::Preset(_) => 0,
            })
        })
    };
    let put = move |write: fn(&mut ModelSpec, u32)| {
        Callback::new(move |v: u32| {
            s.update(|sc| {
                if let ModelChoice::Custom(m) = &mut sc.model {
                    write(m, v);
                    // Shapes changed: the nominal count no longer describes them.
                    m.nominal_params = None;
                }
            })
        })
    };
    view! {
        <div class="custom-shapes">
            <NumberField label="Layers" field="layers" unit="" hint="Decoder layers." value=get(|m| m.layers) on_change=put(|m, v| m.layers = v) />
            <NumberField label="Hidden size" field="hidden" unit="" hint="Model width h." value=get(|m| m.hidden) on_change=put(|m, v| m.hidden = v) />
            <NumberField label="Attention heads" field="heads" unit="" hint="Query heads a." value=get(|m| m.heads) on_change=put(|m, v| m.heads = v) />
            <NumberField label="KV heads" field="kv_heads" unit="" hint="Key/value heads (GQA); equal to heads for multi-head attention." value=get(|m| m.kv_heads) on_change=put(|m, v| m.kv_heads = v) />
            <NumberField label="Head dim" field="head_dim" unit="" hint="Width of one attention head." value=get(|m| m.head_dim) on_change=put(|m, v| m.head_dim = v) />
            <NumberField label="FFN width" field="ffn" unit="" hint="Inner width f of the feed-forward block." value=get(|m| m.ffn) on_change=put(|m, v| m.ffn = v) />
            <NumberField label="Vocabulary" field="vocab" unit="tokens" hint="Rows of the embedding and columns of the output layer." value=get(|m| m.vocab) on_change=put(|m, v| m.vocab = v) />
        </div>
    }
}
