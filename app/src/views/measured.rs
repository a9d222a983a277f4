//! Measured numbers: a gpu-bench report or nccl-tests output, read in the
//! browser (never uploaded: the page's worker parses it, `views/worker_job.rs`), fitted by `planner_core::input::calibration` and stored
//! in `Scenario.calibration` so that every view and the share link (`cal=`,
//! fitted numbers only) use it. Shows each measurement next to the fit and the
//! preset's assumption, GEMM rates against peak, and measured layer steps
//! against their prediction. A file that cannot be used leaves the state as it was.

use leptos::prelude::*;
use planner_core::edges::import_page::{BenchImport, Job};
use planner_core::edges::import_sniff::MAX_MEASUREMENT_FILE_BYTES;
use planner_core::input::calibration::CalibrationSummary;
use planner_core::input::scenario::{Measured, Scenario};
use planner_core::view::measured::{fit_table, step_times, FitTable, StepTimes};

use crate::app::Ctx;
use crate::format;
use crate::format::seconds;
use crate::views::bandwidth_chart::draw_busbw;
use crate::views::chart_canvas::{ChartCanvas, DrawInput};
use crate::views::files::{file_of_drop, read_text, FilePick, ImportMessage};
use crate::views::markup::SectionHead;
use crate::views::visibility::{near_screen, scenario_while_visible};
use crate::views::worker_job;

/// Largest file read: both parsers' own limit (32 MiB).
const MAX_FILE_BYTES: usize = MAX_MEASUREMENT_FILE_BYTES;

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
    let imported = RwSignal::new(None::<BenchImport>);
    // (message, is_error)
    let message = RwSignal::new(None::<(String, bool)>);
    let busy = RwSignal::new(false);

    let take_file = Callback::new(move |file: Option<web_sys::File>| {
        let Some(file) = file else { return };
        busy.set(true);
        // The last file's message goes until this one is read ("Reading…" meanwhile).
        message.set(None);
        read_and_fit(file, s, imported, message, busy);
    });

    let section = NodeRef::<leptos::html::Section>::new();
    let visible_scenario = scenario_while_visible(s, near_screen(section));
    let times =
        Memo::new(move |_| crate::perf::timed("measured", || visible_scenario.with(step_times)));
    let calibration = Memo::new(move |_| s.with(|sc| sc.calibration.clone()));
    // The fit beside the preset's links: rebuilt when the calibration or the cluster changes.
    let fit = Memo::new(move |_| {
        s.with(|sc| {
            sc.calibration
                .as_ref()
                .map(|m| fit_table(&m.summary, &sc.cluster))
        })
    });
    // Tables of raw measurements only while the scenario holds this file's fit.
    let current_import = Memo::new(move |_| {
        let cal = calibration.get();
        imported
            .get()
            .filter(|i| cal.as_ref().is_some_and(|m| m.summary == i.summary))
    });

    view! {
        <section node_ref=section class="view measured" aria-labelledby="measured-title" data-testid="measured-view">
            <SectionHead id="measured-title" title="Measured numbers: benchmark import and calibration" explain="Drop a gpu-bench report (JSON) or nccl-tests output here. The file is read in this browser and never leaves it. planner-core fits α–β per collective and link, and the GEMM efficiency curve; with “use measured numbers” on, step time, throughput and every communication figure use the fit. A share link carries only the fitted numbers (cal=), not the file." />
            <Dropzone take_file=take_file />
            {move || busy.get().then(|| view! { <p class="hint" data-testid="bench-busy">"Reading…"</p> })}
            {move || {
                message.get().map(|(text, error)| {
                    view! {
                        <ImportMessage
                            text=text
                            error=error
                            testid="bench-message"
                            error_class="issue error bench-message"
                            ok_class="bench-message ok"
                        />
                    }
                })
            }}
            {move || calibration.get().map(|m| view! { <CalibrationControls enabled=m.enabled message=message /> })}
            <StepTimesView times=times />
            {move || {
                calibration
                    .get()
                    .zip(fit.get())
                    .map(|(m, table)| view! { <FitTables summary=m.summary table=table /> })
            }}
            {move || current_import.get().map(|i| view! { <ImportTables data=i /> })}
        </section>
    }
}

/// Reads `file`, has the worker parse and fit it, and on success turns the fit on; `message`
/// says what happened and `busy` clears when it is done.
fn read_and_fit(
    file: web_sys::File,
    s: RwSignal<Scenario>,
    imported: RwSignal<Option<BenchImport>>,
    message: RwSignal<Option<(String, bool)>>,
    busy: RwSignal<bool>,
) {
    leptos::task::spawn_local(async move {
        let name = file.name();
        let text = match read_text(&file, MAX_FILE_BYTES).await {
            Ok(text) => text,
            Err(e) => {
                busy.set(false);
                message.set(Some((format!("{e}. Nothing was changed."), true)));
                return;
            }
        };
        // The worker parses and fits the file (off the page's wasm and thread).
        let request = s.with_untracked(|sc| Job::bench(&name, sc, text)).to_text();
        worker_job::ask(request, move |reply| {
            busy.set(false);
            match reply.and_then(|t| BenchImport::from_text(&t)) {
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
    });
}

/// Where a file is dropped or picked.
#[component]
fn Dropzone(take_file: Callback<Option<web_sys::File>>) -> impl IntoView {
    let dragging = RwSignal::new(false);
    view! {
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
                take_file.run(file_of_drop(&ev));
            }
        >
            <span class="dropzone-text">
                "Drop a report or nccl-tests output, or pick a file "
                <span class="hint">{format!("(up to {} MiB)", MAX_FILE_BYTES / (1024 * 1024))}</span>
            </span>
            <FilePick
                accept=".json,.txt,.log,.out,application/json,text/plain"
                testid="bench-file"
                take=take_file
            />
        </label>
    }
}

/// Turns the calibration on or off, or removes it (and the last file's message).
#[component]
fn CalibrationControls(enabled: bool, message: RwSignal<Option<(String, bool)>>) -> impl IntoView {
    let s = expect_context::<Ctx>().scenario;
    view! {
        <div class="cal-controls">
            <label class="toggle">
                <input
                    type="checkbox"
                    data-testid="cal-enabled"
                    prop:checked=enabled
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
fn FitTables(summary: CalibrationSummary, table: FitTable) -> impl IntoView {
    let rows = table
        .links
        .iter()
        .map(|l| {
            view! {
                <tr>
                    <td>{l.op.id()}</td>
                    <td>{l.domain.id().replace('_', " ")}</td>
                    <td class="num">{format::bytes_per_s(l.fit_busbw_bytes_per_s)}</td>
                    <td class="num">{format::bytes_per_s(l.assumed_busbw_bytes_per_s)}</td>
                    <td class="num">{seconds(l.fit_latency_s)}</td>
                    <td class="num">{seconds(l.assumed_latency_s)}</td>
                    <td class="num">{l.points}</td>
                    <td class="num">{format::percent(l.max_relative_error)}</td>
                </tr>
            }
        })
        .collect_view();
    let default_gemm = table.assumed_gemm;
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
                        <th class="num" title="the preset link's line rate × the share of it NCCL measures for that collective (planner-core input/link_efficiency.rs)">"bus bw, assumed"</th>
                        <th class="num">"α per step, fit"</th>
                        <th class="num">"α, assumed"</th>
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

/// The accepted file's measurements: the worker's markup of its notes and tables
/// (`app-worker/src/bench_import.rs`), and the bus-bandwidth chart drawn here.
#[component]
fn ImportTables(data: BenchImport) -> impl IntoView {
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
    let has_comm = !data.comm_html.is_empty();
    view! {
        <div inner_html=data.head_html></div>
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
            <div inner_html=data.comm_html></div>
        })}
        <div inner_html=data.rest_html></div>
    }
}
