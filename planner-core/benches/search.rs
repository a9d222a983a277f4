//! Full mesh search timings: Llama 3.1 405B on 16,384 H100 (8 per node, global
//! batch 16M tokens = 2048 sequences of 8K) and DeepSeek-V3 on 2,048 H100
//! (global batch 15,360 sequences of 4K, the V3 report's pre-training batch).
//! Criterion reports candidates per second as its throughput.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use planner_core::resolve::presets::mesh_scenario as scenario;
use planner_core::search::mesh::{search, SearchSpace};
use planner_core::time::cost::{CostOptions, StepModel};

fn bench(c: &mut Criterion) {
    let cases = [
        (
            "llama-3.1-405b_16384xH100",
            scenario("llama-3.1-405b", 2048, 8192, 2048),
        ),
        (
            "deepseek-v3_2048xH100",
            scenario("deepseek-v3", 256, 4096, 15_360),
        ),
    ];
    let mut group = c.benchmark_group("mesh_search");
    for (name, sc) in &cases {
        let Ok(model) = sc.model_spec() else {
            eprintln!("{name}: preset missing");
            continue;
        };
        let sm = StepModel::new(&model, sc, CostOptions::default());
        let space = SearchSpace::default();
        let r = search(&model, sc, &space, &sm);
        eprintln!(
            "{name}: {} candidates, {} feasible, {} rejected blocks; best {:?} {:?} step {:.2} s MFU {:.1}%",
            r.candidates,
            r.feasible_count,
            r.rejected.len(),
            r.feasible.first().map(|f| f.dims),
            r.feasible.first().map(|f| f.knobs),
            r.feasible.first().map_or(0.0, |f| f.step_s),
            r.feasible.first().map_or(0.0, |f| f.mfu * 100.0),
        );
        group.throughput(Throughput::Elements(r.candidates));
        group.bench_function(*name, |b| {
            b.iter(|| search(black_box(&model), black_box(sc), &space, &sm))
        });
        // The same search listing every knob setting as its own row: what keeping each
        // mesh's best candidate (the default list) costs or saves.
        let every = SearchSpace {
            one_row_per_mesh: false,
            ..SearchSpace::default()
        };
        group.bench_function(format!("{name}_every_knob"), |b| {
            b.iter(|| search(black_box(&model), black_box(sc), &every, &sm))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
