//! Offload of model state off the GPU: DeepSpeed ZeRO-Offload (optimizer state and fp32
//! gradients in CPU memory), ZeRO-Infinity (optimizer state and optionally parameters on
//! CPU or NVMe) and FSDP2's `CPUOffloadPolicy`. Owns the choice (`training.offload`), which
//! state leaves the GPU, the host memory and NVMe it takes per node, the per-step PCIe /
//! NVMe traffic and CPU optimizer time, its layout rules and the search's offload variants.
//! The host it spends is [`crate::host::HostSpec`].

use serde::{Deserialize, Serialize};

use crate::explain::Term;
use crate::host::HostSpec;
use crate::layout::ZeroStage;
use crate::memory::{fmt_bytes, fmt_num};
use crate::scenario::Scenario;
use crate::validate::{RuleViolation, Severity};

/// Where offloaded state lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// CPU memory (DeepSpeed `device: "cpu"`).
    Cpu,
    /// Local NVMe (DeepSpeed `device: "nvme"`, ZeRO-Infinity).
    Nvme,
}

impl Device {
    /// DeepSpeed's `device` value.
    pub fn id(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Nvme => "nvme",
        }
    }
}

/// What the training run offloads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Offload {
    /// Everything on the GPU.
    #[default]
    None,
    /// DeepSpeed `offload_optimizer: cpu` (ZeRO-Offload): fp32 master weights, Adam moments and
    /// fp32 gradients in CPU memory, the optimizer step on the CPU (DeepSpeed CPU-Adam).
    OptimizerCpu,
    /// DeepSpeed `offload_optimizer: nvme` (ZeRO-Infinity): master weights and moments on NVMe,
    /// fp32 gradients in CPU memory.
    OptimizerNvme,
    /// `offload_optimizer: cpu` and `offload_param: cpu` (ZeRO-3 only): the parameter shards too.
    OptimizerParamsCpu,
    /// `offload_optimizer: nvme` and `offload_param: nvme` (ZeRO-3 only, ZeRO-Infinity).
    OptimizerParamsNvme,
    /// FSDP2 `CPUOffloadPolicy` (ZeRO-3 only): sharded parameters, gradients and optimizer
    /// state in CPU memory, the optimizer step by PyTorch's CPU AdamW.
    Fsdp2Cpu,
}

impl Offload {
    /// Every choice, in the page's order.
    pub const ALL: [Offload; 6] = [
        Offload::None,
        Offload::OptimizerCpu,
        Offload::OptimizerNvme,
        Offload::OptimizerParamsCpu,
        Offload::OptimizerParamsNvme,
        Offload::Fsdp2Cpu,
    ];

    /// Stable identifier (link value `offload=`).
    pub fn id(self) -> &'static str {
        match self {
            Offload::None => "none",
            Offload::OptimizerCpu => "opt-cpu",
            Offload::OptimizerNvme => "opt-nvme",
            Offload::OptimizerParamsCpu => "opt-param-cpu",
            Offload::OptimizerParamsNvme => "opt-param-nvme",
            Offload::Fsdp2Cpu => "fsdp2-cpu",
        }
    }

    /// Parses [`Offload::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.id() == id)
    }

    /// Display label.
    pub fn label(self) -> &'static str {
        match self {
            Offload::None => "No offload",
            Offload::OptimizerCpu => "Optimizer → CPU (ZeRO-Offload)",
            Offload::OptimizerNvme => "Optimizer → NVMe (ZeRO-Infinity)",
            Offload::OptimizerParamsCpu => "Optimizer + params → CPU (ZeRO-3)",
            Offload::OptimizerParamsNvme => "Optimizer + params → NVMe (ZeRO-Infinity)",
            Offload::Fsdp2Cpu => "FSDP2 CPUOffloadPolicy",
        }
    }

    /// The default, left out of files and links.
    pub fn is_none(&self) -> bool {
        *self == Offload::None
    }

    /// Where DeepSpeed puts the optimizer state (`None` for no offload and for FSDP2).
    pub fn optimizer_device(self) -> Option<Device> {
        match self {
            Offload::OptimizerCpu | Offload::OptimizerParamsCpu => Some(Device::Cpu),
            Offload::OptimizerNvme | Offload::OptimizerParamsNvme => Some(Device::Nvme),
            Offload::None | Offload::Fsdp2Cpu => None,
        }
    }

    /// Where DeepSpeed puts the parameter shards (`None` when they stay on the GPU).
    pub fn param_device(self) -> Option<Device> {
        match self {
            Offload::OptimizerParamsCpu => Some(Device::Cpu),
            Offload::OptimizerParamsNvme => Some(Device::Nvme),
            _ => None,
        }
    }

    /// Whether the parameter shards leave the GPU (ZeRO-Infinity param offload, FSDP2).
    pub fn moves_params(self) -> bool {
        self.param_device().is_some() || self == Offload::Fsdp2Cpu
    }

    /// Whether anything uses NVMe.
    pub fn uses_nvme(self) -> bool {
        self.optimizer_device() == Some(Device::Nvme) || self.param_device() == Some(Device::Nvme)
    }

    /// The variants the mesh search tries when nothing fits without offload, cheapest
    /// first: CPU before NVMe, optimizer before parameters (FSDP2's is the same memory as
    /// optimizer + params → CPU with a slower CPU optimizer, so it is not tried).
    pub const SEARCH_VARIANTS: [Offload; 4] = [
        Offload::OptimizerCpu,
        Offload::OptimizerParamsCpu,
        Offload::OptimizerNvme,
        Offload::OptimizerParamsNvme,
    ];
}

/// Which model-state categories leave the GPU under an offload choice and ZeRO stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moved {
    /// The working-weight shards (ZeRO-3 only).
    pub weights: bool,
    /// The GPU's gradient shard.
    pub gradients: bool,
    /// Master weights and optimizer moments.
    pub optimizer: bool,
}

/// What leaves the GPU.
///
/// deepspeedai/DeepSpeed docs/code-docs/source/memory.rst ("GPU RAM"): ZeRO-2 with
/// `offload_optimizer: cpu` keeps `2 × params` on the GPU (the fp16 weights only: the
/// partitioned gradients go to the CPU in fp32); ZeRO-3 keeps `2 × params / GPUs` plus the
/// largest layer gathered, and with `offload_param` only the gathered layer. ZeRO-1 keeps its
/// unpartitioned gradients on the GPU. FSDP2 `CPUOffloadPolicy` (torch/distributed/fsdp
/// `_fully_shard`): sharded parameters, gradients and optimizer state all on the CPU.
pub fn moved(offload: Offload, zero: ZeroStage) -> Moved {
    match offload {
        Offload::None => Moved::default(),
        Offload::Fsdp2Cpu => Moved {
            weights: zero == ZeroStage::Zero3,
            gradients: zero == ZeroStage::Zero3,
            optimizer: zero == ZeroStage::Zero3,
        },
        o => Moved {
            weights: o.param_device().is_some() && zero == ZeroStage::Zero3,
            gradients: zero.number() >= 2,
            optimizer: zero != ZeroStage::Ddp,
        },
    }
}

/// DeepSpeed memory.rst ("General RAM"): `additional_buffer_factor = 1.5`, the estimator's
/// allowance for the host-side buffers beside the offloaded tensors.
pub const DEEPSPEED_HOST_BUFFER_FACTOR: f64 = 1.5;
/// DeepSpeed memory.rst ("Here is a breakdown for the 16 and 18 multipliers"): the CPU keeps
/// the gradients in fp32 for the weight update, 4 bytes per parameter of the partition.
pub const FP32_GRAD_BYTES: f64 = 4.0;
/// DeepSpeed memory.rst: "when pytorch creates a model it creates it in fp32 by default
/// (4 bytes)": every process builds its replica on the CPU before `deepspeed.initialize`
/// unless `zero.Init` (ZeRO-3) constructs it partitioned.
pub const FP32_INIT_BYTES: f64 = 4.0;
// deepspeed/runtime/zero/offload_config.py, offload_optimizer: `buffer_count` default 4 ("at
// least the number of states maintained per parameter by the optimizer ... Adam optimizer
// has 4 states") for NVMe swapping, each one sub-group (config-json.md `sub_group_size`,
// default 1e9 elements) of fp32.
/// Optimizer swap buffers for NVMe (DeepSpeed default `buffer_count`).
pub const OPTIMIZER_SWAP_BUFFERS: f64 = 4.0;
/// Elements per optimizer swap buffer (DeepSpeed default `sub_group_size`).
pub const OPTIMIZER_SWAP_ELEMENTS: f64 = 1e9;
// offload_config.py, offload_param: `buffer_count` default 5, `buffer_size` default 1e8
// elements of the parameter dtype, the buffer pool NVMe parameters are read through.
/// Parameter swap buffers for NVMe (DeepSpeed default `buffer_count`).
pub const PARAM_SWAP_BUFFERS: f64 = 5.0;
/// Elements per parameter swap buffer (DeepSpeed default `buffer_size`).
pub const PARAM_SWAP_ELEMENTS: f64 = 1e8;

/// Host and NVMe bytes one GPU's process holds under an offload choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostPerGpu {
    /// Master weights and moments in CPU memory.
    pub optimizer_cpu_bytes: f64,
    /// The same on NVMe.
    pub optimizer_nvme_bytes: f64,
    /// Gradients of the partition in CPU memory (fp32 for DeepSpeed, the GPU dtype for FSDP2).
    pub gradient_cpu_bytes: f64,
    /// Parameter shards in CPU memory.
    pub param_cpu_bytes: f64,
    /// Parameter shards on NVMe.
    pub param_nvme_bytes: f64,
    /// Pinned swap buffers NVMe traffic goes through.
    pub swap_buffer_bytes: f64,
}

impl HostPerGpu {
    /// CPU memory of the process, before DeepSpeed's buffer factor.
    pub fn cpu_bytes(&self) -> f64 {
        self.optimizer_cpu_bytes
            + self.gradient_cpu_bytes
            + self.param_cpu_bytes
            + self.swap_buffer_bytes
    }

    /// NVMe bytes of the process.
    pub fn nvme_bytes(&self) -> f64 {
        self.optimizer_nvme_bytes + self.param_nvme_bytes
    }
}

/// One GPU's state as the memory model holds it, the inputs of [`host_per_gpu`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuState {
    /// Working-weight bytes on the GPU without offload.
    pub weight_bytes: f64,
    /// Gradient bytes on the GPU without offload.
    pub gradient_bytes: f64,
    /// Optimizer-state bytes (master + moments) without offload.
    pub optimizer_bytes: f64,
    /// Parameters whose optimizer state this GPU holds (its ZeRO partition).
    pub partition_params: f64,
    /// Bytes per working weight.
    pub weight_bytes_per_param: f64,
}

/// Host and NVMe bytes of one GPU's process (DeepSpeed memory.rst, "General RAM": 16 bytes per
/// partition parameter for ZeRO-Offload = 4 fp32 master + 4 + 4 moments + 4 fp32 gradient;
/// 18 with `offload_param` = + 2 fp16 parameter; NVMe keeps master and moments on the drive).
pub fn host_per_gpu(offload: Offload, zero: ZeroStage, s: &GpuState) -> HostPerGpu {
    let m = moved(offload, zero);
    if offload == Offload::Fsdp2Cpu {
        return HostPerGpu {
            optimizer_cpu_bytes: if m.optimizer { s.optimizer_bytes } else { 0.0 },
            gradient_cpu_bytes: if m.gradients { s.gradient_bytes } else { 0.0 },
            param_cpu_bytes: if m.weights { s.weight_bytes } else { 0.0 },
            ..HostPerGpu::default()
        };
    }
    let mut h = HostPerGpu::default();
    match offload.optimizer_device() {
        None => return h,
        Some(_) if !m.optimizer => return h,
        Some(Device::Cpu) => h.optimizer_cpu_bytes = s.optimizer_bytes,
        Some(Device::Nvme) => {
            h.optimizer_nvme_bytes = s.optimizer_bytes;
            h.swap_buffer_bytes +=
                OPTIMIZER_SWAP_BUFFERS * OPTIMIZER_SWAP_ELEMENTS.min(s.partition_params) * 4.0;
        }
    }
    h.gradient_cpu_bytes = FP32_GRAD_BYTES * s.partition_params;
    if m.weights {
        match offload.param_device() {
            Some(Device::Nvme) => {
                h.param_nvme_bytes = s.weight_bytes;
                h.swap_buffer_bytes += PARAM_SWAP_BUFFERS
                    * PARAM_SWAP_ELEMENTS.min(s.partition_params)
                    * s.weight_bytes_per_param;
            }
            _ => h.param_cpu_bytes = s.weight_bytes,
        }
    }
    h
}

/// Host memory and NVMe of one node under offload, against what the node has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostMemory {
    /// The choice.
    pub offload: Offload,
    /// The heaviest stage's per-GPU host and NVMe bytes.
    pub per_gpu: HostPerGpu,
    /// fp32 replica every process builds before partitioning (ZeRO-1/2), bytes per GPU.
    pub init_bytes_per_gpu: f64,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// Buffer factor applied (DeepSpeed's 1.5; 1 for FSDP2).
    pub buffer_factor: f64,
    /// CPU memory needed per node, bytes.
    pub ram_bytes_per_node: f64,
    /// Of it, page-locked (pinned), bytes (DeepSpeed memory.rst "Pinned Memory").
    pub pinned_bytes_per_node: f64,
    /// NVMe needed per node, bytes.
    pub nvme_bytes_per_node: f64,
    /// The node's RAM (0 when the host is unknown).
    pub node_ram_bytes: f64,
    /// The node's NVMe.
    pub node_nvme_bytes: f64,
    /// Whether a host spec was known (preset or `cluster.host`).
    pub host_known: bool,
    /// `ram_bytes_per_node ≤ node_ram_bytes`.
    pub fits_ram: bool,
    /// `nvme_bytes_per_node ≤ node_nvme_bytes`.
    pub fits_nvme: bool,
    /// Every term, the offloaded bytes per GPU then the per-node sums.
    pub terms: Vec<Term>,
}

/// The host memory of a node.
///
/// `per_gpu`: the heaviest stage's [`host_per_gpu`] (a node holding several stages is
/// counted as if every GPU were that stage's: an upper bound); `partition_params` and
/// `replica_params`: that stage's partition and one rank's whole replica (for the fp32
/// build before partitioning, ZeRO-1/2 only: ZeRO-3 is assumed built under `zero.Init`,
/// which Hugging Face Transformers and Accelerate switch on with ZeRO-3).
pub fn host_memory(
    offload: Offload,
    zero: ZeroStage,
    per_gpu: HostPerGpu,
    (partition_params, replica_params): (f64, f64),
    gpus_per_node: u32,
    host: Option<&HostSpec>,
) -> HostMemory {
    let gpn = f64::from(gpus_per_node.max(1));
    let deepspeed = offload.optimizer_device().is_some();
    let steady = per_gpu.cpu_bytes();
    // memory.rst: ZeRO-2 offload `params × max(4 × n_gpus, 16) × additional_buffer_factor`.
    let (ram_bytes_per_node, buffer_factor, init_bytes_per_gpu) =
        ram_bytes_per_node(offload, zero, &per_gpu, replica_params, gpus_per_node);
    // memory.rst "Pinned Memory": the fp32 gradients (4 B), with offload_param also the fp16
    // parameters (2 B), are page-locked when pin_memory is true (the export sets it); NVMe swap buffers too.
    let pinned_bytes_per_node = if offload == Offload::None {
        0.0
    } else {
        gpn * (per_gpu.gradient_cpu_bytes + per_gpu.param_cpu_bytes + per_gpu.swap_buffer_bytes)
    };
    let nvme_bytes_per_node = gpn * per_gpu.nvme_bytes();
    let (node_ram_bytes, node_nvme_bytes) =
        host.map_or((0.0, 0.0), |h| (h.ram_bytes, h.nvme_bytes));
    let host_known = host.is_some();
    let gb = fmt_bytes;
    let mut terms = Vec::new();
    let mut push =
        |key: &str, label: &str, bytes: f64, formula: &str, worked: String, assumption: &str| {
            if bytes > 0.0 {
                terms.push(Term {
                    key: format!("host.{key}"),
                    label: label.to_string(),
                    bytes,
                    formula: formula.to_string(),
                    worked,
                    assumption: assumption.to_string(),
                });
            }
        };
    let p = fmt_num(partition_params);
    push(
        "optimizer_cpu",
        "optimizer state in CPU memory (per GPU)",
        per_gpu.optimizer_cpu_bytes,
        "P_part × bytes_optim",
        format!("{p} params × optimizer bytes = {}", gb(per_gpu.optimizer_cpu_bytes)),
        "fp32 master weights and Adam moments of this GPU's ZeRO partition (DeepSpeed offload_optimizer, FSDP2 CPUOffloadPolicy)",
    );
    push(
        "optimizer_nvme",
        "optimizer state on NVMe (per GPU)",
        per_gpu.optimizer_nvme_bytes,
        "P_part × bytes_optim",
        format!(
            "{p} params × optimizer bytes = {}",
            gb(per_gpu.optimizer_nvme_bytes)
        ),
        "ZeRO-Infinity offload_optimizer device nvme: swapped through pinned CPU buffers each step",
    );
    push(
        "gradients_cpu",
        "gradients in CPU memory (per GPU)",
        per_gpu.gradient_cpu_bytes,
        if deepspeed {
            "4 × P_part"
        } else {
            "P_part × bytes_g"
        },
        format!("{} for {p} params", gb(per_gpu.gradient_cpu_bytes)),
        if deepspeed {
            "DeepSpeed converts the partition's gradients to fp32 on the CPU for the update (memory.rst, \"Note about gradients\")"
        } else {
            "FSDP2 CPUOffloadPolicy: sharded gradients copied to the CPU each backward"
        },
    );
    push(
        "params_cpu",
        "parameter shards in CPU memory (per GPU)",
        per_gpu.param_cpu_bytes,
        "P_part × bytes_w",
        gb(per_gpu.param_cpu_bytes),
        "ZeRO-3 offload_param cpu / FSDP2: only the gathered units stay on the GPU",
    );
    push(
        "params_nvme",
        "parameter shards on NVMe (per GPU)",
        per_gpu.param_nvme_bytes,
        "P_part × bytes_w",
        gb(per_gpu.param_nvme_bytes),
        "ZeRO-Infinity offload_param nvme",
    );
    push(
        "swap_buffers",
        "NVMe swap buffers (per GPU)",
        per_gpu.swap_buffer_bytes,
        "4 × min(1e9, P_part) × 4 B (optimizer) + 5 × min(1e8, P_part) × bytes_w (params)",
        gb(per_gpu.swap_buffer_bytes),
        "DeepSpeed config-json defaults: offload_optimizer buffer_count 4 × sub_group_size 1e9; offload_param buffer_count 5 × buffer_size 1e8",
    );
    push(
        "init_replica",
        "fp32 model built per process before partitioning (per GPU)",
        init_bytes_per_gpu,
        "4 × P_rank",
        format!("4 × {} = {}", fmt_num(replica_params), gb(init_bytes_per_gpu)),
        "memory.rst: PyTorch builds the model in fp32 on the CPU in every process (ZeRO-1/2; ZeRO-3 assumed under zero.Init); the node peak takes the larger of this and the steady state",
    );
    push(
        "ram_per_node",
        "host memory per node",
        ram_bytes_per_node,
        "factor × GPUs per node × max(steady, init)",
        format!(
            "{} × {} × max({}, {}) = {} of {}",
            fmt_num(buffer_factor),
            gpus_per_node,
            gb(steady),
            gb(init_bytes_per_gpu),
            gb(ram_bytes_per_node),
            if host_known {
                gb(node_ram_bytes)
            } else {
                "unknown RAM".to_string()
            }
        ),
        if deepspeed {
            "DeepSpeed's estimator (deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs, stage_1_and_2.py for ZeRO-2) with additional_buffer_factor 1.5; the heaviest stage's GPU for every GPU of the node"
        } else {
            "the offloaded shards of every GPU of the node, no buffer factor documented for FSDP2"
        },
    );
    push(
        "pinned_per_node",
        "of which pinned (page-locked) per node",
        pinned_bytes_per_node,
        "GPUs per node × (gradients + parameters + swap buffers)",
        gb(pinned_bytes_per_node),
        "DeepSpeed memory.rst \"Pinned Memory\": with pin_memory: true as the DeepSpeed export writes it (offload_config.py defaults to false); needs ulimit -l (memlock) at least this large",
    );
    push(
        "nvme_per_node",
        "NVMe per node",
        nvme_bytes_per_node,
        "GPUs per node × NVMe bytes per GPU",
        format!(
            "{} × {} = {} of {}",
            gpus_per_node,
            gb(per_gpu.nvme_bytes()),
            gb(nvme_bytes_per_node),
            gb(node_nvme_bytes)
        ),
        "ZeRO-Infinity swap files under nvme_path on the node's local drives",
    );
    HostMemory {
        offload,
        per_gpu,
        init_bytes_per_gpu,
        gpus_per_node,
        buffer_factor,
        ram_bytes_per_node,
        pinned_bytes_per_node,
        nvme_bytes_per_node,
        node_ram_bytes,
        node_nvme_bytes,
        host_known,
        fits_ram: host_known && ram_bytes_per_node <= node_ram_bytes,
        fits_nvme: nvme_bytes_per_node <= node_nvme_bytes,
        terms,
    }
}

/// Host-capacity violations of an evaluated layout: RAM (`host_ram`) and NVMe (`host_nvme`).
pub fn capacity_violations(host: &HostMemory) -> Vec<RuleViolation> {
    let mut out = Vec::new();
    if host.host_known && !host.fits_ram {
        out.push(RuleViolation {
            field: "host_ram".into(),
            rule: "host_memory_within_node_ram".into(),
            message: format!(
                "offload needs {} of host memory per node, the node has {}",
                fmt_bytes(host.ram_bytes_per_node),
                fmt_bytes(host.node_ram_bytes)
            ),
            severity: Severity::Error,
        });
    }
    if !host.fits_nvme {
        out.push(RuleViolation {
            field: "host_nvme".into(),
            rule: "nvme_within_node_capacity".into(),
            message: format!(
                "offload needs {} of NVMe per node, the node has {}",
                fmt_bytes(host.nvme_bytes_per_node),
                fmt_bytes(host.node_nvme_bytes)
            ),
            severity: Severity::Error,
        });
    }
    out
}

/// The ZeRO stage an offload choice needs, as (rule key, message) when `zero` is not it.
///
/// deepspeedai/DeepSpeed deepspeed/runtime/zero/offload_config.py: offload_optimizer is
/// "Valid with stage 1, 2, and 3", offload_param "Valid only with stage 3"; NVMe swapping of
/// optimizer state is ZeRO-Infinity's, built on stage 3 (stage_1_and_2.py's optimizer takes
/// only `cpu_offload`). FSDP2's `CPUOffloadPolicy` is a `fully_shard` option (ZeRO-3).
pub fn zero_problem(offload: Offload, zero: ZeroStage) -> Option<(&'static str, String)> {
    if offload.is_none() {
        None
    } else if zero == ZeroStage::Ddp {
        Some((
            "offload_needs_zero",
            format!(
                "{} needs a ZeRO stage (1–3); DDP has no partition to offload",
                offload.label()
            ),
        ))
    } else if offload.moves_params() && zero != ZeroStage::Zero3 {
        Some((
            "offload_params_need_zero3",
            format!(
                "{} offloads parameter shards: ZeRO-3 (FSDP) only, not {}",
                offload.label(),
                zero.label()
            ),
        ))
    } else if offload.uses_nvme() && zero != ZeroStage::Zero3 {
        Some((
            "nvme_offload_needs_zero3",
            format!(
                "{}: NVMe offload is ZeRO-Infinity's, ZeRO-3 only, not {}",
                offload.label(),
                zero.label()
            ),
        ))
    } else {
        None
    }
}

/// The offload rules that need no memory model: the ZeRO stage each choice needs, a known
/// host, and NVMe where it is used.
pub fn rule_violations(scenario: &Scenario) -> Vec<RuleViolation> {
    let offload = scenario.training.offload;
    let mut out = Vec::new();
    if offload.is_none() {
        return out;
    }
    let mut add = |field: &str, rule: &str, message: String| {
        out.push(RuleViolation {
            field: field.to_string(),
            rule: rule.to_string(),
            message,
            severity: Severity::Error,
        })
    };
    if let Some((rule, message)) = zero_problem(offload, scenario.layout.zero) {
        add("offload", rule, message);
    }
    let host = scenario.cluster.host_spec();
    match &host {
        None => add(
            "host_ram",
            "offload_needs_host",
            format!(
                "no host preset for GPU '{}': set the node's RAM (host_ram) and NVMe to offload",
                crate::free_text::one_line(&scenario.cluster.gpu.id)
            ),
        ),
        Some(h) if offload.uses_nvme() && (h.nvme_bytes <= 0.0 || h.nvme_read_bytes_per_s <= 0.0 || h.nvme_write_bytes_per_s <= 0.0) => add(
            "host_nvme",
            "nvme_offload_needs_nvme",
            "NVMe offload needs the node's NVMe capacity and read/write bandwidth (host_nvme, host_nvme_read, host_nvme_write)".to_string(),
        ),
        Some(_) => {}
    }
    out
}

/// Seconds the offload adds to one step, by part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OffloadSeconds {
    /// Gradients GPU → CPU over the host link.
    pub link_down_s: f64,
    /// Parameters CPU → GPU over the host link.
    pub link_up_s: f64,
    /// NVMe reads.
    pub nvme_read_s: f64,
    /// NVMe writes.
    pub nvme_write_s: f64,
    /// The optimizer step on the CPU.
    pub cpu_optimizer_s: f64,
    /// Sum: nothing overlapped.
    pub total_s: f64,
}

/// The layout-independent inputs of the offload time.
#[derive(Clone, Debug, PartialEq)]
pub struct OffloadTime {
    /// The choice.
    pub offload: Offload,
    /// Bytes per working weight (what goes up).
    pub weight_bytes: f64,
    /// Bytes per gradient on the GPU (what comes down).
    pub grad_bytes: f64,
    /// Master + moments bytes per parameter (what NVMe swaps).
    pub optimizer_bytes: f64,
    /// GPUs per node (sharing the node's NVMe and CPU).
    pub gpus_per_node: u32,
    /// The host.
    pub host: Option<HostSpec>,
}

impl OffloadTime {
    /// From a scenario.
    pub fn of(scenario: &Scenario) -> Self {
        OffloadTime {
            offload: scenario.training.offload,
            weight_bytes: scenario.precision.weight_bytes,
            grad_bytes: scenario.precision.grad_bytes,
            optimizer_bytes: scenario.precision.optimizer_state_bytes(),
            gpus_per_node: scenario.cluster.gpus_per_node,
            host: scenario.cluster.host_spec(),
        }
    }

    /// Whether the GPU's optimizer step is replaced by the CPU's under `zero`.
    pub fn moves_optimizer(&self, zero: ZeroStage) -> bool {
        moved(self.offload, zero).optimizer
    }

    /// Step seconds for a GPU whose ZeRO partition has `partition_params` parameters, with
    /// `micro_batches` micro-batches per step.
    ///
    /// Ren et al. 2021 §4.1: per step the GPU sends its fp16 gradients to the CPU and gets the
    /// updated fp16 parameters back (2 + 2 bytes per parameter of the partition); DeepSpeed
    /// copies the reduced partition every micro-batch under gradient accumulation
    /// (stage_1_and_2.py `async_accumulate_grad_in_cpu_via_gpu`; stage3.py
    /// `partition_grads`). With parameters offloaded each forward and each backward fetches
    /// the partition before its all-gather, and the CPU updates them in place. NVMe:
    /// optimizer state read and written once per step, offloaded parameters read per
    /// forward/backward and written once. Host link per GPU, NVMe and CPU per node.
    pub fn seconds(
        &self,
        zero: ZeroStage,
        partition_params: f64,
        micro_batches: f64,
    ) -> OffloadSeconds {
        let m = moved(self.offload, zero);
        let Some(host) = self.host.as_ref().filter(|_| m.optimizer) else {
            return OffloadSeconds::default();
        };
        let mb = micro_batches.max(1.0);
        let gpn = f64::from(self.gpus_per_node.max(1));
        let link = host.host_link_bytes_per_s.max(1.0);
        let down_bytes = mb * partition_params * self.grad_bytes;
        let up_bytes = if m.weights {
            2.0 * mb * partition_params * self.weight_bytes
        } else {
            partition_params * self.weight_bytes
        };
        let mut read = 0.0;
        let mut write = 0.0;
        if self.offload.optimizer_device() == Some(Device::Nvme) {
            read += partition_params * self.optimizer_bytes;
            write += partition_params * self.optimizer_bytes;
        }
        if m.weights && self.offload.param_device() == Some(Device::Nvme) {
            read += 2.0 * mb * partition_params * self.weight_bytes;
            write += partition_params * self.weight_bytes;
        }
        let rate = if self.offload == Offload::Fsdp2Cpu {
            host.torch_cpu_adam_params_per_s()
        } else {
            host.cpu_adam_params_per_s()
        };
        let s = OffloadSeconds {
            link_down_s: down_bytes / link,
            link_up_s: up_bytes / link,
            nvme_read_s: gpn * read / host.nvme_read_bytes_per_s.max(1.0),
            nvme_write_s: gpn * write / host.nvme_write_bytes_per_s.max(1.0),
            cpu_optimizer_s: gpn * partition_params / rate.max(1.0),
            total_s: 0.0,
        };
        OffloadSeconds {
            total_s: s.link_down_s
                + s.link_up_s
                + s.nvme_read_s
                + s.nvme_write_s
                + s.cpu_optimizer_s,
            ..s
        }
    }

    /// The step-time term of [`OffloadTime::seconds`].
    pub fn term(&self, s: &OffloadSeconds, partition_params: f64) -> Term {
        let ms = |x: f64| format!("{:.1} ms", x * 1e3);
        let (link, cores) = self
            .host
            .as_ref()
            .map_or((0.0, 0), |h| (h.host_link_bytes_per_s, h.cpu_cores));
        Term {
            key: "time.offload".into(),
            label: format!("Offload ({})", self.offload.label()),
            bytes: s.total_s,
            formula: "m·P·b_g/link (down) + P·b_w/link (up; 2·m·P·b_w with params offloaded) + NVMe bytes·GPUs/node ÷ NVMe bw + GPUs/node·P ÷ CPU-Adam rate".into(),
            worked: format!(
                "P = {} params per GPU, host link {:.0} GB/s: down {} + up {} + NVMe read {} + write {} + CPU optimizer {} ({} cores) = {}",
                fmt_num(partition_params),
                link / 1e9,
                ms(s.link_down_s),
                ms(s.link_up_s),
                ms(s.nvme_read_s),
                ms(s.nvme_write_s),
                ms(s.cpu_optimizer_s),
                cores,
                ms(s.total_s)
            ),
            assumption: "Nothing overlapped (an upper bound: ZeRO-Offload overlaps the gradient copy with backward, §4.2, and its one-step delayed parameter update, off by default, hides the CPU step); CPU-Adam at Ren et al. 2021 Table 4's 10B parameters in 2.57 s per 48 DGX-2 cores (PyTorch CPU AdamW, 14.76 s, for FSDP2); host link per GPU uncontended".into(),
        }
    }
}

/// Rewrites the GPU model-state terms (`model_state.weights|gradients|optimizer`) of the
/// categories `offload` moves: 0 bytes on the GPU, and where the bytes went.
pub fn mark_offloaded(terms: &mut [Term], offload: Offload, zero: ZeroStage, host: &HostPerGpu) {
    let m = moved(offload, zero);
    let optimizer_where = match offload.optimizer_device() {
        Some(Device::Nvme) => format!(
            "{} on NVMe, fp32 gradients {} in CPU memory",
            fmt_bytes(host.optimizer_nvme_bytes),
            fmt_bytes(host.gradient_cpu_bytes)
        ),
        _ => format!("{} in CPU memory", fmt_bytes(host.optimizer_cpu_bytes)),
    };
    let param_where = match offload.param_device() {
        Some(Device::Nvme) => format!("{} on NVMe", fmt_bytes(host.param_nvme_bytes)),
        _ => format!("{} in CPU memory", fmt_bytes(host.param_cpu_bytes)),
    };
    for t in terms.iter_mut() {
        let (gone, place) = match t.key.rsplit('.').next() {
            Some("weights") if t.key.starts_with("model_state.") => {
                (m.weights, param_where.clone())
            }
            Some("gradients") if t.key.starts_with("model_state.") => (
                m.gradients,
                if offload == Offload::Fsdp2Cpu {
                    format!("{} in CPU memory", fmt_bytes(host.gradient_cpu_bytes))
                } else {
                    format!(
                        "fp32 copy {} in CPU memory",
                        fmt_bytes(host.gradient_cpu_bytes)
                    )
                },
            ),
            Some("optimizer") if t.key.starts_with("model_state.") => {
                (m.optimizer, optimizer_where.clone())
            }
            _ => (false, String::new()),
        };
        if gone {
            t.label = format!("{} — offloaded", t.label);
            t.bytes = 0.0;
            t.worked = format!("0 B on the GPU; per GPU {place} (host memory below)");
            t.assumption = format!("{}: moved off the GPU. {}", offload.label(), t.assumption);
        }
    }
}

/// Checks a host's numbers against [`crate::bounds`], naming each by its link key.
pub fn check_host(within: &mut dyn FnMut(&str, f64, crate::bounds::Bounds), h: &HostSpec) {
    use crate::bounds;
    within("host_ram", h.ram_bytes, bounds::HOST_RAM_BYTES);
    within("host_nvme", h.nvme_bytes, bounds::NVME_BYTES);
    within(
        "host_nvme_read",
        h.nvme_read_bytes_per_s,
        bounds::NVME_BYTES_PER_S,
    );
    within(
        "host_nvme_write",
        h.nvme_write_bytes_per_s,
        bounds::NVME_BYTES_PER_S,
    );
    within(
        "host_link",
        h.host_link_bytes_per_s,
        bounds::LINK_BYTES_PER_S,
    );
}

/// Where the DeepSpeed export points NVMe offload; the user sets a directory on the node's
/// local drives (DeepSpeed config-json.md, `nvme_path`). A fixed placeholder: nothing a user
/// types reaches the file.
pub const NVME_PATH_PLACEHOLDER: &str = "/local_nvme";

/// DeepSpeed config-json.md `zero_optimization.offload_optimizer` / `offload_param`:
/// `{device: cpu|nvme, nvme_path, pin_memory}` for the scenario's offload.
pub fn deepspeed_offload(
    offload: Offload,
    zero: ZeroStage,
    out: &mut serde_json::Map<String, serde_json::Value>,
    notes: &mut Vec<String>,
) {
    if offload.is_none() {
        return;
    }
    let (optimizer, params) = if offload == Offload::Fsdp2Cpu {
        notes.push(
            "The plan uses FSDP2's CPUOffloadPolicy; DeepSpeed's nearest is offload_optimizer and \
             offload_param on the CPU (ZeRO-3), written here, whose optimizer step runs on \
             DeepSpeed's CPU-Adam rather than PyTorch's CPU AdamW."
                .to_string(),
        );
        (Some(Device::Cpu), Some(Device::Cpu))
    } else {
        (offload.optimizer_device(), offload.param_device())
    };
    let block = |d: Device| {
        let mut m = serde_json::Map::new();
        m.insert("device".into(), d.id().into());
        if d == Device::Nvme {
            m.insert("nvme_path".into(), NVME_PATH_PLACEHOLDER.into());
        }
        m.insert("pin_memory".into(), true.into());
        serde_json::Value::Object(m)
    };
    if zero == ZeroStage::Ddp {
        notes.push(
            "Offload needs ZeRO stage 1–3 (DeepSpeed offload_optimizer); with stage 0 it is left out."
                .to_string(),
        );
        return;
    }
    if let Some(d) = optimizer {
        out.insert("offload_optimizer".into(), block(d));
    }
    match params {
        Some(d) if zero == ZeroStage::Zero3 => {
            out.insert("offload_param".into(), block(d));
        }
        Some(_) => {
            notes.push("offload_param is only valid with ZeRO stage 3: left out.".to_string())
        }
        None => {}
    }
    if offload.uses_nvme() {
        notes.push(format!(
            "Set nvme_path ({NVME_PATH_PLACEHOLDER} here) to a directory on each node's local NVMe; \
             DeepSpeed's ds_nvme_tune measures the aio settings for those drives."
        ));
    }
}

/// Accelerate's FSDP `fsdp_offload_params` (FSDP2 `CPUOffloadPolicy`: parameters, gradients
/// and optimizer state on the CPU) for the scenario's offload; what FSDP cannot express is
/// said in `notes`.
pub fn accelerate_offload_params(
    offload: Offload,
    zero: ZeroStage,
    notes: &mut Vec<String>,
) -> bool {
    match offload {
        Offload::None => false,
        Offload::Fsdp2Cpu | Offload::OptimizerParamsCpu if zero == ZeroStage::Zero3 => {
            if offload == Offload::OptimizerParamsCpu {
                notes.push(
                    "FSDP2's CPU offload moves the gradient shards to the CPU too and steps \
                     PyTorch's CPU AdamW, not DeepSpeed's CPU-Adam: the plan's offload \
                     (DeepSpeed optimizer + params) is the nearest FSDP setting."
                        .to_string(),
                );
            }
            true
        }
        Offload::Fsdp2Cpu | Offload::OptimizerParamsCpu => {
            notes.push(
                "FSDP CPU offload needs full sharding (ZeRO-3, fsdp_reshard_after_forward: true): \
                 fsdp_offload_params is left false."
                    .to_string(),
            );
            false
        }
        Offload::OptimizerCpu | Offload::OptimizerNvme | Offload::OptimizerParamsNvme => {
            notes.push(format!(
                "FSDP has no {} (optimizer-only or NVMe offload is DeepSpeed's): use the DeepSpeed export, \
                 or FSDP2 CPUOffloadPolicy (fsdp_offload_params: true, parameters too).",
                offload.label()
            ));
            false
        }
    }
}

/// Host RAM per node: DeepSpeed's buffer factor × GPUs per node × the larger of the steady
/// per-GPU bytes and the fp32 replica built before partitioning (ZeRO-1/2 under DeepSpeed).
pub fn ram_bytes_per_node(
    offload: Offload,
    zero: ZeroStage,
    per_gpu: &HostPerGpu,
    replica_params: f64,
    gpus_per_node: u32,
) -> (f64, f64, f64) {
    let deepspeed = offload.optimizer_device().is_some();
    let factor = if deepspeed {
        DEEPSPEED_HOST_BUFFER_FACTOR
    } else {
        1.0
    };
    let init = if deepspeed && zero != ZeroStage::Zero3 {
        FP32_INIT_BYTES * replica_params
    } else {
        0.0
    };
    let gpn = f64::from(gpus_per_node.max(1));
    (factor * gpn * per_gpu.cpu_bytes().max(init), factor, init)
}

/// Whether `layout` under the scenario's offload fits the node's RAM and NVMe and obeys the
/// offload rules ([`rule_violations`]): the mesh search's check, no text.
pub fn layout_fits_host(
    model: &crate::model::ModelSpec,
    params: &crate::model::ParamBreakdown,
    scenario: &Scenario,
    layout: &crate::layout::Layout,
) -> bool {
    let offload = scenario.training.offload;
    if offload.is_none() {
        return true;
    }
    let Some(host) = scenario.cluster.host_spec() else {
        return false;
    };
    if zero_problem(offload, layout.zero).is_some() {
        return false;
    }
    let inputs = crate::memory::MemoryInputs {
        model,
        params,
        precision: &scenario.precision,
        layout,
        training: &scenario.training,
        activations: &scenario.activations,
        overheads: &scenario.overheads,
    };
    let spans = crate::memory::stage_spans_of(params, layout);
    let gpn = scenario.cluster.gpus_per_node;
    spans.as_slice().iter().all(|span| {
        let n = crate::memory::stage_numbers(&inputs, span);
        let (ram, _, _) =
            ram_bytes_per_node(offload, layout.zero, &n.offload_host, n.params.total(), gpn);
        ram <= host.ram_bytes
            && f64::from(gpn.max(1)) * n.offload_host.nvme_bytes() <= host.nvme_bytes
    })
}

/// The article's model-state bars (one per ZeRO stage) with what `offload` moves under each
/// stage taken off the GPU: 0 bytes, labelled, and the bar's total lowered to match.
pub fn offload_bars(bars: &mut [crate::memory::ModelStateBar], offload: Offload) {
    if offload.is_none() {
        return;
    }
    for bar in bars.iter_mut() {
        let m = moved(offload, bar.zero);
        let mut total = 0.0;
        for t in bar.replicated.iter_mut().chain(bar.sharded.iter_mut()) {
            let gone = match t.key.rsplit('.').next() {
                Some("weights") => m.weights,
                Some("gradients") => m.gradients,
                Some("optimizer") => m.optimizer,
                _ => false,
            };
            if gone {
                t.label = format!("{} — offloaded", t.label);
                t.worked = format!("0 B on the GPU ({} moves it to the host)", offload.label());
                t.bytes = 0.0;
            }
            total += t.bytes;
        }
        bar.total_bytes = total;
    }
}
