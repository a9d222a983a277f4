//! Learn view: the article's teaching figures, redrawn for the current
//! settings from `planner_core::figures::teaching::teaching_figures`. Tabs keep it
//! compact; each figure sits beside a short explanation and its numbers.

use leptos::prelude::*;
use planner_core::figures::teaching::{CollectiveDemo, TeachingFigures};
use planner_core::input::collective::Collective;
use planner_core::input::layout::ZeroStage;
use planner_core::input::model::ModelSpec;
use planner_core::input::scenario::Scenario;
use planner_core::view::teach::{teaching, Purpose};
use planner_core::view::{Domain, GroupKind};

use crate::app::Ctx;
use crate::format;
use crate::views::chart_canvas::{ChartCanvas, DrawInput};
use crate::views::markup::SectionHead;
use crate::views::teach_draw::{self as draw, op_label, seconds};
use crate::views::visibility::section_inputs;

/// The figures for the current scenario, and which sketches the layout uses.
#[derive(Clone, Debug, PartialEq)]
struct TeachData {
    figs: TeachingFigures,
    used: [bool; 6],
}

fn compute(
    scenario: Memo<Scenario>,
    model: Memo<Result<ModelSpec, String>>,
) -> Result<TeachData, String> {
    scenario.with(|s| {
        model.with(|m| {
            let model = m.as_ref().map_err(Clone::clone)?;
            let figs = teaching(s, model);
            let l = &s.layout;
            let used = [
                l.dp > 1 && l.zero != ZeroStage::Zero3,
                l.dp > 1 && l.zero == ZeroStage::Zero3,
                l.tp > 1,
                l.cp > 1,
                l.pp > 1,
                l.ep > 1,
            ];
            Ok(TeachData { figs, used })
        })
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tab {
    Collectives,
    Strategies,
    Ddp,
    Fsdp,
    Mlp,
    Cp,
    Ep,
}

impl Tab {
    const ALL: [Tab; 7] = [
        Tab::Collectives,
        Tab::Strategies,
        Tab::Ddp,
        Tab::Fsdp,
        Tab::Mlp,
        Tab::Cp,
        Tab::Ep,
    ];
    fn id(self) -> &'static str {
        match self {
            Tab::Collectives => "collectives",
            Tab::Strategies => "strategies",
            Tab::Ddp => "ddp",
            Tab::Fsdp => "fsdp",
            Tab::Mlp => "mlp",
            Tab::Cp => "cp",
            Tab::Ep => "ep",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Tab::Collectives => "Collectives",
            Tab::Strategies => "Six strategies",
            Tab::Ddp => "DDP overlap",
            Tab::Fsdp => "FSDP layer",
            Tab::Mlp => "Megatron MLP",
            Tab::Cp => "Context parallel",
            Tab::Ep => "Expert routing",
        }
    }
}

fn purpose_label(p: Purpose) -> &'static str {
    match p {
        Purpose::GradAllReduce => "gradients (DDP)",
        Purpose::ExpertGradAllReduce => "expert gradients",
        Purpose::GradReduceScatter => "gradient shards (ZeRO)",
        Purpose::ParamAllGather => "new weights (ZeRO-1/2)",
        Purpose::ParamAllGatherForward => "weights before forward (ZeRO-3)",
        Purpose::ParamAllGatherBackward => "weights before backward (ZeRO-3)",
        Purpose::ParamAllGatherRecompute => {
            "weights before the recomputed forward (DeepSpeed ZeRO-3)"
        }
        Purpose::TpForward => "TP, forward",
        Purpose::TpBackward => "TP, backward",
        Purpose::TpRecompute => "TP, recomputed forward",
        Purpose::PpActivations => "pipeline activations",
        Purpose::CpKvRing => "CP K/V ring",
        Purpose::EpDispatchCombine => "EP dispatch/combine",
    }
}

fn group_label(g: GroupKind) -> &'static str {
    match g {
        GroupKind::Tp => "TP",
        GroupKind::Cp => "CP",
        GroupKind::Ep => "EP",
        GroupKind::Dp => "DP",
        GroupKind::Pp => "PP",
        GroupKind::DpCp => "DP×CP",
        GroupKind::ExpertDp => "expert DP",
        GroupKind::ExpertTp => "expert TP",
    }
}

fn domain_short(d: Domain) -> &'static str {
    match d {
        Domain::Local => "local",
        Domain::IntraNode => "in node",
        Domain::InterNode => "network",
        Domain::Hierarchical => "two-level",
    }
}

fn domain_label(d: Domain) -> &'static str {
    match d {
        Domain::Local => "none (one rank)",
        Domain::IntraNode => "inside a node",
        Domain::InterNode => "across nodes",
        Domain::Hierarchical => "two-level (node, then network)",
    }
}

fn factor_formula(op: Collective) -> &'static str {
    match op {
        Collective::AllReduce => "2(n−1)/n",
        Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => "(n−1)/n",
        _ => "1",
    }
}

fn collective_text(op: Collective) -> &'static str {
    match op {
        Collective::AllReduce => "Every rank starts with its own full tensor and ends with the sum of all of them. A ring does it as a reduce-scatter followed by an all-gather, so each rank sends about twice its tensor whatever the group size.",
        Collective::ReduceScatter => "Every rank starts with a full tensor and ends with one chunk of the sum: the chunk it owns. Half of an all-reduce; ZeRO uses it to hand each gradient shard to its owner.",
        Collective::AllGather => "Every rank starts with one chunk and ends with all of them. The other half of an all-reduce; FSDP uses it to rebuild a layer's weights just before computing with them.",
        Collective::AllToAll => "Every rank sends a different chunk to every other rank: rank r's chunk c goes to rank c. Nothing is summed; the grid is transposed. Expert parallelism uses it to send tokens to their experts and back.",
        _ => "",
    }
}

/// The Learn section.
#[component]
pub fn LearnView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    // Far below the fold: recompute only when scrolled near, so a slider move stays cheap.
    let (section, scenario, model) = section_inputs(ctx.scenario);
    let data = Memo::new(move |_| compute(scenario, model));
    // The tab is built once per error state: new figures update its charts in place
    // (reading `data` here would rebuild the whole tab, every chart, per input).
    let error = Memo::new(move |_| data.with(|d| d.as_ref().err().cloned()));
    let tab = RwSignal::new(Tab::Collectives);
    view! {
        <section node_ref=section class="view learn" aria-labelledby="learn-title" data-testid="learn-view">
            <SectionHead id="learn-title" title="Learn: how each strategy moves data" explain="The article's figures, drawn for the settings on the left: every size and time below comes from the same planner-core models as the views above, and changes as you move a control." />
            <div class="learn-tabs" role="tablist" aria-label="Teaching figures">
                {Tab::ALL
                    .into_iter()
                    .map(|t| {
                        view! {
                            <button
                                role="tab"
                                class:active=move || tab.get() == t
                                aria-selected=move || (tab.get() == t).to_string()
                                data-testid=format!("learn-tab-{}", t.id())
                                on:click=move |_| tab.set(t)
                            >
                                {t.label()}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
            {move || match error.get() {
                Some(e) => view! { <p class="issue error">{e}</p> }.into_any(),
                None => {
                    match tab.get() {
                        Tab::Collectives => view! { <CollectivesTab data=data /> }.into_any(),
                        Tab::Strategies => view! { <StrategiesTab data=data /> }.into_any(),
                        Tab::Ddp => view! { <DdpTab data=data /> }.into_any(),
                        Tab::Fsdp => view! { <FsdpTab data=data /> }.into_any(),
                        Tab::Mlp => view! { <MlpTab data=data /> }.into_any(),
                        Tab::Cp => view! { <CpTab data=data /> }.into_any(),
                        Tab::Ep => view! { <EpTab data=data /> }.into_any(),
                    }
                }
            }}
        </section>
    }
}

type Data = Memo<Result<TeachData, String>>;

fn with_figs<T>(data: Data, f: impl FnOnce(&TeachingFigures) -> T) -> Option<T> {
    data.with(|d| d.as_ref().ok().map(|d| f(&d.figs)))
}

fn warn_err(r: Result<Vec<crate::charts::HitBox>, String>) -> Vec<crate::charts::HitBox> {
    r.unwrap_or_else(|e| {
        leptos::logging::warn!("{e}");
        Vec::new()
    })
}

#[component]
fn CollectivesTab(data: Data) -> impl IntoView {
    view! {
        <p class="explain">
            "The four collectives on four ranks. Each rank's tensor is cut into four chunks; a letter is a rank's own data (A = rank 0), Σ a sum over ranks. Below each, what this layout uses it for: the message (one call's buffer, as nccl-tests counts it) and the bytes each rank sends per call and per step: message × the bus-bandwidth factor of the group's n ranks."
        </p>
        <div class="learn-grid">
            {(0..4usize).map(|i| view! { <CollectiveCard data=data index=i /> }).collect_view()}
        </div>
    }
}

#[component]
fn CollectiveCard(data: Data, index: usize) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let demo = Memo::new(move |_| with_figs(data, |f| f.collectives.get(index).cloned()).flatten());
    let op = move || demo.with(|d| d.as_ref().map(|d| d.op));
    let id = move || op().map_or("none", Collective::id);
    let draw_it = Callback::new(move |(canvas, w): DrawInput| {
        let theme = ctx.theme.get();
        demo.with(|d| {
            d.as_ref()
                .map(|d| warn_err(draw::draw_collective(&canvas, w, d, &theme)))
                .unwrap_or_default()
        })
    });
    let testid: &'static str = [
        "chart-teach-all_reduce",
        "chart-teach-reduce_scatter",
        "chart-teach-all_gather",
        "chart-teach-alltoall",
    ][index % 4];
    view! {
        <figure class="learn-card" data-testid=move || format!("coll-{}", id())>
            <figcaption>
                <strong>{move || op().map(op_label).unwrap_or_default()}</strong>
                " · each rank sends "
                <span data-testid=move || format!("coll-{}-factor", id())>
                    {move || demo.with(|d| d.as_ref().map(|d| format!("{} = {}", factor_formula(d.op), format::sig3(d.busbw_factor))).unwrap_or_default())}
                </span>
                " × its tensor"
            </figcaption>
            <ChartCanvas
                label=Signal::derive(move || format!("{} on four ranks, before and after", op().map(op_label).unwrap_or_default()))
                testid=testid
                draw=draw_it
            />
            <p class="learn-note">{move || op().map(collective_text).unwrap_or_default()}</p>
            {move || demo.with(|d| d.as_ref().map(uses_table))}
        </figure>
    }
}

fn uses_table(d: &CollectiveDemo) -> AnyView {
    let id = d.op.id();
    if d.uses.is_empty() {
        return view! {
            <p class="learn-note" data-testid=format!("coll-{id}-none")>
                {format!("This layout makes no {} calls.", op_label(d.op))}
            </p>
        }
        .into_any();
    }
    let rows = d
        .uses
        .iter()
        .enumerate()
        .map(|(i, u)| {
            view! {
                <tr
                    data-testid=format!("coll-{id}-use-{i}")
                    data-ranks=u.ranks.to_string()
                    data-message-bytes=u.message_bytes.to_string()
                    data-sent-bytes=u.bytes_sent_per_rank_per_call.to_string()
                >
                    <td>{purpose_label(u.purpose)}</td>
                    <td class="nowrap" title=domain_label(u.domain)>{format!("{} {} · {}", group_label(u.group), u.ranks, domain_short(u.domain))}</td>
                    <td class="num">{format::bytes(u.message_bytes)}</td>
                    <td class="num" data-testid=format!("coll-{id}-sent-{i}")>{format::bytes(u.bytes_sent_per_rank_per_call)}</td>
                    <td class="num">{format::sig3(u.calls_per_step)}</td>
                    <td class="num">{format::bytes(u.bytes_sent_per_rank_per_step)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="learn-table">
            <thead>
                <tr>
                    <th>"used for"</th>
                    <th>"group"</th>
                    <th class="num">"message"</th>
                    <th class="num" title="bytes each rank sends per call">"sent / call"</th>
                    <th class="num">"calls / step"</th>
                    <th class="num" title="bytes each rank sends per step">"sent / step"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

#[component]
fn StrategiesTab(data: Data) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let draw_it = Callback::new(move |(canvas, w): DrawInput| {
        let theme = ctx.theme.get();
        data.with(|d| {
            d.as_ref()
                .map(|d| {
                    warn_err(draw::draw_sketches(
                        &canvas,
                        w,
                        &d.figs.sketches,
                        &d.used,
                        &theme,
                    ))
                })
                .unwrap_or_default()
        })
    });
    let used = move || {
        data.with(|d| {
            d.as_ref()
                .map(|d| {
                    let names: Vec<String> = d
                        .figs
                        .sketches
                        .iter()
                        .zip(d.used)
                        .filter(|(_, u)| *u)
                        .map(|(s, _)| s.label.clone())
                        .collect();
                    if names.is_empty() {
                        "This layout uses none of them: one GPU does everything.".to_string()
                    } else {
                        format!("This layout combines: {} (outlined).", names.join(", "))
                    }
                })
                .unwrap_or_default()
        })
    };
    view! {
        <div class="learn-row">
            <div class="learn-text">
                <p>"Six ways to spread one training step over four GPUs. Each box is a GPU, its four bars the model's four layers; a filled bar is held in full, a partly filled one only a share."</p>
                <ul>
                    <li><b>"DDP"</b>": every GPU holds the whole model and takes its own quarter of the batch; gradients are averaged by an all-reduce."</li>
                    <li><b>"FSDP / ZeRO-3"</b>": each GPU stores a quarter of every layer and gathers the rest just before computing; an all-gather per layer, a reduce-scatter for gradients."</li>
                    <li><b>"Tensor parallel"</b>": every matrix is cut into slices; all four work on the same batch and all-reduce partial results inside each layer."</li>
                    <li><b>"Context parallel"</b>": each GPU takes a quarter of every sequence; attention needs everyone's keys and values, passed around a ring."</li>
                    <li><b>"Pipeline parallel"</b>": each GPU holds one layer group; activations go to the next stage point-to-point."</li>
                    <li><b>"Expert parallel"</b>": each GPU holds different experts; tokens travel to their expert and back by all-to-all."</li>
                </ul>
                <p data-testid="sketch-used">{used}</p>
            </div>
            <figure class="learn-fig">
                <ChartCanvas label="Six parallelism strategies on four GPUs" testid="chart-teach-sketches" draw=draw_it />
            </figure>
        </div>
    }
}

#[component]
fn DdpTab(data: Data) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let draw_it = Callback::new(move |(canvas, w): DrawInput| {
        let theme = ctx.theme.get();
        data.with(|d| {
            d.as_ref()
                .map(|d| warn_err(draw::draw_ddp(&canvas, w, &d.figs.ddp, &theme)))
                .unwrap_or_default()
        })
    });
    let f = move |g: fn(&planner_core::figures::teaching::DdpOverlapDemo) -> String| {
        move || with_figs(data, |f| g(&f.ddp)).unwrap_or_default()
    };
    view! {
        <div class="learn-row">
            <div class="learn-text">
                <p>"Backward runs from the last layer to the first, so the last layers' gradients are ready first. DDP packs them into buckets and starts each bucket's all-reduce as soon as it is full, while backward carries on. On a fast link the all-reduces keep up and finish just after backward; on a slow one they queue, and the GPU waits for the last one before the optimizer step."</p>
                <dl class="figures-inline">
                    <div><dt>"Gradients per rank"</dt><dd data-testid="ddp-grad-bytes">{f(|d| format::bytes(d.grad_bytes))}</dd>
                        <dd class="hint">{f(|d| format!("buckets of {}, {} ranks{}", format::bytes(d.bucket_bytes), d.ranks, if d.ranks_assumed { " (the article's 4: no DP here)" } else { "" }))}</dd></div>
                    <div><dt>"Wait, fast link"</dt><dd data-testid="ddp-wait-fast">{f(|d| seconds(d.fast.exposed_wait_s))}</dd>
                        <dd class="hint">{f(|d| format!("all-reduce alone {}", seconds(d.fast.all_reduce_total_s)))}</dd></div>
                    <div><dt>"Wait, slow link"</dt><dd data-testid="ddp-wait-slow">{f(|d| seconds(d.slow.exposed_wait_s))}</dd>
                        <dd class="hint">{f(|d| format!("all-reduce alone {}", seconds(d.slow.all_reduce_total_s)))}</dd></div>
                    <div><dt>"Wait, this layout"</dt><dd data-testid="ddp-wait-current">{f(|d| seconds(d.current.exposed_wait_s))}</dd>
                        <dd class="hint">{f(|d| format!("its gradient group runs {}", domain_label(d.current_domain)))}</dd></div>
                </dl>
                <p class="hint">{f(|d| d.assumption.clone())}</p>
            </div>
            <figure class="learn-fig">
                <ChartCanvas label="DDP backward with bucketed all-reduce on a fast and a slow link" testid="chart-teach-ddp" draw=draw_it />
            </figure>
        </div>
    }
}

#[component]
fn FsdpTab(data: Data) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let draw_it = Callback::new(move |(canvas, w): DrawInput| {
        let theme = ctx.theme.get();
        data.with(|d| {
            d.as_ref()
                .map(|d| warn_err(draw::draw_fsdp(&canvas, w, &d.figs.fsdp, &theme)))
                .unwrap_or_default()
        })
    });
    let f = move |g: fn(&planner_core::figures::teaching::FsdpLanes) -> String| {
        move || with_figs(data, |f| g(&f.fsdp)).unwrap_or_default()
    };
    view! {
        <div class="learn-row">
            <div class="learn-text">
                <p>"One layer through an FSDP (ZeRO-3) step. Between uses each rank keeps only its shard of the layer. Before forward it all-gathers the full weights, computes, and frees them; before backward it gathers them again; after backward it reduce-scatters the gradients so each rank keeps the sum of its own shard. The full layer lives in memory only while it is used."</p>
                <dl class="figures-inline">
                    <div><dt>"Layer parameters"</dt><dd data-testid="fsdp-params">{f(|d| format!("{}M", format::sig3(d.layer_params / 1e6)))}</dd>
                        <dd class="hint">{f(|d| format!("sharded over {} ranks{}, {}", d.ranks, if d.ranks_assumed { " (the article's 4)" } else { "" }, domain_label(d.domain)))}</dd></div>
                    <div><dt>"All-gather (forward)"</dt><dd data-testid="fsdp-ag">{f(|d| d.bars.first().map(|b| format!("{} in {}", format::bytes(b.message_bytes), seconds(b.duration_s()))).unwrap_or_default())}</dd></div>
                    <div><dt>"Reduce-scatter"</dt><dd data-testid="fsdp-rs">{f(|d| d.bars.last().map(|b| format!("{} in {}", format::bytes(b.message_bytes), seconds(b.duration_s()))).unwrap_or_default())}</dd></div>
                </dl>
                <p class="hint">{f(|d| d.assumption.clone())}</p>
            </div>
            <figure class="learn-fig">
                <ChartCanvas label="FSDP lanes of one layer: all-gather, compute, reduce-scatter, and memory held" testid="chart-teach-fsdp" draw=draw_it />
            </figure>
        </div>
    }
}

#[component]
fn MlpTab(data: Data) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let draw_it = Callback::new(move |(canvas, w): DrawInput| {
        let theme = ctx.theme.get();
        data.with(|d| match d.as_ref().map(|d| &d.figs.mlp) {
            Ok(Ok(m)) => warn_err(draw::draw_mlp(&canvas, w, m, &theme)),
            _ => Vec::new(),
        })
    });
    let mlp = move || with_figs(data, |f| f.mlp.clone());
    let f = move |g: fn(&planner_core::figures::teaching::MlpSplit) -> String| {
        move || match mlp() {
            Some(Ok(m)) => g(&m),
            _ => String::new(),
        }
    };
    view! {
        <div class="learn-row">
            <div class="learn-text">
                <p>"Megatron's split of the feed-forward block. The first matrix A is cut by columns: every rank multiplies the same input X by its slice and applies the activation on its own, with no communication. The second matrix B is cut by rows, so each rank's product is a partial sum of the output; one all-reduce adds them up. Forward needs one all-reduce, backward one more for the input gradient. With sequence parallelism the all-reduce becomes a reduce-scatter plus an all-gather of the same total size."</p>
                {move || match mlp() {
                    Some(Err(e)) => Some(view! { <p class="issue error">{format!("{}: {}", e.field, e.message)}</p> }),
                    _ => None,
                }}
                <dl class="figures-inline">
                    <div><dt>"TP ranks"</dt><dd data-testid="mlp-tp">{f(|m| m.tp.to_string())}</dd>
                        <dd class="hint">{f(|m| format!("{} tokens per micro-batch", format::thousands(m.tokens)))}</dd></div>
                    <div><dt>"All-reduce message"</dt><dd data-testid="mlp-ar">{f(|m| m.forward.first().map(|c| format::bytes(c.message_bytes)).unwrap_or_default())}</dd>
                        <dd class="hint">{f(|m| m.forward.first().map(|c| format!("each rank sends {}", format::bytes(c.bytes_sent_per_rank))).unwrap_or_default())}</dd></div>
                    <div><dt>"A slice per rank"</dt><dd data-testid="mlp-a">{f(|m| format::bytes(m.a.bytes))}</dd>
                        <dd class="hint">{f(|m| format!("B slice {}", format::bytes(m.b.bytes)))}</dd></div>
                </dl>
            </div>
            <figure class="learn-fig">
                <ChartCanvas label="Megatron MLP split: column-parallel A, row-parallel B, one all-reduce" testid="chart-teach-mlp" draw=draw_it />
            </figure>
        </div>
    }
}

#[component]
fn CpTab(data: Data) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let draw_it = Callback::new(move |(canvas, w): DrawInput| {
        let theme = ctx.theme.get();
        data.with(|d| match d.as_ref().map(|d| &d.figs.cp) {
            Ok(Ok(c)) => warn_err(draw::draw_cp(&canvas, w, c, &theme)),
            _ => Vec::new(),
        })
    });
    let cp = move || with_figs(data, |f| f.cp.clone());
    let f = move |g: fn(&planner_core::figures::teaching::CpAttention) -> String| {
        move || match cp() {
            Some(Ok(c)) => g(&c),
            _ => String::new(),
        }
    };
    view! {
        <div class="learn-row">
            <div class="learn-text">
                <p>"Context parallelism cuts each sequence into chunks, one query block per rank. With causal attention a query only looks at earlier keys, so the grid of blocks (rows: query chunks, columns: key chunks) is a triangle: blocks above the diagonal are skipped. Cut contiguously, the rank with the last chunk does most of the work; Megatron's zig-zag gives each rank one early and one late chunk, which evens it out. Keys and values travel around a ring: at each step every rank passes the block it holds to its neighbour (numbers in the blocks: the ring step at which those keys arrive)."</p>
                {move || match cp() {
                    Some(Err(e)) => Some(view! { <p class="issue error">{format!("{}: {}", e.field, e.message)}</p> }),
                    _ => None,
                }}
                <dl class="figures-inline">
                    <div><dt>"CP ranks"</dt><dd data-testid="cp-ranks">{f(|c| c.cp.to_string())}</dd>
                        <dd class="hint">{f(|c| format!("{} chunks of {} tokens", c.chunks, format::sig3(c.tokens_per_chunk)))}</dd></div>
                    <div><dt>"K/V per ring step"</dt><dd data-testid="cp-kv">{f(|c| format::bytes(c.kv_bytes_per_step))}</dd>
                        <dd class="hint">{f(|c| format!("{} steps per layer", c.ring_steps))}</dd></div>
                    <div><dt>"Imbalance"</dt><dd data-testid="cp-imbalance">{f(|c| format!("{:.2} → {:.2}", c.plain.imbalance, c.zigzag.imbalance))}</dd>
                        <dd class="hint">"busiest rank ÷ mean: contiguous → zig-zag"</dd></div>
                </dl>
            </div>
            <figure class="learn-fig">
                <ChartCanvas label="Causal attention grid under contiguous and zig-zag chunks, and the K/V ring" testid="chart-teach-cp" draw=draw_it />
            </figure>
        </div>
    }
}

#[component]
fn EpTab(data: Data) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let draw_it = Callback::new(move |(canvas, w): DrawInput| {
        let theme = ctx.theme.get();
        data.with(|d| match d.as_ref().map(|d| &d.figs.ep) {
            Ok(Ok(e)) => warn_err(draw::draw_ep(&canvas, w, e, &theme)),
            _ => Vec::new(),
        })
    });
    let ep = move || with_figs(data, |f| f.ep.clone());
    let f = move |g: fn(&planner_core::figures::teaching::EpRouting) -> String| {
        move || match ep() {
            Some(Ok(e)) => g(&e),
            _ => String::new(),
        }
    };
    view! {
        <div class="learn-row">
            <div class="learn-text">
                <p>"In a mixture-of-experts layer a router sends each token to its top-k experts, which live on different ranks: an all-to-all carries the tokens there and another brings the results back. Each expert has a fixed number of slots, its capacity = capacity factor × tokens × k ÷ experts. An unlucky expert that gets more tokens than that drops the overflow (those tokens skip the expert), and a quiet one pads its empty slots."</p>
                {move || match ep() {
                    Some(Err(e)) => Some(view! { <p class="issue error">{format!("{}: {}", e.field, e.message)}</p> }),
                    Some(Ok(e)) if e.illustrative => Some(view! { <p class="hint">{"This model has no experts: drawn with the article's 4 experts, top-1.".to_string()}</p> }),
                    _ => None,
                }}
                <dl class="figures-inline">
                    <div><dt>"Experts / top-k"</dt><dd data-testid="ep-experts">{f(|e| format!("{} / {}", e.experts, e.top_k))}</dd>
                        <dd class="hint">{f(|e| format!("over {} EP ranks, {} tokens", e.ep, e.tokens))}</dd></div>
                    <div><dt>"Capacity"</dt><dd data-testid="ep-capacity">{f(|e| e.capacity.to_string())}</dd>
                        <dd class="hint">{f(|e| format!("factor {}", e.capacity_factor))}</dd></div>
                    <div><dt>"Dropped / padded"</dt><dd data-testid="ep-dropped">{f(|e| format!("{} / {}", e.dropped, e.padded))}</dd>
                        <dd class="hint">"assignments over capacity / empty slots"</dd></div>
                    <div><dt>"Dispatch per rank"</dt><dd data-testid="ep-bytes">{f(|e| e.ranks.first().map(|r| format::bytes(r.dispatch_bytes_sent)).unwrap_or_default())}</dd>
                        <dd class="hint">{f(|e| format!("rank 0; {} per token", format::bytes(e.bytes_per_token)))}</dd></div>
                </dl>
            </div>
            <figure class="learn-fig">
                <ChartCanvas label="Tokens routed to experts with capacity; overflow dropped" testid="chart-teach-ep" draw=draw_it />
            </figure>
        </div>
    }
}
