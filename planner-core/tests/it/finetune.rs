//! Fine-tuning modes (LoRA, QLoRA): adapter counts, frozen and quantized base bytes,
//! the activations frozen layers no longer save, step time against full fine-tuning,
//! validation and share links. Every expected value is worked by hand in a comment.

use planner_core::edges::link;
use planner_core::evaluate::evaluate;
use planner_core::input::finetune::{
    adapter_params_total, Count, FineTune, FineTuneMode, LoraSettings, LoraTargets,
    DEQUANT_BYTES_PER_PARAM, NF4_DOUBLE_QUANT_BITS_PER_PARAM,
};
use planner_core::input::layout::{Recompute, ZeroStage};
use planner_core::input::model::ModelSpec;
use planner_core::input::precision::{Precision, PrecisionRecipe};
use planner_core::input::scenario::Scenario;
use planner_core::memory::activations::{extras_bytes, layer_bytes, ActivationSetup, LayerKind};
use planner_core::memory::training_memory::training_memory;
use planner_core::resolve::presets::model_preset;
use planner_core::time::cost::{CostOptions, StepModel};

/// q, k, v, o: the default targets.
const ATTENTION: LoraTargets =
    LoraTargets::from_flags([true, true, true, true, false, false, false]);
/// Every linear layer.
const ALL: LoraTargets = LoraTargets::from_flags([true; 7]);

fn lora(rank: u32, targets: LoraTargets) -> LoraSettings {
    LoraSettings {
        rank,
        alpha: 2 * rank,
        targets,
    }
}

fn ft(rank: u32, targets: LoraTargets) -> FineTune {
    FineTune {
        mode: FineTuneMode::Lora,
        lora: lora(rank, targets),
        ..FineTune::default()
    }
}

fn llama_8b() -> ModelSpec {
    model_preset("llama-3.1-8b").expect("preset")
}

/// Llama 3.1 8B on one node of 8 H100s, DP 8, ZeRO-1, in `mode` with r = 16 on q, k, v, o.
fn scenario_8b(mode: &str) -> Scenario {
    link::decode(&format!(
        "v=1&model=llama-3.1-8b&gpus=8&dp=8&tp=1&pp=1&zero=1&ft={mode}&lora_r=16&lora_mod=q,k,v,o"
    ))
    .expect("valid link")
}

fn term(s: &Scenario, key: &str) -> f64 {
    let model = s.model_spec().expect("model");
    let mem = training_memory(s, &model);
    mem.stages[0]
        .terms
        .iter()
        .find(|t| t.key == key)
        .unwrap_or_else(|| panic!("no term {key}"))
        .value
}

#[test]
fn llama_8b_lora_r16_attention_adapter_count() {
    // Hu et al. 2021 §4.1: r·(d_in + d_out) per targeted linear; Llama 3.1 8B: h = 4096,
    // 32 query heads and 8 KV heads of 128 → q, o: 4096 ↔ 4096, k, v: 4096 → 1024.
    // 32 × (16·(4096+4096) + 16·(4096+1024)·2 + 16·(4096+4096))
    //   = 32 × (131072 + 163840 + 131072) = 32 × 425984 = 13 631 488.
    assert_eq!(
        adapter_params_total(&llama_8b(), &ft(16, ATTENTION), Count::Trainable),
        13_631_488.0
    );
    // All seven linears at r = 64 (the QLoRA paper's setting), f = 14336: q, k, v, o
    // 64·(8192 + 5120 + 5120 + 8192) = 1 703 936; gate, up, down 3 × 64·(4096 + 14336)
    // = 3 538 944; per layer 5 242 880, × 32 = 167 772 160.
    assert_eq!(
        adapter_params_total(&llama_8b(), &ft(64, ALL), Count::Trainable),
        167_772_160.0
    );
}

#[test]
fn lora_base_weights_are_frozen_bf16_and_only_adapters_carry_state() {
    let s = scenario_8b("lora");
    // Ψ = 8 030 261 248 (embedding and LM head 128256 × 4096 each, untied); BF16: 2 B each.
    assert_eq!(term(&s, "model_state.base_weights"), 2.0 * 8_030_261_248.0);
    // Adapters: 13 631 488 × 2 B weights, × 2 B gradients, × 12 B (fp32 master + moments)
    // sharded by ZeRO-1 over dp = 8.
    let a = 13_631_488.0;
    assert_eq!(term(&s, "model_state.adapter_weights"), 2.0 * a);
    assert_eq!(term(&s, "model_state.adapter_gradients"), 2.0 * a);
    assert_eq!(term(&s, "model_state.adapter_optimizer"), 12.0 * a / 8.0);
    // No full-training state term survives.
    let model = s.model_spec().expect("model");
    let mem = training_memory(&s, &model);
    assert!(mem.stages[0]
        .terms
        .iter()
        .all(|t| !t.key.starts_with("model_state.gradients")
            && !t.key.starts_with("model_state.optimizer")));
}

#[test]
fn qlora_base_bytes_for_llama_8b() {
    // Dettmers et al. 2023 §3: 4 + 8/64 + 32/(64·256) = 4.126953125 bits per NF4 weight.
    assert_eq!(NF4_DOUBLE_QUANT_BITS_PER_PARAM, 4.126953125);
    let s = scenario_8b("qlora");
    // Not quantized: embedding + LM head 2 × 525 336 576, norms 32·2·4096 + 4096 = 266 240
    // → 1 050 939 392 params at fp32 (4 B) = 4 203 757 568 B.
    // Quantized linears: 8 030 261 248 − 1 050 939 392 = 6 979 321 856 × 4.126953125/8
    // = 3 600 416 768 B. Sum 7 804 174 336 B.
    assert_eq!(term(&s, "model_state.base_weights"), 7_804_174_336.0);
    // ZeRO-3 shards the frozen NF4 storage as well: ÷ 8.
    let mut z3 = s.clone();
    z3.layout.zero = ZeroStage::Zero3;
    assert!((term(&z3, "model_state.base_weights") - 7_804_174_336.0 / 8.0).abs() < 1.0);
}

#[test]
fn qlora_paper_65b_fits_under_48_gb_and_full_16_bit_needs_over_780_gb() {
    // QLoRA (Dettmers et al. 2023), abstract: finetuning a 65B model falls "from >780GB of GPU
    // memory to <48GB". LLaMA-65B shapes (Touvron et al. 2023 Table 2; HF config): 80 layers,
    // h = 8192, 64 heads, f = 22016, vocab 32000; the paper's r = 64 on all linear layers,
    // BF16 adapters with paged 32-bit AdamW (no fp32 master: recipe bf16-no-master).
    let m = ModelSpec {
        name: "LLaMA 65B".into(),
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 64,
        ffn: 22016,
        vocab: 32000,
        ..llama_8b()
    };
    let mut s = link::decode("v=1&gpus=8&dp=1&tp=1&pp=1&zero=0&gbs=8&mbs=1&ft=qlora&lora_r=64&lora_mod=q,k,v,o,gate,up,down&recompute=full&seq=512")
        .expect("valid link");
    s.model = planner_core::input::scenario::ModelChoice::Custom(m.clone());
    s.precision = Precision::from_recipe(PrecisionRecipe::Bf16NoMaster);
    let mem = training_memory(&s, &m);
    let state: f64 = mem.stages[0]
        .terms
        .iter()
        .filter(|t| t.key.starts_with("model_state."))
        .map(|t| t.value)
        .sum();
    // ≈ 33.4 GB NF4 + 2.1 GB fp32 embeddings + 799.5e6 adapters × 12 B = 9.6 GB ≈ 45.1 GB.
    assert!(state < 48e9, "QLoRA 65B model state {state}");
    assert!(state > 40e9, "QLoRA 65B model state {state}");
    // Full fine-tuning of the same model: 65.3e9 × 12 B (16-bit weights, gradients, Adam without
    // master) is already above 780 GB.
    s.training.finetune.mode = FineTuneMode::Full;
    let full = training_memory(&s, &m);
    assert!(full.peak_bytes > 780e9, "{}", full.peak_bytes);
}

#[test]
fn frozen_layers_drop_the_inputs_only_weight_gradients_need() {
    let model = llama_8b();
    let s = scenario_8b("full");
    let mut l = s.layout.clone();
    l.recompute = Recompute::None;
    let full_setup = ActivationSetup::new(
        &l,
        &s.training,
        &s.activations,
        &s.precision,
        s.overheads.moe_routing,
        s.overheads.framework,
    );
    let lora_s = scenario_8b("lora");
    let lora_setup = ActivationSetup::new(
        &l,
        &lora_s.training,
        &lora_s.activations,
        &lora_s.precision,
        lora_s.overheads.moe_routing,
        lora_s.overheads.framework,
    );
    let full = layer_bytes(&model, LayerKind::Dense, &full_setup);
    let with_lora = layer_bytes(&model, LayerKind::Dense, &lora_setup);
    // Adapters on q, k, v, o with flash attention: the gate/up input (h = 4096 values per token)
    // and the down-projection input (f = 14336) are saved only for frozen weights' gradients, so
    // they go; the four lora_A outputs (4 × r = 64 values) come in. BF16, s·b = 4096 tokens:
    // (4096 + 14336 − 64) × 2 × 4096 = 150 470 656 B less per layer.
    assert_eq!(full - with_lora, 150_470_656.0);
    // Last stage: the frozen LM head's input (h per token) is not saved: 4096 × 2 × 4096 B.
    let full_x = extras_bytes(&model, &full_setup, false, true);
    let lora_x = extras_bytes(&model, &lora_setup, false, true);
    assert_eq!(full_x - lora_x, 33_554_432.0);
}

#[test]
fn lora_step_time_against_full_fine_tuning() {
    // With attention and element-wise work negligible (seq 128, no memory-bound traffic),
    // full training costs 3 × forward and LoRA 2 × forward plus the adapters: the ratio of
    // compute seconds is 2/3 + (3 × 2Ψ_A/rate_A) / (3 × 2N/rate), a little over 2/3.
    let options = CostOptions {
        memory_bound_ops: false,
        ..CostOptions::default()
    };
    let at = |mode: &str| {
        let mut s = scenario_8b(mode);
        s.training.seq_len = 128;
        s.layout.recompute = Recompute::None;
        let model = s.model_spec().expect("model");
        let step = StepModel::new(&model, &s, options.clone());
        let placement = step.placement(&s.layout);
        (
            step.seconds(&s.layout, &placement),
            step.hbm_streaming_bytes_per_s(),
        )
    };
    let (full, _) = at("full");
    let (lora, _) = at("lora");
    let ratio = lora.compute / full.compute;
    assert!(ratio > 2.0 / 3.0 && ratio < 0.70, "ratio {ratio}");
    // QLoRA adds the dequantization of every NF4 linear weight before each forward and each
    // backward GEMM: 2 × m × 6 979 321 856 × (4.126953125/8 + 2) B / HBM bandwidth.
    let (qlora, hbm) = at("qlora");
    let m = qlora.micro_batches;
    let expected = 2.0 * m * 6_979_321_856.0 * DEQUANT_BYTES_PER_PARAM / hbm;
    let extra = qlora.compute - lora.compute;
    assert!(
        (extra - expected).abs() < 1e-9 * expected,
        "{extra} vs {expected}"
    );
    // The optimizer step touches only the adapters: 13 631 488 / 8 (ZeRO-1) × 32 B.
    assert!((lora.optimizer / full.optimizer - 13_631_488.0 / 8_030_261_248.0).abs() < 1e-12);
}

#[test]
fn gradient_traffic_covers_adapters_only() {
    let bytes = |mode: &str| {
        let s = scenario_8b(mode);
        let e = evaluate(&s).expect("evaluates");
        e.step
            .comms
            .iter()
            .filter(|c| c.purpose == planner_core::time::comms::Purpose::GradReduceScatter)
            .map(|c| c.message_bytes)
            .sum::<f64>()
    };
    // ZeRO-1 reduce-scatter of BF16 gradients: Ψ × 2 B in full training, 13 631 488 × 2 B with LoRA.
    assert_eq!(bytes("full"), 8_030_261_248.0 * 2.0);
    assert_eq!(bytes("lora"), 13_631_488.0 * 2.0);
}

#[test]
fn evaluation_reports_the_mode_and_its_peak_falls() {
    let full = evaluate(&scenario_8b("full")).expect("evaluates");
    assert!(full.finetune.is_none());
    let q = evaluate(&scenario_8b("qlora")).expect("evaluates");
    let summary = q.finetune.expect("summary");
    assert_eq!(summary.adapter_params, 13_631_488.0);
    assert!(summary.step_s < summary.full_step_s);
    assert!(q.training.peak_bytes < full.training.peak_bytes);
}

#[test]
fn validation_names_the_field() {
    let field = |q: &str| match link::decode(q) {
        Ok(_) => panic!("{q} accepted"),
        Err(e) => e[0].field.clone(),
    };
    assert_eq!(field("v=1&ft=lora&lora_r=0"), "lora_r");
    assert_eq!(field("v=1&ft=lora&lora_r=70000"), "lora_r");
    assert_eq!(field("v=1&ft=lora&lora_alpha=0"), "lora_alpha");
    assert_eq!(field("v=1&ft=qlora&lora_mod=none"), "lora_mod");
    assert_eq!(field("v=1&lora_mod=q,q"), "lora_mod");
    assert_eq!(field("v=1&lora_mod=q,%3Cscript%3E"), "lora_mod");
    assert_eq!(field("v=1&ft=half"), "ft");
    // Full fine-tuning with no targets is fine: adapters are not read.
    assert!(link::decode("v=1&ft=full&lora_mod=none").is_ok());
    // The same checks where a file enters.
    let mut s = scenario_8b("lora");
    s.training.finetune.lora.rank = 0;
    let json = serde_json::to_string(&s).expect("json");
    let errs = Scenario::from_json(&json).expect_err("refused");
    assert_eq!(errs[0].field, "training.finetune.lora.rank");
}

#[test]
fn links_and_files_round_trip_and_old_files_read_as_full() {
    for mode in ["lora", "qlora"] {
        let mut s = scenario_8b(mode);
        s.training.finetune.lora = lora(128, ALL);
        s.training.finetune.lora.alpha = 7;
        let q = link::encode(&s);
        assert!(q.contains(&format!("ft={mode}")), "{q}");
        assert_eq!(link::decode(&q).expect("decodes"), s);
        let json = serde_json::to_string(&s).expect("json");
        assert_eq!(Scenario::from_json(&json).expect("reads"), s);
    }
    // A default scenario writes no fine-tuning field and no link parameter, so old files,
    // links and goldens are unchanged; a file without the field reads as full fine-tuning.
    let d = planner_core::resolve::presets::default_scenario();
    let json = serde_json::to_string(&d).expect("json");
    assert!(!json.contains("finetune"));
    assert!(!link::encode(&d).contains("ft="));
    let back = Scenario::from_json(&json).expect("reads");
    assert_eq!(back.training.finetune, FineTune::default());
    assert_eq!(back.training.finetune.mode, FineTuneMode::Full);
}

#[test]
fn exports_carry_peft_settings_only_in_adapter_modes() {
    use planner_core::edges::export::{export, ExportFormat};
    let notes = |mode: &str, f: ExportFormat| {
        let s = scenario_8b(mode);
        let model = s.model_spec().expect("model");
        export(f, &s, &model).notes.join("\n")
    };
    let q = notes("qlora", ExportFormat::Torchrun);
    assert!(q.contains("r=16, lora_alpha=32"), "{q}");
    assert!(
        q.contains("\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\""),
        "{q}"
    );
    assert!(
        q.contains("bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True"),
        "{q}"
    );
    let m = notes("lora", ExportFormat::Megatron);
    assert!(
        m.contains("peft=LoRA(target_modules=[\"linear_qkv\", \"linear_proj\"], dim=16"),
        "{m}"
    );
    assert!(!m.contains("NF4"));
    assert!(notes("qlora", ExportFormat::Torchtitan).contains("every nn.Linear"));
    assert!(notes("qlora", ExportFormat::Vllm) == notes("full", ExportFormat::Vllm));
    assert!(!notes("full", ExportFormat::Deepspeed).contains("LoRA"));
}
