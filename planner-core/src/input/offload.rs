//! The offload choice: where model state may leave the GPU: DeepSpeed ZeRO-Offload (optimizer state and fp32
//! gradients in CPU memory), ZeRO-Infinity (optimizer state and optionally parameters on
//! CPU or NVMe) and FSDP2's `CPUOffloadPolicy`. Owns the choice (`training.offload`), which
//! state leaves the GPU, the host memory and NVMe it takes per node, the per-step PCIe /
//! NVMe traffic and CPU optimizer time, its layout rules and the search's offload variants.
//! The host it spends is [`crate::input::host::HostSpec`].

use serde::{Deserialize, Serialize};

use crate::input::host::HostSpec;
use crate::input::layout::ZeroStage;

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

/// Checks a host's numbers against [`crate::base::bounds`], naming each by its link key.
pub fn check_host(within: &mut dyn FnMut(&str, f64, crate::base::bounds::Bounds), h: &HostSpec) {
    use crate::base::bounds;
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
