//! "Will it fit" (`search::fit`) and time per epoch (`time::epoch`).

use planner_core::input::finetune::FineTuneMode;
use planner_core::input::layout::{Recompute, ZeroStage};
use planner_core::input::model::ModelSpec;
use planner_core::input::scenario::Scenario;
use planner_core::memory::stage_peak::peak_memory_bytes;
use planner_core::memory::training_memory::training_memory;
use planner_core::resolve::presets::finetune_scenario;
use planner_core::search::fit::{applied, largest_fitting, will_it_fit, Change};
use planner_core::time::epoch::{epoch_time, Dataset};
use proptest::prelude::*;

/// A 24 GB card: the fine-tuning preset's GPU with 24 GB of device memory (a custom GPU, as a
/// person sets one with `gpu_mem`; the GPU presets have no 24 GB card yet).
fn on_24gb(mut s: Scenario) -> Scenario {
    s.cluster.gpu.memory_bytes = 24e9;
    s.cluster.gpu.id = "custom-24gb".to_string();
    s.cluster.gpu.name = "24 GB card (custom)".to_string();
    s.cluster.gpu.datasheet_memory_bytes = 24e9;
    s
}

fn model_of(s: &Scenario) -> ModelSpec {
    s.model_spec().expect("preset resolves")
}

fn peak(s: &Scenario, m: &ModelSpec) -> f64 {
    training_memory(s, m).peak_bytes
}

fn usable(s: &Scenario) -> f64 {
    s.cluster.gpu.memory_bytes * s.overheads.usable_fraction
}

#[test]
fn bisection_finds_the_last_value_that_fits() {
    // Doubling 1, 2, 4, ..., 64 passes 37; bisection between 32 and 64 lands on it.
    assert_eq!(largest_fitting(1, 1000, |x| x <= 37), Some(37));
    assert_eq!(largest_fitting(1, 1000, |x| x <= 1), Some(1));
    assert_eq!(largest_fitting(1, 1000, |_| true), Some(1000));
    assert_eq!(largest_fitting(1, 1000, |_| false), None);
    assert_eq!(
        largest_fitting(1, u32::MAX, |x| x <= 3_000_000_000),
        Some(3_000_000_000)
    );
}

#[test]
fn the_limits_sit_on_the_explained_models_edge() {
    let s = on_24gb(finetune_scenario());
    let m = model_of(&s);
    let r = will_it_fit(&s, &m).expect("valid scenario");
    assert!(r.current.fits, "8B QLoRA at 2,048 tokens fits 24 GB");
    assert!(r.fixes.is_empty());
    assert_eq!(r.usable_bytes, 24e9 * 0.9);
    // The largest micro-batch fits by training_memory and the next one does not (or the batch caps it).
    let b = r.max_micro_batch.expect("one sequence fits");
    let mut at = s.clone();
    at.layout.micro_batch = b;
    assert!(peak(&at, &m) <= usable(&s));
    if !r.micro_batch_capped {
        at.layout.micro_batch = b + 1;
        assert!(peak(&at, &m) > usable(&s));
    }
    let len = r.max_seq_len.expect("one token fits");
    let mut at = s.clone();
    at.training.seq_len = len;
    assert!(peak(&at, &m) <= usable(&s));
    at.training.seq_len = len + 1;
    assert!(peak(&at, &m) > usable(&s));
    assert!(len > 2048);
}

/// QLoRA 8B on a 24 GB card without recompute at 8,192 tokens: too long. The fixes must each fit
/// by the explained memory model, come cheapest first, and change only what they name.
#[test]
fn a_too_long_sequence_gets_fixes_that_fit_cheapest_first() {
    let mut s = on_24gb(finetune_scenario());
    s.training.seq_len = 4096;
    s.layout.recompute = Recompute::None;
    let m = model_of(&s);
    let r = will_it_fit(&s, &m).expect("valid scenario");
    assert!(!r.current.fits);
    assert_eq!(r.current.peak_bytes, peak(&s, &m));
    assert!(!r.fixes.is_empty());
    for f in &r.fixes {
        let after = applied(&s, &f.changes);
        assert!(peak(&after, &m) <= usable(&after), "{:?}", f.changes);
        assert_eq!(f.after.peak_bytes, peak(&after, &m));
        assert_eq!(
            f.gpu_seconds_delta,
            f.after.gpu_seconds() - r.current.gpu_seconds()
        );
    }
    for w in r.fixes.windows(2) {
        assert!(w[0].gpu_seconds_delta <= w[1].gpu_seconds_delta);
    }
    // Recompute is the fix for activations; it is listed and costs the recomputed forward.
    let recompute = r
        .fixes
        .iter()
        .find(|f| f.changes == [Change::FullRecompute])
        .expect("full recompute fits");
    assert!(recompute.step_delta_s > 0.0);
    // Already QLoRA: QLoRA is not offered again.
    assert!(r.fixes.iter().all(|f| !f.changes.contains(&Change::Qlora)));
}

#[test]
fn full_fine_tuning_of_8b_on_one_card_needs_a_combination_or_gpus() {
    let mut s = on_24gb(finetune_scenario());
    s.training.finetune.mode = FineTuneMode::Full;
    let m = model_of(&s);
    let r = will_it_fit(&s, &m).expect("valid scenario");
    assert!(!r.current.fits, "16 B/param × 8B = 128 GB of state");
    assert!(!r.fixes.is_empty());
    for f in &r.fixes {
        assert!(f.after.fits);
        let after = applied(&s, &f.changes);
        if after.layout.dp > 1 {
            assert_eq!(after.layout.zero, ZeroStage::Zero3);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Peak memory never falls when the micro-batch or the sequence grows: what the bisection rests on.
    #[test]
    fn peak_memory_is_monotone_in_micro_batch_and_sequence(
        b in 1u32..64, db in 0u32..64, seq in 1u32..65_536, dseq in 0u32..65_536,
        mode in 0usize..3, recompute in 0usize..3, flash in any::<bool>(), zero in 0u8..4,
    ) {
        let mut s = finetune_scenario();
        s.training.finetune.mode = FineTuneMode::ALL[mode];
        s.layout.recompute = Recompute::ALL[recompute];
        s.activations.flash_attention = flash;
        s.layout.zero = ZeroStage::from_number(zero).unwrap_or(ZeroStage::Ddp);
        s.training.global_batch = 256;
        let m = model_of(&s);
        let params = m.param_breakdown();
        let at = |b: u32, seq: u32| {
            let mut x = s.clone();
            x.layout.micro_batch = b;
            x.training.seq_len = seq;
            peak_memory_bytes(&m, &params, &x.precision, &x.layout, &x.training, &x.activations, &x.overheads)
        };
        prop_assert!(at(b, seq) <= at(b + db, seq));
        prop_assert!(at(b, seq) <= at(b, seq + dseq));
    }
}

#[test]
fn epoch_steps_by_packing() {
    let s = finetune_scenario();
    assert!(s.training.packing);
    // Packed: 16 × 2,048 = 32,768 tokens a step; 10M tokens: ⌈305.18⌉ = 306 steps.
    let e = epoch_time(&s.training, Dataset::Tokens { tokens: 10e6 }, 2.0).expect("valid");
    assert_eq!(e.tokens_per_step, 32_768.0);
    assert_eq!(e.steps, 306.0);
    assert_eq!(e.epoch_s, 612.0);
    // Packed examples: 50,000 × 700 = 35M tokens: ⌈1,068.1⌉ = 1,069 steps.
    let ex = Dataset::Examples {
        examples: 50_000.0,
        mean_tokens: 700.0,
    };
    assert_eq!(
        epoch_time(&s.training, ex, 1.0).expect("valid").steps,
        1069.0
    );
    // Unpacked: one example a sequence: ⌈50,000 / 16⌉ = 3,125 steps.
    let mut t = s.training.clone();
    t.packing = false;
    let e = epoch_time(&t, ex, 1.0).expect("valid");
    assert_eq!(e.steps, 3125.0);
    assert_eq!(e.tokens_per_step, 16.0 * 700.0);
    // Tokens alone without packing: the example count is missing, and the error says which input.
    let err = epoch_time(&t, Dataset::Tokens { tokens: 1e6 }, 1.0).expect_err("needs examples");
    assert_eq!(err.field, "dataset_tokens");
    let bad = Dataset::Examples {
        examples: 10.0,
        mean_tokens: f64::NAN,
    };
    assert_eq!(epoch_time(&t, bad, 1.0).expect_err("NaN").field, "mean_len");
}

/// LoRA (BF16 base, 16 GB) at 4,096 tokens without recompute: neither QLoRA nor recompute alone
/// fits 24 GB, so the answer is one greedy combination, which must hold both.
#[test]
fn when_no_single_change_fits_the_greedy_combination_does() {
    let mut s = on_24gb(finetune_scenario());
    s.training.finetune.mode = FineTuneMode::Lora;
    s.training.seq_len = 4096;
    s.layout.recompute = Recompute::None;
    let m = model_of(&s);
    let r = will_it_fit(&s, &m).expect("valid scenario");
    assert!(!r.current.fits);
    for single in [Change::Qlora, Change::FullRecompute] {
        assert!(
            peak(&applied(&s, &[single]), &m) > usable(&s),
            "{single:?} alone"
        );
    }
    assert_eq!(r.fixes.len(), 1);
    let combo = &r.fixes[0].changes;
    assert!(
        combo.contains(&Change::Qlora) && combo.contains(&Change::FullRecompute),
        "{combo:?}"
    );
    let after = applied(&s, combo);
    assert!(peak(&after, &m) <= usable(&after));
}

/// `examples/finetune-qlora-8b.json` is the fine-tuning preset on a 24 GB card (what the CLI
/// docs run); rewritten with `UPDATE_GOLDEN=1`.
#[test]
fn the_example_file_is_the_preset_on_24gb() {
    let s = on_24gb(finetune_scenario());
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/finetune-qlora-8b.json"
    );
    let want = serde_json::to_string_pretty(&s).expect("serializes") + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, &want).expect("write example");
    }
    let got = std::fs::read_to_string(path).expect("example exists");
    assert_eq!(got, want);
}

/// What each change writes into the scenario: offload raises the ZeRO stage to the one
/// DeepSpeed needs (ZeRO-Offload on stage 2; parameter offload and NVMe on stage 3), FSDP sets
/// ZeRO-3 over n ranks and adds nodes when one node has fewer GPUs.
#[test]
fn changes_write_what_their_tools_need() {
    use planner_core::input::offload::Offload;
    use planner_core::input::precision::PrecisionRecipe;
    let s = finetune_scenario();
    assert_eq!(
        (s.layout.zero, s.cluster.gpus_per_node, s.cluster.nodes),
        (ZeroStage::Ddp, 1, 1)
    );
    let cpu = applied(
        &s,
        &[Change::Offload {
            offload: Offload::OptimizerCpu,
        }],
    );
    assert_eq!(
        (cpu.training.offload, cpu.layout.zero),
        (Offload::OptimizerCpu, ZeroStage::Zero2)
    );
    let params = applied(
        &s,
        &[Change::Offload {
            offload: Offload::OptimizerParamsCpu,
        }],
    );
    assert_eq!(params.layout.zero, ZeroStage::Zero3);
    let nvme = applied(
        &s,
        &[Change::Offload {
            offload: Offload::OptimizerNvme,
        }],
    );
    assert_eq!(nvme.layout.zero, ZeroStage::Zero3);
    let fsdp = applied(&s, &[Change::Fsdp { gpus: 4 }]);
    assert_eq!((fsdp.layout.dp, fsdp.layout.zero), (4, ZeroStage::Zero3));
    assert_eq!((fsdp.cluster.gpus_per_node, fsdp.cluster.nodes), (1, 4));
    // 8-bit Adam: 2 + 2 + 4 + 2 = 10 B per trained parameter (Dettmers et al. 2022).
    let adam8 = applied(&s, &[Change::Adam8Bit]);
    assert_eq!(adam8.precision.recipe, PrecisionRecipe::Adam8Bit);
    assert_eq!(adam8.precision.model_state_bytes(), 10.0);
    assert_eq!(Change::Fsdp { gpus: 2 }.id(), "fsdp-2");
    assert_eq!(
        Change::Offload {
            offload: Offload::OptimizerCpu
        }
        .id(),
        "offload-opt-cpu"
    );
}

/// Two GPUs under DDP: ZeRO-3 over the same two is offered (no GPU added, so it is priced at
/// its own step time); under TP no FSDP change is offered (it would not span every GPU).
#[test]
fn fsdp_over_the_gpus_already_there_is_a_fix() {
    let mut s = on_24gb(finetune_scenario());
    s.training.finetune.mode = FineTuneMode::Lora;
    s.cluster.gpus_per_node = 2;
    s.layout.dp = 2;
    s.layout.recompute = Recompute::None;
    // Short sequences: under Transformers' semantics the activations of longer ones alone
    // outgrow half the base's saving.
    s.training.seq_len = 512;
    let m = model_of(&s);
    let r = will_it_fit(&s, &m).expect("valid scenario");
    assert!(
        !r.current.fits,
        "LoRA 8B: 16 GB of BF16 base on each of two GPUs"
    );
    let zero3 = r
        .fixes
        .iter()
        .find(|f| f.changes == [Change::Fsdp { gpus: 2 }])
        .expect("ZeRO-3 over the two GPUs fits");
    assert_eq!(zero3.after.gpus, 2);
    let mut tp = s.clone();
    tp.layout.dp = 1;
    tp.layout.tp = 2;
    let r = will_it_fit(&tp, &m).expect("valid scenario");
    assert!(r
        .fixes
        .iter()
        .all(|f| f.changes.iter().all(|c| !matches!(c, Change::Fsdp { .. }))));
}
