//! A mapped row evaluated and its quantity compared with the prediction ([`Comparison`],
//! [`Breakdown`]) under the FLOP convention of its source ([`conventions`]); one row
//! ([`validate_run`]) and a whole dataset ([`validate_runs`], [`run_validation`]).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::evaluate::evaluate;
use crate::input::hardware::GIB;
use crate::parallel::topology::GroupKind;
use crate::resolve::validate::FieldError;
use crate::time::cost::{flops_per_token, CostOptions, StepModel};
use crate::time::layer_time::decoder_layer_seconds;

use super::dataset::{parse_runs, FirstSeen, FlopConvention, PublishedRun, Quantity};
use super::kv_pool::compare_kv_pool;
use super::mapping::{map_run, MappedRun};
use super::search_rank::{search_rank, SearchRank};
use super::summary::{summarize, ValidationReport};

/// The step-time breakdown behind a prediction (seconds unless named otherwise).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Breakdown {
    /// Step time.
    pub step_s: f64,
    /// Forward + backward (+ recompute) over all micro-batches of one stage.
    pub compute_s: f64,
    /// Of which recomputation.
    pub recompute_s: f64,
    /// Pipeline bubble.
    pub bubble_s: f64,
    /// Optimizer step.
    pub optimizer_s: f64,
    /// Exposed communication by group (`tp`, `cp`, `ep`, `dp`, `pp`, `dp_cp`, `expert_dp`), non-zero only.
    pub exposed_comm_s: BTreeMap<String, f64>,
    /// Sum of `exposed_comm_s`.
    pub exposed_comm_total_s: f64,
    /// Micro-batches per step.
    pub micro_batches: f64,
    /// GEMM efficiency used.
    pub gemm_efficiency: f64,
    /// Predicted tokens/s per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Predicted MFU.
    pub mfu: f64,
    /// Predicted HFU.
    pub hfu: f64,
    /// Model FLOPs per token as meshplan counts them.
    pub model_flops_per_token: f64,
    /// Hardware FLOPs per token (recompute counted).
    pub hardware_flops_per_token: f64,
    /// Peak compute rate used, TFLOP/s.
    pub peak_tflops: f64,
    /// Predicted peak memory per GPU, GiB (2^30 bytes).
    pub peak_memory_gib: f64,
}

/// A prediction set against its measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// What the model predicts for the row's quantity.
    pub predicted: f64,
    /// `predicted / measured − 1`.
    pub relative_error: f64,
    /// How FLOPs were counted (TFLOP/s and MFU rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flop_convention: Option<String>,
    /// Where the prediction's seconds go.
    pub breakdown: Breakdown,
    /// Layout rules the row's layout breaks (the model prices it anyway, with balanced stages).
    pub rule_violations: Vec<String>,
}

/// The result of one row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowResult {
    /// Row id.
    pub id: String,
    /// Source.
    pub source: String,
    /// Quantity compared.
    pub quantity: Quantity,
    /// The published value.
    pub measured: f64,
    /// Model name as published.
    pub model_name: String,
    /// Where the shapes came from, when mapped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_source: Option<String>,
    /// Parameters as published, billions.
    pub params_b_published: f64,
    /// Parameters of the mapped model, billions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_b_model: Option<f64>,
    /// The published layout in words.
    pub layout: String,
    /// Defaults taken for unsaid fields.
    pub defaults: Vec<String>,
    /// Other mapping choices.
    pub notes: Vec<String>,
    /// The comparison, when the row is representable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// Why the model cannot express the row, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_representable: Option<String>,
    /// The published mesh's rank in the search, when searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchRank>,
    /// The row's error when it first entered the repository, when the dataset records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<FirstSeen>,
    /// Which peak a memory row printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_kind: Option<super::dataset::MemoryKind>,
}

impl RowResult {
    /// `|predicted / measured − 1|`, when compared.
    pub fn abs_error(&self) -> Option<f64> {
        self.comparison.as_ref().map(|c| c.relative_error.abs())
    }
}

/// The conventions every comparison follows.
pub fn conventions() -> Vec<String> {
    [
        "error = predicted / measured − 1; summaries are over |error|: median and p90 by linear interpolation between order statistics (numpy's default), max, and the share of rows within 10% and 25%",
        "every prediction is planner_core::evaluate::evaluate on the row's scenario with the default CostOptions and datasheet links (no calibration)",
        "tokens_per_s_per_gpu: global batch × seq_len / predicted step time / GPUs; iteration_time_s: predicted step time",
        "tflops_per_gpu_reported with flop_convention model (or none stated): predicted tokens/s per GPU × meshplan's model FLOPs per token, 3 × forward = 6·N_matmul + the full s × s attention (non-causal, as PaLM and Megatron before 2025-03 count MFU)",
        "tflops_per_gpu_reported and mfu of MBridge 25.09 rows: the attention core on its causal half, as its formula counts it (Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py, seq_length / hidden_size / 2; Megatron-LM !2789)",
        "tflops_per_gpu_reported with hardware_incl_recompute: predicted tokens/s per GPU × hardware FLOPs per token (model FLOPs + the recomputed forward: all of it for full recompute, the attention core for selective)",
        "tflops_per_gpu_reported with megatron_examples: counted as model FLOPs too; that formula counts 7–13% more per token, which stays in these rows' error",
        "mfu: model convention → predicted MFU (model FLOPs over the datasheet peak of the compute dtype: BF16, or FP8 for fp8 rows); hardware_incl_recompute → predicted HFU",
        "peak_memory_gib: predicted torch.cuda.max_memory_reserved over the pipeline stages / 2^30 (torchtitan logs max_reserved_gib), or max_memory_allocated for rows whose memory_kind is allocated; torchtitan rows use torchtitan's loss semantics, rows naming a framework that framework's",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Whether `source` counts the attention core on its causal half in the model FLOPs behind its
/// TFLOP/s and MFU. Megatron-Bridge 25.09 does: src/megatron/bridge/training/utils/flop_utils.py
/// `transformer_flops` adds `seq_length / hidden_size / 2` ("Only half of the attention matrix
/// is non-zero and needs to be multiplied with V"), MLA's core attention `/ 2` likewise, as
/// Megatron-LM's `num_floating_point_operations` does since !2789 (2025-03-06, "Fixes in number
/// of floating-point operation estimates for MoE and attention layer"); each of its six rows'
/// TFLOP/s ÷ tokens/s is that count (Qwen3-30B-A3B: 2.297e10 FLOP per token against the
/// formula's 2.301e10). The sources published before it count the full `s × s` (NeMo 24.07's
/// TFLOP/s ÷ tokens/s is meshplan's full count to 0.1%).
fn counts_causal_attention(source: &str) -> bool {
    source == "MBridge 25.09"
}

/// Evaluates one mapped row and compares its quantity.
fn compare(run: &PublishedRun, mapped: &MappedRun) -> Result<(Comparison, f64), String> {
    let sc = &mapped.scenario;
    let eval = evaluate(sc).map_err(|e| format!("the scenario does not validate: {e}"))?;
    let step = &eval.step;
    let step_model = StepModel::for_scenario(&eval.model, sc, CostOptions::default());
    let flops = step_model.flops;
    let s = &step.seconds;
    let mut exposed = BTreeMap::new();
    for kind in GroupKind::ALL {
        let e = s.exposed_comm[kind.index()];
        if e > 0.0 {
            exposed.insert(kind.id().to_string(), e);
        }
    }
    let model_fpt = flops.model();
    let hardware_fpt = step_model.hardware_flops_per_token(sc.layout.recompute, sc.layout.tp);
    // The model FLOPs the row's source counts: meshplan's, or with the attention core on its
    // causal half where the source's formula counts it so (`counts_causal_attention`).
    let causal = counts_causal_attention(&run.source);
    let source_model_fpt = if causal {
        flops_per_token(&eval.model, sc.training.seq_len, true).model()
    } else {
        model_fpt
    };
    let breakdown = Breakdown {
        step_s: s.total,
        compute_s: s.compute,
        recompute_s: s.recompute,
        bubble_s: s.bubble,
        optimizer_s: s.optimizer,
        exposed_comm_total_s: s.exposed_comm_total(),
        exposed_comm_s: exposed,
        micro_batches: s.micro_batches,
        gemm_efficiency: step.gemm_efficiency,
        tokens_per_s_per_gpu: step.tokens_per_s_per_gpu,
        mfu: step.mfu,
        hfu: step.hfu,
        model_flops_per_token: model_fpt,
        hardware_flops_per_token: hardware_fpt,
        peak_tflops: step_model.peak_flops_per_s / 1e12,
        // torchtitan train.py logs `max_reserved_gib` (torch.cuda.max_memory_reserved):
        // the reserved peak, without the CUDA context and NCCL buffers nvidia-smi adds; a row
        // that printed `max_memory_allocated` is compared with the allocated peak.
        peak_memory_gib: match run.memory_kind {
            Some(super::dataset::MemoryKind::Allocated) => eval.training.peak_allocated_bytes,
            Some(super::dataset::MemoryKind::Reserved) | None => eval.training.peak_reserved_bytes,
        } / GIB,
    };
    let convention = run.flop_convention;
    let (predicted, flop_convention) = match run.quantity {
        Quantity::TokensPerSPerGpu => (step.tokens_per_s_per_gpu, None),
        Quantity::IterationTimeS => (s.total, None),
        Quantity::PeakMemoryGib => (breakdown.peak_memory_gib, None),
        Quantity::Mfu => match convention {
            Some(FlopConvention::HardwareInclRecompute) => (
                step.hfu,
                Some("HFU: hardware FLOPs (recompute counted) over the datasheet peak".to_string()),
            ),
            _ if causal => (
                step.mfu * source_model_fpt / model_fpt,
                Some(
                    "MFU: model FLOPs with the attention core on its causal half (Megatron-Bridge flop_utils.py) over the datasheet peak"
                        .to_string(),
                ),
            ),
            _ => (
                step.mfu,
                Some("MFU: meshplan model FLOPs over the datasheet peak".to_string()),
            ),
        },
        Quantity::TflopsPerGpuReported => match convention {
            Some(FlopConvention::HardwareInclRecompute) => (
                step.tokens_per_s_per_gpu * hardware_fpt / 1e12,
                Some(format!(
                    "hardware FLOPs incl. recompute: {hardware_fpt:.4e} per token"
                )),
            ),
            Some(FlopConvention::MegatronExamples) => (
                step.tokens_per_s_per_gpu * model_fpt / 1e12,
                Some(format!(
                    "meshplan model FLOPs ({model_fpt:.4e} per token) for Megatron's examples formula, which counts 7–13% more"
                )),
            ),
            Some(FlopConvention::Model) | None if causal => (
                step.tokens_per_s_per_gpu * source_model_fpt / 1e12,
                Some(format!(
                    "model FLOPs with the attention core on its causal half, as Megatron-Bridge's flop_utils.py counts them: {source_model_fpt:.4e} per token"
                )),
            ),
            Some(FlopConvention::Model) | None => (
                step.tokens_per_s_per_gpu * model_fpt / 1e12,
                Some(format!("meshplan model FLOPs: {model_fpt:.4e} per token")),
            ),
        },
        // One decoder layer's forward + backward on one micro-batch: its marginal cost in the
        // step (time/layer_time.rs), with its TP/CP/EP communication, in milliseconds.
        Quantity::PerLayerFwdBwdMs => {
            let layer = decoder_layer_seconds(&eval.model, sc, &sc.layout, CostOptions::default())
                .map_err(|e| e.to_string())?;
            (layer.fwd_bwd_seconds * 1e3, None)
        }
        Quantity::KvTokens | Quantity::KvMemoryGib => {
            return Err("a KV-pool row is compared by compare_kv_pool".to_string())
        }
    };
    if !predicted.is_finite() || predicted <= 0.0 {
        return Err(format!(
            "the prediction is {predicted}, not a positive number"
        ));
    }
    // Uneven stages whose split the source leaves unsaid are priced as balanced ones and
    // flagged (rows whose source names its split carry it: `published_split`); any other
    // broken rule means the model cannot place the layout.
    let mut rule_violations = Vec::new();
    for r in eval.rules.iter().filter(|r| r.is_error()) {
        if r.rule == "layers_divisible_by_pp" || r.rule == "stage_split_fits_layers" {
            rule_violations.push(format!("{}: {}", r.rule, r.message));
        } else {
            return Err(format!(
                "the published layout breaks the model's rule {}: {}",
                r.rule, r.message
            ));
        }
    }
    let params_b = eval.params.total / 1e9;
    Ok((
        Comparison {
            predicted,
            relative_error: predicted / run.value - 1.0,
            flop_convention,
            breakdown,
            rule_violations,
        },
        params_b,
    ))
}

fn layout_words(run: &PublishedRun) -> String {
    let mut s = format!(
        "{} × {}: tp {} pp {} cp {} ep {} dp {}",
        run.gpus, run.gpu_type, run.tp, run.pp, run.cp, run.ep, run.dp
    );
    if run.fsdp {
        s.push_str(" fsdp");
    }
    if let Some(v) = run.vp {
        s.push_str(&format!(" vp {v}"));
    }
    s
}

/// What a validation run does besides comparing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidationOptions {
    /// Run the mesh search for every representable row (slow in debug builds).
    pub search: bool,
}

/// One row mapped, evaluated and compared (no search), with the mapped scenario
/// when the row is representable. The page runs this a few rows per frame.
pub fn validate_run(run: &PublishedRun) -> (RowResult, Option<MappedRun>) {
    let mut row = RowResult {
        id: run.id.clone(),
        source: run.source.clone(),
        quantity: run.quantity,
        measured: run.value,
        model_name: run.model_name.clone(),
        model_source: None,
        params_b_published: run.params_b,
        params_b_model: None,
        layout: layout_words(run),
        defaults: Vec::new(),
        notes: Vec::new(),
        comparison: None,
        not_representable: None,
        search: None,
        first_seen: run.first_seen.clone(),
        memory_kind: run.memory_kind,
    };
    if run.quantity.is_kv_pool() {
        match compare_kv_pool(run) {
            Ok((c, notes, model_source)) => {
                row.comparison = Some(c);
                row.notes = notes;
                row.model_source = Some(model_source);
            }
            Err(reason) => row.not_representable = Some(reason),
        }
        return (row, None);
    }
    match map_run(run) {
        Err(reason) => {
            row.not_representable = Some(reason);
            (row, None)
        }
        Ok(mapped) => {
            row.model_source = Some(mapped.model_source.clone());
            row.defaults = mapped.defaults.clone();
            row.notes = mapped.notes.clone();
            match compare(run, &mapped) {
                Ok((c, params_b)) => {
                    row.comparison = Some(c);
                    row.params_b_model = Some(params_b);
                    if run.params_b > 0.0 && (params_b / run.params_b - 1.0).abs() > 0.05 {
                        row.notes.push(format!(
                            "the mapped model has {params_b:.2}B parameters, the source publishes {}B",
                            run.params_b
                        ));
                    }
                }
                Err(reason) => row.not_representable = Some(reason),
            }
            (row, Some(mapped))
        }
    }
}

/// Validates every row of `runs`.
pub fn validate_runs(runs: &[PublishedRun], options: ValidationOptions) -> ValidationReport {
    let mut rows = Vec::with_capacity(runs.len());
    let mut searches: HashMap<String, Result<SearchRank, String>> = HashMap::new();
    for run in runs {
        let (mut row, mapped) = validate_run(run);
        // A per-layer row has no step to lay out: its batch is one micro-batch (map_run).
        let whole_step = run.quantity != Quantity::PerLayerFwdBwdMs;
        if let Some(mapped) =
            mapped.filter(|_| options.search && whole_step && row.comparison.is_some())
        {
            let key = serde_json::to_string(&(
                &mapped.scenario.model,
                &mapped.scenario.precision,
                &mapped.scenario.cluster,
                &mapped.scenario.training,
                &mapped.scenario.activations,
                [mapped.scenario.layout.dp, run.tp, run.pp, run.cp, run.ep],
            ))
            .unwrap_or_else(|_| run.id.clone());
            let found = searches
                .entry(key)
                .or_insert_with(|| search_rank(run, &mapped.scenario));
            match found {
                Ok(rank) => row.search = Some(rank.clone()),
                Err(e) => row.notes.push(format!("search failed: {e}")),
            }
        }
        rows.push(row);
    }
    summarize(runs.len(), rows, options.search.then_some(searches.len()))
}

/// Parses `json` and validates every row.
pub fn run_validation(
    json: &str,
    options: ValidationOptions,
) -> Result<ValidationReport, FieldError> {
    let runs = parse_runs(json)?;
    Ok(validate_runs(&runs, options))
}
