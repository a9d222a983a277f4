//! Validation of the step-time model against published training runs
//! (`validation/public-runs.json`, described in `validation/README.md`).
//!
//! Pure: the caller passes the dataset's text. Each row is mapped to a
//! [`Scenario`] (every field the source leaves unsaid takes a default that the
//! row's result lists), evaluated with [`crate::evaluate::evaluate`], and its
//! published quantity compared with the prediction. A row the model cannot
//! express is kept, as "not representable", with the precise reason. Nothing
//! here is fitted to the rows: this module measures the model, it does not tune it.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::evaluate::evaluate;
use crate::input::framework::Framework;
use crate::input::hardware::{gpu_preset, gpu_preset_for_device, Cluster, GIB};
use crate::input::kernels::Kernels;
use crate::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use crate::input::model::{FfnKind, ModelSpec, MoeSpec, NormKind};
use crate::input::moe_routing::MoeRouting;
use crate::input::overlap::{OverlapChoice, Switch};
use crate::input::precision::{Precision, PrecisionRecipe};
use crate::input::scenario::{
    ActivationOptions, ModelChoice, Overheads, Scenario, Serving, Training, SCENARIO_VERSION,
};
use crate::input::stage_split::StageSplit;
use crate::parallel::topology::GroupKind;
use crate::resolve::presets::{model_preset, model_presets};
use crate::resolve::validate::FieldError;
use crate::search::mesh::{
    search_scenario, Knobs, MeshDims, ReasonCount, RejectReason, SearchSpace,
};
use crate::time::cost::{flops_per_token, CostOptions, StepModel};
use crate::time::layer_time::decoder_layer_seconds;

/// Largest dataset read, bytes (the published set is about 100 KB).
pub const MAX_DATASET_BYTES: usize = 8 << 20;

/// Published shapes of a model (`model_shape`); empty for a known public model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelShape {
    /// Decoder layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<u32>,
    /// Hidden size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<u32>,
    /// Query heads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heads: Option<u32>,
    /// Key/value heads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_heads: Option<u32>,
    /// FFN width (of one expert for MoE models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ffn: Option<u32>,
    /// Vocabulary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocab: Option<u32>,
    /// Routed experts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experts: Option<u32>,
    /// Experts per token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
}

/// What a row measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// Tokens per second per GPU.
    TokensPerSPerGpu,
    /// Seconds per optimizer step.
    IterationTimeS,
    /// Model FLOPs utilisation (a fraction).
    Mfu,
    /// TFLOP/s per GPU as the source counts FLOPs ([`FlopConvention`]).
    TflopsPerGpuReported,
    /// Peak memory per GPU, GiB (torch peak, max over ranks).
    PeakMemoryGib,
    /// Forward + backward time of one transformer layer, ms.
    PerLayerFwdBwdMs,
    /// Tokens a serving engine's KV pool holds per replica (as the engine logs it).
    KvTokens,
    /// KV-pool bytes per GPU a serving engine reports, GiB.
    KvMemoryGib,
}

impl Quantity {
    /// Every quantity, in report order.
    pub const ALL: [Quantity; 8] = [
        Quantity::TokensPerSPerGpu,
        Quantity::IterationTimeS,
        Quantity::Mfu,
        Quantity::TflopsPerGpuReported,
        Quantity::PeakMemoryGib,
        Quantity::PerLayerFwdBwdMs,
        Quantity::KvTokens,
        Quantity::KvMemoryGib,
    ];

    /// The dataset's spelling.
    pub fn id(self) -> &'static str {
        match self {
            Quantity::TokensPerSPerGpu => "tokens_per_s_per_gpu",
            Quantity::IterationTimeS => "iteration_time_s",
            Quantity::Mfu => "mfu",
            Quantity::TflopsPerGpuReported => "tflops_per_gpu_reported",
            Quantity::PeakMemoryGib => "peak_memory_gib",
            Quantity::PerLayerFwdBwdMs => "per_layer_fwd_bwd_ms",
            Quantity::KvTokens => "kv_tokens",
            Quantity::KvMemoryGib => "kv_memory_gib",
        }
    }

    /// A serving engine's KV pool, not a training step.
    pub fn is_kv_pool(self) -> bool {
        matches!(self, Quantity::KvTokens | Quantity::KvMemoryGib)
    }
}

/// 16- or 8-bit training as the source names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunPrecision {
    /// FP16 mixed precision.
    Fp16,
    /// BF16 mixed precision.
    Bf16,
    /// FP8 GEMMs (Transformer Engine), BF16 elsewhere.
    Fp8,
}

/// The pipeline schedule as the source names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunSchedule {
    /// One stage per rank, one forward one backward.
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// Several stages per rank (interleaved 1F1B).
    Interleaved,
}

/// Recompute as the source names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunRecompute {
    /// No recomputation.
    None,
    /// Selective (attention core).
    Selective,
    /// Full layer.
    Full,
}

/// How the source counts the FLOPs behind its TFLOP/s or MFU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlopConvention {
    /// The recomputed forward counted (Narayanan et al. 2021, Eq. 3): hardware FLOPs.
    HardwareInclRecompute,
    /// Model FLOPs.
    Model,
    /// Megatron-LM `examples/llama` formula (7–13% above NeMo's for the same tokens/s).
    MegatronExamples,
}

/// The error a row had when it first entered the repository, before anyone working on
/// the model saw it (`validation/README.md`): the honest measure of the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstSeen {
    /// The commit whose `meshplan validate` scored the row.
    pub commit: String,
    /// `predicted / measured − 1` then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_error: Option<f64>,
    /// Why the row could not be compared then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_representable: Option<String>,
}

/// One published measurement (a row of `public-runs.json`). Keys this reader does not know
/// are kept in `other_keys`: such a row is reported as not representable, naming them,
/// and the rest of the file is still read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublishedRun {
    /// Stable id.
    pub id: String,
    /// Where the figure comes from.
    pub source: String,
    /// Dataset section letter.
    pub section: String,
    /// The model's name as the source prints it.
    pub model_name: String,
    /// Parameters as published, billions.
    pub params_b: f64,
    /// Shapes, when the name is not a known public model.
    pub model_shape: ModelShape,
    /// GPUs of the run.
    pub gpus: u32,
    /// `A100-80GB`, `H100-80GB`, `H100-96GB`, or any name [`dataset_gpu_preset`] reads.
    pub gpu_type: String,
    /// Tensor parallel.
    pub tp: u32,
    /// Pipeline parallel.
    pub pp: u32,
    /// Context parallel.
    pub cp: u32,
    /// Expert parallel.
    pub ep: u32,
    /// Data parallel.
    pub dp: u32,
    /// FSDP (ZeRO-3) over DP.
    pub fsdp: bool,
    /// ZeRO stage; `None` = the framework's default.
    pub zero_stage: Option<u8>,
    /// Virtual pipeline stages per rank; `None` = not stated.
    pub vp: Option<u32>,
    /// Tokens per sequence; `None` (a serving row) = not stated.
    #[serde(default)]
    pub seq_len: Option<u32>,
    /// Sequences per micro-batch; `None` = not stated.
    pub micro_batch: Option<u32>,
    /// Sequences per step; `None` = not stated.
    pub global_batch_seqs: Option<u32>,
    /// `None` = not stated.
    pub precision: Option<RunPrecision>,
    /// `None` = not stated.
    pub recompute: Option<RunRecompute>,
    /// `None` = not stated.
    pub sequence_parallel: Option<bool>,
    /// What was measured.
    pub quantity: Quantity,
    /// The measurement.
    pub value: f64,
    /// FLOP convention of TFLOP/s and MFU rows.
    pub flop_convention: Option<FlopConvention>,
    /// The source's layout differs from what the row lists.
    pub layout_mismatch: bool,
    /// What the source leaves unsaid.
    pub notes: String,
    /// The sequence length is the dataset's inference, not the source's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_len_assumed: Option<bool>,
    /// KV-cache dtype of a KV-pool row (`bf16`, `fp8`); none: the weights' serving dtype.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_dtype: Option<String>,
    /// Serving engine of a KV-pool row (`vllm`, `sglang`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The engine's memory fraction (vLLM `gpu_memory_utilization`, SGLang
    /// `mem_fraction_static`) as the source states it; none: the engine's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_fraction: Option<f64>,
    /// The row's error when it first entered the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<FirstSeen>,
    /// The pipeline schedule the source names; `None` = not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<RunSchedule>,
    /// Keys this reader does not know (the row is then not representable).
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_keys: BTreeMap<String, serde_json::Value>,
}

impl PublishedRun {
    /// Tokens per sequence of a training row (0 when unstated: [`map_run`] refuses those).
    pub fn seq(&self) -> u32 {
        self.seq_len.unwrap_or_default()
    }
}

/// Reads the dataset: a JSON array of [`PublishedRun`]. A type error, an unknown field
/// or an implausible value is refused with a message naming its JSON path (`[12].value`).
pub fn parse_runs(json: &str) -> Result<Vec<PublishedRun>, FieldError> {
    parse_checked_rows(json, check_run, |r: &PublishedRun| r.id.as_str())
}

/// [`parse_rows`], then `check` on each row and [`check_unique_id`] on its `id`.
pub fn parse_checked_rows<T: serde::de::DeserializeOwned>(
    json: &str,
    check: impl Fn(usize, &T) -> Result<(), FieldError>,
    id: impl Fn(&T) -> &str,
) -> Result<Vec<T>, FieldError> {
    let rows: Vec<T> = parse_rows(json)?;
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, r) in rows.iter().enumerate() {
        check(i, r)?;
        check_unique_id(&mut seen, i, id(r))?;
    }
    Ok(rows)
}

/// A dataset's JSON array of rows, at most [`MAX_DATASET_BYTES`]; a type error or an unknown
/// field is refused with a message naming its JSON path (`[12].value`).
pub fn parse_rows<T: serde::de::DeserializeOwned>(json: &str) -> Result<Vec<T>, FieldError> {
    if json.len() > MAX_DATASET_BYTES {
        return Err(FieldError::new(
            "dataset",
            format!("{} bytes, over {MAX_DATASET_BYTES}", json.len()),
        ));
    }
    let mut de = serde_json::Deserializer::from_str(json);
    let rows: Vec<T> = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path.is_empty() || path == "." {
            "dataset".to_string()
        } else {
            path
        };
        FieldError::new(&field, e.inner().to_string())
    })?;
    de.end()
        .map_err(|e| FieldError::new("dataset", e.to_string()))?;
    Ok(rows)
}

/// Refuses a row id seen before (`[i].id`); `seen` maps ids to their first row.
pub fn check_unique_id<'a>(
    seen: &mut HashMap<&'a str, usize>,
    i: usize,
    id: &'a str,
) -> Result<(), FieldError> {
    if id.is_empty() {
        return Err(FieldError::new(&format!("[{i}].id"), "is empty"));
    }
    match seen.insert(id, i) {
        Some(first) => Err(FieldError::new(
            &format!("[{i}].id"),
            format!("'{id}' repeats the id of row [{first}]"),
        )),
        None => Ok(()),
    }
}

/// Row `i`'s names pass [`crate::base::free_text::text_problem`] and its notes hold printable
/// characters only (they may run longer than a name); the error names `[i].field`.
pub fn check_row_text(i: usize, names: &[(&str, &str)], notes: &str) -> Result<(), FieldError> {
    for (name, text) in names {
        if let Some(problem) = crate::base::free_text::text_problem(text) {
            return Err(FieldError::new(&format!("[{i}].{name}"), problem));
        }
    }
    if let Some(c) = notes
        .chars()
        .find(|c| crate::base::free_text::is_forbidden_char(*c))
    {
        return Err(FieldError::new(
            &format!("[{i}].notes"),
            format!(
                "holds the non-printable character U+{:04X}; only printable characters are allowed",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

fn check_run(i: usize, r: &PublishedRun) -> Result<(), FieldError> {
    let field = |name: &str| format!("[{i}].{name}");
    check_row_text(
        i,
        &[
            ("id", &r.id),
            ("source", &r.source),
            ("section", &r.section),
            ("model_name", &r.model_name),
            ("gpu_type", &r.gpu_type),
        ],
        &r.notes,
    )?;
    crate::base::bounds::TRAINING_MEASUREMENT
        .check(r.value)
        .map_err(|m| FieldError::new(&field("value"), m))?;
    if let Some(f) = r.memory_fraction {
        if !(f > 0.0 && f <= 1.0) {
            return Err(FieldError::new(
                &field("memory_fraction"),
                format!("{f} is outside (0, 1]"),
            ));
        }
    }
    if !(r.params_b.is_finite() && r.params_b >= 0.0) {
        return Err(FieldError::new(
            &field("params_b"),
            format!("{} must be a non-negative finite number", r.params_b),
        ));
    }
    let max_gpus = u32::try_from(crate::resolve::validate::MAX_GPUS).unwrap_or(u32::MAX);
    for (name, v, max) in [
        ("gpus", r.gpus, max_gpus),
        ("tp", r.tp, max_gpus),
        ("pp", r.pp, max_gpus),
        ("cp", r.cp, max_gpus),
        ("ep", r.ep, max_gpus),
        ("dp", r.dp, max_gpus),
        (
            "seq_len",
            r.seq_len.unwrap_or(1),
            crate::resolve::validate::MAX_SEQ_LEN,
        ),
    ] {
        if v == 0 || v > max {
            return Err(FieldError::new(
                &field(name),
                format!("{v} is outside 1..={max}"),
            ));
        }
    }
    for (name, v) in [
        ("micro_batch", r.micro_batch),
        ("global_batch_seqs", r.global_batch_seqs),
        ("vp", r.vp),
    ] {
        if v == Some(0) {
            return Err(FieldError::new(&field(name), "0 is outside 1.."));
        }
    }
    if let Some(z) = r.zero_stage {
        if z > 3 {
            return Err(FieldError::new(
                &field("zero_stage"),
                format!("{z} is not a ZeRO stage (0..=3)"),
            ));
        }
    }
    let shape = &r.model_shape;
    for (name, v) in [
        ("layers", shape.layers),
        ("hidden", shape.hidden),
        ("heads", shape.heads),
        ("kv_heads", shape.kv_heads),
        ("ffn", shape.ffn),
        ("vocab", shape.vocab),
        ("experts", shape.experts),
        ("top_k", shape.top_k),
    ] {
        if v == Some(0) {
            return Err(FieldError::new(
                &field(&format!("model_shape.{name}")),
                "0 is outside 1..",
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Known public models without a preset: shapes from their published configs.

/// A Llama-style dense spec: the presets' own builder (SwiGLU, RMSNorm, RoPE, no biases, untied).
use crate::resolve::presets::llama as llama_like;

/// A GPT-style spec: GELU MLP, LayerNorm, biases, dropout, tied embeddings,
/// `positions` learned position rows (Megatron's GPT models).
fn gpt_like(
    name: &str,
    layers: u32,
    hidden: u32,
    heads: u32,
    ffn: u32,
    vocab: u32,
    positions: u32,
) -> ModelSpec {
    ModelSpec {
        name: name.to_string(),
        layers,
        hidden,
        heads,
        kv_heads: heads,
        head_dim: hidden / heads.max(1),
        ffn,
        ffn_kind: FfnKind::GeluMlp,
        vocab,
        tied_embeddings: true,
        norm: NormKind::LayerNorm,
        dropout: true,
        qkv_bias: false,
        linear_bias: true,
        learned_positions: positions,
        moe: None,
        mla: None,
        attention_window: None,
        mtp_layers: 0,
        nominal_params: None,
    }
}

/// A Nemotron spec: squared-ReLU MLP (two matrices, priced as [`FfnKind::GeluMlp`]),
/// LayerNorm (`layernorm1p`), RoPE, no biases, no dropout, untied.
fn nemotron_like(
    name: &str,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
) -> ModelSpec {
    ModelSpec {
        tied_embeddings: false,
        dropout: false,
        linear_bias: false,
        learned_positions: 0,
        kv_heads,
        ..gpt_like(name, layers, hidden, heads, ffn, 256_000, 0)
    }
}

/// A Qwen3-MoE spec: Llama-style attention with head dim 128, every layer MoE.
fn qwen3_moe(
    name: &str,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
    expert_ffn: u32,
) -> ModelSpec {
    ModelSpec {
        head_dim: 128,
        moe: Some(MoeSpec {
            routed_experts: 128,
            experts_per_token: 8,
            shared_experts: 0,
            expert_ffn,
            dense_layers: 0,
        }),
        ..llama_like(name, layers, hidden, heads, kv_heads, ffn, 151_936)
    }
}

/// Public models the planner has no preset for, by key, each from its published config.
fn config_table(key: &str) -> Option<(ModelSpec, &'static str)> {
    let entry = match key {
        // meta-llama/Llama-2-7b-hf config.json: 32 layers, hidden 4096, 32 heads, 32 KV, intermediate 11008, vocab 32000.
        "llama-2-7b" => (
            llama_like("Llama 2 7B", 32, 4096, 32, 32, 11008, 32000),
            "meta-llama/Llama-2-7b-hf config.json",
        ),
        // meta-llama/Llama-2-13b-hf config.json: 40 layers, hidden 5120, 40 heads, 40 KV, intermediate 13824, vocab 32000.
        "llama-2-13b" => (
            llama_like("Llama 2 13B", 40, 5120, 40, 40, 13824, 32000),
            "meta-llama/Llama-2-13b-hf config.json",
        ),
        // meta-llama/Llama-2-70b-hf config.json: 80 layers, hidden 8192, 64 heads, 8 KV, intermediate 28672, vocab 32000.
        "llama-2-70b" => (
            llama_like("Llama 2 70B", 80, 8192, 64, 8, 28672, 32000),
            "meta-llama/Llama-2-70b-hf config.json",
        ),
        // NeMo-Framework-Launcher conf/training/gpt3/5b.yaml: 24 layers, hidden 4096, ffn 4h, 32 heads, 2048 positions, GPT-2 BPE (50257, as the gpt3-175b preset counts it).
        "nemo-gpt3-5b" => (
            gpt_like("GPT3 5B (NeMo)", 24, 4096, 32, 4 * 4096, 50257, 2048),
            "NeMo-Framework-Launcher conf/training/gpt3/5b.yaml",
        ),
        // NeMo-Framework-Launcher conf/training/gpt3/20b.yaml: 44 layers, hidden 6144, ffn 4h, 48 heads, 2048 positions, GPT-2 BPE (50257).
        "nemo-gpt3-20b" => (
            gpt_like("GPT3 20B (NeMo)", 44, 6144, 48, 4 * 6144, 50257, 2048),
            "NeMo-Framework-Launcher conf/training/gpt3/20b.yaml",
        ),
        // NeMo-Framework-Launcher conf/training/nemotron/nemotron_8b.yaml: 32 layers, hidden 4096, ffn 16384, 32 heads (MHA), squared-ReLU, layernorm1p, RoPE, no bias, untied; vocab 256000 (nemotron_2_256k, the tokenizer nemotron_340b.yaml names; this file leaves it null).
        "nemotron-8b" => (
            nemotron_like("Nemotron 8B", 32, 4096, 32, 32, 16384),
            "NeMo-Framework-Launcher conf/training/nemotron/nemotron_8b.yaml",
        ),
        // NeMo-Framework-Launcher conf/training/nemotron/nemotron_22b.yaml: 40 layers, hidden 6144, ffn 24576, 48 heads (MHA), squared-ReLU, layernorm1p, RoPE, no bias, untied; vocab 256000 as for 8B.
        "nemotron-22b" => (
            nemotron_like("Nemotron 22B", 40, 6144, 48, 48, 24576),
            "NeMo-Framework-Launcher conf/training/nemotron/nemotron_22b.yaml",
        ),
        // NeMo-Framework-Launcher conf/training/nemotron/nemotron_340b.yaml: 96 layers, hidden 18432, ffn 4h = 73728, 96 heads, 8 query groups, squared-ReLU, layernorm1p, RoPE, no bias, untied, nemotron_2_256k tokenizer (256000).
        "nemotron-340b" => (
            nemotron_like("Nemotron 340B", 96, 18432, 96, 8, 73728),
            "NeMo-Framework-Launcher conf/training/nemotron/nemotron_340b.yaml",
        ),
        // Qwen/Qwen3-30B-A3B config.json: 48 layers, hidden 2048, 32 heads, 4 KV, head_dim 128, intermediate 6144, 128 experts top-8 of moe_intermediate_size 768, every layer MoE, vocab 151936, untied.
        "qwen3-30b-a3b" => (
            qwen3_moe("Qwen3 30B-A3B", 48, 2048, 32, 4, 6144, 768),
            "Qwen/Qwen3-30B-A3B config.json",
        ),
        // Qwen/Qwen3-235B-A22B config.json: 94 layers, hidden 4096, 64 heads, 4 KV, head_dim 128, intermediate 12288, 128 experts top-8 of moe_intermediate_size 1536, every layer MoE, vocab 151936, untied.
        "qwen3-235b-a22b" => (
            qwen3_moe("Qwen3 235B-A22B", 94, 4096, 64, 4, 12288, 1536),
            "Qwen/Qwen3-235B-A22B config.json",
        ),
        _ => return None,
    };
    Some(entry)
}

/// The model of a preset or config-table key: its choice for a scenario, its shapes and
/// where they come from (`preset llama-3.1-8b`, `llama-2-7b from meta-llama/... config.json`).
pub fn model_for_key(key: &str) -> Option<(ModelChoice, ModelSpec, String)> {
    match model_preset(key) {
        Some(spec) => Some((
            ModelChoice::Preset(key.to_string()),
            spec,
            format!("preset {key}"),
        )),
        None => config_table(key).map(|(spec, cite)| {
            (
                ModelChoice::Custom(spec.clone()),
                spec,
                format!("{key} from {cite}"),
            )
        }),
    }
}

/// Dataset model names that are known public models, and the preset or config-table key of each.
/// Matched after lower-casing, dropping a parenthesised suffix and every non-alphanumeric character.
pub const KNOWN_MODEL_NAMES: [(&str, &str); 22] = [
    ("GPT-3", "gpt3-175b"),
    ("GPT-3 h12288 L96 a96", "gpt3-175b"),
    ("GPT-3 ZeRO-3", "gpt3-175b"),
    ("GPT-3 ZeRO-3 no MP", "gpt3-175b"),
    ("GPT3-175B", "gpt3-175b"),
    ("GPT3-5B", "nemo-gpt3-5b"),
    ("GPT3-20B", "nemo-gpt3-20b"),
    ("LLAMA2-7B", "llama-2-7b"),
    ("LLAMA2-13B", "llama-2-13b"),
    ("LLAMA2-70B", "llama-2-70b"),
    ("LLAMA2-70B SFT", "llama-2-70b"),
    ("Nemotron-8B", "nemotron-8b"),
    ("Nemotron-22B", "nemotron-22b"),
    ("Nemotron-340B", "nemotron-340b"),
    // Llama 3 and 3.1 share every shape (their config.json files differ in rope_scaling only).
    ("LLAMA3-8B", "llama-3.1-8b"),
    ("Llama 3.1 8B", "llama-3.1-8b"),
    ("LLAMA3-70B", "llama-3.1-70b"),
    ("LLAMA3.1_405B", "llama-3.1-405b"),
    ("LLAMA3-405B", "llama-3.1-405b"),
    ("DeepSeekV3", "deepseek-v3"),
    ("Qwen3-30B-A3B", "qwen3-30b-a3b"),
    ("Qwen3-235B-A22B", "qwen3-235b-a22b"),
];

fn normalize_name(name: &str) -> String {
    let cut = name.split('(').next().unwrap_or(name);
    cut.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The preset or config-table key of a known public model name, if it is one: a name of
/// [`KNOWN_MODEL_NAMES`], else any model preset named by its id or display name
/// ([`model_core_name`]: `Llama-3.1-70B`, `meta-llama/Meta-Llama-3.1-70B-Instruct`,
/// `Mixtral 8x7B`, `Mistral-7B-v0.1`), so another dataset's rows on a preset's model need no
/// `model_shape`.
pub fn known_model_key(model_name: &str) -> Option<&'static str> {
    let n = normalize_name(model_name);
    if let Some((_, key)) = KNOWN_MODEL_NAMES
        .iter()
        .find(|(alias, _)| normalize_name(alias) == n)
    {
        return Some(key);
    }
    let core = model_core_name(model_name);
    if let Some((_, key)) = KNOWN_MODEL_NAMES
        .iter()
        .find(|(alias, _)| model_core_name(alias) == core)
    {
        return Some(key);
    }
    model_presets()
        .into_iter()
        .find(|p| model_core_name(p.id) == core || model_core_name(&p.spec.name) == core)
        .map(|p| p.id)
}

/// A model name without what does not change its shapes, lower-case alphanumerics only: the
/// organisation (`meta-llama/`, a leading `Meta-`), a trailing release tag (`Instruct`,
/// `Chat`, `Base`, `hf`) and a dotted version (`v0.1`). An undotted version is kept: it names
/// another model (`DeepSeek-V3` is not `DeepSeek-V2`).
pub fn model_core_name(name: &str) -> String {
    let name = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    let mut tokens: Vec<&str> = name
        .split(|c: char| c == '-' || c == '_' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.first() == Some(&"meta") {
        tokens.remove(0);
    }
    while let Some(last) = tokens.last() {
        let dotted_version = last.starts_with('v') && last.contains('.');
        // A checkpoint's dtype suffix (`Qwen3-235B-A22B-FP8`, `-AWQ`) names a quantized copy of
        // the same architecture: its shapes are the base model's.
        let dtype_suffix = matches!(
            *last,
            "fp8" | "fp4" | "nvfp4" | "mxfp4" | "awq" | "gptq" | "int4" | "int8" | "w8a8" | "w4a16"
        );
        if dotted_version || dtype_suffix || matches!(*last, "instruct" | "chat" | "base" | "hf") {
            tokens.pop();
        } else {
            break;
        }
    }
    tokens
        .concat()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

// ---------------------------------------------------------------------------
// Mapping a row to a scenario.

/// A row as a scenario, with what was assumed to get there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MappedRun {
    /// The scenario evaluated.
    pub scenario: Scenario,
    /// Where the model's shapes came from.
    pub model_source: String,
    /// Fields the source leaves unsaid and the value used for each.
    pub defaults: Vec<String>,
    /// Mapping choices that are not defaults of unsaid fields (approximations, overrides).
    pub notes: Vec<String>,
}

/// Which framework family a source is, for its defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// Narayanan et al. 2021 / Korthikanti et al. 2022: Megatron-LM of 2021–22.
    MegatronPaper,
    /// Megatron-Core, NeMo, Megatron-Bridge: distributed optimizer by default.
    MegatronCore,
    /// torchtitan (FSDP2).
    Torchtitan,
    /// BLOOM-176B's Megatron-DeepSpeed (bigscience-workshop/Megatron-DeepSpeed, 2022): DeepSpeed's
    /// pipeline engine and BF16_Optimizer, Megatron's fused softmax (ALiBi), no sequence parallel.
    Bloom,
    /// Anything else.
    Other,
}

/// The framework a row ran: torchtitan rows follow torchtitan's loss; Megatron-LM, NeMo and
/// Megatron-Bridge rows Megatron-Core's (and the search proposes only its schedules); the
/// ZeRO-3 rows of Narayanan et al. 2021 DeepSpeed of 2021 ("We integrated ZeRO into our
/// codebase using the DeepSpeed Python library", §5.2 of the paper of April 2021, when
/// DeepSpeed's releases were v0.3.x); the rest keep the article's accounting.
fn row_framework(run: &PublishedRun, fam: Family) -> Framework {
    match fam {
        Family::Torchtitan => Framework::Torchtitan,
        Family::MegatronCore => Framework::MegatronCore,
        Family::MegatronPaper if !run.fsdp => Framework::MegatronCore,
        Family::MegatronPaper => Framework::DeepSpeed2021,
        // DeepSpeed's pipeline engine reduces gradients after the last micro-batch
        // (deepspeed/runtime/pipe/schedule.py TrainSchedule: ReduceGrads at the batch's last
        // step), so under DeepSpeed the gradient reduction is not overlapped (input/overlap.rs).
        Family::Bloom => Framework::DeepSpeed,
        Family::Other => Framework::Article,
    }
}

/// The framework whose semantics a row's run follows (the framework of its source).
pub fn run_framework(run: &PublishedRun) -> Framework {
    row_framework(run, family(&run.source))
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn family(source: &str) -> Family {
    if source.starts_with("Narayanan21") || source.starts_with("Korthikanti22") {
        Family::MegatronPaper
    } else if source.starts_with("Megatron")
        || source.starts_with("NeMo")
        || source.starts_with("MBridge")
    {
        Family::MegatronCore
    } else if source.starts_with("torchtitan") {
        Family::Torchtitan
    } else if source.starts_with("BLOOM") {
        Family::Bloom
    } else {
        Family::Other
    }
}

/// How a row's MoE layers route, with the default it states: a Megatron-Bridge 25.09
/// "tokendrop" row runs `apply_moe_token_drop` with its defaults, capacity factor 1.0 and every
/// expert padded to it (scripts/performance/run_script.py at 568b3a3ef, `--use_tokendrop`;
/// src/megatron/bridge/training/utils/moe_token_drop.py); every other MoE row is dropless
/// (Megatron-Core's default, `moe_expert_capacity_factor = None`), priced at random routing's
/// busiest rank. Dense rows route nothing.
fn moe_routing_of(run: &PublishedRun, moe: bool, defaults: &mut Vec<String>) -> MoeRouting {
    if !moe {
        return MoeRouting::default();
    }
    if run.source.starts_with("MBridge")
        && run.model_name.to_ascii_lowercase().contains("tokendrop")
    {
        defaults.push("MoE routing not stated per row: capacity factor 1.0, padded to capacity (Megatron-Bridge 25.09 run_script.py --use_tokendrop: apply_moe_token_drop defaults)".to_string());
        return MoeRouting {
            capacity_factor: Some(1.0),
            pad_to_capacity: true,
            measured_busiest_load: None,
        };
    }
    defaults.push("MoE routing not stated: dropless (Megatron-Core's default), the busiest EP rank at random routing's expected maximum".to_string());
    MoeRouting::default()
}

/// The overlap a row's source recipe sets, with where it says so; `None` when no published
/// recipe or script for the row was found (the row then keeps its framework's defaults).
fn recipe_overlap(run: &PublishedRun) -> Option<(OverlapChoice, &'static str)> {
    let set = |tp: bool, grad: bool, param: bool| OverlapChoice {
        tp_comm: Switch::set(tp),
        grad_reduce: Switch::set(grad),
        param_gather: Switch::set(param),
        ep_comm: Switch::Off,
    };
    let name = normalize_name(&run.model_name);
    let src = run.source.as_str();
    if src == "Megatron README 2024" {
        // Megatron-LM README (f2e5db402c, 2024-07 "New scaling figures on H100"), "Training Speed and Scalability": `--overlap-grad-reduce --overlap-param-gather`, `--tp-comm-overlap`, PP overlap by default.
        return Some((set(true, true, true), "Megatron-LM README 2024 performance section: --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap"));
    }
    if src == "NeMo 24.07" {
        // NeMo-Framework-Launcher tag 24.07 launcher_scripts/conf/training/<family>/<model>.yaml: `optim` distributed_fused_adam with `overlap_grad_sync: True`, `overlap_param_sync: true` in every file; `ub_tp_comm_overlap` True only in gpt3/20b, llama/llama2_70b, llama/llama3_70b, nemotron/nemotron_8b, nemotron/nemotron_22b.
        let tp = matches!(
            name.as_str(),
            "gpt320b" | "llama270b" | "llama370b" | "nemotron8b" | "nemotron22b"
        );
        return Some((
            set(tp, true, true),
            if tp {
                "NeMo-Framework-Launcher 24.07 conf/training yaml: overlap_grad_sync, overlap_param_sync, ub_tp_comm_overlap: True"
            } else {
                "NeMo-Framework-Launcher 24.07 conf/training yaml: overlap_grad_sync, overlap_param_sync; ub_tp_comm_overlap: False"
            },
        ));
    }
    if src == "MBridge 25.09" {
        // Megatron-Bridge v0.1.0rc4 (the 25.09 line): recipes/**.py `DistributedDataParallelConfig(overlap_grad_reduce=True, overlap_param_gather=True)`; scripts/performance/run_script.py passes `CommOverlapConfig(tp_comm_overlap=True)` for qwen3, the llama3_70b / llama31_405b recipes set `tp_comm_overlap=True`, llama3_8b and deepseek_v3 `False`; for deepseek v3 on H100 it sets `comm_overlap.overlap_grad_reduce = False`.
        // The same run_script.py sets `comm_overlap.overlap_moe_expert_parallel_comm = True` and
        // `delay_wgrad_compute = True` for DeepSeek-V3 on H100 (A2A_1F1B); no other row's script does.
        return Some(if name.starts_with("deepseekv3") {
            (
                OverlapChoice {
                    ep_comm: Switch::On,
                    ..set(false, false, true)
                },
                "Megatron-Bridge 25.09 recipes/deepseek/deepseek_v3.py tp_comm_overlap=False; scripts/performance/run_script.py H100: overlap_grad_reduce=False, overlap_moe_expert_parallel_comm=True",
            )
        } else if name.starts_with("llama38b") {
            (
                set(false, true, true),
                "Megatron-Bridge 25.09 recipes/llama/llama3_8b.py: overlap_grad_reduce, overlap_param_gather; tp_comm_overlap=False",
            )
        } else {
            (
                set(true, true, true),
                "Megatron-Bridge 25.09 recipes (DDP overlap_grad_reduce, overlap_param_gather) and CommOverlapConfig tp_comm_overlap=True",
            )
        });
    }
    if src == "Megatron examples/llama" {
        // Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh: `--overlap-grad-reduce --overlap-param-gather`, no `--tp-comm-overlap`; its README says the 70B/405B rows follow NeMo scripts/performance, whose recipes (NeMo ab020f6a72 llama3_70b.py, llama31_405b.py performance mode) set `MegatronCommOverlapCallback(tp_comm_overlap=True)`, the callback turning DP overlap on for DP > 1.
        return Some(if name.starts_with("llama38b") {
            (
                set(false, true, true),
                "Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh: --overlap-grad-reduce --overlap-param-gather",
            )
        } else {
            (
                set(true, true, true),
                "NeMo scripts/performance recipes (examples/llama README): MegatronCommOverlapCallback tp_comm_overlap=True, DP overlap for DP > 1",
            )
        });
    }
    None
}

/// The stage split a row's source used when its layers do not divide `pp × vp`, from the
/// source's own recipe; the even split otherwise (or when no source says, which the
/// `stage_split_fits_layers` / `layers_divisible_by_pp` rules then report).
fn published_split(
    run: &PublishedRun,
    layers: u32,
    virtual_stages: u32,
    notes: &mut Vec<String>,
) -> StageSplit {
    let chunks = u64::from(run.pp.max(1)) * u64::from(virtual_stages.max(1));
    if run.pp < 2 || u64::from(layers).is_multiple_of(chunks) {
        return StageSplit::Even;
    }
    // The Llama 3 paper (arXiv 2407.21783 §3.3.2): "we reduce one Transformer layer each
    // from the first and the last stages", the embedding and the loss taking their place.
    let megatron = run.source.starts_with("MBridge")
        || run.source.starts_with("Megatron examples")
        || run.source.starts_with("Llama3");
    // BLOOM tr11-176B-ml README: `--pp-partition-method 'type:transformer|embedding'` counts
    // both tied embedding layers as blocks, 70 + 2 = 72 = 12 stages × 6.
    if run.source.starts_with("BLOOM") {
        notes.push("stage split: the two tied embedding layers counted as blocks (BLOOM tr11 --pp-partition-method 'type:transformer|embedding')".to_string());
        return StageSplit::AccountEmbeddingLoss {
            embedding: true,
            loss: true,
        };
    }
    match (megatron, layers, run.pp, virtual_stages) {
        // DeepSeek-V3 at PP 8 × VPP 4: Megatron-Bridge scripts/performance (deepseek_v3
        // H100 1024-GPU config) `--pipeline-model-parallel-layout "Et|(tt|)*30mL"`: the
        // embedding + 1 layer, 30 chunks of 2, and the MTP layer + loss on the last chunk.
        (true, 61, 8, 4) => {
            let mut list = vec![1];
            list.extend([2; 30]);
            list.push(0);
            notes.push("stage split: Megatron-Bridge's layout \"Et|(tt|)*30mL\" (the MTP module and the loss on the last chunk)".to_string());
            StageSplit::Chunks(list)
        }
        // Llama 3.1 405B (126 layers) at PP 8 × VPP 8: Megatron-Bridge recipes/llama/llama3.py
        // `llama31_405b_pretrain_config` sets account_for_embedding_in_pipeline_split and
        // account_for_loss_in_pipeline_split (126 + 2 = 128 = 64 chunks × 2); it is also the only
        // Megatron split short of an explicit layout that puts 126 layers on 8 × 8 chunks.
        (true, 126, _, _) => {
            notes.push("stage split: embedding and loss counted as layers (Megatron-Bridge llama31_405b recipe)".to_string());
            StageSplit::AccountEmbeddingLoss {
                embedding: true,
                loss: true,
            }
        }
        // Qwen3-235B-A22B (94 layers) at PP 8 × VPP 4: Megatron-Bridge
        // recipes/qwen/qwen3_235b_a22b.py `model_config`, which scripts/performance/run_script.py
        // builds through `pretrain_config`, sets account_for_embedding_in_pipeline_split and
        // account_for_loss_in_pipeline_split (94 + 2 = 96 = 32 chunks × 3).
        (true, 94, _, _) => {
            notes.push("stage split: embedding and loss counted as layers (Megatron-Bridge qwen3_235b_a22b recipe)".to_string());
            StageSplit::AccountEmbeddingLoss {
                embedding: true,
                loss: true,
            }
        }
        _ => StageSplit::Even,
    }
}

/// Resolves the model: a known public model (preset or config table, with any
/// `model_shape` value that differs replacing the config's), else GPT-style shapes.
fn resolve_model(
    run: &PublishedRun,
    defaults: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<(ModelChoice, ModelSpec, String), String> {
    let shape = &run.model_shape;
    if let Some(key) = known_model_key(&run.model_name) {
        let (mut spec, source, preset) = match model_preset(key) {
            Some(spec) => (spec, format!("preset {key}"), true),
            None => match config_table(key) {
                Some((spec, cite)) => (spec, format!("{key} from {cite}"), false),
                None => return Err(format!("known model '{key}' has no shapes")),
            },
        };
        let mut changed = Vec::new();
        let mut set = |name: &str, given: Option<u32>, slot: &mut u32| {
            if let Some(v) = given {
                if v != *slot {
                    changed.push(format!("{name} {v} (config: {})", *slot));
                    *slot = v;
                }
            }
        };
        let derived_head_dim = spec.head_dim == spec.hidden / spec.heads.max(1);
        set("layers", shape.layers, &mut spec.layers);
        set("hidden", shape.hidden, &mut spec.hidden);
        set("heads", shape.heads, &mut spec.heads);
        if spec.mla.is_none() {
            set("kv_heads", shape.kv_heads, &mut spec.kv_heads);
        }
        set("vocab", shape.vocab, &mut spec.vocab);
        match spec.moe.as_mut() {
            Some(moe) => {
                set("ffn (per expert)", shape.ffn, &mut moe.expert_ffn);
                set("experts", shape.experts, &mut moe.routed_experts);
                set("top_k", shape.top_k, &mut moe.experts_per_token);
            }
            None => {
                if shape.experts.is_some() || shape.top_k.is_some() {
                    return Err(format!(
                        "model_shape gives experts for '{}', whose published config is dense",
                        run.model_name
                    ));
                }
                set("ffn", shape.ffn, &mut spec.ffn);
            }
        }
        if derived_head_dim && spec.mla.is_none() {
            spec.head_dim = spec.hidden / spec.heads.max(1);
        }
        if key.starts_with("nemotron") {
            notes.push(
                "squared-ReLU MLP priced as a two-matrix MLP (FfnKind::GeluMlp): same GEMM shapes"
                    .to_string(),
            );
        }
        if key.starts_with("qwen3") {
            notes.push(
                "per-head q/k RMSNorm of Qwen3 (2 × 128 parameters per layer) not modelled"
                    .to_string(),
            );
        }
        if changed.is_empty() {
            let choice = if preset {
                ModelChoice::Preset(key.to_string())
            } else {
                ModelChoice::Custom(spec.clone())
            };
            return Ok((choice, spec, source));
        }
        notes.push(format!(
            "model_shape replaces the published config: {}",
            changed.join(", ")
        ));
        spec.name = format!("{} (shapes from the row)", spec.name);
        return Ok((ModelChoice::Custom(spec.clone()), spec, source));
    }

    // GPT-style shapes from the row (Megatron's GPT models).
    let (Some(layers), Some(hidden), Some(heads)) = (shape.layers, shape.hidden, shape.heads)
    else {
        return Err(format!(
            "'{}' is not a known public model and model_shape lacks layers, hidden or heads",
            run.model_name
        ));
    };
    if shape.experts.is_some() || shape.top_k.is_some() {
        return moe_from_shape(run, layers, hidden, heads, defaults);
    }
    if !hidden.is_multiple_of(heads) {
        return Err(format!(
            "hidden {hidden} is not a multiple of heads {heads}: the head dim is unknown"
        ));
    }
    let ffn = shape.ffn.unwrap_or_else(|| {
        defaults.push(format!(
            "model_shape.ffn not stated: 4 × hidden = {}",
            4 * u64::from(hidden)
        ));
        hidden.saturating_mul(4)
    });
    let vocab = shape.vocab.unwrap_or_else(|| {
        defaults
            .push("model_shape.vocab not stated: 51200 (Megatron's padded GPT-2 BPE)".to_string());
        51200
    });
    let mut spec = gpt_like(
        &run.model_name,
        layers,
        hidden,
        heads,
        ffn,
        vocab,
        run.seq(),
    );
    if let Some(kv) = shape.kv_heads {
        spec.kv_heads = kv;
    }
    notes.push(format!(
        "GPT-style shapes (Megatron GPT): GELU MLP, LayerNorm, biases, dropout, tied embeddings, {} learned positions (= seq_len)",
        run.seq()
    ));
    Ok((
        ModelChoice::Custom(spec.clone()),
        spec,
        "GPT-style from model_shape".to_string(),
    ))
}

/// The data-parallel degree of a row's layout: `dp` as given when dp × tp × pp × cp is the
/// row's GPU count; for an MoE row whose source counts its expert-parallel ranks apart
/// (dp × tp × pp × cp × ep = GPUs, as DeepSeek-V3's report lists "EP64" beside its DP), dp × ep,
/// since Megatron-Core draws the expert-parallel group from the data-parallel ranks
/// (`--expert-model-parallel-size` divides the data-parallel size; MoE parallel folding), and
/// the note says so. Any other product names the fields.
fn layout_dp(run: &PublishedRun, notes: &mut Vec<String>) -> Result<u32, String> {
    // Each degree is at most MAX_GPUS (10^6), so a product of four or five can exceed u64:
    // checked, a product that overflows is simply not the row's GPU count.
    let product = |degrees: &[u32]| {
        degrees
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(u64::from(d)))
    };
    let gpus = u64::from(run.gpus);
    if product(&[run.dp, run.tp, run.pp, run.cp]) == Some(gpus) {
        return Ok(run.dp);
    }
    if run.ep > 1 && product(&[run.dp, run.tp, run.pp, run.cp, run.ep]) == Some(gpus) {
        let dp = run.dp.saturating_mul(run.ep);
        notes.push(format!(
            "dp × tp × pp × cp × ep = {gpus} GPUs: the row counts EP apart from DP; the attention data-parallel degree is dp × ep = {dp}, EP drawn from it (Megatron-Core MoE parallel folding)"
        ));
        return Ok(dp);
    }
    let world = product(&[run.dp, run.tp, run.pp, run.cp])
        .map_or_else(|| "more than 2^64".to_string(), |w| w.to_string());
    Err(format!(
        "dp × tp × pp × cp = {} × {} × {} × {} = {world} differs from the row's {} GPUs",
        run.dp, run.tp, run.pp, run.cp, run.gpus
    ))
}

/// An MoE that is not a known public model, from its row's shapes: Mixtral's form (Jiang et al.
/// 2024, "Mixtral of Experts" §2: every layer's FFN replaced by SwiGLU experts, Llama/Mistral
/// attention with RMSNorm and RoPE, no shared expert), the one the shapes leave most likely,
/// each assumption listed with the row's defaults. `experts`, `top_k` and `ffn` (one expert's
/// width) must be given.
fn moe_from_shape(
    run: &PublishedRun,
    layers: u32,
    hidden: u32,
    heads: u32,
    defaults: &mut Vec<String>,
) -> Result<(ModelChoice, ModelSpec, String), String> {
    let shape = &run.model_shape;
    let (Some(experts), Some(top_k), Some(ffn)) = (shape.experts, shape.top_k, shape.ffn) else {
        return Err(format!(
            "'{}' is not a known public model: an MoE from model_shape needs experts, top_k and ffn (one expert's width)",
            run.model_name
        ));
    };
    if !hidden.is_multiple_of(heads) || top_k == 0 || top_k > experts {
        return Err(format!(
            "model_shape of '{}': hidden {hidden} must be a multiple of heads {heads} and top_k {top_k} within 1..=experts {experts}",
            run.model_name
        ));
    }
    let kv_heads = shape.kv_heads.unwrap_or_else(|| {
        defaults.push(format!("model_shape.kv_heads not stated: {heads} (no GQA)"));
        heads
    });
    let vocab = shape.vocab.unwrap_or_else(|| {
        defaults.push("model_shape.vocab not stated: 32000 (Mixtral's)".to_string());
        32000
    });
    defaults.push(
        "MoE from model_shape: Mixtral's form (SwiGLU experts on every layer, no shared expert, RMSNorm, RoPE, no biases)"
            .to_string(),
    );
    let mut spec = llama_like(&run.model_name, layers, hidden, heads, kv_heads, ffn, vocab);
    spec.moe = Some(MoeSpec {
        routed_experts: experts,
        experts_per_token: top_k,
        shared_experts: 0,
        expert_ffn: ffn,
        dense_layers: 0,
    });
    Ok((
        ModelChoice::Custom(spec.clone()),
        spec,
        "Mixtral-style MoE from model_shape".to_string(),
    ))
}

/// The GPUs a job places in each NVLink domain when the domain is rack-scale (more than the
/// 8 GPUs of a server: GB200 NVL72's trays of 4) and `gpus` does not fill whole domains: the
/// largest divisor of `gpus` that fits in one domain and is a whole number of 4-GPU trays
/// (NVIDIA GB200 NVL72 datasheet: 18 compute trays of 4 GPUs). `None` for server-sized
/// nodes, where a job that is not whole nodes is not laid out.
fn rack_share(gpus: u32, domain: u32) -> Option<u32> {
    const TRAY_GPUS: u32 = 4;
    if domain <= 8 {
        return None;
    }
    (TRAY_GPUS..=domain)
        .rev()
        .find(|d| d.is_multiple_of(TRAY_GPUS) && gpus.is_multiple_of(*d))
}

/// Maps one row to a scenario, or says why the model cannot express it.
pub fn map_run(run: &PublishedRun) -> Result<MappedRun, String> {
    if !run.other_keys.is_empty() {
        let keys: Vec<&str> = run.other_keys.keys().map(String::as_str).collect();
        return Err(format!(
            "keys this reader does not know: {} (the row may mean something the model would ignore)",
            keys.join(", ")
        ));
    }
    if run.seq_len.is_none() {
        return Err("seq_len is null: a training row needs its sequence length".to_string());
    }
    let Some(gpu_id) = dataset_gpu_preset(&run.gpu_type) else {
        return Err(format!("no GPU preset for gpu_type '{}'", run.gpu_type));
    };
    let Some(gpu) = gpu_preset(&gpu_id) else {
        return Err(format!("GPU preset '{gpu_id}' is missing"));
    };
    let mut notes = Vec::new();
    let dp = layout_dp(run, &mut notes)?;
    let mut defaults = Vec::new();
    let per_layer = run.quantity == Quantity::PerLayerFwdBwdMs;
    let global_batch = match run.global_batch_seqs {
        Some(b) => b,
        // One micro-batch per data-parallel rank. A per-layer row times one layer on one
        // micro-batch (time/layer_time.rs), so its step needs no more; any other row takes the
        // frameworks' own default, no gradient accumulation: Megatron-LM sets
        // `--global-batch-size` to micro-batch × data-parallel size when it is not given
        // (megatron/training/arguments.py `validate_args`); torchtitan's
        // `training.global_batch_size` defaults to the local batch × the data-parallel degree.
        None => {
            let b = run
                .micro_batch
                .unwrap_or(1)
                .max(1)
                .saturating_mul(dp.max(1));
            let why = if per_layer {
                "one micro-batch per data-parallel rank; the row times one layer on one micro-batch"
            } else {
                "no gradient accumulation, Megatron-LM's and torchtitan's default"
            };
            defaults.push(format!(
                "global_batch_seqs not stated: dp × micro-batch = {b} ({why})"
            ));
            b
        }
    };
    if run.layout_mismatch {
        return Err(
            "layout_mismatch: the source's layout differs from the one the row lists".to_string(),
        );
    }

    let fam = family(&run.source);
    if run.seq_len_assumed == Some(true) {
        defaults.push(format!(
            "seq_len not stated by the source: {} (the dataset's inferred value)",
            run.seq()
        ));
    }
    let (mut model_choice, mut spec, model_source) = resolve_model(run, &mut defaults, &mut notes)?;
    // Megatron-Bridge 25.09 recipes/deepseek/deepseek_v3.py trains with `mtp_num_layers = 1`
    // (its default; scripts/performance/run_script.py keeps it and lays it out as "...mL").
    if run.source.starts_with("MBridge") && known_model_key(&run.model_name) == Some("deepseek-v3")
    {
        spec.mtp_layers = 1;
        spec.name = format!("{} + 1 MTP module", spec.name);
        model_choice = ModelChoice::Custom(spec.clone());
        defaults.push("MTP not stated by the row: 1 module (Megatron-Bridge deepseek_v3 recipe mtp_num_layers = 1), on the last pipeline stage; model FLOPs count it as Megatron's num_floating_point_operations does (one more MoE layer, the 2h·h projection, logits × 2)".to_string());
    }
    if run.ep > 1 && spec.moe.is_none() {
        return Err(format!("ep = {} for a dense model", run.ep));
    }

    // Cluster: whole nodes of the preset's 8 GPUs; a smaller run is one node of its GPUs.
    let gpn = gpu.gpus_per_node.max(1);
    let (nodes, per_node) = if run.gpus < gpn {
        notes.push(format!(
            "{} GPUs: one node of {} GPUs (NVLink inside)",
            run.gpus, run.gpus
        ));
        (1, run.gpus)
    } else if run.gpus.is_multiple_of(gpn) {
        (run.gpus / gpn, gpn)
    } else if let Some(per_rack) = rack_share(run.gpus, gpn) {
        // A rack-scale NVLink domain (GB200 NVL72: 18 trays of 4 GPUs) is not filled whole:
        // a 128-GPU job runs as 2 × 64 in two racks, each part inside one NVLink domain.
        notes.push(format!(
            "{} GPUs on {gpn}-GPU NVLink domains: {} domains of {per_rack} GPUs each",
            run.gpus,
            run.gpus / per_rack
        ));
        (run.gpus / per_rack, per_rack)
    } else {
        return Err(format!(
            "{} GPUs is not a whole number of {gpn}-GPU nodes",
            run.gpus
        ));
    };
    let mut cluster = Cluster::of(gpu, nodes);
    cluster.gpus_per_node = per_node;
    let tensor_share = cluster.gpu.traits().compute.tensor_fraction_at_power_limit;
    if tensor_share < 1.0 {
        notes.push(format!(
            "tensor work at {tensor_share:.3} of the datasheet rates: the GPU's power limit (input/power_limit.rs, the vendor's ratings between the H100 NVL at 400 W and the SXM at 700 W)"
        ));
    }

    // ZeRO stage.
    let zero = if run.fsdp {
        ZeroStage::Zero3
    } else if let Some(z) = run.zero_stage {
        ZeroStage::from_number(z).unwrap_or(ZeroStage::Ddp)
    } else {
        match fam {
            Family::MegatronCore => {
                defaults.push("zero_stage not stated: ZeRO-1 (Megatron-Core/NeMo distributed optimizer, fp32 gradient buffers)".to_string());
                ZeroStage::Zero1
            }
            Family::MegatronPaper => {
                defaults.push("zero_stage not stated: none, DDP (Megatron-LM of Narayanan 2021 / Korthikanti 2022)".to_string());
                ZeroStage::Ddp
            }
            // DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py) partitions the
            // fp32 master weights and Adam state over DP and reduces the full fp32 gradient
            // (`get_grads_for_reduction` returns `fp32_groups_gradients_flat`): ZeRO-1 with fp32
            // gradients.
            Family::Bloom => {
                defaults.push("zero_stage not stated: ZeRO-1 (DeepSpeed BF16_Optimizer: fp32 master and Adam state partitioned, fp32 gradients reduced)".to_string());
                ZeroStage::Zero1
            }
            Family::Torchtitan | Family::Other => {
                defaults.push("zero_stage not stated: none, DDP".to_string());
                ZeroStage::Ddp
            }
        }
    };
    let distributed_optimizer = !run.fsdp
        && run.zero_stage.is_none()
        && matches!(fam, Family::MegatronCore | Family::Bloom);

    // Precision.
    let precision_used = match run.precision {
        Some(p) => p,
        None => {
            match fam {
                Family::MegatronPaper => {
                    defaults.push("precision not stated (16-bit mixed): BF16-rate recipe (A100 FP16 and BF16 peaks are equal)".to_string());
                    RunPrecision::Bf16
                }
                _ if run.source.starts_with("MBridge") => {
                    defaults.push("precision not stated per row: fp8 (the dataset's notes: FP8 likely, inferred)".to_string());
                    RunPrecision::Fp8
                }
                _ => {
                    defaults.push("precision not stated: bf16".to_string());
                    RunPrecision::Bf16
                }
            }
        }
    };
    let recipe = match precision_used {
        RunPrecision::Fp8 => PrecisionRecipe::Fp8Bf16Master,
        RunPrecision::Fp16 | RunPrecision::Bf16 if distributed_optimizer => {
            PrecisionRecipe::MixedAdamFp32Grads
        }
        RunPrecision::Fp16 | RunPrecision::Bf16 => PrecisionRecipe::MixedAdam,
    };
    if precision_used == RunPrecision::Fp8 && distributed_optimizer {
        notes.push("FP8 recipe (13 B/param, 2-byte gradients) used although the distributed optimizer keeps fp32 gradient buffers".to_string());
    }

    // Schedule.
    let (schedule, virtual_stages) = match run.vp {
        None if run.pp > 1 && run.schedule == Some(RunSchedule::Interleaved) => {
            // torchtitan 9dec370 (2024-12) torchtitan/parallelisms/pipelining_utils.py
            // `generate_split_points`: looped schedules (Interleaved1F1B) get 2 stages per rank;
            // the open FSDP + PP stack's default where a source names the schedule only.
            defaults.push("vp not stated for an interleaved schedule: 2 (torchtitan's stages per rank for looped schedules)".to_string());
            (Schedule::Interleaved, 2)
        }
        Some(v) if v >= 2 && run.pp >= 2 => (Schedule::Interleaved, v),
        Some(v) if v >= 2 => {
            notes.push(format!("vp = {v} with pp = 1: no pipeline, vp ignored"));
            (Schedule::OneFOneB, 1)
        }
        Some(_) => (Schedule::OneFOneB, 1),
        None => {
            if run.pp > 1 {
                defaults.push("vp not stated: 1 (non-interleaved 1F1B)".to_string());
            }
            (Schedule::OneFOneB, 1)
        }
    };
    let micro_batch = match run.micro_batch {
        Some(b) => b,
        None => default_micro_batch(run, fam, global_batch, dp, &mut defaults),
    };
    let recompute = match run.recompute {
        Some(RunRecompute::None) => Recompute::None,
        Some(RunRecompute::Selective) => Recompute::Selective,
        Some(RunRecompute::Full) => Recompute::Full,
        // DeepSpeedExamples 7c97fe72 (2021-03-08, "Megatron + ZeRO-3"),
        // Megatron-LM-v1.1.5-ZeRO3/examples/ds_pretrain_gpt2-zero3.sh: the Megatron + ZeRO-3
        // recipe of the time passes `--checkpoint-activations` (`--checkpoint-num-layers 1`).
        None if run.fsdp && fam == Family::MegatronPaper => {
            defaults.push("recompute not stated: full (DeepSpeedExamples Megatron-LM-v1.1.5-ZeRO3 ds_pretrain_gpt2-zero3.sh: --checkpoint-activations)".to_string());
            Recompute::Full
        }
        None => {
            defaults.push("recompute not stated: none".to_string());
            Recompute::None
        }
    };
    let sequence_parallel = match run.sequence_parallel {
        Some(sp) => sp && run.tp > 1,
        None if run.tp <= 1 => false,
        None if run.source.starts_with("Narayanan21") => {
            defaults
                .push("sequence_parallel not stated: off (Narayanan 2021 predates it)".to_string());
            false
        }
        // bigscience-workshop/Megatron-DeepSpeed megatron/arguments.py has no sequence-parallel
        // option: BLOOM's fork predates it.
        None if fam == Family::Bloom => {
            defaults.push(
                "sequence_parallel not stated: off (BLOOM's Megatron-DeepSpeed fork has no such option)"
                    .to_string(),
            );
            false
        }
        None => {
            defaults.push("sequence_parallel not stated: on (tp > 1)".to_string());
            true
        }
    };
    let expert_tp = expert_tp_of(run, &mut defaults);
    // BLOOM's ALiBi attention ran Megatron's fused masked softmax (bigscience-workshop/
    // Megatron-DeepSpeed megatron/model/fused_softmax.py), not a fused attention kernel.
    let flash_attention = !matches!(fam, Family::MegatronPaper | Family::Bloom);
    notes.push(format!(
        "flash attention {} (memory only){}",
        if flash_attention { "on" } else { "off" },
        if flash_attention {
            ""
        } else {
            ": the 2021–22 Megatron-LM kept the s × s scores"
        }
    ));

    // torchtitan rows name eager or torch.compile in their notes ("FSDP eager BF16", "FSDP +
    // torch.compile BF16"); a row that names neither takes the framework's default kernels.
    let kernels = if fam != Family::Torchtitan {
        Kernels::FrameworkDefault
    } else if run.notes.contains("torch.compile") {
        Kernels::Compiled
    } else if run.notes.contains("eager") {
        Kernels::Eager
    } else {
        defaults.push("kernels not stated: torchtitan's default, eager".into());
        Kernels::FrameworkDefault
    };
    let layout = Layout {
        dp,
        tp: run.tp,
        pp: run.pp,
        cp: run.cp,
        ep: run.ep,
        expert_tp,
        virtual_stages,
        micro_batch,
        schedule,
        zero,
        recompute,
        sequence_parallel,
        stage_split: published_split(run, spec.layers, virtual_stages, &mut notes),
    };
    // The serving view is not compared; its replica must fit the cluster to validate.
    let serve_tp = [8u32, 4, 2, 1]
        .into_iter()
        .find(|t| u64::from(*t) <= cluster.world_size())
        .unwrap_or(1);
    let runtime = Overheads::for_gpu(&cluster.gpu.id);
    let overlap = match recipe_overlap(run) {
        Some((choice, source)) => {
            let applied = choice.applied(Framework::Article);
            defaults.push(format!(
                "overlap not stated by the row: TP {}, gradient reduce {}, parameter gather {}, EP all-to-all {} ({source})",
                on_off(applied.tp_comm),
                on_off(applied.grad_reduce),
                on_off(applied.param_gather),
                on_off(applied.ep_comm)
            ));
            choice
        }
        None => {
            // torchtitan and BLOOM's DeepSpeed rows take their framework's own overlap; the
            // rest keep the article's.
            let framework = match fam {
                Family::Torchtitan | Family::Bloom => row_framework(run, fam),
                _ => Framework::Article,
            };
            let applied = OverlapChoice::default().applied(framework);
            defaults.push(format!(
                "overlap not found in a published recipe for this source: {} defaults, TP {}, gradient reduce {}, parameter gather {}, EP all-to-all {}",
                if framework == Framework::Torchtitan { "torchtitan's" } else { "the article's" },
                on_off(applied.tp_comm),
                on_off(applied.grad_reduce),
                on_off(applied.param_gather),
                on_off(applied.ep_comm)
            ));
            // Spelled out, so the row's framework (its memory semantics and schedules) does
            // not change what is assumed here.
            OverlapChoice::spelled_out(applied)
        }
    };
    let moe_routing = moe_routing_of(run, spec.moe.is_some(), &mut defaults);
    let scenario = Scenario {
        version: SCENARIO_VERSION,
        model: model_choice,
        precision: Precision::from_recipe(recipe),
        cluster,
        training: Training {
            seq_len: run.seq(),
            global_batch,
            finetune: Default::default(),
            offload: Default::default(),
        },
        layout,
        activations: ActivationOptions {
            flash_attention,
            ..ActivationOptions::default()
        },
        overheads: Overheads {
            framework: row_framework(run, fam),
            kernels,
            overlap,
            moe_routing,
            // The published run fit its device: fits are checked against the capacity the device
            // reports (issue 12, "Capacity as the device has it"), with every runtime term that
            // PyTorch holds beyond the tensors counted in the peak (CUDA context, NCCL buffers,
            // cuBLAS workspaces, the allocator's reserved-over-allocated gap: runtime_memory.rs),
            // not against the planner's uncited 90% planning margin.
            usable_fraction: 1.0,
            // CUDA context, NCCL buffers and cuBLAS workspaces as measured (runtime_memory).
            ..runtime
        },
        serving: Serving {
            tp: serve_tp,
            ..Serving::default()
        },
        calibration: None,
    };
    Ok(MappedRun {
        scenario,
        model_source,
        defaults,
        notes,
    })
}

// ---------------------------------------------------------------------------
// Evaluating and comparing.

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

/// Rank of the published mesh in the mesh search of the row's scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchRank {
    /// Candidates the search considered.
    pub candidates: u64,
    /// Candidates that passed every rule and fit.
    pub feasible: u64,
    /// 1-based rank of the best feasible candidate with the published dp, tp, pp, cp, ep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
    /// 1-based rank of the published mesh among distinct meshes: each mesh counted once,
    /// at its best candidate (ZeRO stage, recompute, micro-batch, schedule as the search
    /// chose them), so one faster mesh's several knob settings count as one mesh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh_rank: Option<u64>,
    /// The knobs of that candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_knobs: Option<Knobs>,
    /// Its predicted step time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_step_s: Option<f64>,
    /// The search's first candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_dims: Option<MeshDims>,
    /// Its predicted step time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_step_s: Option<f64>,
    /// Why the published mesh is not feasible (candidates by reason), when it is not.
    pub rejected_reasons: Vec<ReasonCount>,
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
}

impl RowResult {
    /// `|predicted / measured − 1|`, when compared.
    pub fn abs_error(&self) -> Option<f64> {
        self.comparison.as_ref().map(|c| c.relative_error.abs())
    }
}

/// |error| statistics of a group of rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorStats {
    /// Rows in the group.
    pub rows: usize,
    /// Rows compared.
    pub compared: usize,
    /// Rows not representable.
    pub not_representable: usize,
    /// Median |error|.
    pub median: Option<f64>,
    /// 90th percentile |error| (linear interpolation between order statistics).
    pub p90: Option<f64>,
    /// Largest |error|.
    pub max: Option<f64>,
    /// Share of compared rows with |error| ≤ 10%.
    pub within_10: Option<f64>,
    /// Share of compared rows with |error| ≤ 25%.
    pub within_25: Option<f64>,
}

impl ErrorStats {
    /// Reads the fields serde writes for these statistics from a JSON object, through
    /// `serde_json::Value` as [`PageReply::from_json`] reads (see there why).
    pub fn from_value(v: &serde_json::Value) -> Result<Self, String> {
        use crate::base::json_value::{count, maybe};
        Ok(ErrorStats {
            rows: count(v, "rows")?,
            compared: count(v, "compared")?,
            not_representable: count(v, "not_representable")?,
            median: maybe(v, "median")?,
            p90: maybe(v, "p90")?,
            max: maybe(v, "max")?,
            within_10: maybe(v, "within_10")?,
            within_25: maybe(v, "within_25")?,
        })
    }
}

/// The `q`-quantile (0..=1) of ascending `sorted` by linear interpolation between the
/// order statistics at `q·(n−1)` (Hyndman & Fan 1996, type 7; numpy's default).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let (a, b) = (sorted[lo.min(n - 1)], sorted[hi.min(n - 1)]);
    Some(a + (b - a) * (pos - lo as f64))
}

/// Statistics of relative errors (signed; their absolute values are summarised)
/// of `compared` rows, in a group that also holds `not_representable` rows.
pub fn error_stats(errors: &[f64], not_representable: usize) -> ErrorStats {
    let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let n = abs.len();
    let share =
        |limit: f64| (n > 0).then(|| abs.iter().filter(|e| **e <= limit).count() as f64 / n as f64);
    ErrorStats {
        rows: n + not_representable,
        compared: n,
        not_representable,
        median: quantile(&abs, 0.5),
        p90: quantile(&abs, 0.9),
        max: abs.last().copied(),
        within_10: share(0.10),
        within_25: share(0.25),
    }
}

/// Rows sharing a reason for not being representable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonTally {
    /// The reason.
    pub reason: String,
    /// Row ids.
    pub rows: Vec<String>,
}

/// Summary of one group (a quantity, a source, or a union of quantities).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Group name.
    pub group: String,
    /// |error| statistics.
    pub stats: ErrorStats,
    /// Why rows are not representable.
    pub not_representable: Vec<ReasonTally>,
}

/// Adds row `id` to the tally of `reason` in `tallies`, or a new tally after the others.
pub fn tally_reason(tallies: &mut Vec<ReasonTally>, reason: &str, id: &str) {
    match tallies.iter_mut().find(|t| t.reason == reason) {
        Some(t) => t.rows.push(id.to_string()),
        None => tallies.push(ReasonTally {
            reason: reason.to_string(),
            rows: vec![id.to_string()],
        }),
    }
}

/// One [`GroupSummary`] per source of `rows`, in first-seen order, each made by
/// `summarize(source, the rows of that source)`.
pub fn summarize_by_source<R>(
    rows: &[R],
    source: impl Fn(&R) -> &str,
    summarize: impl Fn(&str, &[&R]) -> GroupSummary,
) -> Vec<GroupSummary> {
    let mut sources: Vec<&str> = Vec::new();
    for r in rows {
        if !sources.contains(&source(r)) {
            sources.push(source(r));
        }
    }
    sources
        .iter()
        .map(|s| {
            let group: Vec<&R> = rows.iter().filter(|r| source(r) == *s).collect();
            summarize(s, &group)
        })
        .collect()
}

fn summarize_group(group: &str, rows: &[&RowResult]) -> GroupSummary {
    let errors: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.comparison.as_ref().map(|c| c.relative_error))
        .collect();
    let mut tallies: Vec<ReasonTally> = Vec::new();
    for r in rows {
        if let Some(reason) = &r.not_representable {
            tally_reason(&mut tallies, reason, &r.id);
        }
    }
    let not_representable = rows.len() - errors.len();
    GroupSummary {
        group: group.to_string(),
        stats: error_stats(&errors, not_representable),
        not_representable: tallies,
    }
}

/// Summary of the mesh-search ranks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchSummary {
    /// What was searched and how.
    pub method: String,
    /// Rows searched (representable rows with a full layout).
    pub rows: usize,
    /// Distinct scenarios searched (rows of one run share a search).
    pub searches: usize,
    /// Rows whose published mesh is feasible in the search.
    pub ranked: usize,
    /// Rows whose published mesh ranks in the top 10.
    pub top_10: usize,
    /// `top_10 / rows`.
    pub top_10_share: Option<f64>,
    /// Median rank of the ranked rows.
    pub median_rank: Option<f64>,
    /// Rows whose published mesh is in the top 10 distinct meshes ([`SearchRank::mesh_rank`]).
    pub mesh_top_10: usize,
    /// `mesh_top_10 / rows`.
    pub mesh_top_10_share: Option<f64>,
    /// Median [`SearchRank::mesh_rank`] of the ranked rows.
    pub median_mesh_rank: Option<f64>,
    /// Rows whose published mesh the search rejects, by reason (a row may have several).
    pub rejected: Vec<ReasonTally>,
}

/// Everything one validation run produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidationReport {
    /// Rows in the dataset.
    pub dataset_rows: usize,
    /// Conventions of the comparison, in words.
    pub conventions: Vec<String>,
    /// One result per row, in dataset order.
    pub rows: Vec<RowResult>,
    /// Summary per quantity, then tokens/s + iteration time together, then all rows.
    pub by_quantity: Vec<GroupSummary>,
    /// Summary per source.
    pub by_source: Vec<GroupSummary>,
    /// The mesh-search summary, when searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchSummary>,
    /// The same groups over the rows that record their first-seen error, by that error:
    /// how the model did on runs before anyone working on it had seen them.
    #[serde(default)]
    pub first_seen: Vec<GroupSummary>,
    /// The groups of `by_quantity` today, over those same rows, beside `first_seen`.
    #[serde(default)]
    pub first_seen_today: Vec<GroupSummary>,
}

/// Name of the summary group of tokens/s and iteration-time rows together.
pub const TIME_GROUP: &str = "tokens/s + iteration time";
/// Name of the summary group of every row.
pub const ALL_GROUP: &str = "all quantities";
/// Name of the summary group of every time quantity (tokens/s, iteration time, MFU, TFLOP/s).
pub const ALL_TIME_GROUP: &str = "all time quantities";

/// Whether a quantity is a training step's time (tokens/s, iteration time, MFU, TFLOP/s).
fn is_step_time(q: Quantity) -> bool {
    matches!(
        q,
        Quantity::TokensPerSPerGpu
            | Quantity::IterationTimeS
            | Quantity::Mfu
            | Quantity::TflopsPerGpuReported
    )
}

/// One group's statistics over the signed errors `error` gives each row (`None`: not
/// representable), with the reasons `reason` gives.
fn summarize_errors(
    group: &str,
    rows: &[&RowResult],
    error: impl Fn(&RowResult) -> Option<f64>,
    reason: impl Fn(&RowResult) -> Option<String>,
) -> GroupSummary {
    let errors: Vec<f64> = rows.iter().filter_map(|r| error(r)).collect();
    let mut tallies: Vec<ReasonTally> = Vec::new();
    for r in rows.iter().filter(|r| error(r).is_none()) {
        let why = reason(r).unwrap_or_else(|| "not compared".to_string());
        tally_reason(&mut tallies, &why, &r.id);
    }
    GroupSummary {
        group: group.to_string(),
        stats: error_stats(&errors, rows.len() - errors.len()),
        not_representable: tallies,
    }
}

/// The first-seen groups (tokens/s + iteration time, all time quantities, peak memory, KV
/// pool, all) over the rows that record a first-seen error, by `error`.
fn first_seen_groups(
    rows: &[RowResult],
    error: impl Fn(&RowResult) -> Option<f64> + Copy,
    reason: impl Fn(&RowResult) -> Option<String> + Copy,
) -> Vec<GroupSummary> {
    let seen: Vec<&RowResult> = rows.iter().filter(|r| r.first_seen.is_some()).collect();
    if seen.is_empty() {
        return Vec::new();
    }
    let pick = |f: &dyn Fn(Quantity) -> bool| -> Vec<&RowResult> {
        seen.iter().copied().filter(|r| f(r.quantity)).collect()
    };
    let groups: [(&str, Vec<&RowResult>); 5] = [
        (
            TIME_GROUP,
            pick(&|q| matches!(q, Quantity::TokensPerSPerGpu | Quantity::IterationTimeS)),
        ),
        (ALL_TIME_GROUP, pick(&is_step_time)),
        (
            Quantity::PeakMemoryGib.id(),
            pick(&|q| q == Quantity::PeakMemoryGib),
        ),
        ("kv pool", pick(&Quantity::is_kv_pool)),
        (ALL_GROUP, seen.clone()),
    ];
    groups
        .iter()
        .filter(|(_, g)| !g.is_empty())
        .map(|(name, g)| summarize_errors(name, g, error, reason))
        .collect()
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
        "peak_memory_gib: predicted torch.cuda.max_memory_reserved over the pipeline stages / 2^30 (torchtitan logs max_reserved_gib); torchtitan rows use torchtitan's loss semantics",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
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
        // the reserved peak, without the CUDA context and NCCL buffers nvidia-smi adds.
        peak_memory_gib: eval.training.peak_reserved_bytes / GIB,
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

/// A serving engine's KV pool (`kv_tokens` per replica, `kv_memory_gib` per GPU) set against
/// the pool [`crate::memory::serving::serving_plan`] sizes as the engine does
/// (memory/engine_kv_pool.rs: vLLM's profiled non-KV memory, SGLang's static fraction).
fn compare_kv_pool(run: &PublishedRun) -> Result<(Comparison, Vec<String>, String), String> {
    use crate::input::scenario::ServeDtype;
    use crate::input::serving_engine::{EngineProfile, ServingEngine};
    if !run.other_keys.is_empty() {
        let keys: Vec<&str> = run.other_keys.keys().map(String::as_str).collect();
        return Err(format!(
            "keys this reader does not know: {}",
            keys.join(", ")
        ));
    }
    let gpu_id = dataset_gpu_preset(&run.gpu_type)
        .ok_or_else(|| format!("no GPU preset for gpu_type '{}'", run.gpu_type))?;
    let gpu = gpu_preset(&gpu_id).ok_or_else(|| format!("GPU preset '{gpu_id}' is missing"))?;
    let key = crate::edges::serving_validation::serving_model_key(&run.model_name)
        .ok_or_else(|| format!("model '{}' is not a known public model", run.model_name))?;
    let (_, spec, model_source) =
        model_for_key(key).ok_or_else(|| format!("known model '{key}' has no shapes"))?;
    let weight_dtype = match run.precision {
        Some(RunPrecision::Fp8) => ServeDtype::Fp8,
        _ => ServeDtype::Bf16,
    };
    let kv_dtype = match run.kv_dtype.as_deref() {
        None => weight_dtype,
        Some(d) => ServeDtype::from_id(d)
            .ok_or_else(|| format!("kv_dtype '{d}' is not bf16, fp8, int8 or int4"))?,
    };
    let engine = match run.engine.as_deref() {
        None | Some("vllm") => ServingEngine::Vllm,
        Some("sglang") => ServingEngine::Sglang,
        Some(e) => return Err(format!("engine '{e}' is not vllm or sglang")),
    };
    let mut notes = vec![format!("model shapes: {model_source}")];
    let mut serving = Serving {
        weight_dtype,
        kv_dtype,
        tp: run.tp,
        pp: run.pp,
        engine,
        ..Serving::default()
    };
    match engine {
        ServingEngine::Vllm => {
            serving.memory_utilization = run.memory_fraction.unwrap_or(0.9);
            // vLLM sizes its pool after a profiling forward (memory/engine_kv_pool.rs).
            serving.engine_profile = Some(EngineProfile::default());
            notes.push(
                "vLLM's default profile: 8192 batched tokens, 1024 sequences, 1.79 GiB non-torch"
                    .to_string(),
            );
        }
        ServingEngine::Sglang => serving.mem_fraction_static = run.memory_fraction,
    }
    let gpus = u64::from(run.tp) * u64::from(run.pp);
    let nodes = u32::try_from(gpus.div_ceil(u64::from(gpu.gpus_per_node.max(1)))).unwrap_or(1);
    let cluster = Cluster::of(gpu, nodes.max(1));
    let plan = crate::memory::serving::serving_plan(&spec, &serving, &cluster).map_err(|e| {
        format!(
            "the serving model refuses the replica: {}: {}",
            e.field, e.reason
        )
    })?;
    let pool = plan.kv_budget_per_gpu.value;
    let per_token = plan.kv_bytes_per_token_per_gpu.value;
    let predicted = match run.quantity {
        Quantity::KvMemoryGib => pool / GIB,
        _ if per_token > 0.0 => pool / per_token,
        _ => 0.0,
    };
    notes.push(format!(
        "KV pool {:.2} GiB per GPU at {per_token:.0} B per token per GPU",
        pool / GIB
    ));
    if !predicted.is_finite() || predicted <= 0.0 {
        return Err(format!(
            "the predicted pool is {predicted}, not a positive number"
        ));
    }
    let comparison = Comparison {
        predicted,
        relative_error: predicted / run.value - 1.0,
        flop_convention: None,
        breakdown: Breakdown::default(),
        rule_violations: Vec::new(),
    };
    Ok((comparison, notes, model_source.to_string()))
}

/// The micro-batch of a row that does not state it: torchtitan's pipeline default splits each
/// data-parallel rank's batch into `pp` micro-batches (torchtitan 9dec370, 2024-12,
/// `pipelining_utils.py` `build_pipeline_schedule`: `n_microbatches = pipeline_parallel_degree`
/// when `pipeline_parallel_microbatches` is None); every other row takes 1.
fn default_micro_batch(
    run: &PublishedRun,
    fam: Family,
    global_batch: u32,
    dp: u32,
    defaults: &mut Vec<String>,
) -> u32 {
    let local = global_batch / dp.max(1);
    if fam == Family::Torchtitan && run.pp > 1 && local.is_multiple_of(run.pp) && local > 0 {
        let b = local / run.pp;
        defaults.push(format!(
            "micro_batch not stated: {b} (torchtitan splits the local batch of {local} into pp = {} micro-batches)",
            run.pp
        ));
        return b;
    }
    defaults.push("micro_batch not stated: 1".to_string());
    1
}

/// The expert-TP degree of a row: no row states it, so it takes its recipe's value.
fn expert_tp_of(run: &PublishedRun, defaults: &mut Vec<String>) -> u32 {
    if run.ep <= 1 {
        return 1;
    }
    if run.source.starts_with("MBridge") {
        // Megatron-Bridge's MoE performance recipes start from BASE_QWEN3_*_CONFIG /
        // BASE_DEEPSEEK_V3_CONFIG = WorkloadBaseConfig(expert_tensor_parallel_size=1)
        // (NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/{qwen3,deepseek}/
        // workload_base_configs.py).
        if run.tp > 1 {
            defaults.push(
                "expert_tp not stated: 1 (Megatron-Bridge recipe: expert_tensor_parallel_size=1, scripts/performance/configs/*/workload_base_configs.py)"
                    .to_string(),
            );
        }
        1
    } else {
        // Megatron-LM sets --expert-tensor-parallel-size to the TP size when it is unset
        // (megatron/training/arguments.py).
        if run.tp > 1 {
            defaults.push(format!(
                "expert_tp not stated: {} (Megatron-LM's default, the TP size)",
                run.tp
            ));
        }
        run.tp
    }
}

/// Runs the search on a row's scenario and finds its published mesh.
fn search_rank(run: &PublishedRun, scenario: &Scenario) -> Result<SearchRank, String> {
    // The default space; the output caps are lifted and every knob setting kept as its own
    // row, so both ranks come from one search: the knob-level position, and the mesh's place
    // in the default list (one row per mesh at its best candidate, `keep_best_per_mesh`),
    // which is the first position counting each faster mesh once.
    let mut space = SearchSpace {
        max_results: usize::MAX,
        max_rejected: usize::MAX,
        one_row_per_mesh: false,
        ..SearchSpace::default()
    };
    // The search proposes what the row's framework ran (as `Framework::runs_schedule` does for
    // schedules): the Megatron-LM of Narayanan et al. 2021 and Korthikanti et al. 2022 keeps a
    // full model copy per data-parallel worker (Narayanan et al. 2021 §2.1; its Table 2 runs
    // ZeRO-3 through DeepSpeed as the alternative), without the distributed optimizer of later
    // Megatron-LM (`--use-distributed-optimizer`, megatron/optimizer/distrib_optimizer.py, first
    // committed 2022-03-09 in NVIDIA/Megatron-LM 28b63ec78b, after Narayanan's runs); the
    // rows map to DDP (map_run's stated default), so their searches propose DDP only.
    if family(&run.source) == Family::MegatronPaper && !run.fsdp {
        space.zero_stages = vec![ZeroStage::Ddp];
    }
    let result = search_scenario(scenario, &space, CostOptions::default(), None)
        .map_err(|e| e.to_string())?;
    let published = MeshDims {
        dp: scenario.layout.dp,
        tp: run.tp,
        pp: run.pp,
        cp: run.cp,
        ep: run.ep,
        expert_tp: scenario.layout.expert_tp,
    };
    let at = result.feasible.iter().position(|f| f.dims == published);
    let mut rejected_reasons: Vec<ReasonCount> = Vec::new();
    if at.is_none() {
        let mut counts = [0u64; RejectReason::ALL.len()];
        for block in result.rejected.iter().filter(|b| b.dims == published) {
            for r in block.reasons.iter() {
                counts[r as usize] += block.candidates;
            }
        }
        rejected_reasons = RejectReason::ALL
            .iter()
            .zip(counts)
            .filter(|(_, c)| *c > 0)
            .map(|(r, c)| ReasonCount {
                reason: r.key().to_string(),
                candidates: c,
            })
            .collect();
        if rejected_reasons.is_empty() {
            rejected_reasons.push(ReasonCount {
                reason: "not_enumerated".to_string(),
                candidates: 0,
            });
        }
    }
    let top = result.feasible.first();
    let mesh_rank = at.map(|i| {
        let faster: std::collections::HashSet<MeshDims> =
            result.feasible[..i].iter().map(|f| f.dims).collect();
        faster.len() as u64 + 1
    });
    Ok(SearchRank {
        candidates: result.candidates,
        feasible: result.feasible_count,
        rank: at.map(|i| i as u64 + 1),
        mesh_rank,
        best_knobs: at.map(|i| result.feasible[i].knobs),
        published_step_s: at.map(|i| result.feasible[i].step_s),
        top_dims: top.map(|f| f.dims),
        top_step_s: top.map(|f| f.step_s),
        rejected_reasons,
    })
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

/// How far a published run lies from a scenario, for "the rows nearest yours": the
/// model size and cluster size as orders of magnitude (|log10| of their ratios), plus
/// one for another GPU and a half each for another TP or PP degree. A ranking aid,
/// not a physical quantity: rows at distance 0 are the same shape of run.
pub fn nearness(
    run: &PublishedRun,
    params_b: f64,
    gpus: u64,
    gpu_id: &str,
    tp: u32,
    pp: u32,
) -> f64 {
    shape_nearness(&RunShape::of(run), params_b, gpus, gpu_id, tp, pp)
}

/// The fields of a published run that [`nearness`] reads, so a run known only by
/// them (a [`PageRow`] the validation worker sent) is ranked by the same formula.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunShape<'a> {
    /// Published parameter count, billions.
    pub params_b: f64,
    /// GPUs of the run.
    pub gpus: u32,
    /// The dataset's GPU name (`A100-80GB`, `H100-80GB`…).
    pub gpu_type: &'a str,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
}

impl<'a> RunShape<'a> {
    /// The shape of a published run.
    pub fn of(run: &'a PublishedRun) -> Self {
        Self {
            params_b: run.params_b,
            gpus: run.gpus,
            gpu_type: &run.gpu_type,
            tp: run.tp,
            pp: run.pp,
        }
    }
}

/// [`nearness`] of a run given by its [`RunShape`].
pub fn shape_nearness(
    run: &RunShape<'_>,
    params_b: f64,
    gpus: u64,
    gpu_id: &str,
    tp: u32,
    pp: u32,
) -> f64 {
    let ratio = |a: f64, b: f64| (a.max(1e-9) / b.max(1e-9)).log10().abs();
    let run_gpu = dataset_gpu_preset(run.gpu_type).unwrap_or_default();
    let mut d = ratio(run.params_b, params_b) + ratio(f64::from(run.gpus), gpus as f64);
    if run_gpu != gpu_id {
        d += 1.0;
    }
    if run.tp != tp {
        d += 0.5;
    }
    if run.pp != pp {
        d += 0.5;
    }
    d
}

/// The GPU names of the published datasets (`public-runs.json`, `serving-runs.json`) and
/// the [`gpu_preset`] id of each.
pub const DATASET_GPUS: [(&str, &str); 5] = [
    ("A100-80GB", "a100-80gb"),
    ("H100-80GB", "h100-sxm"),
    ("H100-96GB", "h100-96gb"),
    ("H200", "h200"),
    ("MI300X", "mi300x"),
];

/// The [`gpu_preset`] id of a dataset's GPU name: a name of [`DATASET_GPUS`] exactly, a
/// preset's own id (any case, `_` or space for `-`: `B200`, `GB200-NVL72`, `MI325X`), or a
/// device name as the driver prints it (`NVIDIA H800`, `H100 SXM5 80GB`,
/// [`gpu_preset_for_device`]), so a dataset from elsewhere is representable on every GPU
/// that has a preset. `None` for PCIe and NVL cards (other clocks, power and links than the
/// SXM parts the presets describe; GB200 NVL72 excepted) and for GPUs without a preset.
pub fn dataset_gpu_preset(gpu_type: &str) -> Option<String> {
    if let Some((_, id)) = DATASET_GPUS.iter().find(|(name, _)| *name == gpu_type) {
        return Some((*id).to_string());
    }
    let normalized: String = gpu_type
        .trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    if let Some(g) = gpu_preset(&normalized) {
        return Some(g.id);
    }
    let other_part = normalized.contains("pcie")
        || (normalized.contains("nvl") && !normalized.contains("gb200"));
    if other_part {
        return None;
    }
    gpu_preset_for_device(&normalized).map(|g| g.id)
}

/// The published dataset built into meshplan (`validation/public-runs.json`).
pub const PUBLIC_RUNS_JSON: &str = include_str!("../../../validation/public-runs.json");

/// Builds the summaries of already evaluated rows (`searches`: distinct searches run, if any).
pub fn summarize(
    dataset_rows: usize,
    rows: Vec<RowResult>,
    searches: Option<usize>,
) -> ValidationReport {
    let mut by_quantity = Vec::new();
    for q in Quantity::ALL {
        let group: Vec<&RowResult> = rows.iter().filter(|r| r.quantity == q).collect();
        if !group.is_empty() {
            by_quantity.push(summarize_group(q.id(), &group));
        }
    }
    let time: Vec<&RowResult> = rows
        .iter()
        .filter(|r| {
            matches!(
                r.quantity,
                Quantity::TokensPerSPerGpu | Quantity::IterationTimeS
            )
        })
        .collect();
    by_quantity.push(summarize_group(TIME_GROUP, &time));
    let all: Vec<&RowResult> = rows.iter().collect();
    by_quantity.push(summarize_group(ALL_GROUP, &all));

    let by_source = summarize_by_source(&rows, |r| r.source.as_str(), summarize_group);

    let search = searches.map(|n| search_summary(&rows, n));
    let first_seen = first_seen_groups(
        &rows,
        |r| r.first_seen.as_ref().and_then(|f| f.relative_error),
        |r| {
            r.first_seen
                .as_ref()
                .and_then(|f| f.not_representable.clone())
        },
    );
    let first_seen_today = first_seen_groups(
        &rows,
        |r| r.comparison.as_ref().map(|c| c.relative_error),
        |r| r.not_representable.clone(),
    );
    ValidationReport {
        dataset_rows,
        conventions: conventions(),
        rows,
        by_quantity,
        by_source,
        search,
        first_seen,
        first_seen_today,
    }
}

fn search_summary(rows: &[RowResult], searches: usize) -> SearchSummary {
    let searched: Vec<(&RowResult, &SearchRank)> = rows
        .iter()
        .filter_map(|r| r.search.as_ref().map(|s| (r, s)))
        .collect();
    let mut ranks: Vec<f64> = searched
        .iter()
        .filter_map(|(_, s)| s.rank.map(|r| r as f64))
        .collect();
    ranks.sort_by(f64::total_cmp);
    let top_10 = searched
        .iter()
        .filter(|(_, s)| s.rank.is_some_and(|r| r <= 10))
        .count();
    let mut mesh_ranks: Vec<f64> = searched
        .iter()
        .filter_map(|(_, s)| s.mesh_rank.map(|r| r as f64))
        .collect();
    mesh_ranks.sort_by(f64::total_cmp);
    let mesh_top_10 = mesh_ranks.iter().filter(|r| **r <= 10.0).count();
    let mut rejected: Vec<ReasonTally> = Vec::new();
    for (row, s) in &searched {
        for rc in &s.rejected_reasons {
            tally_reason(&mut rejected, &rc.reason, &row.id);
        }
    }
    SearchSummary {
        method: "planner_core::mesh::search_scenario on each row's scenario with the default SearchSpace (output caps lifted so every feasible candidate is ranked); mesh rank = 1-based position of the published dp, tp, pp, cp, ep in the search's list, which holds each mesh once at its best ZeRO stage, recompute, micro-batch and schedule (SearchSpace::one_row_per_mesh), by predicted step time; rank = the position of its best candidate when every knob setting is its own row".to_string(),
        rows: searched.len(),
        searches,
        ranked: ranks.len(),
        top_10,
        top_10_share: (!searched.is_empty()).then(|| top_10 as f64 / searched.len() as f64),
        median_rank: quantile(&ranks, 0.5),
        mesh_top_10,
        mesh_top_10_share: (!searched.is_empty())
            .then(|| mesh_top_10 as f64 / searched.len() as f64),
        median_mesh_rank: quantile(&mesh_ranks, 0.5),
        rejected,
    }
}

/// Parses `json` and validates every row.
pub fn run_validation(
    json: &str,
    options: ValidationOptions,
) -> Result<ValidationReport, FieldError> {
    let runs = parse_runs(json)?;
    Ok(validate_runs(&runs, options))
}

/// One summary row of the page's accuracy section ([`PageSummary`]): a group's name and
/// its [`ErrorStats`], whose fields sit beside `group` in the JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageGroup {
    /// Group name (a quantity id, [`TIME_GROUP`] or [`ALL_GROUP`]).
    pub group: String,
    /// |error| statistics of the group.
    #[serde(flatten)]
    pub stats: ErrorStats,
}

/// One compared row of the page's accuracy section ([`PageSummary`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageRow {
    /// Row id.
    pub id: String,
    /// Model name as published.
    pub model_name: String,
    /// Source of the row.
    pub source: String,
    /// The published layout, in words.
    pub layout: String,
    /// The quantity's id ([`Quantity::id`]).
    pub quantity: String,
    /// The published value.
    pub measured: f64,
    /// meshplan's prediction.
    pub predicted: f64,
    /// predicted / measured − 1.
    pub relative_error: f64,
    /// Published parameter count, billions.
    pub params_b: f64,
    /// GPUs of the run.
    pub gpus: u32,
    /// The dataset's GPU name.
    pub gpu_type: String,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
    /// The dataset's notes on the run.
    pub notes: String,
}

impl PageRow {
    /// The fields [`nearness`] reads.
    pub fn shape(&self) -> RunShape<'_> {
        RunShape {
            params_b: self.params_b,
            gpus: self.gpus,
            gpu_type: &self.gpu_type,
            tp: self.tp,
            pp: self.pp,
        }
    }
}

/// What the page's validation worker computes: the per-quantity summary, the
/// compared rows, and the worker's own time. The app only parses it, so the page's
/// wasm does not link the evaluation of the published runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageSummary {
    /// Rows in the dataset.
    pub dataset_rows: usize,
    /// Summary per quantity, then tokens/s + iteration time, then all rows
    /// ([`ValidationReport::by_quantity`]).
    pub groups: Vec<PageGroup>,
    /// The rows that carry a first-seen error, summarised by that error
    /// ([`ValidationReport::first_seen`]): how the model did on runs it was not developed
    /// against.
    pub first_seen: Vec<PageGroup>,
    /// The same rows today ([`ValidationReport::first_seen_today`]), group for group.
    pub first_seen_today: Vec<PageGroup>,
    /// Compared rows, in dataset order.
    pub rows: Vec<PageRow>,
    /// Milliseconds the worker spent parsing, evaluating and summarising.
    pub worker_ms: f64,
}

/// A message from the page's validation worker to the page (record text,
/// [`PageReply::to_text`]; its JSON form is kept for tests and tools).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PageReply {
    /// The worker's wasm is loaded and listening: the page may post its request.
    Ready,
    /// The validation finished.
    Summary(PageSummary),
    /// The dataset did not parse.
    Failed(String),
}

impl PageReply {
    /// The reply as the worker posts it ([`crate::base::record_text`]): a head record
    /// (`Summary`, dataset rows, worker ms), then one record per group (`g`) and per
    /// row (`r`). The page reads it with [`PageReply::from_text`] and no JSON parser.
    pub fn to_text(&self) -> String {
        use crate::base::record_text::{maybe_field, record, RECORD};
        match self {
            PageReply::Ready => "Ready".to_string(),
            PageReply::Failed(e) => record(&["Failed".into(), e.clone()]),
            PageReply::Summary(s) => {
                let mut records = vec![record(&[
                    "Summary".into(),
                    s.dataset_rows.to_string(),
                    s.worker_ms.to_string(),
                ])];
                let kinds = [
                    ("g", &s.groups),
                    ("f", &s.first_seen),
                    ("t", &s.first_seen_today),
                ];
                for (kind, g) in kinds
                    .iter()
                    .flat_map(|(k, gs)| gs.iter().map(move |g| (*k, g)))
                {
                    let t = &g.stats;
                    records.push(record(&[
                        kind.into(),
                        g.group.clone(),
                        t.rows.to_string(),
                        t.compared.to_string(),
                        t.not_representable.to_string(),
                        maybe_field(t.median),
                        maybe_field(t.p90),
                        maybe_field(t.max),
                        maybe_field(t.within_10),
                        maybe_field(t.within_25),
                    ]));
                }
                for r in &s.rows {
                    records.push(record(&[
                        "r".into(),
                        r.id.clone(),
                        r.model_name.clone(),
                        r.source.clone(),
                        r.layout.clone(),
                        r.quantity.clone(),
                        r.measured.to_string(),
                        r.predicted.to_string(),
                        r.relative_error.to_string(),
                        r.params_b.to_string(),
                        r.gpus.to_string(),
                        r.gpu_type.clone(),
                        r.tp.to_string(),
                        r.pp.to_string(),
                        r.notes.clone(),
                    ]));
                }
                records.join(&RECORD.to_string())
            }
        }
    }

    /// Reads what [`PageReply::to_text`] wrote.
    pub fn from_text(text: &str) -> Result<Self, String> {
        use crate::base::record_text::{count, number, split, text as field};
        let records = split(text);
        let Some((head, rest)) = records.split_first() else {
            return Err("an empty validation reply".to_string());
        };
        match (head.first().map(String::as_str), head.len()) {
            (Some("Ready"), 1) if rest.is_empty() => return Ok(PageReply::Ready),
            (Some("Failed"), 2) if rest.is_empty() => {
                return Ok(PageReply::Failed(field(head, 1, "Failed")?))
            }
            (Some("Summary"), 3) => {}
            _ => return Err("not a validation reply".to_string()),
        }
        let mut summary = PageSummary {
            dataset_rows: count(head, 1, "dataset_rows")?,
            groups: Vec::new(),
            first_seen: Vec::new(),
            first_seen_today: Vec::new(),
            rows: Vec::new(),
            worker_ms: number(head, 2, "worker_ms")?,
        };
        for f in rest {
            match (f.first().map(String::as_str), f.len()) {
                (Some(kind @ ("g" | "f" | "t")), 10) => {
                    let group = page_group(f)?;
                    match kind {
                        "g" => summary.groups.push(group),
                        "f" => summary.first_seen.push(group),
                        _ => summary.first_seen_today.push(group),
                    }
                }
                (Some("r"), 15) => summary.rows.push(PageRow {
                    id: field(f, 1, "id")?,
                    model_name: field(f, 2, "model_name")?,
                    source: field(f, 3, "source")?,
                    layout: field(f, 4, "layout")?,
                    quantity: field(f, 5, "quantity")?,
                    measured: number(f, 6, "measured")?,
                    predicted: number(f, 7, "predicted")?,
                    relative_error: number(f, 8, "relative_error")?,
                    params_b: number(f, 9, "params_b")?,
                    gpus: count(f, 10, "gpus")?,
                    gpu_type: field(f, 11, "gpu_type")?,
                    tp: count(f, 12, "tp")?,
                    pp: count(f, 13, "pp")?,
                    notes: field(f, 14, "notes")?,
                }),
                _ => {
                    return Err("a validation reply record of neither a group nor a row".to_string())
                }
            }
        }
        Ok(PageReply::Summary(summary))
    }

    /// Reads a reply from its JSON text (what `serde_json::to_string` wrote).
    ///
    /// Equal to `serde_json::from_str::<PageReply>` (the tests check it), read through
    /// `serde_json::Value`. The page reads the record text instead ([`PageReply::from_text`]),
    /// so it links no JSON parser.
    pub fn from_json(text: &str) -> Result<Self, String> {
        use crate::base::json_value::{count, field, list, number, string};
        use serde_json::Value;
        let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if v.as_str() == Some("Ready") {
            return Ok(PageReply::Ready);
        }
        if let Some(e) = v.get("Failed") {
            return e
                .as_str()
                .map(|e| PageReply::Failed(e.to_string()))
                .ok_or_else(|| "`Failed` is not a string".to_string());
        }
        let s = field(&v, "Summary")?;
        let group_of = |g: &Value| -> Result<PageGroup, String> {
            Ok(PageGroup {
                group: string(g, "group")?,
                stats: ErrorStats::from_value(g)?,
            })
        };
        Ok(PageReply::Summary(PageSummary {
            dataset_rows: count(s, "dataset_rows")?,
            groups: list(s, "groups", group_of)?,
            first_seen: list(s, "first_seen", group_of)?,
            first_seen_today: list(s, "first_seen_today", group_of)?,
            rows: list(s, "rows", |r| {
                Ok(PageRow {
                    id: string(r, "id")?,
                    model_name: string(r, "model_name")?,
                    source: string(r, "source")?,
                    layout: string(r, "layout")?,
                    quantity: string(r, "quantity")?,
                    measured: number(r, "measured")?,
                    predicted: number(r, "predicted")?,
                    relative_error: number(r, "relative_error")?,
                    params_b: number(r, "params_b")?,
                    gpus: count(r, "gpus")?,
                    gpu_type: string(r, "gpu_type")?,
                    tp: count(r, "tp")?,
                    pp: count(r, "pp")?,
                    notes: string(r, "notes")?,
                })
            })?,
            worker_ms: number(s, "worker_ms")?,
        }))
    }
}

/// One group record of [`PageReply::to_text`] (kind `g`, `f` or `t`, then nine fields).
fn page_group(f: &[String]) -> Result<PageGroup, String> {
    use crate::base::record_text::{count, maybe_number, text as field};
    Ok(PageGroup {
        group: field(f, 1, "group")?,
        stats: ErrorStats {
            rows: count(f, 2, "rows")?,
            compared: count(f, 3, "compared")?,
            not_representable: count(f, 4, "not_representable")?,
            median: maybe_number(f, 5, "median")?,
            p90: maybe_number(f, 6, "p90")?,
            max: maybe_number(f, 7, "max")?,
            within_10: maybe_number(f, 8, "within_10")?,
            within_25: maybe_number(f, 9, "within_25")?,
        },
    })
}

/// Parses `json`, validates every row (no mesh search) and condenses the report for
/// the page; `worker_ms` is left at 0 for the caller to fill in.
pub fn page_summary(json: &str) -> Result<PageSummary, FieldError> {
    let runs = parse_runs(json)?;
    let report = validate_runs(&runs, ValidationOptions { search: false });
    let page_groups = |gs: &[GroupSummary]| -> Vec<PageGroup> {
        gs.iter()
            .map(|g| PageGroup {
                group: g.group.clone(),
                stats: g.stats.clone(),
            })
            .collect()
    };
    let groups = page_groups(&report.by_quantity);
    let rows = runs
        .iter()
        .zip(&report.rows)
        .filter_map(|(run, row)| {
            let c = row.comparison.as_ref()?;
            Some(PageRow {
                id: row.id.clone(),
                model_name: run.model_name.clone(),
                source: run.source.clone(),
                layout: row.layout.clone(),
                quantity: row.quantity.id().to_string(),
                measured: row.measured,
                predicted: c.predicted,
                relative_error: c.relative_error,
                params_b: run.params_b,
                gpus: run.gpus,
                gpu_type: run.gpu_type.clone(),
                tp: run.tp,
                pp: run.pp,
                notes: run.notes.clone(),
            })
        })
        .collect();
    Ok(PageSummary {
        dataset_rows: report.dataset_rows,
        groups,
        first_seen: page_groups(&report.first_seen),
        first_seen_today: page_groups(&report.first_seen_today),
        rows,
        worker_ms: 0.0,
    })
}

/// The `n` rows nearest a scenario by [`nearness`] (ties in dataset order).
pub fn nearest_rows<'a>(
    rows: &'a [PageRow],
    params_b: f64,
    gpus: u64,
    gpu_id: &str,
    tp: u32,
    pp: u32,
    n: usize,
) -> Vec<&'a PageRow> {
    let mut scored: Vec<(f64, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (
                shape_nearness(&r.shape(), params_b, gpus, gpu_id, tp, pp),
                i,
            )
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(n).map(|(_, i)| &rows[i]).collect()
}
