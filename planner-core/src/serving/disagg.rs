//! Disaggregated serving: a prefill pool and a decode pool on separate GPUs, the KV cache of
//! each prompt sent from one to the other over the network, beside aggregated serving.
//!
//! The structure is DistServe's (Zhong et al., OSDI 2024, §3–§4) and Splitwise's (Patel et al.,
//! ISCA 2024, §4): prefill instances run prompts only, decode instances run the continuous
//! batch only, each pool with its own TP × PP and replica count. A pool replica is priced by
//! [`serving_time`](crate::serving::latency) (prefill time of one request; the decode step at the
//! batch without the prefill chunks aggregated serving mixes in), and this module adds what
//! disaggregation brings: the KV transfer, the prefill pool's queue, and the GPU split.

use serde::{Deserialize, Serialize};

use crate::base::explain::{Term, Unit};
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::memory::kv_cache;
use crate::memory::serving::{self, ServingError};
use crate::serving::latency::{
    closed_loop_queue, open_loop_queue, term, Bound, ReplicaTimer, ServingLoad,
};
use crate::time::collectives::{Collective, LinkDomain};
use crate::time::cost::{CostOptions, StepModel};

/// Largest replica count of one pool accepted.
pub const MAX_POOL_REPLICAS: u32 = 65_536;

/// The arrival rate replica numbers are probed at: prefill time, decode step and KV capacity
/// do not depend on it, and it keeps the probe's own queue far from saturation (the queue is
/// computed here, per pool).
const PROBE_RATE_PER_S: f64 = 1e-9;

/// One pool: replicas of one shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolShape {
    /// Tensor-parallel degree of a replica.
    pub tp: u32,
    /// Pipeline stages of a replica.
    pub pp: u32,
    /// Replicas in the pool.
    pub replicas: u32,
}

impl PoolShape {
    /// GPUs of one replica.
    pub fn gpus_per_replica(&self) -> u64 {
        u64::from(self.tp) * u64::from(self.pp)
    }

    /// GPUs of the pool.
    pub fn gpus(&self) -> u64 {
        self.gpus_per_replica() * u64::from(self.replicas)
    }
}

/// A disaggregated deployment: the two pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DisaggDeployment {
    /// Prefill instances (KV producers).
    pub prefill: PoolShape,
    /// Decode instances (KV consumers); the load's concurrency is per decode replica.
    pub decode: PoolShape,
}

impl DisaggDeployment {
    /// GPUs of both pools.
    pub fn gpus(&self) -> u64 {
        self.prefill.gpus() + self.decode.gpus()
    }

    /// Range checks against the model and cluster; errors name the field
    /// (`deployment.prefill.tp`, ...).
    pub fn validate(&self, model: &ModelSpec, scenario: &Scenario) -> Result<(), ServingError> {
        let fields = [
            (
                &self.prefill,
                [
                    "deployment.prefill.tp",
                    "deployment.prefill.pp",
                    "deployment.prefill.replicas",
                ],
            ),
            (
                &self.decode,
                [
                    "deployment.decode.tp",
                    "deployment.decode.pp",
                    "deployment.decode.replicas",
                ],
            ),
        ];
        for (pool, [tp_field, pp_field, replicas_field]) in fields {
            if pool.tp == 0 || !serving::tp_valid_for_model(model, pool.tp) {
                return Err(err(
                    tp_field,
                    format!(
                        "TP {} does not split the model's {} query / {} KV heads",
                        pool.tp, model.heads, model.kv_heads
                    ),
                ));
            }
            if pool.pp == 0 || pool.pp > model.layers {
                return Err(err(
                    pp_field,
                    format!("must be in 1..={}, got {}", model.layers, pool.pp),
                ));
            }
            if pool.replicas == 0 || pool.replicas > MAX_POOL_REPLICAS {
                return Err(err(
                    replicas_field,
                    format!("must be in 1..={MAX_POOL_REPLICAS}, got {}", pool.replicas),
                ));
            }
        }
        let world = scenario.cluster.world_size();
        if self.gpus() > world {
            return Err(err(
                "deployment",
                format!(
                    "the pools use {} + {} = {} GPUs; the cluster has {world}",
                    self.prefill.gpus(),
                    self.decode.gpus(),
                    self.gpus()
                ),
            ));
        }
        Ok(())
    }
}

fn err(field: &'static str, reason: impl Into<String>) -> ServingError {
    ServingError {
        field,
        reason: reason.into(),
    }
}

/// What one replica shape contributes, without explanation text (cheap to keep per candidate).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaNumbers {
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Requests decoding at once.
    pub concurrency: u32,
    /// Isolated prefill of one request, s.
    pub prefill_s: f64,
    /// Bound of the prefill's largest chunk.
    pub prefill_bound: Bound,
    /// Aggregated TPOT (decode step plus the prefill chunks mixed in), s.
    pub tpot_s: f64,
    /// Decode-only TPOT (pp · step + hops), s: a decode instance that runs no prefill.
    pub decode_tpot_s: f64,
    /// Bound of the decode step.
    pub decode_bound: Bound,
    /// KV tokens the replica holds.
    pub kv_capacity_tokens: f64,
}

/// One replica shape ready to be priced at many loads: the scenario with the shape set, its
/// memory plan and the time model, built once.
#[derive(Clone, Debug)]
pub struct ShapeModel {
    step: StepModel,
    timer: ReplicaTimer,
}

impl ShapeModel {
    /// `scenario` with its serving replica set to `tp × pp`.
    pub fn new(
        model: &ModelSpec,
        scenario: &Scenario,
        tp: u32,
        pp: u32,
    ) -> Result<ShapeModel, ServingError> {
        if pp as usize > serving::MAX_LISTED_STAGES {
            return Err(err(
                "serving.pp",
                format!(
                    "the serving time model evaluates at most {} stages",
                    serving::MAX_LISTED_STAGES
                ),
            ));
        }
        let scenario = with_shape(scenario, tp, pp);
        let plan = serving::serving_plan(model, &scenario.serving, &scenario.cluster)?;
        let step = StepModel::for_scenario(model, &scenario, CostOptions::default());
        let timer = ReplicaTimer::new(model, &scenario, &plan);
        Ok(ShapeModel { step, timer })
    }

    /// Prices the replica under `load` (validated by the caller; its arrival rate ignored:
    /// the caller queues).
    pub fn numbers(
        &self,
        model: &ModelSpec,
        load: &ServingLoad,
    ) -> Result<ReplicaNumbers, ServingError> {
        let probe = ServingLoad {
            arrival_rate_per_s: Some(PROBE_RATE_PER_S),
            graph_padded_batch: None,
            decode_attention: None,
            prefill_first: false,
            ..load.clone()
        };
        // The numbers serving_time_with computes, by the same functions, without its terms.
        let t = self.timer.numbers(model, &self.step, &probe)?;
        Ok(ReplicaNumbers {
            tp: self.timer.tp(),
            pp: self.timer.pp(),
            concurrency: load.concurrency,
            prefill_s: t.prefill_s,
            prefill_bound: t.prefill_bound,
            tpot_s: t.tpot_s,
            decode_tpot_s: (t.tpot_s - t.interference_s).max(0.0),
            decode_bound: t.decode_bound,
            kv_capacity_tokens: t.kv_capacity_tokens,
        })
    }
}

/// Prices one replica of `scenario.serving.tp × scenario.serving.pp` under `load` (its
/// arrival rate ignored: the caller queues).
pub fn replica_numbers(
    model: &ModelSpec,
    scenario: &Scenario,
    load: &ServingLoad,
) -> Result<ReplicaNumbers, ServingError> {
    load.validate(scenario.serving.context_len)?;
    ShapeModel::new(model, scenario, scenario.serving.tp, scenario.serving.pp)?.numbers(model, load)
}

/// The KV of one prompt moved from a prefill replica to a decode replica.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvTransfer {
    /// Bytes of the whole prompt's KV (all layers, all heads).
    pub request_bytes: f64,
    /// Bytes the busiest prefill GPU sends.
    pub send_bytes_per_gpu: f64,
    /// Bytes the busiest decode GPU receives.
    pub recv_bytes_per_gpu: f64,
    /// Network latency α, s.
    pub latency_s: f64,
    /// Network bandwidth per GPU per direction, bytes/s.
    pub bytes_per_s: f64,
    /// `α + max(send, recv) / bandwidth`, s.
    pub time_s: f64,
}

/// KV transfer of `prompt_tokens` from a `prefill_tp × prefill_pp` replica to a
/// `decode_tp × decode_pp` replica over the inter-node link of `step`'s communication model.
pub fn kv_transfer(
    model: &ModelSpec,
    scenario: &Scenario,
    step: &StepModel,
    prefill: (u32, u32),
    decode: (u32, u32),
    prompt_tokens: u32,
) -> KvTransfer {
    let dtype = scenario.serving.kv_dtype;
    let p = f64::from(prompt_tokens);
    let max_layers = |pp: u32| {
        serving::stage_layers(model.layers, pp.max(1))
            .into_iter()
            .max()
    };
    let per_gpu = |(tp, pp): (u32, u32)| {
        kv_cache::kv_bytes_per_token_per_gpu_value(
            model,
            dtype,
            tp,
            max_layers(pp).unwrap_or(model.layers),
        ) * p
    };
    let request_bytes =
        kv_cache::kv_bytes_per_token_per_gpu_value(model, dtype, 1, model.layers) * p;
    let send = per_gpu(prefill);
    let recv = per_gpu(decode);
    let link = step.comm.link(Collective::SendRecv, LinkDomain::InterNode);
    // DistServe §4.4 / Splitwise §4.3: each prefill GPU sends the KV of its own layers and heads to
    // the decode GPU that holds them, all GPUs at once, each over its own NIC; the slower end paces
    // it. α–β point to point (Hockney 1994): t = α + bytes / β.
    let time_s = link.time_s(Collective::SendRecv, send.max(recv), 2);
    KvTransfer {
        request_bytes,
        send_bytes_per_gpu: send,
        recv_bytes_per_gpu: recv,
        latency_s: link.latency_s,
        bytes_per_s: link.busbw_bytes_per_s,
        time_s,
    }
}

/// The disaggregated numbers, without explanation text.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DisaggNumbers {
    /// Requests/s entering the deployment.
    pub arrival_rate_per_s: f64,
    /// Utilisation of one prefill replica.
    pub prefill_utilisation: f64,
    /// Mean prefill queueing wait, s.
    pub queue_wait_s: f64,
    /// Mean TTFT, s.
    pub ttft_s: f64,
    /// p90 TTFT, s.
    pub ttft_p90_s: f64,
    /// p99 TTFT, s.
    pub ttft_p99_s: f64,
    /// TPOT of the decode pool, s.
    pub tpot_s: f64,
    /// Output tokens/s of the whole deployment.
    pub throughput_per_s: f64,
    /// Output tokens/s per GPU of both pools.
    pub throughput_per_gpu: f64,
}

/// Combines a prefill replica, a decode replica and the KV transfer into the deployment's
/// numbers; `None` when the prefill pool cannot keep up (ρ ≥ 1). `rate_per_decode_replica`
/// is the open-loop rate, or `None` for what the decode batch sustains.
pub fn combine(
    prefill: &ReplicaNumbers,
    decode: &ReplicaNumbers,
    transfer_s: f64,
    d: &DisaggDeployment,
    output_tokens: u32,
    rate_per_decode_replica: Option<f64>,
) -> Option<DisaggNumbers> {
    let c = f64::from(decode.concurrency);
    let o = f64::from(output_tokens.max(1));
    let dr = f64::from(d.decode.replicas);
    let tpot = decode.decode_tpot_s;
    let s = prefill.prefill_s;
    let servers = f64::from(d.prefill.replicas.max(1));
    let queue = match rate_per_decode_replica {
        // Open loop: requests spread evenly over the P prefill replicas, one server each
        // (Kleinrock 1975 §2), so each sees λ/P.
        Some(r) => {
            let rate = dr * r;
            let mut q = open_loop_queue(rate / servers, s).ok()?;
            q.rate = rate;
            q
        }
        // Closed loop of D·c clients: prefill on P servers, then the KV transfer and the decode
        // pool's O − 1 steps (serving_time's closed loop, approximate MVA with P servers).
        None => closed_loop_queue(dr * c, s, transfer_s + (o - 1.0) * tpot, servers),
    };
    let (rate, rho, wait) = (queue.rate, queue.rho, queue.wait_s);
    if !(rate.is_finite() && wait.is_finite()) {
        return None;
    }
    // DistServe §3: TTFT = prefill queueing + prefill + KV transfer (the decode instance's first
    // step follows; vLLM's disaggregated proxy returns the prefill's token after the transfer).
    let base = s + transfer_s;
    // Output tokens per second: open loop, every decoding request emits one token per step;
    // closed loop, requests complete at λ with O tokens each (Little 1961).
    let throughput = if rate_per_decode_replica.is_some() {
        dr * c / tpot.max(f64::MIN_POSITIVE)
    } else {
        rate * o
    };
    Some(DisaggNumbers {
        arrival_rate_per_s: rate,
        prefill_utilisation: rho,
        queue_wait_s: wait,
        ttft_s: wait + base,
        ttft_p90_s: queue.quantile(0.90, s) + base,
        ttft_p99_s: queue.quantile(0.99, s) + base,
        tpot_s: tpot,
        throughput_per_s: throughput,
        throughput_per_gpu: throughput / (d.gpus().max(1) as f64),
    })
}

/// Serving time of a disaggregated deployment, every number explained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DisaggTime {
    /// The pools.
    pub deployment: DisaggDeployment,
    /// The load (concurrency per decode replica).
    pub load: ServingLoad,
    /// A prefill replica's numbers.
    pub prefill_replica: ReplicaNumbers,
    /// A decode replica's numbers.
    pub decode_replica: ReplicaNumbers,
    /// The KV transfer of one request.
    pub transfer: KvTransfer,
    /// Prefill of one request on a prefill replica, s.
    pub prefill_time: Term,
    /// KV of one prompt, whole model, B.
    pub kv_transfer_bytes: Term,
    /// KV transfer time, s.
    pub kv_transfer_time: Term,
    /// Arrival rate, requests/s.
    pub arrival_rate: Term,
    /// Prefill-replica utilisation ρ.
    pub prefill_utilisation: Term,
    /// Mean prefill queueing wait, s.
    pub queue_wait: Term,
    /// Mean TTFT, s.
    pub ttft: Term,
    /// p90 TTFT, s.
    pub ttft_p90: Term,
    /// p99 TTFT, s.
    pub ttft_p99: Term,
    /// TPOT of the decode pool, s.
    pub tpot: Term,
    /// Output tokens/s of the deployment.
    pub throughput: Term,
    /// Output tokens/s per GPU.
    pub throughput_per_gpu: Term,
    /// KV capacity of a decode replica vs what the load needs, tokens.
    pub kv_capacity_tokens: Term,
    /// Whether the decode replica's KV pool holds `c × (prompt + output)` tokens.
    pub fits_kv: bool,
}

impl DisaggTime {
    /// Every term, in display order.
    pub fn terms(&self) -> Vec<&Term> {
        vec![
            &self.prefill_time,
            &self.kv_transfer_bytes,
            &self.kv_transfer_time,
            &self.arrival_rate,
            &self.prefill_utilisation,
            &self.queue_wait,
            &self.ttft,
            &self.ttft_p90,
            &self.ttft_p99,
            &self.tpot,
            &self.throughput,
            &self.throughput_per_gpu,
            &self.kv_capacity_tokens,
        ]
    }
}

fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

/// `scenario` with its serving replica shape set to `tp × pp`.
pub fn with_shape(scenario: &Scenario, tp: u32, pp: u32) -> Scenario {
    let mut s = scenario.clone();
    s.serving.tp = tp;
    s.serving.pp = pp;
    s
}

/// Serving time of the disaggregated deployment `d` under `load` (concurrency and arrival
/// rate per decode replica).
pub fn disagg_time(
    model: &ModelSpec,
    scenario: &Scenario,
    d: &DisaggDeployment,
    load: &ServingLoad,
) -> Result<DisaggTime, ServingError> {
    d.validate(model, scenario)?;
    load.validate(scenario.serving.context_len)?;
    let pre_load = ServingLoad {
        concurrency: 1,
        ..load.clone()
    };
    let pre = replica_numbers(
        model,
        &with_shape(scenario, d.prefill.tp, d.prefill.pp),
        &pre_load,
    )?;
    let dec = replica_numbers(model, &with_shape(scenario, d.decode.tp, d.decode.pp), load)?;
    let step = StepModel::for_scenario(model, scenario, CostOptions::default());
    let x = kv_transfer(
        model,
        scenario,
        &step,
        (d.prefill.tp, d.prefill.pp),
        (d.decode.tp, d.decode.pp),
        load.prompt_tokens,
    );
    let n = combine_or_refuse(&pre, &dec, &x, d, load)?;
    let c = load.concurrency;
    let needed = f64::from(c) * (f64::from(load.prompt_tokens) + f64::from(load.output_tokens));
    let queue = DisaggQueueTerms::new(&n, &pre, &x, load, d.prefill.replicas);
    let (throughput, throughput_per_gpu) = disagg_throughput_terms(&n, d, c);
    Ok(DisaggTime {
        deployment: *d,
        load: load.clone(),
        prefill_time: term(
            "disagg.prefill",
            "Prefill per request on a prefill replica (s)",
            Unit::Seconds,
            pre.prefill_s,
            "Σ_chunks Σ_stages [max(weights/HBM, GEMM FLOPs/rate) + max(KV/HBM, attention FLOPs/rate) + TP comm] + PP hops",
            format!("TP {} × PP {}: {}", d.prefill.tp, d.prefill.pp, ms(pre.prefill_s)),
            "serving_time's prefill of one request on the prefill pool's replica shape",
        ),
        kv_transfer_bytes: kv_transfer_bytes_term(&x, load.prompt_tokens),
        kv_transfer_time: term(
            "disagg.kv_transfer",
            "KV transfer (s)",
            Unit::Seconds,
            x.time_s,
            "α + max(send, recv per GPU) / network bandwidth",
            format!(
                "{:.1} µs + {:.4e} B / {:.4e} B/s = {}",
                x.latency_s * 1e6,
                x.send_bytes_per_gpu.max(x.recv_bytes_per_gpu),
                x.bytes_per_s,
                ms(x.time_s)
            ),
            "every GPU pair at once over the inter-node link, after the prefill (no layer-by-layer overlap, which Splitwise §4.3 adds)",
        ),
        arrival_rate: queue.arrival_rate,
        prefill_utilisation: queue.prefill_utilisation,
        queue_wait: queue.queue_wait,
        ttft: queue.ttft,
        ttft_p90: queue.ttft_p90,
        ttft_p99: queue.ttft_p99,
        tpot: term(
            "disagg.tpot",
            "TPOT (s)",
            Unit::Seconds,
            n.tpot_s,
            "pp · decode step(⌈c/pp⌉) + PP hops",
            format!(
                "TP {} × PP {} at c = {c}: {}",
                d.decode.tp,
                d.decode.pp,
                ms(n.tpot_s)
            ),
            "a decode instance runs no prefill chunks, so no interference (DistServe §2.2)",
        ),
        throughput,
        throughput_per_gpu,
        kv_capacity_tokens: term(
            "disagg.kv_capacity_tokens",
            "KV capacity per decode replica (tokens)",
            Unit::Count,
            dec.kv_capacity_tokens,
            "⌊KV pool / KV per token⌋ on the worst stage",
            format!(
                "{:.0} tokens; the load needs {c} × ({} + {}) = {needed:.0}",
                dec.kv_capacity_tokens, load.prompt_tokens, load.output_tokens
            ),
            "serving memory plan (vLLM-style pool) of the decode replica shape",
        ),
        fits_kv: needed <= dec.kv_capacity_tokens,
        prefill_replica: pre,
        decode_replica: dec,
        transfer: x,
    })
}

/// [`combine`] of the deployment's pools under `load`, or the error naming the field to change
/// when the prefill pool cannot keep up (ρ ≥ 1).
fn combine_or_refuse(
    pre: &ReplicaNumbers,
    dec: &ReplicaNumbers,
    x: &KvTransfer,
    d: &DisaggDeployment,
    load: &ServingLoad,
) -> Result<DisaggNumbers, ServingError> {
    combine(
        pre,
        dec,
        x.time_s,
        d,
        load.output_tokens,
        load.arrival_rate_per_s,
    )
    .ok_or_else(|| {
        let field = if load.arrival_rate_per_s.is_some() {
            "load.arrival_rate_per_s"
        } else {
            "deployment.prefill.replicas"
        };
        err(
            field,
            format!(
                "{} prefill replica(s) at {} per prompt cannot keep up with what {} decode replica(s) of {} requests finish: ρ ≥ 1",
                d.prefill.replicas,
                ms(pre.prefill_s),
                d.decode.replicas,
                load.concurrency
            ),
        )
    })
}

/// The KV one prompt moves from the prefill pool to the decode pool, explained.
fn kv_transfer_bytes_term(x: &KvTransfer, prompt_tokens: u32) -> Term {
    term(
        "disagg.kv_bytes",
        "KV of one prompt (B)",
        Unit::Bytes,
        x.request_bytes,
        "prompt × KV per token (whole model)",
        format!(
            "{prompt_tokens} tokens → {:.4e} B; busiest prefill GPU sends {:.4e} B, busiest decode GPU receives {:.4e} B",
            x.request_bytes, x.send_bytes_per_gpu, x.recv_bytes_per_gpu
        ),
        "the whole prompt's KV moves, prefix-cache hits included (DistServe §4.4 moves it whole)",
    )
}

/// The deployment's output tokens/s, whole and per GPU, explained.
fn disagg_throughput_terms(n: &DisaggNumbers, d: &DisaggDeployment, c: u32) -> (Term, Term) {
    let (pr, dr) = (d.prefill.replicas, d.decode.replicas);
    let throughput = term(
        "disagg.throughput",
        "Output tokens/s of the deployment",
        Unit::TokensPerSecond,
        n.throughput_per_s,
        "D · c / TPOT",
        format!("{dr} × {c} / {} = {:.1}", ms(n.tpot_s), n.throughput_per_s),
        "every running request emits one token per decode step",
    );
    let per_gpu = term(
        "disagg.throughput_gpu",
        "Output tokens/s per GPU",
        Unit::TokensPerSecond,
        n.throughput_per_gpu,
        "D · c / TPOT / (P·g_prefill + D·g_decode)",
        format!(
            "{:.1} / ({pr} × {} + {dr} × {}) = {:.1}",
            n.throughput_per_s,
            d.prefill.gpus_per_replica(),
            d.decode.gpus_per_replica(),
            n.throughput_per_gpu
        ),
        "prefill GPUs counted: they produce no output tokens but every request needs them",
    );
    (throughput, per_gpu)
}

/// The prefill pool's queue and the first token's time, mean and tail, explained.
struct DisaggQueueTerms {
    arrival_rate: Term,
    prefill_utilisation: Term,
    queue_wait: Term,
    ttft: Term,
    ttft_p90: Term,
    ttft_p99: Term,
}

impl DisaggQueueTerms {
    /// `pr`: prefill replicas.
    fn new(
        n: &DisaggNumbers,
        pre: &ReplicaNumbers,
        x: &KvTransfer,
        load: &ServingLoad,
        pr: u32,
    ) -> Self {
        let open_loop = load.arrival_rate_per_s.is_some();
        let base = pre.prefill_s + x.time_s;
        // The tail of the wait at the q-quantile (an open loop's exponential tail; a closed
        // deterministic cycle's tail is its mean).
        let tail = |key: &str, label: &str, value: f64, quantile: &str| {
            term(
                key,
                label,
                Unit::Seconds,
                value,
                &if open_loop {
                    format!("S·ln(ρ/{quantile})/(1 − ρ) + S + KV transfer")
                } else {
                    "W + S + KV transfer (a deterministic closed cycle: the tail equals the mean)"
                        .to_string()
                },
                format!("{} + {} = {}", ms(value - base), ms(base), ms(value)),
                "exponential tail of the M/M/1 waiting time (Kleinrock 1975): conservative next to M/D/1",
            )
        };
        DisaggQueueTerms {
            arrival_rate: term(
                "disagg.arrival_rate",
                "Arrival rate (requests/s)",
                Unit::RequestsPerSecond,
                n.arrival_rate_per_s,
                if open_loop {
                    "D × given rate per decode replica"
                } else {
                    "λ = D·c / (R + KV transfer + (O − 1)·TPOT), R the prefill residence on P servers (approximate MVA)"
                },
                format!("{:.4} requests/s", n.arrival_rate_per_s),
                if open_loop {
                    "an open loop: requests arrive at the given rate"
                } else {
                    "a closed loop of D·c clients, approximate MVA (Schweitzer 1979; Lazowska et al. 1984 §6.4.2), P servers as in Seidmann et al. 1987; tends to the bound P / S (§5.2)"
                },
            ),
            prefill_utilisation: term(
                "disagg.prefill_utilisation",
                "Prefill-replica utilisation ρ (fraction)",
                Unit::Fraction,
                n.prefill_utilisation,
                "ρ = λ · S_prefill / P",
                format!(
                    "{:.4} × {} / {pr} = {:.4}",
                    n.arrival_rate_per_s,
                    ms(pre.prefill_s),
                    n.prefill_utilisation
                ),
                "requests spread evenly over the prefill replicas, one request at a time each",
            ),
            queue_wait: term(
                "disagg.queue_wait",
                "Mean prefill queueing wait (s)",
                Unit::Seconds,
                n.queue_wait_s,
                if open_loop {
                    "ρ·S / (2(1 − ρ))"
                } else {
                    "D·c / λ − (S + KV transfer + (O − 1)·TPOT)"
                },
                ms(n.queue_wait_s),
                if open_loop {
                    "M/D/1 (Pollaczek–Khinchine, Kleinrock 1975) per prefill replica"
                } else {
                    "closed loop: requests wait only once the prefill pool is saturated (Little 1961)"
                },
            ),
            ttft: term(
                "disagg.ttft",
                "TTFT mean (s)",
                Unit::Seconds,
                n.ttft_s,
                "W_q + S_prefill + KV transfer",
                format!(
                    "{} + {} + {} = {}",
                    ms(n.queue_wait_s),
                    ms(pre.prefill_s),
                    ms(x.time_s),
                    ms(n.ttft_s)
                ),
                "DistServe §3: the first token waits for the prefill and the KV's arrival at the decode instance",
            ),
            ttft_p90: tail("disagg.ttft_p90", "TTFT p90 (s)", n.ttft_p90_s, "0.1"),
            ttft_p99: tail("disagg.ttft_p99", "TTFT p99 (s)", n.ttft_p99_s, "0.01"),
        }
    }
}
