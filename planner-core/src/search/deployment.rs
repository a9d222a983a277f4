//! Serving deployment search: for a model, a GPU type and count, a request mix and a latency
//! target, every aggregated (replicas × TP × PP, × EP for MoE) and disaggregated (a prefill
//! pool and a decode pool) deployment, ranked by output tokens/s per GPU among those that meet the
//! target, and every other one counted under the reason it fails.
//!
//! Work is bounded: replica shapes are priced once per concurrency of a doubling ladder
//! ([`crate::serving::disagg::replica_numbers`]), disaggregated pools are combined from those numbers by arithmetic
//! only, and [`ServeSearchSpace::max_evaluated`] caps the deployments evaluated.

use serde::{Deserialize, Serialize};

use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::memory::serving::{self, ServingError};
use crate::search::mesh::ReasonCount;
use crate::serving::admission;
use crate::serving::disagg::{DisaggDeployment, DisaggNumbers, ReplicaNumbers, ShapeModel};
use crate::serving::latency::{closed_loop_queue, Bound, Queue, ServingLoad};

mod disaggregated;

use disaggregated::disaggregated;

/// Largest latency bound accepted, s (an hour: beyond any interactive target).
pub const MAX_TARGET_S: f64 = 3600.0;

/// Which TTFT the target bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Percentile {
    /// The mean.
    Mean,
    /// The 90th percentile.
    P90,
    /// The 99th percentile.
    P99,
}

impl Percentile {
    /// Stable identifier (`mean`, `p90`, `p99`).
    pub fn id(self) -> &'static str {
        match self {
            Percentile::Mean => "mean",
            Percentile::P90 => "p90",
            Percentile::P99 => "p99",
        }
    }

    /// Parses [`Percentile::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        [Percentile::Mean, Percentile::P90, Percentile::P99]
            .into_iter()
            .find(|p| p.id() == id)
    }

    fn quantile(self) -> Option<f64> {
        match self {
            Percentile::Mean => None,
            Percentile::P90 => Some(0.90),
            Percentile::P99 => Some(0.99),
        }
    }
}

/// A latency target; with neither bound the search ranks by throughput alone.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeTarget {
    /// Bound on TTFT at `percentile`, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_s: Option<f64>,
    /// Bound on TPOT, s. TPOT is a request's mean over its output tokens (as vLLM's
    /// `benchmark_serving` reports it), so the bound applies to the modelled mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_s: Option<f64>,
    /// Which TTFT `ttft_s` bounds.
    pub percentile: Percentile,
}

impl Default for ServeTarget {
    fn default() -> Self {
        ServeTarget {
            ttft_s: None,
            tpot_s: None,
            percentile: Percentile::P99,
        }
    }
}

impl ServeTarget {
    /// Range checks; the error names the field (`target.ttft_s`, `target.tpot_s`).
    pub fn validate(&self) -> Result<(), ServingError> {
        for (field, v) in [
            ("target.ttft_s", self.ttft_s),
            ("target.tpot_s", self.tpot_s),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0 && v <= MAX_TARGET_S) {
                    return Err(ServingError {
                        field,
                        reason: format!("must be in (0, {MAX_TARGET_S}] s, got {v}"),
                    });
                }
            }
        }
        Ok(())
    }
}

/// What the search enumerates and how much work it may do.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServeSearchSpace {
    /// Largest pipeline degree tried (powers of two up to it).
    pub max_pp: u32,
    /// Whether disaggregated prefill/decode pools are tried.
    pub disaggregated: bool,
    /// Largest concurrency per (decode) replica on the doubling ladder.
    pub max_concurrency: u32,
    /// Deployments evaluated at most; the search stops before passing it.
    pub max_evaluated: u64,
    /// Deployments kept in the ranking.
    pub top: usize,
    /// Rejected deployments listed (counts by reason are always complete).
    pub max_rejected: usize,
}

impl Default for ServeSearchSpace {
    fn default() -> Self {
        ServeSearchSpace {
            max_pp: 8,
            disaggregated: true,
            max_concurrency: 1024,
            max_evaluated: 100_000,
            top: 20,
            max_rejected: 50,
        }
    }
}

/// How the GPUs are organised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Pools {
    /// Identical replicas that each prefill and decode.
    Aggregated {
        /// Tensor-parallel degree.
        tp: u32,
        /// Pipeline stages.
        pp: u32,
        /// Replicas.
        replicas: u32,
    },
    /// A prefill pool and a decode pool.
    Disaggregated(DisaggDeployment),
}

/// One deployment at the concurrency it runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Deployment {
    /// The pools.
    pub pools: Pools,
    /// Routed experts whole over the TP ranks (vLLM `--enable-expert-parallel`).
    pub expert_parallel: bool,
    /// Requests decoding at once per (decode) replica.
    pub concurrency: u32,
}

impl Deployment {
    /// GPUs the deployment uses.
    pub fn gpus(&self) -> u64 {
        match self.pools {
            Pools::Aggregated { tp, pp, replicas } => {
                u64::from(tp) * u64::from(pp) * u64::from(replicas)
            }
            Pools::Disaggregated(d) => d.gpus(),
        }
    }

    /// `8 × TP 8 PP 1` or `P 2 × TP 8 | D 6 × TP 8`, with `EP` when set.
    pub fn label(&self) -> String {
        let ep = if self.expert_parallel { " EP" } else { "" };
        match self.pools {
            Pools::Aggregated { tp, pp, replicas } => format!("{replicas} × TP {tp} PP {pp}{ep}"),
            Pools::Disaggregated(d) => format!(
                "P {} × TP {} PP {} | D {} × TP {} PP {}{ep}",
                d.prefill.replicas,
                d.prefill.tp,
                d.prefill.pp,
                d.decode.replicas,
                d.decode.tp,
                d.decode.pp
            ),
        }
    }

    /// The replica shape a scenario's `serving` block carries (the decode pool's when
    /// disaggregated): `(tp, pp)`.
    pub fn serving_shape(&self) -> (u32, u32) {
        match self.pools {
            Pools::Aggregated { tp, pp, .. } => (tp, pp),
            Pools::Disaggregated(d) => (d.decode.tp, d.decode.pp),
        }
    }
}

/// Why a deployment was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServeRejectReason {
    /// Query or KV heads do not split over TP the way vLLM accepts.
    TpSplitsHeads,
    /// TP larger than a node or not dividing it.
    TpExceedsNode,
    /// Weights and workspace leave no KV room for one request.
    DoesNotFit,
    /// The KV pool holds fewer requests than the smallest concurrency asked for.
    KvPoolBelowConcurrency,
    /// Prefill utilisation ρ ≥ 1: the prompt queue grows without bound.
    PrefillSaturated,
    /// TTFT at the target's percentile above the bound.
    TtftOverTarget,
    /// TPOT above the bound.
    TpotOverTarget,
    /// The serving model refused the shape (message in the detail).
    ShapeRefused,
}

impl ServeRejectReason {
    /// Every reason, in report order.
    pub const ALL: [ServeRejectReason; 8] = [
        ServeRejectReason::TpSplitsHeads,
        ServeRejectReason::TpExceedsNode,
        ServeRejectReason::DoesNotFit,
        ServeRejectReason::KvPoolBelowConcurrency,
        ServeRejectReason::PrefillSaturated,
        ServeRejectReason::TtftOverTarget,
        ServeRejectReason::TpotOverTarget,
        ServeRejectReason::ShapeRefused,
    ];

    /// Machine key.
    pub fn key(self) -> &'static str {
        match self {
            ServeRejectReason::TpSplitsHeads => "tp_splits_heads",
            ServeRejectReason::TpExceedsNode => "tp_within_node",
            ServeRejectReason::DoesNotFit => "fits_memory",
            ServeRejectReason::KvPoolBelowConcurrency => "kv_pool_holds_concurrency",
            ServeRejectReason::PrefillSaturated => "prefill_keeps_up",
            ServeRejectReason::TtftOverTarget => "ttft_within_target",
            ServeRejectReason::TpotOverTarget => "tpot_within_target",
            ServeRejectReason::ShapeRefused => "shape_accepted",
        }
    }

    /// In words.
    pub fn message(self) -> &'static str {
        match self {
            ServeRejectReason::TpSplitsHeads => "TP does not split the attention heads",
            ServeRejectReason::TpExceedsNode => "TP larger than a node or not dividing it",
            ServeRejectReason::DoesNotFit => "does not fit: no KV room for one request",
            ServeRejectReason::KvPoolBelowConcurrency => "KV pool below the concurrency",
            ServeRejectReason::PrefillSaturated => "prefill cannot keep up (ρ ≥ 1)",
            ServeRejectReason::TtftOverTarget => "TTFT over target",
            ServeRejectReason::TpotOverTarget => "TPOT over target",
            ServeRejectReason::ShapeRefused => "shape refused by the serving model",
        }
    }
}

/// A deployment that meets the target, at its best concurrency.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankedDeployment {
    /// The deployment.
    pub deployment: Deployment,
    /// Its label ([`Deployment::label`]).
    pub label: String,
    /// GPUs used.
    pub gpus: u64,
    /// TTFT at the target's percentile, s.
    pub ttft_s: f64,
    /// Mean TTFT, s.
    pub ttft_mean_s: f64,
    /// TPOT, s.
    pub tpot_s: f64,
    /// Output tokens/s of the deployment.
    pub throughput_per_s: f64,
    /// Output tokens/s per GPU (the ranking key).
    pub throughput_per_gpu: f64,
    /// KV capacity of a (decode) replica, tokens.
    pub kv_capacity_tokens: f64,
    /// Prefill utilisation ρ of a (prefill) replica.
    pub prefill_utilisation: f64,
    /// KV transfer per request, s (0 when aggregated).
    pub kv_transfer_s: f64,
    /// Bound of the decode step.
    pub decode_bound: Bound,
    /// Bound of the prefill.
    pub prefill_bound: Bound,
}

/// A rejected deployment, judged at the smallest concurrency asked for (its easiest point).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RejectedDeployment {
    /// The deployment.
    pub deployment: Deployment,
    /// Its label.
    pub label: String,
    /// Reason keys ([`ServeRejectReason::key`]).
    pub reasons: Vec<String>,
    /// The numbers behind the first reason.
    pub detail: String,
}

/// One (deployment, concurrency) point of the throughput–latency plane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TradeoffPoint {
    /// Deployment label.
    pub label: String,
    /// Whether the deployment is aggregated.
    pub aggregated: bool,
    /// Concurrency per (decode) replica.
    pub concurrency: u32,
    /// TPOT, s.
    pub tpot_s: f64,
    /// TTFT at the target's percentile, s.
    pub ttft_s: f64,
    /// Output tokens/s per GPU.
    pub throughput_per_gpu: f64,
    /// No other point has both a lower-or-equal TPOT and a higher-or-equal throughput per
    /// GPU (one strictly).
    pub pareto: bool,
}

/// Everything the search found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServeSearchResult {
    /// GPUs available.
    pub gpus: u64,
    /// The target.
    pub target: ServeTarget,
    /// The request mix (its concurrency is the smallest tried).
    pub load: ServingLoad,
    /// Deployments considered.
    pub candidates: u64,
    /// Deployments meeting the target.
    pub feasible_count: u64,
    /// Deployments rejected (`candidates = feasible_count + rejected_count`).
    pub rejected_count: u64,
    /// Best deployments, most output tokens/s per GPU first.
    pub ranked: Vec<RankedDeployment>,
    /// Rejected deployments (up to `max_rejected`).
    pub rejected: Vec<RejectedDeployment>,
    /// Rejected deployments by reason (one with two reasons counts under both).
    pub rejections: Vec<ReasonCount>,
    /// Points of aggregated shapes and of the ranked disaggregated deployments over the
    /// concurrency ladder, with their Pareto front.
    pub points: Vec<TradeoffPoint>,
    /// Set when [`ServeSearchSpace::max_evaluated`] stopped the search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// The doubling ladder of concurrencies from `start` up to `max`.
pub fn concurrency_ladder(start: u32, max: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut c = u64::from(start.max(1));
    while c <= u64::from(max.max(start)) && out.len() < 32 {
        out.push(c as u32);
        c *= 2;
    }
    out
}

/// One replica shape and its numbers along the ladder.
struct Shape {
    tp: u32,
    pp: u32,
    ep: bool,
    /// Index = ladder step; `Err` holds the serving model's refusal.
    numbers: Vec<Result<ReplicaNumbers, String>>,
}

/// What one (deployment, concurrency) evaluation gave.
#[derive(Clone, Copy)]
struct Eval {
    ttft_target_s: f64,
    ttft_mean_s: f64,
    tpot_s: f64,
    throughput_per_s: f64,
    throughput_per_gpu: f64,
    rho: f64,
}

impl Eval {
    fn of_disagg(n: &DisaggNumbers, p: Percentile) -> Eval {
        Eval {
            ttft_target_s: match p {
                Percentile::Mean => n.ttft_s,
                Percentile::P90 => n.ttft_p90_s,
                Percentile::P99 => n.ttft_p99_s,
            },
            ttft_mean_s: n.ttft_s,
            tpot_s: n.tpot_s,
            throughput_per_s: n.throughput_per_s,
            throughput_per_gpu: n.throughput_per_gpu,
            rho: n.prefill_utilisation,
        }
    }
}

/// A failed ladder step: its reason and the numbers behind it.
type Failure = (ServeRejectReason, String);

/// Along one deployment's ladder: the step with the most tokens/s per GPU that meets the
/// target, and why the first (easiest) step failed.
#[derive(Default)]
struct Pick<'a> {
    best: Option<(Eval, &'a ReplicaNumbers)>,
    first_fail: Option<(Vec<ServeRejectReason>, String)>,
}

impl<'a> Pick<'a> {
    fn step(
        &mut self,
        k: usize,
        outcome: Result<(Eval, &'a ReplicaNumbers), Failure>,
        target: &ServeTarget,
    ) {
        let fail = match outcome {
            Err((r, why)) => Some((vec![r], why)),
            Ok((e, n)) => {
                // Only the first step's failure is kept: later steps skip the text.
                let (r, why) = judge(&e, target, k == 0);
                if r.is_empty() {
                    if self
                        .best
                        .is_none_or(|(b, _)| e.throughput_per_gpu > b.throughput_per_gpu)
                    {
                        self.best = Some((e, n));
                    }
                    None
                } else {
                    Some((r, why))
                }
            }
        };
        if k == 0 {
            self.first_fail = fail;
        }
    }

    fn failure(self) -> (Vec<ServeRejectReason>, String) {
        self.first_fail.unwrap_or_else(|| {
            (
                vec![ServeRejectReason::ShapeRefused],
                "no concurrency evaluated".to_string(),
            )
        })
    }
}

struct Tally {
    total: u64,
    counts: [u64; ServeRejectReason::ALL.len()],
    rejected: Vec<RejectedDeployment>,
    max_rejected: usize,
}

impl Tally {
    fn reject(&mut self, deployment: Deployment, reasons: &[ServeRejectReason], detail: String) {
        self.total += 1;
        for r in reasons {
            if let Some(i) = ServeRejectReason::ALL.iter().position(|x| x == r) {
                self.counts[i] += 1;
            }
        }
        if self.rejected.len() < self.max_rejected {
            self.rejected.push(RejectedDeployment {
                label: deployment.label(),
                deployment,
                reasons: reasons.iter().map(|r| r.key().to_string()).collect(),
                detail,
            });
        }
    }
}

fn ms(s: f64) -> String {
    format!("{:.1} ms", s * 1e3)
}

/// Judges one evaluation against the target; the reasons it fails, with the numbers when
/// `explain` (empty otherwise).
fn judge(e: &Eval, target: &ServeTarget, explain: bool) -> (Vec<ServeRejectReason>, String) {
    let mut reasons = Vec::new();
    let mut detail = Vec::new();
    if let Some(b) = target.ttft_s {
        if e.ttft_target_s > b {
            reasons.push(ServeRejectReason::TtftOverTarget);
            if explain {
                detail.push(format!(
                    "TTFT {} {} > {}",
                    target.percentile.id(),
                    ms(e.ttft_target_s),
                    ms(b)
                ));
            }
        }
    }
    if let Some(b) = target.tpot_s {
        if e.tpot_s > b {
            reasons.push(ServeRejectReason::TpotOverTarget);
            if explain {
                detail.push(format!("TPOT {} > {}", ms(e.tpot_s), ms(b)));
            }
        }
    }
    (reasons, detail.join("; "))
}

fn ttft_at(p: Percentile, q: &Queue, service_s: f64) -> f64 {
    match p.quantile() {
        None => q.wait_s,
        Some(x) => q.quantile(x, service_s),
    }
}

/// Aggregated replica at one ladder step: the closed-loop prefill queue of `serving_time`
/// (the search's concurrency is a closed loop of that many clients).
fn eval_aggregated(n: &ReplicaNumbers, output_tokens: u32, p: Percentile) -> Option<Eval> {
    let c = f64::from(n.concurrency);
    let o = f64::from(output_tokens.max(1));
    let q = closed_loop_queue(c, n.prefill_s, (o - 1.0) * n.tpot_s, 1.0);
    if !(q.rate.is_finite() && q.wait_s.is_finite()) {
        return None;
    }
    let g = f64::from(n.tp) * f64::from(n.pp);
    // As serving_time: a closed loop's requests complete at λ, O tokens each.
    let throughput = q.rate * o;
    Some(Eval {
        ttft_target_s: ttft_at(p, &q, n.prefill_s) + n.prefill_s,
        ttft_mean_s: q.wait_s + n.prefill_s,
        tpot_s: n.tpot_s,
        throughput_per_s: throughput,
        throughput_per_gpu: throughput / g,
        rho: q.rho,
    })
}

fn kv_needed(load: &ServingLoad, c: u32) -> f64 {
    f64::from(c) * (f64::from(load.prompt_tokens) + f64::from(load.output_tokens))
}

/// Searches every deployment of `scenario`'s cluster (model `model`) for `load` (its
/// concurrency is the smallest per replica tried) against `target`.
pub fn serve_search(
    model: &ModelSpec,
    scenario: &Scenario,
    load: &ServingLoad,
    target: &ServeTarget,
    space: &ServeSearchSpace,
) -> Result<ServeSearchResult, ServingError> {
    target.validate()?;
    load.validate(scenario.serving.context_len)?;
    let ask = SearchAsk {
        model,
        scenario,
        load,
        target,
        space,
        world: scenario.cluster.world_size(),
        ladder: concurrency_ladder(load.concurrency, space.max_concurrency),
    };
    let mut found = Found {
        tally: Tally {
            total: 0,
            counts: [0; ServeRejectReason::ALL.len()],
            rejected: Vec::new(),
            max_rejected: space.max_rejected,
        },
        candidates: 0,
        evaluated: 0,
        stopped: None,
        ranked: Vec::new(),
        points: Vec::new(),
    };
    let shapes = aggregated_shapes(&ask, &mut found);
    if space.disaggregated && found.stopped.is_none() {
        disaggregated(&ask, &shapes, &mut found);
    }
    Ok(found.result(&ask))
}

/// What a deployment search asks, fixed while it runs.
struct SearchAsk<'a> {
    model: &'a ModelSpec,
    scenario: &'a Scenario,
    load: &'a ServingLoad,
    target: &'a ServeTarget,
    space: &'a ServeSearchSpace,
    /// GPUs available.
    world: u64,
    /// Concurrencies per replica tried.
    ladder: Vec<u32>,
}

/// What a deployment search has found so far.
struct Found {
    tally: Tally,
    candidates: u64,
    evaluated: u64,
    stopped: Option<String>,
    ranked: Vec<RankedDeployment>,
    points: Vec<TradeoffPoint>,
}

impl Found {
    /// The top deployments, labelled, the Pareto front marked and the rejections counted.
    fn result(self, ask: &SearchAsk<'_>) -> ServeSearchResult {
        let Found {
            tally,
            candidates,
            stopped,
            ranked,
            mut points,
            ..
        } = self;
        let feasible_count = ranked.len() as u64;
        let mut order: Vec<usize> = (0..ranked.len()).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&ranked[a], &ranked[b]);
            b.throughput_per_gpu
                .total_cmp(&a.throughput_per_gpu)
                .then(a.gpus.cmp(&b.gpus))
        });
        order.truncate(ask.space.top);
        let ranked: Vec<RankedDeployment> = take_in_order(ranked, order)
            .into_iter()
            .map(|mut r| {
                r.label = r.deployment.label();
                r
            })
            .collect();
        mark_pareto(&mut points);
        let rejections = ServeRejectReason::ALL
            .iter()
            .zip(tally.counts)
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| ReasonCount {
                reason: r.key().to_string(),
                candidates: n,
            })
            .collect();
        ServeSearchResult {
            gpus: ask.world,
            target: *ask.target,
            load: ask.load.clone(),
            candidates,
            feasible_count,
            rejected_count: tally.total,
            ranked,
            rejected: tally.rejected,
            rejections,
            points,
            stopped,
        }
    }
}

/// `items` in the order of the indices `order` (a stable sort of indices keeps the order of
/// sorting the entries themselves, without moving them while sorting).
fn take_in_order<T>(items: Vec<T>, order: Vec<usize>) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// Aggregated: every (TP, PP, EP) replica shape, replicas = ⌊GPUs / (TP·PP)⌋. Ranks or
/// rejects each; returns the shapes priced (the disaggregated pools are built from them).
fn aggregated_shapes(ask: &SearchAsk<'_>, found: &mut Found) -> Vec<Shape> {
    let (model, world) = (ask.model, ask.world);
    let gpn = ask.scenario.cluster.gpus_per_node.max(1);
    let eps: &[bool] = if model.moe.is_some() {
        &[false, true]
    } else {
        &[false]
    };
    let mut shapes: Vec<Shape> = Vec::new();
    let mut tp = 1u32;
    while u64::from(tp) <= world {
        let mut pp = 1u32;
        while pp <= ask.space.max_pp.min(model.layers) && u64::from(tp) * u64::from(pp) <= world {
            let replicas =
                (world / (u64::from(tp) * u64::from(pp))).min(u64::from(u32::MAX)) as u32;
            for &ep in eps {
                found.candidates += 1;
                let dep = Deployment {
                    pools: Pools::Aggregated { tp, pp, replicas },
                    expert_parallel: ep,
                    concurrency: ask.load.concurrency,
                };
                let mut rule = Vec::new();
                if !serving::tp_valid_for_model(model, tp) {
                    rule.push(ServeRejectReason::TpSplitsHeads);
                }
                if !crate::input::hardware::tp_within_node(tp, gpn) {
                    rule.push(ServeRejectReason::TpExceedsNode);
                }
                if !rule.is_empty() {
                    found.tally.reject(
                        dep,
                        &rule,
                        format!(
                            "TP {tp} with {} query / {} KV heads, {gpn} GPUs per node",
                            model.heads, model.kv_heads
                        ),
                    );
                    continue;
                }
                found.evaluated += 1;
                let shape = Shape {
                    tp,
                    pp,
                    ep,
                    numbers: ladder_numbers(ask, tp, pp, ep),
                };
                aggregate_shape(
                    &shape,
                    replicas,
                    ask.load,
                    ask.target,
                    &mut found.tally,
                    &mut found.ranked,
                    &mut found.points,
                );
                shapes.push(shape);
            }
            pp *= 2;
        }
        tp *= 2;
    }
    shapes
}

/// One replica shape's numbers along the ladder; index = ladder step.
fn ladder_numbers(
    ask: &SearchAsk<'_>,
    tp: u32,
    pp: u32,
    ep: bool,
) -> Vec<Result<ReplicaNumbers, String>> {
    let (model, load) = (ask.model, ask.load);
    match ShapeModel::new(model, ask.scenario, tp, pp) {
        Err(e) => vec![Err(e.to_string())],
        Ok(m) => {
            let at = |c: u32| {
                let l = ServingLoad {
                    concurrency: c,
                    expert_parallel: ep,
                    ..load.clone()
                };
                m.numbers(model, &l).map_err(|e| e.to_string())
            };
            // The KV capacity does not depend on the concurrency: steps past it
            // are not priced (the first step is, to give its reason).
            let (&c0, rest) = ask.ladder.split_first().unwrap_or((&1, &[]));
            let first = at(c0);
            let cap = first.as_ref().map_or(0.0, |n| n.kv_capacity_tokens);
            let mut v = vec![first];
            v.extend(
                rest.iter()
                    .take_while(|&&c| kv_needed(load, c) <= cap)
                    .map(|&c| at(c)),
            );
            v
        }
    }
}

/// Ranks an aggregated shape at its best ladder step, or rejects it with the reasons at the
/// first step; adds its ladder to the tradeoff plane.
fn aggregate_shape(
    shape: &Shape,
    replicas: u32,
    load: &ServingLoad,
    target: &ServeTarget,
    tally: &mut Tally,
    ranked: &mut Vec<RankedDeployment>,
    points: &mut Vec<TradeoffPoint>,
) {
    let dep_at = |c: u32| Deployment {
        pools: Pools::Aggregated {
            tp: shape.tp,
            pp: shape.pp,
            replicas,
        },
        expert_parallel: shape.ep,
        concurrency: c,
    };
    let mut pick = Pick::default();
    for (k, r) in shape.numbers.iter().enumerate() {
        let outcome = match r {
            Err(e) => Err((ServeRejectReason::ShapeRefused, e.clone())),
            Ok(n) if n.kv_capacity_tokens < kv_needed(load, 1) => Err((
                ServeRejectReason::DoesNotFit,
                format!(
                    "KV pool {:.0} tokens < one request's {} + {}",
                    n.kv_capacity_tokens, load.prompt_tokens, load.output_tokens
                ),
            )),
            Ok(n) if n.kv_capacity_tokens < kv_needed(load, n.concurrency) => Err((
                ServeRejectReason::KvPoolBelowConcurrency,
                format!(
                    "KV pool {:.0} tokens < {} × ({} + {})",
                    n.kv_capacity_tokens, n.concurrency, load.prompt_tokens, load.output_tokens
                ),
            )),
            Ok(n) => match eval_aggregated(n, load.output_tokens, target.percentile) {
                None => Err((
                    ServeRejectReason::PrefillSaturated,
                    format!(
                        "prefill {} per prompt, {} requests finishing every {} × {}",
                        ms(n.prefill_s),
                        n.concurrency,
                        load.output_tokens,
                        ms(n.tpot_s)
                    ),
                )),
                Some(e) => {
                    points.push(TradeoffPoint {
                        label: dep_at(n.concurrency).label(),
                        aggregated: true,
                        concurrency: n.concurrency,
                        tpot_s: e.tpot_s,
                        ttft_s: e.ttft_target_s,
                        throughput_per_gpu: e.throughput_per_gpu,
                        pareto: false,
                    });
                    Ok((e, n))
                }
            },
        };
        pick.step(k, outcome, target);
    }
    match pick.best {
        Some((e, n)) => {
            let dep = dep_at(n.concurrency);
            ranked.push(RankedDeployment {
                // Labelled once ranked (only the top few are kept).
                label: String::new(),
                gpus: dep.gpus(),
                deployment: dep,
                ttft_s: e.ttft_target_s,
                ttft_mean_s: e.ttft_mean_s,
                tpot_s: e.tpot_s,
                throughput_per_s: e.throughput_per_s * f64::from(replicas),
                throughput_per_gpu: e.throughput_per_gpu,
                kv_capacity_tokens: n.kv_capacity_tokens,
                prefill_utilisation: e.rho,
                kv_transfer_s: 0.0,
                decode_bound: n.decode_bound,
                prefill_bound: n.prefill_bound,
            });
        }
        None => {
            let (r, why) = pick.failure();
            tally.reject(dep_at(load.concurrency), &r, why);
        }
    }
}

/// Marks the points no other point dominates (lower-or-equal TPOT and higher-or-equal
/// throughput per GPU, one strictly). O(n log n): sorted by TPOT, a point is on the front
/// when its throughput beats every point before it.
pub fn mark_pareto(points: &mut [TradeoffPoint]) {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| {
        points[a].tpot_s.total_cmp(&points[b].tpot_s).then(
            points[b]
                .throughput_per_gpu
                .total_cmp(&points[a].throughput_per_gpu),
        )
    });
    let mut best = f64::NEG_INFINITY;
    for i in order {
        let t = points[i].throughput_per_gpu;
        points[i].pareto = t > best;
        if t > best {
            best = t;
        }
    }
}

/// One concurrency of the scenario's own replica: what the page's latency curves plot.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConcurrencyPoint {
    /// Requests decoding at once per replica.
    pub concurrency: u32,
    /// TTFT at the target's percentile, s.
    pub ttft_s: f64,
    /// Mean TTFT, s.
    pub ttft_mean_s: f64,
    /// TPOT, s.
    pub tpot_s: f64,
    /// Output tokens/s per GPU.
    pub throughput_per_gpu: f64,
    /// Whether the KV pool holds `concurrency × (prompt + output)` tokens.
    pub fits_kv: bool,
    /// Requests the engine runs at once (its cap and KV pool allowing).
    pub running: u32,
    /// Mean wait for a slot in the running batch, s (part of both TTFTs).
    pub slot_wait_s: f64,
}

/// TTFT, TPOT and throughput of `scenario`'s replica (`serving.tp × serving.pp`, aggregated)
/// along the doubling ladder from 1 to `max_concurrency`, with `load.concurrency` added in
/// order. Points where the prefill queue saturates (ρ ≥ 1) are left out.
pub fn concurrency_curve(
    model: &ModelSpec,
    scenario: &Scenario,
    load: &ServingLoad,
    percentile: Percentile,
    max_concurrency: u32,
) -> Result<Vec<ConcurrencyPoint>, ServingError> {
    load.validate(scenario.serving.context_len)?;
    let shape = ShapeModel::new(model, scenario, scenario.serving.tp, scenario.serving.pp)?;
    let mut cs = concurrency_ladder(1, max_concurrency);
    if !cs.contains(&load.concurrency) {
        cs.push(load.concurrency);
        cs.sort_unstable();
    }
    // The KV capacity does not depend on the concurrency (as in the search above): read once.
    let one = ServingLoad {
        concurrency: 1,
        ..load.clone()
    };
    let capacity = shape.numbers(model, &one)?.kv_capacity_tokens;
    let mut out = Vec::with_capacity(cs.len());
    for c in cs {
        let point = curve_point(model, scenario, &shape, load, (c, capacity), percentile)?;
        if let Some(point) = point {
            out.push(point);
        }
    }
    Ok(out)
}

/// One point of [`concurrency_curve`]: `c` clients, of which the engine runs what its cap and
/// KV pool (`kv_capacity_tokens`) admit ([`admission`]); the others wait for a slot, which adds
/// to their TTFT.
fn curve_point(
    model: &ModelSpec,
    scenario: &Scenario,
    shape: &ShapeModel,
    load: &ServingLoad,
    (c, kv_capacity_tokens): (u32, f64),
    percentile: Percentile,
) -> Result<Option<ConcurrencyPoint>, ServingError> {
    let adm = admission::admit(
        scenario,
        c,
        load.prompt_tokens,
        load.output_tokens,
        kv_capacity_tokens,
    )?;
    let running = ServingLoad {
        concurrency: adm.running,
        ..load.clone()
    };
    let n = shape.numbers(model, &running)?;
    let Some(e) = eval_aggregated(&n, load.output_tokens, percentile) else {
        return Ok(None);
    };
    let slot_wait_s = adm.wait_s(e.throughput_per_s / f64::from(load.output_tokens.max(1)));
    Ok(Some(ConcurrencyPoint {
        concurrency: c,
        ttft_s: e.ttft_target_s + slot_wait_s,
        ttft_mean_s: e.ttft_mean_s + slot_wait_s,
        tpot_s: e.tpot_s,
        throughput_per_gpu: e.throughput_per_gpu,
        fits_kv: n.kv_capacity_tokens >= kv_needed(load, c),
        running: adm.running,
        slot_wait_s,
    }))
}
