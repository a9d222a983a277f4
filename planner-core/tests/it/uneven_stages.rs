//! Uneven pipeline stages end to end on Llama 3.1 405B (126 layers) at PP 16 with 7 layers
//! on the first and last stage (Dubey et al. 2024 §3.3.2): the pace, memory per stage,
//! validation, the share link and the exports.

use planner_core::edges::export::{export, ExportFormat};
use planner_core::edges::link::{decode, encode};
use planner_core::input::hardware::Cluster;
use planner_core::input::layout::{Layout, Recompute, Schedule, StageSplit, ZeroStage};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::memory::model_state::{stage_spans_of, StagePosition};
use planner_core::memory::training_memory::training_memory;
use planner_core::resolve::presets::article_mesh_scenario;
use planner_core::resolve::validate::{layout_rule_violations, RuleViolation};
use planner_core::time::cost::{CostOptions, StepModel};

/// The rules `s` breaks as errors.
fn errors(s: &Scenario) -> Vec<RuleViolation> {
    let model = s.model_spec().expect("preset");
    layout_rule_violations(&model, s)
        .into_iter()
        .filter(|v| v.is_error())
        .collect()
}

fn first_last(first: u32, last: u32) -> StageSplit {
    StageSplit::FirstLast {
        first: Some(first),
        last: Some(last),
    }
}

/// 405B on 2,048 H100 (256 nodes): TP 8 × PP 16 × DP 16, 1F1B, batch 256 × 8K.
fn scenario(split: StageSplit) -> Scenario {
    let mut s = article_mesh_scenario();
    s.model = ModelChoice::Preset("llama-3.1-405b".into());
    s.cluster = Cluster {
        nodes: 256,
        ..s.cluster
    };
    s.training.seq_len = 8192;
    s.training.global_batch = 256;
    s.layout = Layout {
        dp: 16,
        tp: 8,
        pp: 16,
        zero: ZeroStage::Zero1,
        recompute: Recompute::Full,
        sequence_parallel: true,
        stage_split: split,
        ..Layout::default()
    };
    s
}

#[test]
fn the_405b_pp16_split_is_valid_and_its_stages_hold_7_8_7_layers() {
    let s = scenario(first_last(7, 7));
    let model = s.model_spec().expect("preset");
    let rules = errors(&s);
    assert!(rules.is_empty(), "{rules:?}");
    let params = model.param_breakdown();
    let spans = stage_spans_of(&params, &s.layout);
    let spans = spans.as_slice();
    // 126 − 7 − 7 = 112 over the 14 middle stages = 8 each.
    let layers: Vec<(StagePosition, u32, u32)> = spans
        .iter()
        .map(|x| (x.position, x.index, x.layers))
        .collect();
    assert_eq!(
        layers,
        [
            (StagePosition::First, 0, 7),
            (StagePosition::Middle, 1, 8),
            (StagePosition::Last, 15, 7),
        ]
    );
    assert_eq!((spans[1].first_layer, spans[2].first_layer), (7, 119));
}

#[test]
fn memory_of_the_first_stage_against_a_middle_one() {
    let s = scenario(first_last(7, 7));
    let model = s.model_spec().expect("preset");
    let mem = training_memory(&s, &model);
    let term = |stage: usize, key: &str| {
        mem.stages[stage]
            .terms
            .iter()
            .find(|t| t.key == key)
            .map(|t| t.value)
            .unwrap_or_else(|| panic!("{key} on stage {stage}"))
    };
    assert_eq!((mem.stages[0].layers, mem.stages[1].layers), (7, 8));
    // 1F1B holds p − r micro-batches on stage r (m = 256 / 16 = 16 ≥ p): stage 0 holds 16,
    // stage 1 holds 15. Full recompute keeps each layer's input only (the same A per layer
    // on both), so the layer activations are 16 × 7 A on the first stage against 15 × 8 A
    // on the second: a ratio of 112 / 120.
    let ratio = term(0, "activations.layers") / term(1, "activations.layers");
    assert!((ratio - 112.0 / 120.0).abs() < 1e-12, "{ratio}");
    // Parameters: the first stage holds 7 layers and the embedding, the middle one 8 layers.
    // Per TP rank: 7·(attention + FFN)/8 + 7·norms + V·h/8 against 8·(attention + FFN)/8 + 8·norms
    // (norms are replicated in the TP group).
    let p = model.param_breakdown();
    let scale = model.param_scale();
    let split = (p.attention_per_layer + p.dense_ffn_per_layer) as f64;
    let norms = p.norms_per_layer as f64;
    let first = (7.0 * split / 8.0 + 7.0 * norms + p.embedding as f64 / 8.0) * scale;
    let middle = (8.0 * split / 8.0 + 8.0 * norms) * scale;
    let params = |stage: usize| {
        planner_core::memory::model_state::rank_params(
            &model,
            &p,
            &s.layout,
            &stage_spans_of(&p, &s.layout).as_slice()[stage],
        )
        .total()
    };
    assert!(
        (params(0) / first - 1.0).abs() < 1e-9,
        "{} vs {first}",
        params(0)
    );
    assert!(
        (params(1) / middle - 1.0).abs() < 1e-9,
        "{} vs {middle}",
        params(1)
    );
    // 405B per TP rank: V·h/8 = 128,256 × 16,384 / 8 ≈ 263M, one layer ≈ 3.2B / 8 ≈ 400M, so
    // 7 layers + the embedding ≈ 3.06B < 8 layers ≈ 3.2B: the first stage holds fewer.
    assert!(params(0) < params(1));
}

#[test]
fn the_8_layer_middle_stage_sets_the_pace() {
    let uneven = scenario(first_last(7, 7));
    let model = uneven.model_spec().expect("preset");
    let sm = StepModel::new(&model, &uneven, CostOptions::default());
    let pace = sm.comm_inputs.pace(&uneven.layout);
    // LM head ≈ V·h / one layer's parameters = 2.10e9 / 3.19e9 ≈ 0.66 layers: the last stage's
    // 7 + 0.66 < 8, so stage 1 (8 layers) paces, 8 / (126 / 16) = 1.01587 × the average stage.
    assert!(
        (sm.comm_inputs.head_layers - 0.66).abs() < 0.01,
        "{}",
        sm.comm_inputs.head_layers
    );
    assert_eq!((pace.rank, pace.layers, pace.output), (1, 8.0, false));
    assert!((pace.layer_scale - 8.0 / 7.875).abs() < 1e-12);

    // The same chunks written as a list give the same step, term for term.
    let mut listed = uneven.clone();
    let mut chunks = vec![7];
    chunks.extend([8; 14]);
    chunks.push(7);
    listed.layout.stage_split = StageSplit::Chunks(chunks);
    let a = sm.evaluate(&uneven.layout).seconds;
    let b = sm.evaluate(&listed.layout).seconds;
    assert_eq!(a, b);

    // The even split of 126 layers over 16 stages gives the first 14 stages 8 layers and the
    // last two 7 (stage_split.rs `chunk_layers`), the last with the LM head: 7.66 < 8, so an
    // 8-layer stage paces it too, and its compute and bubble are the 7/7 split's.
    let mut even = uneven.clone();
    even.layout.stage_split = StageSplit::Even;
    let even_pace = sm.comm_inputs.pace(&even.layout);
    assert_eq!((even_pace.layers, even_pace.output), (8.0, false));
    let c = sm.evaluate(&even.layout).seconds;
    assert!((a.compute / c.compute - 1.0).abs() < 1e-12);
    assert!((a.bubble / c.bubble - 1.0).abs() < 1e-12);
}

#[test]
fn validation_names_the_split_field() {
    let v = errors(&scenario(first_last(7, 6)));
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        (v[0].field.as_str(), v[0].rule.as_str()),
        ("split", "stage_split_fits_layers")
    );
    // 126 − 7 − 6 = 113 layers over 14 middle stages.
    assert!(v[0].message.contains("113 layers left"), "{}", v[0].message);

    let mut big = scenario(StageSplit::Chunks(vec![8; 2000]));
    big.layout.pp = 16;
    let errors = big.validate().expect_err("too many chunks");
    assert!(errors
        .iter()
        .any(|e| e.field == "split" && e.message.contains("2000 chunks")));
}

#[test]
fn the_share_link_carries_the_split() {
    for split in [
        first_last(7, 7),
        StageSplit::AccountEmbeddingLoss {
            embedding: true,
            loss: true,
        },
        StageSplit::Chunks([7].into_iter().chain([8; 14]).chain([7]).collect()),
    ] {
        let s = scenario(split);
        let q = encode(&s);
        assert!(q.contains("split="), "{q}");
        assert_eq!(decode(&q).expect("decodes"), s);
    }
    // An even split writes nothing (old links stay as they were).
    assert!(!encode(&scenario(StageSplit::Even)).contains("split="));
    let bad = encode(&scenario(StageSplit::Even)) + "&split=fl:7:x";
    let errors = decode(&bad).expect_err("bad split");
    assert!(errors.iter().any(|e| e.field == "split"), "{errors:?}");
}

#[test]
fn exports_state_the_split_or_say_they_cannot() {
    let s = scenario(first_last(7, 7));
    let model = s.model_spec().expect("preset");
    let mega = export(ExportFormat::Megatron, &s, &model);
    assert!(
        mega.text.contains("--decoder-first-pipeline-num-layers 7"),
        "{}",
        mega.text
    );
    assert!(mega.text.contains("--decoder-last-pipeline-num-layers 7"));
    assert!(!mega
        .text
        .contains("--num-layers-per-virtual-pipeline-stage"));

    let mut acc = scenario(StageSplit::AccountEmbeddingLoss {
        embedding: true,
        loss: true,
    });
    acc.layout.pp = 8;
    acc.layout.dp = 32;
    acc.layout.schedule = Schedule::Interleaved;
    acc.layout.virtual_stages = 8;
    let mega = export(ExportFormat::Megatron, &acc, &model);
    assert!(mega
        .text
        .contains("--account-for-embedding-in-pipeline-split"));
    assert!(mega.text.contains("--account-for-loss-in-pipeline-split"));
    assert!(mega
        .text
        .contains("--num-virtual-stages-per-pipeline-rank 8"));

    let mut listed = scenario(StageSplit::Chunks(
        [7].into_iter().chain([8; 14]).chain([7]).collect(),
    ));
    listed.layout.recompute = Recompute::Full;
    let mega = export(ExportFormat::Megatron, &listed, &model);
    // One chunk per `|`: E + 7 layers, fourteen chunks of 8, 7 layers + L.
    let layout = format!("'Et*7|{}t*7L'", "t*8|".repeat(14));
    assert!(
        mega.text
            .contains(&format!("--pipeline-model-parallel-layout {layout}")),
        "{}",
        mega.text
    );

    let titan = export(ExportFormat::Torchtitan, &s, &model);
    assert!(
        titan.text.contains("module_fqns_per_model_part = ["),
        "{}",
        titan.text
    );
    assert!(titan
        .text
        .contains("[\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\", \"layers.3\", \"layers.4\", \"layers.5\", \"layers.6\"],"));
    assert!(titan.text.contains("\"layers.125\", \"norm\", \"output\"]"));

    let ds = export(ExportFormat::Deepspeed, &s, &model);
    assert!(
        ds.notes
            .iter()
            .any(|n| n.contains("cannot express the plan's uneven stage split")),
        "{:?}",
        ds.notes
    );
}
