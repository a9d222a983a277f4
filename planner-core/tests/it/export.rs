//! Framework exports: golden files for the article's scenarios and a MoE example,
//! consistency checks a reader could get wrong, and no-panic properties.
//!
//! `UPDATE_GOLDEN=1 cargo test -p planner-core --test export` rewrites the golden files.

use std::path::PathBuf;

use planner_core::edges::export::{export, exports, Export, ExportFormat};
use planner_core::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use planner_core::input::scenario::{ModelChoice, Scenario, ServeDtype};
use planner_core::resolve::presets::{
    article_70b_scenario, article_mesh_scenario, default_scenario,
};
use proptest::prelude::*;

/// Mixtral 8x7B on 4 nodes × 8 H100: TP 2, PP 2, DP 8 with EP 8 over the DP ranks,
/// ZeRO-1, interleaved 1F1B with 2 virtual stages, full recompute; served FP8 on TP 4.
fn mixtral_ep_scenario() -> Scenario {
    let mut s = default_scenario();
    s.model = ModelChoice::Preset("mixtral-8x7b".to_string());
    s.cluster.nodes = 4;
    s.training.seq_len = 4096;
    s.training.global_batch = 256;
    s.layout = Layout {
        dp: 8,
        tp: 2,
        pp: 2,
        cp: 1,
        ep: 8,
        expert_tp: 1,
        virtual_stages: 2,
        micro_batch: 1,
        schedule: Schedule::Interleaved,
        zero: ZeroStage::Zero1,
        recompute: Recompute::Full,
        sequence_parallel: true,
        stage_split: planner_core::input::layout::StageSplit::Even,
    };
    s.serving.tp = 4;
    s.serving.weight_dtype = ServeDtype::Fp8;
    s.serving.kv_dtype = ServeDtype::Fp8;
    s.serving.context_len = 32_768;
    s.serving.target_concurrency = 64;
    s
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/export")
}

/// Text then notes, the way a reader sees an export.
fn render(e: &Export) -> String {
    let mut out = e.text.clone();
    out.push_str("\n---- notes ----\n");
    for n in &e.notes {
        out.push_str("- ");
        out.push_str(n);
        out.push('\n');
    }
    out
}

fn check_golden(case: &str, s: &Scenario) {
    let model = s.model_spec().expect("test scenarios use known presets");
    let dir = golden_dir().join(case);
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    if update {
        std::fs::create_dir_all(&dir).expect("create golden dir");
    }
    for e in exports(s, &model) {
        let path = dir.join(e.file_name);
        let got = render(&e);
        if update {
            std::fs::write(&path, &got).expect("write golden");
        } else {
            let want = std::fs::read_to_string(&path).unwrap_or_else(|err| {
                panic!("{}: {err} (run with UPDATE_GOLDEN=1)", path.display())
            });
            assert_eq!(
                got, want,
                "{case}/{} differs from its golden file",
                e.file_name
            );
        }
    }
}

#[test]
fn golden_article_mesh() {
    check_golden("article-mesh", &article_mesh_scenario());
}

#[test]
fn golden_article_70b_ddp() {
    check_golden("article-70b-ddp", &article_70b_scenario());
}

#[test]
fn golden_article_70b_zero3() {
    let mut s = article_70b_scenario();
    s.layout.zero = ZeroStage::Zero3;
    check_golden("article-70b-zero3", &s);
}

#[test]
fn golden_mixtral_ep() {
    check_golden("mixtral-8x7b-ep", &mixtral_ep_scenario());
}

fn one(f: ExportFormat, s: &Scenario) -> Export {
    let model = s.model_spec().expect("known preset");
    export(f, s, &model)
}

fn has_line(e: &Export, line: &str) -> bool {
    e.text.lines().any(|l| l.trim() == line)
}

#[test]
fn every_format_once_in_order() {
    let s = article_mesh_scenario();
    let model = s.model_spec().expect("known preset");
    let ids: Vec<&str> = exports(&s, &model).iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        [
            "torchrun",
            "accelerate",
            "deepspeed",
            "megatron",
            "torchtitan",
            "torchtune",
            "trl",
            "vllm",
            "sglang"
        ]
    );
    for f in ExportFormat::ALL {
        assert_eq!(ExportFormat::from_id(f.id()), Some(f));
    }
}

#[test]
fn article_mesh_megatron_degrees() {
    let e = one(ExportFormat::Megatron, &article_mesh_scenario());
    for line in [
        "--tensor-model-parallel-size 8",
        "--pipeline-model-parallel-size 4",
        "--context-parallel-size 4",
        "--sequence-parallel",
        "--use-distributed-optimizer",
        "--recompute-granularity selective",
        "--micro-batch-size 1",
        "--global-batch-size 64",
        "--seq-length 32768",
        "--num-layers 80",
        "--group-query-attention",
        "--num-query-groups 8",
        "--tokenizer-model meta-llama/Llama-3.1-70B",
    ] {
        assert!(has_line(&e, line), "missing {line}:\n{}", e.text);
    }
    // A dense model gets no expert flags.
    assert!(!e.text.contains("--expert-model-parallel-size"));
}

#[test]
fn deepspeed_batch_is_consistent() {
    // Article 70B: 512 sequences, micro-batch 1, DP 64 → 8 accumulation steps.
    let e = one(ExportFormat::Deepspeed, &article_70b_scenario());
    let v: serde_json::Value = serde_json::from_str(&e.text).expect("valid JSON");
    assert_eq!(v["train_batch_size"], 512);
    assert_eq!(v["train_micro_batch_size_per_gpu"], 1);
    assert_eq!(v["gradient_accumulation_steps"], 8);
    assert_eq!(v["zero_optimization"]["stage"], 0);
    assert_eq!(v["bf16"]["enabled"], true);
}

#[test]
fn torchtitan_microbatches_match_the_plan() {
    // Article mesh: 64 sequences over DP 4 = 16 per rank, micro-batch 1 → m = 16.
    let e = one(ExportFormat::Torchtitan, &article_mesh_scenario());
    assert!(has_line(&e, "local_batch_size = 16"), "{}", e.text);
    assert!(has_line(&e, "pipeline_parallel_microbatch_size = 1"));
    assert!(has_line(&e, "pipeline_parallel_schedule = \"1F1B\""));
    assert!(has_line(&e, "context_parallel_degree = 4"));
}

#[test]
fn torchtitan_zero_stage_maps_to_dp_degrees() {
    let mut s = article_70b_scenario();
    let e = one(ExportFormat::Torchtitan, &s);
    assert!(has_line(&e, "data_parallel_replicate_degree = 64"));
    assert!(has_line(&e, "data_parallel_shard_degree = 1"));
    s.layout.zero = ZeroStage::Zero3;
    let e = one(ExportFormat::Torchtitan, &s);
    assert!(has_line(&e, "data_parallel_replicate_degree = 1"));
    assert!(has_line(&e, "data_parallel_shard_degree = 64"));
    assert!(has_line(&e, "fsdp_reshard_after_forward = \"always\""));
}

#[test]
fn megatron_has_no_zero3_flag_but_says_so() {
    let mut s = article_70b_scenario();
    s.layout.zero = ZeroStage::Zero3;
    let e = one(ExportFormat::Megatron, &s);
    assert!(!e.text.contains("--use-distributed-optimizer"));
    assert!(e
        .notes
        .iter()
        .any(|n| n.contains("ZeRO-3 is not a Megatron-LM option")));
}

#[test]
fn fsdp2_for_article_mesh_notes_missing_tp_pp() {
    let e = one(ExportFormat::Accelerate, &article_mesh_scenario());
    assert!(has_line(&e, "fsdp_version: 2"));
    assert!(has_line(
        &e,
        "fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer"
    ));
    assert!(e.notes.iter().any(|n| n.contains("TP 8, PP 4, CP 4")));
}

#[test]
fn mixtral_expert_flags() {
    let s = mixtral_ep_scenario();
    let m = one(ExportFormat::Megatron, &s);
    for line in [
        "--expert-model-parallel-size 8",
        "--expert-tensor-parallel-size 1",
        "--num-experts 8",
        "--moe-router-topk 2",
        "--moe-ffn-hidden-size 14336",
        // 32 layers / (PP 2 × 2 virtual stages) = 8.
        "--num-layers-per-virtual-pipeline-stage 8",
        "--recompute-granularity full",
    ] {
        assert!(has_line(&m, line), "missing {line}:\n{}", m.text);
    }
    let v = one(ExportFormat::Vllm, &s);
    assert!(has_line(&v, "--kv-cache-dtype fp8 \\"), "{}", v.text);
    assert!(has_line(&v, "--quantization fp8"), "{}", v.text);
    let g = one(ExportFormat::Sglang, &s);
    assert!(has_line(&g, "--kv-cache-dtype fp8_e4m3 \\"), "{}", g.text);
}

fn arb_scenario() -> impl Strategy<Value = Scenario> {
    let presets = [
        "llama-3.1-8b",
        "llama-3.1-70b",
        "mixtral-8x7b",
        "deepseek-v3",
        "qwen2.5-72b",
        "gpt3-175b",
    ];
    (
        (
            0usize..presets.len(),
            1u32..=64,
            1u32..=16,
            1u32..=8,
            1u32..=8,
        ),
        (1u32..=4, 1u32..=8, 1u32..=4, 1u32..=4, 0u8..=3),
        (0usize..4, 0usize..3, 1u32..=4096, 0usize..4, 0usize..4),
    )
        .prop_map(
            move |((p, nodes, dp, tp, pp), (cp, ep, vpp, mbs, zero), (sch, rec, gbs, w, kv))| {
                let mut s = default_scenario();
                s.model = ModelChoice::Preset(presets[p].to_string());
                s.cluster.nodes = nodes;
                s.training.global_batch = gbs;
                s.layout = Layout {
                    dp,
                    tp,
                    pp,
                    cp,
                    ep,
                    expert_tp: 1,
                    virtual_stages: vpp,
                    micro_batch: mbs,
                    schedule: Schedule::ALL[sch],
                    zero: ZeroStage::ALL[usize::from(zero)],
                    recompute: Recompute::ALL[rec],
                    sequence_parallel: tp > 1,
                    stage_split: planner_core::input::layout::StageSplit::Even,
                };
                s.serving.weight_dtype = ServeDtype::ALL[w];
                s.serving.kv_dtype = ServeDtype::ALL[kv];
                s
            },
        )
}

proptest! {
    #[test]
    fn exports_never_panic_and_deepspeed_is_json(s in arb_scenario()) {
        let model = s.model_spec().expect("preset");
        let all = exports(&s, &model);
        prop_assert_eq!(all.len(), ExportFormat::ALL.len());
        let ds = &all[2];
        let v: serde_json::Value = serde_json::from_str(&ds.text).expect("DeepSpeed export is JSON");
        // When DeepSpeed gets a batch, global = micro × accumulation × DP holds exactly.
        if let Some(g) = v.get("train_batch_size").and_then(|g| g.as_u64()) {
            let micro = v["train_micro_batch_size_per_gpu"].as_u64().unwrap_or(0);
            let acc = v["gradient_accumulation_steps"].as_u64().unwrap_or(0);
            prop_assert_eq!(g, micro * acc * u64::from(s.layout.dp));
        }
    }
}

proptest! {
    /// Exports are also built for unvalidated scenarios (the app shows them while the
    /// user types): zeros and huge values must give text and notes, never a panic.
    #[test]
    fn exports_survive_unvalidated_layouts(
        dp in prop_oneof![Just(0u32), Just(u32::MAX), 1u32..=64],
        tp in prop_oneof![Just(0u32), Just(u32::MAX), 1u32..=8],
        pp in prop_oneof![Just(0u32), Just(u32::MAX), 1u32..=8],
        vpp in prop_oneof![Just(0u32), Just(u32::MAX), 1u32..=4],
        mbs in prop_oneof![Just(0u32), Just(u32::MAX), 1u32..=4],
        gbs in prop_oneof![Just(0u32), Just(u32::MAX), 1u32..=512],
        gpn in prop_oneof![Just(0u32), 1u32..=8],
        serve_tp in prop_oneof![Just(0u32), Just(u32::MAX), 1u32..=8],
    ) {
        let mut s = mixtral_ep_scenario();
        s.layout.dp = dp;
        s.layout.tp = tp;
        s.layout.pp = pp;
        s.layout.cp = dp;
        s.layout.ep = tp;
        s.layout.virtual_stages = vpp;
        s.layout.micro_batch = mbs;
        s.training.global_batch = gbs;
        s.cluster.gpus_per_node = gpn;
        s.serving.tp = serve_tp;
        s.serving.pp = serve_tp;
        let model = s.model_spec().expect("preset");
        prop_assert_eq!(exports(&s, &model).len(), ExportFormat::ALL.len());
    }
}

#[test]
fn torchtitan_refuses_ep_not_a_multiple_of_tp() {
    // With expert-TP 1, torchtitan's EP group is cut from dp_shard × CP × TP: EP 2 with TP 4 cannot be.
    let mut s = mixtral_ep_scenario();
    s.layout.tp = 4;
    s.layout.dp = 4;
    s.layout.ep = 2;
    let e = one(ExportFormat::Torchtitan, &s);
    assert!(
        e.notes.iter().any(|n| n.contains("torchtitan will refuse")),
        "{:?}",
        e.notes
    );
}

/// The overlap a plan was priced with reaches Megatron-LM as its (default-off) switches:
/// the article's accounting overlaps gradient reduction and the ZeRO-1 parameter gather, so
/// the Mixtral plan (DP 8, ZeRO-1, sequence parallel) asks for both; TP overlap switched on
/// adds `--tp-comm-overlap`; Megatron-Core's own defaults (all off) add none of them.
#[test]
fn megatron_overlap_flags_follow_the_plan() {
    use planner_core::input::framework::Framework;
    use planner_core::input::overlap::Switch;
    let flags = |e: &Export| {
        [
            "--overlap-grad-reduce",
            "--overlap-param-gather",
            "--tp-comm-overlap",
        ]
        .map(|f| e.text.contains(f))
    };
    let mut s = mixtral_ep_scenario();
    assert_eq!(flags(&one(ExportFormat::Megatron, &s)), [true, true, false]);
    s.overheads.overlap.tp_comm = Switch::On;
    assert_eq!(flags(&one(ExportFormat::Megatron, &s)), [true, true, true]);
    s.overheads.overlap.tp_comm = Switch::Default;
    s.overheads.framework = Framework::MegatronCore;
    assert_eq!(
        flags(&one(ExportFormat::Megatron, &s)),
        [false, false, false]
    );
    // DDP has no distributed optimizer to gather from.
    s.overheads.framework = Framework::Article;
    s.layout.zero = ZeroStage::Ddp;
    assert_eq!(
        flags(&one(ExportFormat::Megatron, &s)),
        [true, false, false]
    );
}

/// TP overlap reaches torchtitan as its async TP (job_config.py
/// `parallelism.enable_async_tensor_parallel`) with torch.compile on, which async TP needs;
/// with TP 1 or the overlap off, neither line appears.
#[test]
fn torchtitan_async_tp_follows_the_plans_tp_overlap() {
    use planner_core::input::framework::Framework;
    use planner_core::input::overlap::Switch;
    let lines = |e: &Export| {
        [
            has_line(e, "enable_async_tensor_parallel = true"),
            has_line(e, "[compile]") && has_line(e, "enable = true"),
        ]
    };
    let mut s = mixtral_ep_scenario();
    s.overheads.framework = Framework::Torchtitan;
    s.layout.tp = 2;
    assert_eq!(lines(&one(ExportFormat::Torchtitan, &s)), [false, false]);
    s.overheads.overlap.tp_comm = Switch::On;
    let e = one(ExportFormat::Torchtitan, &s);
    assert_eq!(lines(&e), [true, true]);
    assert!(
        e.notes.iter().any(|n| n.contains("async TP")),
        "{:?}",
        e.notes
    );
    s.layout.tp = 1;
    assert_eq!(lines(&one(ExportFormat::Torchtitan, &s)), [false, false]);
}

/// EP overlap reaches Megatron-LM as `--overlap-moe-expert-parallel-comm` (arguments.py, off
/// by default) when the layout meets its requirements (transformer_config.py: ep > 1, no full
/// recompute, virtual stages when pp > 1); otherwise the export says it was priced without.
#[test]
fn megatron_ep_overlap_flag_follows_the_plan() {
    use planner_core::input::layout::Recompute;
    use planner_core::input::overlap::Switch;
    let flag = "--overlap-moe-expert-parallel-comm";
    let mut s = mixtral_ep_scenario();
    assert!(!one(ExportFormat::Megatron, &s).text.contains(flag));
    s.overheads.overlap.ep_comm = Switch::On;
    s.layout.recompute = Recompute::Selective;
    let e = one(ExportFormat::Megatron, &s);
    assert!(e.text.contains(flag), "{}", e.text);
    s.layout.recompute = Recompute::Full;
    let e = one(ExportFormat::Megatron, &s);
    assert!(!e.text.contains(flag), "{}", e.text);
    assert!(
        e.notes.iter().any(|n| n.contains("full recompute")),
        "{:?}",
        e.notes
    );
}

/// A capacity factor reaches Megatron-LM as `--moe-expert-capacity-factor`, padding as
/// `--moe-pad-expert-input-to-capacity` (arguments.py `_add_moe_args`); dropless writes
/// neither; torchtitan, dropless only, says it cannot express one.
#[test]
fn moe_routing_reaches_megatron_flags_and_torchtitan_notes() {
    use planner_core::input::moe_routing::MoeRouting;
    let mut s = mixtral_ep_scenario();
    let flags = |e: &Export| {
        [
            e.text.contains("--moe-expert-capacity-factor"),
            e.text.contains("--moe-pad-expert-input-to-capacity"),
        ]
    };
    assert_eq!(flags(&one(ExportFormat::Megatron, &s)), [false, false]);
    s.overheads.moe_routing = MoeRouting {
        capacity_factor: Some(1.25),
        pad_to_capacity: true,
        measured_busiest_load: None,
    };
    let e = one(ExportFormat::Megatron, &s);
    assert_eq!(flags(&e), [true, true]);
    assert!(
        e.text.contains("--moe-expert-capacity-factor 1.25"),
        "{}",
        e.text
    );
    let t = one(ExportFormat::Torchtitan, &s);
    assert!(
        t.notes.iter().any(|n| n.contains("Capacity factor 1.25")),
        "{:?}",
        t.notes
    );
    s.overheads.moe_routing.pad_to_capacity = false;
    assert_eq!(flags(&one(ExportFormat::Megatron, &s)), [true, false]);
}

fn finetune_on_two_gpus() -> Scenario {
    let mut s = planner_core::resolve::presets::finetune_scenario();
    s.cluster.gpus_per_node = 2;
    s.layout.dp = 2;
    s.layout.zero = ZeroStage::Zero3;
    s
}

#[test]
fn golden_finetune_qlora() {
    check_golden(
        "finetune-qlora-8b",
        &planner_core::resolve::presets::finetune_scenario(),
    );
}

/// The fine-tuning preset (QLoRA r = 16, α = 32 on every linear; 2,048 tokens; micro-batch 1;
/// global batch 16; full recompute; packed) as torchtune's single-device LoRA recipe.
#[test]
fn torchtune_qlora_single_device_keys() {
    let s = planner_core::resolve::presets::finetune_scenario();
    let e = one(ExportFormat::Torchtune, &s);
    assert!(e
        .text
        .contains("# tune run lora_finetune_single_device --config torchtune.yaml"));
    for line in [
        "_component_: torchtune.models.llama3_1.qlora_llama3_1_8b",
        "lora_attn_modules: ['q_proj', 'k_proj', 'v_proj', 'output_proj']",
        "apply_lora_to_mlp: True",
        "lora_rank: 16",
        "lora_alpha: 32",
        "max_seq_len: 2048",
        "packed: True",
        "batch_size: 1",
        "gradient_accumulation_steps: 16",
        "enable_activation_checkpointing: True",
    ] {
        assert!(has_line(&e, line), "missing {line}:\n{}", e.text);
    }
    let parsed: serde_yaml::Value = serde_yaml::from_str(&e.text).expect("torchtune.yaml is YAML");
    assert_eq!(parsed["model"]["lora_rank"].as_u64(), Some(16));
    // Two GPUs: the distributed recipe with two processes; full fine-tuning: the plain builder.
    let mut two = finetune_on_two_gpus();
    two.training.finetune.mode = planner_core::input::finetune::FineTuneMode::Full;
    let e = one(ExportFormat::Torchtune, &two);
    assert!(e
        .text
        .contains("# tune run --nproc_per_node 2 full_finetune_distributed"));
    assert!(has_line(
        &e,
        "_component_: torchtune.models.llama3_1.llama3_1_8b"
    ));
    assert!(has_line(&e, "gradient_accumulation_steps: 8"));
}

#[test]
fn trl_qlora_script_keys() {
    let s = planner_core::resolve::presets::finetune_scenario();
    let e = one(ExportFormat::Trl, &s);
    for needle in [
        "accelerate launch --config_file accelerate.yaml --num_processes 1 train_sft.py",
        "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)",
        "LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", \"gate_proj\", \"up_proj\", \"down_proj\"], task_type=\"CAUSAL_LM\")",
        "max_length=2048, packing=True, per_device_train_batch_size=1, gradient_accumulation_steps=16, gradient_checkpointing=True, bf16=True, optim=\"paged_adamw_32bit\"",
        "from_pretrained(\"meta-llama/Llama-3.1-8B\", **model_kwargs)",
    ] {
        assert!(e.text.contains(needle), "missing {needle}:\n{}", e.text);
    }
    // Two GPUs: FSDP2's Accelerate config, and the 4-bit storage dtype FSDP shards.
    let e = one(ExportFormat::Trl, &finetune_on_two_gpus());
    assert!(e.text.contains("distributed_type: FSDP"));
    assert!(e.text.contains("bnb_4bit_quant_storage=torch.bfloat16"));
    assert!(e.text.contains("--num_processes 2 train_sft.py"));
}

/// A custom model whose name tries to end a comment, a YAML scalar, a Python string and a
/// heredoc: every export stays one inert line per use of the name.
#[test]
fn hostile_model_name_stays_inert_in_torchtune_and_trl() {
    let mut s = planner_core::resolve::presets::finetune_scenario();
    let mut spec = s.model_spec().expect("preset");
    spec.name = "x\"\nMESHPLAN_EOF\nrm -rf / #\\' $(id) `id`\u{2028}".to_string();
    spec.layers += 1;
    s.model = ModelChoice::Custom(spec.clone());
    for f in [ExportFormat::Torchtune, ExportFormat::Trl] {
        let e = export(f, &s, &spec);
        assert!(
            !e.text.lines().any(|l| l.starts_with("rm -rf")),
            "{}",
            e.text
        );
        assert!(!e.text.contains('\u{2028}'));
        if f == ExportFormat::Torchtune {
            serde_yaml::from_str::<serde_yaml::Value>(&e.text).expect("still YAML");
        } else {
            // The heredoc ends only where the script ends it: twice, on lines of their own.
            assert_eq!(e.text.lines().filter(|l| *l == "MESHPLAN_EOF").count(), 2);
            let run_name = e
                .text
                .lines()
                .find(|l| l.starts_with("args = SFTConfig("))
                .expect("SFTConfig line");
            assert!(
                run_name.contains("run_name=\"meshplan: x\\\"\u{FFFD}MESHPLAN_EOF"),
                "{run_name}"
            );
        }
    }
}

#[test]
fn issue_43_presets_name_their_checkpoint_and_layer_class() {
    for (id, repo, layer) in [
        ("qwen3-8b", "Qwen/Qwen3-8B", "Qwen3DecoderLayer"),
        (
            "qwen3-30b-a3b",
            "Qwen/Qwen3-30B-A3B",
            "Qwen3MoeDecoderLayer",
        ),
        ("gemma-3-27b", "google/gemma-3-27b-pt", "Gemma3DecoderLayer"),
        ("gpt-oss-120b", "openai/gpt-oss-120b", "GptOssDecoderLayer"),
    ] {
        let mut s = default_scenario();
        s.model = ModelChoice::Preset(id.to_string());
        let v = one(ExportFormat::Vllm, &s);
        assert!(v.text.contains(repo), "{id}: {}", v.text);
        let a = one(ExportFormat::Accelerate, &s);
        assert!(a.text.contains(layer), "{id}: {}", a.text);
    }
}
