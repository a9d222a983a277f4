//! Serving deployment search timings: Llama 3.1 70B (BF16 weights and KV) on 64 H100
//! (8 nodes of 8), prompt 1024 / output 256 tokens, TTFT p99 ≤ 2 s and TPOT ≤ 50 ms, with
//! aggregated and disaggregated pools; and Mixtral 8x7B on the same GPUs (EP on and off).
//! Criterion reports deployments per second as its throughput.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::input::speculation::{SpecMethod, Speculation};
use planner_core::resolve::presets::article_mesh_scenario;
use planner_core::search::deployment::{serve_search, Percentile, ServeSearchSpace, ServeTarget};
use planner_core::serving::latency::ServingLoad;

fn scenario(model: &str, nodes: u32) -> Option<Scenario> {
    let mut sc = article_mesh_scenario();
    sc.model = ModelChoice::Preset(model.to_string());
    sc.cluster = Cluster::of(gpu_preset("h100-sxm")?, nodes);
    Some(sc)
}

fn bench(c: &mut Criterion) {
    let load = ServingLoad {
        prompt_tokens: 1024,
        output_tokens: 256,
        concurrency: 1,
        ..ServingLoad::default()
    };
    let target = ServeTarget {
        ttft_s: Some(2.0),
        tpot_s: Some(0.05),
        percentile: Percentile::P99,
    };
    let space = ServeSearchSpace::default();
    let mut group = c.benchmark_group("serving_search");
    // The 70B search again with EAGLE (k = 3, α = 0.8) priced in every deployment.
    let eagle = Speculation {
        method: SpecMethod::Eagle,
        draft_tokens: 3,
        acceptance: 0.8,
        draft_params: None,
    };
    for (name, model, speculation) in [
        ("llama-3.1-70b_64xH100", "llama-3.1-70b", None),
        ("mixtral-8x7b_64xH100", "mixtral-8x7b", None),
        ("llama-3.1-70b_64xH100_eagle", "llama-3.1-70b", Some(eagle)),
    ] {
        let Some(mut sc) = scenario(model, 8) else {
            eprintln!("{name}: preset missing");
            continue;
        };
        sc.serving.speculation = speculation;
        let Ok(spec) = sc.model_spec() else {
            eprintln!("{name}: preset missing");
            continue;
        };
        let r = match serve_search(&spec, &sc, &load, &target, &space) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{name}: {e}");
                continue;
            }
        };
        eprintln!(
            "{name}: {} deployments, {} meet the target; best {} at {:.1} tok/s/GPU (TTFT p99 {:.1} ms, TPOT {:.2} ms); rejections {:?}",
            r.candidates,
            r.feasible_count,
            r.ranked.first().map_or("-", |d| d.label.as_str()),
            r.ranked.first().map_or(0.0, |d| d.throughput_per_gpu),
            r.ranked.first().map_or(0.0, |d| d.ttft_s * 1e3),
            r.ranked.first().map_or(0.0, |d| d.tpot_s * 1e3),
            r.rejections
        );
        group.throughput(Throughput::Elements(r.candidates));
        group.bench_function(name, |b| {
            b.iter(|| serve_search(black_box(&spec), black_box(&sc), &load, &target, &space))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
