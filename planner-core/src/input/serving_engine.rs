//! The serving engine a plan follows (vLLM or SGLang) and the profiling run it
//! sizes its KV pool after. The pool itself is [`crate::memory::engine_kv_pool`].

use serde::{Deserialize, Serialize};

/// The serving engine whose memory accounting sizes the KV pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServingEngine {
    /// vLLM: `gpu_memory_utilization` bounds weights, activations and the cache together.
    #[default]
    Vllm,
    /// SGLang: `mem_fraction_static` bounds weights and the cache; the rest is headroom.
    Sglang,
}

impl ServingEngine {
    /// Both engines.
    pub const ALL: [ServingEngine; 2] = [ServingEngine::Vllm, ServingEngine::Sglang];

    /// Stable identifier (links, CLI).
    pub fn id(self) -> &'static str {
        match self {
            ServingEngine::Vllm => "vllm",
            ServingEngine::Sglang => "sglang",
        }
    }

    /// Parses [`ServingEngine::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.id() == id)
    }

    /// Whether this is the default (vLLM), for `skip_serializing_if`.
    pub fn is_default(&self) -> bool {
        *self == ServingEngine::default()
    }
}

/// What vLLM's profiling run sees, for a pool sized from the model's shapes rather
/// than one configured workspace figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineProfile {
    /// Tokens of the profiling forward: vLLM `max_num_batched_tokens` (SGLang: its
    /// `chunked_prefill_size`, inside the `1 − mem_fraction_static` share).
    pub max_num_batched_tokens: u32,
    /// Sequences of the profiled sampler: vLLM `max_num_seqs`.
    pub max_num_seqs: u32,
    /// Memory outside PyTorch's allocator, bytes: vLLM's `non_torch_increase`; for
    /// SGLang what is in use before it measures (CUDA context, NCCL).
    pub non_torch_bytes: f64,
    /// CUDA-graph pool subtracted before the KV pool, bytes (vLLM with
    /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`; 0 where graphs are captured after).
    pub cuda_graph_bytes: f64,
}

/// vLLM's memory profile of Llama-3-8B on one H100 (vllm-project/vllm PR #10511, comment of
/// 2024-12-14): "non_torch_memory 1.79GiB" at TP 1 (3.58 GiB at TP 2). The one published
/// breakdown line with model, GPU and TP stated; set it from your own log otherwise.
pub const PUBLISHED_NON_TORCH_BYTES: f64 = 1.79 * GIB;

/// One GiB.
pub const GIB: f64 = 1_073_741_824.0;

impl Default for EngineProfile {
    fn default() -> Self {
        EngineProfile {
            // vllm/engine/arg_utils.py `EngineArgs.get_batch_defaults`: `vllm serve`
            // (OPENAI_API_SERVER) on a GPU of 70 GiB or more, not an A100, defaults to 8192
            // batched tokens and 1024 sequences (2048 and 256 on smaller GPUs).
            max_num_batched_tokens: 8192,
            max_num_seqs: 1024,
            non_torch_bytes: PUBLISHED_NON_TORCH_BYTES,
            cuda_graph_bytes: 0.0,
        }
    }
}
