//! The mesh search's memory memo gives exactly (bit for bit) what the memory model gives
//! without it, whatever order the layouts come in: each step of a random walk changes one
//! field of the layout, so a stale entry that the memo's keys failed to tell apart would
//! show as a different peak.

use planner_core::input::finetune::FineTuneMode;
use planner_core::input::framework::Framework;
use planner_core::input::layout::{Layout, Recompute, Schedule, StageSplit, ZeroStage};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::memory::stage_peak::peak_memory_bytes;
use planner_core::resolve::presets::article_mesh_scenario;
use planner_core::search::memo::PeakMemo;
use proptest::prelude::*;

const MODELS: [&str; 4] = [
    "llama-3.1-70b",
    "llama-3.1-405b",
    "mixtral-8x7b",
    "deepseek-v3",
];

fn split(i: u8) -> StageSplit {
    match i % 5 {
        0 => StageSplit::Even,
        1 => StageSplit::FirstLast {
            first: Some(7),
            last: Some(7),
        },
        2 => StageSplit::AccountEmbeddingLoss {
            embedding: true,
            loss: true,
        },
        3 => StageSplit::LessLayers { first: 1, last: 1 },
        _ => StageSplit::Chunks(vec![20, 20, 20, 20]),
    }
}

/// One field of the layout set from `value`.
fn change(l: &mut Layout, field: u8, value: u8) {
    let pow2 = |v: u8| 1u32 << (v % 4);
    match field % 12 {
        0 => l.dp = pow2(value),
        1 => l.tp = pow2(value),
        2 => l.pp = [1, 2, 4, 8][usize::from(value % 4)],
        3 => l.cp = pow2(value),
        4 => l.ep = pow2(value),
        5 => l.expert_tp = pow2(value) % 4 + 1,
        6 => l.virtual_stages = u32::from(value % 3) + 1,
        7 => l.micro_batch = u32::from(value % 4) + 1,
        8 => l.zero = ZeroStage::ALL[usize::from(value) % ZeroStage::ALL.len()],
        9 => l.recompute = Recompute::ALL[usize::from(value) % Recompute::ALL.len()],
        10 => {
            l.schedule = [
                Schedule::OneFOneB,
                Schedule::Interleaved,
                Schedule::ZeroBubble,
                Schedule::Gpipe,
            ][usize::from(value % 4)]
        }
        _ => l.stage_split = split(value),
    }
    l.sequence_parallel = l.tp > 1;
}

fn scenario(model: usize, framework: u8, lora: bool) -> Scenario {
    let mut sc = article_mesh_scenario();
    sc.model = ModelChoice::Preset(MODELS[model % MODELS.len()].into());
    sc.overheads.framework = [
        Framework::Article,
        Framework::MegatronCore,
        Framework::Torchtitan,
    ][usize::from(framework % 3)];
    if lora {
        sc.training.finetune.mode = FineTuneMode::Lora;
    }
    sc
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn memo_equals_memory_model(
        model in 0usize..4,
        framework in 0u8..3,
        lora in any::<bool>(),
        walk in prop::collection::vec((0u8..12, any::<u8>()), 1..120),
    ) {
        let sc = scenario(model, framework, lora);
        let spec = sc.model_spec().expect("preset");
        let params = spec.param_breakdown();
        let mut memo = PeakMemo::new();
        let mut layout = sc.layout.clone();
        for (field, value) in walk {
            change(&mut layout, field, value);
            let want = peak_memory_bytes(
                &spec,
                &params,
                &sc.precision,
                &layout,
                &sc.training,
                &sc.activations,
                &sc.overheads,
            );
            let got = memo.peak_bytes(&spec, &params, &sc, &layout);
            prop_assert_eq!(got.to_bits(), want.to_bits(), "{:?}", layout);
        }
    }
}
