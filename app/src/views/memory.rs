//! Memory view: the article's model-state chart (DDP and ZeRO-1/2/3, each
//! split into replicated and sharded parts) with activations and the other
//! terms on top, against the GPU's memory; and the same per pipeline stage.

use leptos::prelude::*;
use planner_core::base::explain::Term;
use planner_core::figures::memory_summary::{
    self, is_sharded, other_terms, peak_terms, TermCategory,
};
use planner_core::input::layout::ZeroStage;
use planner_core::view::memory::{
    memory as memory_data, HostMemory, MemoryView as MemoryData, TrainingMemory, ZeroRow,
};

use crate::app::Ctx;
use crate::views::error_band::BandNote;
use crate::views::markup::{column_heads, SectionHead};
use crate::views::visibility::section_inputs;
use planner_core::edges::error_band::BandKind;

use crate::charts::{self, draw_stacked_bars, Bar, HitBox, Limit, Segment, Theme, Tip};
use crate::format;
use crate::views::chart_canvas::{CaptionToggle, ChartCanvas, DrawInput};
use web_sys::HtmlCanvasElement;

/// Same category, same colour, in every chart (the category is planner-core's).
pub fn term_color(key: &str) -> usize {
    TermCategory::of_key(key).index()
}

/// Tooltip of a term: its label, value in its unit and the formula with numbers.
pub fn term_tip(t: &Term) -> Tip {
    Tip {
        title: t.label.clone(),
        value: t.unit.format(t.value),
        lines: vec![t.formula.clone(), t.worked.clone(), t.assumption.clone()],
    }
}

fn segment(t: &Term, light: bool) -> Segment {
    Segment {
        bytes: t.value,
        color: term_color(&t.key),
        light,
        tip: term_tip(t),
    }
}

fn limits(m: &TrainingMemory) -> Vec<Limit> {
    let mut out = vec![Limit {
        bytes: m.capacity_bytes,
        label: format!(
            "GPU memory {} (device reports {})",
            format::bytes(m.capacity_label_bytes),
            format::bytes(m.capacity_bytes)
        ),
    }];
    if let Some(fraction) = memory_summary::usable_fraction(m) {
        out.push(Limit {
            bytes: m.usable_bytes,
            label: format!(
                "usable {} ({:.0}%)",
                format::bytes(m.usable_bytes),
                100.0 * fraction
            ),
        });
    }
    out
}

/// Offload's host side: the offloaded bytes per GPU and the node's totals against its RAM
/// and NVMe, as planner-core's terms give them.
fn host_memory_table(h: HostMemory) -> impl IntoView {
    let verdict = if !h.host_known {
        "host unknown: set the node's RAM".to_string()
    } else if h.fits_ram && h.fits_nvme {
        format!(
            "fits: {} of {} RAM per node",
            format::bytes(h.ram_bytes_per_node),
            format::bytes(h.node_ram_bytes)
        )
    } else {
        format!(
            "does not fit: {} of {} RAM, {} of {} NVMe per node",
            format::bytes(h.ram_bytes_per_node),
            format::bytes(h.node_ram_bytes),
            format::bytes(h.nvme_bytes_per_node),
            format::bytes(h.node_nvme_bytes)
        )
    };
    let fits = h.host_known && h.fits_ram && h.fits_nvme;
    view! {
        <figure data-testid="host-memory">
            <figcaption>
                {format!("Host memory under offload ({})", h.offload.label())}
            </figcaption>
            <table class="figures">
                <thead>
                    {column_heads(&["Term", "Bytes", "Formula"])}
                </thead>
                <tbody>
                    {h
                        .terms
                        .into_iter()
                        .map(|t| {
                            let tip = format!("{} — {}", t.worked, t.assumption);
                            view! {
                                <tr data-testid=format!("host-term-{}", t.key) data-bytes=t.value.to_string()>
                                    <th scope="row" title=tip>{t.label}</th>
                                    <td>{t.unit.format(t.value)}</td>
                                    <td>{t.formula}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
            <p class="explain" class:issue=!fits data-testid="host-verdict">{verdict}</p>
        </figure>
    }
}

/// The model-state chart: a bar per ZeRO stage, with the other terms on top when `with_other`.
fn draw_zero_chart(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    d: &MemoryData,
    with_other: bool,
    theme: &Theme,
) -> Vec<HitBox> {
    let bars: Vec<Bar> = d
        .bars
        .iter()
        .enumerate()
        .map(|(i, bar)| {
            let mut segments: Vec<Segment> = bar
                .replicated
                .iter()
                .map(|t| segment(t, false))
                .chain(bar.sharded.iter().map(|t| segment(t, true)))
                .collect();
            let other = d.per_zero.get(i).filter(|_| with_other);
            if let Some(m) = other {
                segments.extend(other_terms(m).map(|t| segment(t, false)));
            }
            Bar {
                label: bar.zero.label().to_string(),
                caption: format::bytes(memory_summary::stacked_bar_bytes(bar, other)),
                segments,
                selected: bar.zero == d.zero,
            }
        })
        .collect();
    let lim = d.per_zero.first().map(limits).unwrap_or_default();
    draw_stacked_bars(canvas, css_width, 300.0, &bars, &lim, "GB per GPU", theme).unwrap_or_else(
        |e| {
            leptos::logging::warn!("{e}");
            Vec::new()
        },
    )
}

/// The per-stage chart: a bar per pipeline stage of the layout as set.
fn draw_stages_chart(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    d: &MemoryData,
    theme: &Theme,
) -> Vec<HitBox> {
    let bars: Vec<Bar> = d
        .current()
        .stages
        .iter()
        .enumerate()
        .map(|(i, st)| Bar {
            label: st.position.label().trim_end_matches(" stage").to_string(),
            caption: format::bytes(st.total_bytes),
            segments: st.terms.iter().map(|t| segment(t, is_sharded(t))).collect(),
            selected: i == d.current().peak_stage && d.current().stages.len() > 1,
        })
        .collect();
    draw_stacked_bars(
        canvas,
        css_width,
        300.0,
        &bars,
        &limits(d.current()),
        "GB per GPU",
        theme,
    )
    .unwrap_or_else(|e| {
        leptos::logging::warn!("{e}");
        Vec::new()
    })
}

/// The peaks paragraph's figures.
#[derive(Clone, Debug, PartialEq)]
struct Peaks {
    allocated_bytes: f64,
    reserved_bytes: f64,
    device_bytes: f64,
    framework: &'static str,
}

impl Peaks {
    fn of(m: &TrainingMemory) -> Self {
        Peaks {
            allocated_bytes: m.peak_allocated_bytes,
            reserved_bytes: m.peak_reserved_bytes,
            device_bytes: m.peak_bytes,
            framework: m.framework.label(),
        }
    }
}

/// The scenario's memory figures, or why there are none.
type Data = Memo<Result<MemoryData, String>>;

/// The memory section.
#[component]
pub fn MemoryView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let (section, scenario, model) = section_inputs(ctx.scenario);
    let data = Memo::new(move |_| {
        crate::perf::timed("memory", || {
            let s = scenario.get();
            let model = model.get()?;
            Ok::<_, String>(memory_data(&s, &model))
        })
    });

    view! {
        <section node_ref=section class="view" aria-labelledby="memory-title" data-testid="memory-view">
            <SectionHead id="memory-title" title="Memory per GPU" explain="Data parallelism copies the whole training state to every GPU. ZeRO stage 1 splits the optimizer state (fp32 master weights and Adam moments) across the data-parallel group, stage 2 also splits the gradients, and stage 3 (FSDP) also splits the weights, gathering each layer just before it runs. Solid parts are held in full by every GPU; light parts with an outline are this GPU's shard. Activations do not shrink with ZeRO: each GPU still runs its own micro-batches. Hover a segment for its formula with your numbers." />
            {move || {
                data.with(|d| match d {
                    Err(e) => Some(view! { <p class="issue error">{e.clone()}</p> }),
                    Ok(_) => None,
                })
            }}
            <MemoryCharts data=data />
            <PeaksLine data=data />
            {move || {
                data.with(|d| {
                    d.as_ref().ok().and_then(|d| d.current().host.clone()).map(host_memory_table)
                })
            }}
            <Legend data=data />
            <ZeroTable data=data />
            <PeakTerms data=data />
        </section>
    }
}

/// The two charts: model state by ZeRO stage (with the other terms on top when asked) and
/// memory per pipeline stage.
#[component]
fn MemoryCharts(data: Data) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let include_other = RwSignal::new(true);
    let draw_zero = Callback::new(move |(canvas, css_width): DrawInput| {
        let theme = ctx.theme.get();
        let with_other = include_other.get();
        data.with(|d| match d {
            Ok(d) => draw_zero_chart(&canvas, css_width, d, with_other, &theme),
            Err(_) => Vec::new(),
        })
    });

    let draw_stages = Callback::new(move |(canvas, css_width): DrawInput| {
        let theme = ctx.theme.get();
        data.with(|d| match d {
            Ok(d) => draw_stages_chart(&canvas, css_width, d, &theme),
            Err(_) => Vec::new(),
        })
    });
    view! {
        <div class="chart-pair">
            <figure>
                <figcaption>
                    "Model state by ZeRO stage "
                    <CaptionToggle
                        title="Stack activations, buffers and overheads on top of model state"
                        testid="include-other"
                        text=" + activations and overheads"
                        on=include_other
                    />
                </figcaption>
                <ChartCanvas
                    label=Signal::derive(move || {
                        data.with(|d| match d {
                            Ok(d) => {
                                d.bars
                                    .iter()
                                    .map(|b| format!("{} {}", b.zero.label(), format::bytes(b.total_bytes)))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            }
                            Err(e) => e.clone(),
                        })
                    })
                    testid="chart-zero"
                    draw=draw_zero
                />
            </figure>
            <figure>
                <figcaption>
                    {move || {
                        data.with(|d| match d {
                            Ok(d) => {
                                format!(
                                    "Per pipeline stage, this layout (layers: {})",
                                    d.current()
                                        .stages
                                        .iter()
                                        .map(|s| s.layers.to_string())
                                        .collect::<Vec<_>>()
                                        .join(" / "),
                                )
                            }
                            Err(_) => "Per pipeline stage".to_string(),
                        })
                    }}
                </figcaption>
                <ChartCanvas
                    label=Signal::derive(move || {
                        data.with(|d| match d {
                            Ok(d) => {
                                d.current()
                                    .stages
                                    .iter()
                                    .map(|s| format!("{} {}", s.position.label(), format::bytes(s.total_bytes)))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            }
                            Err(e) => e.clone(),
                        })
                    })
                    testid="chart-stages"
                    draw=draw_stages
                />
            </figure>
        </div>
    }
}

/// The peak as PyTorch and the device report it. It keeps its elements across moves; only
/// the numbers that changed are written (a rebuilt row re-set every attribute of every cell).
#[component]
fn PeaksLine(data: Data) -> impl IntoView {
    let peaks = Memo::new(move |_| data.with(|d| d.as_ref().ok().map(|d| Peaks::of(d.current()))));
    let peak = move |f: fn(&Peaks) -> String| peaks.with(|p| p.as_ref().map(f).unwrap_or_default());
    view! {
        <p class="explain" data-testid="memory-peaks" hidden=move || peaks.with(Option::is_none)>
            "Peak as PyTorch reports it: allocated "
            <strong data-testid="peak-allocated" data-bytes=move || peak(|p| p.allocated_bytes.to_string())>
                {move || peak(|p| format::bytes(p.allocated_bytes))}
            </strong>
            " (max_memory_allocated), reserved "
            <strong data-testid="peak-reserved" data-bytes=move || peak(|p| p.reserved_bytes.to_string())>
                {move || peak(|p| format::bytes(p.reserved_bytes))}
            </strong>
            " "
            <BandNote kind=BandKind::PeakMemory testid="memory-band"/>
            " (max_memory_reserved, what torchtitan logs); the device holds "
            <strong data-testid="peak-device" data-bytes=move || peak(|p| p.device_bytes.to_string())>
                {move || peak(|p| format::bytes(p.device_bytes))}
            </strong>
            " with the CUDA context and NCCL buffers (nvidia-smi). Loss and recompute transients follow "
            <span data-testid="memory-framework">{move || peak(|p| p.framework.to_string())}</span>
            "."
        </p>
    }
}

/// The charts' colours and what each means.
#[component]
fn Legend(data: Data) -> impl IntoView {
    // A memo: the swatches are rebuilt only when the legend itself changes, not on every move.
    let legend = Memo::new(move |_| {
        data.with(|d| {
            let Ok(d) = d else { return Vec::new() };
            memory_summary::legend(d.current())
        })
    });
    view! {
        <ul class="legend">
            {move || {
                legend
                    .get()
                    .into_iter()
                    .map(|(c, name)| {
                        view! {
                            <li>
                                <span class="swatch" style=format!("background:{}", charts::css_color(c.index()))></span>
                                {name}
                            </li>
                        }
                    })
                    .collect_view()
            }}
            <li>
                <span class="swatch sharded"></span>
                "light with outline = sharded"
            </li>
        </ul>
    }
}

/// Model state, the other terms and the peak at each ZeRO stage, the scenario's marked. The
/// table keeps its elements across moves, as the peaks line does.
#[component]
fn ZeroTable(data: Data) -> impl IntoView {
    let zero_rows = Memo::new(move |_| {
        data.with(|d| d.as_ref().map(|d| d.zero_rows.clone()).unwrap_or_default())
    });
    view! {
        <table class="figures" data-testid="zero-table">
            <thead>
                <tr>
                    <th scope="col">"Stage"</th>
                    <th scope="col" title="Weights, gradients and optimizer state per GPU">"Model state"</th>
                    <th scope="col" title="Activations, gathered units, buffers, context, fragmentation at the peak stage">"+ other terms"</th>
                    <th scope="col">"Peak per GPU"</th>
                    <th scope="col">"Fits?"</th>
                </tr>
            </thead>
            <tbody>
                {ZeroStage::ALL
                    .iter()
                    .enumerate()
                    .map(|(i, zero)| {
                        let n = zero.number();
                        let cell = move |f: fn(&ZeroRow) -> String| {
                            zero_rows.with(|r| r.get(i).map(f).unwrap_or_default())
                        };
                        let fits = move || zero_rows.with(|r| r.get(i).is_some_and(|r| r.fits));
                        view! {
                            <tr
                                class:selected=move || zero_rows.with(|r| r.get(i).is_some_and(|r| r.selected))
                                hidden=move || zero_rows.with(|r| r.get(i).is_none())
                            >
                                <th scope="row">{zero.label()}</th>
                                <td
                                    data-testid=format!("state-total-{n}")
                                    data-bytes=move || cell(|r| r.state_bytes.to_string())
                                    tabindex="0"
                                    title=move || cell(|r| r.state_worked.clone())
                                >
                                    {move || cell(|r| format::bytes(r.state_bytes))}
                                </td>
                                <td>{move || cell(|r| format::bytes(r.other_bytes))}</td>
                                <td data-testid=format!("peak-total-{n}") data-bytes=move || cell(|r| r.peak_bytes.to_string())>
                                    {move || cell(|r| format::bytes(r.peak_bytes))}
                                </td>
                                <td class=move || if fits() { "ok" } else { "bad" }>
                                    {move || if fits() { "✓ fits" } else { "✗ over" }}
                                </td>
                            </tr>
                        }
                    })
                    .collect::<Vec<_>>()}
            </tbody>
        </table>
    }
}

/// Every term of the peak stage with its formula, built only while open.
#[component]
fn PeakTerms(data: Data) -> impl IntoView {
    let terms_open = RwSignal::new(false);
    view! {
        <details
            class="breakdown"
            on:toggle=move |ev| {
                let open = ev
                    .target()
                    .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlDetailsElement>(t).ok())
                    .is_some_and(|d| d.open());
                terms_open.set(open);
            }
        >
            <summary>"Every term of the peak stage, with its formula"</summary>
            <table class="terms" data-testid="term-table">
                <thead>
                    {column_heads(&["Term", "Bytes", "Formula with numbers", "Assumption"])}
                </thead>
                <tbody>
                    {move || {
                        // Rows are built only while the table is open: it is long.
                        if !terms_open.get() {
                            return Vec::new();
                        }
                        data.with(|d| {
                            let Ok(d) = d else { return Vec::new() };
                            peak_terms(d.current())
                                .iter()
                                .map(|t| {
                                    view! {
                                        <tr tabindex="0" title=t.formula.clone()>
                                            <td>{t.label.clone()}</td>
                                            <td class="num">{t.unit.format(t.value)}</td>
                                            <td><code>{t.worked.clone()}</code></td>
                                            <td class="assumption">{t.assumption.clone()}</td>
                                        </tr>
                                    }
                                })
                                .collect::<Vec<_>>()
                        })
                    }}
                </tbody>
            </table>
        </details>
    }
}
