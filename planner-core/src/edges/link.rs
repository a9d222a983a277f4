//! Share links: a scenario as a short, readable query string, and back.
//!
//! `encode` writes `v=1`, the model, and then only the values that differ from
//! [`default_scenario`] (or, for the GPU and precision bytes, from the chosen
//! preset or recipe). Floats use Rust's shortest round-trip form, so
//! `decode(&encode(s)) == Ok(s)` for every valid scenario. Custom models list
//! every shape field. Parameter names are the `field`s of [`FieldError`].

use std::fmt::Display;
use std::str::FromStr;

use crate::input::bill::PriceKind;
use crate::input::calibration::CalibrationSummary;
use crate::input::engine_scheduler::KvAdmission;
use crate::input::finetune::{FineTuneMode, LoraTargets};
use crate::input::framework::Framework;
use crate::input::hardware::{gpu_preset, gpu_presets, Cluster, GpuSpec, LinkSpec};
use crate::input::host::HostSpec;
use crate::input::kernels::Kernels;
use crate::input::layout::{Recompute, Schedule, ZeroStage};
use crate::input::model::{AttentionWindow, FfnKind, MlaSpec, ModelSpec, MoeSpec, NormKind};
use crate::input::offload::Offload;
use crate::input::overlap::Switch;
use crate::input::precision::{ComputeDtype, Precision, PrecisionRecipe};
use crate::input::scenario::{Measured, ModelChoice, Scenario, ServeDtype, SCENARIO_VERSION};
use crate::input::speculation::Speculation;
use crate::memory::engine_kv_pool::{EngineProfile, ServingEngine};
use crate::resolve::presets::{default_scenario, model_preset, model_presets};
use crate::resolve::validate::FieldError;

/// `model=` value for custom shapes.
pub const CUSTOM_MODEL: &str = "custom";

type Get<T> = fn(&T) -> String;
type Set<T> = fn(&mut T, &str) -> Result<(), String>;

/// One link parameter bound to a field of `T`.
struct Field<T> {
    key: &'static str,
    get: Get<T>,
    set: Set<T>,
}

fn num<T: FromStr>(v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("'{v}' is not a valid number"))
}

fn flag(v: &str) -> Result<bool, String> {
    match v {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(format!("'{v}' is not 0 or 1")),
    }
}

fn bit(b: bool) -> String {
    if b { "1" } else { "0" }.to_string()
}

fn text<T: Display>(v: T) -> String {
    v.to_string()
}

macro_rules! field {
    ($key:literal, $t:ty, |$s:ident| $path:expr, number) => {
        Field::<$t> {
            key: $key,
            get: |$s| text($path),
            set: |$s, v| {
                $path = num(v)?;
                Ok(())
            },
        }
    };
    // An optional number: empty means none.
    ($key:literal, $t:ty, |$s:ident| $path:expr, optional_number) => {
        Field::<$t> {
            key: $key,
            get: |$s| $path.map(text).unwrap_or_default(),
            set: |$s, v| {
                $path = optional(v, num)?;
                Ok(())
            },
        }
    };
    ($key:literal, $t:ty, |$s:ident| $path:expr, flag) => {
        Field::<$t> {
            key: $key,
            get: |$s| bit($path),
            set: |$s, v| {
                $path = flag(v)?;
                Ok(())
            },
        }
    };
    ($key:literal, $t:ty, |$s:ident| $path:expr, $to:expr, $from:expr, $what:literal) => {
        Field::<$t> {
            key: $key,
            get: |$s| $to($path).to_string(),
            set: |$s, v| {
                $path = $from(v).ok_or_else(|| format!("'{v}' is not {}", $what))?;
                Ok(())
            },
        }
    };
}

/// An optional value: empty means none.
fn optional<T>(v: &str, parse: fn(&str) -> Result<T, String>) -> Result<Option<T>, String> {
    if v.is_empty() {
        Ok(None)
    } else {
        parse(v).map(Some)
    }
}

/// `serve_profile=` value: `max_num_batched_tokens,max_num_seqs,non_torch_bytes,cuda_graph_bytes`.
fn profile_to_link(p: &EngineProfile) -> String {
    format!(
        "{},{},{},{}",
        p.max_num_batched_tokens, p.max_num_seqs, p.non_torch_bytes, p.cuda_graph_bytes
    )
}

fn profile_from_link(v: &str) -> Result<EngineProfile, String> {
    let parts: Vec<&str> = v.split(',').collect();
    let [tokens, seqs, non_torch, graphs] = parts.as_slice() else {
        return Err(format!(
            "'{}' is not max_num_batched_tokens,max_num_seqs,non_torch_bytes,cuda_graph_bytes",
            crate::base::free_text::one_line(v)
        ));
    };
    Ok(EngineProfile {
        max_num_batched_tokens: num(tokens)?,
        max_num_seqs: num(seqs)?,
        non_torch_bytes: num(non_torch)?,
        cuda_graph_bytes: num(graphs)?,
    })
}

fn compute_id(c: ComputeDtype) -> &'static str {
    match c {
        ComputeDtype::Bf16 => "bf16",
        ComputeDtype::Fp8 => "fp8",
        ComputeDtype::Fp4 => "fp4",
    }
}

fn compute_from_id(v: &str) -> Option<ComputeDtype> {
    match v {
        "bf16" => Some(ComputeDtype::Bf16),
        "fp8" => Some(ComputeDtype::Fp8),
        "fp4" => Some(ComputeDtype::Fp4),
        _ => None,
    }
}

fn ffn_kind_id(k: FfnKind) -> &'static str {
    match k {
        FfnKind::SwiGlu => "swiglu",
        FfnKind::GeluMlp => "gelu",
    }
}

fn ffn_kind_from_id(v: &str) -> Option<FfnKind> {
    match v {
        "swiglu" => Some(FfnKind::SwiGlu),
        "gelu" => Some(FfnKind::GeluMlp),
        _ => None,
    }
}

fn norm_id(n: NormKind) -> &'static str {
    match n {
        NormKind::RmsNorm => "rms",
        NormKind::LayerNorm => "ln",
    }
}

fn norm_from_id(v: &str) -> Option<NormKind> {
    match v {
        "rms" => Some(NormKind::RmsNorm),
        "ln" => Some(NormKind::LayerNorm),
        _ => None,
    }
}

fn zero_id(z: ZeroStage) -> u8 {
    z.number()
}

fn zero_from_id(v: &str) -> Option<ZeroStage> {
    v.parse().ok().and_then(ZeroStage::from_number)
}

fn precision_fields() -> [Field<Precision>; 6] {
    [
        field!("weight_bytes", Precision, |p| p.weight_bytes, number),
        field!("grad_bytes", Precision, |p| p.grad_bytes, number),
        field!("master_bytes", Precision, |p| p.master_bytes, number),
        field!("optim_bytes", Precision, |p| p.optimizer_bytes, number),
        field!("act_bytes", Precision, |p| p.activation_bytes, number),
        field!(
            "compute",
            Precision,
            |p| p.compute,
            compute_id,
            compute_from_id,
            "bf16 or fp8"
        ),
    ]
}

fn gpu_fields() -> [Field<GpuSpec>; 9] {
    [
        Field {
            key: "gpu_name",
            get: |g| g.name.clone(),
            set: |g, v| {
                g.name = v.to_string();
                Ok(())
            },
        },
        field!("gpu_mem", GpuSpec, |g| g.memory_bytes, number),
        field!(
            "gpu_mem_datasheet",
            GpuSpec,
            |g| g.datasheet_memory_bytes,
            number
        ),
        field!("gpu_hbm", GpuSpec, |g| g.hbm_bytes_per_s, number),
        field!("gpu_bf16", GpuSpec, |g| g.bf16_flops_per_s, number),
        field!("gpu_fp8", GpuSpec, |g| g.fp8_flops_per_s, number),
        field!("gpu_nvlink", GpuSpec, |g| g.intra_node_bytes_per_s, number),
        field!("gpu_net", GpuSpec, |g| g.inter_node_bytes_per_s, number),
        field!("gpu_gpn", GpuSpec, |g| g.gpus_per_node, number),
    ]
}

fn link_fields() -> [Field<(LinkSpec, LinkSpec)>; 4] {
    [
        field!(
            "nvlink_bw",
            (LinkSpec, LinkSpec),
            |l| l.0.bytes_per_s,
            number
        ),
        field!(
            "nvlink_lat",
            (LinkSpec, LinkSpec),
            |l| l.0.latency_s,
            number
        ),
        field!("net_bw", (LinkSpec, LinkSpec), |l| l.1.bytes_per_s, number),
        field!("net_lat", (LinkSpec, LinkSpec), |l| l.1.latency_s, number),
    ]
}

/// A node's host ([`crate::input::host::HostSpec`]): written in full when `cluster.host` is set.
fn host_fields() -> [Field<HostSpec>; 6] {
    [
        field!("host_ram", HostSpec, |h| h.ram_bytes, number),
        field!("host_nvme", HostSpec, |h| h.nvme_bytes, number),
        field!(
            "host_nvme_read",
            HostSpec,
            |h| h.nvme_read_bytes_per_s,
            number
        ),
        field!(
            "host_nvme_write",
            HostSpec,
            |h| h.nvme_write_bytes_per_s,
            number
        ),
        field!("host_link", HostSpec, |h| h.host_link_bytes_per_s, number),
        field!("host_cores", HostSpec, |h| h.cpu_cores, number),
    ]
}

/// Everything after the model, precision and cluster, compared with the default scenario.
fn scenario_fields() -> Vec<Field<Scenario>> {
    let mut fields = Vec::with_capacity(75);
    fields.extend(training_fields());
    fields.extend(layout_fields());
    fields.extend(overhead_fields());
    fields.extend(serving_fields());
    fields.extend(bill_fields());
    fields
}

/// The training run: sequence, batch, offload, fine-tuning and packing.
fn training_fields() -> [Field<Scenario>; 9] {
    [
        field!("seq", Scenario, |s| s.training.seq_len, number),
        field!("gbs", Scenario, |s| s.training.global_batch, number),
        field!(
            "offload",
            Scenario,
            |s| s.training.offload,
            Offload::id,
            Offload::from_id,
            "none, opt-cpu, opt-nvme, opt-param-cpu, opt-param-nvme or fsdp2-cpu"
        ),
        field!(
            "ft",
            Scenario,
            |s| s.training.finetune.mode,
            FineTuneMode::id,
            FineTuneMode::from_id,
            "full, lora, qlora, dora, lora-fa, ia3 or prompt-tuning"
        ),
        field!(
            "vtok",
            Scenario,
            |s| s.training.finetune.virtual_tokens,
            number
        ),
        field!(
            "lora_r",
            Scenario,
            |s| s.training.finetune.lora.rank,
            number
        ),
        field!(
            "lora_alpha",
            Scenario,
            |s| s.training.finetune.lora.alpha,
            number
        ),
        Field::<Scenario> {
            key: "lora_mod",
            get: |s| s.training.finetune.lora.targets.to_list(),
            set: |s, v| {
                s.training.finetune.lora.targets = LoraTargets::parse(v)?;
                Ok(())
            },
        },
        field!("pack", Scenario, |s| s.training.packing, flag),
    ]
}

/// The layout: parallel degrees, micro-batch, schedule, ZeRO, recompute and stage split.
fn layout_fields() -> [Field<Scenario>; 13] {
    [
        field!("tp", Scenario, |s| s.layout.tp, number),
        field!("pp", Scenario, |s| s.layout.pp, number),
        field!("cp", Scenario, |s| s.layout.cp, number),
        field!("dp", Scenario, |s| s.layout.dp, number),
        field!("ep", Scenario, |s| s.layout.ep, number),
        field!("etp", Scenario, |s| s.layout.expert_tp, number),
        field!("vpp", Scenario, |s| s.layout.virtual_stages, number),
        field!("mbs", Scenario, |s| s.layout.micro_batch, number),
        field!(
            "sched",
            Scenario,
            |s| s.layout.schedule,
            Schedule::id,
            Schedule::from_id,
            "gpipe, 1f1b, interleaved or zb"
        ),
        field!(
            "zero",
            Scenario,
            |s| s.layout.zero,
            zero_id,
            zero_from_id,
            "0, 1, 2 or 3"
        ),
        field!(
            "recompute",
            Scenario,
            |s| s.layout.recompute,
            Recompute::id,
            Recompute::from_id,
            "none, selective or full"
        ),
        field!("sp", Scenario, |s| s.layout.sequence_parallel, flag),
        Field {
            key: "split",
            get: |s| s.layout.stage_split.to_link(),
            set: |s, v| {
                s.layout.stage_split = crate::input::layout::StageSplit::from_link(v)?;
                Ok(())
            },
        },
    ]
}

/// Activations, memory overheads, framework, kernels, overlaps and MoE routing.
fn overhead_fields() -> [Field<Scenario>; 19] {
    [
        field!("flash", Scenario, |s| s.activations.flash_attention, flag),
        field!("fp32_logits", Scenario, |s| s.activations.fp32_logits, flag),
        field!("logits", Scenario, |s| s.activations.count_logits, flag),
        field!(
            "cuda_ctx",
            Scenario,
            |s| s.overheads.cuda_context_bytes,
            number
        ),
        field!(
            "nccl_buf",
            Scenario,
            |s| s.overheads.nccl_buffer_bytes_per_group,
            number
        ),
        field!(
            "cublas_ws",
            Scenario,
            |s| s.overheads.cublas_workspace_bytes,
            number
        ),
        field!(
            "bucket",
            Scenario,
            |s| s.overheads.gradient_bucket_bytes,
            number
        ),
        field!(
            "z3_units",
            Scenario,
            |s| s.overheads.zero3_units_in_flight,
            number
        ),
        field!("frag", Scenario, |s| s.overheads.allocator_fraction, number),
        field!("usable", Scenario, |s| s.overheads.usable_fraction, number),
        field!(
            "framework",
            Scenario,
            |s| s.overheads.framework,
            Framework::id,
            Framework::from_id,
            "article, megatron-core, torchtitan or deepspeed"
        ),
        field!(
            "kernels",
            Scenario,
            |s| s.overheads.kernels,
            Kernels::id,
            Kernels::from_id,
            "default, fused, eager or compile"
        ),
        field!(
            "ov_tp",
            Scenario,
            |s| s.overheads.overlap.tp_comm,
            Switch::id,
            Switch::from_id,
            "default, on or off"
        ),
        field!(
            "ov_grad",
            Scenario,
            |s| s.overheads.overlap.grad_reduce,
            Switch::id,
            Switch::from_id,
            "default, on or off"
        ),
        field!(
            "ov_param",
            Scenario,
            |s| s.overheads.overlap.param_gather,
            Switch::id,
            Switch::from_id,
            "default, on or off"
        ),
        field!(
            "ov_ep",
            Scenario,
            |s| s.overheads.overlap.ep_comm,
            Switch::id,
            Switch::from_id,
            "default, on or off"
        ),
        field!(
            "moe_cf",
            Scenario,
            |s| s.overheads.moe_routing.capacity_factor,
            optional_number
        ),
        field!(
            "moe_pad",
            Scenario,
            |s| s.overheads.moe_routing.pad_to_capacity,
            flag
        ),
        field!(
            "moe_load",
            Scenario,
            |s| s.overheads.moe_routing.measured_busiest_load,
            optional_number
        ),
    ]
}

/// Serving: dtypes, context, concurrency, parallelism and the engine's choices.
fn serving_fields() -> [Field<Scenario>; 14] {
    [
        field!(
            "serve_w",
            Scenario,
            |s| s.serving.weight_dtype,
            ServeDtype::id,
            ServeDtype::from_id,
            "bf16, fp8, int8 or int4"
        ),
        field!(
            "serve_kv",
            Scenario,
            |s| s.serving.kv_dtype,
            ServeDtype::id,
            ServeDtype::from_id,
            "bf16, fp8, int8 or int4"
        ),
        field!("serve_ctx", Scenario, |s| s.serving.context_len, number),
        field!(
            "serve_conc",
            Scenario,
            |s| s.serving.target_concurrency,
            number
        ),
        field!("serve_tp", Scenario, |s| s.serving.tp, number),
        field!("serve_pp", Scenario, |s| s.serving.pp, number),
        field!(
            "serve_util",
            Scenario,
            |s| s.serving.memory_utilization,
            number
        ),
        field!("serve_ws", Scenario, |s| s.serving.workspace_bytes, number),
        field!(
            "serve_engine",
            Scenario,
            |s| s.serving.engine,
            ServingEngine::id,
            ServingEngine::from_id,
            "vllm or sglang"
        ),
        field!(
            "serve_memfrac",
            Scenario,
            |s| s.serving.mem_fraction_static,
            optional_number
        ),
        field!(
            "serve_maxseqs",
            Scenario,
            |s| s.serving.max_running_seqs,
            optional_number
        ),
        Field::<Scenario> {
            key: "serve_admit",
            get: |s| {
                s.serving
                    .kv_admission
                    .map(|a| a.id().to_string())
                    .unwrap_or_default()
            },
            set: |s, v| {
                s.serving.kv_admission = optional(v, |v| {
                    KvAdmission::from_id(v)
                        .ok_or_else(|| format!("'{v}' is not preempt or reserve"))
                })?;
                Ok(())
            },
        },
        Field::<Scenario> {
            key: "serve_spec",
            get: |s| {
                s.serving
                    .speculation
                    .as_ref()
                    .map(Speculation::to_link)
                    .unwrap_or_default()
            },
            set: |s, v| {
                s.serving.speculation = optional(v, Speculation::from_link)?;
                Ok(())
            },
        },
        Field::<Scenario> {
            key: "serve_profile",
            get: |s| {
                s.serving
                    .engine_profile
                    .as_ref()
                    .map(profile_to_link)
                    .unwrap_or_default()
            },
            set: |s, v| {
                s.serving.engine_profile = optional(v, profile_from_link)?;
                Ok(())
            },
        },
    ]
}

/// The bill and its goals: tokens, prices, power, failures, deadline and fleet.
fn bill_fields() -> [Field<Scenario>; 20] {
    [
        field!("bill_tok", Scenario, |s| s.bill.tokens, optional_number),
        field!("bill_steps", Scenario, |s| s.bill.steps, optional_number),
        field!(
            "bill_price",
            Scenario,
            |s| s.bill.price_kind,
            PriceKind::id,
            PriceKind::from_id,
            "on-demand, reserved or owned"
        ),
        field!("bill_usd_h", Scenario, |s| s.bill.usd_per_gpu_hour, number),
        field!("bill_capex", Scenario, |s| s.bill.capex_usd_per_gpu, number),
        field!(
            "bill_years",
            Scenario,
            |s| s.bill.amortisation_years,
            number
        ),
        field!("bill_kwh", Scenario, |s| s.bill.usd_per_kwh, number),
        field!("bill_pue", Scenario, |s| s.bill.pue, number),
        field!("bill_node_w", Scenario, |s| s.bill.node_overhead_w, number),
        field!(
            "bill_board_w",
            Scenario,
            |s| s.bill.board_power_w,
            optional_number
        ),
        field!(
            "bill_ckpt_gbs",
            Scenario,
            |s| s.bill.checkpoint_write_gb_s_per_node,
            number
        ),
        field!("bill_restart_s", Scenario, |s| s.bill.restart_s, number),
        field!(
            "bill_fail",
            Scenario,
            |s| s.bill.failures_per_gpu_hour,
            number
        ),
        field!(
            "bill_days",
            Scenario,
            |s| s.bill.goals.deadline_days,
            number
        ),
        field!(
            "bill_budget",
            Scenario,
            |s| s.bill.goals.budget_usd,
            optional_number
        ),
        Field {
            key: "bill_nodes",
            get: |s| join(&s.bill.goals.node_counts),
            set: |s, v| {
                s.bill.goals.node_counts = list(v, num)?;
                Ok(())
            },
        },
        field!("fleet_rps", Scenario, |s| s.bill.goals.rate_rps, number),
        field!(
            "fleet_ttft_ms",
            Scenario,
            |s| s.bill.goals.ttft_ms,
            optional_number
        ),
        field!(
            "fleet_tpot_ms",
            Scenario,
            |s| s.bill.goals.tpot_ms,
            optional_number
        ),
        Field {
            key: "fleet_gpus",
            get: |s| s.bill.goals.fleet_gpus.join(","),
            set: |s, v| {
                s.bill.goals.fleet_gpus = list(v, preset_id)?;
                Ok(())
            },
        },
    ]
}

/// A comma-separated list (`16,32,64`); empty means none.
fn list<T>(v: &str, parse: fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    if v.trim().is_empty() {
        return Ok(Vec::new());
    }
    v.split(',').map(|item| parse(item.trim())).collect()
}

fn join<T: Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A GPU preset's id, refused unless a preset has it (the message quotes it on one line).
fn preset_id(v: &str) -> Result<String, String> {
    match gpu_preset(v) {
        Some(g) => Ok(g.id),
        None => Err(format!(
            "'{}' is not a GPU preset",
            crate::base::free_text::one_line(v)
        )),
    }
}

/// Shape fields of a custom model, always all written. `required` ones must be
/// given; the others default as noted in [`custom_template`].
fn model_fields() -> [(Field<ModelSpec>, bool); 15] {
    [
        (
            Field {
                key: "name",
                get: |m| m.name.clone(),
                set: |m, v| {
                    m.name = v.to_string();
                    Ok(())
                },
            },
            false,
        ),
        (field!("layers", ModelSpec, |m| m.layers, number), true),
        (field!("hidden", ModelSpec, |m| m.hidden, number), true),
        (field!("heads", ModelSpec, |m| m.heads, number), true),
        (field!("kv_heads", ModelSpec, |m| m.kv_heads, number), false),
        (field!("head_dim", ModelSpec, |m| m.head_dim, number), false),
        (field!("ffn", ModelSpec, |m| m.ffn, number), true),
        (
            field!(
                "ffn_kind",
                ModelSpec,
                |m| m.ffn_kind,
                ffn_kind_id,
                ffn_kind_from_id,
                "swiglu or gelu"
            ),
            false,
        ),
        (field!("vocab", ModelSpec, |m| m.vocab, number), true),
        (
            field!("tied", ModelSpec, |m| m.tied_embeddings, flag),
            false,
        ),
        (
            field!(
                "norm",
                ModelSpec,
                |m| m.norm,
                norm_id,
                norm_from_id,
                "rms or ln"
            ),
            false,
        ),
        (field!("dropout", ModelSpec, |m| m.dropout, flag), false),
        (field!("qkv_bias", ModelSpec, |m| m.qkv_bias, flag), false),
        (field!("bias", ModelSpec, |m| m.linear_bias, flag), false),
        (
            field!("pos", ModelSpec, |m| m.learned_positions, number),
            false,
        ),
    ]
}

fn moe_fields() -> [(Field<MoeSpec>, bool); 5] {
    [
        (
            field!("experts", MoeSpec, |m| m.routed_experts, number),
            true,
        ),
        (
            field!("topk", MoeSpec, |m| m.experts_per_token, number),
            true,
        ),
        (
            field!("shared", MoeSpec, |m| m.shared_experts, number),
            false,
        ),
        (
            field!("expert_ffn", MoeSpec, |m| m.expert_ffn, number),
            true,
        ),
        (
            field!("dense_layers", MoeSpec, |m| m.dense_layers, number),
            false,
        ),
    ]
}

fn window_fields() -> [(Field<AttentionWindow>, bool); 2] {
    [
        (
            field!("window", AttentionWindow, |m| m.window_tokens, number),
            true,
        ),
        (
            field!("full_every", AttentionWindow, |m| m.full_every, number),
            false,
        ),
    ]
}

fn mla_fields() -> [(Field<MlaSpec>, bool); 5] {
    [
        (field!("q_lora", MlaSpec, |m| m.q_lora_rank, number), false),
        (field!("kv_lora", MlaSpec, |m| m.kv_lora_rank, number), true),
        (
            field!("rope_dim", MlaSpec, |m| m.qk_rope_head_dim, number),
            true,
        ),
        (
            field!("nope_dim", MlaSpec, |m| m.qk_nope_head_dim, number),
            true,
        ),
        (field!("v_dim", MlaSpec, |m| m.v_head_dim, number), true),
    ]
}

/// Custom-model defaults for the optional fields: Llama-style (SwiGLU, RMSNorm,
/// untied, no biases, no dropout); `kv_heads` = heads and `head_dim` = hidden / heads
/// are filled in after the required fields are read.
fn custom_template() -> ModelSpec {
    crate::resolve::presets::dense_template("Custom model")
}

/// The GPU a `gpu=` id starts from: the preset, or for another id an H100-like
/// template carrying that id (its name and figures then come as overrides).
fn base_gpu(id: &str, default: &GpuSpec) -> GpuSpec {
    gpu_preset(id).unwrap_or_else(|| GpuSpec {
        id: id.to_string(),
        name: id.to_string(),
        // Not the template's datasheet: a custom GPU's label follows its `gpu_mem`.
        datasheet_memory_bytes: 0.0,
        ..default.clone()
    })
}

// --- percent-encoding (RFC 3986 unreserved set; '+' is a space, as in forms) ---

fn escape(out: &mut String, s: &str) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
    }
}

fn unescape(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = |c: u8| char::from(c).to_digit(16);
                let pair = bytes
                    .get(i + 1)
                    .copied()
                    .and_then(hex)
                    .zip(bytes.get(i + 2).copied().and_then(hex));
                let (hi, lo) =
                    pair.ok_or_else(|| "a '%' is not followed by two hex digits".to_string())?;
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| "percent-escapes do not form UTF-8 text".to_string())
}

struct Writer(String);

impl Writer {
    fn push(&mut self, key: &str, value: &str) {
        if !self.0.is_empty() {
            self.0.push('&');
        }
        escape(&mut self.0, key);
        self.0.push('=');
        escape(&mut self.0, value);
    }

    fn diff<T>(&mut self, fields: &[Field<T>], value: &T, base: &T) {
        for f in fields {
            let v = (f.get)(value);
            if v != (f.get)(base) {
                self.push(f.key, &v);
            }
        }
    }
}

/// The scenario as a query string (no leading `?`): `v=1`, the model, then what
/// differs from [`default_scenario`].
pub fn encode(s: &Scenario) -> String {
    let d = default_scenario();
    let mut w = Writer(String::new());
    w.push("v", &s.version.to_string());
    match &s.model {
        ModelChoice::Preset(id) => w.push("model", id),
        ModelChoice::Custom(m) => {
            w.push("model", CUSTOM_MODEL);
            for (f, _) in model_fields() {
                w.push(f.key, &(f.get)(m));
            }
            if let Some(moe) = &m.moe {
                for (f, _) in moe_fields() {
                    w.push(f.key, &(f.get)(moe));
                }
            }
            if let Some(mla) = &m.mla {
                for (f, _) in mla_fields() {
                    w.push(f.key, &(f.get)(mla));
                }
            }
            if let Some(window) = &m.attention_window {
                for (f, _) in window_fields() {
                    w.push(f.key, &(f.get)(window));
                }
            }
            if let Some(psi) = m.nominal_params {
                w.push("psi", &psi.to_string());
            }
            if m.mtp_layers > 0 {
                w.push("mtp", &m.mtp_layers.to_string());
            }
        }
    }

    let p = &s.precision;
    if p.recipe != d.precision.recipe {
        w.push("prec", p.recipe.id());
    }
    w.diff(&precision_fields(), p, &Precision::from_recipe(p.recipe));

    let gpu = &s.cluster.gpu;
    if gpu.id != d.cluster.gpu.id {
        w.push("gpu", &gpu.id);
    }
    let mut gpu_base = base_gpu(&gpu.id, &d.cluster.gpu);
    if gpu_preset(&gpu.id).is_none() {
        // A custom GPU always names itself, which is how decode tells it from a typo.
        w.push("gpu_name", &gpu.name);
        gpu_base.name = gpu.name.clone();
    }
    w.diff(&gpu_fields(), gpu, &gpu_base);

    let c = &s.cluster;
    if c.gpus_per_node != gpu.gpus_per_node {
        w.push("gpn", &c.gpus_per_node.to_string());
    }
    if c.world_size() != d.cluster.world_size() {
        w.push("gpus", &c.world_size().to_string());
    }
    let link_base = Cluster::of(gpu.clone(), c.nodes);
    w.diff(
        &link_fields(),
        &(c.intra_node.clone(), c.inter_node.clone()),
        &(link_base.intra_node, link_base.inter_node),
    );

    if let Some(h) = &c.host {
        for f in host_fields() {
            w.push(f.key, &(f.get)(h));
        }
    }
    w.diff(&scenario_fields(), s, &d);
    if let Some(measured) = &s.calibration {
        w.push("cal", &measured.summary.to_compact());
        w.push("cal_on", &bit(measured.enabled));
    }
    w.0
}

/// Longest query a link may be (a calibration summary is well under 4 KB).
pub const MAX_LINK_BYTES: usize = 64 * 1024;
/// Most parameters a link may hold: every parameter once, with room to spare for
/// unknown ones the lenient decoder reports.
pub const MAX_LINK_PARAMS: usize = 256;

/// The pairs of a query, in order, each used at most once.
struct Params {
    pairs: Vec<(String, String, bool)>,
    skip: Vec<String>,
}

impl Params {
    fn parse(input: &str, errors: &mut Vec<FieldError>) -> Self {
        let s = input.trim();
        let s = if let Some(i) = s.find('?') {
            &s[i + 1..]
        } else if let Some(i) = s.find('#') {
            &s[i + 1..]
        } else if s.contains("://") {
            ""
        } else {
            s
        };
        let s = s.split('#').next().unwrap_or("");
        let mut pairs: Vec<(String, String, bool)> = Vec::new();
        if s.len() > MAX_LINK_BYTES {
            errors.push(FieldError::new(
                "v",
                format!(
                    "the link is {} bytes long, over {MAX_LINK_BYTES}; nothing was read",
                    s.len()
                ),
            ));
            return Params {
                pairs,
                skip: Vec::new(),
            };
        }
        let mut seen = std::collections::HashSet::new();
        for (i, piece) in s.split('&').filter(|p| !p.is_empty()).enumerate() {
            if i == MAX_LINK_PARAMS {
                // Each later pass of the lenient decoder is linear in the pairs: bound them.
                errors.push(FieldError::new(
                    crate::base::free_text::one_line(piece.split('=').next().unwrap_or(piece))
                        .as_str(),
                    format!(
                        "the link has more than {MAX_LINK_PARAMS} parameters; this one and the rest were not read"
                    ),
                ));
                break;
            }
            let (k, v) = piece.split_once('=').unwrap_or((piece, ""));
            let key = match unescape(k) {
                Ok(k) => k,
                Err(e) => {
                    errors.push(FieldError::new(k, e));
                    continue;
                }
            };
            if key.is_empty() {
                errors.push(FieldError::new(
                    piece,
                    "a parameter with no name before its '='",
                ));
                continue;
            }
            let value = match unescape(v) {
                Ok(v) => v,
                Err(e) => {
                    errors.push(FieldError::new(&key, e));
                    continue;
                }
            };
            if !seen.insert(key.clone()) {
                errors.push(FieldError::new(&key, "given more than once"));
                continue;
            }
            pairs.push((key, value, false));
        }
        Params {
            pairs,
            skip: Vec::new(),
        }
    }

    /// The value of `key`, marking it used; `None` if absent, excluded or already taken.
    fn take(&mut self, key: &str) -> Option<String> {
        let skip = self.skip.iter().any(|k| k == key);
        let (_, v, used) = self.pairs.iter_mut().find(|(k, _, _)| k == key)?;
        if *used {
            return None;
        }
        *used = true;
        if skip {
            None
        } else {
            Some(v.clone())
        }
    }

    fn has(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _, _)| k == key)
    }

    fn apply<T>(&mut self, fields: &[Field<T>], target: &mut T, errors: &mut Vec<FieldError>) {
        for f in fields {
            if let Some(v) = self.take(f.key) {
                if let Err(e) = (f.set)(target, &v) {
                    errors.push(FieldError::new(f.key, e));
                }
            }
        }
    }

    /// Fills every field; a missing required one is an error. Returns false on any error.
    fn apply_all<T>(
        &mut self,
        fields: &[(Field<T>, bool)],
        target: &mut T,
        errors: &mut Vec<FieldError>,
    ) -> bool {
        let before = errors.len();
        for (f, required) in fields {
            match self.take(f.key) {
                Some(v) => {
                    if let Err(e) = (f.set)(target, &v) {
                        errors.push(FieldError::new(f.key, e));
                    }
                }
                None if *required => {
                    errors.push(FieldError::new(f.key, "required with model=custom"))
                }
                None => {}
            }
        }
        errors.len() == before
    }
}

/// Every link parameter name, in the order `encode` writes them (the `field`s
/// of [`FieldError`]s from decoding and validation are among these).
pub fn parameter_names() -> Vec<&'static str> {
    let mut names = vec!["v", "model"];
    names.extend(model_keys());
    names.push("prec");
    names.extend(precision_fields().iter().map(|f| f.key));
    names.push("gpu");
    names.extend(gpu_fields().iter().map(|f| f.key));
    names.extend(["gpn", "gpus"]);
    names.extend(link_fields().iter().map(|f| f.key));
    names.extend(host_fields().iter().map(|f| f.key));
    names.extend(scenario_fields().iter().map(|f| f.key));
    names.extend(["cal", "cal_on"]);
    names
}

fn model_keys() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = model_fields().iter().map(|(f, _)| f.key).collect();
    keys.extend(moe_fields().iter().map(|(f, _)| f.key));
    keys.extend(mla_fields().iter().map(|(f, _)| f.key));
    keys.push("psi");
    keys.push("mtp");
    keys
}

fn decode_custom_model(p: &mut Params, errors: &mut Vec<FieldError>) -> Option<ModelSpec> {
    let mut m = custom_template();
    let mut ok = p.apply_all(&model_fields(), &mut m, errors);
    if !p.has("kv_heads") || p.skip.iter().any(|k| k == "kv_heads") {
        m.kv_heads = m.heads;
    }
    if !p.has("head_dim") || p.skip.iter().any(|k| k == "head_dim") {
        m.head_dim = m.hidden.checked_div(m.heads).unwrap_or(0);
    }
    if p.has("experts") || p.has("topk") || p.has("expert_ffn") {
        let mut moe = MoeSpec {
            routed_experts: 0,
            experts_per_token: 0,
            shared_experts: 0,
            expert_ffn: 0,
            dense_layers: 0,
        };
        ok &= p.apply_all(&moe_fields(), &mut moe, errors);
        m.moe = Some(moe);
    }
    if p.has("kv_lora") || p.has("rope_dim") || p.has("nope_dim") || p.has("v_dim") {
        let mut mla = MlaSpec {
            q_lora_rank: 0,
            kv_lora_rank: 0,
            qk_rope_head_dim: 0,
            qk_nope_head_dim: 0,
            v_head_dim: 0,
        };
        ok &= p.apply_all(&mla_fields(), &mut mla, errors);
        m.mla = Some(mla);
    }
    if p.has("window") || p.has("full_every") {
        let mut window = AttentionWindow {
            window_tokens: 0,
            full_every: 0,
        };
        ok &= p.apply_all(&window_fields(), &mut window, errors);
        m.attention_window = Some(window);
    }
    if let Some(v) = p.take("mtp") {
        match num::<u32>(&v) {
            Ok(n) => m.mtp_layers = n,
            Err(e) => {
                errors.push(FieldError::new("mtp", e));
                ok = false;
            }
        }
    }
    if let Some(v) = p.take("psi") {
        match num::<f64>(&v) {
            Ok(psi) => m.nominal_params = Some(psi),
            Err(e) => {
                errors.push(FieldError::new("psi", e));
                ok = false;
            }
        }
    }
    ok.then_some(m)
}

/// One decoding pass with `p.skip` ignored; errors appended.
fn decode_pass(p: &mut Params, errors: &mut Vec<FieldError>) -> Scenario {
    for pair in &mut p.pairs {
        pair.2 = pair.0 == "v";
    }
    let mut s = default_scenario();
    let d = default_scenario();

    match p.take("model") {
        Some(id) if id == CUSTOM_MODEL => {
            if let Some(m) = decode_custom_model(p, errors) {
                s.model = ModelChoice::Custom(m);
            }
        }
        Some(id) => {
            if model_preset(&id).is_some() {
                s.model = ModelChoice::Preset(id);
            } else {
                let known: Vec<&str> = model_presets().iter().map(|m| m.id).collect();
                errors.push(FieldError::new(
                    "model",
                    format!(
                        "unknown model '{id}' (known: {}, or custom)",
                        known.join(", ")
                    ),
                ));
            }
        }
        None => {}
    }
    for key in model_keys() {
        if p.take(key).is_some() {
            errors.push(FieldError::new(key, "only used with model=custom"));
        }
    }

    if let Some(v) = p.take("prec") {
        match PrecisionRecipe::from_id(&v) {
            Some(r) => s.precision = Precision::from_recipe(r),
            None => {
                let known: Vec<&str> = PrecisionRecipe::ALL.iter().map(|r| r.id()).collect();
                errors.push(FieldError::new(
                    "prec",
                    format!("unknown recipe '{v}' (known: {})", known.join(", ")),
                ));
            }
        }
    }
    p.apply(&precision_fields(), &mut s.precision, errors);

    let mut gpu = d.cluster.gpu.clone();
    if let Some(id) = p.take("gpu") {
        if gpu_preset(&id).is_some()
            || (p.has("gpu_name") && !p.skip.iter().any(|k| k == "gpu_name"))
        {
            gpu = base_gpu(&id, &d.cluster.gpu);
        } else {
            let known: Vec<String> = gpu_presets().into_iter().map(|g| g.id).collect();
            errors.push(FieldError::new(
                "gpu",
                format!(
                    "unknown GPU '{id}' (known: {}; a custom GPU also needs gpu_name)",
                    known.join(", ")
                ),
            ));
        }
    }
    p.apply(&gpu_fields(), &mut gpu, errors);
    if gpu.gpus_per_node == 0 {
        // Every count below divides by it: refuse it here, before any division.
        errors.push(FieldError::new("gpu_gpn", "must be at least 1"));
        gpu.gpus_per_node = d.cluster.gpu.gpus_per_node.max(1);
    }

    let mut gpn = gpu.gpus_per_node;
    if let Some(v) = p.take("gpn") {
        match num::<u32>(&v) {
            Ok(n) if n >= 1 => gpn = n,
            Ok(_) => errors.push(FieldError::new("gpn", "must be at least 1")),
            Err(e) => errors.push(FieldError::new("gpn", e)),
        }
    }
    let mut gpus = d.cluster.world_size();
    if let Some(v) = p.take("gpus") {
        match num::<u64>(&v) {
            Ok(n) => gpus = n,
            Err(e) => errors.push(FieldError::new("gpus", e)),
        }
    }
    let nodes = match u32::try_from(gpus / u64::from(gpn)) {
        Ok(n) if n >= 1 && gpus.is_multiple_of(u64::from(gpn)) => n,
        _ => {
            errors.push(FieldError::new(
                "gpus",
                format!("{gpus} GPUs is not a whole number (≥ 1) of nodes of {gpn}"),
            ));
            // Keep the default cluster size, in whole nodes of this GPU.
            u32::try_from(d.cluster.world_size() / u64::from(gpn))
                .unwrap_or(1)
                .max(1)
        }
    };
    let mut cluster = Cluster::of(gpu, nodes);
    cluster.gpus_per_node = gpn;
    let mut links = (cluster.intra_node.clone(), cluster.inter_node.clone());
    p.apply(&link_fields(), &mut links, errors);
    (cluster.intra_node, cluster.inter_node) = links;
    let given = |k: &str| p.has(k) && !p.skip.iter().any(|s| s == k);
    if host_fields().iter().any(|f| given(f.key)) {
        // Keys not given keep the GPU's server preset (all six are written by `encode`).
        let mut host = cluster.host_spec().unwrap_or(HostSpec {
            ram_bytes: 0.0,
            nvme_bytes: 0.0,
            nvme_read_bytes_per_s: 0.0,
            nvme_write_bytes_per_s: 0.0,
            host_link_bytes_per_s: 0.0,
            cpu_cores: 0,
        });
        p.apply(&host_fields(), &mut host, errors);
        cluster.host = Some(host);
    } else {
        // Dropped (lenient decoding) host keys are still read, so none is reported unknown.
        for f in host_fields() {
            let _ = p.take(f.key);
        }
    }
    s.cluster = cluster;

    p.apply(&scenario_fields(), &mut s, errors);
    s.calibration = decode_calibration(p, errors);

    for (k, _, used) in &p.pairs {
        if !used {
            errors.push(FieldError::new(k, "unknown parameter"));
        }
    }
    s
}

/// `s` with one parameter of the scenario's tail (the bill, serving and training keys of
/// [`parameter_names`], not the model, precision or cluster) set from `value` as a link
/// writes it, then validated: the new scenario, or an error naming `key` (`s` itself is
/// never changed). The page's bill controls set their inputs through it.
pub fn with_parameter(s: &Scenario, key: &str, value: &str) -> Result<Scenario, FieldError> {
    let field = scenario_fields()
        .into_iter()
        .find(|f| f.key == key)
        .ok_or_else(|| FieldError::new(key, "unknown parameter"))?;
    let mut out = s.clone();
    (field.set)(&mut out, value.trim()).map_err(|m| FieldError::new(key, m))?;
    match out.validate() {
        Ok(()) => Ok(out),
        Err(errors) => Err(errors
            .iter()
            .find(|e| e.field == key)
            .or(errors.first())
            .cloned()
            .unwrap_or_else(|| FieldError::new(key, "not valid"))),
    }
}

/// Reads `cal` (a calibration summary's compact form) and `cal_on`.
fn decode_calibration(p: &mut Params, errors: &mut Vec<FieldError>) -> Option<Measured> {
    let cal = p.take("cal");
    let on = p.take("cal_on");
    let Some(text) = cal else {
        if on.is_some() {
            errors.push(FieldError::new("cal_on", "only used with cal"));
        }
        return None;
    };
    let summary = match CalibrationSummary::from_compact(&text).and_then(|c| c.check().map(|()| c))
    {
        Ok(c) => c,
        Err(e) => {
            errors.push(FieldError::new("cal", e));
            return None;
        }
    };
    let enabled = match on.as_deref().map(flag) {
        None => true,
        Some(Ok(b)) => b,
        Some(Err(e)) => {
            errors.push(FieldError::new("cal_on", e));
            true
        }
    };
    Some(Measured { summary, enabled })
}

/// Reads `v`; `Err` when the link is from another schema version.
fn check_version(p: &mut Params) -> Result<(), FieldError> {
    match p.take("v") {
        None => Ok(()),
        Some(v) if v == SCENARIO_VERSION.to_string() => Ok(()),
        Some(v) => Err(FieldError::new(
            "v",
            format!("link version '{v}' is not supported (this build reads v={SCENARIO_VERSION}); nothing was read"),
        )),
    }
}

/// Decodes a link, falling back to the default for each bad parameter; returns
/// the scenario and every problem found. An unsupported `v` rejects the whole
/// link (default scenario, one error naming `v`). Consistency problems between
/// valid values (e.g. more GPUs in the layout than the cluster has) are reported
/// but left as given when no single parameter can be blamed.
pub fn decode_lenient(q: &str) -> (Scenario, Vec<FieldError>) {
    let mut parse_errors = Vec::new();
    let mut p = Params::parse(q, &mut parse_errors);
    if let Err(e) = check_version(&mut p) {
        return (default_scenario(), vec![e]);
    }
    let mut dropped: Vec<FieldError> = Vec::new();
    // Each round drops at least one given parameter, so this ends.
    for _ in 0..=p.pairs.len() {
        let mut errors = Vec::new();
        let s = decode_pass(&mut p, &mut errors);
        let invalid = s.validate().err().unwrap_or_default();
        let mut blamed: Vec<FieldError> = Vec::new();
        for e in errors.iter().chain(&invalid) {
            if p.has(&e.field) && !p.skip.contains(&e.field) {
                blamed.push(e.clone());
            }
        }
        if blamed.is_empty() {
            let mut all = parse_errors;
            all.extend(dropped);
            for e in errors.into_iter().chain(invalid) {
                if !all.contains(&e) {
                    all.push(e);
                }
            }
            return (s, all);
        }
        for e in blamed {
            if !p.skip.contains(&e.field) {
                p.skip.push(e.field.clone());
            }
            dropped.push(e);
        }
    }
    (default_scenario(), parse_errors)
}

/// Decodes a link strictly: any bad parameter, unknown parameter or invalid
/// result is an error. Accepts a bare query, one with a leading `?`, or a full URL.
pub fn decode(q: &str) -> Result<Scenario, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut p = Params::parse(q, &mut errors);
    if let Err(e) = check_version(&mut p) {
        return Err(vec![e]);
    }
    let s = decode_pass(&mut p, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    s.validate().map(|()| s)
}
