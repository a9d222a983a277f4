//! Memory under offload: what each GPU keeps, the host RAM and NVMe each process and
//! each node takes (DeepSpeed's estimator semantics), the GPU terms rewritten to say
//! where the bytes went, and the host-capacity rules. The choice is
//! [`crate::input::offload`].

use serde::{Deserialize, Serialize};

use crate::base::explain::{fmt_bytes, fmt_num};
use crate::base::explain::{Term, Unit};
use crate::input::host::HostSpec;
use crate::input::layout::ZeroStage;
use crate::input::offload::*;
use crate::input::scenario::Scenario;
use crate::resolve::offload_rules::zero_problem;
use crate::resolve::validate::{RuleViolation, Severity};

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

/// The host terms of one node, each kept only when its bytes are positive.
struct HostTerms(Vec<Term>);

impl HostTerms {
    fn push(
        &mut self,
        key: &str,
        label: &str,
        bytes: f64,
        formula: &str,
        worked: String,
        assumption: &str,
    ) {
        if bytes > 0.0 {
            self.0.push(Term {
                key: format!("host.{key}"),
                label: label.to_string(),
                value: bytes,
                unit: Unit::Bytes,
                formula: formula.to_string(),
                worked,
                assumption: assumption.to_string(),
            });
        }
    }
}

/// The offloaded bytes of one GPU, term by term, then the fp32 build before partitioning.
fn per_gpu_terms(
    terms: &mut HostTerms,
    per_gpu: &HostPerGpu,
    (partition_params, replica_params): (f64, f64),
    init_bytes_per_gpu: f64,
    deepspeed: bool,
) {
    let gb = fmt_bytes;
    let p = fmt_num(partition_params);
    terms.push(
        "optimizer_cpu",
        "optimizer state in CPU memory (per GPU)",
        per_gpu.optimizer_cpu_bytes,
        "P_part × bytes_optim",
        format!("{p} params × optimizer bytes = {}", gb(per_gpu.optimizer_cpu_bytes)),
        "fp32 master weights and Adam moments of this GPU's ZeRO partition (DeepSpeed offload_optimizer, FSDP2 CPUOffloadPolicy)",
    );
    terms.push(
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
    terms.push(
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
    terms.push(
        "params_cpu",
        "parameter shards in CPU memory (per GPU)",
        per_gpu.param_cpu_bytes,
        "P_part × bytes_w",
        gb(per_gpu.param_cpu_bytes),
        "ZeRO-3 offload_param cpu / FSDP2: only the gathered units stay on the GPU",
    );
    terms.push(
        "params_nvme",
        "parameter shards on NVMe (per GPU)",
        per_gpu.param_nvme_bytes,
        "P_part × bytes_w",
        gb(per_gpu.param_nvme_bytes),
        "ZeRO-Infinity offload_param nvme",
    );
    terms.push(
        "swap_buffers",
        "NVMe swap buffers (per GPU)",
        per_gpu.swap_buffer_bytes,
        "4 × min(1e9, P_part) × 4 B (optimizer) + 5 × min(1e8, P_part) × bytes_w (params)",
        gb(per_gpu.swap_buffer_bytes),
        "DeepSpeed config-json defaults: offload_optimizer buffer_count 4 × sub_group_size 1e9; offload_param buffer_count 5 × buffer_size 1e8",
    );
    terms.push(
        "init_replica",
        "fp32 model built per process before partitioning (per GPU)",
        init_bytes_per_gpu,
        "4 × P_rank",
        format!("4 × {} = {}", fmt_num(replica_params), gb(init_bytes_per_gpu)),
        "memory.rst: PyTorch builds the model in fp32 on the CPU in every process (ZeRO-1/2; ZeRO-3 assumed under zero.Init); the node peak takes the larger of this and the steady state",
    );
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
    let mut terms = HostTerms(Vec::new());
    per_gpu_terms(
        &mut terms,
        &per_gpu,
        (partition_params, replica_params),
        init_bytes_per_gpu,
        deepspeed,
    );
    terms.push(
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
    terms.push(
        "pinned_per_node",
        "of which pinned (page-locked) per node",
        pinned_bytes_per_node,
        "GPUs per node × (gradients + parameters + swap buffers)",
        gb(pinned_bytes_per_node),
        "DeepSpeed memory.rst \"Pinned Memory\": with pin_memory: true as the DeepSpeed export writes it (offload_config.py defaults to false); needs ulimit -l (memlock) at least this large",
    );
    terms.push(
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
        terms: terms.0,
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
            t.value = 0.0;
            t.worked = format!("0 B on the GPU; per GPU {place} (host memory below)");
            t.assumption = format!("{}: moved off the GPU. {}", offload.label(), t.assumption);
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
/// offload rules ([`crate::resolve::offload_rules::rule_violations`]): the mesh search's check, no text.
pub fn layout_fits_host(
    model: &crate::input::model::ModelSpec,
    params: &crate::input::model::ParamBreakdown,
    scenario: &Scenario,
    layout: &crate::input::layout::Layout,
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
    let inputs = crate::memory::stage_peak::MemoryInputs::of(scenario, model, params, layout);
    let spans = crate::memory::model_state::stage_spans_of(params, layout);
    let gpn = scenario.cluster.gpus_per_node;
    spans.as_slice().iter().all(|span| {
        let n = crate::memory::stage_peak::stage_numbers(&inputs, span);
        let (ram, _, _) =
            ram_bytes_per_node(offload, layout.zero, &n.offload_host, n.params.total(), gpn);
        ram <= host.ram_bytes
            && f64::from(gpn.max(1)) * n.offload_host.nvme_bytes() <= host.nvme_bytes
    })
}

/// The article's model-state bars (one per ZeRO stage) with what `offload` moves under each
/// stage taken off the GPU: 0 bytes, labelled, and the bar's total lowered to match.
pub fn offload_bars(bars: &mut [crate::memory::state_terms::ModelStateBar], offload: Offload) {
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
                t.value = 0.0;
            }
            total += t.value;
        }
        bar.total_bytes = total;
    }
}
