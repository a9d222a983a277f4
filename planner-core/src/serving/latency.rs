//! Serving time: prefill, decode steps under continuous batching, TTFT and TPOT of one
//! replica of the shape in [`Serving`](crate::input::scenario::Serving) (`tp` × `pp`).
//!
//! Prefill is priced like training compute (GEMM efficiency curve and peak of
//! [`StepModel`]); a decode step is a roofline of the bytes it reads (resident weights,
//! active experts only, and the batch's KV) against the FLOPs it runs; TP, PP and EP
//! communication is α–β from [`CommModel`](crate::time::collectives::CommModel). The request
//! mix, the prefix-cache hit rate and the chunk size are a separate [`ServingLoad`], validated
//! field by field; `terms` explains every number.

use serde::{Deserialize, Serialize};

use crate::base::explain::{Term, Unit};
use crate::input::model::ModelSpec;
use crate::input::number_format::NumberFormat;
use crate::input::scenario::{Scenario, ServeDtype};
use crate::input::speculation::Speculation;
use crate::memory::serving::{self, ServingError, StagePlan, MAX_LISTED_STAGES};
use crate::parallel::topology::{Domain, GroupKind, GroupPlacement};
use crate::serving::admission;
use crate::serving::closed_loop;
use crate::serving::custom_all_reduce;
use crate::serving::decode_attention::{self, DecodeAttentionKernel};
use crate::serving::kernel_gaps;
use crate::serving::layer_traffic;
use crate::serving::speculation;
use crate::serving::weight_stream;
use crate::serving::window_decode::{stage_decode_means, WindowedDecode};
use crate::serving::window_prefill::stage_prefill_run;
use crate::time::collectives::{Collective, LinkDomain};
use crate::time::cost::{flops_per_token, CostOptions, StepModel};

mod terms;

use terms::{comm_assumption, decode_terms, kv_capacity_term, prefill_terms, throughput_terms};

/// Largest prompt, output or chunk accepted, tokens (10 M: beyond any published context).
pub const MAX_TOKENS: u32 = 10_000_000;
/// Largest concurrency accepted per replica.
pub const MAX_CONCURRENCY: u32 = 1_000_000;

/// The traffic one replica serves: request mix, concurrency, prefix-cache hits, chunking.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingLoad {
    /// Prompt tokens per request.
    pub prompt_tokens: u32,
    /// Output tokens per request.
    pub output_tokens: u32,
    /// Requests decoding at once per replica (the continuous batch).
    pub concurrency: u32,
    /// Share of prompt tokens found in the prefix cache, in [0, 1].
    pub prefix_hit_rate: f64,
    /// Prefill chunk size, tokens (vLLM `max_num_batched_tokens` with chunked prefill).
    pub prefill_chunk_tokens: u32,
    /// Routed experts split whole over the TP ranks (vLLM `--enable-expert-parallel`):
    /// MoE layers exchange tokens by all-to-all instead of all-reducing.
    pub expert_parallel: bool,
    /// Open-loop arrival rate, requests/s; `None`: the rate the concurrency sustains
    /// (Little's law, `c / (output × TPOT)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_rate_per_s: Option<f64>,
    /// The CUDA-graph batch a decode step without a prefill is padded to (TensorRT-LLM's
    /// `cuda_graph_config.enable_padding`: the running batch is rounded up to the next captured
    /// size, and the padding tokens run every GEMM); `None`: no padding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_padded_batch: Option<u32>,
    /// The engine's decode-attention kernel where its KV read was measured
    /// ([`decode_attention`]); `None`: the KV is read at the copy share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_attention: Option<DecodeAttentionKernel>,
    /// Prompts run in steps of their own while decoding pauses (TensorRT-LLM static batching,
    /// engines without chunked prefill); false: chunks share each step's token budget with
    /// the running decodes (vLLM V1, SGLang, TensorRT-LLM with chunking).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prefill_first: bool,
}

impl Default for ServingLoad {
    fn default() -> Self {
        ServingLoad {
            prompt_tokens: 1024,
            output_tokens: 256,
            concurrency: 16,
            prefix_hit_rate: 0.0,
            prefill_chunk_tokens: 2048,
            expert_parallel: false,
            arrival_rate_per_s: None,
            graph_padded_batch: None,
            decode_attention: None,
            prefill_first: false,
        }
    }
}

fn err(field: &'static str, reason: impl Into<String>) -> ServingError {
    ServingError {
        field,
        reason: reason.into(),
    }
}

impl ServingLoad {
    /// Range checks; the error names the field (`load.prompt_tokens`, ...).
    pub fn validate(&self, context_len: u32) -> Result<(), ServingError> {
        let count = |field: &'static str, v: u32, max: u32| {
            if v == 0 || v > max {
                Err(err(field, format!("must be in 1..={max}, got {v}")))
            } else {
                Ok(())
            }
        };
        count("load.prompt_tokens", self.prompt_tokens, MAX_TOKENS)?;
        count("load.output_tokens", self.output_tokens, MAX_TOKENS)?;
        count("load.concurrency", self.concurrency, MAX_CONCURRENCY)?;
        count(
            "load.prefill_chunk_tokens",
            self.prefill_chunk_tokens,
            MAX_TOKENS,
        )?;
        if !(self.prefix_hit_rate.is_finite() && (0.0..=1.0).contains(&self.prefix_hit_rate)) {
            return Err(err(
                "load.prefix_hit_rate",
                format!("must be in [0, 1], got {}", self.prefix_hit_rate),
            ));
        }
        if let Some(r) = self.arrival_rate_per_s {
            if !(r.is_finite() && r > 0.0 && r <= 1e9) {
                return Err(err(
                    "load.arrival_rate_per_s",
                    format!("must be in (0, 1e9] requests/s, got {r}"),
                ));
            }
        }
        if let Some(b) = self.graph_padded_batch {
            if b < self.concurrency || b > MAX_CONCURRENCY {
                return Err(err(
                    "load.graph_padded_batch",
                    format!(
                        "must be in {}..={MAX_CONCURRENCY} (at least the concurrency), got {b}",
                        self.concurrency
                    ),
                ));
            }
        }
        let total = u64::from(self.prompt_tokens) + u64::from(self.output_tokens);
        if total > u64::from(context_len) {
            return Err(err(
                "load.prompt_tokens",
                format!(
                    "prompt {} + output {} = {total} tokens exceed serving.context_len {context_len}",
                    self.prompt_tokens, self.output_tokens
                ),
            ));
        }
        Ok(())
    }
}

/// What limits a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Bytes read from HBM.
    Memory,
    /// FLOPs at the achievable rate.
    Compute,
    /// Exposed communication exceeds both.
    Communication,
}

impl Bound {
    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Communication => "communication",
        }
    }
}

/// One decode step at a batch, on the slowest stage (values in the units the labels say).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecodeStep {
    /// Sequences in the step on each stage (`⌈c / pp⌉`).
    pub micro_batch: u64,
    /// Weight bytes read per GPU (active experts only).
    pub weight_bytes: Term,
    /// KV bytes read per GPU.
    pub kv_bytes: Term,
    /// FLOPs per GPU.
    pub flops: Term,
    /// `bytes / HBM bandwidth`, s.
    pub memory_time: Term,
    /// `FLOPs / (peak × efficiency)`, s.
    pub compute_time: Term,
    /// TP/EP collectives of the step, s.
    pub comm_time: Term,
    /// Fixed launch time of the stage's kernels inside the CUDA graph, s (0 where unmeasured).
    pub kernel_gaps: Term,
    /// The batch's activation traffic through the memory-bound kernels ([`layer_traffic`]), s.
    pub traffic_time: Term,
    /// Per-kernel roofline: `max(weights, GEMM) + max(KV, attention) + comm + kernel gaps`, s
    /// (one stage).
    pub time: Term,
    /// Which term holds.
    pub bound: Bound,
    /// Expected distinct routed experts per MoE layer (MoE only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_experts: Option<Term>,
}

/// The prefill of one request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prefill {
    /// Prompt tokens not found in the prefix cache.
    pub new_tokens: u64,
    /// Chunks (prefill steps).
    pub chunks: u64,
    /// GEMM FLOPs of the whole replica, `2·N_active·new_tokens`.
    pub gemm_flops: Term,
    /// Attention FLOPs of the whole replica.
    pub attention_flops: Term,
    /// Compute time only (what a chunk adds to a decode step it joins, with its traffic), s.
    pub compute_time: Term,
    /// The prompt's activation traffic through the memory-bound kernels ([`layer_traffic`]), s.
    pub traffic_time: Term,
    /// Isolated prefill time: chunks × stages, roofline plus communication, s.
    pub time: Term,
    /// Bound of the largest chunk.
    pub bound: Bound,
}

/// Serving time of one replica under a load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingTime {
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// GPUs per replica.
    pub gpus_per_replica: u64,
    /// The load evaluated.
    pub load: ServingLoad,
    /// Prefill of one request.
    pub prefill: Prefill,
    /// One decode step at the load's concurrency.
    pub decode: DecodeStep,
    /// Prefill chunks amortised per decode step, s.
    pub interference: Term,
    /// Time per output token, s.
    pub tpot: Term,
    /// Arrival rate, requests/s.
    pub arrival_rate: Term,
    /// Prefill-server utilisation ρ.
    pub utilisation: Term,
    /// Mean queueing wait before prefill, s.
    pub queue_wait: Term,
    /// Mean TTFT, s.
    pub ttft: Term,
    /// p90 TTFT, s.
    pub ttft_p90: Term,
    /// p99 TTFT, s.
    pub ttft_p99: Term,
    /// Output tokens/s per replica.
    pub throughput_per_replica: Term,
    /// Output tokens/s per GPU.
    pub throughput_per_gpu: Term,
    /// KV tokens the replica holds vs what the load needs.
    pub kv_capacity_tokens: Term,
    /// `concurrency × (prompt + output) ≤ kv_capacity_tokens`.
    pub fits_kv: bool,
    /// Requests decoding at once ([`admission`]): the clients, the engine's cap or what
    /// the KV pool holds.
    pub running_batch: Term,
    /// Mean wait of a request for a slot in the running batch, s.
    pub admission_wait: Term,
    /// The prefill as a request meets it under the load: its chunk steps shared with the
    /// running decodes, s (the prefill queue's service time).
    pub prefill_under_load: Term,
    /// Speculative decoding's terms (empty without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub speculation: Vec<Term>,
}

impl ServingTime {
    /// Every term, in display order.
    pub fn terms(&self) -> Vec<&Term> {
        let mut v = vec![
            &self.prefill.gemm_flops,
            &self.prefill.attention_flops,
            &self.prefill.compute_time,
            &self.prefill.traffic_time,
            &self.prefill.time,
        ];
        if let Some(d) = &self.decode.distinct_experts {
            v.push(d);
        }
        v.extend([
            &self.decode.weight_bytes,
            &self.decode.kv_bytes,
            &self.decode.flops,
            &self.decode.memory_time,
            &self.decode.compute_time,
            &self.decode.comm_time,
            &self.decode.kernel_gaps,
            &self.decode.traffic_time,
            &self.decode.time,
            &self.interference,
            &self.tpot,
            &self.arrival_rate,
            &self.utilisation,
            &self.queue_wait,
            &self.prefill_under_load,
            &self.running_batch,
            &self.admission_wait,
            &self.ttft,
            &self.ttft_p90,
            &self.ttft_p99,
            &self.throughput_per_replica,
            &self.throughput_per_gpu,
            &self.kv_capacity_tokens,
        ]);
        v.extend(self.speculation.iter());
        v
    }
}

/// Expected distinct experts a batch of `tokens` touches per MoE layer when each token
/// picks `top_k` of `experts` uniformly and independently.
pub fn expected_distinct_experts(experts: u32, top_k: u32, tokens: f64) -> f64 {
    let e = f64::from(experts.max(1));
    let k = f64::from(top_k.min(experts.max(1)));
    // Balls into bins (Feller 1968, Vol. I §IV.2; occupancy): an expert is missed by one token with
    // probability 1 − k/E, by all b tokens with (1 − k/E)^b, so E[distinct] = E·(1 − (1 − k/E)^b).
    e * (1.0 - (1.0 - k / e).powf(tokens.max(0.0)))
}

pub(crate) fn term(
    key: &str,
    label: &str,
    unit: Unit,
    value: f64,
    formula: &str,
    worked: String,
    assumption: &str,
) -> Term {
    Term {
        key: key.to_string(),
        label: label.to_string(),
        unit,
        value,
        formula: formula.to_string(),
        worked,
        assumption: assumption.to_string(),
    }
}

fn secs(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

/// Numbers of one stage the step model needs.
#[derive(Clone, Copy, Debug)]
struct StageShape {
    /// Weight bytes per GPU (all experts).
    weight_bytes: f64,
    /// Routed-expert bytes per GPU among them.
    routed_bytes: f64,
    /// Bytes of the input embedding table on this GPU that a forward does not stream (it looks
    /// up one row per token); 0 where it holds none, or where the table is also the output
    /// projection (tied, one stage), which every step reads whole.
    embedding_table_bytes: f64,
    /// Bytes of one embedding row on this GPU (h / TP values): what a token's lookup reads.
    embedding_row_bytes: f64,
    /// KV bytes per cached token per GPU.
    kv_per_token: f64,
    /// Layers, and MoE layers among them.
    layers: f64,
    moe_layers: f64,
    /// Share of the model's FLOPs (layers / total layers; whole model with one stage).
    flop_share: f64,
    /// Whether the boundary after this stage crosses nodes.
    next_hop_inter: bool,
    /// First decoder layer of the stage and its layer count (for windowed layers).
    first_layer: u32,
    layer_count: u32,
}

/// One step's seconds on one stage.
#[derive(Clone, Copy, Debug, Default)]
struct StepNumbers {
    weight_bytes: f64,
    kv_bytes: f64,
    gemm_flops: f64,
    attn_flops: f64,
    memory_s: f64,
    compute_s: f64,
    comm_s: f64,
    /// Fixed launch time of the stage's kernels ([`kernel_gaps`]), s.
    launch_s: f64,
    /// Activation bytes the stage's memory-bound kernels move ([`layer_traffic`]).
    traffic_bytes: f64,
    /// Their time at the streaming bandwidth, s.
    traffic_s: f64,
    total_s: f64,
    gemm_eff: f64,
    distinct: f64,
    /// Weight GEMMs' own roofline, max(weights / HBM, GEMM FLOPs / rate), s.
    gemm_op_s: f64,
    /// Attention's own roofline, max(KV / HBM, attention FLOPs / rate), s.
    attn_op_s: f64,
}

struct Ctx<'a> {
    model: &'a ModelSpec,
    step: &'a StepModel,
    /// The replica shape's load-independent numbers.
    timer: &'a ReplicaTimer,
    ep: bool,
    /// Measured share of the datasheet HBM bandwidth the decode step's KV read reaches, where
    /// the engine's decode-attention kernel was measured on the GPU with the cache's dtype
    /// ([`decode_attention`]); `None`: the copy share.
    kv_stream_fraction: Option<f64>,
}

impl Ctx<'_> {
    /// The GEMMs' rate: the peak at `eff`, less what a power limit below the datasheet's takes
    /// of the tensor rates (time/cost.rs `gemm_power_fraction`).
    fn rate(&self, eff: f64) -> f64 {
        (self.step.peak_flops_per_s * self.step.gemm_power_fraction() * eff).max(1.0)
    }

    /// Attention's rate. QKᵀ and P·V read the KV cache in its own dtype: with a BF16 cache they
    /// run at the BF16 tensor peak even when the linear layers are FP8 (W8A8 quantizes the
    /// linear layers only; the training model prices attention the same way, time/cost.rs);
    /// with an FP8 cache at the GEMMs' peak (vLLM docs "Quantized KV Cache": with FlashAttention
    /// 3 and an FP8 KV cache "attention operations are also performed in the quantized (FP8)
    /// domain").
    fn attention_rate(&self, eff: f64) -> f64 {
        let peak = if self.timer.fp8_attention {
            self.step.peak_flops_per_s
        } else {
            self.step.bf16_flops_per_s
        };
        (peak * self.step.tensor_power_fraction() * eff).max(1.0)
    }

    /// One stage's step over `tokens` new tokens whose attention covers `attn_pairs`
    /// (query, key) pairs, reading `kv_tokens` cached tokens per GPU.
    fn stage_step(
        &self,
        st: &StageShape,
        tokens: f64,
        attn_pairs: f64,
        kv_tokens: f64,
        decode: bool,
    ) -> StepNumbers {
        let tp = f64::from(self.timer.tp.max(1));
        let (distinct, expert_fraction) = match &self.model.moe {
            Some(m) if st.moe_layers > 0.0 => {
                let d = expected_distinct_experts(m.routed_experts, m.experts_per_token, tokens);
                (d, d / f64::from(m.routed_experts.max(1)))
            }
            _ => (0.0, 1.0),
        };
        // The embedding lookup reads one row per token (vLLM VocabParallelEmbedding: F.embedding
        // over the rank's shard), not the table: the table's bytes leave the stream, the rows
        // come back, at most the table.
        let embedding_read = (tokens * st.embedding_row_bytes).min(st.embedding_table_bytes);
        let weight_bytes =
            st.weight_bytes - st.routed_bytes * (1.0 - expert_fraction) - st.embedding_table_bytes
                + embedding_read;
        let kv_bytes = st.kv_per_token * kv_tokens;
        let gemm_flops = self.timer.dense_per_token * tokens * st.flop_share / tp;
        let attn_flops = self.timer.attn_coeff * attn_pairs * st.flop_share / tp;
        let hidden = f64::from(self.model.hidden);
        // Prefill: the training model's rule, the smallest GEMM dimension (tokens or h/tp).
        // Decode: h/tp only; the curve's fall-off at few tokens is a GEMM turning memory-bound,
        // which the roofline's bytes term already prices (counting it twice would double it).
        let gemm_dim = if decode {
            hidden / tp
        } else {
            tokens.min(hidden / tp)
        };
        let gemm_eff = self.step.options.gemm.at(gemm_dim);
        let attn_eff = self.step.options.attention_efficiency.clamp(1e-3, 1.0);
        // Weights and KV are streamed once per step: the achievable HBM bandwidth the training
        // model prices streaming kernels at (`StepModel::hbm_achievable_fraction`, one definition).
        let bw = self.step.hbm_streaming_bytes_per_s();
        // Weight GEMMs stream at their own measured share where one was measured (FP8 on H100,
        // weight_stream.rs), else at the copy share like the KV read.
        let weight_bw = self.timer.weight_stream_fraction.map_or(bw, |f| {
            (self.step.hbm_bytes_per_s * f.clamp(1e-3, 1.0)).max(1.0)
        });
        // A decode step's KV is read by the engine's decode-attention kernel: at its measured
        // share where one was measured (TensorRT-LLM's XQA with an FP8 cache on Hopper,
        // decode_attention.rs); prefill chunks (context attention) keep the copy share.
        let kv_bw = match self.kv_stream_fraction {
            Some(f) if decode => (self.step.hbm_bytes_per_s * f.clamp(1e-3, 1.0)).max(1.0),
            _ => bw,
        };
        let (weights_s, kv_s) = (weight_bytes / weight_bw, kv_bytes / kv_bw);
        // FP8 weight GEMMs reach FP8's lower achievable share of its peak (the training model's
        // `peak_gemm_efficiency_ratio`, ml-engineering's MAMF table; 1 for BF16).
        let (gemm_s, attn_s) = (
            gemm_flops / (self.rate(gemm_eff) * self.step.peak_gemm_efficiency_ratio),
            attn_flops / self.attention_rate(attn_eff),
        );
        // The kernels between the GEMMs (norms, RoPE, KV write, activation) stream the batch's
        // activations once per token per layer, at the copy share (layer_traffic.rs).
        let (dense_layer, moe_layer) = self.timer.traffic_bytes_per_token_per_layer;
        let traffic_bytes = tokens.max(0.0)
            * ((st.layers - st.moe_layers).max(0.0) * dense_layer + st.moe_layers * moe_layer);
        let traffic_s = traffic_bytes / bw;
        let memory_s = weights_s + kv_s + traffic_s;
        let compute_s = gemm_s + attn_s;
        // Roofline per kernel (Williams et al. 2009 bound one kernel: max(bytes / bandwidth,
        // FLOPs / attainable rate)). The weight GEMMs and attention are separate kernels run one
        // after the other in each layer (vLLM model_executor/models/llama.py LlamaAttention.forward:
        // qkv_proj, then self.attn over the paged KV, then o_proj), so their bounds add: one
        // cannot hide the other's bytes or FLOPs.
        let gemm_op_s = weights_s.max(gemm_s);
        let attn_op_s = kv_s.max(attn_s);
        // Megatron TP (Shoeybi et al. 2019 §3): two all-reduces of the b·h activations per layer.
        let msg = tokens * hidden * self.timer.act_bytes;
        let ar = self.all_reduce_s(msg);
        let comm_s = if self.ep && self.timer.tp > 1 {
            let k = self
                .model
                .moe
                .as_ref()
                .map_or(0.0, |m| f64::from(m.experts_per_token));
            // GShard/DeepSpeed-MoE EP: dispatch and combine all-to-all per MoE layer, each rank sending
            // its 1/ep share of tokens × top-k × h; attention keeps its TP all-reduce.
            let a2a = self.step.comm.time_s(
                Collective::AllToAll,
                tokens * k * hidden * self.timer.act_bytes / tp,
                &self.timer.tp_group,
            );
            (st.layers - st.moe_layers) * 2.0 * ar + st.moe_layers * (ar + 2.0 * a2a)
        } else {
            st.layers * 2.0 * ar
        };
        // Every forward (a decode step, a prefill chunk) runs each layer's kernels one after
        // another; each launch streams nothing (kernel_gaps: measured per kernel, counted from
        // vLLM's Llama layer).
        let launch_s = self.timer.kernel_launch_s.map_or(0.0, |k| {
            kernel_gaps::layers_launch_s(st.layers, st.moe_layers, k)
        });
        StepNumbers {
            weight_bytes,
            kv_bytes,
            gemm_flops,
            attn_flops,
            memory_s,
            compute_s,
            comm_s,
            launch_s,
            traffic_bytes,
            traffic_s,
            total_s: gemm_op_s + attn_op_s + traffic_s + comm_s + launch_s,
            gemm_op_s,
            attn_op_s,
            gemm_eff,
            distinct,
        }
    }

    /// One TP all-reduce of `bytes`: the engines' custom kernel where it was measured
    /// (vLLM/SGLang on an NVLink 4 node, messages up to 1 MiB), NCCL's price otherwise.
    fn all_reduce_s(&self, bytes: f64) -> f64 {
        if let Some(t) = self.timer.custom_ar.and_then(|row| row.latency_s(bytes)) {
            return t;
        }
        let nccl = self
            .step
            .comm
            .time_s(Collective::AllReduce, bytes, &self.timer.tp_group);
        // Past the measured sizes on that fabric: a larger message never takes less time than
        // the largest measured one (the tuner's estimate can undercut the kernel measured there).
        self.timer
            .custom_ar
            .map_or(nccl, |row| nccl.max(row.largest_measured_s()))
    }

    /// Activation hop to the next stage (point-to-point, α–β on its link).
    fn hop(&self, st: &StageShape, tokens: f64) -> f64 {
        let domain = if st.next_hop_inter {
            LinkDomain::InterNode
        } else {
            LinkDomain::IntraNode
        };
        let msg = tokens * f64::from(self.model.hidden) * self.timer.act_bytes;
        self.step
            .comm
            .link(Collective::SendRecv, domain)
            .time_s(Collective::SendRecv, msg, 2)
    }
}

fn bound_of(n: &StepNumbers) -> Bound {
    if n.comm_s > n.memory_s.max(n.compute_s) {
        Bound::Communication
    } else if n.memory_s >= n.compute_s {
        Bound::Memory
    } else {
        Bound::Compute
    }
}

fn stage_shapes(model: &ModelSpec, scenario: &Scenario, stages: &[StagePlan]) -> Vec<StageShape> {
    let serving = &scenario.serving;
    let (tp, pp) = (serving.tp.max(1), serving.pp.max(1));
    let b = model.param_breakdown();
    let parts = serving::stage_layers(model.layers, pp);
    let gpn = u64::from(scenario.cluster.gpus_per_node.max(1));
    let dense_layers = b.dense_layers;
    let moe_total = b.moe_layers;
    let mut out = Vec::with_capacity(stages.len());
    for st in stages {
        let first: u64 = parts
            .iter()
            .take(st.stage as usize)
            .map(|&l| u64::from(l))
            .sum();
        let end = first + u64::from(st.layers);
        let moe_here = if moe_total == 0 {
            0
        } else {
            end.saturating_sub(first.max(dense_layers))
        };
        let routed_bytes =
            b.routed_experts_per_layer as f64 * moe_here as f64 * model.param_scale()
                / f64::from(tp)
                * serving.weight_dtype.routed_expert_bytes();
        let flop_share = if pp == 1 {
            1.0
        } else {
            f64::from(st.layers) / f64::from(model.layers.max(1))
        };
        let last_gpu = (u64::from(st.stage) + 1) * u64::from(tp) - 1;
        let next_first = last_gpu + 1;
        // A tied table on a one-stage replica is also the output projection (read whole).
        let lookup_only = st.stage == 0 && !(model.tied_embeddings && pp == 1);
        let vocab_bytes = serving::vocab_dtype_bytes(serving.weight_dtype);
        let (embedding_table_bytes, embedding_row_bytes) = if lookup_only {
            (
                b.embedding as f64 * model.param_scale() / f64::from(tp) * vocab_bytes,
                f64::from(model.hidden) * model.param_scale() / f64::from(tp) * vocab_bytes,
            )
        } else {
            (0.0, 0.0)
        };
        out.push(StageShape {
            weight_bytes: st.weights.value,
            routed_bytes,
            embedding_table_bytes,
            embedding_row_bytes,
            kv_per_token: st.kv_per_token.value,
            layers: f64::from(st.layers),
            moe_layers: moe_here as f64,
            flop_share,
            next_hop_inter: last_gpu / gpn != next_first / gpn,
            first_layer: u32::try_from(first).unwrap_or(u32::MAX),
            layer_count: st.layers,
        });
    }
    out
}

/// What of one replica shape does not depend on the load: its stages, the per-token FLOP
/// coefficients, the TP group's placement and the KV capacity. Built once per shape; the
/// deployment search prices every concurrency of its ladder from it.
#[derive(Clone, Debug)]
pub struct ReplicaTimer {
    tp: u32,
    pp: u32,
    gpus: u64,
    act_bytes: f64,
    tp_group: GroupPlacement,
    /// The engines' custom all-reduce's measured row, where it applies ([`custom_all_reduce`]).
    custom_ar: Option<custom_all_reduce::LatencyRow>,
    /// Whether attention runs in FP8 (an FP8 KV cache): else at the BF16 peak.
    fp8_attention: bool,
    /// Measured launch cost of one kernel inside a CUDA graph, where measured ([`kernel_gaps`]).
    kernel_launch_s: Option<f64>,
    /// Measured streaming share of the datasheet HBM bandwidth the weight GEMMs reach, where a
    /// decode GEMM of the weights' dtype was measured on the GPU ([`weight_stream`]).
    weight_stream_fraction: Option<f64>,
    /// The KV share TensorRT-LLM's XQA reaches on this GPU with this cache, where measured.
    xqa_kv_fraction: Option<f64>,
    /// Bytes one token moves through a dense and a MoE decoder layer's memory-bound kernels
    /// on one GPU ([`layer_traffic`]).
    traffic_bytes_per_token_per_layer: (f64, f64),
    /// 2·N_active (matmul FLOPs per token, whole model).
    dense_per_token: f64,
    /// Attention FLOPs per (query token × key token), whole model: `2·L·a·(d_qk + d_v)`.
    attn_coeff: f64,
    shapes: Vec<StageShape>,
    /// ⌊KV pool / KV per token⌋ on the worst stage.
    pub kv_capacity_tokens: f64,
    /// The scenario's speculative decoding, if any.
    speculation: Option<Speculation>,
    /// Bytes per weight and per KV value of the serving dtypes (the draft's reads).
    weight_bytes_per_param: f64,
    kv_bytes_per_value: f64,
}

/// The numbers of [`ServingTime`] the deployment search ranks by, without their explanations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServingNumbers {
    /// Prefill of one request under the load (its chunk steps shared with the running
    /// decodes), s.
    pub prefill_s: f64,
    /// Bound of the prefill's largest chunk.
    pub prefill_bound: Bound,
    /// TPOT (decode step plus the prefill chunks mixed in), s.
    pub tpot_s: f64,
    /// Prefill chunks amortised per decode step, s.
    pub interference_s: f64,
    /// Bound of the decode step.
    pub decode_bound: Bound,
    /// KV tokens the replica holds.
    pub kv_capacity_tokens: f64,
}

impl ReplicaTimer {
    /// The shape of `scenario.serving` with its memory plan.
    pub fn new(model: &ModelSpec, scenario: &Scenario, plan: &serving::ServingPlan) -> Self {
        let serving = &scenario.serving;
        let (tp, pp) = (serving.tp, serving.pp);
        let gpn = u64::from(scenario.cluster.gpus_per_node.max(1));
        let f1 = flops_per_token(model, 1, false);
        let capacity = plan
            .stages
            .iter()
            .map(|s| {
                if s.kv_per_token.value > 0.0 {
                    (s.kv_budget.value.max(0.0) / s.kv_per_token.value).floor()
                } else {
                    0.0
                }
            })
            .fold(f64::INFINITY, f64::min);
        let tp_group = GroupPlacement::from_factors(GroupKind::Tp, &[(1, u64::from(tp))], gpn);
        ReplicaTimer {
            tp,
            pp,
            gpus: u64::from(tp) * u64::from(pp),
            act_bytes: scenario.precision.activation_bytes,
            tp_group,
            custom_ar: custom_all_reduce::row_for(
                &scenario.cluster.gpu,
                tp,
                tp_group.domain == Domain::IntraNode,
            ),
            fp8_attention: serving.kv_dtype == ServeDtype::Fp8,
            kernel_launch_s: kernel_gaps::launch_s_for(&scenario.cluster.gpu),
            weight_stream_fraction: weight_stream::measured_weight_stream_fraction(
                &scenario.cluster.gpu,
                serving.weight_dtype,
            ),
            xqa_kv_fraction: decode_attention::measured_kv_stream_fraction(
                &scenario.cluster.gpu,
                serving.kv_dtype,
                Some(DecodeAttentionKernel::TrtllmXqa),
            ),
            traffic_bytes_per_token_per_layer: (
                layer_traffic::layer_bytes_per_token(
                    model,
                    tp,
                    false,
                    scenario.precision.activation_bytes,
                    serving.kv_dtype.bytes(),
                ),
                layer_traffic::layer_bytes_per_token(
                    model,
                    tp,
                    true,
                    scenario.precision.activation_bytes,
                    serving.kv_dtype.bytes(),
                ),
            ),
            dense_per_token: f1.dense_forward,
            attn_coeff: f1.attention_forward,
            shapes: stage_shapes(model, scenario, &plan.stages),
            kv_capacity_tokens: if capacity.is_finite() { capacity } else { 0.0 },
            speculation: serving.speculation.clone(),
            weight_bytes_per_param: serving.weight_dtype.bytes(),
            kv_bytes_per_value: serving.kv_dtype.bytes(),
        }
    }

    fn ctx<'a>(&'a self, model: &'a ModelSpec, step: &'a StepModel, load: &ServingLoad) -> Ctx<'a> {
        Ctx {
            model,
            step,
            timer: self,
            ep: load.expert_parallel && model.moe.is_some(),
            kv_stream_fraction: match load.decode_attention {
                Some(DecodeAttentionKernel::TrtllmXqa) => self.xqa_kv_fraction,
                None => None,
            },
        }
    }

    /// Tensor-parallel degree.
    pub fn tp(&self) -> u32 {
        self.tp
    }

    /// Pipeline stages.
    pub fn pp(&self) -> u32 {
        self.pp
    }

    /// [`serving_time_with`]'s numbers under `load` (validated by the caller), computed by the
    /// same functions, without building its terms.
    pub fn numbers(
        &self,
        model: &ModelSpec,
        step: &StepModel,
        load: &ServingLoad,
    ) -> Result<ServingNumbers, ServingError> {
        let load = &under_load(load, load.concurrency, self.pp);
        let ctx = self.ctx(model, step, load);
        let pre = prefill_numbers(&ctx, &self.shapes, load);
        let dec = decode_numbers(&ctx, &self.shapes, self.pp, load, pre.p, 1.0);
        let ride_s = riders_s(load, &dec.slowest, dec.m, pre.chunks, self.pp);
        let step_per_token_s = match &self.speculation {
            Some(sp) => SpecInputs {
                ctx: &ctx,
                timer: self,
                sp,
                p: pre.p,
            }
            .step_per_token_s(load, &dec),
            None => f64::from(self.pp) * dec.slowest.total_s + dec.hops,
        };
        let b = batch_numbers(
            pre.prefill_s + ride_s,
            pre.prefill_compute_s + pre.prefill_traffic_s,
            step_per_token_s,
            load,
        )?;
        Ok(ServingNumbers {
            prefill_s: pre.prefill_s + ride_s,
            prefill_bound: bound_of(&pre.worst_chunk),
            tpot_s: b.tpot_s,
            interference_s: b.interference_s,
            decode_bound: bound_of(&dec.slowest),
            kv_capacity_tokens: self.kv_capacity_tokens,
        })
    }
}

/// One request's chunked prefill on the replica.
struct PrefillNumbers {
    p: u64,
    cached: u64,
    new_tokens: u64,
    chunk: u64,
    chunks: u64,
    prefill_s: f64,
    prefill_compute_s: f64,
    /// The prefill's activation traffic through the memory-bound kernels ([`layer_traffic`]), s.
    prefill_traffic_s: f64,
    worst_chunk: StepNumbers,
    windowed_layers: u32,
}

fn prefill_numbers(ctx: &Ctx<'_>, shapes: &[StageShape], load: &ServingLoad) -> PrefillNumbers {
    let model = ctx.model;
    let p = u64::from(load.prompt_tokens);
    let cached = ((p as f64 * load.prefix_hit_rate).floor() as u64).min(p - 1);
    let new_tokens = p - cached;
    let chunk = u64::from(load.prefill_chunk_tokens);
    let chunks = new_tokens.div_ceil(chunk);
    let (mut prefill_s, mut prefill_compute_s, mut prefill_traffic_s) = (0.0f64, 0.0f64, 0.0f64);
    let (mut worst_chunk, mut worst_chunk_s) = (StepNumbers::default(), -1.0f64);
    let mut windowed_layers = 0u32;
    // Chunks repeat in shape except the attention they cover; a run of equal chunks is
    // summed in closed form so the work is O(stages), not O(chunks).
    let full = new_tokens / chunk;
    let rest = new_tokens % chunk;
    for (count, len, start) in [
        (full, chunk, cached),
        (u64::from(rest > 0), rest, cached + full * chunk),
    ] {
        if count == 0 {
            continue;
        }
        let (c, n, s0) = (count as f64, len as f64, start as f64);
        let mut per_chunk = 0.0;
        let mut chunk_numbers = StepNumbers::default();
        for (i, st) in shapes.iter().enumerate() {
            // The run's attention pairs and cached-token reads on this stage's layers, full and
            // windowed (window_prefill: a windowed layer attends to and reads at most w tokens).
            let run = stage_prefill_run(model, st.first_layer, st.layer_count, s0, n, c);
            windowed_layers = windowed_layers.max(run.windowed_layers);
            // The run's mean chunk: every term is linear in the attention pairs and the KV
            // read, so c × the mean chunk is the roofline of the run's sums.
            let one = ctx.stage_step(st, n, run.attn_pairs / c, run.kv_tokens / c, false);
            let hop = if i + 1 < shapes.len() {
                ctx.hop(st, n)
            } else {
                0.0
            };
            prefill_s += c * (one.total_s + hop);
            prefill_compute_s += c * one.compute_s;
            prefill_traffic_s += c * one.traffic_s;
            per_chunk += one.total_s;
            if one.total_s > chunk_numbers.total_s {
                chunk_numbers = one;
            }
        }
        if per_chunk > worst_chunk_s {
            worst_chunk_s = per_chunk;
            worst_chunk = chunk_numbers;
        }
    }
    PrefillNumbers {
        p,
        cached,
        new_tokens,
        chunk,
        chunks,
        prefill_s,
        prefill_compute_s,
        prefill_traffic_s,
        worst_chunk,
        windowed_layers,
    }
}

/// One decode step at the load's concurrency, on the slowest stage.
struct DecodeNumbers {
    c: u64,
    m: u64,
    slowest: StepNumbers,
    kv_means: WindowedDecode,
    hops: f64,
}

fn decode_numbers(
    ctx: &Ctx<'_>,
    shapes: &[StageShape],
    pp: u32,
    load: &ServingLoad,
    p: u64,
    queries_per_seq: f64,
) -> DecodeNumbers {
    let model = ctx.model;
    let c = u64::from(load.concurrency);
    let m = c.div_ceil(u64::from(pp));
    let mf = m as f64;
    let o = f64::from(load.output_tokens);
    // Step j (1..=O) of a request reads P + j − 1 cached tokens: the mean over its output.
    let mean_ctx = p as f64 + (o - 1.0) / 2.0;
    let mut slowest = StepNumbers::default();
    let mut slowest_means = None;
    let mut hops = 0.0;
    for (i, st) in shapes.iter().enumerate() {
        // Sliding-window layers read min(w, context) cached tokens and attend to
        // min(w, context + 1) keys (window_decode); full layers the whole context.
        let means = stage_decode_means(model, st.first_layer, st.layer_count, p as f64, o);
        // A verify step of speculative decoding runs q = k + 1 queries per sequence over the
        // same cached context: q times the tokens and attention, the KV read once.
        let tokens = if queries_per_seq > 1.0 {
            mf * queries_per_seq
        } else {
            graph_padded_tokens(load, mf)
        };
        let n = ctx.stage_step(
            st,
            tokens,
            mf * queries_per_seq * means.attended_keys,
            mf * means.kv_tokens,
            true,
        );
        if n.total_s > slowest.total_s || i == 0 {
            slowest_means = Some(means);
        }
        if n.total_s > slowest.total_s || i == 0 {
            slowest = n;
        }
        if i + 1 < shapes.len() {
            hops += ctx.hop(st, mf);
        }
    }
    let kv_means = slowest_means.unwrap_or(WindowedDecode {
        kv_tokens: mean_ctx,
        attended_keys: mean_ctx + 1.0,
        windowed_layers: 0,
    });
    DecodeNumbers {
        c,
        m,
        slowest,
        kv_means,
        hops,
    }
}

/// Tokens a decode step's GEMMs (and its all-reduces) run over: the micro-batch `m`, or where
/// the engine pads its CUDA graphs ([`ServingLoad::graph_padded_batch`]), `m` plus the padding
/// on the share of steps that carry no prefill. A step that admits a prompt runs outside the
/// graph (TensorRT-LLM captures generation-only batches), unpadded. With every request decoding
/// O steps, c requests admit c / O prompts per step (Little's law), so a share
/// max(0, 1 − c / O) of the steps is pure decode. Attention and the KV read are not padded:
/// a padding sequence has no cached tokens.
pub fn graph_padded_tokens(load: &ServingLoad, m: f64) -> f64 {
    match load.graph_padded_batch {
        Some(b) if f64::from(b) > m => {
            let c = f64::from(load.concurrency);
            let o = f64::from(load.output_tokens.max(1));
            let pure_decode_share = (1.0 - c / o).clamp(0.0, 1.0);
            m + (f64::from(b) - m) * pure_decode_share
        }
        _ => m,
    }
}

/// Speculative decoding's step ([`speculation`]): the verify forward of k + 1 queries per
/// sequence on the target, k draft forwards, and the tokens a step keeps on average.
struct SpecNumbers {
    tokens_per_step: f64,
    verify_s: f64,
    draft: speculation::DraftStep,
    draft_s: f64,
    step_per_token_s: f64,
    plain_step_s: f64,
    /// Smallest running batch of the ladder at which speculation no longer pays.
    break_even_batch: Option<u32>,
}

/// What a speculative step is priced from, besides the load.
struct SpecInputs<'a> {
    ctx: &'a Ctx<'a>,
    timer: &'a ReplicaTimer,
    sp: &'a Speculation,
    /// Prompt tokens.
    p: u64,
}

impl SpecInputs<'_> {
    /// The plain step, the verify step, the k draft forwards (s) and one draft forward, at
    /// `load`'s concurrency.
    fn steps(&self, load: &ServingLoad) -> (f64, f64, f64, speculation::DraftStep) {
        let timer = self.timer;
        let plain = decode_numbers(self.ctx, &timer.shapes, timer.pp, load, self.p, 1.0);
        self.steps_beside(load, &plain)
    }

    /// [`Self::steps`] with the plain step already priced (the search has it).
    fn steps_beside(
        &self,
        load: &ServingLoad,
        plain: &DecodeNumbers,
    ) -> (f64, f64, f64, speculation::DraftStep) {
        let (ctx, timer, sp) = (self.ctx, self.timer, self.sp);
        let pp = f64::from(timer.pp);
        let queries = f64::from(sp.draft_tokens) + 1.0;
        let verify = decode_numbers(ctx, &timer.shapes, timer.pp, load, self.p, queries);
        let machine = speculation::DraftMachine {
            tp: timer.tp,
            weight_bytes_per_param: timer.weight_bytes_per_param,
            kv_bytes_per_token_layer_gpu:
                crate::memory::kv_cache::values_per_token_per_layer_per_gpu(ctx.model, timer.tp)
                    * timer.kv_bytes_per_value,
            hbm_bytes_per_s: ctx.step.hbm_streaming_bytes_per_s(),
            flops_per_s: ctx.rate(plain.slowest.gemm_eff),
            launch_s: ctx.timer.kernel_launch_s.unwrap_or(0.0),
        };
        let o = f64::from(load.output_tokens);
        let mean_ctx = self.p as f64 + (o - 1.0) / 2.0;
        let draft = speculation::draft_step(ctx.model, sp, plain.m as f64, mean_ctx, &machine);
        let plain_s = pp * plain.slowest.total_s + plain.hops;
        let verify_s = pp * verify.slowest.total_s + verify.hops;
        (
            plain_s,
            verify_s,
            f64::from(sp.draft_tokens) * draft.seconds,
            draft,
        )
    }

    /// Seconds per output token of the speculative step (interference aside).
    fn step_per_token_s(&self, load: &ServingLoad, plain: &DecodeNumbers) -> f64 {
        let (_, verify_s, draft_s, _) = self.steps_beside(load, plain);
        (verify_s + draft_s) / self.sp.tokens_per_step()
    }

    fn numbers(&self, load: &ServingLoad) -> SpecNumbers {
        let tokens_per_step = self.sp.tokens_per_step();
        let (plain_step_s, verify_s, draft_s, draft) = self.steps(load);
        // The batch where the verify step's extra queries and the drafts cost more than the
        // accepted tokens save: the doubling ladder of running batches, first loss.
        let break_even_batch = (0..13).map(|i| 1u32 << i).find(|&b| {
            let at = ServingLoad {
                concurrency: b,
                graph_padded_batch: None,
                ..load.clone()
            };
            let (plain, verify, draft, _) = self.steps(&at);
            (verify + draft) / tokens_per_step >= plain
        });
        SpecNumbers {
            tokens_per_step,
            verify_s,
            draft,
            draft_s,
            step_per_token_s: (verify_s + draft_s) / tokens_per_step,
            plain_step_s,
            break_even_batch,
        }
    }
}

/// Decodes that share a prefill chunk's step on a stage: the other running requests
/// (`⌈(b − 1)/pp⌉`), none when prompts run in steps of their own.
fn decodes_beside_a_chunk(load: &ServingLoad, running: u32, pp: u32) -> u32 {
    if load.prefill_first {
        0
    } else {
        running.saturating_sub(1).div_ceil(pp.max(1))
    }
}

/// The load as the engine runs it: `running` requests decoding, and a prompt's chunk given
/// what the decodes leave of the step's token budget.
fn under_load(clients: &ServingLoad, running: u32, pp: u32) -> ServingLoad {
    let riders = decodes_beside_a_chunk(clients, running, pp);
    ServingLoad {
        concurrency: running,
        // vllm/v1/core/sched/scheduler.py `schedule`: running requests take their decode tokens
        // from `max_num_batched_tokens` first; a waiting prompt's chunk gets what is left
        // (TensorRT-LLM's max_num_tokens and SGLang's chunked_prefill_size budget the same way).
        // A prompt the chunk size covers whole runs whole (chunking off, or a short prompt).
        prefill_chunk_tokens: if clients.prefill_chunk_tokens >= clients.prompt_tokens {
            clients.prefill_chunk_tokens
        } else {
            clients.prefill_chunk_tokens.saturating_sub(riders).max(1)
        },
        ..clients.clone()
    }
}

/// Seconds the running decodes add to a prompt's chunk steps: each chunk step also reads the
/// riders' KV, runs their attention and moves their activations (their weight GEMMs share the
/// chunk's weight read), on every stage the chunk passes.
fn riders_s(load: &ServingLoad, slowest: &StepNumbers, m: u64, chunks: u64, pp: u32) -> f64 {
    let riders = decodes_beside_a_chunk(load, load.concurrency, pp);
    if riders == 0 || m == 0 {
        return 0.0;
    }
    let per_rider = (slowest.attn_op_s + slowest.traffic_s) / m as f64;
    chunks as f64 * f64::from(pp) * per_rider * f64::from(riders)
}

/// Continuous batching and the prefill queue.
struct BatchNumbers {
    interference_s: f64,
    tpot_s: f64,
    queue: Queue,
    throughput_s: f64,
}

fn batch_numbers(
    prefill_s: f64,
    prefill_added_s: f64,
    step_per_token_s: f64,
    load: &ServingLoad,
) -> Result<BatchNumbers, ServingError> {
    let cf = f64::from(load.concurrency);
    let o = f64::from(load.output_tokens);
    let pipeline_step = step_per_token_s;
    // Sarathi-Serve (Agrawal et al. 2024): chunks of new prompts ride in decode steps; at steady
    // state c/O requests finish (and are replaced) per step, adding their prefill compute and
    // their tokens' activation traffic (layer_traffic.rs: per token, not shared with the step).
    let interference_s = cf / o * prefill_added_s;
    let tpot_s = pipeline_step + interference_s;
    let service = prefill_s;
    let queue = match load.arrival_rate_per_s {
        Some(rate) => open_loop_queue(rate, service)?,
        None => closed_loop_queue(cf, service, (o - 1.0) * tpot_s, 1.0),
    };
    // Output tokens per second: every request emits O tokens, requests complete at λ (Little
    // 1961); in the closed loop λ is the throughput bound above, open loop keeps c / TPOT
    // (every running request emits one token per step, Orca, Yu et al. 2022).
    let throughput_s = if load.arrival_rate_per_s.is_some() {
        cf / tpot_s
    } else {
        queue.rate * o
    };
    Ok(BatchNumbers {
        interference_s,
        tpot_s,
        queue,
        throughput_s,
    })
}

/// Serving time of a scenario's replica shape under `load` (model resolved from the scenario).
pub fn serving_time(scenario: &Scenario, load: &ServingLoad) -> Result<ServingTime, ServingError> {
    let model = scenario
        .model_spec()
        .map_err(|e| err("model", e.to_string()))?;
    serving_time_for(&model, scenario, load)
}

/// Serving time with the model given.
pub fn serving_time_for(
    model: &ModelSpec,
    scenario: &Scenario,
    load: &ServingLoad,
) -> Result<ServingTime, ServingError> {
    let serving = &scenario.serving;
    load.validate(serving.context_len)?;
    if serving.pp as usize > MAX_LISTED_STAGES {
        return Err(err(
            "serving.pp",
            format!("the serving time model evaluates at most {MAX_LISTED_STAGES} stages"),
        ));
    }
    let plan = serving::serving_plan(model, serving, &scenario.cluster)?;
    let step = StepModel::for_scenario(model, scenario, CostOptions::default());
    serving_time_with(model, scenario, load, &plan, step)
}

/// The time model with its GEMM rate set by the served weights' block-scaled format
/// ([`NumberFormat::gemm_rate`]): FP4 on FP4 tensor cores where the part takes that format
/// (NVIDIA ModelOpt's NVFP4 checkpoints quantize the activations too: vLLM
/// `ModelOptNvFp4LinearMethod` runs `cutlass_scaled_fp4_mm`), else dequantized to BF16 in the
/// GEMM (W4A16, vLLM's Marlin kernels); block-scaled and MX FP8 at the FP8 rate. No FP4 GEMM
/// share is measured, so the FP4 rate takes the BF16 curve (ratio 1). The plain ids (bf16, fp8,
/// int8, int4) and `mxfp4-moe` (BF16 activations; vLLM's gpt-oss MoE dequantizes the experts
/// on parts without FP4 units) keep the scenario's rate, as before.
fn weight_format_peak(mut step: StepModel, scenario: &Scenario) -> StepModel {
    let dtype = scenario.serving.weight_dtype;
    let Some(format) = dtype
        .format()
        .filter(|_| !matches!(dtype, ServeDtype::Bf16 | ServeDtype::Mxfp4Moe))
    else {
        return step;
    };
    let gpu = &scenario.cluster.gpu;
    let (rate, native) = format.gemm_rate(gpu);
    step.peak_flops_per_s = rate;
    let fp8_class = matches!(
        format,
        NumberFormat::Fp8BlockWeight | NumberFormat::Fp8PerTensor | NumberFormat::Mxfp8
    );
    // ml-engineering's MAMF table: FP8 GEMMs reach a smaller share of their peak than BF16's.
    step.peak_gemm_efficiency_ratio = if native && fp8_class {
        gpu.traits().compute.fp8_gemm_relative_to_bf16
    } else {
        1.0
    };
    step
}

/// [`serving_time_for`] with the replica's memory plan (`serving_plan` of `scenario.serving`)
/// and the scenario's time model already built, for callers that price one shape at many loads.
/// The load must have passed [`ServingLoad::validate`].
pub fn serving_time_with(
    model: &ModelSpec,
    scenario: &Scenario,
    load: &ServingLoad,
    plan: &serving::ServingPlan,
    step: StepModel,
) -> Result<ServingTime, ServingError> {
    check_draft_source(model, scenario)?;
    let step = weight_format_peak(step, scenario);
    let timer = ReplicaTimer::new(model, scenario, plan);
    let clients = load;
    let admission = admission::admit(
        scenario,
        clients.concurrency,
        clients.prompt_tokens,
        clients.output_tokens,
        timer.kv_capacity_tokens,
    )?;
    // The engine runs `admission.running` of the clients' requests; the rest wait for a slot.
    let running_load = under_load(clients, admission.running, timer.pp);
    let load = &running_load;
    let ctx = timer.ctx(model, &step, load);
    let shapes = &timer.shapes;
    let (tp, pp, gpus) = (timer.tp, timer.pp, timer.gpus);
    let comm_note = comm_assumption(&ctx.step.comm, tp, ctx.ep, ctx.timer.custom_ar.is_some());
    let pre = prefill_numbers(&ctx, shapes, load);
    let prefill = prefill_terms(&ctx, shapes, &pre, pp, &comm_note);
    let dec = decode_numbers(&ctx, shapes, pp, load, pre.p, 1.0);
    let decode = decode_terms(&ctx, &scenario.serving, &dec, &comm_note);
    let ride_s = riders_s(load, &dec.slowest, dec.m, pre.chunks, pp);
    let spec = scenario.serving.speculation.as_ref().map(|sp| {
        SpecInputs {
            ctx: &ctx,
            timer: &timer,
            sp,
            p: pre.p,
        }
        .numbers(load)
    });
    // Continuous batching: the decode step (or the speculative step per token) and the
    // prefill queue.
    let batch = batch_numbers(
        pre.prefill_s + ride_s,
        pre.prefill_compute_s + pre.prefill_traffic_s,
        spec.as_ref()
            .map_or(f64::from(pp) * dec.slowest.total_s + dec.hops, |x| {
                x.step_per_token_s
            }),
        load,
    )?;
    let step_terms = StepTerms::new(load, &pre, &dec, &batch, spec.as_ref(), ride_s, pp);
    let open_loop = clients.arrival_rate_per_s.is_some();
    // Closed loop: completions at λ free slots for the waiting clients (open loop: the given
    // concurrency is the running batch, and admission adds no wait).
    let slot_wait_s = if open_loop {
        0.0
    } else {
        admission.wait_s(batch.queue.rate)
    };
    let queue = QueueTerms::new(&batch.queue, pre.prefill_s + ride_s, slot_wait_s, open_loop);
    let (throughput_per_replica, throughput_per_gpu) = throughput_terms(load, &batch, gpus);
    let capacity = timer.kv_capacity_tokens;
    let needed = f64::from(clients.concurrency) * (pre.p as f64 + f64::from(load.output_tokens));
    Ok(ServingTime {
        tp,
        pp,
        gpus_per_replica: gpus,
        load: clients.clone(),
        prefill,
        decode,
        interference: step_terms.interference,
        tpot: step_terms.tpot,
        arrival_rate: queue.arrival_rate,
        utilisation: queue.utilisation,
        queue_wait: queue.queue_wait,
        ttft: queue.ttft,
        ttft_p90: queue.ttft_p90,
        ttft_p99: queue.ttft_p99,
        throughput_per_replica,
        throughput_per_gpu,
        fits_kv: needed <= capacity,
        kv_capacity_tokens: kv_capacity_term(clients, load, pre.p, capacity, &admission),
        running_batch: admission.running_term(),
        admission_wait: admission.wait_term(if open_loop { 0.0 } else { batch.queue.rate }),
        prefill_under_load: step_terms.prefill_under_load,
        speculation: match (&spec, &scenario.serving.speculation) {
            (Some(x), Some(sp)) => x.terms(sp),
            _ => Vec::new(),
        },
    })
}

/// MTP speculation drafts with the model's own MTP modules: a model without them cannot use it.
fn check_draft_source(model: &ModelSpec, scenario: &Scenario) -> Result<(), ServingError> {
    match &scenario.serving.speculation {
        Some(sp)
            if sp.method == crate::input::speculation::SpecMethod::Mtp
                && model.mtp_layers == 0 =>
        {
            Err(err(
                "serving.speculation",
                format!("mtp drafts with the model's own MTP modules, and {} has none: use eagle, eagle3 or a draft model", model.name),
            ))
        }
        _ => Ok(()),
    }
}

/// How prefill and decode share the replica's steps: the prefill under the running decodes,
/// the chunks a decode step carries, and the time per output token.
struct StepTerms {
    prefill_under_load: Term,
    interference: Term,
    tpot: Term,
}

/// The prefill queue a request meets and the first token's time, mean and tail.
struct QueueTerms {
    /// Requests/s entering the replica.
    arrival_rate: Term,
    /// Prefill-server utilisation ρ.
    utilisation: Term,
    /// Mean wait before the prefill, s.
    queue_wait: Term,
    /// Mean TTFT, s.
    ttft: Term,
    /// p90 and p99 TTFT, s.
    ttft_p90: Term,
    ttft_p99: Term,
}

/// The prefill queue a request waits in before its first token: one definition for the
/// replica's explained numbers, the deployment search and disaggregated pools.
#[derive(Clone, Copy, Debug)]
pub struct Queue {
    /// Requests per second entering the replica.
    pub rate: f64,
    /// Prefill-server utilisation λ·S (per server).
    pub rho: f64,
    /// Mean wait before the request's prefill starts, s.
    pub wait_s: f64,
    /// Open loop (Poisson arrivals) or closed loop of a fixed number of clients.
    pub open: bool,
    /// Largest wait the queue allows, s (closed loop: the other clients' prefills).
    max_wait_s: f64,
    formula: &'static str,
    assumption: &'static str,
    tail_formula: &'static str,
    tail_assumption: &'static str,
}

impl Queue {
    fn worked(&self, service: f64) -> String {
        if self.open {
            format!(
                "{:.4} × {} / (2 × {:.4}) = {}",
                self.rho,
                secs(service),
                1.0 - self.rho,
                secs(self.wait_s)
            )
        } else {
            format!(
                "ρ = {:.4}, λ = {:.4}/s: W = {}",
                self.rho,
                self.rate,
                secs(self.wait_s)
            )
        }
    }

    /// The q-quantile of the wait, s.
    pub fn quantile(&self, q: f64, service: f64) -> f64 {
        // M/M/1 waiting-time tail (Kleinrock 1975, Vol. I §3.2): P(W > t) = ρ·e^{−(1−ρ)t/S},
        // so the q-quantile is S·ln(ρ/(1 − q))/(1 − ρ) when ρ > 1 − q, else 0.
        let rho = self.rho.min(1.0 - 1e-12);
        let tail = (service * (rho / (1.0 - q)).ln() / (1.0 - rho)).max(0.0);
        if self.open {
            tail
        } else {
            tail.min(self.max_wait_s).max(self.wait_s)
        }
    }
}

/// Poisson arrivals at `rate` into one deterministic prefill server of time `service`;
/// refused (naming `load.arrival_rate_per_s`) when ρ ≥ 1.
pub fn open_loop_queue(rate: f64, service: f64) -> Result<Queue, ServingError> {
    // Utilisation of a single server (Kleinrock 1975, Vol. I §2): ρ = λ · S.
    let rho = rate * service;
    // ρ within rounding of 1 is saturation: λ = 1/S multiplied back by S lands either side of 1.
    if rho.is_nan() || rho >= 1.0 - f64::EPSILON {
        return Err(err(
            "load.arrival_rate_per_s",
            format!(
                "prefill utilisation ρ = λ·S = {rate:.4} × {} = {rho:.3} ≥ 1: the prefill queue grows without bound (at most {:.4} requests/s)",
                secs(service),
                1.0 / service.max(f64::MIN_POSITIVE)
            ),
        ));
    }
    // Pollaczek–Khinchine for M/D/1 (Kleinrock 1975, Vol. I §5.7): W_q = ρ·S / (2(1 − ρ)).
    Ok(Queue {
        rate,
        rho,
        wait_s: rho * service / (2.0 * (1.0 - rho)),
        open: true,
        max_wait_s: f64::INFINITY,
        formula: "ρ·S / (2(1 − ρ))",
        assumption: "M/D/1 (Pollaczek–Khinchine, Kleinrock 1975): Poisson arrivals, deterministic prefill",
        tail_formula: "S·ln(ρ/(1 − q))/(1 − ρ) + S",
        tail_assumption: "exponential tail of the M/M/1 waiting time (Kleinrock 1975): conservative next to M/D/1",
    })
}

/// `clients` requests in a closed loop: each spends `service` in one of `servers` prefill
/// servers and `decode_s` after it (decoding, a KV transfer: delay stations that serve every
/// request at once), then returns. Solved by [`closed_loop::solve`] (approximate MVA).
pub fn closed_loop_queue(clients: f64, service: f64, decode_s: f64, servers: f64) -> Queue {
    let sol = closed_loop::solve(clients, service, decode_s, servers);
    Queue {
        rate: sol.rate_per_s,
        rho: sol.rho,
        wait_s: sol.wait_s,
        open: false,
        // A request can wait for at most the other N − 1 clients' prefills on the m servers.
        max_wait_s: (clients - 1.0).max(0.0) * service / servers.max(1.0),
        formula: "R − S/m, R the positive root of R² + (Z − N·S/m)·R − (S/m)·Z = 0",
        assumption: "closed loop of N clients, approximate MVA (Schweitzer 1979; Lazowska et al. 1984 §6.4.2): random arrival phases queue at the prefill server before it saturates; m servers as one of S/m plus a delay (Seidmann et al. 1987)",
        tail_formula: "min(S·ln(ρ/(1 − q))/(1 − ρ), (N − 1)·S/m) + S",
        tail_assumption: "exponential tail of the M/M/1 wait at the closed loop's ρ (Kleinrock 1975), capped by the other N − 1 clients' prefills, never below the mean",
    }
}
