//! The page: one `Scenario` signal that every input writes and every view
//! reads. The URL always holds the whole scenario (share links).

use leptos::prelude::*;
use planner_core::input::finetune::{FineTuneMode, LoraTargets, TARGET_PRESETS};
use planner_core::input::framework::Framework;
use planner_core::input::hardware::{gpu_presets, Cluster};
use planner_core::input::kernels::Kernels;
use planner_core::input::layout::{Recompute, Schedule, StageSplit, ZeroStage};
use planner_core::input::model::ModelSpec;
use planner_core::input::moe_routing::CHOICES;
use planner_core::input::offload::Offload;
use planner_core::input::overlap::{OverlapChoice, Switch};
use planner_core::input::precision::{Precision, PrecisionRecipe};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::view::issues::issues;
use planner_core::view::presets::{self, model_presets};

use crate::charts::Theme;
use crate::control_specs::{
    enum_choice, number, options_of, slider, toggle, ChoiceSpec, Control, Options, ScenarioControls,
};
use crate::inputs::{power_of_two_steps, Issues, NumberField, Select};
use crate::share;

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
        // A listener, not `onchange`: the page and the deferred module each keep one. It lives
        // as long as the page.
        gloo_events::EventListener::new(&mq, "change", move |_| {
            theme.set(Theme::new(prefers_dark()));
        })
        .forget();
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

/// One example: its button's test id, title and text, its scenario, and the section it
/// scrolls to, if any.
struct Example {
    testid: &'static str,
    title: &'static str,
    text: &'static str,
    scenario: fn() -> Scenario,
    scroll_to: Option<&'static str>,
}

/// The examples, in the row's order.
const EXAMPLES: [Example; 4] = [
    Example {
        testid: "example-default",
        title: "Llama 3.1 70B on 8 nodes × 8 H100, TP 8 × DP 8, ZeRO-1",
        text: "Default",
        scenario: presets::default_scenario,
        scroll_to: None,
    },
    Example {
        testid: "example-article-70b",
        title: "The article's chart: a 70B model (Ψ = 70e9) on 64 H100 with DP 64",
        text: "Article: 70B on 64 GPUs",
        scenario: presets::article_70b_scenario,
        scroll_to: None,
    },
    Example {
        testid: "example-article-mesh",
        title: "The article's mesh: Llama 3.1 70B, 32K context, TP 8 × PP 4 × CP 4 × DP 4 on 512 H100",
        text: "Article: 512-GPU mesh",
        scenario: presets::article_mesh_scenario,
        scroll_to: None,
    },
    Example {
        testid: "example-finetune",
        title: "Llama 3.1 8B QLoRA (r = 16 on every linear layer) on one GPU, 2,048-token packed sequences: opens the fine-tuning section's will-it-fit",
        text: "Fine-tune: 8B QLoRA",
        scenario: presets::finetune_scenario,
        scroll_to: Some("finetune"),
    },
];

/// Example scenarios one click away.
#[component]
fn Examples() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    view! {
        <div class="examples" role="group" aria-label="Examples">
            <span class="hint">"Examples:"</span>
            {EXAMPLES
                .iter()
                .map(|e| {
                    let (scenario, section) = (e.scenario, e.scroll_to);
                    view! {
                        <button
                            data-testid=e.testid
                            title=e.title
                            on:click=move |_| {
                                ctx.scenario.set(scenario());
                                if let Some(id) = section {
                                    scroll_to(id);
                                }
                            }
                        >
                            {e.text}
                        </button>
                    }
                })
                .collect_view()}
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

/// The choice of `OverlapChoice`'s `member`: its options name what the framework's default
/// resolves to (`AppliedOverlap`'s `member`), so they change with the framework.
macro_rules! overlap_choice {
    ($label:literal, $field:literal, $member:ident, $hint:literal) => {
        Control::Choice(ChoiceSpec {
            label: $label,
            field: $field,
            hint: $hint,
            options: Options::Of(|sc| {
                let fw = sc.overheads.framework;
                overlap_options(fw, OverlapChoice::default().applied(fw).$member)
            }),
            get: |sc| sc.overheads.overlap.$member.id().to_string(),
            put: |sc, id| {
                put_parsed(sc, Switch::from_id(id), |sc, v| {
                    sc.overheads.overlap.$member = v
                })
            },
        })
    };
}

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

/// A slider of `Layout`'s `member`, over the power-of-two steps of the cluster's size.
macro_rules! degree_slider {
    ($label:literal, $field:literal, $member:ident, $hint:literal) => {
        slider! { $label, $field, layout.$member, |sc| power_of_two_steps(world_u32(sc), sc.layout.$member), $hint }
    };
}

/// The cluster's GPUs, as a slider's bound.
fn world_u32(sc: &Scenario) -> u32 {
    u32::try_from(sc.cluster.world_size()).unwrap_or(u32::MAX)
}

/// Writes `parse(id)` with `put` when it reads: a choice's `put`.
fn put_parsed<T>(sc: &mut Scenario, parsed: Option<T>, put: fn(&mut Scenario, T)) -> bool {
    parsed.map(|v| put(sc, v)).is_some()
}

/// The model choices: the presets, then custom shapes.
fn model_options() -> Vec<(String, String)> {
    let mut options = options_of(
        &model_presets(),
        |p| p.id.to_string(),
        |p| p.spec.name.clone(),
    );
    options.push(("custom".into(), "Custom shapes…".into()));
    options
}

/// Chooses a preset, or custom shapes starting from the current model's (when it resolves).
fn put_model(sc: &mut Scenario, id: &str) -> bool {
    if id != "custom" {
        sc.model = ModelChoice::Preset(id.to_string());
        return true;
    }
    match sc.model_spec() {
        Ok(spec) => {
            sc.model = ModelChoice::Custom(spec);
            true
        }
        Err(_) => false,
    }
}

/// Another GPU, keeping the cluster's nodes and GPUs per node.
fn put_gpu(sc: &mut Scenario, id: &str) -> bool {
    let Some(g) = planner_core::input::hardware::gpu_preset(id) else {
        return false;
    };
    let gpn = sc.cluster.gpus_per_node;
    let mut c = Cluster::of(g, sc.cluster.nodes);
    c.gpus_per_node = gpn;
    sc.cluster = c;
    true
}

/// Virtual stages 1 to 8, and the current count if a link carries another.
fn virtual_stage_steps(sc: &Scenario) -> Vec<u32> {
    let current = sc.layout.virtual_stages;
    let mut v: Vec<u32> = (1..=8).collect();
    if !v.contains(&current) {
        v.push(current);
        v.sort_unstable();
    }
    v
}

/// The stage splits that fit this model on pp × v (planner-core lists them).
fn stage_split_options(sc: &Scenario) -> Vec<(String, String)> {
    let layers = sc.model_spec().map_or(0, |m| m.layers);
    planner_core::input::stage_split::split_choices(
        layers,
        sc.layout.pp,
        sc.layout.virtual_stages,
        &sc.layout.stage_split,
    )
}

/// The model's parameter count (and active parameters of an MoE model), or why it has none.
#[component]
fn ParamCount() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    view! {
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
    }
}

/// The cluster's GPUs and the layout's.
#[component]
fn WorldSize() -> impl IntoView {
    let s = expect_context::<Ctx>().scenario;
    let world = Signal::derive(move || s.with(|sc| sc.cluster.world_size()));
    let used = move || s.with(|sc| sc.layout.world_size());
    view! {
        <p class="derived" data-testid="world-size">
            {move || format!("{} GPUs; the layout uses dp × tp × pp × cp = {}", world.get(), used())}
        </p>
    }
}

/// The panel's "Model" fieldset.
static MODEL_CONTROLS: [Control; 4] = [
    Control::Choice(ChoiceSpec {
        label: "Model",
        field: "model",
        hint: "A preset from its published config.json, or your own shapes.",
        options: Options::Fixed(model_options),
        get: |sc| match &sc.model {
            ModelChoice::Preset(id) => id.clone(),
            ModelChoice::Custom(_) => "custom".into(),
        },
        put: put_model,
    }),
    Control::View(|| {
        let s = expect_context::<Ctx>().scenario;
        (move || {
            matches!(s.with(|sc| sc.model.clone()), ModelChoice::Custom(_))
                .then(|| view! { <CustomShapes /> })
        })
        .into_any()
    }),
    Control::View(|| view! { <ParamCount /> }.into_any()),
    Control::Choice(ChoiceSpec {
        label: "Precision recipe",
        field: "prec",
        hint: "Bytes per parameter for weights, gradients, master copy and optimizer moments.",
        options: Options::Fixed(|| {
            options_of(
                &PrecisionRecipe::ALL,
                |r| r.id().to_string(),
                |r| r.label().to_string(),
            )
        }),
        get: |sc| sc.precision.recipe.id().to_string(),
        put: |sc, id| {
            put_parsed(sc, PrecisionRecipe::from_id(id), |sc, r| {
                sc.precision = Precision::from_recipe(r);
            })
        },
    }),
];

/// The panel's "Batch" fieldset.
static BATCH_CONTROLS: [Control; 7] = [
    number! { "Sequence length", "seq", "tokens", training.seq_len, "Tokens per training sequence; activations grow with it." },
    number! { "Micro-batch", "mbs", "sequences", layout.micro_batch, "Sequences one data-parallel rank runs per forward/backward pass." },
    number! { "Global batch", "gbs", "sequences", training.global_batch, "Sequences per optimizer step over all data-parallel ranks." },
    Control::Choice(ChoiceSpec {
        label: "Activation recompute",
        field: "recompute",
        hint: "Recompute activations in the backward pass instead of keeping them (Korthikanti et al. 2022).",
        options: Options::Fixed(|| {
            options_of(&Recompute::ALL, |r| r.id().to_string(), |r| recompute_label(*r).to_string())
        }),
        get: |sc| sc.layout.recompute.id().to_string(),
        put: |sc, id| put_parsed(sc, Recompute::from_id(id), |sc, r| sc.layout.recompute = r),
    }),
    enum_choice! { "Fine-tuning", "ft", FineTuneMode, training.finetune.mode, "Full: every weight trains. LoRA: frozen base with low-rank adapters. QLoRA: the base in 4-bit NF4." },
    Control::View(|| {
        let s = expect_context::<Ctx>().scenario;
        let ft_on = move || s.with(|sc| sc.training.finetune.adapters().is_some());
        (move || ft_on().then(|| view! { <AdapterControls /> })).into_any()
    }),
    toggle! { "Pack examples", "pack", training.packing, "Short examples packed into full sequences (torchtune packed, TRL packing): the epoch counts tokens; off, one padded example per sequence." },
];

/// The panel's "Cluster" fieldset.
static CLUSTER_CONTROLS: [Control; 4] = [
    Control::Choice(ChoiceSpec {
        label: "GPU",
        field: "gpu",
        hint: "Memory, compute and link speeds from the vendor datasheet.",
        options: Options::Fixed(|| {
            options_of(&gpu_presets(), |g| g.id.clone(), |g| g.name.clone())
        }),
        get: |sc| sc.cluster.gpu.id.clone(),
        put: put_gpu,
    }),
    number! { "GPUs per node", "gpn", "GPUs", cluster.gpus_per_node, "GPUs inside one server: joined by NVLink/NVSwitch, or by PCIe alone on PCIe cards." },
    number! { "Nodes", "gpus", "nodes", cluster.nodes, "Servers joined by the network (InfiniBand/RoCE)." },
    Control::View(|| view! { <WorldSize /> }.into_any()),
];

/// The panel's "Parallel layout" fieldset.
static LAYOUT_CONTROLS: [Control; 19] = [
    degree_slider! { "Data parallel (DP)", "dp", dp, "Replicas that each take a slice of the batch; ZeRO shards model state over them." },
    degree_slider! { "Tensor parallel (TP)", "tp", tp, "Splits every weight matrix across GPUs; all-reduces each layer, so keep it inside a node." },
    degree_slider! { "Pipeline parallel (PP)", "pp", pp, "Splits the layers into stages; micro-batches flow through them, leaving a bubble." },
    degree_slider! { "Context parallel (CP)", "cp", cp, "Splits each sequence across GPUs; attention passes keys and values around a ring." },
    degree_slider! { "Expert parallel (EP)", "ep", ep, "Splits routed experts of MoE layers across the TP × CP × DP ranks (Megatron's MoE parallel folding); tokens travel by all-to-all." },
    degree_slider! { "Expert tensor parallel (expert TP)", "etp", expert_tp, "Splits each routed expert's FFN across this many GPUs; 1 keeps experts whole." },
    slider! { "Virtual stages", "vpp", layout.virtual_stages, virtual_stage_steps, "Layer chunks per pipeline rank for the interleaved schedule; shrinks the bubble." },
    Control::Choice(ChoiceSpec {
        label: "Stage split",
        field: "split",
        hint: "Decoder layers per pipeline stage: even, or lighter first and last stages (which also hold the embedding and the LM head).",
        options: Options::Of(stage_split_options),
        get: |sc| sc.layout.stage_split.to_link(),
        put: |sc, id| {
            put_parsed(sc, StageSplit::from_link(id).ok(), |sc, x| sc.layout.stage_split = x)
        },
    }),
    enum_choice! { "Pipeline schedule", "sched", Schedule, layout.schedule, "Order in which stages run forward and backward passes of micro-batches." },
    Control::Choice(ChoiceSpec {
        label: "ZeRO stage",
        field: "zero",
        hint: "What the DP group shards: 1 optimizer state, 2 also gradients, 3 also weights (FSDP).",
        options: Options::Fixed(|| {
            options_of(&ZeroStage::ALL, |z| z.number().to_string(), |z| z.label().to_string())
        }),
        get: |sc| sc.layout.zero.number().to_string(),
        put: |sc, id| {
            let zero = id.parse::<u8>().ok().and_then(ZeroStage::from_number);
            put_parsed(sc, zero, |sc, z| sc.layout.zero = z)
        },
    }),
    enum_choice! { "Offload", "offload", Offload, training.offload, "Optimizer state (and with ZeRO-3 the parameters) in CPU memory or on NVMe: GPU memory falls, host memory and PCIe/NVMe time appear (DeepSpeed ZeRO-Offload / ZeRO-Infinity, FSDP2 CPUOffloadPolicy)." },
    enum_choice! { "Framework", "framework", Framework, overheads.framework, "Whose memory semantics the loss and recompute transients follow." },
    Control::Choice(ChoiceSpec {
        label: "Kernels",
        field: "kernels",
        hint: "Which kernels run each layer's memory-bound work (norms, activations, residuals, RoPE): fused, PyTorch eager, or torch.compile.",
        options: Options::Of(|sc| kernel_options(sc.overheads.framework)),
        get: |sc| sc.overheads.kernels.id().to_string(),
        put: |sc, id| put_parsed(sc, Kernels::from_id(id), |sc, k| sc.overheads.kernels = k),
    }),
    overlap_choice! { "TP communication overlap", "ov_tp", tp_comm, "Tensor-parallel collectives pipelined with the GEMMs they feed (Megatron --tp-comm-overlap)." },
    overlap_choice! { "Gradient reduce overlap", "ov_grad", grad_reduce, "Data-parallel gradient reduce-scatter / all-reduce during backward (Megatron --overlap-grad-reduce)." },
    overlap_choice! { "Parameter gather overlap", "ov_param", param_gather, "The distributed optimizer's parameter all-gather during the next forward (Megatron --overlap-param-gather)." },
    overlap_choice! { "EP all-to-all overlap", "ov_ep", ep_comm, "MoE dispatch/combine of one micro-batch hidden behind another's compute (Megatron --overlap-moe-expert-parallel-comm, combined 1F1B; needs EP > 1, no full recompute, virtual stages with PP)." },
    // How an MoE model's layers route (planner-core `input::moe_routing`): dropless or one of
    // the listed capacity factors (a link may carry another; the list then shows none
    // chosen). Dense models ignore it.
    Control::Choice(ChoiceSpec {
        label: "MoE routing",
        field: "moe_cf",
        hint: "MoE models only. Dropless waits for the busiest expert-parallel rank; a capacity factor caps each expert's tokens (--moe-expert-capacity-factor), padding fills it (--moe-pad-expert-input-to-capacity).",
        options: Options::Fixed(|| {
            options_of(&CHOICES, |c| c.id.to_string(), |c| c.label.to_string())
        }),
        get: |sc| {
            sc.overheads
                .moe_routing
                .choice_id()
                .unwrap_or_default()
                .to_string()
        },
        put: |sc, id| {
            let routing = sc.overheads.moe_routing.with_choice(id);
            put_parsed(sc, routing, |sc, r| sc.overheads.moe_routing = r)
        },
    }),
    toggle! { "Sequence parallel", "sp", layout.sequence_parallel, "Splits the norm and dropout activations over the TP group too (Megatron SP)." },
];

/// The panel's fieldsets: legend and controls, in order.
static PANEL: [(&str, &[Control]); 4] = [
    ("Model", &MODEL_CONTROLS),
    ("Batch", &BATCH_CONTROLS),
    ("Cluster", &CLUSTER_CONTROLS),
    ("Parallel layout", &LAYOUT_CONTROLS),
];

/// The input panel.
#[component]
fn Controls() -> impl IntoView {
    view! {
        <Examples />
        {PANEL
            .iter()
            .map(|(legend, controls)| {
                view! {
                    <fieldset>
                        <legend>{*legend}</legend>
                        <ScenarioControls specs=*controls />
                    </fieldset>
                }
            })
            .collect_view()}
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
