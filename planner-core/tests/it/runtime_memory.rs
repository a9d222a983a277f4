//! The runtime terms of training memory (CUDA context, cuBLAS workspaces, NCCL buffers,
//! allocator fragmentation) from their cited sources, the article's scenarios keeping
//! the article's allowance, and the gpt-oss presets against OpenAI's model card.

use planner_core::input::runtime_memory as rt;
use planner_core::input::scenario::{Overheads, ServeDtype};
use planner_core::memory::training_memory::training_memory;
use planner_core::memory::window_kv::kv_bytes_per_sequence_per_gpu_value;
use planner_core::resolve::presets::{article_70b_scenario, default_scenario, model_preset};

#[test]
fn defaults_are_the_cited_figures() {
    let o = Overheads::default();
    // pytorch/pytorch PR #86509: 287,047,680 − 20,971,520 (its tensor's 20 MiB segment).
    assert_eq!(o.cuda_context_bytes, 266_076_160.0);
    // NCCL src/init.cc defaults, 16 ring channels of 10 MiB: 167,772,160 B a communicator.
    assert_eq!(o.nccl_buffer_bytes_per_group, 167_772_160.0);
    // PyTorch CublasHandlePool.cpp on sm90: 2 handles × 32 MiB = 67,108,864 B.
    assert_eq!(o.cublas_workspace_bytes, 67_108_864.0);
    // NVIDIA-NeMo #14850's peaks: 3,535,888,384 / 53,930,270,720 = 0.0655641.
    assert!((o.allocator_fraction - 0.065_564_076).abs() < 1e-8);
    // Other GPUs get PyTorch's pre-Hopper workspace: 2 × 8,519,680 = 17,039,360 B.
    assert_eq!(
        Overheads::for_gpu("a100-80gb").cublas_workspace_bytes,
        17_039_360.0
    );
    assert_eq!(
        Overheads::for_gpu("h100-sxm").cublas_workspace_bytes,
        67_108_864.0
    );
}

#[test]
fn the_articles_scenarios_keep_the_articles_allowance() {
    for s in [default_scenario(), article_70b_scenario()] {
        assert_eq!(s.overheads, Overheads::article());
        assert_eq!(s.overheads.cuda_context_bytes, 0.5e9);
        assert_eq!(s.overheads.nccl_buffer_bytes_per_group, 0.1e9);
        assert_eq!(s.overheads.cublas_workspace_bytes, 0.0);
        assert_eq!(s.overheads.allocator_fraction, 0.05);
        let model = s.model_spec().expect("model");
        let m = training_memory(&s, &model);
        // No cuBLAS term on the article's page: its figures are as published.
        assert!(m.stages[0]
            .terms
            .iter()
            .all(|t| t.key != "cublas_workspace"));
    }
}

#[test]
fn measured_runtime_terms_reach_the_page_and_the_peaks() {
    let article = default_scenario();
    let mut measured = article.clone();
    measured.overheads = Overheads {
        framework: article.overheads.framework,
        ..Overheads::default()
    };
    let model = article.model_spec().expect("model");
    let a = training_memory(&article, &model);
    let m = training_memory(&measured, &model);
    // The cuBLAS workspaces are live tensors of the caching allocator: allocated grows by them.
    let grow = m.peak_allocated_bytes - a.peak_allocated_bytes;
    assert!((grow - 67_108_864.0).abs() < 1.0, "{grow}");
    // reserved = allocated × (1 + 0.0655641).
    let f = rt::reserved_over_allocated_fraction();
    assert!((m.peak_reserved_bytes - m.peak_allocated_bytes * (1.0 + f)).abs() < 1.0);
    let stage = &m.stages[m.peak_stage];
    let term = |key: &str| {
        stage
            .terms
            .iter()
            .find(|t| t.key == key)
            .unwrap_or_else(|| panic!("{key} missing"))
    };
    assert_eq!(term("cublas_workspace").value, 67_108_864.0);
    assert_eq!(term("cuda_context").value, 266_076_160.0);
    // The default layout (TP 8 × DP 8): two communicators × 167,772,160 B = 335,544,320 B.
    assert_eq!(term("nccl_buffers").value, 2.0 * 167_772_160.0);
    // Every runtime term says where its figure comes from.
    assert!(term("cuda_context").assumption.contains("#86509"));
    assert!(term("nccl_buffers").assumption.contains("init.cc"));
    assert!(term("cublas_workspace")
        .assumption
        .contains("CublasHandlePool.cpp"));
    assert!(term("allocator_headroom").assumption.contains("#14850"));
    // nvidia-smi's total = reserved + context + NCCL.
    let total = stage.total_bytes;
    let want = stage.reserved_bytes + 266_076_160.0 + 335_544_320.0;
    assert!((total - want).abs() < 1.0, "{total} vs {want}");
}

#[test]
fn gpt_oss_presets_match_the_model_card() {
    // OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card" (Aug 2025), Table 1: 116.83B total and
    // 5.13B active; 20.91B total and 3.61B active. By hand for 120b: experts 36 × 128 ×
    // (3 × 2880² + 8640 biases) = 114,714,992,640; attention 36 × (2880 × 4096 × 2 +
    // 2880 × 512 × 2 + 4096 + 1024 + 2880) = 36 × 26,550,272 = 955,809,792; embeddings
    // 2 × 201,088 × 2880 = 1,158,266,880; router 36 × 2880 × 128 = 13,271,040.
    for (id, total, active) in [
        ("gpt-oss-120b", 116.83e9, 5.13e9),
        ("gpt-oss-20b", 20.91e9, 3.61e9),
    ] {
        let m = model_preset(id).expect(id);
        let p = m.param_breakdown();
        let t = p.total() as f64;
        assert!((t / total - 1.0).abs() < 0.002, "{id}: {t}");
        // The card's active count leaves out the embedding lookup (its Table 1: 120b active
        // 5.13B = 116.83B − 124 idle experts × 36 layers − the 0.58B embedding).
        let a = m.active_params() - p.embedding as f64;
        assert!((a / active - 1.0).abs() < 0.005, "{id} active: {a}");
    }
}

#[test]
fn gpt_oss_windowed_layers_hold_only_128_tokens() {
    // 2 × 8 KV heads × 64 × 2 B = 2048 B per token per layer. gpt-oss-120b at 8192 tokens,
    // TP 1: 18 full layers × 8192 + 18 windowed × 128 tokens = 149,760 token-layers ×
    // 2048 B = 306,708,480 B (full attention everywhere would be 36 × 8192 × 2048 =
    // 603,979,776 B).
    let m = model_preset("gpt-oss-120b").expect("preset");
    let kv = kv_bytes_per_sequence_per_gpu_value(&m, ServeDtype::Bf16, 1, 0, 36, 8192);
    assert_eq!(kv, 306_708_480.0);
    // Layer 0 is sliding, layer 1 full (layer_types in config.json).
    use planner_core::input::attention_window::is_windowed;
    assert!(is_windowed(&m, 0) && !is_windowed(&m, 1));
    // gpt-oss-20b, second of two stages (layers 12..24): full 13, 15, …, 23 (6), windowed 6.
    let s = model_preset("gpt-oss-20b").expect("preset");
    let kv = kv_bytes_per_sequence_per_gpu_value(&s, ServeDtype::Bf16, 1, 12, 12, 8192);
    assert_eq!(kv, 2048.0 * (6.0 * 8192.0 + 6.0 * 128.0));
}

#[test]
fn deepspeed_semantics_name_their_buffers_and_the_step() {
    use planner_core::input::framework::Framework;
    use planner_core::input::layout::ZeroStage;
    use planner_core::memory::deepspeed_zero::estimate_zero3_gpu_bytes;
    // Llama 3.1 8B on one node of 8 H100, ZeRO-3, short sequences: the optimizer step, not
    // the backward, sets DeepSpeed's peak.
    let mut s = default_scenario();
    s.model = planner_core::input::scenario::ModelChoice::Preset("llama-3.1-8b".into());
    s.cluster = planner_core::input::hardware::Cluster::of(
        planner_core::input::hardware::gpu_preset("h100-sxm").expect("gpu"),
        1,
    );
    s.layout.dp = 8;
    s.layout.tp = 1;
    s.layout.zero = ZeroStage::Zero3;
    s.training.seq_len = 128;
    s.training.global_batch = 8;
    s.overheads = Overheads {
        framework: Framework::DeepSpeed,
        ..Overheads::default()
    };
    let model = s.model_spec().expect("model");
    let m = training_memory(&s, &model);
    assert_eq!(
        m.framework.label(),
        "DeepSpeed ZeRO semantics (config.py defaults)"
    );
    let stage = &m.stages[m.peak_stage];
    let term = |key: &str| stage.terms.iter().find(|t| t.key == key).map(|t| t.value);
    // stage3.py's flat IPG bucket: reduce_bucket_size 5e8 × 2 B.
    assert_eq!(term("gradient_buckets"), Some(1e9));
    // The step's fp32 gradient partition: Ψ = 8,030,261,248; Ψ/8 = 1,003,782,656;
    // step peak = 16 B × Ψ/8 (state) + 4 B × Ψ/8 + 64 MiB of cuBLAS workspace
    //           = 20 × 1,003,782,656 + 67,108,864 = 20,142,761,984 B.
    let psi = 8_030_261_248.0;
    let step_peak = 20.0 * psi / 8.0 + 67_108_864.0;
    let listed: Vec<(String, f64)> = stage
        .terms
        .iter()
        .map(|t| (t.key.clone(), t.value))
        .collect();
    assert!(
        term("deepspeed.step_fp32_gradients").is_some(),
        "{listed:?}"
    );
    assert!(
        (stage.allocated_bytes - step_peak).abs() < 1e3,
        "{}",
        stage.allocated_bytes
    );
    // The page's terms still add up to the device total.
    let sum: f64 = stage.terms.iter().map(|t| t.value).sum();
    assert!(
        (sum - stage.total_bytes).abs() < 1e3,
        "{sum} vs {}",
        stage.total_bytes
    );
    // DeepSpeed's own estimator (memory.rst case 1) for the same model: 4 × largest layer +
    // 18 Ψ/8. It keeps fp32 gradients (4 B) but not the 16-bit gradient partition (2 B) that
    // stage3.py also holds, and counts the gathered largest layer instead: the two differ by
    // exactly 2 Ψ/8 − 4 × largest (the embedding, 128,256 × 4096 = 525,336,576).
    let largest = 128_256.0 * 4096.0;
    let estimate = estimate_zero3_gpu_bytes(psi, largest, 8.0);
    let state_and_step = step_peak - 67_108_864.0;
    assert!((state_and_step - estimate - (2.0 * psi / 8.0 - 4.0 * largest)).abs() < 1.0);
}

#[test]
fn deepspeed_export_writes_the_defaults_the_memory_view_used() {
    use planner_core::edges::export::{export, ExportFormat};
    use planner_core::input::framework::Framework;
    use planner_core::input::layout::ZeroStage;
    let mut s = default_scenario();
    s.layout.zero = ZeroStage::Zero3;
    s.overheads.framework = Framework::DeepSpeed;
    let model = s.model_spec().expect("model");
    let e = export(ExportFormat::Deepspeed, &s, &model);
    let v: serde_json::Value = serde_json::from_str(&e.text).expect("json");
    let z = &v["zero_optimization"];
    // deepspeed/runtime/zero/config.py defaults, as memory::deepspeed_zero counted them.
    assert_eq!(z["reduce_bucket_size"], 500_000_000);
    assert_eq!(z["allgather_bucket_size"], 500_000_000);
    assert_eq!(z["stage3_prefetch_bucket_size"], 50_000_000);
    assert_eq!(z["stage3_max_live_parameters"], 1_000_000_000);
    assert_eq!(z["stage3_param_persistence_threshold"], 100_000);
    assert_eq!(z["overlap_comm"], true);
    // ZeRO-2 keeps overlap_comm at DeepSpeed's default for stages 1–2: off.
    s.layout.zero = ZeroStage::Zero2;
    let v: serde_json::Value =
        serde_json::from_str(&export(ExportFormat::Deepspeed, &s, &model).text).expect("json");
    assert_eq!(v["zero_optimization"]["overlap_comm"], false);
    assert!(v["zero_optimization"]
        .get("stage3_max_live_parameters")
        .is_none());
}
