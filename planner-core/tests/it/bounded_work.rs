//! Bounded work on hostile but valid inputs: every call that a slider move or a CLI
//! command makes finishes in time that does not grow with layers × layers, hosts ×
//! hosts, or the number of candidates, and gives what the plain computation gives.
//! Functional assertions only (no timings).

use planner_core::edges::link;
use planner_core::edges::nccl_tests::parse_text;
use planner_core::evaluate::evaluate;
use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::model::{ModelSpec, MoeSpec};
use planner_core::input::scenario::{Scenario, Serving};
use planner_core::memory::serving::{recommend, serving_plan, Decision, MAX_LISTED_STAGES};
use planner_core::parallel::pipeline::{bubble, bubble_terms, timeline, Schedule};
use planner_core::resolve::presets::{article_mesh_scenario, model_preset};
use planner_core::search::mesh::{mesh_blocks, search, SearchSpace, SlicedSearch};
use planner_core::time::cost::{CostOptions, StepModel};

fn scenario(query: &str) -> Scenario {
    link::decode(query).unwrap_or_else(|e| panic!("{query}: {e:?}"))
}

fn h100(nodes: u32) -> Cluster {
    Cluster::of(gpu_preset("h100-sxm").expect("preset"), nodes)
}

/// A dense model of `layers` Llama-70B-shaped layers (hidden 8192, 64 heads, FFN 28672).
fn deep_model(layers: u32) -> ModelSpec {
    let mut m = model_preset("llama-3.1-70b").expect("preset");
    m.layers = layers;
    m.kv_heads = 64;
    m.name = format!("deep-{layers}");
    m
}

/// The recommendation the plain way: the smallest PP whose serving plan (every listed
/// stage evaluated with its explanations) holds the target, at the node's TP.
fn reference_pp(
    model: &ModelSpec,
    serving: &Serving,
    cluster: &Cluster,
    tp: u32,
) -> Option<(u32, u64)> {
    (2..=model.layers).find_map(|pp| {
        let plan = serving_plan(
            model,
            &Serving {
                tp,
                pp,
                ..serving.clone()
            },
            cluster,
        )
        .expect("plan");
        let n = plan.max_concurrent_sequences.value as u64;
        (n >= u64::from(serving.target_concurrency)).then_some((pp, n))
    })
}

#[test]
fn serving_recommendation_on_10000_layers_equals_the_plain_scan() {
    let model = deep_model(10_000);
    let cluster = h100(64);
    for target in [1u32, 16, 64] {
        let serving = Serving {
            target_concurrency: target,
            ..Serving::default()
        };
        let r = recommend(&model, &serving, &cluster).expect("recommend");
        assert_eq!(r.tp, 8, "{r:?}");
        let (pp, n) = reference_pp(&model, &serving, &cluster, 8).expect("fits at some PP");
        assert_eq!(
            (r.pp, r.max_concurrent_sequences),
            (pp, n),
            "target {target}"
        );
        assert!(pp > 10, "{pp}: a 10,000-layer model needs many stages");
        assert!(matches!(
            r.decision,
            Decision::PipelineAcrossNodes | Decision::DoesNotFit
        ));
    }
    // A target no PP reaches: every degree up to 10,000 is considered, and it says so.
    let serving = Serving {
        target_concurrency: 1_000_000,
        ..Serving::default()
    };
    let r = recommend(&model, &serving, &cluster).expect("recommend");
    assert_eq!(r.decision, Decision::DoesNotFit);
    assert_eq!((r.pp, r.max_concurrent_sequences), (10_000, 0));
    assert!(
        r.reason.starts_with("Even one layer per stage"),
        "{}",
        r.reason
    );
}

/// On a small MoE model with dense first layers, where every stage can be listed
/// (pp ≤ 16 evaluates each stage), the recommendation equals the plain scan for every
/// target it can reach.
#[test]
fn serving_recommendation_equals_the_plain_scan_on_a_small_moe() {
    let mut model = model_preset("mixtral-8x7b").expect("preset");
    model.layers = 16;
    model.moe = Some(MoeSpec {
        dense_layers: 3,
        ..model.moe.expect("moe")
    });
    let cluster = h100(2);
    let mut reached = 0;
    for target in (1..=400).step_by(7) {
        let serving = Serving {
            target_concurrency: target,
            context_len: 32_768,
            ..Serving::default()
        };
        let r = recommend(&model, &serving, &cluster).expect("recommend");
        if r.decision == Decision::PipelineAcrossNodes
            || (r.decision == Decision::DoesNotFit && r.max_concurrent_sequences > 0)
        {
            let want = reference_pp(&model, &serving, &cluster, r.tp).expect("reachable");
            assert_eq!((r.pp, r.max_concurrent_sequences), want, "target {target}");
            reached += 1;
        }
    }
    assert!(reached > 5, "{reached}");
}

/// A plan with 10,000 stages lists the stages every other one repeats, and says so;
/// its figures are those of the plain computation on the shape (checked stage by stage
/// in the unit tests of `serving.rs`).
#[test]
fn serving_plan_with_10000_stages_lists_the_distinct_ones() {
    let model = deep_model(10_000);
    let serving = Serving {
        tp: 8,
        pp: 10_000,
        ..Serving::default()
    };
    let plan = serving_plan(&model, &serving, &h100(10_000)).expect("plan");
    assert!(plan.stages.len() <= 12, "{}", plan.stages.len());
    assert!(plan.stages.windows(2).all(|w| w[0].stage < w[1].stage));
    assert_eq!(plan.stages.first().map(|s| s.stage), Some(0));
    assert_eq!(plan.stages.last().map(|s| s.stage), Some(9_999));
    assert!(plan.stages.iter().all(|s| s.layers == 1));
    let note = plan.stages_note.as_deref().expect("note");
    assert!(note.contains("of 10000 stages listed"), "{note}");
    // Up to MAX_LISTED_STAGES every stage is listed, without a note.
    let small = serving_plan(
        &model,
        &Serving {
            pp: MAX_LISTED_STAGES as u32,
            ..serving
        },
        &h100(1_000),
    )
    .expect("plan");
    assert_eq!(small.stages.len(), MAX_LISTED_STAGES);
    assert!(small.stages_note.is_none());
}

/// ZB-H1 with fewer micro-batches than stages: the closed form is the simulation's
/// bubble, bit for bit, and it needs no simulation for any size.
#[test]
fn zero_bubble_closed_form_equals_the_simulation() {
    let mut checked = 0;
    for p in 2..=40u32 {
        for m in 1..p {
            let simulated = timeline(Schedule::ZeroBubble, p, m, 1).expect("timeline");
            assert_eq!(
                bubble(Schedule::ZeroBubble, p, m, 1),
                simulated.bubble(),
                "p {p} m {m}"
            );
            assert_eq!(simulated.makespan_ticks(), u64::from(2 * m + 2 * p - 1));
            checked += 1;
        }
    }
    for (p, m) in [(256, 1), (256, 255), (200, 17), (97, 96)] {
        let simulated = timeline(Schedule::ZeroBubble, p, m, 1).expect("timeline");
        assert_eq!(
            bubble(Schedule::ZeroBubble, p, m, 1),
            simulated.bubble(),
            "p {p} m {m}"
        );
        checked += 1;
    }
    assert!(checked > 700);
    // Beyond what a timeline draws: the same closed form (2p − 1 − m)/(3m).
    let b = bubble(Schedule::ZeroBubble, 1_000_000, 3, 1);
    assert_eq!(b.overhead_vs_ideal, (2_000_000.0 - 1.0 - 3.0) / 9.0);
    let [idle, over] = bubble_terms(Schedule::ZeroBubble, 8, 4, 1);
    assert_eq!(over.worked, "(2·8−1−4)/(3·4) = 91.7%");
    assert_eq!(idle.value, b_idle(8, 4));
}

fn b_idle(p: u64, m: u64) -> f64 {
    let makespan = 2 * m + 2 * p - 1;
    (p * makespan - p * 3 * m) as f64 / (p * makespan) as f64
}

/// The worst cluster found: 997,920 GPUs (2^5·3^4·5·7·11, 125,440 (TP, PP, CP) blocks)
/// and a tiny MoE model every degree divides, so nearly every candidate passes the rules.
const WORST_SEARCH: &str = "v=1&model=custom&name=worst&layers=720&hidden=1&heads=5040&kv_heads=1&head_dim=1&ffn=5040&vocab=1&experts=720&topk=1&expert_ffn=5040&gpn=1008&gpus=997920&seq=2&gbs=7983360";

#[test]
fn search_stops_at_its_cap_and_says_so() {
    let sc = scenario(WORST_SEARCH);
    let model = sc.model_spec().expect("model");
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    // Micro-batches and virtual stages capped at 8, so a mesh holds a few hundred knob
    // settings and the cap is reached within one mesh's worth (the default space tries every
    // divisor and every virtual stage count: below).
    let space = SearchSpace {
        max_results: 10,
        max_rejected: 50,
        max_evaluated: 20_000,
        micro_batch_range: Some(8),
        virtual_stage_range: Some(8),
        ..SearchSpace::default()
    };
    let r = search(&model, &sc, &space, &sm);
    let stop = r.stopped.as_ref().expect("stopped");
    assert!(
        stop.evaluated <= 20_000 && stop.evaluated > 19_000,
        "{stop:?}"
    );
    assert_eq!(stop.max_evaluated, 20_000);
    assert_eq!(stop.candidates, r.candidates);
    assert_eq!(stop.blocks, mesh_blocks(997_920).len());
    assert_eq!(stop.blocks, 125_440);
    assert!(stop.blocks_searched < stop.blocks);
    assert!(
        stop.message
            .starts_with(&format!("search stopped at {} candidates", r.candidates)),
        "{}",
        stop.message
    );
    assert!(r.feasible_count <= stop.evaluated);
    assert_eq!(r.feasible.len(), 10);
    // What was searched is accounted for: every candidate is ranked or rejected.
    let whole = search(
        &model,
        &sc,
        &SearchSpace {
            max_rejected: usize::MAX,
            ..space.clone()
        },
        &sm,
    );
    let rejected: u64 = whole.rejected.iter().map(|b| b.candidates).sum();
    assert_eq!(whole.candidates, whole.feasible_count + rejected);
    assert_eq!(whole.candidates, r.candidates);

    // The page's sliced search stops at the same place with the same result.
    let mut sliced = SlicedSearch::new(model.clone(), sc.clone(), space.clone(), sm.clone());
    let mut steps = 0;
    while !sliced.step(97) {
        steps += 1;
        assert!(steps < 10_000);
    }
    assert!(sliced.is_done() && sliced.stopped());
    assert_eq!(sliced.progress(), (stop.blocks_searched, stop.blocks));
    assert!(sliced.step(1), "a stopped search stays done");
    assert_eq!(sliced.finish(), r);

    // The default space: every divisor of the batch per replica (here up to 7,983,360 / DP)
    // and every virtual stage count up to 720 / PP give one mesh thousands of knob settings,
    // each of which fits this tiny model, so the search stops before the first mesh that could
    // pass the cap, well under it, and still accounts for everything it searched.
    let wide = SearchSpace {
        micro_batch_range: SearchSpace::default().micro_batch_range,
        virtual_stage_range: SearchSpace::default().virtual_stage_range,
        max_rejected: usize::MAX,
        ..space
    };
    let w = search(&model, &sc, &wide, &sm);
    let stop = w.stopped.as_ref().expect("stopped");
    assert!(stop.evaluated <= 20_000, "{stop:?}");
    assert!(stop.blocks_searched > 0 && stop.blocks_searched < stop.blocks);
    let rejected: u64 = w.rejected.iter().map(|b| b.candidates).sum();
    assert_eq!(w.candidates, w.feasible_count + rejected);
}

#[test]
fn searches_below_the_cap_are_whole_and_unchanged() {
    let sc = article_mesh_scenario();
    let model = sc.model_spec().expect("model");
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    let r = search(&model, &sc, &SearchSpace::default(), &sm);
    assert!(r.stopped.is_none());
    let json = serde_json::to_string(&r).expect("json");
    assert!(
        !json.contains("stopped"),
        "no field when the search ran to the end"
    );
    // A cap exactly at what the search evaluates does not stop it.
    let evaluated = r.feasible_count
        + r.rejections
            .iter()
            .find(|c| c.reason == "memory_within_capacity")
            .map_or(0, |c| c.candidates);
    let exact = SearchSpace {
        max_evaluated: evaluated + 400,
        ..SearchSpace::default()
    };
    assert_eq!(search(&model, &sc, &exact, &sm), r);
    // A space file without the field reads with the default cap.
    let mut value = serde_json::to_value(SearchSpace::default()).expect("json");
    value
        .as_object_mut()
        .expect("object")
        .remove("max_evaluated");
    let space: SearchSpace = serde_json::from_value(value).expect("space");
    assert_eq!(space, SearchSpace::default());
}

/// A zero-bubble-heavy search (PP up to 256 with few micro-batches) asks the bubble
/// once per candidate; it runs to the end and ranks as before.
#[test]
fn search_with_deep_pipelines_runs_to_the_end() {
    let sc = scenario("v=1&model=custom&name=moe&layers=256&hidden=4096&heads=32&ffn=14336&vocab=128256&experts=256&topk=8&expert_ffn=2048&gpus=4096&gbs=256");
    let model = sc.model_spec().expect("model");
    let sm = StepModel::new(&model, &sc, CostOptions::default());
    // Every feasible candidate kept: with expert-TP ∈ {1, TP} crossed in, more MoE meshes
    // than the default 200 outrank the PP-256 ones, which must still be reached.
    let space = SearchSpace {
        max_results: usize::MAX,
        ..SearchSpace::default()
    };
    let r = search(&model, &sc, &space, &sm);
    assert!(r.stopped.is_none());
    assert!(r
        .feasible
        .iter()
        .any(|f| f.dims.pp == 256 && f.knobs.schedule == Schedule::ZeroBubble));
    // Fastest first among candidates without a pricing caveat, then among those with one.
    for w in r.feasible.windows(2) {
        if w[0].caveat.is_some() == w[1].caveat.is_some() {
            assert!(w[0].step_s <= w[1].step_s);
        } else {
            assert!(w[0].caveat.is_none());
        }
    }
}

#[test]
fn nccl_text_counts_many_hosts() {
    let hosts = 5_000;
    let per_host = 4;
    let mut text = String::from("# nThread 1 nGpus 1 minBytes 8 maxBytes 8\n# Using devices\n");
    // Ranks interleaved over hosts, as a round-robin launcher numbers them.
    for rank in 0..hosts * per_host {
        let host = rank % hosts;
        text.push_str(&format!(
            "#  Rank {rank:5} Group  0 Pid {rank:6} on node-{host:05} device {:2} [0x1b] NVIDIA H100 80GB HBM3\n",
            rank / hosts
        ));
    }
    text.push_str("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
    text.push_str("     1048576        262144     float     sum      -1    100.0   10.49   20.97      0    100.0   10.49   20.97      0\n");
    let run = parse_text(&text).expect("parse");
    assert_eq!(run.ranks, Some(20_000));
    assert_eq!(run.hosts, Some(5_000));
    assert_eq!(run.ranks_per_node(), Some(4));
    assert_eq!(run.rows.len(), 2);
}

/// The worst scenarios found for one evaluation: 10,000 layers, a 2^26 vocabulary,
/// 65,536 experts, 10,000 stages with interleaving, 2^32 − 1 sequences per step,
/// a million GPUs. Each evaluates, and what cannot be drawn is said.
#[test]
fn worst_scenarios_evaluate() {
    for query in [
        "v=1&model=custom&name=x&layers=10000&hidden=8192&heads=64&ffn=28672&vocab=128256&serve_conc=1000000&serve_pp=10000&serve_tp=8&gpus=1000000&gpn=8",
        "v=1&model=custom&name=moe&layers=10000&hidden=1024&heads=64&ffn=4096&vocab=67108864&experts=65536&topk=64&expert_ffn=64&gpus=1000000&gpn=1000&tp=8&pp=10000&vpp=1&sched=zb&dp=12&mbs=1&gbs=4294967295&ep=4&serve_pp=10000&serve_conc=1000000",
        "v=1&model=custom&name=moe&layers=10000&hidden=1024&heads=64&ffn=4096&vocab=67108864&experts=65536&topk=65536&expert_ffn=64&gpus=1000000&gpn=1000&tp=1&pp=10000&dp=100&mbs=1&gbs=4294967295&ep=4&sched=interleaved&vpp=10000&serve_conc=1000000&serve_pp=10000&serve_tp=1000",
        "v=1&model=custom&name=x&layers=256&hidden=8192&heads=64&ffn=28672&vocab=128256&gpus=256&gpn=8&tp=1&dp=1&pp=256&mbs=1&gbs=16&sched=zb",
        // p · m · v past u64 and v · p, m · v past u32 (they overflowed before).
        "v=1&model=custom&name=moe&layers=10000&hidden=64&heads=4194304&kv_heads=1&head_dim=1&ffn=4194304&vocab=67108864&experts=65536&topk=65536&shared=65536&expert_ffn=1&gpus=1000000&gpn=1000&tp=1&pp=1000000&dp=1&cp=1&mbs=1&gbs=4294967295&sched=interleaved&vpp=10000",
    ] {
        let sc = scenario(query);
        let e = evaluate(&sc).unwrap_or_else(|err| panic!("{query}: {err}"));
        let serving = e.serving.as_ref().expect("serving view");
        assert!(serving.plan.stages.len() <= MAX_LISTED_STAGES, "{query}");
        assert!(e.step.seconds.total.is_finite() && e.step.seconds.total > 0.0, "{query}");
        let p = planner_core::view::pipeline::pipeline(&sc);
        assert!(p.curve.len() <= 512, "{query}");
        if let Ok(t) = &p.grid {
            // Drawn at the layout's own shape: the closed form is the simulation's bubble.
            let own = (t.stages, t.micro_batches) == (p.stages, p.micro_batches);
            if own && t.virtual_stages == p.virtual_stages {
                assert_eq!(t.bubble(), p.bubble, "{query}");
            }
        }
    }
}
