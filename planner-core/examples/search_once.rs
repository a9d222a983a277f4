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

use planner_core::resolve::presets::mesh_scenario;
use planner_core::search::mesh::{search, SearchSpace};
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
