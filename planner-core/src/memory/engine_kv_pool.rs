//! Serving memory as the engines size it: the bytes per GPU a serving engine
//! requests, what it subtracts before the KV pool (weights aside), each as a
//! named [`Term`] with its formula.
//!
//! - vLLM (`vllm/v1/worker/gpu_worker.py`, `Worker.determine_available_memory`, with
//!   `vllm/utils/mem_utils.py` `memory_profiling` / `MemoryProfilingResult`):
//!   `requested = gpu_memory_utilization × total`, then
//!   `available KV = requested − non_kv_cache_memory`, where `non_kv_cache_memory =
//!   weights_memory + torch_peak_increase + non_torch_increase`: the weights, the
//!   PyTorch peak of the profiling forward at `max_num_batched_tokens`, and what grew
//!   outside PyTorch's allocator (NCCL, custom all-reduce buffers, attention-backend
//!   workspaces). The CUDA-graph pool is captured after the KV cache is allocated
//!   (`compile_or_warm_up_model` → `capture_model`, which only logs it in the
//!   `--kv-cache-memory` hint); releases with `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`
//!   subtract a profiled estimate too (`cudagraph_memory_estimate_applied`), so the
//!   graph term here is an input, 0 by default.
//! - SGLang (`python/sglang/srt/model_executor/model_runner.py`,
//!   `ModelRunner.profile_max_num_token`): `rest_memory = available_gpu_memory −
//!   total_gpu_memory × (1 − mem_fraction_static)`, with `total_gpu_memory` the free
//!   memory after distributed init and `available_gpu_memory` what is free after the
//!   weights load; so the pool is `mem_fraction_static × (memory − pre-init use) −
//!   weights`, and activations and CUDA graphs live in the `1 − mem_fraction_static`
//!   share. The default fraction by TP is `ServerArgs.__post_init__`'s table.
//!
//! Without an [`EngineProfile`] vLLM's activation peak and non-torch memory are the
//! one configured `serving.workspace_bytes`, as the planner always counted them.

use crate::base::explain::{Term, Unit};
use crate::input::model::{FfnKind, ModelSpec};
use crate::input::scenario::Serving;
pub use crate::input::serving_engine::{
    EngineProfile, ServingEngine, GIB, PUBLISHED_NON_TORCH_BYTES,
};
use crate::memory::kv_cache::fmt_bytes;

/// SGLang's default `mem_fraction_static` for a TP degree
/// (`python/sglang/srt/server_args.py`, `ServerArgs.__post_init__`: tp ≥ 16 → 0.79,
/// ≥ 8 → 0.81, ≥ 4 → 0.85, ≥ 2 → 0.87, else 0.88).
pub fn sglang_default_mem_fraction(tp: u32) -> f64 {
    match tp {
        16.. => 0.79,
        8..=15 => 0.81,
        4..=7 => 0.85,
        2..=3 => 0.87,
        _ => 0.88,
    }
}

/// The fraction of device memory the engine's static pool (weights + KV) may use.
pub fn memory_fraction(serving: &Serving, tp: u32) -> f64 {
    match serving.engine {
        ServingEngine::Vllm => serving.memory_utilization,
        ServingEngine::Sglang => serving
            .mem_fraction_static
            .unwrap_or_else(|| sglang_default_mem_fraction(tp)),
    }
}

/// Bytes per GPU the engine requests for weights, runtime memory and the KV pool.
pub fn requested_bytes(serving: &Serving, gpu_memory_bytes: f64, tp: u32) -> f64 {
    let fraction = memory_fraction(serving, tp);
    match (serving.engine, &serving.engine_profile) {
        (ServingEngine::Sglang, Some(p)) => fraction * (gpu_memory_bytes - p.non_torch_bytes),
        _ => fraction * gpu_memory_bytes,
    }
}

/// Activation bytes per element of the served model (the model dtype, bf16, whatever
/// the weight or KV dtype: vLLM and SGLang dequantize FP8/INT weights into BF16 GEMMs).
const ACTIVATION_BYTES: f64 = 2.0;

/// Bytes per element of the sampler's logits (fp32: vLLM `Sampler` upcasts logits).
const LOGIT_BYTES: f64 = 4.0;

/// The PyTorch peak of vLLM's profiling run on one GPU at TP `tp`: the larger of the
/// biggest decoder layer's live tensors over `max_num_batched_tokens` tokens and the
/// sampler's logits over `max_num_seqs` rows.
///
/// `vllm/v1/worker/gpu_model_runner.py` `profile_run`: `_dummy_run(max_num_tokens)`, then
/// `_dummy_sampler_run` on `max_num_seqs` rows. Inside a layer the forward holds the
/// residual and the normed input (`T·h` each), then the FFN's up-projection output and its
/// activation: gated `2f/TP` then `f/TP` (SwiGLU, vLLM `MergedColumnParallelLinear` +
/// `SiluAndMul`), GeLU `f/TP` then `f/TP`; a MoE layer's fused experts hold `k` copies
/// (`fused_moe`: `T·k·2f/TP` intermediate cache, `T·k·f/TP` after the activation, `T·k·h`
/// outputs before the weighted sum). Attention's `q, k, v` and output are smaller for every
/// preset and are bounded the same way. The sampler holds fp32 logits and probabilities.
pub fn activation_peak_bytes(model: &ModelSpec, profile: &EngineProfile, tp: u32) -> f64 {
    let t = f64::from(profile.max_num_batched_tokens);
    let tp = f64::from(tp.max(1));
    let h = f64::from(model.hidden);
    let ffn_live = |width: f64| match model.ffn_kind {
        FfnKind::SwiGlu => 3.0 * width / tp,
        FfnKind::GeluMlp => 2.0 * width / tp,
    };
    let dense = 2.0 * h + ffn_live(f64::from(model.ffn));
    let moe = model.moe.as_ref().map_or(0.0, |m| {
        let k = f64::from(m.experts_per_token);
        let shared = f64::from(m.shared_experts);
        2.0 * h + (k + shared) * ffn_live(f64::from(m.expert_ffn)) + k * h
    });
    let d = f64::from(model.head_dim);
    let attention =
        2.0 * h + (2.0 * f64::from(model.heads) + 2.0 * f64::from(model.kv_heads)) * d / tp;
    let layer_bytes = t * dense.max(moe).max(attention) * ACTIVATION_BYTES;
    let sampler_bytes =
        f64::from(profile.max_num_seqs) * f64::from(model.vocab) * LOGIT_BYTES * 2.0;
    layer_bytes.max(sampler_bytes)
}

/// Bytes per GPU besides weights that the engine takes out of its request before the KV pool.
pub fn runtime_bytes(model: &ModelSpec, serving: &Serving, tp: u32) -> f64 {
    match (serving.engine, &serving.engine_profile) {
        (ServingEngine::Sglang, _) => 0.0,
        (ServingEngine::Vllm, None) => serving.workspace_bytes,
        (ServingEngine::Vllm, Some(p)) => {
            activation_peak_bytes(model, p, tp) + p.non_torch_bytes + p.cuda_graph_bytes
        }
    }
}

/// A term of this module: every one carries bytes, and its strings are built once here.
struct Row<'a> {
    key: &'a str,
    label: &'a str,
    formula: &'a str,
    assumption: &'a str,
}

impl Row<'_> {
    fn term(&self, bytes: f64, worked: String) -> Term {
        Term {
            key: self.key.to_string(),
            label: self.label.to_string(),
            value: bytes,
            unit: Unit::Bytes,
            formula: self.formula.to_string(),
            worked,
            assumption: self.assumption.to_string(),
        }
    }
}

/// The memory the engine requests per GPU, explained.
pub fn requested_term(serving: &Serving, gpu_memory_bytes: f64, tp: u32) -> Term {
    let bytes = requested_bytes(serving, gpu_memory_bytes, tp);
    match (serving.engine, &serving.engine_profile) {
        (ServingEngine::Vllm, _) => Row {
            key: "serving.usable",
            label: "Usable memory per GPU",
            formula: "memory_utilization × gpu_memory",
            assumption: "vLLM gpu_memory_utilization: the engine's share of device memory",
        }
        .term(
            bytes,
            format!(
                "{} × {} = {}",
                serving.memory_utilization,
                fmt_bytes(gpu_memory_bytes),
                fmt_bytes(bytes)
            ),
        ),
        (ServingEngine::Sglang, profile) => {
            let fraction = memory_fraction(serving, tp);
            let pre = profile.as_ref().map_or(0.0, |p| p.non_torch_bytes);
            let source = if serving.mem_fraction_static.is_some() {
                "as set".to_string()
            } else {
                format!("SGLang's default at TP {tp}")
            };
            Row {
 key: "serving.usable",
 label: "Usable memory per GPU (SGLang static pool)",
 formula: "mem_fraction_static × (gpu_memory − memory in use before SGLang measures)",
 assumption: "SGLang model_runner.profile_max_num_token: rest = free after load − total × (1 − mem_fraction_static); activations and CUDA graphs use the 1 − fraction share",
 }
 .term(bytes, format!(
                    "{fraction} ({source}) × ({} − {}) = {}",
                    fmt_bytes(gpu_memory_bytes),
                    fmt_bytes(pre),
                    fmt_bytes(bytes)
                ))
        }
    }
}

/// The terms the engine subtracts besides weights, in order (empty for SGLang, one
/// workspace term for vLLM without a profile).
pub fn runtime_terms(model: &ModelSpec, serving: &Serving, tp: u32) -> Vec<Term> {
    match (serving.engine, &serving.engine_profile) {
        (ServingEngine::Sglang, _) => Vec::new(),
        (ServingEngine::Vllm, None) => vec![Row {
 key: "serving.workspace",
 label: "Activation workspace (configured)",
 formula: "workspace_bytes",
 assumption: "vLLM's profiled activation peak and non-torch memory as one configured figure (set an engine profile to size them from the model)",
 }
 .term(serving.workspace_bytes, fmt_bytes(serving.workspace_bytes))],
        (ServingEngine::Vllm, Some(p)) => {
            let peak = activation_peak_bytes(model, p, tp);
            vec![
                Row {
 key: "serving.activation_peak",
 label: "Peak activation of the profiling run",
 formula: "max(T × (2h + FFN live width / TP) × 2 B, max_num_seqs × V × 4 B × 2)",
 assumption: "vLLM profile_run at max_num_batched_tokens (torch_peak_increase): the largest layer's live tensors or the sampler's fp32 logits",
 }
 .term(peak, format!(
                        "T = {} batched tokens, {} sequences, TP {tp}: {}",
                        p.max_num_batched_tokens,
                        p.max_num_seqs,
                        fmt_bytes(peak)
                    )),
                Row {
 key: "serving.non_torch",
 label: "Non-torch memory",
 formula: "non_torch_increase",
 assumption: "NCCL, custom all-reduce and attention-backend buffers outside PyTorch's allocator (vLLM memory_profiling); default: the published Llama-3-8B H100 TP 1 figure, vLLM PR #10511",
 }
 .term(p.non_torch_bytes, fmt_bytes(p.non_torch_bytes)),
                Row {
 key: "serving.cuda_graphs",
 label: "CUDA-graph pool",
 formula: "cudagraph_memory_estimate_applied",
 assumption: "subtracted only by vLLM releases that estimate graphs before sizing the pool (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS); others capture them after, out of the 1 − utilization share",
 }
 .term(p.cuda_graph_bytes, fmt_bytes(p.cuda_graph_bytes)),
            ]
        }
    }
}

/// The KV-pool formula the serving plan shows for this engine.
pub fn pool_formula(serving: &Serving) -> &'static str {
    match (serving.engine, &serving.engine_profile) {
        (ServingEngine::Vllm, None) => "usable − weights − workspace",
        (ServingEngine::Vllm, Some(_)) => {
            "requested − weights − peak activation − non-torch − CUDA graphs"
        }
        (ServingEngine::Sglang, _) => "mem_fraction_static × memory − weights",
    }
}

/// Why the pool is what is left, for the serving plan's KV-pool term.
pub fn pool_assumption(serving: &Serving) -> &'static str {
    match (serving.engine, &serving.engine_profile) {
        (ServingEngine::Vllm, None) => {
            "activation workspace reserved as configured; the rest is the KV pool"
        }
        (ServingEngine::Vllm, Some(_)) => {
            "vLLM determine_available_memory: requested − non_kv_cache_memory (weights + torch peak + non-torch increase) − applied CUDA-graph estimate"
        }
        (ServingEngine::Sglang, _) => {
            "SGLang profile_max_num_token: what the static fraction leaves after the weights"
        }
    }
}

/// vLLM's startup lines for a pool of `pool_bytes` per GPU and `bytes_per_token` KV bytes
/// per token per GPU: `# GPU blocks` (`vllm/v1/core/kv_cache_utils.py` `get_num_blocks`:
/// `available_memory // page_size_bytes // num_layers`, i.e. whole blocks of
/// `block_size` tokens, default 16), the tokens they hold ("GPU KV cache size: N tokens")
/// and "Maximum concurrency for L tokens per request: (N / L)x".
pub fn vllm_blocks(
    pool_bytes: f64,
    bytes_per_token: f64,
    block_size: u32,
    max_model_len: u32,
) -> VllmBlocks {
    let block_bytes = bytes_per_token * f64::from(block_size.max(1));
    let blocks = if pool_bytes > 0.0 && block_bytes > 0.0 {
        (pool_bytes / block_bytes).floor() as u64
    } else {
        0
    };
    let tokens = blocks * u64::from(block_size.max(1));
    VllmBlocks {
        blocks,
        tokens,
        max_concurrency: tokens as f64 / f64::from(max_model_len.max(1)),
    }
}

/// What vLLM logs about the pool it allocated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VllmBlocks {
    /// `# GPU blocks` / `num_gpu_blocks`.
    pub blocks: u64,
    /// "GPU KV cache size: N tokens".
    pub tokens: u64,
    /// "Maximum concurrency for L tokens per request: Zx".
    pub max_concurrency: f64,
}
