//! The fine-tuning stacks' memory semantics (issue 41 §1, §5): PEFT's methods counted as PEFT
//! counts them, the tensors Transformers' Llama code saves, a single process's gradients born in
//! backward, and a ratchet on `meshplan validate --memory`.

use planner_core::edges::validation::{run_validation, ValidationOptions, MEMORY_RUNS_JSON};
use planner_core::input::finetune::{
    adapter_params_total, Count, FineTune, FineTuneMode, LoraSettings, LoraTargets,
};
use planner_core::input::framework::Framework;
use planner_core::input::model::ModelSpec;
use planner_core::memory::activations::{layer_bytes, ActivationSetup, LayerKind};

/// meta-llama/Llama-3.2-3B config.json: 28 layers, h 3072, 24 heads, 8 KV of 128, f 8192,
/// vocab 128256, tied embeddings.
fn llama_32_3b() -> ModelSpec {
    let mut m = planner_core::resolve::presets::model_preset("llama-3.1-8b").expect("preset");
    m.name = "Llama 3.2 3B".into();
    m.layers = 28;
    m.hidden = 3072;
    m.heads = 24;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.ffn = 8192;
    m.vocab = 128_256;
    m.tied_embeddings = true;
    m.nominal_params = None;
    m
}

fn method(mode: FineTuneMode, rank: u32, targets: &str) -> FineTune {
    FineTune {
        mode,
        lora: LoraSettings {
            rank,
            alpha: 2 * rank,
            targets: LoraTargets::parse(targets).expect("targets"),
        },
        virtual_tokens: 200,
    }
}

#[test]
fn trainable_parameters_are_what_peft_prints() {
    // PEFT's print_trainable_parameters on Llama 3.2 3B (h 3072, q 3072, k/v 1024, f 8192, 28
    // layers), each from its formula:
    let m = llama_32_3b();
    let trainable = |ft: FineTune| adapter_params_total(&m, &ft, Count::Trainable);
    // LoRA r32 on q, v: 28 × 32·((3072 + 3072) + (3072 + 1024)) = 28 × 327,680.
    assert_eq!(
        trainable(method(FineTuneMode::Lora, 32, "q,v")),
        9_175_040.0
    );
    assert_eq!(
        trainable(method(FineTuneMode::Lora, 64, "q,v")),
        18_350_080.0
    );
    // DoRA adds one magnitude per output row: 28 × (3072 + 1024) = 114,688.
    assert_eq!(
        trainable(method(FineTuneMode::Dora, 32, "q,v")),
        9_289_728.0
    );
    // r10 on gate, up, down: 28 × 10·(2·(3072 + 8192) + (8192 + 3072)) = 28 × 337,920.
    assert_eq!(
        trainable(method(FineTuneMode::Lora, 10, "gate,up,down")),
        9_461_760.0
    );
    // LoRA-FA trains B only: 28 × 32·(3072 + 1024) = 3,670,016; A's 32·2·3072·28 stay frozen.
    let fa = method(FineTuneMode::LoraFa, 32, "q,v");
    assert_eq!(trainable(fa), 3_670_016.0);
    assert_eq!(adapter_params_total(&m, &fa, Count::All), 9_175_040.0);
    // IA3 on k, v (outputs) and down (its input, f): 28 × (1024 + 1024 + 8192) = 286,720.
    assert_eq!(
        trainable(method(FineTuneMode::Ia3, 8, "k,v,down")),
        286_720.0
    );
    // Prompt tuning: 200 virtual tokens × 3072.
    assert_eq!(
        trainable(method(FineTuneMode::PromptTuning, 8, "q")),
        614_400.0
    );
}

fn hf_setup(ft: &FineTune) -> ActivationSetup {
    let s = planner_core::edges::link::decode("v=1&model=llama-3.1-8b&gpus=8&dp=8&tp=1&pp=1")
        .expect("valid link");
    let mut layout = s.layout.clone();
    (
        layout.tp,
        layout.pp,
        layout.dp,
        layout.cp,
        layout.micro_batch,
    ) = (1, 1, 1, 1, 4);
    layout.sequence_parallel = false;
    layout.recompute = planner_core::input::layout::Recompute::None;
    let mut training = s.training.clone();
    training.seq_len = 768;
    training.finetune = *ft;
    ActivationSetup::new(
        &layout,
        &training,
        &s.activations,
        &s.precision,
        s.overheads.moe_routing,
        Framework::HfTransformers,
    )
}

#[test]
fn transformers_llama_layers_save_what_their_code_keeps() {
    let m = llama_32_3b();
    let tokens = 768.0 * 4.0;
    let per_token = |ft: FineTune| layer_bytes(&m, LayerKind::Dense, &hf_setup(&ft)) / tokens;
    // LoRA r32 on q, v with fp32 adapters, per token (h 3072, a 24, d 128, f 8192):
    //   two RMSNorm fp32 upcasts 2·4h = 24,576; fp32 input copies for q and v 2·4h = 24,576;
    //   SDPA Q and K, V repeated to 24 heads under the padding mask 3·2·3072 = 18,432; its
    //   output 2·3072 = 6,144 and fp32 log-sum-exp 4·24 = 96; SiLU's input, its output and
    //   up's output 3·2f = 49,152; lora_A outputs in fp32 2·4·32 = 256.  Total 123,232 B.
    assert_eq!(per_token(method(FineTuneMode::Lora, 32, "q,v")), 123_232.0);
    // Full fine-tuning: the norms' fp32 upcasts 24,576, their normed outputs before the weight
    // 2·2h = 12,288, the q/k/v and gate/up inputs 2·2h = 12,288, SDPA 18,432 + 6,144 + 96,
    // o_proj's input copy 6,144, the MLP's three 49,152 and down's input 2f = 16,384:
    // 145,504 B.
    assert_eq!(
        per_token(FineTune {
            mode: FineTuneMode::Full,
            ..method(FineTuneMode::Lora, 32, "q,v")
        }),
        145_504.0
    );
    // LoRA-FA: A frozen, so no input copies: 123,232 − 24,576 = 98,656.
    assert_eq!(per_token(method(FineTuneMode::LoraFa, 32, "q,v")), 98_656.0);
    // DoRA adds per module the BF16 base output and the fp32 LoRA output, 6·d_out:
    // 6·(3072 + 1024) = 24,576 over LoRA's 123,232.
    assert_eq!(per_token(method(FineTuneMode::Dora, 32, "q,v")), 147_808.0);
}

#[test]
fn a_single_transformers_process_holds_no_gradient_when_backward_starts() {
    // PEFT's MetaMathQA full fine-tuning row, as `meshplan validate --memory` maps it: the
    // gradients (2 B × 3.21e9) are reported at 0 at the backward peak and the peak is below
    // weights + gradients + moments + activations.
    let rows =
        planner_core::edges::validation::parse_runs(MEMORY_RUNS_JSON).expect("dataset parses");
    let run = rows
        .iter()
        .find(|r| r.id == "peft-mmqa-l32-3b-full")
        .expect("row");
    let mapped = planner_core::edges::validation::map_run(run).expect("representable");
    let s = &mapped.scenario;
    assert_eq!(s.overheads.framework, Framework::HfTransformers);
    let model = s.model_spec().expect("model");
    let mem = planner_core::memory::training_memory::training_memory(s, &model);
    let stage = &mem.stages[mem.peak_stage];
    let grads = stage
        .terms
        .iter()
        .find(|t| t.key.contains("gradients"))
        .expect("gradient term");
    assert_eq!(grads.value, 0.0);
    assert!(grads.label.contains("not yet allocated"));
    let sum: f64 = stage.terms.iter().map(|t| t.value).sum();
    assert!(
        (sum - stage.total_bytes).abs() < 1.0,
        "terms sum to the total"
    );
}

/// `meshplan validate --memory` today (session 24): reserved rows (PEFT) median 7.9%, max
/// 10.1%; allocated rows (the DeepSpeed gist) median 11.8%, max 99.0% (its parameter-offload
/// rows, docs/measurement-log.md). The ratchet: neither may fall back.
#[test]
fn the_memory_rows_do_not_fall_back() {
    let r = run_validation(MEMORY_RUNS_JSON, ValidationOptions { search: false })
        .expect("dataset parses");
    let group = |name: &str| {
        r.by_quantity
            .iter()
            .find(|g| g.group == name)
            .unwrap_or_else(|| panic!("group {name}"))
            .stats
            .clone()
    };
    let reserved = group("peak memory (reserved)");
    let allocated = group("peak memory (allocated)");
    assert_eq!(reserved.not_representable + allocated.not_representable, 0);
    assert_eq!(reserved.compared + allocated.compared, 19);
    let slack = 0.002;
    assert!(reserved.median.expect("median") <= 0.0795 + slack);
    assert!(reserved.max.expect("max") <= 0.1011 + slack);
    assert!(allocated.median.expect("median") <= 0.1181 + slack);
    assert!(allocated.max.expect("max") <= 0.9905 + slack);
}

#[test]
fn torchtune_adapters_read_their_modules_input_and_keep_the_rest_bf16() {
    use planner_core::memory::activations::ActivationSetup;
    let m = llama_32_3b();
    let ft = method(FineTuneMode::Lora, 32, "q,v");
    let mut setup: ActivationSetup = hf_setup(&ft);
    setup.peft_adapters = false;
    // torchtune: q and v share the first norm's BF16 output (2h = 6,144, once) instead of two
    // fp32 copies (24,576), and lora_a's outputs are BF16 (2·2·32 = 128, not 256):
    // 123,232 − 24,576 + 6,144 − 128 = 104,672 B per token.
    let per_token = layer_bytes(&m, LayerKind::Dense, &setup) / (768.0 * 4.0);
    assert_eq!(per_token, 104_672.0);
    // Its chunked cross entropy: BF16 chunks (2 B) and one chunk's two fp32 gradients (8 B / 8).
    let loss: f64 = planner_core::memory::loss_memory::loss_transients(Framework::Torchtune)
        .iter()
        .map(|t| t.bytes_per_logit)
        .sum();
    assert_eq!(loss, 3.0);
}

#[test]
fn torchtune_qlora_keeps_embeddings_and_norms_in_bf16() {
    let link = "v=1&model=llama-3.1-8b&gpus=8&dp=8&tp=1&pp=1&ft=qlora&lora_r=8&lora_mod=q,v";
    let mut s = planner_core::edges::link::decode(link).expect("valid link");
    let base = |s: &planner_core::input::scenario::Scenario| {
        let model = s.model_spec().expect("model");
        let mem = planner_core::memory::training_memory::training_memory(s, &model);
        mem.stages[0]
            .terms
            .iter()
            .find(|t| t.key == "model_state.base_weights")
            .expect("base term")
            .value
    };
    let peft = base(&s);
    s.overheads.framework = Framework::Torchtune;
    let tt = base(&s);
    // Llama 3.1 8B: embedding and LM head 2 × 128256 × 4096 = 1,050,673,152 parameters, norms
    // 32 × 2 × 4096 + 4096 = 266,240: PEFT casts them to fp32 (4 B), torchtune keeps BF16 (2 B).
    let unquantized = 1_050_673_152.0 + 266_240.0;
    assert!((peft - tt - 2.0 * unquantized).abs() < 1.0, "{peft} − {tt}");
}

#[test]
fn dora_recomputes_each_adapted_weights_norm_every_forward() {
    use planner_core::time::adapters::dora_norm_bytes;
    let m = planner_core::resolve::presets::model_preset("llama-3.1-8b").expect("preset");
    // Llama 3.1 8B, q (4096 → 4096) and v (4096 → 1024) over 32 layers: 34 B per weight element
    // (B·A written fp32, W cast to fp32, scaled, summed, normed) and 8 B per element of the
    // 4096 × 4096 fp32 identity, per module.
    let per_layer = 34.0 * 4096.0 * 4096.0
        + 8.0 * 4096.0 * 4096.0
        + 34.0 * 4096.0 * 1024.0
        + 8.0 * 4096.0 * 4096.0;
    let dora = method(FineTuneMode::Dora, 16, "q,v");
    assert_eq!(dora_norm_bytes(&m, &dora), 32.0 * per_layer);
    assert_eq!(
        dora_norm_bytes(&m, &method(FineTuneMode::Lora, 16, "q,v")),
        0.0
    );
    // And the step prices it: DoRA runs fewer tokens per second than LoRA on the same layout.
    let link = |ft: &str| {
        planner_core::edges::link::decode(&format!(
            "v=1&model=llama-3.1-8b&gpus=8&dp=8&tp=1&pp=1&ft={ft}&lora_r=16&lora_mod=q,v"
        ))
        .expect("valid link")
    };
    let step = |s: &planner_core::input::scenario::Scenario| {
        planner_core::evaluate::evaluate(s)
            .expect("evaluates")
            .step
            .tokens_per_s_per_gpu
    };
    assert!(step(&link("dora")) < step(&link("lora")));
}

#[test]
fn a_memory_row_names_its_stack_and_an_unknown_one_is_refused_by_name() {
    let rows = planner_core::edges::validation::parse_runs(MEMORY_RUNS_JSON).expect("parses");
    let mut run = rows
        .iter()
        .find(|r| r.id == "peft-mmqa-l32-3b-lora-r32")
        .expect("row")
        .clone();
    let framework_of = |run: &planner_core::edges::validation::PublishedRun| {
        planner_core::edges::validation::map_run(run).map(|m| m.scenario.overheads.framework)
    };
    assert_eq!(framework_of(&run), Ok(Framework::HfTransformers));
    run.framework = Some("torchtune 0.6 lora_finetune_single_device".into());
    assert_eq!(framework_of(&run), Ok(Framework::Torchtune));
    run.framework = Some("unsloth".into());
    let err = framework_of(&run).expect_err("not representable");
    assert!(err.contains("'unsloth'"), "{err}");
    run.framework = None;
    run.finetune = Some("vera".into());
    let err = framework_of(&run).expect_err("not representable");
    assert!(err.contains("'vera'"), "{err}");
}
