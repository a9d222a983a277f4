//! Memory as the GPU and PyTorch report it: device capacity, the loss's transients,
//! torchtitan's per-op selective checkpointing, allocated vs reserved vs device totals,
//! and the framework field in links. Every expected value is worked by hand.

use planner_core::edges::link;
use planner_core::input::framework::Framework;
use planner_core::input::hardware::{gpu_preset, Cluster, MIB};
use planner_core::input::layout::{Layout, Recompute, ZeroStage};
use planner_core::input::model::ModelSpec;
use planner_core::input::precision::Precision;
use planner_core::input::scenario::{
    ActivationOptions, ModelChoice, Overheads, Scenario, Serving, Training, SCENARIO_VERSION,
};
use planner_core::memory::activations::ActivationSetup;
use planner_core::memory::loss_memory::{logits_per_rank, loss_transient_bytes};
use planner_core::memory::torchtitan_sac::dense_layer_saved_bytes;
use planner_core::memory::training_memory::training_memory;
use planner_core::resolve::presets::{default_scenario, model_preset};

fn setup(
    seq_len: f64,
    micro_batch: f64,
    tp: u32,
    cp: u32,
    recompute: Recompute,
) -> ActivationSetup {
    ActivationSetup {
        seq_len,
        micro_batch,
        tp,
        cp,
        expert_tp: 1,
        ep: 1,
        moe_routing: Default::default(),
        sequence_parallel: tp > 1,
        recompute,
        flash_attention: true,
        fp32_logits: true,
        count_logits: true,
        activation_bytes: 2.0,
        adapters: None,
        method: planner_core::input::finetune::FineTuneMode::Full,
        eager_modules: false,
        peft_adapters: false,
        repeat_kv: false,
        gathered_tp_inputs: false,
    }
}

fn llama_8b() -> ModelSpec {
    model_preset("llama-3.1-8b").expect("preset")
}

#[test]
fn presets_carry_the_capacity_the_device_reports() {
    let mib = |id: &str| gpu_preset(id).expect("preset").memory_bytes / MIB;
    // nvidia-smi totals (cited in input/gpu_presets/): 81559 MiB = 85,520,809,984 bytes on an H100.
    assert_eq!(mib("h100-sxm"), 81_559.0);
    assert_eq!(
        gpu_preset("h100-sxm").expect("h100").memory_bytes,
        85_520_809_984.0
    );
    assert_eq!(mib("a100-80gb"), 81_920.0);
    assert_eq!(mib("a100-40gb"), 40_960.0);
    assert_eq!(mib("h800"), 81_559.0);
    assert_eq!(mib("h200"), 143_771.0);
    assert_eq!(mib("b200"), 183_359.0);
    assert_eq!(mib("gb200-nvl72"), 189_471.0);
    // rocm-smi 206141652992 B = 196,592 MiB.
    assert_eq!(mib("mi300x"), 196_592.0);
    // Derived: 98,304 − 361 and 262,144 − 16.
    assert_eq!(mib("h100-96gb"), 97_943.0);
    assert_eq!(mib("mi325x"), 262_128.0);
    // Labels stay the datasheet's decimal GB.
    let h100 = gpu_preset("h100-sxm").expect("h100");
    assert_eq!(h100.label_memory_bytes(), 80e9);
    let mem = training_memory(&default_scenario(), &default_model());
    assert_eq!(mem.capacity_label_bytes, 80e9);
    assert_eq!(mem.capacity_bytes, 85_520_809_984.0);
    // 0.9 × 85.52e9 = 76.97e9 usable.
    assert!((mem.usable_bytes - 0.9 * 85_520_809_984.0).abs() < 1.0);
}

fn default_model() -> ModelSpec {
    default_scenario().model_spec().expect("model")
}

#[test]
fn loss_transients_follow_the_framework() {
    let s = setup(8192.0, 2.0, 1, 1, Recompute::Selective);
    // (8192/1)·2 tokens × 128,256 vocab / 1 = 2,101,346,304 logits.
    assert_eq!(logits_per_rank(128_256, &s), 2_101_346_304.0);
    // torchtitan: nll_loss's fp32 grad + log_softmax's fp32 grad = 8 B × 2,101,346,304.
    assert_eq!(
        loss_transient_bytes(Framework::Torchtitan, 128_256, &s, true),
        16_810_770_432.0
    );
    // Megatron-Core with TP 8 and CP 2: (8192/2)·2 × 128,256/8 = 131,334,144 logits × 2 B.
    let t8 = setup(8192.0, 2.0, 8, 2, Recompute::Selective);
    assert_eq!(
        loss_transient_bytes(Framework::MegatronCore, 128_256, &t8, true),
        262_668_288.0
    );
    // The article's accounting adds none; no stage but the last holds the loss.
    assert_eq!(
        loss_transient_bytes(Framework::Article, 128_256, &s, true),
        0.0
    );
    assert_eq!(
        loss_transient_bytes(Framework::Torchtitan, 128_256, &s, false),
        0.0
    );
    // Logits not counted at all: no transient either.
    let off = ActivationSetup {
        count_logits: false,
        ..s
    };
    assert_eq!(
        loss_transient_bytes(Framework::Torchtitan, 128_256, &off, true),
        0.0
    );
}

#[test]
fn torchtitan_op_sac_saves_the_odd_mms() {
    // Llama 3.1 8B, T = 16,384 tokens: input 4096 + wq 4096 + wv 1024 + w1 14336 + w2 4096
    // + attention output 4096 = 31,744 values × 2 B, plus lse 32 heads × 4 B = 63,616 B/token.
    let s = setup(8192.0, 2.0, 1, 1, Recompute::Selective);
    assert_eq!(
        dense_layer_saved_bytes(&llama_8b(), &s),
        Some(63_616.0 * 16_384.0)
    );
    // TP 2 (torchtitan shards the sequence of norms): T = 16,384 tokens,
    // input 2048 + wq 2048 + wv 512 + w1 7168 + w2 4096 (row-parallel partial sum)
    // + attention 2048 + two reduce-scatter outputs 2 × 2048 = 22,016 values × 2 B,
    // plus lse 16 heads × 4 B = 44,096 B/token.
    let t2 = setup(8192.0, 2.0, 2, 1, Recompute::Selective);
    assert_eq!(
        dense_layer_saved_bytes(&llama_8b(), &t2),
        Some(44_096.0 * 16_384.0)
    );
}

/// torchtitan Table 1's first row (benchmarks/llama3_h100_202412_torchtitan.md):
/// Llama 3.1 8B, 8 × H100 96GB, FSDP 8, local batch 2, seq 8192, selective (op) AC.
fn torchtitan_t1(framework: Framework) -> Scenario {
    Scenario {
        version: SCENARIO_VERSION,
        model: ModelChoice::Preset("llama-3.1-8b".into()),
        precision: Precision::default(),
        cluster: Cluster::of(gpu_preset("h100-96gb").expect("gpu"), 1),
        training: Training {
            seq_len: 8192,
            global_batch: 16,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        layout: Layout {
            dp: 8,
            micro_batch: 2,
            zero: ZeroStage::Zero3,
            recompute: Recompute::Selective,
            ..Layout::default()
        },
        activations: ActivationOptions::default(),
        overheads: Overheads {
            framework,
            ..Overheads::default()
        },
        serving: Serving::default(),
        calibration: None,
        bill: Default::default(),
    }
}

#[test]
fn allocated_reserved_and_device_peaks_nest() {
    let s = torchtitan_t1(Framework::Torchtitan);
    let m = training_memory(&s, &llama_8b());
    let stage = &m.stages[0];
    let term = |k: &str| {
        stage
            .terms
            .iter()
            .find(|t| t.key == k)
            .map(|t| t.value)
            .unwrap_or(0.0)
    };
    // The loss term is the torchtitan transient worked above.
    assert_eq!(term("loss.transient"), 16_810_770_432.0);
    // 32 layers × 1,042,284,544 B saved by the op policy.
    assert_eq!(term("activations.layers"), 32.0 * 63_616.0 * 16_384.0);
    // reserved = allocated × (1 + 0.0655641, NVIDIA-NeMo #14850's measured gap); device =
    // reserved + 266,076,160 B context (PR #86509) + 1 × 167,772,160 B NCCL (16 ring channels).
    let f = planner_core::input::runtime_memory::reserved_over_allocated_fraction();
    assert!((stage.reserved_bytes - (1.0 + f) * stage.allocated_bytes).abs() < 1.0);
    assert!(
        (stage.total_bytes - (stage.reserved_bytes + 266_076_160.0 + 167_772_160.0)).abs() < 1.0
    );
    assert_eq!(m.peak_reserved_bytes, stage.reserved_bytes);
    assert_eq!(m.peak_allocated_bytes, stage.allocated_bytes);
    assert_eq!(m.peak_bytes, stage.total_bytes);
    // The terms still sum to the device total.
    let sum: f64 = stage.terms.iter().map(|t| t.value).sum();
    assert!(
        (sum - stage.total_bytes).abs() < 1e3,
        "{sum} vs {}",
        stage.total_bytes
    );
    assert_eq!(m.framework, Framework::Torchtitan);
    // The article's accounting of the same run has no loss transient and Korthikanti's
    // selective recompute (which keeps more than torchtitan's op policy for Llama).
    let article = training_memory(&torchtitan_t1(Framework::Article), &llama_8b());
    assert!(!article.stages[0]
        .terms
        .iter()
        .any(|t| t.key == "loss.transient"));
    assert!(article.peak_allocated_bytes > m.peak_allocated_bytes - 16_810_770_432.0);
}

#[test]
fn framework_travels_in_links_and_is_checked() {
    let mut s = default_scenario();
    s.overheads.framework = Framework::Torchtitan;
    let q = link::encode(&s);
    assert!(q.contains("framework=torchtitan"), "{q}");
    let back = link::decode(&q).expect("decodes");
    assert_eq!(back.overheads.framework, Framework::Torchtitan);
    // The default is not written.
    assert!(!link::encode(&default_scenario()).contains("framework="));
    let errs = link::decode("framework=deepspeed-9").expect_err("refused");
    assert!(errs.iter().any(|e| e.field == "framework"), "{errs:?}");
    // A scenario file without the field takes the default.
    let mut json = serde_json::to_value(default_scenario()).expect("json");
    if let Some(o) = json["overheads"].as_object_mut() {
        o.remove("framework");
    }
    let parsed = Scenario::from_json(&json.to_string()).expect("parses");
    assert_eq!(parsed.overheads.framework, Framework::Article);
}

/// The time model recomputes what the memory model does not save under torchtitan's per-op
/// policy: the even-numbered mms wk, wo, w3 of each layer (not the SDPA), plus the layer's
/// element-wise forward, and counts them in HFU.
#[test]
fn torchtitan_op_sac_recomputes_the_unsaved_mms() {
    use planner_core::input::sac_policy::recomputed_matmul_flops_per_token;
    use planner_core::time::cost::{CostOptions, StepModel};
    // Llama 3.1 8B per token per layer: 2 · (4096·1024 wk + 4096·4096 wo + 4096·14336 w3)
    // = 2 · 79,691,776 = 159,383,552 FLOPs; w2 is the block's last mm and is saved anyway.
    assert_eq!(
        recomputed_matmul_flops_per_token(&llama_8b(), false),
        Some(159_383_552.0)
    );
    // Under TP, wo's output goes only to its reduce-scatter, whose output is saved: wk and w3,
    // 2 · (4,194,304 + 58,720,256) = 125,829,120.
    assert_eq!(
        recomputed_matmul_flops_per_token(&llama_8b(), true),
        Some(125_829_120.0)
    );
    let s = torchtitan_t1(Framework::Torchtitan);
    let model = llama_8b();
    let step = StepModel::for_scenario(&model, &s, CostOptions::default());
    let sac = step.op_sac.expect("torchtitan selective is the op policy");
    assert_eq!(sac.matmul_flops_per_token, 32.0 * 159_383_552.0);
    assert_eq!(sac.dense_share, 1.0);
    // One micro-batch of 16,384 tokens on one GPU: the mms at the GEMM rate plus the layers'
    // element-wise forward; no attention core.
    let layout = &s.layout;
    let rate = step.peak_flops_per_s
        * step.peak_gemm_efficiency_ratio
        * step.gemm_power_fraction()
        * step.gemm_efficiency(layout);
    let [elem_f, ..] = step.memory_bound_seconds(layout);
    let expected = 16_384.0 * 32.0 * 159_383_552.0 / rate + elem_f;
    let got = step.seconds(layout, &step.placement(layout)).recompute;
    assert!(
        (got - expected).abs() < 1e-9 * expected,
        "{got} s recomputed, {expected} s expected"
    );
    assert_eq!(
        step.hardware_flops_per_token(Recompute::Selective, 1) - step.flops.model(),
        32.0 * 159_383_552.0
    );
    // Outside torchtitan, selective is Korthikanti's: the attention core again.
    let article = StepModel::for_scenario(
        &model,
        &torchtitan_t1(Framework::Article),
        CostOptions::default(),
    );
    assert!(article.op_sac.is_none());
    assert_eq!(
        article.hardware_flops_per_token(Recompute::Selective, 1) - article.flops.model(),
        article.flops.attention_forward
    );
}
