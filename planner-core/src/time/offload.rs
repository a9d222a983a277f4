//! Step time under offload: PCIe / NVLink-C2C transfers of gradients and parameters,
//! NVMe reads and writes, and the CPU optimizer step.

use serde::{Deserialize, Serialize};

use crate::base::explain::fmt_num;
use crate::base::explain::{Term, Unit};
use crate::input::host::HostSpec;
use crate::input::layout::ZeroStage;
use crate::input::offload::*;
use crate::input::scenario::Scenario;

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
            unit: Unit::Seconds,
            value: s.total_s,
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
