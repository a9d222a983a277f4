//! The step-time stacked bar and the communication volume of a step, as the
//! app draws them: segments that add up to the step time, and bytes per
//! collective and per link (NVLink vs network).

use serde::{Deserialize, Serialize};

use crate::base::explain::{Term, Unit};
use crate::figures::topology_map::domain_bytes;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::parallel::topology::{Domain, GroupKind};
use crate::time::collectives::{Collective, COMM_TIME_ASSUMPTION};
use crate::time::comms::{CommItem, Purpose};
use crate::time::cost::{CostOptions, StepModel, StepSeconds};

/// Which bar segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    /// Forward and backward compute (without recompute).
    Compute,
    /// Recomputed forward.
    Recompute,
    /// Exposed tensor-parallel communication.
    TpComm,
    /// Exposed context-parallel communication.
    CpComm,
    /// Exposed expert-parallel all-to-all.
    EpComm,
    /// Exposed data-parallel / ZeRO / FSDP communication (dense and expert gradients).
    DpComm,
    /// Exposed pipeline point-to-point.
    PpComm,
    /// Pipeline bubble.
    Bubble,
    /// Optimizer step.
    Optimizer,
}

/// One segment of the stacked step-time bar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// Which segment.
    pub kind: SegmentKind,
    /// Seconds per step.
    pub seconds: f64,
    /// Start of the segment in the stacked bar, seconds.
    pub offset_s: f64,
    /// Explanation (`bytes` holds seconds).
    pub term: Term,
}

/// Bytes of one communication item per step, split by link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VolumeRow {
    /// Operation.
    pub op: Collective,
    /// What for.
    pub purpose: Purpose,
    /// Group.
    pub group: GroupKind,
    /// Link class of the group.
    pub domain: Domain,
    /// Bytes each rank sends per step (nccl-tests bus bytes).
    pub bus_bytes_per_step: f64,
    /// Of the traffic, bytes on intra-node links (NVLink).
    pub intra_node_bytes: f64,
    /// Of the traffic, bytes on the network.
    pub inter_node_bytes: f64,
}

/// Bytes per step of one operation, summed over its uses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VolumeByOp {
    /// Operation.
    pub op: Collective,
    /// Bytes each rank sends per step.
    pub bus_bytes_per_step: f64,
    /// Of which on NVLink.
    pub intra_node_bytes: f64,
    /// Of which on the network.
    pub inter_node_bytes: f64,
}

/// The step-time bar and the step's communication volume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepBreakdown {
    /// Segments in stacking order; their seconds add up to `total_s`.
    pub segments: Vec<Segment>,
    /// Step time, seconds.
    pub total_s: f64,
    /// Every communication item.
    pub volume: Vec<VolumeRow>,
    /// Per operation, in [`Collective::ALL`] order, only those used.
    pub volume_by_op: Vec<VolumeByOp>,
    /// Bytes per rank per step on intra-node links (NVLink).
    pub intra_node_bytes: f64,
    /// Bytes per rank per step on the network.
    pub inter_node_bytes: f64,
    /// The intra-node link's name ("NVLink", "PCIe"; input/intra_node_link.rs).
    pub intra_node_link: String,
}

fn raw_seconds(comms: &[CommItem], kinds: &[GroupKind]) -> f64 {
    comms
        .iter()
        .filter(|i| kinds.contains(&i.group))
        .map(|i| i.seconds_per_step)
        .sum()
}

/// The segments laid end to end: each starts where the one before it ends.
fn stacked(items: [(SegmentKind, Term); 9]) -> Vec<Segment> {
    let mut offset = 0.0;
    items
        .into_iter()
        .map(|(kind, term)| {
            let seg = Segment {
                kind,
                seconds: term.value,
                offset_s: offset,
                term,
            };
            offset += seg.seconds;
            seg
        })
        .collect()
}

/// The volume rows summed per collective, for the collectives that occur.
fn volume_by_op(volume: &[VolumeRow]) -> Vec<VolumeByOp> {
    Collective::ALL
        .iter()
        .filter_map(|&op| {
            let rows = volume.iter().filter(|r| r.op == op);
            let mut v = VolumeByOp {
                op,
                bus_bytes_per_step: 0.0,
                intra_node_bytes: 0.0,
                inter_node_bytes: 0.0,
            };
            let mut any = false;
            for r in rows {
                any = true;
                v.bus_bytes_per_step += r.bus_bytes_per_step;
                v.intra_node_bytes += r.intra_node_bytes;
                v.inter_node_bytes += r.inter_node_bytes;
            }
            any.then_some(v)
        })
        .collect()
}

/// The scenario's step time as stacked segments (from [`crate::time::cost`]) and its
/// communication volume per collective and per link (from [`crate::time::comms`]).
pub fn step_breakdown(
    scenario: &Scenario,
    model: &ModelSpec,
    options: &CostOptions,
) -> StepBreakdown {
    let step = StepModel::for_scenario(model, scenario, options.clone());
    let cost = step.evaluate(&scenario.layout);
    let s: &StepSeconds = &cost.seconds;
    let ms = |x: f64| format!("{:.1} ms", x * 1e3);
    let exposed =
        |kinds: &[GroupKind]| -> f64 { kinds.iter().map(|k| s.exposed_comm[k.index()]).sum() };
    let comm_term = |key: &str, label: &str, kinds: &[GroupKind], what: &str| {
        let e = exposed(kinds);
        let raw = raw_seconds(&cost.comms, kinds);
        Term {
            key: format!("time.comm.{key}"),
            label: label.to_string(),
            unit: Unit::Seconds,
            value: e,
            formula: "steps·α + bytes·factor(n)/busbw per call × calls, minus what overlaps"
                .to_string(),
            worked: format!("{} exposed of {} ({what})", ms(e), ms(raw)),
            assumption: format!("{COMM_TIME_ASSUMPTION} (time/collectives.rs)"),
        }
    };
    let dp_kinds = [GroupKind::Dp, GroupKind::DpCp, GroupKind::ExpertDp];
    let plain = |key: &str, label: &str, seconds: f64, formula: &str, assumption: &str| Term {
        key: key.to_string(),
        label: label.to_string(),
        unit: Unit::Seconds,
        value: seconds,
        formula: formula.to_string(),
        worked: ms(seconds),
        assumption: assumption.to_string(),
    };
    let items: [(SegmentKind, Term); 9] = [
        (
            SegmentKind::Compute,
            plain(
                "time.compute",
                "Compute",
                s.compute - s.recompute,
                "m · (t_forward + t_backward), t_backward = 2·t_forward",
                "Matmuls at the compute dtype's peak × GEMM efficiency (FP8: linear layers only, LM head BF16), attention at the BF16 peak × attention efficiency, element-wise ops and FP8 casts at HBM speed",
            ),
        ),
        (
            SegmentKind::Recompute,
            plain(
                "time.recompute",
                "Recompute",
                s.recompute,
                "m · t_recompute (selective: attention core; full: one forward)",
                "Korthikanti et al. 2022 §5",
            ),
        ),
        (
            SegmentKind::TpComm,
            comm_term("tp", "TP communication", &[GroupKind::Tp], "all-reduce or all-gather + reduce-scatter per layer"),
        ),
        (
            SegmentKind::CpComm,
            comm_term("cp", "CP communication", &[GroupKind::Cp], "K/V ring, hidden behind attention"),
        ),
        (
            SegmentKind::EpComm,
            comm_term("ep", "EP all-to-all", &[GroupKind::Ep], "dispatch and combine per MoE layer"),
        ),
        (
            SegmentKind::DpComm,
            comm_term("dp", "DP / ZeRO / FSDP communication", &dp_kinds, "gradient reduction and parameter gathers"),
        ),
        (
            SegmentKind::PpComm,
            comm_term("pp", "PP send/recv", &[GroupKind::Pp], "activations and their gradients between stages"),
        ),
        (
            SegmentKind::Bubble,
            plain(
                "time.bubble",
                "Pipeline bubble",
                s.bubble,
                "overhead_vs_ideal(schedule, p, m, v) × m · t_micro-batch",
                "Narayanan et al. 2021: (p−1)/m for 1F1B, ÷v interleaved",
            ),
        ),
        (
            SegmentKind::Optimizer,
            plain(
                "time.optimizer",
                "Optimizer step",
                s.optimizer,
                "local params × HBM bytes per param / HBM bandwidth",
                "Adam step is HBM-bound",
            ),
        ),
    ];
    let segments = stacked(items);

    let placement = step.placement(&scenario.layout);
    let volume: Vec<VolumeRow> = cost
        .comms
        .iter()
        .map(|i| {
            let (a, b) = domain_bytes(i.op, i.message_bytes, placement.group(i.group));
            VolumeRow {
                op: i.op,
                purpose: i.purpose,
                group: i.group,
                domain: i.domain,
                bus_bytes_per_step: i.bus_bytes_per_step,
                intra_node_bytes: a * i.calls_per_step,
                inter_node_bytes: b * i.calls_per_step,
            }
        })
        .collect();
    let volume_by_op = volume_by_op(&volume);
    StepBreakdown {
        segments,
        total_s: s.total,
        intra_node_bytes: volume.iter().map(|r| r.intra_node_bytes).sum(),
        inter_node_bytes: volume.iter().map(|r| r.inter_node_bytes).sum(),
        volume,
        volume_by_op,
        intra_node_link: scenario.cluster.gpu.intra_node_link().name().to_string(),
    }
}
