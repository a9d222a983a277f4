//! The model's parts against published micro-benchmarks (`validation/parts/`): collectives
//! (nccl-tests bus bandwidth by size, GPUs and nodes), single GEMMs by shape, attention kernels
//! by sequence length and HBM streaming, each row cited. Each part is priced by the same code
//! the step model uses ([`CommModel::time_s`], [`GemmEfficiency`], the attention rate of
//! [`crate::time::cost`], the HBM streaming share), so a term that misses here misses in every
//! step it enters. A row the model cannot express (a GPU without a preset, a network other than
//! InfiniBand or NVLink, a size not stated) is kept as not representable, with the reason.

use serde::{Deserialize, Serialize};

use crate::edges::validation::{
    dataset_gpu_preset, error_stats, parse_rows, summarize_by_source, tally_reason, GroupSummary,
    ReasonTally,
};
use crate::input::collective::Collective;
use crate::input::gemm_efficiency::GemmEfficiency;
use crate::input::hardware::{gpu_preset, Cluster, GpuSpec};
use crate::parallel::topology::{Domain, GroupKind, GroupPlacement};
use crate::resolve::validate::FieldError;
use crate::time::collectives::CommModel;
use crate::time::cost::CostOptions;

/// The built-in datasets, by part.
pub const PARTS_JSON: [(Part, &str); 4] = [
    (
        Part::Collective,
        include_str!("../../../validation/parts/collectives.json"),
    ),
    (
        Part::Gemm,
        include_str!("../../../validation/parts/gemm.json"),
    ),
    (
        Part::Attention,
        include_str!("../../../validation/parts/attention.json"),
    ),
    (
        Part::Hbm,
        include_str!("../../../validation/parts/hbm.json"),
    ),
];

/// A part of the step model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// A collective's bus bandwidth (nccl-tests).
    Collective,
    /// One GEMM's TFLOP/s.
    Gemm,
    /// An attention kernel's TFLOP/s.
    Attention,
    /// HBM streaming bandwidth.
    Hbm,
}

impl Part {
    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            Part::Collective => "collectives",
            Part::Gemm => "gemm",
            Part::Attention => "attention",
            Part::Hbm => "hbm",
        }
    }
}

/// A published measurement of one part. Fields a part does not use are absent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartRow {
    /// Stable id.
    pub id: String,
    /// Where it comes from, exactly.
    pub source: String,
    /// The GPU as the source names it.
    pub gpu_type: String,
    /// Collectives: nodes.
    #[serde(default)]
    pub nodes: Option<u64>,
    /// Collectives: GPUs per node.
    #[serde(default)]
    pub gpus_per_node: Option<u64>,
    /// Collectives: the network (`nvlink-only`, `ib-ndr-400x8`, `efa-3200`…).
    #[serde(default)]
    pub network: Option<String>,
    /// Collectives: `all_reduce`, `all_gather`, `reduce_scatter`, `alltoall`.
    #[serde(default)]
    pub op: Option<String>,
    /// Collectives: nccl-tests size, bytes.
    #[serde(default)]
    pub bytes: Option<f64>,
    /// Collectives: measured bus bandwidth, GB/s.
    #[serde(default)]
    pub busbw_gb_s: Option<f64>,
    /// GEMM and attention: `bf16`, `fp16`, `fp8`.
    #[serde(default)]
    pub dtype: Option<String>,
    /// GEMM shape.
    #[serde(default)]
    pub m: Option<f64>,
    /// GEMM shape.
    #[serde(default)]
    pub n: Option<f64>,
    /// GEMM shape.
    #[serde(default)]
    pub k: Option<f64>,
    /// GEMM: batched GEMMs of the shape one call runs (XLA's `b`); 1 when absent.
    #[serde(default)]
    pub batch: Option<f64>,
    /// GEMM and attention: measured TFLOP/s.
    #[serde(default)]
    pub tflops: Option<f64>,
    /// Attention: kernel.
    #[serde(default)]
    pub kernel: Option<String>,
    /// Attention: sequence length.
    #[serde(default)]
    pub seq_len: Option<f64>,
    /// Attention: causal mask (FLOPs then counted on the causal half).
    #[serde(default)]
    pub causal: Option<bool>,
    /// Attention: `fwd`, `bwd`, `fwd+bwd`.
    #[serde(default)]
    pub direction: Option<String>,
    /// HBM: the benchmark kernel.
    #[serde(default)]
    pub benchmark: Option<String>,
    /// HBM: measured bytes per second.
    #[serde(default)]
    pub bytes_per_s: Option<f64>,
    /// What the source leaves unsaid.
    #[serde(default)]
    pub notes: String,
    /// Other keys are kept and ignored.
    #[serde(flatten)]
    pub other: std::collections::BTreeMap<String, serde_json::Value>,
}

/// One row set against the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartResult {
    /// Row id.
    pub id: String,
    /// Which part.
    pub part: Part,
    /// Source.
    pub source: String,
    /// The measurement (GB/s, TFLOP/s or TB/s).
    pub measured: f64,
    /// The model's figure in the same unit, when representable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<f64>,
    /// `predicted / measured − 1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_error: Option<f64>,
    /// How the model priced it (algorithm, curve point…).
    pub how: String,
    /// Why it is not representable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_representable: Option<String>,
}

/// Every part's results and summaries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartsReport {
    /// One result per row, by part then dataset order.
    pub rows: Vec<PartResult>,
    /// Summary per part.
    pub by_part: Vec<GroupSummary>,
    /// Summary per part and source.
    pub by_source: Vec<GroupSummary>,
}

fn preset_of(row: &PartRow) -> Result<GpuSpec, String> {
    let id = dataset_gpu_preset(&row.gpu_type)
        .ok_or_else(|| format!("no GPU preset for gpu_type '{}'", row.gpu_type))?;
    gpu_preset(&id).ok_or_else(|| format!("GPU preset '{id}' is missing"))
}

fn need(v: Option<f64>, name: &str) -> Result<f64, String> {
    v.filter(|x| x.is_finite() && *x > 0.0)
        .ok_or_else(|| format!("{name} is not stated"))
}

/// A collective's bus bandwidth as [`CommModel::time_s`] prices it on the preset's cluster.
fn predict_collective(row: &PartRow) -> Result<(f64, f64, String), String> {
    let gpu = preset_of(row)?;
    let measured = need(row.busbw_gb_s, "busbw_gb_s")?;
    let bytes = need(row.bytes, "bytes")?;
    let op_id = row.op.as_deref().unwrap_or("");
    let op = Collective::from_id(op_id).ok_or_else(|| format!("op '{op_id}' is unknown"))?;
    let network = row.network.as_deref().unwrap_or("");
    let nvlink = network.starts_with("nvlink") || network.starts_with("xgmi");
    // The presets describe InfiniBand (one NIC per GPU) or the NVLink domain; EFA, TCPXO and
    // RoCE run other NCCL net plugins with their own latencies and rates.
    if !nvlink && !network.starts_with("ib-") {
        return Err(format!("network '{network}' is not InfiniBand or NVLink: the presets describe one InfiniBand NIC per GPU"));
    }
    let nodes = row.nodes.unwrap_or(1).max(1);
    let size = nodes * row.gpus_per_node.unwrap_or(1).max(1);
    let domain_gpus = u64::from(gpu.gpus_per_node.max(1));
    let cluster = Cluster::of(gpu, u32::try_from(size.div_ceil(domain_gpus)).unwrap_or(1));
    let comm = CommModel::assumed(&cluster);
    let (per_node, group_nodes, domain) = if size <= domain_gpus {
        (size, 1, Domain::IntraNode)
    } else {
        let k = domain_gpus.min(size);
        (k, size.div_ceil(k), Domain::Hierarchical)
    };
    let g = GroupPlacement {
        kind: GroupKind::DpCp,
        size,
        per_node,
        nodes: group_nodes,
        domain,
    };
    let t = comm.time_s(op, bytes, &g);
    if t <= 0.0 || !t.is_finite() {
        return Err("the model prices no time for it".to_string());
    }
    let busbw = bytes * op.busbw_factor(size) / t / 1e9;
    let how = match comm.nccl_time_s(op, bytes, &g) {
        Some(_) => format!("NCCL tuner model, {size} ranks, {group_nodes} node(s) × {per_node}"),
        None => format!("α–β with the link's measured share, {size} ranks"),
    };
    Ok((measured, busbw, how))
}

/// One GEMM's rate: the datasheet peak of its dtype × the GEMM curve at its smallest dimension
/// × the GPU's BF16 or FP8 share × what the power limit leaves.
fn predict_gemm(row: &PartRow) -> Result<(f64, f64, String), String> {
    let gpu = preset_of(row)?;
    let measured = need(row.tflops, "tflops")?;
    let d = need(row.m, "m")?
        .min(need(row.n, "n")?)
        .min(need(row.k, "k")?);
    let curve = GemmEfficiency::default();
    let shares = &gpu.traits().compute;
    let power = shares.tensor_fraction_at_power_limit;
    let bf16 = shares.bf16_gemm_relative_to_h100;
    let (peak, share) = match row.dtype.as_deref() {
        Some("fp8") if gpu.fp8_flops_per_s > 0.0 => {
            (gpu.fp8_flops_per_s, bf16 * shares.fp8_gemm_relative_to_bf16)
        }
        Some("fp8") => return Err(format!("{} has no FP8 tensor cores", gpu.id)),
        Some("bf16" | "fp16") => (gpu.bf16_flops_per_s, bf16),
        other => return Err(format!("dtype {other:?} is not bf16, fp16 or fp8")),
    };
    let eff = curve.at(d) * share;
    let fp8 = row.dtype.as_deref() == Some("fp8");
    let batch = row.batch.unwrap_or(1.0);
    let (m, n, k) = (need(row.m, "m")?, need(row.n, "n")?, need(row.k, "k")?);
    let default_hbm = CostOptions::default().hbm_achievable_fraction;
    if let Some(unit) = crate::time::gemm_shape::GemmUnit::for_gpu(&gpu, fp8, default_hbm) {
        let shape = crate::time::gemm_shape::GemmShape {
            m,
            n,
            k,
            groups: batch,
        };
        let t = crate::time::gemm_shape::gemm_time(&shape, &unit);
        let predicted = 2.0 * m * n * k * batch / t.seconds / 1e12;
        return Ok((
            measured,
            predicted,
            format!(
                "{}×{} tiles, {:.0} wave(s) on {:.0} SMs, {} of {:.1} µs",
                t.tile.m,
                t.tile.n,
                t.waves,
                unit.multiprocessors,
                if t.memory_s > t.compute_s {
                    "bytes"
                } else {
                    "tiles"
                },
                t.seconds * 1e6
            ),
        ));
    }
    let predicted = peak * eff * power / 1e12;
    Ok((
        measured,
        predicted,
        format!(
            "curve at d = {d:.0}: {eff:.3} of {:.0} TFLOP/s",
            peak / 1e12
        ),
    ))
}

/// An attention kernel's rate as the step model prices it: the full `s × s` FLOPs at
/// `attention_efficiency` of the BF16 peak × fused attention's length share; a causal
/// benchmark counts half of those FLOPs in the same time.
fn predict_attention(row: &PartRow) -> Result<(f64, f64, String), String> {
    let gpu = preset_of(row)?;
    let measured = need(row.tflops, "tflops")?;
    let seq = need(row.seq_len, "seq_len")?;
    let kernel = row.kernel.as_deref().unwrap_or("");
    if !kernel.starts_with("flash-attention") && kernel != "cudnn" {
        return Err(format!("kernel '{kernel}' is not a fused attention kernel"));
    }
    let opts = CostOptions::default();
    let share = crate::input::attention_length::attention_length_share(seq);
    let rate = gpu.bf16_flops_per_s
        * gpu.traits().compute.tensor_fraction_at_power_limit
        * opts.attention_efficiency
        * share;
    let counted = match row.causal {
        Some(true) => 0.5,
        Some(false) => 1.0,
        None => return Err("causal is not stated".to_string()),
    };
    Ok((
        measured,
        rate * counted / 1e12,
        format!(
            "{} of the BF16 peak × length share {share:.3}{}",
            opts.attention_efficiency,
            if counted < 1.0 {
                ", causal half counted"
            } else {
                ""
            }
        ),
    ))
}

/// HBM streaming, TB/s: the datasheet bandwidth × the measured share (or the default 0.9).
fn predict_hbm(row: &PartRow) -> Result<(f64, f64, String), String> {
    let gpu = preset_of(row)?;
    let measured = need(row.bytes_per_s, "bytes_per_s")?;
    let share = gpu
        .traits()
        .compute
        .hbm_stream_fraction
        .unwrap_or(CostOptions::default().hbm_achievable_fraction);
    Ok((
        measured / 1e12,
        gpu.hbm_bytes_per_s * share / 1e12,
        format!("{share:.3} of {:.2} TB/s", gpu.hbm_bytes_per_s / 1e12),
    ))
}

fn result_of(part: Part, row: &PartRow) -> PartResult {
    let priced = match part {
        Part::Collective => predict_collective(row),
        Part::Gemm => predict_gemm(row),
        Part::Attention => predict_attention(row),
        Part::Hbm => predict_hbm(row),
    };
    let measured = [row.busbw_gb_s, row.tflops, row.bytes_per_s]
        .into_iter()
        .flatten()
        .next()
        .unwrap_or(0.0);
    let mut r = PartResult {
        id: row.id.clone(),
        part,
        source: row.source.clone(),
        measured,
        predicted: None,
        relative_error: None,
        how: String::new(),
        not_representable: None,
    };
    match priced {
        Ok((m, p, how)) => {
            r.measured = m;
            r.predicted = Some(p);
            r.relative_error = Some(p / m - 1.0);
            r.how = how;
        }
        Err(why) => r.not_representable = Some(why),
    }
    r
}

fn summarize_part(group: &str, rows: &[&PartResult]) -> GroupSummary {
    let errors: Vec<f64> = rows.iter().filter_map(|r| r.relative_error).collect();
    let mut tallies: Vec<ReasonTally> = Vec::new();
    for r in rows {
        if let Some(why) = &r.not_representable {
            tally_reason(&mut tallies, why, &r.id);
        }
    }
    GroupSummary {
        group: group.to_string(),
        stats: error_stats(&errors, rows.len() - errors.len()),
        not_representable: tallies,
    }
}

/// The short name of a row's source: its repository or paper, without commit and place.
fn source_name(source: &str) -> &str {
    let s = source.trim_start_matches("github:");
    let end = s.find(['@', ',', '(']).unwrap_or(s.len());
    s[..end].trim()
}

/// Validates each part's dataset (`datasets`: part and JSON text).
pub fn validate_parts(datasets: &[(Part, &str)]) -> Result<PartsReport, FieldError> {
    let mut rows = Vec::new();
    for (part, json) in datasets {
        let parsed: Vec<PartRow> = parse_rows(json)
            .map_err(|e| FieldError::new(&format!("{}{}", part.id(), e.field), e.message))?;
        rows.extend(parsed.iter().map(|r| result_of(*part, r)));
    }
    let by_part = [Part::Collective, Part::Gemm, Part::Attention, Part::Hbm]
        .into_iter()
        .map(|p| {
            let group: Vec<&PartResult> = rows.iter().filter(|r| r.part == p).collect();
            summarize_part(p.id(), &group)
        })
        .collect();
    let mut by_source = Vec::new();
    for p in [Part::Collective, Part::Gemm, Part::Attention, Part::Hbm] {
        let of_part: Vec<&PartResult> = rows.iter().filter(|r| r.part == p).collect();
        by_source.extend(summarize_by_source(
            &of_part,
            |r| source_name(&r.source),
            |name, group| {
                let group: Vec<&PartResult> = group.iter().map(|r| **r).collect();
                summarize_part(&format!("{}: {name}", p.id()), &group)
            },
        ));
    }
    Ok(PartsReport {
        rows,
        by_part,
        by_source,
    })
}
