//! How long one mesh-search evaluation of peak memory takes.

use criterion::{criterion_group, criterion_main, Criterion};
use planner_core::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use planner_core::input::precision::Precision;
use planner_core::input::scenario::{ActivationOptions, Overheads, Training};
use planner_core::memory::stage_peak::peak_memory_bytes;
use planner_core::resolve::presets::model_preset;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let Some(model) = model_preset("llama-3.1-70b") else {
        return;
    };
    let params = model.param_breakdown();
    let precision = Precision::default();
    let training = Training {
        seq_len: 8192,
        global_batch: 512,
        finetune: Default::default(),
        offload: Default::default(),
        packing: false,
    };
    let activations = ActivationOptions::default();
    let overheads = Overheads::default();
    let layout = Layout {
        dp: 4,
        tp: 8,
        pp: 4,
        virtual_stages: 5,
        schedule: Schedule::Interleaved,
        zero: ZeroStage::Zero1,
        recompute: Recompute::Selective,
        sequence_parallel: true,
        ..Layout::default()
    };
    c.bench_function("peak_memory_bytes llama-3.1-70b pp4", |b| {
        b.iter(|| {
            peak_memory_bytes(
                black_box(&model),
                black_box(&params),
                &precision,
                black_box(&layout),
                &training,
                &activations,
                &overheads,
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
