//! The search proposes only the pipeline schedules the scenario's framework runs
//! (`Framework::runs_schedule`): Megatron-Core has no zero-bubble schedule, DeepSpeed's
//! pipeline engine runs 1F1B only, torchtitan and the article have all three.

use std::collections::BTreeSet;

use planner_core::input::framework::Framework;
use planner_core::input::layout::Schedule;
use planner_core::resolve::presets::mesh_scenario;
use planner_core::search::mesh::{search_scenario, SearchSpace};
use planner_core::time::cost::CostOptions;

fn schedules_ranked(framework: Framework) -> BTreeSet<&'static str> {
    // Llama 3.1 70B on 64 H100 at 4K: PP candidates of every schedule fit.
    let mut sc = mesh_scenario("llama-3.1-70b", 8, 4096, 512);
    sc.overheads.framework = framework;
    let space = SearchSpace {
        max_results: usize::MAX,
        ..SearchSpace::default()
    };
    let r = search_scenario(&sc, &space, CostOptions::default(), None).expect("searches");
    r.feasible
        .iter()
        .filter(|f| f.dims.pp > 1)
        .map(|f| f.knobs.schedule.id())
        .collect()
}

#[test]
fn each_framework_gets_only_the_schedules_it_runs() {
    let all: BTreeSet<&str> = SearchSpace::default()
        .schedules
        .iter()
        .map(|s| s.id())
        .collect();
    assert_eq!(schedules_ranked(Framework::Article), all);
    assert_eq!(schedules_ranked(Framework::Torchtitan), all);
    let megatron = schedules_ranked(Framework::MegatronCore);
    assert!(
        !megatron.contains(Schedule::ZeroBubble.id()),
        "{megatron:?}"
    );
    assert!(
        megatron.contains(Schedule::Interleaved.id()),
        "{megatron:?}"
    );
    assert_eq!(
        schedules_ranked(Framework::DeepSpeed),
        BTreeSet::from([Schedule::OneFOneB.id()])
    );
}

/// GPT-3's 96 heads divide by 6, but a TP of 6 on 8-GPU nodes puts ranks 6–11 on two
/// nodes: the search rejects it with `tp_within_node` instead of pricing it on NVLink.
#[test]
fn a_tp_that_does_not_divide_the_node_is_rejected() {
    let sc = mesh_scenario("gpt3-175b", 24, 2048, 384);
    let space = SearchSpace {
        max_results: usize::MAX,
        ..SearchSpace::default()
    };
    let r = search_scenario(&sc, &space, CostOptions::default(), None).expect("searches");
    assert!(r.feasible.iter().all(|f| 8 % f.dims.tp == 0));
    let tp6: Vec<_> = r.rejected.iter().filter(|b| b.dims.tp == 6).collect();
    assert!(!tp6.is_empty());
    assert!(tp6
        .iter()
        .all(|b| b.reasons.iter().any(|x| x.key() == "tp_within_node")));
}
