//! The disaggregated half of the deployment search: every prefill shape paired with every
//! decode shape, and each count of prefill replicas the cluster leaves room for, judged along
//! the decode shape's concurrency ladder.

use crate::serving::disagg::{combine, kv_transfer, DisaggDeployment, PoolShape, ReplicaNumbers};
use crate::time::cost::{CostOptions, StepModel};

use super::{
    kv_needed, ms, take_in_order, Deployment, Eval, Found, Pick, Pools, RankedDeployment,
    SearchAsk, ServeRejectReason, Shape, TradeoffPoint,
};

/// A disaggregated deployment meeting the target, with the indices of its prefill and decode
/// shapes, its pools and its KV transfer time (s).
type DisaggEntry = (RankedDeployment, usize, usize, DisaggDeployment, f64);

/// Disaggregated: prefill shape × decode shape × prefill replicas; decode takes the rest.
/// At a fixed prefill pool each further decode replica shares the prefill GPUs wider (more
/// tokens/s per GPU) and loads the prefill queue more; fewer decode per prefill replica is
/// the next prefill count.
pub(super) fn disaggregated(ask: &SearchAsk<'_>, shapes: &[Shape], found: &mut Found) {
    let (model, scenario, load) = (ask.model, ask.scenario, ask.load);
    let step = StepModel::for_scenario(model, scenario, CostOptions::default());
    let capacity = |s: &Shape| match s.numbers.first() {
        Some(Ok(n)) => n.kv_capacity_tokens,
        _ => 0.0,
    };
    // A prefill replica holds one prompt at a time; a decode replica at least one request.
    let fits_prompt = |s: &Shape| capacity(s) >= f64::from(load.prompt_tokens);
    let fits_one = |s: &Shape| capacity(s) >= kv_needed(load, 1);
    let mut disagg_ranked: Vec<DisaggEntry> = Vec::new();
    'outer: for (ip, sp) in shapes.iter().enumerate() {
        if !fits_prompt(sp) {
            continue;
        }
        let Some(Ok(pre)) = sp.numbers.first() else {
            continue;
        };
        for (id, sd) in shapes.iter().enumerate() {
            if sd.ep != sp.ep || !fits_one(sd) {
                continue;
            }
            let x = kv_transfer(
                model,
                scenario,
                &step,
                (sp.tp, sp.pp),
                (sd.tp, sd.pp),
                load.prompt_tokens,
            );
            let pair = PoolPair {
                ip,
                sp,
                pre,
                id,
                sd,
                transfer_s: x.time_s,
            };
            if !pair.replica_counts(ask, found, &mut disagg_ranked) {
                break 'outer;
            }
        }
    }
    // The best disaggregated deployments' ladders join the tradeoff plane.
    let mut order: Vec<usize> = (0..disagg_ranked.len()).collect();
    order.sort_by(|&a, &b| {
        disagg_ranked[b]
            .0
            .throughput_per_gpu
            .total_cmp(&disagg_ranked[a].0.throughput_per_gpu)
    });
    let disagg_ranked = take_in_order(disagg_ranked, order);
    for (r, ip, id, d, transfer_s) in disagg_ranked.iter().take(ask.space.top.max(1)) {
        let (Some(Ok(pre)), Some(sd)) = (shapes[*ip].numbers.first(), shapes.get(*id)) else {
            continue;
        };
        disagg_points(ask, pre, sd, r, d, *transfer_s, &mut found.points);
    }
    found.ranked.extend(disagg_ranked.into_iter().map(|r| r.0));
}

/// A ranked disaggregated deployment's ladder on the tradeoff plane.
fn disagg_points(
    ask: &SearchAsk<'_>,
    pre: &ReplicaNumbers,
    sd: &Shape,
    r: &RankedDeployment,
    d: &DisaggDeployment,
    transfer_s: f64,
    points: &mut Vec<TradeoffPoint>,
) {
    let load = ask.load;
    for (k, c) in ask.ladder.iter().enumerate() {
        let Some(Ok(dec)) = sd.numbers.get(k) else {
            continue;
        };
        if dec.kv_capacity_tokens < kv_needed(load, *c) {
            continue;
        }
        if let Some(n) = combine(pre, dec, transfer_s, d, load.output_tokens, None) {
            points.push(TradeoffPoint {
                label: Deployment {
                    concurrency: *c,
                    ..r.deployment
                }
                .label(),
                aggregated: false,
                concurrency: *c,
                tpot_s: n.tpot_s,
                ttft_s: Eval::of_disagg(&n, ask.target.percentile).ttft_target_s,
                throughput_per_gpu: n.throughput_per_gpu,
                pareto: false,
            });
        }
    }
}

/// A prefill shape and a decode shape, paired into disaggregated pools.
struct PoolPair<'a> {
    /// Index and shape of the prefill pool's replicas, and their numbers.
    ip: usize,
    sp: &'a Shape,
    pre: &'a ReplicaNumbers,
    /// Index and shape of the decode pool's replicas.
    id: usize,
    sd: &'a Shape,
    /// KV transfer of one prompt from prefill to decode, s.
    transfer_s: f64,
}

impl<'a> PoolPair<'a> {
    /// Every prefill replica count that leaves room for a decode replica, the decode pool
    /// taking the rest; false when the evaluation cap stopped the search.
    fn replica_counts(
        &self,
        ask: &SearchAsk<'_>,
        found: &mut Found,
        disagg_ranked: &mut Vec<DisaggEntry>,
    ) -> bool {
        let (sp, sd, world) = (self.sp, self.sd, ask.world);
        let gp = u64::from(sp.tp) * u64::from(sp.pp);
        let gd = u64::from(sd.tp) * u64::from(sd.pp);
        let mut pr = 1u64;
        while pr * gp + gd <= world {
            let dr = (world - pr * gp) / gd;
            if found.evaluated >= ask.space.max_evaluated {
                found.stopped = Some(format!(
                    "search stopped at {} deployments: the cap of {} evaluated deployments was reached; disaggregated pools after prefill TP {} PP {} were not tried",
                    found.candidates, ask.space.max_evaluated, sp.tp, sp.pp
                ));
                return false;
            }
            found.candidates += 1;
            found.evaluated += 1;
            let d = DisaggDeployment {
                prefill: PoolShape {
                    tp: sp.tp,
                    pp: sp.pp,
                    replicas: pr.min(u64::from(u32::MAX)) as u32,
                },
                decode: PoolShape {
                    tp: sd.tp,
                    pp: sd.pp,
                    replicas: dr.min(u64::from(u32::MAX)) as u32,
                },
            };
            let dep_at = |c: u32| Deployment {
                pools: Pools::Disaggregated(d),
                expert_parallel: sp.ep,
                concurrency: c,
            };
            let pick = self.pick(ask, &d, pr, dr);
            match pick.best {
                Some((e, dec)) => disagg_ranked.push((
                    RankedDeployment {
                        deployment: dep_at(dec.concurrency),
                        // Labelled once ranked (only the top few are kept).
                        label: String::new(),
                        gpus: d.gpus(),
                        ttft_s: e.ttft_target_s,
                        ttft_mean_s: e.ttft_mean_s,
                        tpot_s: e.tpot_s,
                        throughput_per_s: e.throughput_per_s,
                        throughput_per_gpu: e.throughput_per_gpu,
                        kv_capacity_tokens: dec.kv_capacity_tokens,
                        prefill_utilisation: e.rho,
                        kv_transfer_s: self.transfer_s,
                        decode_bound: dec.decode_bound,
                        prefill_bound: self.pre.prefill_bound,
                    },
                    self.ip,
                    self.id,
                    d,
                    self.transfer_s,
                )),
                None => {
                    let (r, why) = pick.failure();
                    found.tally.reject(dep_at(ask.load.concurrency), &r, why);
                }
            }
            pr += 1;
        }
        true
    }

    /// Along the decode shape's ladder: the step with the most tokens/s per GPU that meets
    /// the target, and why the first step failed.
    fn pick(&self, ask: &SearchAsk<'_>, d: &DisaggDeployment, pr: u64, dr: u64) -> Pick<'a> {
        let (load, pre) = (ask.load, self.pre);
        let mut pick = Pick::default();
        for (k, c) in ask.ladder.iter().enumerate() {
            let Some(Ok(dec)) = self.sd.numbers.get(k) else {
                continue;
            };
            let outcome = if dec.kv_capacity_tokens < kv_needed(load, *c) {
                Err((
                    ServeRejectReason::KvPoolBelowConcurrency,
                    format!(
                        "decode KV pool {:.0} tokens < {c} × ({} + {})",
                        dec.kv_capacity_tokens, load.prompt_tokens, load.output_tokens
                    ),
                ))
            } else {
                match combine(pre, dec, self.transfer_s, d, load.output_tokens, None) {
                    None => Err((
                        ServeRejectReason::PrefillSaturated,
                        format!(
                            "{pr} prefill replica(s) at {} per prompt behind {dr} decode replica(s) of {c}",
                            ms(pre.prefill_s)
                        ),
                    )),
                    Some(n) => Ok((Eval::of_disagg(&n, ask.target.percentile), dec)),
                }
            };
            pick.step(k, outcome, ask.target);
        }
        pick
    }
}
