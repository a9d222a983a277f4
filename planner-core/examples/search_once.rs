//! Runs one mesh search of the `search` bench's cases once, for an instruction-count
//! profile (`valgrind --tool=callgrind`), where the bench's wall time varies with load:
//!
//! ```text
//! CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release -p planner-core --example search_once
//! valgrind --tool=callgrind target/release/examples/search_once 405b
//! ```
//!
//! The argument picks the case: `405b` (Llama 3.1 405B on 16,384 H100) or `v3`
//! (DeepSeek-V3 on 2,048 H100); the scenarios are the bench's. With `--json` after it, the
//! whole result is printed as JSON (floats round-trip), so two builds can be compared.
//! With `--slices`, the search runs as the page runs it ([`SlicedSearch`], one (TP, PP, CP)
//! block per `step`) and prints the wall time of the slowest blocks and of the ranking
//! (native; the page's wasm is slower by its own factor). With `--repeat N`, the search runs
//! N times (for a CPU-time figure: `/usr/bin/time -f %U`, less swayed by load than wall time).

use planner_core::resolve::presets::mesh_scenario;
use planner_core::search::mesh::{search, SearchSpace, SlicedSearch};
use planner_core::time::cost::{CostOptions, StepModel};

fn main() {
    let case = std::env::args().nth(1).unwrap_or_else(|| "405b".into());
    let sc = match case.as_str() {
        "405b" => mesh_scenario("llama-3.1-405b", 2048, 8192, 2048),
        "v3" => mesh_scenario("deepseek-v3", 256, 4096, 15_360),
        other => {
            eprintln!("unknown case {other:?}: 405b or v3");
            std::process::exit(2);
        }
    };
    let Ok(model) = sc.model_spec() else {
        eprintln!("{case}: preset missing");
        std::process::exit(1);
    };
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    if std::env::args().nth(2).as_deref() == Some("--slices") {
        slices(&case, model, sc, sm);
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("--repeat") {
        let n: u32 = std::env::args()
            .nth(3)
            .and_then(|a| a.parse().ok())
            .unwrap_or(10);
        let space = SearchSpace::default();
        let total: u64 = (0..n)
            .map(|_| search(&model, &sc, &space, &sm).candidates)
            .sum();
        println!("{case}: {n} searches, {total} candidates");
        return;
    }
    let r = search(&model, &sc, &SearchSpace::default(), &sm);
    if std::env::args().nth(2).as_deref() == Some("--json") {
        match serde_json::to_string(&r) {
            Ok(json) => println!("{json}"),
            Err(e) => eprintln!("{case}: {e}"),
        }
        return;
    }
    println!(
        "{case}: {} candidates, {} feasible; best {:?} {:?} step {:.4} s",
        r.candidates,
        r.feasible_count,
        r.feasible.first().map(|f| f.dims),
        r.feasible.first().map(|f| f.knobs),
        r.feasible.first().map_or(0.0, |f| f.step_s),
    );
}

/// One block per step, as the page's mesh view steps it (app/src/views/mesh.rs, with its
/// `max_results` of 5,000); prints the block times' quantiles and the ranking's time.
fn slices(
    case: &str,
    model: planner_core::input::model::ModelSpec,
    sc: planner_core::input::scenario::Scenario,
    sm: StepModel,
) {
    let space = SearchSpace {
        max_results: 5000,
        max_rejected: 20_000,
        ..SearchSpace::default()
    };
    let mut s = SlicedSearch::new(model, sc, space, sm);
    let mut ms: Vec<f64> = Vec::new();
    loop {
        let t = std::time::Instant::now();
        let done = s.step(1);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        if done {
            break;
        }
    }
    let t = std::time::Instant::now();
    let r = s.finish();
    let finish_ms = t.elapsed().as_secs_f64() * 1e3;
    let total: f64 = ms.iter().sum();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    println!(
        "{case}: {} blocks, {:.2} ms in all; per block p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; finish (rank {} of {}) {:.2} ms",
        ms.len(),
        total,
        at(0.5),
        at(0.99),
        at(1.0),
        r.feasible.len(),
        r.feasible_count,
        finish_ms
    );
}
