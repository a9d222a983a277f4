//! One full scenario evaluation: what the app runs on every slider move.

use criterion::{criterion_group, criterion_main, Criterion};
use planner_core::evaluate::evaluate;
use planner_core::resolve::presets::{article_mesh_scenario, default_scenario};
use std::hint::black_box;

fn bench_evaluate(c: &mut Criterion) {
    let default = default_scenario();
    let mesh = article_mesh_scenario();
    c.bench_function("evaluate/default (70B, 64 H100, TP8 DP8)", |b| {
        b.iter(|| evaluate(black_box(&default)))
    });
    c.bench_function(
        "evaluate/article mesh (70B, 512 GPUs, TP8 PP4 CP4 DP4)",
        |b| b.iter(|| evaluate(black_box(&mesh))),
    );
}

criterion_group!(benches, bench_evaluate);
criterion_main!(benches);
