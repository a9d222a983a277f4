//! The explanations of a [`ServingTime`](super::ServingTime): each number of the prefill, the
//! decode step, the batching and the prefill queue as a [`Term`], with its formula, the
//! formula with the scenario's numbers in it, and the source it rests on.

use crate::base::explain::{Term, Unit};
use crate::input::model::ModelSpec;
use crate::input::scenario::Serving;
use crate::input::speculation::Speculation;
use crate::serving::admission;
use crate::serving::custom_all_reduce;
use crate::serving::decode_attention;
use crate::serving::kernel_gaps;
use crate::serving::layer_traffic;
use crate::serving::weight_stream;
use crate::time::collectives::{Collective, CommModel, LinkDomain};

use super::{
    bound_of, decodes_beside_a_chunk, secs, term, BatchNumbers, Ctx, DecodeNumbers, DecodeStep,
    Prefill, PrefillNumbers, Queue, QueueTerms, ServingLoad, SpecNumbers, StageShape, StepNumbers,
    StepTerms,
};

/// The explained prefill of one request.
pub(super) fn prefill_terms(
    ctx: &Ctx<'_>,
    shapes: &[StageShape],
    pre: &PrefillNumbers,
    pp: u32,
    comm_note: &str,
) -> Prefill {
    let model = ctx.model;
    let (p, cached, new_tokens, chunks) = (pre.p, pre.cached, pre.new_tokens, pre.chunks);
    // Whole-replica FLOPs (for the closed-form check).
    let gemm_total = ctx.timer.dense_per_token * new_tokens as f64;
    // Causal self-attention (Kaplan et al. 2020 Table 1; Korthikanti et al. 2022 §4 halve it for
    // the causal mask): token i attends to i keys, so new tokens cached..p cover (p² − cached²)/2
    // pairs on a full layer (prefill_pairs_per_layer averages in the windowed layers).
    let pairs_total =
        crate::input::attention_window::prefill_pairs_per_layer(model, p as f64, cached as f64);
    let attn_total = ctx.timer.attn_coeff * pairs_total;
    let peak_tf = ctx.step.peak_flops_per_s / 1e12;
    Prefill {
        new_tokens,
        chunks,
        gemm_flops: term(
            "serve.prefill.gemm_flops",
            "Prefill GEMM FLOPs per request (FLOP)",
            Unit::Flops,
            gemm_total,
            "2·N_active·(prompt − cached)",
            format!("{:.4e} × {new_tokens} = {gemm_total:.4e} FLOP", ctx.timer.dense_per_token),
            "Kaplan et al. 2020 Table 1: forward = 2 FLOPs per active matmul parameter per token (input embedding lookup excluded)",
        ),
        attention_flops: term(
            "serve.prefill.attention_flops",
            "Prefill attention FLOPs per request (FLOP)",
            Unit::Flops,
            attn_total,
            "2·L·a·(d_qk + d_v) · (p² − cached²)/2",
            format!(
                "{:.4e} × ({p}² − {cached}²)/2 = {attn_total:.4e} FLOP",
                ctx.timer.attn_coeff
            ),
            "causal QKᵀ and P·V (Kaplan et al. 2020; Korthikanti et al. 2022): each new token attends to the tokens before it, cached ones included",
        ),
        compute_time: term(
            "serve.prefill.compute",
            "Prefill compute per request (s)",
            Unit::Seconds,
            pre.prefill_compute_s,
            "Σ_chunks,stages GEMM FLOPs/(peak·r_fp8·eff_gemm(min(chunk, h/tp))) + attention FLOPs/(peak of the KV dtype·eff_attn)",
            format!(
                "{chunks} chunk(s) at {peak_tf:.0} TFLOP/s peak, GEMM eff {:.3} × FP8 share {:.3} = {}",
                pre.worst_chunk.gemm_eff,
                ctx.step.peak_gemm_efficiency_ratio,
                secs(pre.prefill_compute_s)
            ),
            "the training model's GEMM efficiency curve and peak (StepModel); what a chunk adds to a decode step it joins",
        ),
        traffic_time: prefill_traffic_term(ctx, shapes, pre),
        time: prefill_time_term(pre, pp, comm_note),
        bound: bound_of(&pre.worst_chunk),
    }
}

/// The prompt's activation traffic through the memory-bound kernels, explained.
fn prefill_traffic_term(ctx: &Ctx<'_>, shapes: &[StageShape], pre: &PrefillNumbers) -> Term {
    let (dense, moe) = ctx.timer.traffic_bytes_per_token_per_layer;
    let per_token: f64 = shapes
        .iter()
        .map(|st| (st.layers - st.moe_layers).max(0.0) * dense + st.moe_layers * moe)
        .sum();
    term(
        "serve.prefill.traffic",
        "Prefill activation traffic per request (s)",
        Unit::Seconds,
        pre.prefill_traffic_s,
        "Σ_stages (prompt − cached) · layer bytes per token · layers / (HBM bandwidth · achievable fraction)",
        format!(
            "{} tokens × {per_token:.4e} B over the layers / {:.4e} B/s = {}",
            pre.new_tokens,
            ctx.step.hbm_streaming_bytes_per_s(),
            secs(pre.prefill_traffic_s)
        ),
        layer_traffic::SOURCE,
    )
}

/// The isolated prefill time of one request, explained.
fn prefill_time_term(pre: &PrefillNumbers, pp: u32, comm_note: &str) -> Term {
    let windowed = pre.windowed_layers;
    term(
        "serve.prefill.time",
        "Prefill time per request (s)",
        Unit::Seconds,
        pre.prefill_s,
        "Σ_chunks Σ_stages [max(weights/HBM, GEMM FLOPs/rate) + max(KV/HBM, attention FLOPs/rate) + activation traffic/HBM + TP comm + kernel launches] + PP hops",
        format!(
            "⌈{} / {}⌉ = {} chunk(s) × {pp} stage(s) = {}",
            pre.new_tokens,
            pre.chunk,
            pre.chunks,
            secs(pre.prefill_s)
        ),
        &format!(
            "chunked prefill (Agrawal et al. 2024, Sarathi-Serve): every chunk reads the stage's weights and the KV before it; chunks pass the stages one after another{}; {comm_note}",
            if windowed > 0 {
                format!("; {windowed} windowed layer(s) on a stage attend to and read at most the last window of tokens (Mistral 7B §2)")
            } else {
                String::new()
            }
        ),
    )
}

/// The explained decode step at the load's concurrency, on the slowest stage.
pub(super) fn decode_terms(
    ctx: &Ctx<'_>,
    serving: &Serving,
    dec: &DecodeNumbers,
    comm_note: &str,
) -> DecodeStep {
    let slowest = &dec.slowest;
    let bw = ctx.step.hbm_streaming_bytes_per_s();
    let peak_tf = ctx.step.peak_flops_per_s / 1e12;
    DecodeStep {
        micro_batch: dec.m,
        weight_bytes: term(
            "serve.decode.weight_bytes",
            "Weights read per GPU per step (B)",
            Unit::Bytes,
            slowest.weight_bytes,
            "resident weights − routed experts × (1 − distinct/E)",
            format!("{:.4e} B", slowest.weight_bytes),
            &format!(
                "{} weights of the slowest stage, read once per step",
                serving.weight_dtype.id()
            ),
        ),
        kv_bytes: decode_kv_bytes_term(serving, dec),
        flops: term(
            "serve.decode.flops",
            "FLOPs per GPU per step (FLOP)",
            Unit::Flops,
            slowest.gemm_flops + slowest.attn_flops,
            "b · (2·N_active + 2·L·a·(d_qk + d_v)·ctx) · stage share / tp",
            format!(
                "{:.4e} GEMM + {:.4e} attention",
                slowest.gemm_flops, slowest.attn_flops
            ),
            "Kaplan et al. 2020 Table 1 forward FLOPs per token",
        ),
        memory_time: decode_memory_term(ctx, slowest),
        compute_time: term(
            "serve.decode.compute",
            "Decode compute time (s)",
            Unit::Seconds,
            slowest.compute_s,
            "GEMM FLOPs/(peak·r_fp8·eff_gemm(h/tp)) + attention FLOPs/(peak of the KV dtype·eff_attn)",
            format!(
                "{peak_tf:.0} TFLOP/s × GEMM eff {:.4} × FP8 share {:.3} = {}",
                slowest.gemm_eff,
                ctx.step.peak_gemm_efficiency_ratio,
                secs(slowest.compute_s)
            ),
            "the training model's GEMM efficiency curve at h/tp: its fall-off at few tokens is the memory roof, priced by the bytes term",
        ),
        comm_time: term(
            "serve.decode.comm",
            "Decode communication per stage (s)",
            Unit::Seconds,
            slowest.comm_s,
            "layers × 2 all-reduces (b·h·bytes) [EP: attention all-reduce + 2 all-to-all per MoE layer]",
            secs(slowest.comm_s),
            comm_note,
        ),
        kernel_gaps: decode_kernel_gaps_term(ctx, slowest),
        traffic_time: term(
            "serve.decode.traffic",
            "Decode activation traffic per stage (s)",
            Unit::Seconds,
            slowest.traffic_s,
            "tokens · layer bytes per token · layers / (HBM bandwidth · achievable fraction)",
            format!(
                "{:.4e} B / {bw:.4e} B/s = {}",
                slowest.traffic_bytes,
                secs(slowest.traffic_s)
            ),
            layer_traffic::SOURCE,
        ),
        time: decode_step_term(slowest),
        bound: bound_of(slowest),
        distinct_experts: distinct_experts_term(ctx.model, slowest, dec.m),
    }
}

/// Expected distinct routed experts per MoE layer of the decode step, explained (MoE only).
fn distinct_experts_term(model: &ModelSpec, slowest: &StepNumbers, m: u64) -> Option<Term> {
    model.moe.as_ref().map(|moe| {
        term(
            "serve.decode.distinct_experts",
            "Distinct routed experts per MoE layer (count)",
            Unit::Count,
            slowest.distinct,
            "E·(1 − (1 − k/E)^b)",
            format!(
                "{} × (1 − (1 − {}/{})^{m}) = {:.2}",
                moe.routed_experts, moe.experts_per_token, moe.routed_experts, slowest.distinct
            ),
            "balls into bins (Feller 1968, occupancy): uniform, independent top-k routing; only touched experts' weights are read",
        )
    })
}

/// The decode step's KV read, explained (windowed layers read only their window).
fn decode_kv_bytes_term(serving: &Serving, dec: &DecodeNumbers) -> Term {
    let (slowest, kv_means, m) = (&dec.slowest, &dec.kv_means, dec.m);
    term(
        "serve.decode.kv_bytes",
        "KV read per GPU per step (B)",
        Unit::Bytes,
        slowest.kv_bytes,
        if kv_means.windowed_layers > 0 {
            "b · KV per token per GPU · mean over layers of (full: P + (O − 1)/2; windowed: mean_j min(w, P + j − 1))"
        } else {
            "b · KV per token per GPU · (P + (O − 1)/2)"
        },
        format!(
            "{m} × {:.4e} B × {:.1} = {:.4e} B",
            slowest.kv_bytes / (m as f64 * kv_means.kv_tokens).max(f64::MIN_POSITIVE),
            kv_means.kv_tokens,
            slowest.kv_bytes
        ),
        &if kv_means.windowed_layers > 0 {
            format!(
                "{} KV cache; the mean context over a request's output; cached prefixes are read like any KV; {} windowed layer(s) on the slowest stage read only the last window of tokens (Mistral 7B §2, rolling buffer)",
                serving.kv_dtype.id(),
                kv_means.windowed_layers
            )
        } else {
            format!(
                "{} KV cache; the mean context over a request's output; cached prefixes are read like any KV",
                serving.kv_dtype.id()
            )
        },
    )
}

/// The decode step's bytes against the bandwidths they stream at, explained.
fn decode_memory_term(ctx: &Ctx<'_>, slowest: &StepNumbers) -> Term {
    let bw = ctx.step.hbm_streaming_bytes_per_s();
    let weight_bw = ctx
        .timer
        .weight_stream_fraction
        .map_or(bw, |f| ctx.step.hbm_bytes_per_s * f);
    let kv_bw = ctx
        .kv_stream_fraction
        .map_or(bw, |f| ctx.step.hbm_bytes_per_s * f);
    let copy = ctx.step.hbm_achievable_fraction.clamp(1e-3, 1.0) * 100.0;
    let weights = match ctx.timer.weight_stream_fraction {
        Some(f) => format!(
            "the weight GEMMs stream at {:.1}% of the datasheet bandwidth ({})",
            f * 100.0,
            weight_stream::SOURCE
        ),
        None => format!("the weights stream at {copy:.0}% of the datasheet bandwidth"),
    };
    let kv = match ctx.kv_stream_fraction {
        Some(f) => format!("the KV at {:.1}% ({})", f * 100.0, decode_attention::SOURCE),
        None => format!("the KV at {copy:.0}%"),
    };
    term(
        "serve.decode.memory",
        "Decode memory time (s)",
        Unit::Seconds,
        slowest.memory_s,
        "weight bytes / (HBM bandwidth · weight GEMM share) + KV bytes / (HBM bandwidth · KV read share) + activation traffic / (HBM bandwidth · achievable fraction)",
        if ctx.timer.weight_stream_fraction.is_some() || ctx.kv_stream_fraction.is_some() {
            format!(
                "{:.4e} / {weight_bw:.4e} + {:.4e} / {kv_bw:.4e} + {:.4e} / {bw:.4e} = {}",
                slowest.weight_bytes,
                slowest.kv_bytes,
                slowest.traffic_bytes,
                secs(slowest.memory_s)
            )
        } else {
            format!(
                "({:.4e} + {:.4e} + {:.4e}) / {bw:.4e} = {}",
                slowest.weight_bytes,
                slowest.kv_bytes,
                slowest.traffic_bytes,
                secs(slowest.memory_s)
            )
        },
        &format!(
            "roofline (Williams et al. 2009): {weights}, {kv}; {copy:.0}% is the fraction streaming kernels reach (the GPU's measured figure, else CostOptions::hbm_achievable_fraction)"
        ),
    )
}

/// The decode step's kernel launches, explained (0 where no launch cost is measured).
fn decode_kernel_gaps_term(ctx: &Ctx<'_>, slowest: &StepNumbers) -> Term {
    term(
        "serve.decode.kernel_gaps",
        "Decode kernel launches per stage (s)",
        Unit::Seconds,
        slowest.launch_s,
        "(layers × 10 + MoE layers × (9 − 3)) kernels × launch cost per kernel",
        match ctx.timer.kernel_launch_s {
            Some(k) => format!(
                "{:.0} kernels × {} = {}",
                slowest.launch_s / k.max(f64::MIN_POSITIVE),
                secs(k),
                secs(slowest.launch_s)
            ),
            None => "0 (no per-kernel launch cost measured on this GPU)".to_string(),
        },
        &if ctx.timer.kernel_launch_s.is_some() {
            format!(
                "each kernel of a CUDA-graph step waits for the one before and streams nothing while it launches: {}",
                kernel_gaps::SOURCE
            )
        } else {
            format!(
                "priced only on the GPUs where it was measured (H100 SXM, H200): {}",
                kernel_gaps::SOURCE
            )
        },
    )
}

/// One decode step on the slowest stage, kernel by kernel, explained.
fn decode_step_term(slowest: &StepNumbers) -> Term {
    term(
        "serve.decode.step",
        "Decode step per stage (s)",
        Unit::Seconds,
        slowest.total_s,
        "max(weights/HBM, GEMM FLOPs/rate) + max(KV/HBM, attention FLOPs/rate) + activation traffic/HBM + comm + kernel launches",
        format!(
            "{} + {} + {} + {} + {} = {}",
            secs(slowest.gemm_op_s),
            secs(slowest.attn_op_s),
            secs(slowest.traffic_s),
            secs(slowest.comm_s),
            secs(slowest.launch_s),
            secs(slowest.total_s)
        ),
        "roofline per kernel (Williams et al. 2009): the weight GEMMs, attention and the memory-bound kernels between them run one after the other, so their bounds add; communication is on the critical path between GEMMs (not overlapped); each kernel's launch adds its fixed cost",
    )
}

impl StepTerms {
    pub(super) fn new(
        load: &ServingLoad,
        pre: &PrefillNumbers,
        dec: &DecodeNumbers,
        batch: &BatchNumbers,
        spec: Option<&SpecNumbers>,
        ride_s: f64,
        pp: u32,
    ) -> Self {
        let (chunks, prefill_s) = (pre.chunks, pre.prefill_s);
        let (interference_s, tpot_s) = (batch.interference_s, batch.tpot_s);
        let prefill_under_load = term(
            "serve.prefill_under_load",
            "Prefill under load (s)",
            Unit::Seconds,
            prefill_s + ride_s,
            "prefill + chunks × pp × riders × (decode KV/attention + activation traffic per sequence)",
            format!(
                "{} + {chunks} × {pp} × {} × {} = {}",
                secs(prefill_s),
                decodes_beside_a_chunk(load, load.concurrency, pp),
                secs((dec.slowest.attn_op_s + dec.slowest.traffic_s) / (dec.m as f64).max(1.0)),
                secs(prefill_s + ride_s)
            ),
            if load.prefill_first {
                "prompts run in steps of their own: no decode shares them"
            } else {
                "chunked prefill (vLLM V1 scheduler, Sarathi-Serve): the other running requests decode in each of the prompt's chunk steps; their KV read and attention add to the step, their weight GEMMs share the chunk's weight read; the chunk gets the token budget they leave"
            },
        );
        let interference = term(
            "serve.interference",
            "Prefill interference per step (s)",
            Unit::Seconds,
            interference_s,
            "(c / O) · (prefill compute + prefill activation traffic) per request",
            format!(
                "({} / {}) × ({} + {}) = {}",
                dec.c,
                load.output_tokens,
                secs(pre.prefill_compute_s),
                secs(pre.prefill_traffic_s),
                secs(interference_s)
            ),
            "Sarathi-Serve-style mixed batches; the chunk's FLOPs and its tokens' activation traffic are added to the step (no overlap with its memory time: an upper bound)",
        );
        let tpot = match spec {
            None => term(
                "serve.tpot",
                "TPOT (s)",
                Unit::Seconds,
                tpot_s,
                "pp · decode step(⌈c/pp⌉) + PP hops + interference",
                format!(
                    "{pp} × {} + {} + {} = {}",
                    secs(dec.slowest.total_s),
                    secs(dec.hops),
                    secs(interference_s),
                    secs(tpot_s)
                ),
                "continuous batching (Yu et al. 2022, Orca): every running request advances one token per step; with PP, pp micro-batches in flight and the slowest stage paces them",
            ),
            Some(x) => term(
                "serve.tpot",
                "TPOT (s)",
                Unit::Seconds,
                tpot_s,
                "(verify step + k · draft) / tokens kept per step + interference",
                format!(
                    "({} + {}) / {:.3} + {} = {}",
                    secs(x.verify_s),
                    secs(x.draft_s),
                    x.tokens_per_step,
                    secs(interference_s),
                    secs(tpot_s)
                ),
                "speculative decoding (Leviathan et al. 2023): each step drafts k tokens, verifies them in one target forward and keeps the accepted prefix plus one; continuous batching as without it",
            ),
        };
        StepTerms {
            prefill_under_load,
            interference,
            tpot,
        }
    }
}

impl QueueTerms {
    /// `service`: the prefill under load, s; `slot_wait_s`: the wait for a running slot, s.
    pub(super) fn new(queue: &Queue, service: f64, slot_wait_s: f64, open_loop: bool) -> Self {
        let (rate, rho, wait_s) = (queue.rate, queue.rho, queue.wait_s);
        let arrival_rate = term(
            "serve.arrival_rate",
            "Arrival rate (requests/s)",
            Unit::RequestsPerSecond,
            rate,
            if open_loop {
                "given"
            } else {
                "λ = c / (R + (O − 1)·TPOT), R the prefill residence (approximate MVA)"
            },
            format!("{rate:.4} requests/s"),
            if open_loop {
                "an open loop: requests arrive at the given rate whatever the replica does"
            } else {
                "a closed loop of c clients (each sends its next request when its last one ends), solved by approximate MVA (Schweitzer 1979; Lazowska et al. 1984 §6.4.2); it tends to the bound 1 / S as c grows (§5.2)"
            },
        );
        let utilisation = term(
            "serve.utilisation",
            "Prefill utilisation ρ (fraction)",
            Unit::Fraction,
            rho,
            "ρ = λ · S_prefill",
            format!("{rate:.4} × {} = {rho:.4}", secs(service)),
            "one prefill server per replica, deterministic service time S = prefill time",
        );
        let queue_wait = term(
            "serve.queue_wait",
            "Mean queueing wait (s)",
            Unit::Seconds,
            wait_s,
            queue.formula,
            queue.worked(service),
            queue.assumption,
        );
        let ttft_s = slot_wait_s + wait_s + service;
        let ttft = term(
            "serve.ttft",
            "TTFT mean (s)",
            Unit::Seconds,
            ttft_s,
            "W_slot + W_q + S_prefill",
            format!(
                "{} + {} + {} = {}",
                secs(slot_wait_s),
                secs(wait_s),
                secs(service),
                secs(ttft_s)
            ),
            "a wait for a slot in the running batch, queueing at the prefill, then the request's own prefill, which yields its first token",
        );
        let pct = |q: f64, key: &str, label: &str| {
            let w = queue.quantile(q, service) + slot_wait_s;
            term(
                key,
                label,
                Unit::Seconds,
                w + service,
                queue.tail_formula,
                format!("{} + {} = {}", secs(w), secs(service), secs(w + service)),
                queue.tail_assumption,
            )
        };
        QueueTerms {
            arrival_rate,
            utilisation,
            queue_wait,
            ttft,
            ttft_p90: pct(0.90, "serve.ttft_p90", "TTFT p90 (s)"),
            ttft_p99: pct(0.99, "serve.ttft_p99", "TTFT p99 (s)"),
        }
    }
}

/// Output tokens/s per replica and per GPU, explained.
pub(super) fn throughput_terms(
    load: &ServingLoad,
    batch: &BatchNumbers,
    gpus: u64,
) -> (Term, Term) {
    let (throughput_s, rate) = (batch.throughput_s, batch.queue.rate);
    let open_loop = load.arrival_rate_per_s.is_some();
    let per_replica = term(
        "serve.throughput_replica",
        "Output tokens/s per replica",
        Unit::TokensPerSecond,
        throughput_s,
        if open_loop { "c / TPOT" } else { "λ · O" },
        if open_loop {
            format!(
                "{} / {} = {throughput_s:.1}",
                load.concurrency,
                secs(batch.tpot_s)
            )
        } else {
            format!("{rate:.4} × {} = {throughput_s:.1}", load.output_tokens)
        },
        "every running request emits one token per step; a closed loop's requests complete at λ",
    );
    let per_gpu = term(
        "serve.throughput_gpu",
        "Output tokens/s per GPU",
        Unit::TokensPerSecond,
        throughput_s / gpus as f64,
        "output tokens/s per replica / (tp · pp)",
        format!(
            "{throughput_s:.1} / {gpus} = {:.1}",
            throughput_s / gpus as f64
        ),
        "every GPU of the replica counted",
    );
    (per_replica, per_gpu)
}

/// The KV tokens the replica holds against what the clients' requests need, explained.
pub(super) fn kv_capacity_term(
    clients: &ServingLoad,
    load: &ServingLoad,
    p: u64,
    capacity: f64,
    admission: &admission::Admission,
) -> Term {
    let (cf, o) = (
        f64::from(clients.concurrency),
        f64::from(load.output_tokens),
    );
    let needed = cf * (p as f64 + o);
    term(
        "serve.kv_capacity_tokens",
        "KV capacity per replica (tokens)",
        Unit::Count,
        capacity,
        "⌊KV pool / KV per token⌋ on the worst stage",
        format!(
            "{capacity:.0} tokens; the load needs {} × ({p} + {}) = {needed:.0}",
            clients.concurrency, load.output_tokens
        ),
        &format!(
            "serving memory plan (vLLM-style pool); a load beyond it runs {} at once: the engine {}",
            admission.running,
            admission.policy.action()
        ),
    )
}

impl SpecNumbers {
    pub(super) fn terms(&self, sp: &Speculation) -> Vec<Term> {
        let k = sp.draft_tokens;
        vec![
            term(
                "serve.spec.tokens_per_step",
                "Tokens kept per verify step (count)",
                Unit::Count,
                self.tokens_per_step,
                "(1 − α^(k+1)) / (1 − α)",
                format!("(1 − {}^{}) / (1 − {}) = {:.3}", sp.acceptance, k + 1, sp.acceptance, self.tokens_per_step),
                "Leviathan et al. 2023 eq. 1: drafts are kept up to the first rejection, and the target adds its own token; α independent per position",
            ),
            term(
                "serve.spec.verify",
                "Verify step (s)",
                Unit::Seconds,
                self.verify_s,
                "pp · step(k + 1 queries per sequence) + PP hops",
                format!("{} (plain step {})", secs(self.verify_s), secs(self.plain_step_s)),
                "the target's decode step with k + 1 tokens per sequence: the weights and KV read once, the GEMMs and attention over k + 1 queries",
            ),
            term(
                "serve.spec.draft",
                "Draft forwards per step (s)",
                Unit::Seconds,
                self.draft_s,
                "k · max((draft weights + draft KV) / HBM, draft FLOPs / rate) + launches",
                format!(
                    "{k} × {} ({:.3e} parameters, {:.3e} B weights + {:.3e} B KV per GPU)",
                    secs(self.draft.seconds), self.draft.params, self.draft.weight_bytes, self.draft.kv_bytes
                ),
                &format!("{} draft, priced as a memory-bound roofline like the target's step; a separate draft model's KV is not priced", sp.method.id()),
            ),
            term(
                "serve.spec.break_even_batch",
                "Batch where speculation stops paying (requests)",
                Unit::Count,
                self.break_even_batch.map_or(0.0, f64::from),
                "smallest b of 1, 2, 4, … 4096 with (verify(b) + k·draft(b)) / tokens per step ≥ plain step(b)",
                match self.break_even_batch {
                    Some(b) => format!("{b}: at this running batch the step is compute-bound enough that the extra queries cost what the kept tokens save"),
                    None => "0: speculation pays up to a batch of 4096".to_string(),
                },
                "the verify step's k + 1 queries move the GEMMs from memory- to compute-bound as the batch grows",
            ),
        ]
    }
}

pub(super) fn comm_assumption(comm: &CommModel, tp: u32, ep: bool, custom_ar: bool) -> String {
    let l = comm.link(Collective::AllReduce, LinkDomain::IntraNode);
    let custom = if custom_ar {
        format!(
            "; all-reduces up to 1 MiB at the engines' custom kernel's measured latency ({})",
            custom_all_reduce::SOURCE
        )
    } else {
        String::new()
    };
    format!(
        "α–β as collectives.rs prices them (intra-node α {:.1} µs, {:.0} GB/s bus); TP {tp}{}; small messages, so α dominates{custom}",
        l.latency_s * 1e6,
        l.busbw_bytes_per_s / 1e9,
        if ep { ", EP over the TP ranks" } else { "" }
    )
}
