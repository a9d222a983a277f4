//! Measured numbers: a gpu-bench report or nccl-tests output, read in the
//! browser (never uploaded), fitted by `planner_core::input::calibration` and stored
//! in `Scenario.calibration` so that every view and the share link (`cal=`,
//! fitted numbers only) use it. Shows each measurement next to the fit and the
//! preset's assumption, GEMM rates against peak, and measured layer steps
//! against their prediction. A file that cannot be used leaves the state as it was.

use leptos::prelude::*;
use planner_core::edges::calibration_fit::{
    compare_comm, compare_gemm, predicted_busbw_bytes_per_s, CommComparison, GemmComparison,
};
use planner_core::edges::import_sniff::{
    fit_measurements, gpu_for_device, read_measurements, NcclContext, MAX_MEASUREMENT_FILE_BYTES,
};
use planner_core::edges::layer_step::{check_all, gate_up_matrices_for, LayerStepCheck};
use planner_core::input::calibration::CalibrationSummary;
use planner_core::input::hardware::GpuSpec;
use planner_core::input::scenario::{Measured, Scenario};
use planner_core::time::calibrated_step::{step_times, StepTimes};
use planner_core::time::collectives::CommModel;
use planner_core::time::cost::GemmEfficiency;

use crate::app::Ctx;
use crate::format;
use crate::format::seconds;
use crate::views::bandwidth_chart::{draw_busbw, sizes_around, BusbwSeries};
use crate::views::chart_canvas::{ChartCanvas, DrawInput};
use crate::views::files::{file_of_drop, file_of_input_event, read_text};
use crate::views::visibility::{near_screen, scenario_while_visible};

/// Largest file read: both parsers' own limit (32 MiB).
const MAX_FILE_BYTES: usize = MAX_MEASUREMENT_FILE_BYTES;

/// What the last accepted file held (kept in this panel only; the scenario keeps the fit).
#[derive(Clone, Debug, PartialEq)]
struct Imported {
    file_name: String,
    /// "gpu-bench report" or "nccl-tests output".
    kind: &'static str,
    /// The GPU the GEMM fit is relative to, and why that one.
    gpu: GpuSpec,
    gpu_note: String,
    /// The summary fitted from this file (to tell whether the scenario still holds it).
    summary: CalibrationSummary,
    comm: Vec<CommComparison>,
    /// Per collective and group shape: measured, fitted and preset bus bandwidth.
    busbw: Vec<BusbwSeries>,
    gemm: Vec<GemmComparison>,
    layer_steps: Vec<LayerStepCheck>,
    /// Remarks the report carries (skipped sizes...), and whether it is synthetic.
    notes: Vec<String>,
}

/// Parses and fits one file against the scenario's GPU (or the report's, when it names a preset).
fn import(name: &str, text: &str, scenario: &Scenario) -> Result<Imported, String> {
    let read =
        read_measurements(text, &NcclContext::default()).map_err(|e| format!("{name}: {e}"))?;
    let (gpu, gpu_note) = gpu_for_device(read.device.as_deref(), &scenario.cluster.gpu);
    let fit = fit_measurements(&read.comm, &read.gemm, &gpu).map_err(|e| format!("{name}: {e}"))?;
    let (summary, assumed) = (fit.summary, fit.assumed);
    let mut fitted = assumed.clone();
    fitted.apply_calibration(&summary);
    let (gemm_curve, peak) = summary
        .gemm
        .as_ref()
        .map_or((GemmEfficiency::default(), gpu.bf16_flops_per_s), |g| {
            (g.efficiency, g.peak_flops_per_s)
        });
    let layer_steps = read
        .layer_steps
        .iter()
        .flat_map(|s| {
            check_all(
                std::slice::from_ref(s),
                gate_up_matrices_for(s.hidden, s.ffn),
                &fitted,
                &gemm_curve,
                peak,
                read.ranks_per_node,
            )
        })
        .collect();
    let comm = compare_comm(&read.comm, &summary, &assumed);
    let busbw = busbw_series(&comm, &fitted, &assumed);
    Ok(Imported {
        file_name: name.to_string(),
        kind: read.format.label(),
        comm,
        busbw,
        gemm: compare_gemm(&read.gemm, summary.gemm.as_ref(), gpu.bf16_flops_per_s),
        gpu,
        gpu_note,
        summary,
        layer_steps,
        notes: read.notes,
    })
}

/// One chart series per (collective, ranks, ranks per node), curves at 48 sizes around the measured ones.
fn busbw_series(
    rows: &[CommComparison],
    fitted: &CommModel,
    assumed: &CommModel,
) -> Vec<BusbwSeries> {
    let mut keys: Vec<(planner_core::time::collectives::Collective, u64, u64)> = Vec::new();
    for r in rows {
        let k = (r.sample.op, r.sample.ranks, r.sample.ranks_per_node);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .enumerate()
        .map(|(i, (op, ranks, rpn))| {
            let mine: Vec<&CommComparison> = rows
                .iter()
                .filter(|r| {
                    (r.sample.op, r.sample.ranks, r.sample.ranks_per_node) == (op, ranks, rpn)
                })
                .collect();
            let lo = mine
                .iter()
                .map(|r| r.sample.bytes)
                .fold(f64::INFINITY, f64::min);
            let hi = mine.iter().map(|r| r.sample.bytes).fold(0.0, f64::max);
            let sizes = sizes_around(lo, hi, 48);
            let curve = |m: &CommModel| {
                sizes
                    .iter()
                    .map(|&b| (b, predicted_busbw_bytes_per_s(m, op, ranks, rpn, b)))
                    .collect()
            };
            BusbwSeries {
                label: format!("{}, {ranks} ranks ({rpn} per node)", op.id()),
                color: i,
                measured: mine
                    .iter()
                    .map(|r| (r.sample.bytes, r.measured_busbw_bytes_per_s))
                    .collect(),
                fitted: curve(fitted),
                preset: curve(assumed),
            }
        })
        .collect()
}

/// "Measured numbers on" in the page header while a calibration is in use.
#[component]
pub fn CalibrationBadge() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let on = Memo::new(move |_| {
        ctx.scenario
            .with(|s| s.calibration.as_ref().is_some_and(|m| m.enabled))
    });
    view! {
        <Show when=move || on.get()>
            <a
                class="cal-badge"
                href="#measured-title"
                data-testid="cal-badge"
                title="Step time, throughput and every communication figure use the fitted link and GEMM numbers from your benchmark (see Measured numbers)."
            >
                "● Measured numbers on"
            </a>
        </Show>
    }
}

/// The benchmark import and calibration section.
#[component]
pub fn MeasuredView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let s = ctx.scenario;
    let imported = RwSignal::new(None::<Imported>);
    // (message, is_error)
    let message = RwSignal::new(None::<(String, bool)>);
    let busy = RwSignal::new(false);
    let dragging = RwSignal::new(false);

    let take_file = move |file: Option<web_sys::File>| {
        let Some(file) = file else { return };
        busy.set(true);
        leptos::task::spawn_local(async move {
            let name = file.name();
            let result = match read_text(&file, MAX_FILE_BYTES).await {
                Ok(text) => s.with_untracked(|sc| import(&name, &text, sc)),
                Err(e) => Err(e),
            };
            busy.set(false);
            match result {
                Ok(data) => {
                    let links = data.summary.links.len();
                    let gemm = if data.summary.gemm.is_some() {
                        "a GEMM curve"
                    } else {
                        "no GEMM curve"
                    };
                    message.set(Some((
                        format!("{}: {} read; fitted {links} link figure(s) and {gemm}. Measured numbers are on.", data.file_name, data.kind),
                        false,
                    )));
                    let summary = data.summary.clone();
                    imported.set(Some(data));
                    s.update(|sc| {
                        sc.calibration = Some(Measured {
                            summary,
                            enabled: true,
                        })
                    });
                }
                Err(e) => message.set(Some((format!("{e}. Nothing was changed."), true))),
            }
        });
    };

    let section = NodeRef::<leptos::html::Section>::new();
    let visible_scenario = scenario_while_visible(s, near_screen(section));
    let times =
        Memo::new(move |_| crate::perf::timed("measured", || visible_scenario.with(step_times)));
    let calibration = Memo::new(move |_| s.with(|sc| sc.calibration.clone()));
    let assumed_links = Memo::new(move |_| s.with(|sc| CommModel::assumed(&sc.cluster)));
    // Tables of raw measurements only while the scenario holds this file's fit.
    let current_import = Memo::new(move |_| {
        let cal = calibration.get();
        imported
            .get()
            .filter(|i| cal.as_ref().is_some_and(|m| m.summary == i.summary))
    });

    view! {
        <section node_ref=section class="view measured" aria-labelledby="measured-title" data-testid="measured-view">
            <h2 id="measured-title">"Measured numbers: benchmark import and calibration"</h2>
            <p class="explain">
                "Drop a gpu-bench report (JSON) or nccl-tests output here. The file is read in this browser and never leaves it. planner-core fits α–β per collective and link, and the GEMM efficiency curve; with “use measured numbers” on, step time, throughput and every communication figure use the fit. A share link carries only the fitted numbers (cal=), not the file."
            </p>
            <label
                class="dropzone"
                class:dragging=move || dragging.get()
                on:dragover=move |ev: web_sys::DragEvent| {
                    ev.prevent_default();
                    dragging.set(true);
                }
                on:dragleave=move |_| dragging.set(false)
                on:drop=move |ev: web_sys::DragEvent| {
                    ev.prevent_default();
                    dragging.set(false);
                    take_file(file_of_drop(&ev));
                }
            >
                <span class="dropzone-text">
                    "Drop a report or nccl-tests output, or pick a file "
                    <span class="hint">{format!("(up to {} MiB)", MAX_FILE_BYTES / (1024 * 1024))}</span>
                </span>
                <input
                    type="file"
                    accept=".json,.txt,.log,.out,application/json,text/plain"
                    data-testid="bench-file"
                    on:change=move |ev| {
                        take_file(file_of_input_event(&ev));
                        // Picking the same file again must fire change again.
                        if let Some(input) = ev
                            .target()
                            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlInputElement>(t).ok())
                        {
                            input.set_value("");
                        }
                    }
                />
            </label>
            {move || busy.get().then(|| view! { <p class="hint" data-testid="bench-busy">"Reading…"</p> })}
            {move || {
                message
                    .get()
                    .map(|(text, error)| {
                        view! {
                            <p
                                class=if error { "issue error bench-message" } else { "bench-message ok" }
                                role=if error { "alert" } else { "status" }
                                data-testid="bench-message"
                                data-error=if error { "true" } else { "false" }
                            >
                                {text}
                            </p>
                        }
                    })
            }}
            {move || {
                calibration
                    .get()
                    .map(|m| {
                        view! {
                            <div class="cal-controls">
                                <label class="toggle">
                                    <input
                                        type="checkbox"
                                        data-testid="cal-enabled"
                                        prop:checked=m.enabled
                                        on:change=move |ev| {
                                            let on = event_target_checked(&ev);
                                            s.update(|sc| {
                                                if let Some(c) = sc.calibration.as_mut() {
                                                    c.enabled = on;
                                                }
                                            });
                                        }
                                    />
                                    " Use measured numbers"
                                </label>
                                <button
                                    data-testid="cal-clear"
                                    on:click=move |_| {
                                        s.update(|sc| sc.calibration = None);
                                        message.set(None);
                                    }
                                >
                                    "Remove calibration"
                                </button>
                            </div>
                        }
                    })
            }}
            <StepTimesView times=times />
            {move || calibration.get().map(|m| view! { <FitTables summary=m.summary assumed=assumed_links.get() /> })}
            {move || current_import.get().map(|i| view! { <ImportTables data=i /> })}
        </section>
    }
}

#[component]
fn StepTimesView(times: Memo<StepTimes>) -> impl IntoView {
    let t = move || times.get();
    view! {
        <dl class="figures-inline step-times">
            <div>
                <dt>"Step time used now"</dt>
                <dd
                    data-testid="step-time"
                    data-seconds=move || t().current.map(|x| x.to_string()).unwrap_or_default()
                >
                    {move || match t().current {
                        Ok(x) => seconds(x),
                        Err(e) => e,
                    }}
                </dd>
                <dd class="hint">"the time model of this layout (Evaluation.step)"</dd>
            </div>
            <div>
                <dt>"With datasheet numbers"</dt>
                <dd data-testid="step-assumed">{move || t().assumed_s.map_or("—".into(), seconds)}</dd>
                <dd class="hint">"preset links and the assumed GEMM curve"</dd>
            </div>
            <div>
                <dt>"With measured numbers"</dt>
                <dd data-testid="step-measured">
                    {move || {
                        let t = t();
                        match (t.measured_s, t.measured_vs_assumed()) {
                            (Some(m), Some(f)) => format!("{} ({} vs datasheet)", seconds(m), format::signed_percent(f)),
                            (Some(m), None) => seconds(m),
                            _ => "no calibration loaded".into(),
                        }
                    }}
                </dd>
                <dd class="hint">"fitted links and GEMM curve where measured, preset elsewhere"</dd>
            </div>
        </dl>
    }
}

#[component]
fn FitTables(summary: CalibrationSummary, assumed: CommModel) -> impl IntoView {
    let rows = summary
        .links
        .iter()
        .map(|l| {
            let preset = assumed.link(l.op, l.domain);
            view! {
                <tr>
                    <td>{l.op.id()}</td>
                    <td>{l.domain.id().replace('_', " ")}</td>
                    <td class="num">{format::bytes_per_s(l.busbw_bytes_per_s)}</td>
                    <td class="num">{format::bytes_per_s(preset.busbw_bytes_per_s)}</td>
                    <td class="num">{seconds(l.latency_s)}</td>
                    <td class="num">{seconds(preset.latency_s)}</td>
                    <td class="num">{l.points}</td>
                    <td class="num">{format::percent(l.max_relative_error)}</td>
                </tr>
            }
        })
        .collect_view();
    let default_gemm = GemmEfficiency::default();
    let gemm = match summary.gemm {
        Some(g) => format!(
            "GEMM efficiency fitted: {} × d/(d + {}) of {} TFLOP/s ({} point(s), max error {}); assumed: {} × d/(d + {}).",
            format::percent(g.efficiency.max_fraction),
            format::sig3(g.efficiency.half_dim),
            format::sig3(g.peak_flops_per_s / 1e12),
            g.points,
            format::percent(g.max_relative_error),
            format::percent(default_gemm.max_fraction),
            format::sig3(default_gemm.half_dim),
        ),
        None => "GEMM efficiency: not measured; the assumed curve stays.".into(),
    };
    view! {
        <h3>"Fitted numbers (what the link carries)"</h3>
        <div class="table-scroll">
            <table class="data" data-testid="cal-links">
                <thead>
                    <tr>
                        <th>"collective"</th>
                        <th>"link"</th>
                        <th class="num">"bus bw, measured fit"</th>
                        <th class="num">"bus bw, preset"</th>
                        <th class="num">"α per step, fit"</th>
                        <th class="num">"α, preset"</th>
                        <th class="num">"points"</th>
                        <th class="num">"max error"</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <p class="cal-gemm" data-testid="cal-gemm">{gemm}</p>
    }
}

#[component]
fn ImportTables(data: Imported) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let series = StoredValue::new(data.busbw.clone());
    let draw = Callback::new(move |(canvas, css_width): DrawInput| {
        let theme = ctx.theme.get();
        series.with_value(|s| {
            draw_busbw(&canvas, css_width, s, &theme).unwrap_or_else(|e| {
                leptos::logging::warn!("{e}");
                Vec::new()
            })
        })
    });
    let legend = data
        .busbw
        .iter()
        .map(|s| {
            view! {
                <li>
                    <span class="swatch" style=format!("background:{}", crate::charts::css_color(s.color))></span>
                    {s.label.clone()}
                </li>
            }
        })
        .collect_view();
    let comm_rows = data
        .comm
        .iter()
        .map(|c| {
            let s = c.sample;
            view! {
                <tr>
                    <td>{s.op.id()}</td>
                    <td class="num">{format!("{} ({}/node)", s.ranks, s.ranks_per_node)}</td>
                    <td class="num">{format::bytes(s.bytes)}</td>
                    <td class="num">{seconds(s.time_s)}</td>
                    <td class="num">{format::bytes_per_s(c.measured_busbw_bytes_per_s)}</td>
                    <td class="num">{format::bytes_per_s(c.fitted_busbw_bytes_per_s)}</td>
                    <td class="num">{format::bytes_per_s(c.assumed_busbw_bytes_per_s)}</td>
                </tr>
            }
        })
        .collect_view();
    let peak_tflops = data.gpu.bf16_flops_per_s / 1e12;
    let gemm_rows = data
        .gemm
        .iter()
        .map(|g| {
            let s = g.sample;
            view! {
                <tr>
                    <td>{format!("{} × {} × {}", s.m, s.n, s.k)}</td>
                    <td class="num">{format::sig3(s.flops_per_s / 1e12)}</td>
                    <td class="num">{format::sig3(peak_tflops)}</td>
                    <td class="num">{format::percent(g.measured_fraction)}</td>
                    <td class="num">{g.fitted_fraction.map_or("—".into(), format::percent)}</td>
                    <td class="num">{format::percent(g.assumed_fraction)}</td>
                </tr>
            }
        })
        .collect_view();
    let step_rows = data
        .layer_steps
        .iter()
        .map(|c| {
            let (p, m) = (c.predicted, c.measured);
            view! {
                <tr>
                    <td>{c.label.clone()}</td>
                    <td class="num">{seconds(p.compute_s)}" / "{seconds(m.compute_s)}</td>
                    <td class="num">{seconds(p.comm_s)}" / "{seconds(m.comm_s)}</td>
                    <td class="num">{seconds(p.sequential_s)}" / "{seconds(m.sequential_s)}</td>
                    <td class="num" data-testid="layer-step-error">{format::signed_percent(c.sequential_error())}</td>
                </tr>
            }
        })
        .collect_view();
    let has_comm = !data.comm.is_empty();
    let n_comm = data.comm.len();
    // Long nccl-tests tables start folded; the chart above shows them.
    let open_samples = n_comm <= 8;
    let has_gemm = !data.gemm.is_empty();
    let has_steps = !data.layer_steps.is_empty();
    view! {
        <h3>{format!("From {} ({})", data.file_name, data.kind)}</h3>
        <ul class="hint bench-notes" data-testid="bench-notes">
            <li>{format!("GEMM rates are relative to the {} BF16 peak, {} TFLOP/s ({}).", data.gpu.name, format::sig3(peak_tflops), data.gpu_note)}</li>
            {data.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}
        </ul>
        {has_comm.then(|| view! {
            <h4>"Bus bandwidth against message size"</h4>
            <figure class="busbw">
                <ChartCanvas
                    label="Bus bandwidth against message size: measured points, fitted curve (solid), preset assumption (dashed)"
                    testid="chart-busbw"
                    draw=draw
                />
                <ul class="legend">
                    {legend}
                    <li>"dots: measured; solid: fit; dashed: preset assumption"</li>
                </ul>
            </figure>
            <details class="samples" open=open_samples>
                <summary>{format!("{n_comm} measurement(s), with the fit and the preset at each size")}</summary>
            <div class="table-scroll">
                <table class="data" data-testid="bench-collectives">
                    <thead>
                        <tr>
                            <th>"collective"</th>
                            <th class="num">"ranks"</th>
                            <th class="num">"size"</th>
                            <th class="num">"time"</th>
                            <th class="num">"bus bw, measured"</th>
                            <th class="num">"fit"</th>
                            <th class="num">"preset assumption"</th>
                        </tr>
                    </thead>
                    <tbody>{comm_rows}</tbody>
                </table>
            </div>
            </details>
        })}
        {has_gemm.then(|| view! {
            <h4>"GEMM rate against peak"</h4>
            <div class="table-scroll">
                <table class="data" data-testid="bench-gemms">
                    <thead>
                        <tr>
                            <th>"m × n × k"</th>
                            <th class="num">"TFLOP/s"</th>
                            <th class="num">"peak"</th>
                            <th class="num">"of peak"</th>
                            <th class="num">"fit"</th>
                            <th class="num">"assumed"</th>
                        </tr>
                    </thead>
                    <tbody>{gemm_rows}</tbody>
                </table>
            </div>
        })}
        {has_steps.then(|| view! {
            <h4>"Measured layer steps: predicted / measured"</h4>
            <div class="table-scroll">
                <table class="data" data-testid="bench-layer-steps">
                    <thead>
                        <tr>
                            <th>"step"</th>
                            <th class="num">"compute"</th>
                            <th class="num">"communication"</th>
                            <th class="num">"sequential"</th>
                            <th class="num">"error"</th>
                        </tr>
                    </thead>
                    <tbody>{step_rows}</tbody>
                </table>
            </div>
            <p class="hint">"Predicted with the fitted links and GEMM curve on the step's own shapes (planner_core::edges::layer_step); error = (predicted − measured) ÷ measured of the sequential step."</p>
        })}
    }
}
