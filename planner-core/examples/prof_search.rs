// TEMPORARY profiling helper (not committed).
use planner_core::cost::{CostOptions, StepModel};
use planner_core::hardware::Cluster;
use planner_core::mesh::{search, SearchSpace};
use planner_core::presets::article_mesh_scenario;
use planner_core::scenario::ModelChoice;
use std::time::Instant;

fn main() {
    let mut sc = article_mesh_scenario();
    sc.model = ModelChoice::Preset("llama-3.1-405b".to_string());
    sc.cluster = Cluster {
        nodes: 2048,
        ..sc.cluster
    };
    sc.training.seq_len = 8192;
    sc.training.global_batch = 2048;
    let model = sc.model_spec().unwrap();
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    let space = SearchSpace::default();
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let mut best = f64::MAX;
    let t0 = Instant::now();
    for _ in 0..n {
        let a = Instant::now();
        std::hint::black_box(search(&model, &sc, &space, &sm));
        best = best.min(a.elapsed().as_secs_f64());
    }
    let mean = t0.elapsed().as_secs_f64() / n as f64;
    println!(
        "search mean {:.2} ms, best {:.2} ms",
        mean * 1e3,
        best * 1e3
    );
    if std::env::args().nth(2).is_none() {
        return;
    }
    let all = search(
        &model,
        &sc,
        &SearchSpace {
            max_results: usize::MAX,
            max_rejected: usize::MAX,
            ..SearchSpace::default()
        },
        &sm,
    );
    let mut layouts: Vec<planner_core::layout::Layout> =
        all.feasible.iter().map(|f| f.layout()).collect();
    let nf = layouts.len();
    for r in &all.rejected {
        if let (Some(z), Some(rc), Some(s), Some(v), Some(mb), Some(sp)) = (
            r.zero,
            r.recompute,
            r.schedule,
            r.virtual_stages,
            r.micro_batch,
            r.split,
        ) {
            layouts.push(planner_core::mesh::layout_of(
                r.dims,
                planner_core::mesh::Knobs {
                    zero: z,
                    recompute: rc,
                    schedule: s,
                    virtual_stages: v,
                    micro_batch: mb,
                    split: sp,
                },
            ));
        }
    }
    let params = model.param_breakdown();
    let mut memo = planner_core::search_memo::PeakMemo::new();
    let mut acc = 0.0;
    for l in &layouts {
        acc += memo.peak_bytes(&model, &params, &sc, l);
    }
    let t = Instant::now();
    for _ in 0..5 {
        for l in &layouts {
            acc += memo.peak_bytes(&model, &params, &sc, l);
        }
    }
    let mem = t.elapsed().as_secs_f64() / 5.0;
    let placements: Vec<_> = layouts[..nf].iter().map(|l| sm.placement(l)).collect();
    let paces: Vec<_> = layouts[..nf]
        .iter()
        .map(|l| sm.comm_inputs.pace(l))
        .collect();
    let t = Instant::now();
    for _ in 0..5 {
        for i in 0..nf {
            acc += sm
                .seconds_paced(&layouts[i], &placements[i], &paces[i])
                .total;
        }
    }
    let time = t.elapsed().as_secs_f64() / 5.0;
    println!("memory {} layouts {:.2} ms ({:.0} ns each); time {} feasible {:.2} ms ({:.0} ns each) {acc}", layouts.len(), mem*1e3, mem*1e9/layouts.len() as f64, nf, time*1e3, time*1e9/nf as f64);
}

#[allow(dead_code)]
fn parts() {}
