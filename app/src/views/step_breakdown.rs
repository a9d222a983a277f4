//! Step-time breakdown: compute, exposed communication per group and the
//! bubble as one stacked bar, and the step's communication volume per
//! collective and per link (NVLink vs network), from planner-core's
//! `breakdown::step_breakdown`.

use leptos::prelude::*;
use planner_core::view::step_breakdown::{step_breakdown, SegmentKind, StepBreakdown};
use planner_core::view::Domain;

use crate::app::Ctx;
use crate::format;
use crate::format::seconds;
use crate::perf::timed;
use crate::views::error_band::BandNote;
use crate::views::markup::SectionHead;
use crate::views::visibility::section_inputs;
use planner_core::edges::error_band::BandKind;

/// Colour class per segment (same family as the memory chart's palette).
fn segment_class(kind: SegmentKind) -> &'static str {
    match kind {
        SegmentKind::Compute => "seg-compute",
        SegmentKind::Recompute => "seg-recompute",
        SegmentKind::TpComm => "seg-tp",
        SegmentKind::CpComm => "seg-cp",
        SegmentKind::EpComm => "seg-ep",
        SegmentKind::DpComm => "seg-dp",
        SegmentKind::PpComm => "seg-pp",
        SegmentKind::Bubble => "seg-bubble",
        SegmentKind::Optimizer => "seg-opt",
    }
}

/// Where a group's traffic runs, naming the node's own link (`link`: "NVLink", "PCIe").
fn domain_label(d: Domain, link: &str) -> String {
    match d {
        Domain::Local => "local".to_string(),
        Domain::IntraNode => format!("{link} (in node)"),
        Domain::InterNode => "network".to_string(),
        Domain::Hierarchical => format!("{link} + network"),
    }
}

/// The step-breakdown section.
#[component]
pub fn StepBreakdownView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let (section, scenario, model) = section_inputs(ctx.scenario);
    let data = Memo::new(move |_| {
        model.with(|m| {
            m.as_ref()
                .ok()
                .map(|model| scenario.with(|s| timed("breakdown", || step_breakdown(s, model))))
        })
    });

    let bar = move |b: &StepBreakdown| {
        let total = b.total_s.max(f64::MIN_POSITIVE);
        b.segments
            .iter()
            .filter(|s| s.seconds > 0.0)
            .map(|s| {
                let pct = 100.0 * s.seconds / total;
                let tip = format!(
                    "{}: {}\n{}\n{}\n{}",
                    s.term.label,
                    seconds(s.seconds),
                    s.term.formula,
                    s.term.worked,
                    s.term.assumption
                );
                view! {
                    <div
                        class=format!("seg {}", segment_class(s.kind))
                        style=format!("width: {pct:.3}%")
                        title=tip
                        tabindex="0"
                        data-testid=format!("step-seg-{}", s.term.key.trim_start_matches("time.").replace('.', "-"))
                        data-seconds=format!("{}", s.seconds)
                    ></div>
                }
            })
            .collect::<Vec<_>>()
    };

    view! {
        <section node_ref=section class="view" aria-labelledby="breakdown-title" data-testid="breakdown-view">
            <SectionHead id="breakdown-title" title="Step-time breakdown" explain="Where one optimizer step's time goes on every GPU: compute (and recompute), the communication of each group that compute does not hide, the pipeline bubble and the optimizer. Below, the bytes each GPU sends per step, by collective and by link: tensor parallelism should stay inside a node (on NVLink where the GPUs have it); pipeline and data parallelism cross the network." />
            {move || data.with(|d| match d {
                None => view! { <p class="issue error">"No model: nothing to break down."</p> }.into_any(),
                Some(b) => {
                    let legend = b
                        .segments
                        .iter()
                        .filter(|s| s.seconds > 0.0)
                        .map(|s| {
                            view! {
                                <li data-testid=format!("step-legend-{}", s.term.key.trim_start_matches("time.").replace('.', "-"))>
                                    <span class=format!("swatch {}", segment_class(s.kind))></span>
                                    {s.term.label.clone()}
                                    ": "
                                    <strong>{seconds(s.seconds)}</strong>
                                </li>
                            }
                        })
                        .collect::<Vec<_>>();
                    view! {
                        <p class="derived">
                            "Step time "
                            <strong data-testid="step-total">{seconds(b.total_s)}</strong>
                            " "
                            <BandNote kind=BandKind::StepTime testid="step-band"/>
                        </p>
                        <div class="step-bar" role="img" aria-label=format!("Step time {} as stacked segments", seconds(b.total_s)) data-testid="step-bar">
                            {bar(b)}
                        </div>
                        <ul class="legend step-legend">{legend}</ul>
                        <div class="volume-tables">
                            {volume_by_op(b)}
                            {volume_rows(b)}
                        </div>
                    }
                        .into_any()
                }
            })}
        </section>
    }
}

/// Bytes per GPU per step by collective, and the totals per link.
fn volume_by_op(b: &StepBreakdown) -> impl IntoView {
    view! {
        <div class="table-scroll">
            <table data-testid="volume-by-op">
                <caption>"Bytes per GPU per step, by collective"</caption>
                <thead>
                    <tr>
                        <th scope="col">"Collective"</th>
                        <th scope="col">"Bus bytes"</th>
                        <th scope="col">{b.intra_node_link.clone()}</th>
                        <th scope="col">"Network"</th>
                    </tr>
                </thead>
                <tbody>
                    {b.volume_by_op.iter().map(|v| view! {
                        <tr>
                            <th scope="row">{v.op.id()}</th>
                            <td>{format::bytes(v.bus_bytes_per_step)}</td>
                            <td>{format::bytes(v.intra_node_bytes)}</td>
                            <td>{format::bytes(v.inter_node_bytes)}</td>
                        </tr>
                    }).collect::<Vec<_>>()}
                    <tr class="total">
                        <th scope="row">"All, per link"</th>
                        <td></td>
                        <td data-testid="volume-nvlink">{format::bytes(b.intra_node_bytes)}</td>
                        <td data-testid="volume-network">{format::bytes(b.inter_node_bytes)}</td>
                    </tr>
                </tbody>
            </table>
        </div>
    }
}

/// Every collective of the step by group and purpose, with where it runs.
fn volume_rows(b: &StepBreakdown) -> impl IntoView {
    view! {
        <div class="table-scroll">
            <table data-testid="volume-rows">
                <caption>"Every collective of the step, by group and purpose"</caption>
                <thead>
                    <tr>
                        <th scope="col">"Group"</th>
                        <th scope="col">"Purpose"</th>
                        <th scope="col">"Op"</th>
                        <th scope="col">"Runs on"</th>
                        <th scope="col">{b.intra_node_link.clone()}</th>
                        <th scope="col">"Network"</th>
                    </tr>
                </thead>
                <tbody>
                    {b.volume.iter().map(|v| view! {
                        <tr>
                            <th scope="row">{v.group.id().to_ascii_uppercase().replace('_', "×")}</th>
                            <td>{v.purpose.id().replace('_', " ")}</td>
                            <td>{v.op.id()}</td>
                            <td>{domain_label(v.domain, &b.intra_node_link)}</td>
                            <td>{format::bytes(v.intra_node_bytes)}</td>
                            <td>{format::bytes(v.inter_node_bytes)}</td>
                        </tr>
                    }).collect::<Vec<_>>()}
                </tbody>
            </table>
        </div>
    }
}
