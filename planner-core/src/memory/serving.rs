//! Serving memory: weights and KV cache per GPU, how many sequences fit, and
//! the article's decision between more replicas, TP inside a node, and PP across nodes.
//!
//! The KV pool is sized the way vLLM sizes it: `gpu_memory_utilization × GPU
//! memory`, minus weights, minus activation workspace; what remains holds cached
//! tokens. With pipeline stages the worst stage (least room per sequence) limits
//! the replica.

use serde::{Deserialize, Serialize};

use crate::base::explain::{Term, Unit};
use crate::input::hardware::Cluster;
use crate::input::model::{ModelSpec, ParamBreakdown};
use crate::input::scenario::{ServeDtype, Serving};
use crate::memory::kv_cache::{self, fmt_bytes};
use crate::{input::attention_window, memory::engine_kv_pool};

/// Tensor-parallel degrees in the concurrency table.
pub const TABLE_TP: [u32; 4] = [1, 2, 4, 8];
/// Pipeline degrees in the concurrency table.
pub const TABLE_PP: [u32; 3] = [1, 2, 4];

/// A serving input out of range; names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingError {
    /// The offending field, e.g. `serving.memory_utilization`.
    pub field: &'static str,
    /// Why it was refused.
    pub reason: String,
}

impl std::fmt::Display for ServingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ServingError {}

fn err(field: &'static str, reason: impl Into<String>) -> ServingError {
    ServingError {
        field,
        reason: reason.into(),
    }
}

/// One pipeline stage of a replica, on one of its GPUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StagePlan {
    /// Stage index, 0-based.
    pub stage: u32,
    /// Decoder layers on this stage.
    pub layers: u32,
    /// Weight bytes per GPU of this stage.
    pub weights: Term,
    /// KV bytes per cached token per GPU of this stage.
    pub kv_per_token: Term,
    /// KV bytes per sequence of `context_len` tokens per GPU of this stage.
    pub kv_per_sequence: Term,
    /// Bytes left for the KV pool per GPU of this stage.
    pub kv_budget: Term,
    /// Sequences of `context_len` tokens this stage can hold.
    pub max_sequences: u64,
}

/// What the article's decision recommends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// One GPU holds a replica with room: run independent replicas.
    Replicas,
    /// Shard a replica with TP inside one node.
    TensorParallel,
    /// A full node is not enough: add pipeline stages across nodes.
    PipelineAcrossNodes,
    /// The cluster is too small; `tp`/`pp` say what would be needed.
    DoesNotFit,
}

/// The recommended replica shape and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The decision.
    pub decision: Decision,
    /// Tensor-parallel degree of a replica.
    pub tp: u32,
    /// Pipeline stages of a replica.
    pub pp: u32,
    /// Replicas of that shape the cluster holds (0 when it does not fit).
    pub replicas: u64,
    /// Sequences of `context_len` tokens one replica holds.
    pub max_concurrent_sequences: u64,
    /// The reason, in words, with the numbers.
    pub reason: String,
}

/// Serving memory of the replica shape given in [`Serving`] (`tp`, `pp`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingPlan {
    /// Tensor-parallel degree evaluated.
    pub tp: u32,
    /// Pipeline stages evaluated.
    pub pp: u32,
    /// Memory the engine may use per GPU: utilization × device memory.
    pub usable_per_gpu: Term,
    /// Weight bytes per GPU on the stage with the most weights.
    pub weights_per_gpu: Term,
    /// KV bytes per token for the whole model.
    pub kv_bytes_per_token: Term,
    /// KV bytes per sequence of `context_len` tokens for the whole model.
    pub kv_bytes_per_sequence: Term,
    /// KV bytes per token per GPU on the limiting stage.
    pub kv_bytes_per_token_per_gpu: Term,
    /// KV bytes per sequence per GPU on the limiting stage.
    pub kv_bytes_per_sequence_per_gpu: Term,
    /// KV pool per GPU on the limiting stage.
    pub kv_budget_per_gpu: Term,
    /// Sequences of `context_len` tokens one replica holds (value in `bytes` is a count).
    pub max_concurrent_sequences: Term,
    /// Stage that limits concurrency.
    pub limiting_stage: u32,
    /// Every stage, ascending; with more than [`MAX_LISTED_STAGES`] stages only those
    /// every other stage repeats (same layer count, dense/MoE mix and ends), which include
    /// the limiting and the heaviest stage (see `stages_note`).
    pub stages: Vec<StagePlan>,
    /// Set when `stages` lists only the distinct stages, saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages_note: Option<String>,
    /// `max_concurrent_sequences ≥ target_concurrency`.
    pub fits_target: bool,
    /// Replicas of this shape the cluster holds.
    pub replicas_on_cluster: u64,
    /// What the engine subtracts per GPU besides weights before the KV pool
    /// ([`crate::memory::engine_kv_pool::runtime_terms`]), in order.
    #[serde(default)]
    pub pool_terms: Vec<Term>,
    /// The article's decision, searched over shapes (independent of `tp`/`pp` above).
    pub recommendation: Recommendation,
}

/// One cell of the TP × PP table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConcurrencyCell {
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Whether the shape is allowed on this cluster and model (see `note`).
    pub valid: bool,
    /// Why the shape is not allowed, if it is not.
    pub note: Option<String>,
    /// Sequences of `context_len` tokens one replica holds (0 when weights do not fit).
    pub max_concurrent_sequences: u64,
    /// `max_concurrent_sequences ≥ target_concurrency`.
    pub fits_target: bool,
    /// The count with its formula.
    pub term: Term,
}

/// Decoder layers per pipeline stage. The remainder goes to the stages before the
/// last, since the last holds the output projection (vLLM `get_pp_indices`).
pub fn stage_layers(layers: u32, pp: u32) -> Vec<u32> {
    let pp = pp.max(1);
    let mut parts = vec![layers / pp; pp as usize];
    let remainder = (layers % pp) as usize;
    let n = parts.len();
    for i in 0..remainder {
        // remainder < pp, so n − 2 − i stays in range whenever pp ≥ 2.
        if let Some(part) = parts.get_mut(n.wrapping_sub(2 + i)) {
            *part += 1;
        }
    }
    parts
}

fn validate(model: &ModelSpec, serving: &Serving, cluster: &Cluster) -> Result<(), ServingError> {
    if serving.tp == 0 {
        return Err(err("serving.tp", "must be at least 1"));
    }
    if serving.pp == 0 {
        return Err(err("serving.pp", "must be at least 1"));
    }
    if serving.pp > model.layers {
        return Err(err(
            "serving.pp",
            format!(
                "{} stages exceed the model's {} layers",
                serving.pp, model.layers
            ),
        ));
    }
    if !(serving.memory_utilization > 0.0 && serving.memory_utilization <= 1.0) {
        return Err(err(
            "serving.memory_utilization",
            format!("must be in (0, 1], got {}", serving.memory_utilization),
        ));
    }
    if serving.context_len == 0 {
        return Err(err("serving.context_len", "must be at least 1 token"));
    }
    if !(serving.workspace_bytes.is_finite() && serving.workspace_bytes >= 0.0) {
        return Err(err(
            "serving.workspace_bytes",
            format!(
                "must be a finite non-negative size, got {}",
                serving.workspace_bytes
            ),
        ));
    }
    if let Some(f) = serving.mem_fraction_static {
        if !(f > 0.0 && f <= 1.0) {
            return Err(err(
                "serving.mem_fraction_static",
                format!("must be in (0, 1], got {f}"),
            ));
        }
    }
    if let Some(p) = &serving.engine_profile {
        if p.max_num_batched_tokens == 0 {
            return Err(err(
                "serving.engine_profile.max_num_batched_tokens",
                "must be at least 1 token",
            ));
        }
        if p.max_num_seqs == 0 {
            return Err(err(
                "serving.engine_profile.max_num_seqs",
                "must be at least 1 sequence",
            ));
        }
        for (field, v) in [
            ("serving.engine_profile.non_torch_bytes", p.non_torch_bytes),
            (
                "serving.engine_profile.cuda_graph_bytes",
                p.cuda_graph_bytes,
            ),
        ] {
            if let Err(m) = crate::base::bounds::BUFFER_BYTES.check(v) {
                return Err(err(field, m));
            }
        }
    }
    if !(cluster.gpu.memory_bytes.is_finite() && cluster.gpu.memory_bytes > 0.0) {
        return Err(err("cluster.gpu.memory_bytes", "must be positive"));
    }
    if cluster.nodes == 0 {
        return Err(err("cluster.nodes", "must be at least 1"));
    }
    if cluster.gpus_per_node == 0 {
        return Err(err("cluster.gpus_per_node", "must be at least 1"));
    }
    if model.layers == 0 {
        return Err(err("model.layers", "must be at least 1"));
    }
    Ok(())
}

/// Parameters of the embedding table and the output projection one GPU of `stage` holds at
/// TP `tp` (nominal scale applied): the part of `stage_params` that quantized checkpoints
/// keep in 16 bits ([`vocab_dtype_bytes`]). The vocab-parallel embedding (Megatron
/// `VocabParallelEmbedding`) sits on the first stage, the output projection on the last;
/// with tied embeddings and PP > 1 the last stage keeps its own copy for the output layer.
pub fn stage_vocab_params(
    model: &ModelSpec,
    b: &ParamBreakdown,
    tp: u32,
    pp: u32,
    stage: u32,
) -> f64 {
    let tp = f64::from(tp.max(1));
    let mut total = 0.0;
    if stage == 0 {
        total += b.embedding as f64 / tp;
    }
    if stage + 1 == pp {
        let output = if model.tied_embeddings && pp > 1 {
            u64::from(model.vocab) * u64::from(model.hidden)
        } else {
            b.output
        };
        total += output as f64 / tp;
    }
    total * model.param_scale()
}

/// Bytes per weight of the embedding table and the output projection: the 16-bit dtype when
/// the linear layers are quantized. ModelOpt's FP8, INT8 and INT4-AWQ configs leave the output
/// projection unquantized (NVIDIA/TensorRT-Model-Optimizer modelopt/torch/quantization/config.py
/// `_default_disabled_quantizer_cfg`: `"*lm_head*": {"enable": False}`) and quantize linear
/// layers only, not `nn.Embedding`; vLLM's FP8 method likewise returns `Fp8LinearMethod` for
/// `LinearBase` layers only (model_executor/layers/quantization/fp8.py `get_quant_method`),
/// so `ParallelLMHead` and `VocabParallelEmbedding` keep the unquantized method.
pub fn vocab_dtype_bytes(weight_dtype: ServeDtype) -> f64 {
    weight_dtype.bytes().max(ServeDtype::Bf16.bytes())
}

/// Parameters one GPU of `stage` holds at TP `tp` (nominal scale applied).
fn stage_params(
    model: &ModelSpec,
    b: &ParamBreakdown,
    tp: u32,
    pp: u32,
    stage: u32,
    first_layer: u32,
    layers: u32,
) -> f64 {
    let vocab = stage_vocab_params(model, b, tp, pp, stage);
    let tp = f64::from(tp.max(1));
    let dense_layers = b.dense_layers as u32;
    let range_end = first_layer + layers;
    // Dense-FFN layers come first (DeepSeek's `first_k_dense_replace`).
    let dense_here = u64::from(
        range_end
            .min(dense_layers)
            .saturating_sub(first_layer.min(dense_layers)),
    );
    let moe_here = u64::from(layers) - dense_here;
    // Megatron/vLLM shard projections, FFNs and experts over TP; norms and the router are replicated.
    let sharded = (b.attention_per_layer * u64::from(layers)
        + b.dense_ffn_per_layer * dense_here
        + (b.routed_experts_per_layer + b.shared_experts_per_layer) * moe_here)
        as f64
        / tp;
    let replicated = (b.norms_per_layer * u64::from(layers) + b.router_per_layer * moe_here) as f64;
    let mut total = sharded + replicated;
    if stage + 1 == pp {
        total += b.final_norm as f64;
    }
    total * model.param_scale() + vocab
}

/// The weights term's formula and worked arithmetic for `(params, vocab, routed)` parameters
/// on one GPU of the stage.
fn weights_arithmetic(
    dtype: ServeDtype,
    (params, vocab, routed): (f64, f64, f64),
    sixteen_bit_vocab: bool,
    weight_bytes: f64,
) -> (&'static str, String) {
    let bytes = dtype.bytes();
    if dtype == ServeDtype::Mxfp4Moe {
        return (
            "(stage params − routed experts) × 2 B + routed experts × MXFP4 bytes",
            format!(
                "({:.3}e9 − {:.3}e9) params × {bytes} B + {:.3}e9 × {} B = {}",
                params / 1e9,
                routed / 1e9,
                routed / 1e9,
                dtype.routed_expert_bytes(),
                fmt_bytes(weight_bytes)
            ),
        );
    }
    if sixteen_bit_vocab {
        (
            "(stage params − embedding/output) × bytes_per_weight + embedding/output × 2 B",
            format!(
                "({:.3}e9 − {:.3}e9) params × {} B + {:.3}e9 × {} B = {}",
                params / 1e9,
                vocab / 1e9,
                bytes,
                vocab / 1e9,
                vocab_dtype_bytes(dtype),
                fmt_bytes(weight_bytes)
            ),
        )
    } else {
        (
            "(stage params sharded / TP + replicated norms) × bytes_per_weight",
            format!(
                "{:.3}e9 params × {} B = {}",
                params / 1e9,
                bytes,
                fmt_bytes(weight_bytes)
            ),
        )
    }
}

/// What the weights term assumes of `dtype`'s layout on `stage`.
fn weights_assumption(
    dtype: ServeDtype,
    stage: u32,
    layers: u32,
    holds: &str,
    sixteen_bit_vocab: bool,
) -> String {
    let id = dtype.id();
    let layout = dtype
        .format()
        .filter(|f| *f != crate::input::number_format::NumberFormat::Bf16);
    match (layout, sixteen_bit_vocab) {
        (Some(f), _) if dtype == ServeDtype::Mxfp4Moe => format!(
            "stage {stage}: {layers} layers, {holds}; routed experts in MXFP4 ({} B a weight with its block scales), every other weight in BF16, as gpt-oss ships",
            f.bytes_per_element()
        ),
        (Some(f), true) => format!(
            "stage {stage}: {layers} layers, {holds}; linear layers in {id} ({} B a weight with its block scales), the embedding and output projection in BF16 (ModelOpt's lm_head exclusion, vLLM's linear-only quantization)",
            f.bytes_per_element()
        ),
        (Some(f), false) => format!(
            "stage {stage}: {layers} layers, {holds}; all weights in {id} ({} B a weight with its block scales)",
            f.bytes_per_element()
        ),
        (None, true) => format!(
            "stage {stage}: {layers} layers, {holds}; linear layers in {id}, the embedding and output projection in BF16 (ModelOpt's lm_head exclusion, vLLM's linear-only quantization; scales ignored)"
        ),
        (None, false) => format!(
            "stage {stage}: {layers} layers, {holds}; all weights in {id} (quantization scales ignored)"
        ),
    }
}

/// Routed-expert parameters on one GPU of the stage of `layers` layers from `first_layer`
/// (sharded over TP as [`stage_params`] shards them; nominal scale applied).
fn stage_routed_params(
    model: &ModelSpec,
    b: &ParamBreakdown,
    tp: u32,
    first_layer: u32,
    layers: u32,
) -> f64 {
    let dense_layers = b.dense_layers as u32;
    let dense_here = (first_layer + layers)
        .min(dense_layers)
        .saturating_sub(first_layer.min(dense_layers));
    let moe_here = u64::from(layers - dense_here);
    (b.routed_experts_per_layer * moe_here) as f64 / f64::from(tp.max(1)) * model.param_scale()
}

/// The numbers of one stage, without text: what [`evaluate`] explains and what the
/// recommendation compares.
#[derive(Clone, Copy, Debug, PartialEq)]
struct StageNumbers {
    /// Parameters on one GPU of the stage.
    params: f64,
    /// Their bytes.
    weight_bytes: f64,
    /// `usable − weights − workspace`.
    budget_bytes: f64,
    /// Sequences of `context_len` tokens the stage holds.
    max_sequences: u64,
}

/// One stage's numbers (no text, no heap): the single source of [`evaluate`]'s values.
#[allow(clippy::too_many_arguments)]
fn stage_numbers(
    model: &ModelSpec,
    breakdown: &ParamBreakdown,
    serving: &Serving,
    usable_bytes: f64,
    tp: u32,
    pp: u32,
    stage: u32,
    first_layer: u32,
    layers: u32,
) -> StageNumbers {
    let params = stage_params(model, breakdown, tp, pp, stage, first_layer, layers);
    let vocab = stage_vocab_params(model, breakdown, tp, pp, stage);
    // The embedding and output projection in 16 bits under quantized linear layers.
    let dtype = serving.weight_dtype;
    let routed = stage_routed_params(model, breakdown, tp, first_layer, layers);
    let weight_bytes = params * dtype.bytes()
        + vocab * (vocab_dtype_bytes(dtype) - dtype.bytes())
        + routed * (dtype.routed_expert_bytes() - dtype.bytes());
    // Windowed layers hold only their window (attention_window); the rest every token.
    let kv_per_sequence = crate::memory::window_kv::kv_bytes_per_sequence_per_gpu_value(
        model,
        serving.kv_dtype,
        tp,
        first_layer,
        layers,
        serving.context_len,
    );
    // What the engine subtracts besides weights (engine_kv_pool: workspace, or vLLM's profile).
    let budget_bytes =
        usable_bytes - weight_bytes - engine_kv_pool::runtime_bytes(model, serving, tp);
    let max_sequences = if budget_bytes > 0.0 && kv_per_sequence > 0.0 {
        (budget_bytes / kv_per_sequence).floor() as u64
    } else {
        0
    };
    StageNumbers {
        params,
        weight_bytes,
        budget_bytes,
        max_sequences,
    }
}

/// Layers and first layer of `stage` under [`stage_layers`]`(layers, pp)`, in O(1):
/// every stage holds `q = layers / pp`, and the `r = layers % pp` stages just before
/// the last (indices `pp − 1 − r ..= pp − 2`) one more.
fn stage_extent(layers: u32, pp: u32, stage: u32) -> (u32, u32) {
    let pp = pp.max(1);
    if pp == 1 {
        return (0, layers);
    }
    let (q, r) = (layers / pp, layers % pp);
    let plus_from = pp - 1 - r;
    let extra = u32::from(stage >= plus_from && stage + 1 < pp);
    let first = stage * q + stage.saturating_sub(plus_from).min(r);
    (first, q + extra)
}

/// The stage holding decoder layer `layer` under [`stage_layers`]`(layers, pp)`.
fn stage_of_layer(layers: u32, pp: u32, layer: u32) -> u32 {
    let pp = pp.max(1);
    if pp == 1 {
        return 0;
    }
    let (q, r) = (layers / pp, layers % pp);
    let plus_from = pp - 1 - r;
    let short_end = plus_from * q;
    let stage = if layer < short_end {
        layer / q.max(1)
    } else {
        plus_from + (layer - short_end) / (q + 1)
    };
    stage.min(pp - 1)
}

/// Stages of a replica worth evaluating, ascending and distinct: every stage when
/// `pp ≤` [`MAX_LISTED_STAGES`], else the stages that every other stage repeats.
///
/// A stage's numbers depend only on whether it is the first or the last, on its layer
/// count (`q` or `q + 1`, see [`stage_extent`]) and on how many of its layers are dense
/// (dense layers come first). The middle stages therefore form runs of identical stages,
/// broken where the layer count steps up and at the dense/MoE boundary; the first and
/// the last stage of every run are picked, so the least (first) and the greatest (last)
/// of any per-stage number over the picks equal those over all stages.
fn listed_stages(layers: u32, dense_layers: u32, pp: u32) -> ([u32; 16], usize) {
    let pp = pp.clamp(1, layers.max(1));
    let mut picks = [0u32; 16];
    if pp as usize <= MAX_LISTED_STAGES {
        for (slot, stage) in picks.iter_mut().zip(0..pp) {
            *slot = stage;
        }
        return (picks, pp as usize);
    }
    let last = pp - 1;
    let plus_from = last - layers % pp;
    let dense = dense_layers.min(layers);
    let mut n = 0;
    let mut pick = |stage: u32| {
        picks[n] = stage.min(last);
        n += 1;
    };
    pick(0);
    pick(1);
    pick(plus_from.saturating_sub(1));
    pick(plus_from);
    pick(last - 1);
    pick(last);
    for layer in [dense.saturating_sub(1), dense] {
        let s = stage_of_layer(layers, pp, layer.min(layers - 1));
        pick(s.saturating_sub(1));
        pick(s);
        pick(s + 1);
    }
    let picks_used = &mut picks[..n];
    picks_used.sort_unstable();
    let mut distinct = 0;
    for i in 0..n {
        if i == 0 || picks[i] != picks[distinct - 1] {
            picks[distinct] = picks[i];
            distinct += 1;
        }
    }
    (picks, distinct)
}

/// The stages [`listed_stages`] picks and, for a periodic sliding-window pattern (one full
/// layer every `k`), the next `k − 1` stages after each pick inside its run.
///
/// Equal stages of a run start `q` layers apart, so how many of a stage's layers are full
/// (`⌊(first + q)/k⌋ − ⌊first/k⌋`, [`attention_window::windowed_layers_in`]) depends on
/// `first mod k` only, which repeats every `k / gcd(q, k) ≤ k` stages: the first `k`
/// stages from each pick hold every windowed-layer count the run has, so the least and
/// greatest per-stage numbers are still among the picks. Work: at most `12·k` stages
/// (Gemma 2 and GPT-OSS: `k = 2`), never more than `pp`.
fn stages_to_evaluate(model: &ModelSpec, dense_layers: u32, pp: u32) -> Vec<u32> {
    let (picks, n) = listed_stages(model.layers, dense_layers, pp);
    let mut out = picks[..n].to_vec();
    let pp = pp.clamp(1, model.layers.max(1));
    let k = match &model.attention_window {
        Some(w) if w.full_every > 1 && pp as usize > MAX_LISTED_STAGES => w.full_every,
        _ => return out,
    };
    let mut extra = Vec::new();
    for (i, &p) in out.iter().enumerate() {
        let next = out.get(i + 1).copied().unwrap_or(pp);
        for j in 1..(next - p).min(k) {
            extra.push(p + j);
        }
    }
    out.extend(extra);
    out.sort_unstable();
    out.dedup();
    out
}

/// Stages listed one by one in a [`ServingPlan`]; beyond, only the stages every other
/// stage repeats (see [`ServingPlan::stages_note`]).
pub const MAX_LISTED_STAGES: usize = 16;

fn dense_layer_count(breakdown: &ParamBreakdown) -> u32 {
    u32::try_from(breakdown.dense_layers).unwrap_or(u32::MAX)
}

/// Sequences one replica of TP `tp` × PP `pp` holds: the least over its stages, as
/// [`evaluate`] finds it, with at most 12 stages evaluated whatever `pp`
/// ([`listed_stages`]) and no text.
fn replica_sequences(
    model: &ModelSpec,
    breakdown: &ParamBreakdown,
    serving: &Serving,
    usable_bytes: f64,
    tp: u32,
    pp: u32,
) -> u64 {
    let pp = pp.clamp(1, model.layers.max(1));
    stages_to_evaluate(model, dense_layer_count(breakdown), pp)
        .iter()
        .map(|&stage| {
            let (first, layers) = stage_extent(model.layers, pp, stage);
            stage_numbers(
                model,
                breakdown,
                serving,
                usable_bytes,
                tp,
                pp,
                stage,
                first,
                layers,
            )
            .max_sequences
        })
        .min()
        .unwrap_or(0)
}

/// An upper bound on [`replica_sequences`] that needs no parameter counts: the stage
/// with the most layers (`⌈layers / pp⌉`) holds at most what the KV pool would hold
/// with no weights at all. Used to skip pipeline degrees that cannot reach a target.
fn replica_sequences_bound(
    model: &ModelSpec,
    serving: &Serving,
    usable_bytes: f64,
    tp: u32,
    pp: u32,
) -> u64 {
    let most_layers = model.layers.div_ceil(pp.max(1));
    // A window only shrinks a stage's KV: a stage of `most_layers` layers caches at least
    // what it would with as many of them windowed as the model has (an upper bound on its
    // count, so on the least count over the stages).
    let windowed = attention_window::windowed_layers_in(model, 0, model.layers).min(most_layers);
    let kv_per_sequence = kv_cache::kv_bytes_per_token_per_gpu_value(
        model,
        serving.kv_dtype,
        tp,
        most_layers - windowed,
    ) * f64::from(serving.context_len)
        + kv_cache::kv_bytes_per_token_per_gpu_value(model, serving.kv_dtype, tp, windowed)
            * f64::from(attention_window::cached_tokens(model, serving.context_len));
    // `usable − weights − runtime` with weights ≥ 0 is at most `usable − runtime`.
    let budget_bytes = usable_bytes - engine_kv_pool::runtime_bytes(model, serving, tp);
    if budget_bytes > 0.0 && kv_per_sequence > 0.0 {
        (budget_bytes / kv_per_sequence).floor() as u64
    } else {
        0
    }
}

/// Evaluates one replica shape; `serving.tp`/`pp` are ignored in favour of the arguments.
fn evaluate(
    model: &ModelSpec,
    serving: &Serving,
    cluster: &Cluster,
    tp: u32,
    pp: u32,
) -> (Term, Vec<StagePlan>, usize) {
    let usable_bytes = engine_kv_pool::requested_bytes(serving, cluster.gpu.memory_bytes, tp);
    let usable = engine_kv_pool::requested_term(serving, cluster.gpu.memory_bytes, tp);
    let dtype_bytes = serving.weight_dtype.bytes();
    let breakdown = model.param_breakdown();
    let listed = stages_to_evaluate(model, dense_layer_count(&breakdown), pp);
    let mut stages = Vec::with_capacity(listed.len());
    for &stage in &listed {
        let (first_layer, layers) = stage_extent(model.layers, pp, stage);
        let numbers = stage_numbers(
            model,
            &breakdown,
            serving,
            usable_bytes,
            tp,
            pp,
            stage,
            first_layer,
            layers,
        );
        let StageNumbers {
            params,
            weight_bytes,
            budget_bytes,
            max_sequences,
        } = numbers;
        let holds = match (stage == 0, stage + 1 == pp) {
            (true, true) => "embedding and output",
            (true, false) => "embedding",
            (false, true) => "output",
            (false, false) => "no embedding or output",
        };
        let vocab = stage_vocab_params(model, &breakdown, tp, pp, stage);
        let vocab_bytes = vocab_dtype_bytes(serving.weight_dtype);
        let sixteen_bit_vocab = vocab > 0.0 && vocab_bytes > dtype_bytes;
        let routed = stage_routed_params(model, &breakdown, tp, first_layer, layers);
        let (formula, worked) = weights_arithmetic(
            serving.weight_dtype,
            (params, vocab, routed),
            sixteen_bit_vocab,
            weight_bytes,
        );
        let weights = Term {
            key: "serving.weights".to_string(),
            label: format!("Weights ({})", serving.weight_dtype.id()),
            unit: Unit::Bytes,
            value: weight_bytes,
            formula: formula.to_string(),
            worked,
            assumption: weights_assumption(
                serving.weight_dtype,
                stage,
                layers,
                holds,
                sixteen_bit_vocab,
            ),
        };
        let kv_per_token =
            kv_cache::kv_bytes_per_token_per_gpu(model, serving.kv_dtype, tp, layers);
        let kv_per_sequence = crate::memory::window_kv::kv_bytes_per_sequence(
            model,
            &kv_per_token,
            first_layer,
            layers,
            serving.context_len,
        );
        let runtime = engine_kv_pool::runtime_terms(model, serving, tp);
        let mut worked = format!("{} − {}", fmt_bytes(usable_bytes), fmt_bytes(weight_bytes));
        for t in &runtime {
            worked.push_str(&format!(" − {}", fmt_bytes(t.value)));
        }
        worked.push_str(&format!(" = {}", fmt_bytes(budget_bytes)));
        let kv_budget = Term {
            key: "serving.kv_budget".to_string(),
            label: "KV pool per GPU".to_string(),
            unit: Unit::Bytes,
            value: budget_bytes,
            formula: engine_kv_pool::pool_formula(serving).to_string(),
            worked,
            assumption: engine_kv_pool::pool_assumption(serving).to_string(),
        };
        stages.push(StagePlan {
            stage,
            layers,
            weights,
            kv_per_token,
            kv_per_sequence,
            kv_budget,
            max_sequences,
        });
    }
    let limiting = stages
        .iter()
        .enumerate()
        .min_by_key(|(_, s)| s.max_sequences)
        .map(|(i, _)| i)
        .unwrap_or(0);
    (usable, stages, limiting)
}

fn max_sequences_term(stage: &StagePlan, context_len: u32) -> Term {
    let n = stage.max_sequences;
    Term {
        key: "serving.max_sequences".to_string(),
        label: "Concurrent sequences per replica".to_string(),
        unit: Unit::Count,
        value: n as f64,
        formula: "⌊KV pool / KV per sequence⌋ on the worst stage".to_string(),
        worked: format!(
            "⌊{} / {}⌋ = {n}",
            fmt_bytes(stage.kv_budget.value.max(0.0)),
            fmt_bytes(stage.kv_per_sequence.value)
        ),
        assumption: format!(
            "sequences of {context_len} tokens, all resident; stage {} limits (count, not bytes)",
            stage.stage
        ),
    }
}

/// Whether TP `tp` splits this model's heads the way vLLM accepts: query heads
/// divisible by TP, and KV heads divisible by TP or TP by KV heads.
pub fn tp_valid_for_model(model: &ModelSpec, tp: u32) -> bool {
    if tp == 0 || !model.heads.is_multiple_of(tp) {
        return false;
    }
    model.mla.is_some()
        || model.kv_heads.is_multiple_of(tp)
        || tp.is_multiple_of(model.kv_heads.max(1))
}

fn sequences(model: &ModelSpec, serving: &Serving, cluster: &Cluster, tp: u32, pp: u32) -> u64 {
    let usable_bytes = engine_kv_pool::requested_bytes(serving, cluster.gpu.memory_bytes, tp);
    replica_sequences(
        model,
        &model.param_breakdown(),
        serving,
        usable_bytes,
        tp,
        pp,
    )
}

/// The article's decision: replicas if one GPU fits weights and the target KV;
/// else the smallest TP inside a node that fits; else the smallest PP across
/// nodes at the largest TP a node allows.
pub fn recommend(
    model: &ModelSpec,
    serving: &Serving,
    cluster: &Cluster,
) -> Result<Recommendation, ServingError> {
    validate(model, serving, cluster)?;
    let target = u64::from(serving.target_concurrency);
    let world = cluster.world_size();
    let ctx = serving.context_len;
    let one = sequences(model, serving, cluster, 1, 1);
    let one_gpu = {
        let (usable, stages, limiting) = evaluate(model, serving, cluster, 1, 1);
        let stage = &stages[limiting.min(stages.len() - 1)];
        if stage.max_sequences == 0 {
            format!(
                "One GPU cannot hold it: weights {} + workspace {} leave {} of {} usable for KV",
                fmt_bytes(stage.weights.value),
                fmt_bytes(engine_kv_pool::runtime_bytes(model, serving, 1)),
                fmt_bytes(stage.kv_budget.value.max(0.0)),
                fmt_bytes(usable.value)
            )
        } else {
            format!(
                "One GPU holds weights {} and KV for {} sequences of {ctx} tokens ({} each)",
                fmt_bytes(stage.weights.value),
                stage.max_sequences,
                fmt_bytes(stage.kv_per_sequence.value)
            )
        }
    };
    if one >= target {
        return Ok(Recommendation {
            decision: Decision::Replicas,
            tp: 1,
            pp: 1,
            replicas: world,
            max_concurrent_sequences: one,
            reason: format!(
                "{one_gpu}, meeting the target {target}: run {world} independent replicas; they need no communication between GPUs."
            ),
        });
    }
    let tps: Vec<u32> = (1..=cluster.gpus_per_node.ilog2())
        .map(|k| 1u32 << k)
        .filter(|&tp| tp_valid_for_model(model, tp))
        .collect();
    for &tp in &tps {
        let n = sequences(model, serving, cluster, tp, 1);
        if n >= target {
            return Ok(Recommendation {
                decision: Decision::TensorParallel,
                tp,
                pp: 1,
                replicas: world / u64::from(tp),
                max_concurrent_sequences: n,
                reason: format!(
                    "{one_gpu}, below the target {target}; TP {tp} inside a node holds {n} (the smallest TP that does); {} replica(s) fit on the cluster.",
                    world / u64::from(tp)
                ),
            });
        }
    }
    let node_tp = tps.last().copied().unwrap_or(1);
    let node_n = sequences(model, serving, cluster, node_tp, 1);
    // Bounded work: O(1) per pipeline degree (see `replica_sequences`), and degrees whose
    // KV alone cannot reach the target are skipped without counting parameters.
    let usable_bytes = engine_kv_pool::requested_bytes(serving, cluster.gpu.memory_bytes, node_tp);
    let breakdown = model.param_breakdown();
    for pp in 2..=model.layers {
        if replica_sequences_bound(model, serving, usable_bytes, node_tp, pp) < target {
            continue;
        }
        let n = replica_sequences(model, &breakdown, serving, usable_bytes, node_tp, pp);
        if n >= target {
            let gpus = u64::from(node_tp) * u64::from(pp);
            let replicas = world / gpus;
            let nodes_needed = gpus.div_ceil(u64::from(cluster.gpus_per_node));
            let (decision, tail) = if replicas > 0 {
                (
                    Decision::PipelineAcrossNodes,
                    format!("{replicas} replica(s) fit on the cluster."),
                )
            } else {
                (
                    Decision::DoesNotFit,
                    format!(
                        "that needs {nodes_needed} nodes; the cluster has {}.",
                        cluster.nodes
                    ),
                )
            };
            return Ok(Recommendation {
                decision,
                tp: node_tp,
                pp,
                replicas,
                max_concurrent_sequences: n,
                reason: format!(
                    "A full node (TP {node_tp}) holds {node_n} sequences of {ctx} tokens, below the target {target}; PP {pp} across nodes holds {n}; {tail}"
                ),
            });
        }
    }
    Ok(Recommendation {
        decision: Decision::DoesNotFit,
        tp: node_tp,
        pp: model.layers,
        replicas: 0,
        max_concurrent_sequences: 0,
        reason: format!(
            "Even one layer per stage at TP {node_tp} cannot hold {target} sequences of {ctx} tokens."
        ),
    })
}

/// Serving memory of the shape `serving.tp × serving.pp`, with the recommended shape.
pub fn serving_plan(
    model: &ModelSpec,
    serving: &Serving,
    cluster: &Cluster,
) -> Result<ServingPlan, ServingError> {
    validate(model, serving, cluster)?;
    let (tp, pp) = (serving.tp, serving.pp);
    let (usable, stages, limiting) = evaluate(model, serving, cluster, tp, pp);
    let worst = &stages[limiting.min(stages.len() - 1)];
    let heaviest = stages
        .iter()
        .max_by(|a, b| a.weights.value.total_cmp(&b.weights.value))
        .unwrap_or(worst);
    let kv_bytes_per_token = kv_cache::kv_bytes_per_token(model, serving.kv_dtype);
    let kv_bytes_per_sequence = crate::memory::window_kv::kv_bytes_per_sequence(
        model,
        &kv_bytes_per_token,
        0,
        model.layers,
        serving.context_len,
    );
    let max_concurrent_sequences = max_sequences_term(worst, serving.context_len);
    Ok(ServingPlan {
        tp,
        pp,
        usable_per_gpu: usable,
        weights_per_gpu: heaviest.weights.clone(),
        kv_bytes_per_token,
        kv_bytes_per_sequence,
        kv_bytes_per_token_per_gpu: worst.kv_per_token.clone(),
        kv_bytes_per_sequence_per_gpu: worst.kv_per_sequence.clone(),
        kv_budget_per_gpu: worst.kv_budget.clone(),
        fits_target: worst.max_sequences >= u64::from(serving.target_concurrency),
        max_concurrent_sequences,
        limiting_stage: worst.stage,
        replicas_on_cluster: cluster.world_size() / (u64::from(tp) * u64::from(pp)),
        stages_note: (pp as usize > MAX_LISTED_STAGES).then(|| {
            format!(
                "{} of {pp} stages listed: every other stage has the same layer count, dense/MoE mix, windowed layers and ends as one of them",
                stages.len()
            )
        }),
        stages,
        pool_terms: engine_kv_pool::runtime_terms(model, serving, tp),
        recommendation: recommend(model, serving, cluster)?,
    })
}

/// Concurrent sequences per replica over TP ∈ [`TABLE_TP`] × PP ∈ [`TABLE_PP`], row-major by TP.
pub fn concurrency_table(
    model: &ModelSpec,
    serving: &Serving,
    cluster: &Cluster,
) -> Result<Vec<ConcurrencyCell>, ServingError> {
    validate(model, serving, cluster)?;
    let mut cells = Vec::new();
    for tp in TABLE_TP {
        for pp in TABLE_PP {
            let mut notes = Vec::new();
            if !tp_valid_for_model(model, tp) {
                notes.push(format!(
                    "TP {tp} does not split {} heads / {} KV heads",
                    model.heads, model.kv_heads
                ));
            }
            if tp > cluster.gpus_per_node {
                notes.push(format!(
                    "TP {tp} exceeds {} GPUs per node",
                    cluster.gpus_per_node
                ));
            }
            if u64::from(tp) * u64::from(pp) > cluster.world_size() {
                notes.push(format!(
                    "needs {} GPUs, cluster has {}",
                    tp * pp,
                    cluster.world_size()
                ));
            }
            if pp > model.layers {
                notes.push(format!("PP {pp} exceeds {} layers", model.layers));
                cells.push(ConcurrencyCell {
                    tp,
                    pp,
                    valid: false,
                    note: Some(notes.join("; ")),
                    max_concurrent_sequences: 0,
                    fits_target: false,
                    term: Term {
                        key: "serving.max_sequences".to_string(),
                        label: "Concurrent sequences per replica".to_string(),
                        unit: Unit::Count,
                        value: 0.0,
                        formula: "—".to_string(),
                        worked: "—".to_string(),
                        assumption: "more stages than layers".to_string(),
                    },
                });
                continue;
            }
            let (_, stages, limiting) = evaluate(model, serving, cluster, tp, pp);
            let term = max_sequences_term(&stages[limiting], serving.context_len);
            let n = stages[limiting].max_sequences;
            cells.push(ConcurrencyCell {
                tp,
                pp,
                valid: notes.is_empty(),
                note: (!notes.is_empty()).then(|| notes.join("; ")),
                max_concurrent_sequences: n,
                fits_target: n >= u64::from(serving.target_concurrency),
                term,
            });
        }
    }
    Ok(cells)
}

#[cfg(test)]
mod bounded_tests {
    use super::*;
    use crate::input::hardware::gpu_preset;
    use crate::input::model::MoeSpec;

    #[test]
    fn stage_extent_and_stage_of_layer_follow_stage_layers() {
        for layers in 1..=60u32 {
            for pp in 1..=layers {
                let parts = stage_layers(layers, pp);
                let mut first = 0;
                for (i, &n) in parts.iter().enumerate() {
                    let stage = i as u32;
                    assert_eq!(stage_extent(layers, pp, stage), (first, n), "{layers}/{pp}");
                    for layer in first..first + n {
                        assert_eq!(stage_of_layer(layers, pp, layer), stage, "{layers}/{pp}");
                    }
                    first += n;
                }
            }
        }
    }

    /// Every stage's numbers the plain way: [`stage_layers`], first layers accumulated.
    fn every_stage(
        model: &ModelSpec,
        serving: &Serving,
        usable: f64,
        tp: u32,
        pp: u32,
    ) -> Vec<(u32, StageNumbers)> {
        let b = model.param_breakdown();
        let mut first = 0;
        let mut out = Vec::new();
        for (i, layers) in stage_layers(model.layers, pp).into_iter().enumerate() {
            let stage = i as u32;
            let n = stage_numbers(model, &b, serving, usable, tp, pp, stage, first, layers);
            out.push((stage, n));
            first += layers;
        }
        out
    }

    /// With sliding-window layers the bound still bounds, and the listed stages still give
    /// the least count of every stage (stages differ in how many windowed layers they hold).
    #[test]
    fn windowed_models_keep_the_bound_and_the_least_stage() {
        let cluster = Cluster::of(gpu_preset("h100-sxm").expect("preset"), 4);
        for id in ["gemma-2-9b", "mistral-7b-v0.1"] {
            let model = crate::resolve::presets::model_preset(id).expect("preset");
            let b = model.param_breakdown();
            let shapes = [512u32, 8192, 32_768]
                .into_iter()
                .flat_map(|ctx| [1u32, 2].map(move |tp| (ctx, tp)));
            for (context_len, tp) in shapes {
                let serving = Serving {
                    context_len,
                    ..Serving::default()
                };
                let usable = serving.memory_utilization * cluster.gpu.memory_bytes;
                for pp in 1..=model.layers {
                    let least = every_stage(&model, &serving, usable, tp, pp)
                        .iter()
                        .map(|(_, n)| n.max_sequences)
                        .min();
                    let fast = replica_sequences(&model, &b, &serving, usable, tp, pp);
                    let at = format!("{id} ctx {context_len} tp {tp} pp {pp}");
                    assert_eq!(Some(fast), least, "{at}");
                    let bound = replica_sequences_bound(&model, &serving, usable, tp, pp);
                    assert!(bound >= fast, "bound {bound} < {fast} at {at}");
                }
            }
        }
    }

    /// The bounded count and the listed stages agree with every stage evaluated: same
    /// least count, same limiting (first least) and heaviest (last greatest) stage.
    #[test]
    fn listed_stages_give_what_every_stage_gives() {
        let cluster = Cluster::of(gpu_preset("h100-sxm").expect("preset"), 4);
        for dense_layers in [0u32, 1, 5, 13, 37, 60, 61] {
            let mut model = crate::resolve::presets::model_preset("mixtral-8x7b").expect("preset");
            model.layers = 61;
            model.tied_embeddings = dense_layers % 2 == 1;
            model.moe = Some(MoeSpec {
                dense_layers,
                ..model.moe.expect("moe")
            });
            let b = model.param_breakdown();
            for context_len in [512u32, 32_768] {
                let serving = Serving {
                    context_len,
                    ..Serving::default()
                };
                let usable = serving.memory_utilization * cluster.gpu.memory_bytes;
                for tp in [1u32, 8] {
                    for pp in 1..=model.layers {
                        let all = every_stage(&model, &serving, usable, tp, pp);
                        let least = all
                            .iter()
                            .min_by_key(|(_, n)| n.max_sequences)
                            .expect("stage");
                        let heaviest = all
                            .iter()
                            .max_by(|x, y| x.1.weight_bytes.total_cmp(&y.1.weight_bytes))
                            .expect("stage");
                        let at = format!("dense {dense_layers} ctx {context_len} tp {tp} pp {pp}");
                        let fast = replica_sequences(&model, &b, &serving, usable, tp, pp);
                        assert_eq!(fast, least.1.max_sequences, "{at}");
                        let bound = replica_sequences_bound(&model, &serving, usable, tp, pp);
                        assert!(bound >= fast, "bound {bound} < {fast} at {at}");

                        let (_, stages, limiting) = evaluate(&model, &serving, &cluster, tp, pp);
                        assert_eq!(stages[limiting].stage, least.0, "{at}");
                        assert_eq!(stages[limiting].max_sequences, least.1.max_sequences);
                        let heavy = stages
                            .iter()
                            .max_by(|x, y| x.weights.value.total_cmp(&y.weights.value))
                            .expect("stage");
                        assert_eq!(heavy.stage, heaviest.0, "{at}");
                        assert_eq!(heavy.weights.value, heaviest.1.weight_bytes, "{at}");
                        for st in &stages {
                            let (_, n) = all[st.stage as usize];
                            assert_eq!(st.max_sequences, n.max_sequences, "{at}");
                            assert_eq!(st.kv_budget.value, n.budget_bytes, "{at}");
                        }
                        if pp as usize <= MAX_LISTED_STAGES {
                            assert_eq!(stages.len(), pp as usize);
                        } else {
                            assert!(stages.len() <= 12, "{at}: {}", stages.len());
                        }
                    }
                }
            }
        }
    }
}
