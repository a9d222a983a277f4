//! How long the inverse questions take: the smallest cluster for Llama 3.1 405B (2,048 × 8K tokens
//! a step, 15.6T tokens) over every power-of-two node count up to 65,536 H100 (14 sizes, the
//! full mesh space each, every size searched), and the fewest GPUs serving 70B at 20 requests/s
//! on five GPU types.

use criterion::{criterion_group, criterion_main, Criterion};
use planner_core::bill::deadline::{smallest_cluster, TrainingGoal};
use planner_core::bill::fleet::{fleet_for_rate, FleetGoal};
use planner_core::resolve::presets::{article_mesh_scenario, mesh_scenario};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut s405 = mesh_scenario("llama-3.1-405b", 2_048, 8_192, 2_048);
    s405.bill.tokens = Some(15.6e12);
    let Ok(m405) = s405.model_spec() else {
        return;
    };
    let goal = TrainingGoal {
        deadline_days: 90.0,
        max_gpus: 65_536,
        every_size: true,
        ..TrainingGoal::default()
    };
    let mut group = c.benchmark_group("inverse");
    group.sample_size(10);
    group.bench_function("deadline 405B, 1-8,192 nodes (every size)", |b| {
        b.iter(|| smallest_cluster(black_box(&s405), &m405, &goal))
    });
    let s70 = article_mesh_scenario();
    let Ok(m70) = s70.model_spec() else {
        return;
    };
    let gpus = ["h100-sxm", "a100-80gb", "h200", "l40s", "mi300x"].map(String::from);
    let fleet = FleetGoal::new(20.0, (Some(2.0), Some(0.05)), gpus.to_vec());
    group.bench_function("fleet 70B, 20 req/s, five GPU types", |b| {
        b.iter(|| fleet_for_rate(black_box(&s70), &m70, &fleet))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
