//! Disaggregated pools (KV transfer, TTFT, TPOT without interference) and the serving
//! deployment search (ranking, reasons, bounded work), against numbers worked by hand.

use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::resolve::presets::{article_mesh_scenario, model_preset};
use planner_core::search::deployment::{
    concurrency_ladder, mark_pareto, serve_search, Percentile, Pools, RankedDeployment,
    ServeRejectReason, ServeSearchResult, ServeSearchSpace, ServeTarget, TradeoffPoint,
};
use planner_core::serving::disagg::{disagg_time, DisaggDeployment, PoolShape};
use planner_core::serving::latency::{
    closed_loop_queue, open_loop_queue, serving_time, ServingLoad, ServingTime,
};

fn scenario(model: &str, nodes: u32) -> Scenario {
    let mut s = article_mesh_scenario();
    s.model = ModelChoice::Preset(model.to_string());
    s.cluster = Cluster::of(gpu_preset("h100-sxm").expect("preset"), nodes);
    s
}

fn load(prompt: u32, output: u32, concurrency: u32) -> ServingLoad {
    ServingLoad {
        prompt_tokens: prompt,
        output_tokens: output,
        concurrency,
        ..ServingLoad::default()
    }
}

fn pool(tp: u32, pp: u32, replicas: u32) -> PoolShape {
    PoolShape { tp, pp, replicas }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

#[test]
fn queue_formulas_are_the_closed_forms() {
    // M/D/1 at ρ = 0.5, S = 1 s: W = 0.5 × 1 / (2 × 0.5) = 0.5 s.
    let q = open_loop_queue(0.5, 1.0).expect("ρ < 1");
    assert!(close(q.wait_s, 0.5, 1e-12));
    // M/M/1 p99 at ρ = 0.5, S = 1 s: ln(0.5 / 0.01) / 0.5 = 2·ln 50 = 7.824 s.
    assert!(close(q.quantile(0.99, 1.0), 2.0 * 50f64.ln(), 1e-12));
    // ρ = 0.05 ≤ 1 − 0.9: fewer than 10% of requests wait at all, so p90 wait is 0.
    let q = open_loop_queue(0.05, 1.0).expect("ρ < 1");
    assert_eq!(q.quantile(0.90, 1.0), 0.0);
    // Closed loop, approximate MVA in closed form. 2 clients, S = 1 s, 1 s after prefill, one
    // server: R² + (1 − 2)·R − 1 = 0, R = (1 + √5)/2 = 1.618 s (the golden ratio), so the wait
    // is R − S = 0.618 s and λ = 2 / (R + 1) = 0.7639/s, ρ = 0.7639.
    let phi = (1.0 + 5f64.sqrt()) / 2.0;
    let q = closed_loop_queue(2.0, 1.0, 1.0, 1.0);
    assert!(close(q.wait_s, phi - 1.0, 1e-12), "{}", q.wait_s);
    assert!(close(q.rate, 2.0 / (phi + 1.0), 1e-12));
    assert!(close(q.rho, 2.0 / (phi + 1.0), 1e-12));
    // A client waits for at most the other one's prefill (1 s): p99 = min(M/M/1 tail, 1 s).
    assert_eq!(q.quantile(0.99, 1.0), 1.0);
    // 10 clients, S = 1 s, 4 s after prefill, 2 servers: one server of S/2 = 0.5 s plus a delay
    // of 0.5 s (Seidmann et al. 1987), Z = 4.5 s: R² + (4.5 − 5)·R − 2.25 = 0,
    // R = (0.5 + √9.25)/2 = 1.77069 s, λ = 10 / (R + 4.5) = 1.59472/s, wait R − 0.5 = 1.27069 s.
    // The asymptotic bound alone said λ = 2/s and no wait.
    let q = closed_loop_queue(10.0, 1.0, 4.0, 2.0);
    let r = (0.5 + 9.25f64.sqrt()) / 2.0;
    assert!(close(q.wait_s, r - 0.5, 1e-12) && close(q.wait_s, 1.27069, 1e-5));
    assert!(close(q.rate, 10.0 / (r + 4.5), 1e-12) && close(q.rate, 1.59472, 1e-5));
    // Many clients saturate the two servers: λ → 2/s, wait → N·S/2 − (S + 4 s) (Little's law).
    let q = closed_loop_queue(2000.0, 1.0, 4.0, 2.0);
    assert!(close(q.rate, 2.0, 1e-3) && close(q.wait_s, 1000.0 - 5.0, 1e-3));
    assert!(q.rho > 0.999 && q.rho <= 1.0);
    // One client never waits.
    assert_eq!(closed_loop_queue(1.0, 1.0, 4.0, 1.0).wait_s, 0.0);
}

#[test]
fn disaggregated_ttft_is_prefill_plus_kv_transfer_by_hand() {
    // Llama 3.1 8B, BF16 KV, one prefill GPU and one decode GPU on 2 H100 nodes.
    let s = scenario("llama-3.1-8b", 2);
    let model = model_preset("llama-3.1-8b").expect("preset");
    assert_eq!(s.cluster.inter_node.bytes_per_s, 50e9);
    assert_eq!(s.cluster.inter_node.latency_s, 14e-6);
    let d = DisaggDeployment {
        prefill: pool(1, 1, 1),
        decode: pool(1, 1, 1),
    };
    // A slow open-loop rate keeps the prefill queue empty (ρ ≈ 1e-3 · S).
    let l = ServingLoad {
        arrival_rate_per_s: Some(1e-3),
        graph_padded_batch: None,
        decode_attention: None,
        prefill_first: false,
        ..load(1024, 256, 8)
    };
    let t = disagg_time(&model, &s, &d, &l).expect("valid");
    // KV per token: 2 (K, V) × 32 layers × 8 KV heads × 128 head dim × 2 B = 131,072 B;
    // 1024 prompt tokens: 134,217,728 B, all of it on the one GPU each side.
    assert_eq!(t.kv_transfer_bytes.value, 134_217_728.0);
    assert_eq!(t.transfer.send_bytes_per_gpu, 134_217_728.0);
    // At the 400 Gb/s NIC's measured 47 of its 50 GB/s (input/link_efficiency.rs, nccl-tests
    // issue #290): 14 µs + 134,217,728 B / 47 GB/s = 14 µs + 2.855696 ms = 2.869696 ms.
    assert!(close(
        t.kv_transfer_time.value,
        14e-6 + 134_217_728.0 / 47e9,
        1e-12
    ));
    assert!(close(t.kv_transfer_time.value, 2.869_696_3e-3, 1e-7));
    // Prefill on the prefill replica = serving_time's prefill of the same shape.
    let mut agg = s.clone();
    agg.serving.tp = 1;
    agg.serving.pp = 1;
    let a = serving_time(&agg, &load(1024, 256, 1)).expect("valid");
    assert_eq!(t.prefill_time.value, a.prefill.time.value);
    // TTFT = W_q + S + transfer, W_q = ρS/(2(1−ρ)) with ρ = 1e-3 × S.
    let sp = a.prefill.time.value;
    let rho = 1e-3 * sp;
    let wq = rho * sp / (2.0 * (1.0 - rho));
    assert!(close(t.ttft.value, wq + sp + 2.869_696_340_4e-3, 1e-9));
    assert!(t.ttft.value > sp + t.kv_transfer_time.value);
}

#[test]
fn decode_pool_tpot_has_no_prefill_interference() {
    let s = scenario("llama-3.1-70b", 4);
    let model = model_preset("llama-3.1-70b").expect("preset");
    let d = DisaggDeployment {
        prefill: pool(8, 1, 2),
        decode: pool(8, 1, 2),
    };
    let l = load(2048, 256, 32);
    let t = disagg_time(&model, &s, &d, &l).expect("valid");
    let mut agg = s.clone();
    agg.serving.tp = 8;
    agg.serving.pp = 1;
    let a = serving_time(&agg, &l).expect("valid");
    // The decode pool's TPOT is the aggregated step without its prefill chunks.
    assert!(close(
        t.tpot.value,
        a.tpot.value - a.interference.value,
        1e-12
    ));
    assert!(a.interference.value > 0.0 && t.tpot.value < a.tpot.value);
    // A closed loop of 2 × 32 clients on 2 prefill replicas: one server of S/2 plus a delay S/2,
    // Z = S/2 + KV transfer + 255·TPOT; R the positive root of R² + (Z − 64·S/2)·R − (S/2)·Z = 0,
    // λ = 64 / (R + Z), wait R − S/2 (approximate MVA).
    let sv = t.prefill_time.value;
    let z = sv / 2.0 + t.kv_transfer_time.value + 255.0 * t.tpot.value;
    let b = 64.0 * sv / 2.0 - z;
    let r = (b + (b * b + 2.0 * sv * z).sqrt()) / 2.0;
    assert!(close(t.arrival_rate.value, 64.0 / (r + z), 1e-9));
    assert!(close(t.queue_wait.value, r - sv / 2.0, 1e-6));
    // Below saturation (ρ < 1) random arrival phases still queue: the wait is positive.
    assert!(t.queue_wait.value > 0.0 && t.prefill_utilisation.value < 1.0);
    assert!(close(
        t.throughput_per_gpu.value,
        t.arrival_rate.value * 256.0 / 32.0,
        1e-12
    ));
    // Over two prefill replicas: ρ = λ·S / 2.
    assert!(close(
        t.prefill_utilisation.value,
        t.arrival_rate.value * t.prefill_time.value / 2.0,
        1e-12
    ));
    // TP 8 each side: every GPU sends 1/8 of the 8 KV heads' bytes = one head's.
    assert!(close(
        t.transfer.send_bytes_per_gpu,
        t.kv_transfer_bytes.value / 8.0,
        1e-12
    ));
}

#[test]
fn disaggregated_deployment_input_is_checked_by_field() {
    let s = scenario("llama-3.1-8b", 1);
    let model = model_preset("llama-3.1-8b").expect("preset");
    let l = load(512, 64, 4);
    let bad = |d: DisaggDeployment| disagg_time(&model, &s, &d, &l).map(|_| ()).unwrap_err();
    let e = bad(DisaggDeployment {
        prefill: pool(3, 1, 1),
        decode: pool(1, 1, 1),
    });
    assert_eq!(e.field, "deployment.prefill.tp");
    let e = bad(DisaggDeployment {
        prefill: pool(1, 1, 1),
        decode: pool(1, 0, 1),
    });
    assert_eq!(e.field, "deployment.decode.pp");
    let e = bad(DisaggDeployment {
        prefill: pool(1, 1, 0),
        decode: pool(1, 1, 1),
    });
    assert_eq!(e.field, "deployment.prefill.replicas");
    // 4 + 8 GPUs on an 8-GPU cluster.
    let e = bad(DisaggDeployment {
        prefill: pool(4, 1, 1),
        decode: pool(8, 1, 1),
    });
    assert_eq!(e.field, "deployment");
    // One prefill GPU behind seven decode GPUs of 256 clients each cannot keep up with 8K
    // prompts: the closed loop runs at the prefill bound λ → 1/S and every request waits
    // ≈ 7·256/λ − cycle (Little's law); an open loop at twice that rate is refused.
    let d = DisaggDeployment {
        prefill: pool(1, 1, 1),
        decode: pool(1, 1, 7),
    };
    let t = disagg_time(&model, &s, &d, &load(8192, 16, 256)).expect("closed loop");
    let sv = t.prefill_time.value;
    assert!(t.prefill_utilisation.value > 0.999);
    assert!(close(t.arrival_rate.value, 1.0 / sv, 1e-3));
    let cycle = sv + t.kv_transfer_time.value + 15.0 * t.tpot.value;
    assert!(close(t.queue_wait.value, 1792.0 * sv - cycle, 1e-3));
    let open = ServingLoad {
        arrival_rate_per_s: Some(2.0 / sv / 7.0),
        graph_padded_batch: None,
        decode_attention: None,
        prefill_first: false,
        ..load(8192, 16, 256)
    };
    let e = disagg_time(&model, &s, &d, &open).map(|_| ()).unwrap_err();
    assert_eq!(e.field, "load.arrival_rate_per_s");
}

#[test]
fn ladder_doubles_from_the_requested_concurrency() {
    assert_eq!(concurrency_ladder(1, 16), vec![1, 2, 4, 8, 16]);
    assert_eq!(concurrency_ladder(3, 20), vec![3, 6, 12]);
    // A start above the cap is still tried once.
    assert_eq!(concurrency_ladder(50, 16), vec![50]);
}

#[test]
fn search_ranks_feasible_deployments_and_agrees_with_serving_time() {
    let s = scenario("llama-3.1-70b", 8);
    let (r, best, one, t) = best_aggregated_against_serving_time(&s);
    assert_eq!(r.gpus, 64);
    assert_eq!(r.candidates, r.feasible_count + r.rejected_count);
    assert!(!r.ranked.is_empty());
    for w in r.ranked.windows(2) {
        assert!(w[0].throughput_per_gpu >= w[1].throughput_per_gpu);
    }
    for d in &r.ranked {
        assert!(d.ttft_s <= 2.0 && d.tpot_s <= 0.05, "{}", d.label);
        assert!(d.gpus <= 64);
    }
    // The best aggregated deployment, re-evaluated by serving_time at its concurrency, gives
    // the same TPOT, p99 TTFT and throughput per GPU.
    assert!(close(best.tpot_s, t.tpot.value, 1e-12));
    assert!(close(best.ttft_s, t.ttft_p99.value, 1e-9));
    assert!(close(
        best.throughput_per_gpu,
        t.throughput_per_gpu.value,
        1e-12
    ));
    // Doubling its concurrency breaks the target or the KV pool (else the search would have
    // taken it: throughput per GPU rises with the batch).
    let next = serving_time(&one, &load(1024, 256, 2 * best.deployment.concurrency));
    if let Ok(n) = next {
        assert!(
            n.tpot.value > 0.05 || n.ttft_p99.value > 2.0 || !n.fits_kv,
            "{}",
            best.label
        );
    }
    // One H100 cannot hold 70B of BF16 weights (141 GB): TP 1 PP 1 does not fit.
    assert!(r.rejected.iter().any(|x| {
        matches!(
            x.deployment.pools,
            Pools::Aggregated {
                tp: 1,
                pp: 1,
                replicas: 64
            }
        ) && x.reasons == vec!["fits_memory".to_string()]
    }));
    // TP 16 on 8-GPU nodes.
    assert!(r
        .rejections
        .iter()
        .any(|c| c.reason == "tp_within_node" && c.candidates > 0));
    assert!(r.points.iter().any(|p| p.pareto));
}

#[test]
fn search_gives_each_rejection_its_reason() {
    let s = scenario("llama-3.1-70b", 1);
    let model = model_preset("llama-3.1-70b").expect("preset");
    let count = |r: &planner_core::search::deployment::ServeSearchResult,
                 reason: ServeRejectReason| {
        r.rejections
            .iter()
            .find(|c| c.reason == reason.key())
            .map_or(0, |c| c.candidates)
    };
    let run = |l: ServingLoad, ttft_s: Option<f64>, tpot_s: Option<f64>, percentile| {
        let target = ServeTarget {
            ttft_s,
            tpot_s,
            percentile,
        };
        serve_search(&model, &s, &l, &target, &ServeSearchSpace::default()).expect("valid")
    };
    // TPOT of 1 ms: below any 70B decode step on H100 (≥ 141 GB / 8 GPUs / 3.35 TB/s = 5.3 ms).
    let r = run(load(1024, 256, 1), None, Some(1e-3), Percentile::P90);
    assert_eq!(r.feasible_count, 0);
    assert!(count(&r, ServeRejectReason::TpotOverTarget) > 0);
    assert!(r
        .rejected
        .iter()
        .any(|x| x.detail.contains("TPOT") && x.detail.contains("> 1.0 ms")));
    // TTFT of 1 ms: a 4K prompt's 2·70.6e9·4096 = 5.8e14 FLOPs take > 70 ms on 8 GPUs.
    let r = run(load(4096, 256, 1), Some(1e-3), None, Percentile::Mean);
    assert_eq!(r.feasible_count, 0);
    assert!(count(&r, ServeRejectReason::TtftOverTarget) > 0);
    // 4096 requests of 8K tokens: 33.5M tokens × 327,680 B = 11 TB of KV, beyond 8 GPUs.
    let r = run(load(7936, 256, 4096), None, None, Percentile::P99);
    assert_eq!(r.feasible_count, 0);
    assert!(count(&r, ServeRejectReason::KvPoolBelowConcurrency) > 0);
    assert!(count(&r, ServeRejectReason::DoesNotFit) > 0);
}

#[test]
fn search_work_is_bounded() {
    let s = scenario("llama-3.1-8b", 8);
    let model = model_preset("llama-3.1-8b").expect("preset");
    let space = ServeSearchSpace {
        max_evaluated: 40,
        ..ServeSearchSpace::default()
    };
    let r = serve_search(
        &model,
        &s,
        &load(1024, 128, 1),
        &ServeTarget::default(),
        &space,
    )
    .expect("valid");
    let stopped = r.stopped.expect("the cap stops the disaggregated part");
    assert!(stopped.contains("40"), "{stopped}");
    // Aggregated shapes are always searched: TP 1, 2, 4, 8 × PP 1, 2, 4, 8 = 16 priced, and
    // TP 16 (PP 1, 2, 4), 32 (PP 1, 2), 64 (PP 1) = 6 refused by rule without pricing; the
    // disaggregated part then prices 40 − 16 = 24 deployments: 16 + 6 + 24 = 46.
    assert_eq!(r.candidates, 46);
    assert_eq!(r.candidates, r.feasible_count + r.rejected_count);
}

#[test]
fn search_input_is_checked_by_field() {
    let s = scenario("llama-3.1-8b", 1);
    let model = model_preset("llama-3.1-8b").expect("preset");
    for (target, field) in [
        (
            ServeTarget {
                ttft_s: Some(-1.0),
                ..ServeTarget::default()
            },
            "target.ttft_s",
        ),
        (
            ServeTarget {
                tpot_s: Some(f64::NAN),
                ..ServeTarget::default()
            },
            "target.tpot_s",
        ),
    ] {
        let e = serve_search(
            &model,
            &s,
            &load(128, 16, 1),
            &target,
            &ServeSearchSpace::default(),
        )
        .map(|_| ())
        .unwrap_err();
        assert_eq!(e.field, field);
    }
    let e = serve_search(
        &model,
        &s,
        &load(0, 16, 1),
        &ServeTarget::default(),
        &ServeSearchSpace::default(),
    )
    .map(|_| ())
    .unwrap_err();
    assert_eq!(e.field, "load.prompt_tokens");
}

#[test]
fn pareto_front_keeps_undominated_points() {
    let pt = |tpot_s: f64, throughput_per_gpu: f64| TradeoffPoint {
        label: String::new(),
        aggregated: true,
        concurrency: 1,
        tpot_s,
        ttft_s: 0.0,
        throughput_per_gpu,
        pareto: false,
    };
    // (10 ms, 100) and (20 ms, 300) are on the front; (15 ms, 90) is beaten by (10 ms, 100);
    // (30 ms, 250) by (20 ms, 300).
    let mut v = vec![
        pt(0.02, 300.0),
        pt(0.015, 90.0),
        pt(0.01, 100.0),
        pt(0.03, 250.0),
    ];
    mark_pareto(&mut v);
    let front: Vec<bool> = v.iter().map(|p| p.pareto).collect();
    assert_eq!(front, vec![true, false, true, false]);
}

#[test]
fn concurrency_curve_is_serving_time_at_each_concurrency() {
    let mut s = scenario("llama-3.1-70b", 1);
    s.serving.tp = 8;
    s.serving.pp = 1;
    let model = model_preset("llama-3.1-70b").expect("preset");
    let curve = planner_core::search::deployment::concurrency_curve(
        &model,
        &s,
        &load(1024, 256, 24),
        Percentile::P90,
        64,
    )
    .expect("valid");
    // 1, 2, 4, 8, 16, 24 (the load's own), 32, 64.
    let cs: Vec<u32> = curve.iter().map(|p| p.concurrency).collect();
    assert_eq!(cs, vec![1, 2, 4, 8, 16, 24, 32, 64]);
    for p in &curve {
        let t = serving_time(&s, &load(1024, 256, p.concurrency)).expect("valid");
        assert!(close(p.tpot_s, t.tpot.value, 1e-12));
        assert!(close(p.ttft_s, t.ttft_p90.value, 1e-9));
        assert!(close(p.ttft_mean_s, t.ttft.value, 1e-9));
        assert!(close(
            p.throughput_per_gpu,
            t.throughput_per_gpu.value,
            1e-12
        ));
        assert_eq!(p.fits_kv, t.fits_kv);
    }
    assert!(curve.windows(2).all(|w| w[0].tpot_s <= w[1].tpot_s));
}

/// With speculative decoding in the scenario, every deployment is priced with it: the best
/// aggregated one agrees with `serving_time` at its concurrency, speculation included.
#[test]
fn the_search_prices_speculation_as_serving_time_does() {
    use planner_core::input::speculation::{SpecMethod, Speculation};
    let mut s = scenario("llama-3.1-70b", 8);
    s.serving.speculation = Some(Speculation {
        method: SpecMethod::Eagle,
        draft_tokens: 3,
        acceptance: 0.8,
        draft_params: None,
    });
    let (_, best, _, t) = best_aggregated_against_serving_time(&s);
    assert!(!t.speculation.is_empty());
    assert!(close(best.tpot_s, t.tpot.value, 1e-12));
}

/// Llama 3.1 70B's serve search on `s` (1,024 + 256 tokens, p99 TTFT ≤ 2 s, TPOT ≤ 50 ms, every
/// deployment kept so the best aggregated one is listed even when disaggregated pools fill the
/// top), its best aggregated deployment, that deployment's scenario and `serving_time` there.
fn best_aggregated_against_serving_time(
    s: &Scenario,
) -> (ServeSearchResult, RankedDeployment, Scenario, ServingTime) {
    let model = model_preset("llama-3.1-70b").expect("preset");
    let target = ServeTarget {
        ttft_s: Some(2.0),
        tpot_s: Some(0.05),
        percentile: Percentile::P99,
    };
    let space = ServeSearchSpace {
        top: usize::MAX,
        ..ServeSearchSpace::default()
    };
    let r = serve_search(&model, s, &load(1024, 256, 1), &target, &space).expect("valid");
    let best = r
        .ranked
        .iter()
        .find(|d| matches!(d.deployment.pools, Pools::Aggregated { .. }))
        .expect("an aggregated deployment meets the target")
        .clone();
    let (tp, pp) = best.deployment.serving_shape();
    let mut one = s.clone();
    one.serving.tp = tp;
    one.serving.pp = pp;
    let t = serving_time(&one, &load(1024, 256, best.deployment.concurrency)).expect("valid");
    (r, best, one, t)
}
