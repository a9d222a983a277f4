//! How a serving engine admits requests into its running batch: the cap on running
//! sequences and what it does when the KV pool is short (queue new requests, or admit on
//! the prompt alone and preempt when a step finds no free block). The mechanism that turns
//! these limits into a running batch and a wait is [`crate::serving::admission`].

use serde::{Deserialize, Serialize};

use super::serving_engine::ServingEngine;

/// What the engine checks against the KV pool before a waiting request joins the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvAdmission {
    /// Admit when the prompt's blocks are free; a decode step that finds no free block
    /// preempts the newest running request, whose blocks are freed and whose tokens are
    /// recomputed when it is readmitted (vLLM's scheduler, V0 `PreemptionMode.RECOMPUTE`
    /// and V1 `Scheduler.schedule`; SGLang retracts decoding requests the same way).
    PromptThenPreempt,
    /// Admit only when the prompt and the request's whole output fit beside what every
    /// running request has reserved: a started request is never paused (TensorRT-LLM's
    /// default `CapacitySchedulerPolicy.GUARANTEED_NO_EVICT`).
    WholeRequest,
}

impl KvAdmission {
    /// Both policies.
    pub const ALL: [KvAdmission; 2] = [KvAdmission::PromptThenPreempt, KvAdmission::WholeRequest];

    /// Stable identifier (links, CLI).
    pub fn id(self) -> &'static str {
        match self {
            KvAdmission::PromptThenPreempt => "preempt",
            KvAdmission::WholeRequest => "reserve",
        }
    }

    /// Parses [`KvAdmission::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.id() == id)
    }

    /// The policy an engine applies by default.
    pub fn default_for(engine: ServingEngine) -> Self {
        match engine {
            ServingEngine::Vllm | ServingEngine::Sglang => KvAdmission::PromptThenPreempt,
        }
    }

    /// What the engine does with a request the pool cannot take, in words.
    pub fn action(self) -> &'static str {
        match self {
            KvAdmission::PromptThenPreempt => {
                "admits on the prompt's blocks and preempts the newest request (recompute) when a step finds the pool full"
            }
            KvAdmission::WholeRequest => {
                "queues the request until its prompt and whole output fit (never evicts a started one)"
            }
        }
    }
}

/// One GiB, the unit vLLM's device-memory test uses.
const GIB: f64 = 1_073_741_824.0;

/// vLLM's default `max_num_seqs` for `vllm serve` on a device of `memory_bytes` named `device`.
pub fn vllm_default_max_num_seqs(memory_bytes: f64, device: &str) -> u32 {
    // vllm/engine/arg_utils.py `get_batch_defaults`: 1024 sequences when the device has at least
    // 70 GiB and "a100" is not in its name (PR #17885's A100 carve-out), else 256.
    if memory_bytes >= 70.0 * GIB && !device.to_ascii_lowercase().contains("a100") {
        1024
    } else {
        256
    }
}

/// SGLang's default `max_running_requests` for a KV pool of `pool_tokens` and a context of
/// `context_len` tokens.
pub fn sglang_default_max_running(pool_tokens: f64, context_len: u32) -> u32 {
    let pool = pool_tokens.max(0.0);
    // sglang/srt/model_executor/model_runner.py `init_memory_pool`: the request-to-token pool
    // holds min(max(⌊pool / context_len · 512⌋, 2048), 4096) requests.
    let req_pool = (pool / f64::from(context_len.max(1)) * 512.0)
        .floor()
        .clamp(2048.0, 4096.0);
    // sglang/srt/managers/tp_worker.py: max_running_requests = min(max_total_num_tokens // 2,
    // req_to_token_pool.size) when the server argument is not given.
    let cap = (pool / 2.0).floor().min(req_pool).max(1.0);
    cap.min(f64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_caps_follow_memory_and_the_a100_carve_out() {
        assert_eq!(
            vllm_default_max_num_seqs(80.0 * GIB, "NVIDIA H100 80GB HBM3"),
            1024
        );
        assert_eq!(
            vllm_default_max_num_seqs(80.0 * GIB, "NVIDIA A100-SXM4-80GB"),
            256
        );
        assert_eq!(vllm_default_max_num_seqs(48.0 * GIB, "NVIDIA L40S"), 256);
    }

    #[test]
    fn sglang_cap_is_half_the_pool_within_the_request_pool() {
        // 1,000,000 tokens at 8,192 context: ⌊1e6/8192·512⌋ = 62,500 → clamped to 4,096;
        // half the pool is 500,000; the cap is 4,096.
        assert_eq!(sglang_default_max_running(1e6, 8192), 4096);
        // 3,000 tokens: half is 1,500, below the request pool's floor of 2,048.
        assert_eq!(sglang_default_max_running(3000.0, 8192), 1500);
    }

    #[test]
    fn ids_round_trip() {
        for a in KvAdmission::ALL {
            assert_eq!(KvAdmission::from_id(a.id()), Some(a));
        }
    }
}
