//! The dataset's schema: a published row ([`PublishedRun`]), what it measured ([`Quantity`]),
//! how its source names precision, schedule, recompute and FLOP counting, its first-seen error
//! ([`FirstSeen`]); reading a dataset ([`parse_runs`], [`parse_rows`]) with each field's bounds
//! checked, and the dataset built into meshplan ([`PUBLIC_RUNS_JSON`]).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::resolve::validate::FieldError;

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

/// Which peak a memory row's source printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// `torch.cuda.max_memory_allocated`.
    Allocated,
    /// `torch.cuda.max_memory_reserved`.
    Reserved,
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
    /// `A100-80GB`, `H100-80GB`, `H100-96GB`, or any name
    /// [`dataset_gpu_preset`](super::dataset_gpu_preset) reads.
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
    /// Which peak a memory row printed; `None`: the reserved peak (torchtitan's logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_kind: Option<MemoryKind>,
    /// The training stack as the source names it (read by the validation's `stack` module).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
    /// The fine-tuning method: `full`, `lora`, `qlora`, `dora`, `lora-fa`, `ia3`, `prompt-tuning`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finetune: Option<String>,
    /// Adapter rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora_rank: Option<u32>,
    /// Adapter α.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora_alpha: Option<u32>,
    /// Targeted modules, PEFT names comma-separated (`q_proj,v_proj`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora_targets: Option<String>,
    /// Trainable parameters as the source printed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trainable_params: Option<f64>,
    /// The optimizer (`adamw`, `lora-fa`, `adamw-8bit`, `paged-adamw-8bit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimizer: Option<String>,
    /// Offload: `optimizer-cpu`, `optimizer+params-cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload: Option<String>,
    /// DeepSpeed ZeRO++ on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zeropp: Option<bool>,
    /// Prompt tuning's virtual tokens (PEFT `num_virtual_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_tokens: Option<u32>,
    /// Whether the run trains under automatic mixed precision; `false` with `precision: bf16`
    /// is a model loaded in BF16 and trained as is (BF16 optimizer state, no fp32 master).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amp: Option<bool>,
    /// The measurement in bytes, as printed (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_bytes_printed: Option<f64>,
    /// Host memory as printed, GB (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_memory_printed: Option<f64>,
    /// The unit the source printed, when it printed one (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_as_printed: Option<String>,
    /// Keys this reader does not know (the row is then not representable).
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_keys: BTreeMap<String, serde_json::Value>,
}

impl PublishedRun {
    /// Tokens per sequence of a training row (0 when unstated: [`map_run`](super::map_run)
    /// refuses those).
    pub fn seq(&self) -> u32 {
        self.seq_len.unwrap_or_default()
    }
}

/// The published dataset built into meshplan (`validation/public-runs.json`).
pub const PUBLIC_RUNS_JSON: &str = include_str!("../../../../validation/public-runs.json");

/// Published peak-memory rows of fine-tuning and ZeRO runs (`validation/memory-runs.json`).
pub const MEMORY_RUNS_JSON: &str = include_str!("../../../../validation/memory-runs.json");

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
