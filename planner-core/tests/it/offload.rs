//! Offload (ZeRO-Offload, ZeRO-Infinity, FSDP2 CPUOffloadPolicy): per-term values worked by
//! hand, DeepSpeed's published estimator figures, the ZeRO-Offload tutorial's 10B-on-one-V100
//! claim, the layout rules, exports, links and hostile input.

use planner_core::edges::export::{export, ExportFormat};
use planner_core::edges::link::{decode, decode_lenient, encode};
use planner_core::evaluate::evaluate;
use planner_core::input::hardware::gpu_traits;
use planner_core::input::hardware::{gpu_preset, Cluster, GpuSpec, GIB};
use planner_core::input::host::{HostSpec, CPU_ADAM_PARAMS_PER_S_PER_CORE};

/// The host of the GPU preset's usual server.
fn host_preset(gpu_id: &str) -> Option<HostSpec> {
    gpu_traits(gpu_id).host.clone()
}
use planner_core::input::layout::{Recompute, ZeroStage};
use planner_core::input::model::{FfnKind, ModelSpec, NormKind};
use planner_core::input::offload::Offload;
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::memory::offload::{
    host_memory, host_per_gpu, GpuState, DEEPSPEED_HOST_BUFFER_FACTOR,
};
use planner_core::memory::training_memory::training_memory;
use planner_core::resolve::presets::{default_scenario, model_preset};
use planner_core::time::offload::OffloadTime;

/// DeepSpeed prints its estimates as `{bytes / 2**30:.2f}GB`.
fn ds_gb(bytes: f64) -> String {
    format!("{:.2}", bytes / GIB)
}

/// One GPU's state for a model of `psi` parameters, ZeRO partition over `n` GPUs, BF16 mixed
/// Adam (2 + 2 + 12 bytes); weights and gradients sharded as ZeRO-3.
fn zero3_state(psi: f64, n: f64) -> GpuState {
    GpuState {
        weight_bytes: 2.0 * psi / n,
        gradient_bytes: 2.0 * psi / n,
        optimizer_bytes: 12.0 * psi / n,
        partition_params: psi / n,
        weight_bytes_per_param: 2.0,
    }
}

// deepspeedai/DeepSpeed docs/code-docs/source/memory.rst, ZeRO-3 example (t5-3b, cold:
// total_params=2851e6, 1 node × 8 GPUs): "63.72GB | offload_param=none, offload_optimizer=cpu,
// zero_init=1" and "71.69GB | offload_param=cpu, offload_optimizer=cpu, zero_init=1" per CPU.
// By hand: 2851e6 × 16 × 1.5 = 68.424e9 B = 63.725 GiB; × 18 → 76.977e9 B = 71.691 GiB.
#[test]
fn deepspeed_zero3_estimator_per_cpu_figures() {
    let psi = 2851e6;
    let s = zero3_state(psi, 8.0);
    let host = host_preset("h100-sxm").expect("DGX H100 host");
    let node = |offload| {
        let per_gpu = host_per_gpu(offload, ZeroStage::Zero3, &s);
        host_memory(
            offload,
            ZeroStage::Zero3,
            per_gpu,
            (psi / 8.0, psi),
            8,
            Some(&host),
        )
    };
    let mem = node(Offload::OptimizerCpu);
    assert_eq!(ds_gb(mem.ram_bytes_per_node), "63.72");
    assert_eq!(
        mem.init_bytes_per_gpu, 0.0,
        "ZeRO-3 is built under zero.Init"
    );
    let mem = node(Offload::OptimizerParamsCpu);
    assert_eq!(ds_gb(mem.ram_bytes_per_node), "71.69");
    // memory.rst "Pinned Memory", offload_param on: 6 B per parameter (2 fp16 params + 4
    // fp32 grads): 6 × 2851e6 = 17.106e9 B.
    assert!((mem.pinned_bytes_per_node - 6.0 * psi).abs() < 1.0);
    assert!(mem.fits_ram, "72 GiB fits a DGX H100's 2 TB");
}

/// memory.rst's cold example: Ψ = 2851e6 (t5-3b's count, on Llama shapes scaled to it: model
/// state depends on Ψ only), 1 node × 8 H100, pure DP over 8, ZeRO-Offload.
fn t5_3b_on_one_node(zero: ZeroStage) -> Scenario {
    let mut sc = default_scenario();
    let mut m = model_preset("llama-3.1-8b").expect("preset");
    m.nominal_params = Some(2851e6);
    sc.model = ModelChoice::Custom(m);
    sc.cluster = Cluster::of(gpu_preset("h100-sxm").expect("gpu"), 1);
    sc.layout.tp = 1;
    sc.layout.dp = 8;
    sc.layout.sequence_parallel = false;
    sc.layout.zero = zero;
    sc.training.global_batch = 8;
    sc.training.offload = Offload::OptimizerCpu;
    sc
}

// The same page, ZeRO-2 (stage_1_and_2.estimate_zero2_model_states_mem_needs_all_cold,
// total_params=2851e6, 1 × 8): "127.45GB | 5.31GB | offload_optimizer=cpu". Per CPU
// params × max(4 × 8, 16) × 1.5 = 48 × 2851e6 = 136.848e9 B = 127.45 GiB: the fp32 replica
// every process builds (4 B × Ψ × 8 processes) outweighs the steady 16Ψ. Per GPU 2 × Ψ =
// 5.702e9 B = 5.31 GiB: only the bf16 weights stay.
#[test]
fn deepspeed_zero2_estimator_figures() {
    let psi = 2851e6;
    let sc = t5_3b_on_one_node(ZeroStage::Zero2);
    let model = sc.model_spec().expect("model");
    let mem = training_memory(&sc, &model);
    let stage = &mem.stages[0];
    let bytes = |key: &str| {
        stage
            .terms
            .iter()
            .find(|t| t.key == key)
            .map(|t| t.value)
            .expect(key)
    };
    assert_eq!(ds_gb(bytes("model_state.weights")), "5.31");
    assert_eq!(bytes("model_state.gradients"), 0.0);
    assert_eq!(bytes("model_state.optimizer"), 0.0);
    let host = mem.host.expect("host memory under offload");
    assert_eq!(ds_gb(host.ram_bytes_per_node), "127.45");
    // Steady state per GPU: 12 + 4 B over Ψ/8 = 2Ψ = 5.702e9 B.
    assert!((host.per_gpu.cpu_bytes() - 2.0 * psi).abs() < 1.0);
    assert_eq!(host.buffer_factor, DEEPSPEED_HOST_BUFFER_FACTOR);
}

// memory.rst, ZeRO-3 GPU RAM, case 3 (offload_optimizer cpu): "largest_layer_memory + 2 ×
// params / total number of gpus": the weight shard is 2 × 2851e6 / 8 = 712.75e6 B (the
// page's 0.78 GiB less 4 × 32e6 for the gathered largest layer, which the memory model
// counts in its ZeRO-3 gathered-units and gradient-bucket terms).
#[test]
fn zero3_optimizer_offload_keeps_only_the_weight_shard() {
    let mut sc = t5_3b_on_one_node(ZeroStage::Zero3);
    let model = sc.model_spec().expect("model");
    // (weight-shard term, whether gathered units are held) of the scenario's first stage.
    let weights_and_gathered = |sc: &Scenario| {
        let mem = training_memory(sc, &model);
        let t = &mem.stages[0].terms;
        let w = t.iter().find(|t| t.key == "model_state.weights").cloned();
        let gathered = t.iter().any(|t| t.key == "zero3.gathered" && t.value > 0.0);
        (w.expect("weights term"), gathered)
    };
    let (weights, gathered) = weights_and_gathered(&sc);
    assert!((weights.value - 712.75e6).abs() < 1.0);
    assert!(gathered);
    // With parameters offloaded too, no weight shard stays: only the gathered units.
    sc.training.offload = Offload::OptimizerParamsCpu;
    let (weights, gathered) = weights_and_gathered(&sc);
    assert_eq!(weights.value, 0.0);
    assert!(weights.label.contains("offloaded"));
    assert!(gathered);
}

/// DeepSpeed's ZeRO-Offload tutorial (docs/_tutorials/zero-offload.md): "Training a 10B
/// parameter GPT-2 on 1 V100 GPU": `--num-layers 50 --hidden-size 4096 --num-attention-heads
/// 32 --batch-size 10 --checkpoint-activations`, ZeRO stage 2 with `cpu_offload`, one
/// "NVIDIA Tesla V100-SXM3 Tensor Core GPU with 32GB RAM". Megatron-LM v1.1.5's GPT-2: 1024
/// positions and sequence, GPT-2's 50257 vocabulary, GeLU MLP of 4h, LayerNorm, tied embedding.
fn gpt2_10b_on_one_v100() -> Scenario {
    let mut sc = default_scenario();
    sc.model = ModelChoice::Custom(ModelSpec {
        name: "GPT-2 10B (DeepSpeed ZeRO-Offload tutorial)".into(),
        layers: 50,
        hidden: 4096,
        heads: 32,
        kv_heads: 32,
        head_dim: 128,
        ffn: 4 * 4096,
        ffn_kind: FfnKind::GeluMlp,
        vocab: 50257,
        tied_embeddings: true,
        norm: NormKind::LayerNorm,
        dropout: true,
        qkv_bias: true,
        linear_bias: true,
        learned_positions: 1024,
        moe: None,
        mla: None,
        attention_window: None,
        mtp_layers: 0,
        nominal_params: None,
    });
    // NVIDIA V100 datasheet (SXM3): 32 GB HBM2 (32 GiB), 900 GB/s, 125 TFLOPS tensor, NVLink
    // 300 GB/s; one GPU in the tutorial.
    let v100 = GpuSpec {
        id: "v100-sxm3-32gb".into(),
        name: "V100 SXM3 32 GB".into(),
        memory_bytes: 32.0 * GIB,
        datasheet_memory_bytes: 32e9,
        hbm_bytes_per_s: 900e9,
        bf16_flops_per_s: 125e12,
        fp8_flops_per_s: 0.0,
        intra_node_bytes_per_s: 150e9,
        inter_node_bytes_per_s: 12.5e9,
        gpus_per_node: 1,
    };
    sc.cluster = Cluster::of(v100, 1);
    sc.serving.tp = 1;
    // Ren et al. 2021 Table 2 (the DGX-2 of the evaluation): 1.5 TB DDR4, 2 × Xeon Platinum
    // 8168 (48 cores); V100 on PCIe Gen3 x16, 16 GB/s each way. No local NVMe assumed.
    sc.cluster.host = Some(HostSpec {
        ram_bytes: 1.5e12,
        nvme_bytes: 0.0,
        nvme_read_bytes_per_s: 0.0,
        nvme_write_bytes_per_s: 0.0,
        host_link_bytes_per_s: 16e9,
        cpu_cores: 48,
    });
    sc.training.seq_len = 1024;
    sc.training.global_batch = 10;
    sc.layout.tp = 1;
    sc.layout.dp = 1;
    sc.layout.sequence_parallel = false;
    sc.layout.micro_batch = 10;
    sc.layout.zero = ZeroStage::Zero2;
    sc.layout.recompute = Recompute::Full;
    // 2020's Megatron GPT-2 had no flash attention.
    sc.activations.flash_attention = false;
    sc.training.offload = Offload::OptimizerCpu;
    sc
}

#[test]
fn ten_billion_gpt2_fits_one_v100_only_with_zero_offload() {
    let sc = gpt2_10b_on_one_v100();
    sc.validate().expect("valid scenario");
    let model = sc.model_spec().expect("model");
    let psi = model.params();
    // 50 × 12 × 4096² ≈ 10.07e9 plus embeddings: the tutorial's "10B".
    assert!((10.0e9..10.5e9).contains(&psi), "{psi}");
    let with = training_memory(&sc, &model);
    let mut without = sc.clone();
    without.training.offload = Offload::None;
    let without = training_memory(&without, &model);
    // Without offload the 16Ψ of model state alone is 165 GB: no fit on 32 GiB.
    assert!(!without.fits);
    // With it, the 2Ψ ≈ 20.6 GB of fp16 weights stay; the tutorial trained it.
    assert!(
        with.peak_bytes < with.capacity_bytes,
        "peak {} of {}",
        with.peak_bytes / 1e9,
        with.capacity_bytes / 1e9
    );
    let host = with.host.expect("host");
    // 1.5 × max(16Ψ, 4Ψ) = 24Ψ ≈ 247 GB of the DGX-2's 1.5 TB.
    assert!((host.ram_bytes_per_node - 24.0 * psi).abs() < 1.0);
    assert!(host.fits_ram);
    let e = evaluate(&sc).expect("evaluates");
    assert!(!e.rules.iter().any(|r| r.is_error()), "{:?}", e.rules);
    // Ren et al. 2021 Table 4: CPU-Adam on the DGX-2 updates 10B parameters in 2.57 s; at
    // this model's Ψ the CPU step is Ψ / (10e9 / 2.57) s.
    let t = e
        .step
        .terms
        .iter()
        .find(|t| t.key == "time.offload")
        .expect("offload term");
    let cpu_s = psi / (10e9 / 2.57);
    // Host link: Ψ × 2 B down + Ψ × 2 B up over 16 GB/s (one micro-batch).
    let link_s = 4.0 * psi / 16e9;
    assert!(
        (t.value - (cpu_s + link_s)).abs() < 1e-9 * t.value,
        "{}",
        t.worked
    );
}

// Hand-worked step terms on a DGX H100 host (64 GB/s PCIe each way per GPU, 112 cores,
// NVMe 8 × Gen4: 20 GB/s read, 10 GB/s write), P = 1e9 parameters per GPU, m = 4, 8 GPUs.
#[test]
fn offload_step_terms_by_hand() {
    let host = host_preset("h100-sxm").expect("host");
    assert_eq!(host.nvme_read_bytes_per_s, 20e9);
    assert_eq!(host.nvme_write_bytes_per_s, 10e9);
    let time = |offload| OffloadTime {
        offload,
        weight_bytes: 2.0,
        grad_bytes: 2.0,
        optimizer_bytes: 12.0,
        gpus_per_node: 8,
        host: Some(host.clone()),
    };
    let rate = 112.0 * CPU_ADAM_PARAMS_PER_S_PER_CORE;
    // ZeRO-Offload, ZeRO-2: down 4 × 1e9 × 2 / 64e9 = 0.125 s; up 1e9 × 2 / 64e9 = 31.25 ms;
    // CPU-Adam 8 × 1e9 / (112 × 10e9 / 2.57 / 48) = 0.8812 s.
    let s = time(Offload::OptimizerCpu).seconds(ZeroStage::Zero2, 1e9, 4.0);
    assert!((s.link_down_s - 0.125).abs() < 1e-12);
    assert!((s.link_up_s - 0.03125).abs() < 1e-12);
    assert!((s.cpu_optimizer_s - 8e9 / rate).abs() < 1e-12);
    assert!((s.cpu_optimizer_s - 0.8812).abs() < 1e-4);
    assert_eq!(s.nvme_read_s + s.nvme_write_s, 0.0);
    // Parameters offloaded (ZeRO-3): each forward and backward fetches the shard, 2 × 4 ×
    // 1e9 × 2 / 64e9 = 0.25 s up.
    let s = time(Offload::OptimizerParamsCpu).seconds(ZeroStage::Zero3, 1e9, 4.0);
    assert!((s.link_up_s - 0.25).abs() < 1e-12);
    // ZeRO-Infinity optimizer on NVMe (ZeRO-3): 8 GPUs × 12e9 B read at 20 GB/s = 4.8 s,
    // written at 10 GB/s = 9.6 s.
    let s = time(Offload::OptimizerNvme).seconds(ZeroStage::Zero3, 1e9, 4.0);
    assert!((s.nvme_read_s - 4.8).abs() < 1e-12);
    assert!((s.nvme_write_s - 9.6).abs() < 1e-12);
    // Parameters on NVMe too: + 8 × 2 × 4 × 2e9 B read (6.4 s more) and 8 × 2e9 written (1.6 s).
    let s = time(Offload::OptimizerParamsNvme).seconds(ZeroStage::Zero3, 1e9, 4.0);
    assert!((s.nvme_read_s - (4.8 + 6.4)).abs() < 1e-9);
    assert!((s.nvme_write_s - (9.6 + 1.6)).abs() < 1e-9);
    let sum = s.link_down_s + s.link_up_s + s.nvme_read_s + s.nvme_write_s + s.cpu_optimizer_s;
    assert!((s.total_s - sum).abs() < 1e-12);
    // FSDP2 steps PyTorch's CPU AdamW: Table 4's 14.76 s per 10B on 48 cores.
    let s = time(Offload::Fsdp2Cpu).seconds(ZeroStage::Zero3, 1e9, 4.0);
    assert!((s.cpu_optimizer_s - 8e9 / (112.0 * 10e9 / 14.76 / 48.0)).abs() < 1e-9);
    // No offload, nothing added.
    assert_eq!(
        time(Offload::None)
            .seconds(ZeroStage::Zero3, 1e9, 4.0)
            .total_s,
        0.0
    );
}

// NVMe: ZeRO-Infinity keeps master + moments (12 B) and the parameter shard (2 B) on the
// drive; the CPU holds the fp32 gradients and the pinned swap buffers (4 × min(1e9, P) × 4 B
// and 5 × min(1e8, P) × 2 B). P = 5e8: NVMe 7e9 B, CPU 2e9 + 8e9 + 1e9 = 11e9 B per GPU.
#[test]
fn nvme_bytes_and_swap_buffers_by_hand() {
    let s = zero3_state(4e9, 8.0);
    let h = host_per_gpu(Offload::OptimizerParamsNvme, ZeroStage::Zero3, &s);
    assert_eq!(h.nvme_bytes(), 7e9);
    assert_eq!(h.gradient_cpu_bytes, 2e9);
    assert_eq!(h.swap_buffer_bytes, 4.0 * 5e8 * 4.0 + 5.0 * 1e8 * 2.0);
    assert_eq!(h.cpu_bytes(), 11e9);
}

/// Whether evaluating `sc` reports the rule `rule` on `field`, as an error.
fn breaks(sc: &Scenario, field: &str, rule: &str) -> bool {
    let e = evaluate(sc).expect("evaluates");
    e.rules
        .iter()
        .any(|r| r.field == field && r.rule == rule && r.is_error())
}

#[test]
fn rules_name_their_fields() {
    let mut sc = default_scenario();
    sc.training.offload = Offload::OptimizerCpu;
    sc.layout.zero = ZeroStage::Ddp;
    assert!(breaks(&sc, "offload", "offload_needs_zero"));
    sc.layout.zero = ZeroStage::Zero2;
    sc.training.offload = Offload::OptimizerParamsCpu;
    assert!(breaks(&sc, "offload", "offload_params_need_zero3"));
    sc.training.offload = Offload::OptimizerNvme;
    assert!(breaks(&sc, "offload", "nvme_offload_needs_zero3"));
    // GB200 NVL72's datasheet lists no tray NVMe: NVMe offload is refused until it is set.
    let mut sc = default_scenario();
    sc.cluster = Cluster::of(gpu_preset("gb200-nvl72").expect("gpu"), 1);
    sc.layout.zero = ZeroStage::Zero3;
    sc.training.offload = Offload::OptimizerNvme;
    assert!(breaks(&sc, "host_nvme", "nvme_offload_needs_nvme"));
    // A host too small for the offloaded state.
    let mut sc = default_scenario();
    sc.layout.zero = ZeroStage::Zero3;
    sc.training.offload = Offload::OptimizerCpu;
    let mut host = host_preset("h100-sxm").expect("host");
    host.ram_bytes = 10e9;
    sc.cluster.host = Some(host);
    assert!(breaks(&sc, "host_ram", "host_memory_within_node_ram"));
    // A custom GPU has no server preset: its host must be given before offloading.
    let mut sc = default_scenario();
    sc.cluster.gpu.id = "my-gpu".into();
    sc.cluster.gpu.name = "My GPU".into();
    sc.layout.zero = ZeroStage::Zero3;
    sc.training.offload = Offload::OptimizerCpu;
    assert!(breaks(&sc, "host_ram", "offload_needs_host"));
}

#[test]
fn offload_lowers_gpu_memory_and_adds_step_time() {
    let mut sc = default_scenario();
    sc.layout.zero = ZeroStage::Zero3;
    let base = evaluate(&sc).expect("evaluates");
    sc.training.offload = Offload::OptimizerCpu;
    let off = evaluate(&sc).expect("evaluates");
    // Llama 3.1 70B, TP 8 × DP 8: the 12 B optimizer and 2 B gradient shard (14 × 70.6e9 / 64
    // ≈ 15.4 GB) leave each GPU.
    let drop = base.training.peak_bytes - off.training.peak_bytes;
    assert!(drop > 14e9 && drop < 17.5e9, "{drop}");
    assert!(off.step.seconds.total > base.step.seconds.total);
    assert_eq!(off.step.seconds.optimizer, 0.0);
    assert!(off.step.seconds.offload > 0.0);
    assert!(off.training.host.is_some() && base.training.host.is_none());
    // The article's ZeRO-3 bar keeps only the weight shard, 2 × 70.6e9 / 64 ≈ 2.2 GB.
    let bar = |e: &planner_core::evaluate::Evaluation| e.model_state[3].total_bytes;
    let weights = base.model_state[3]
        .sharded
        .iter()
        .find(|t| t.key == "weights")
        .map(|t| t.value)
        .expect("weights");
    assert_eq!(bar(&off), weights);
    assert!((bar(&base) - 8.0 * weights).abs() < 1e-6 * bar(&base));
}

#[test]
fn exports_write_the_offload_settings() {
    let mut sc = default_scenario();
    sc.layout.zero = ZeroStage::Zero3;
    sc.training.offload = Offload::OptimizerParamsNvme;
    let model = sc.model_spec().expect("model");
    let ds = export(ExportFormat::Deepspeed, &sc, &model);
    let v: serde_json::Value = serde_json::from_str(&ds.text).expect("json");
    let z = &v["zero_optimization"];
    assert_eq!(z["offload_optimizer"]["device"], "nvme");
    assert_eq!(z["offload_param"]["device"], "nvme");
    assert_eq!(z["offload_param"]["nvme_path"], "/local_nvme");
    assert_eq!(z["offload_optimizer"]["pin_memory"], true);
    sc.training.offload = Offload::Fsdp2Cpu;
    let acc = export(ExportFormat::Accelerate, &sc, &model);
    let y: serde_yaml::Value = serde_yaml::from_str(&acc.text).expect("yaml");
    assert_eq!(
        y["fsdp_config"]["fsdp_offload_params"],
        serde_yaml::Value::Bool(true)
    );
    sc.training.offload = Offload::OptimizerCpu;
    let acc = export(ExportFormat::Accelerate, &sc, &model);
    let y: serde_yaml::Value = serde_yaml::from_str(&acc.text).expect("yaml");
    assert_eq!(
        y["fsdp_config"]["fsdp_offload_params"],
        serde_yaml::Value::Bool(false)
    );
    assert!(acc.notes.iter().any(|n| n.contains("FSDP has no")));
    let ds = export(ExportFormat::Deepspeed, &sc, &model);
    let v: serde_json::Value = serde_json::from_str(&ds.text).expect("json");
    assert_eq!(v["zero_optimization"]["offload_optimizer"]["device"], "cpu");
    assert!(v["zero_optimization"].get("offload_param").is_none());
}

#[test]
fn links_round_trip_offload_and_host() {
    let mut sc = default_scenario();
    sc.layout.zero = ZeroStage::Zero3;
    for o in Offload::ALL {
        sc.training.offload = o;
        let q = encode(&sc);
        assert_eq!(decode(&q).expect("decodes"), sc, "{q}");
        assert_eq!(q.contains("offload="), !o.is_none(), "{q}");
    }
    let mut host = host_preset("h100-sxm").expect("host");
    host.ram_bytes = 1e12;
    host.cpu_cores = 64;
    sc.cluster.host = Some(host);
    let q = encode(&sc);
    assert!(q.contains("host_ram=1000000000000"), "{q}");
    assert_eq!(decode(&q).expect("decodes"), sc);
    // A host equal to the preset, set explicitly, stays explicit.
    sc.cluster.host = host_preset("h100-sxm");
    assert_eq!(decode(&encode(&sc)).expect("decodes"), sc);
    // The default scenario's link is unchanged: no offload or host keys.
    let d = encode(&default_scenario());
    assert!(!d.contains("offload") && !d.contains("host_"), "{d}");
}

#[test]
fn hostile_links_are_refused_by_field() {
    let field_of = |q: &str| {
        decode(q)
            .expect_err(q)
            .into_iter()
            .map(|e| e.field)
            .collect::<Vec<_>>()
    };
    assert_eq!(field_of("v=1&offload=rm%20-rf"), ["offload"]);
    assert_eq!(field_of("v=1&host_ram=-1"), ["host_ram"]);
    assert_eq!(field_of("v=1&host_ram=NaN"), ["host_ram"]);
    assert_eq!(field_of("v=1&host_ram=inf"), ["host_ram"]);
    assert_eq!(field_of("v=1&host_nvme_read=1e300"), ["host_nvme_read"]);
    assert_eq!(field_of("v=1&host_cores=0"), ["host_cores"]);
    assert_eq!(field_of("v=1&host_cores=99999999999"), ["host_cores"]);
    // Lenient decoding drops the bad value and keeps the rest, reporting it by name.
    let (s, errors) = decode_lenient("v=1&offload=opt-cpu&zero=3&host_link=-5");
    assert_eq!(s.training.offload, Offload::OptimizerCpu);
    assert!(errors.iter().any(|e| e.field == "host_link"));
    assert!(s.validate().is_ok());
    // A JSON file with a hostile host names the JSON path or the link key.
    let mut sc = default_scenario();
    sc.cluster.host = host_preset("h100-sxm");
    let json = serde_json::to_string(&sc)
        .expect("json")
        .replace("\"cpu_cores\":112", "\"cpu_cores\":-3");
    let err = Scenario::from_json(&json).expect_err("negative cores");
    assert_eq!(err[0].field, "cluster.host.cpu_cores");
    let mut sc = default_scenario();
    sc.training.offload = Offload::Fsdp2Cpu;
    let json = serde_json::to_string(&sc)
        .expect("json")
        .replace("\"fsdp2_cpu\"", "\"$(reboot)\"");
    let err = Scenario::from_json(&json).expect_err("unknown offload");
    assert_eq!(err[0].field, "training.offload");
}

// The mesh search considers offload only when nothing fits without it: the 10B GPT-2 on
// one V100 has one mesh (1 × 1 × 1 × 1) and every knob of it overflows 32 GiB without
// offload; with ZeRO-Offload ZeRO-2 and ZeRO-3 fit (ZeRO-1 keeps the 2Ψ gradients: 4Ψ ≈
// 41 GB, still over).
#[test]
fn search_falls_back_to_offload_only_when_nothing_fits() {
    use planner_core::search::mesh::{search, SearchSpace, SlicedSearch};
    use planner_core::time::cost::{CostOptions, StepModel};
    let mut sc = gpt2_10b_on_one_v100();
    sc.training.offload = Offload::None;
    let model = sc.model_spec().expect("model");
    let sm = StepModel::for_scenario(&model, &sc, CostOptions::default());
    let r = search(&model, &sc, &SearchSpace::default(), &sm);
    assert_eq!(r.offload, Offload::OptimizerCpu);
    assert!(r.feasible_count > 0);
    assert!(r.feasible.iter().all(|f| f.knobs.zero.number() >= 2));
    assert!(r
        .rejections_without_offload
        .iter()
        .any(|c| c.reason == "memory_within_capacity"));
    // The sliced search (the page's) ends the same way.
    let mut sliced = SlicedSearch::new(
        model.clone(),
        sc.clone(),
        SearchSpace::default(),
        sm.clone(),
    );
    while !sliced.step(4) {}
    let s = sliced.finish();
    assert_eq!(s.offload, r.offload);
    assert_eq!(s.feasible_count, r.feasible_count);
    // Off: no fallback.
    let space = SearchSpace {
        offload_fallback: false,
        ..SearchSpace::default()
    };
    let plain = search(&model, &sc, &space, &sm);
    assert_eq!((plain.offload, plain.feasible_count), (Offload::None, 0));
    // Where something fits, offload is never tried, even when the scenario has one set.
    let mut fits = default_scenario();
    fits.layout.zero = ZeroStage::Zero3;
    fits.training.offload = Offload::OptimizerCpu;
    let model = fits.model_spec().expect("model");
    let sm = StepModel::for_scenario(&model, &fits, CostOptions::default());
    let r = search(&model, &fits, &SearchSpace::default(), &sm);
    assert_eq!(r.offload, Offload::None);
    assert!(r.feasible_count > 0 && r.rejections_without_offload.is_empty());
}

// A node too small for the offloaded state: no variant fits, and the search returns its
// plain rejections; the node check itself refuses the layout.
#[test]
fn search_without_a_fitting_offload_keeps_the_plain_result() {
    use planner_core::search::mesh::{search, SearchSpace};
    use planner_core::time::cost::{CostOptions, StepModel};
    let mut sc = gpt2_10b_on_one_v100();
    sc.training.offload = Offload::None;
    if let Some(h) = sc.cluster.host.as_mut() {
        // 24Ψ ≈ 247 GB needed; 100 GB given.
        h.ram_bytes = 100e9;
    }
    let model = sc.model_spec().expect("model");
    let sm = StepModel::for_scenario(&model, &sc, CostOptions::default());
    let r = search(&model, &sc, &SearchSpace::default(), &sm);
    assert_eq!(r.feasible_count, 0);
    assert_eq!(r.offload, Offload::None);
    assert!(r
        .rejections
        .iter()
        .any(|c| c.reason == "memory_within_capacity"));
    sc.training.offload = Offload::OptimizerCpu;
    let params = model.param_breakdown();
    assert!(!planner_core::memory::offload::layout_fits_host(
        &model, &params, &sc, &sc.layout
    ));
    let enough = {
        let mut s = sc.clone();
        if let Some(h) = s.cluster.host.as_mut() {
            h.ram_bytes = 1.5e12;
        }
        s
    };
    assert!(planner_core::memory::offload::layout_fits_host(
        &model,
        &params,
        &enough,
        &enough.layout
    ));
}
