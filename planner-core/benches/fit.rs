//! How long "Will it fit" takes: the largest micro-batch, the longest sequence and the fixes,
//! for Llama 3.1 8B QLoRA on one 24 GB card, fitting and (at 4,096 tokens without recompute) not,
//! and LoRA at 4,096 tokens, where only a combination fits.

use criterion::{criterion_group, criterion_main, Criterion};
use planner_core::input::layout::Recompute;
use planner_core::resolve::presets::finetune_scenario;
use planner_core::search::fit::will_it_fit;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut fits = finetune_scenario();
    // A 24 GB card: the preset's GPU with 24 GB (a custom GPU; no 24 GB preset yet).
    fits.cluster.gpu.memory_bytes = 24e9;
    let Ok(model) = fits.model_spec() else {
        return;
    };
    let mut too_long = fits.clone();
    too_long.training.seq_len = 4096;
    too_long.layout.recompute = Recompute::None;
    // LoRA (BF16 base) at 4,096 tokens without recompute: no single change fits, so the greedy
    // combination runs too.
    let mut combined = too_long.clone();
    combined.training.seq_len = 4096;
    combined.training.finetune.mode = planner_core::input::finetune::FineTuneMode::Lora;
    c.bench_function(
        "will_it_fit llama-3.1-8b lora 24GB 4k greedy combination",
        |b| b.iter(|| will_it_fit(black_box(&combined), &model)),
    );
    c.bench_function("will_it_fit llama-3.1-8b qlora 24GB fits", |b| {
        b.iter(|| will_it_fit(black_box(&fits), &model))
    });
    c.bench_function("will_it_fit llama-3.1-8b qlora 24GB 8k no recompute", |b| {
        b.iter(|| will_it_fit(black_box(&too_long), &model))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
