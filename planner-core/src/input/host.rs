//! The host side of a node: CPU memory, local NVMe, the GPU↔CPU link and the CPU's
//! optimizer rate. What offload ([`crate::input::offload`]) spends; each GPU preset states its
//! usual server's host ([`crate::input::gpu_traits::GpuTraits::host`], cited there), every
//! field editable through `cluster.host`.

use serde::{Deserialize, Serialize};

/// Decimal terabyte, as server datasheets count RAM and drives.
const TB: f64 = 1e12;
/// Decimal gigabyte per second.
const GB_PER_S: f64 = 1e9;

// Ren et al. 2021 (ZeRO-Offload, USENIX ATC '21) Table 4: DeepSpeed's CPU-Adam updates 10B
// parameters in 2.57 s on one DGX-2 (Table 2: 2 × Xeon Platinum 8168, 48 cores), PyTorch's
// CPU Adam in 14.76 s. Per core, so a preset scales it by its own core count (CPU-Adam is
// AVX-512/OpenMP parallel over cores, §5.1).
/// DeepSpeed CPU-Adam, parameters updated per second per CPU core.
pub const CPU_ADAM_PARAMS_PER_S_PER_CORE: f64 = 10e9 / 2.57 / 48.0;
/// PyTorch's own `torch.optim.AdamW` on the CPU (what FSDP2's `CPUOffloadPolicy` steps with),
/// parameters per second per core: the same table's PT-CPU column.
pub const TORCH_CPU_ADAM_PARAMS_PER_S_PER_CORE: f64 = 10e9 / 14.76 / 48.0;

/// One node's host resources.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// CPU memory of the node, bytes.
    pub ram_bytes: f64,
    /// Local NVMe the job may use for offload, bytes (0 = none).
    pub nvme_bytes: f64,
    /// NVMe read bandwidth of the node (all drives striped), bytes per second.
    pub nvme_read_bytes_per_s: f64,
    /// NVMe write bandwidth of the node, bytes per second.
    pub nvme_write_bytes_per_s: f64,
    /// GPU↔CPU link per GPU per direction (PCIe, or NVLink-C2C on Grace), bytes per second.
    pub host_link_bytes_per_s: f64,
    /// CPU cores of the node (what the CPU optimizer runs on).
    pub cpu_cores: u32,
}

impl HostSpec {
    /// DeepSpeed CPU-Adam rate of the node, parameters per second.
    pub fn cpu_adam_params_per_s(&self) -> f64 {
        f64::from(self.cpu_cores) * CPU_ADAM_PARAMS_PER_S_PER_CORE
    }

    /// PyTorch CPU AdamW rate of the node, parameters per second.
    pub fn torch_cpu_adam_params_per_s(&self) -> f64 {
        f64::from(self.cpu_cores) * TORCH_CPU_ADAM_PARAMS_PER_S_PER_CORE
    }
}

// deepspeedai/DeepSpeed blogs/deepnvme/06-2025: ds_io over a RAID-0 of 4 PCIe Gen4 NVMe SSDs
// reads 10 GB/s and writes 5 GB/s (and 4 → 8 Gen5 drives scales reads 27 → 48, writes 11 → 26):
// per Gen4 drive 2.5 GB/s read, 1.25 GB/s write, striped drives adding up.
const GEN4_DRIVE_READ_BYTES_PER_S: f64 = 10.0 * GB_PER_S / 4.0;
const GEN4_DRIVE_WRITE_BYTES_PER_S: f64 = 5.0 * GB_PER_S / 4.0;

/// A DGX-style host: `ram_tb` TB of RAM, `drives` Gen4 NVMe drives of `drive_tb` TB striped,
/// a host link of `link_gb_per_s` GB/s each way per GPU and `cores` CPU cores.
pub fn dgx_host(
    ram_tb: f64,
    drives: u32,
    drive_tb: f64,
    link_gb_per_s: f64,
    cores: u32,
) -> HostSpec {
    let d = f64::from(drives);
    HostSpec {
        ram_bytes: ram_tb * TB,
        nvme_bytes: d * drive_tb * TB,
        nvme_read_bytes_per_s: d * GEN4_DRIVE_READ_BYTES_PER_S,
        nvme_write_bytes_per_s: d * GEN4_DRIVE_WRITE_BYTES_PER_S,
        host_link_bytes_per_s: link_gb_per_s * GB_PER_S,
        cpu_cores: cores,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_adam_speedup_matches_deepspeeds_tutorial() {
        // The Table 4 figures (10B parameters: CPU-Adam 2.57 s, PyTorch CPU 14.76 s) give a
        // 14.76 / 2.57 = 5.74× speedup; DeepSpeed's ZeRO-Offload tutorial
        // (deepspeed.ai/tutorials/zero-offload): "DeepSpeedCPUAdam is 5X–7X faster than the
        // standard PyTorch implementation". Per core: 10e9 / 2.57 / 48 = 81,063,553 params/s.
        let speedup = CPU_ADAM_PARAMS_PER_S_PER_CORE / TORCH_CPU_ADAM_PARAMS_PER_S_PER_CORE;
        assert!((5.0..=7.0).contains(&speedup), "{speedup}");
        assert!((CPU_ADAM_PARAMS_PER_S_PER_CORE - 81_063_553.0).abs() < 1.0);
    }

    #[test]
    fn dgx_h200_host_matches_nvidias_mlperf_system_record() {
        // mlcommons/inference_results_v4.1 closed/NVIDIA/systems/H200-SXM-141GBx8_TRT_MaxQ.json
        // (NVIDIA's own DGX H200 submission): "host_memory_capacity": "2 TB", 2 × "Intel(R)
        // Xeon(R) Platinum 8480C" of 56 cores: the DGX H100/H200 user guide's figures.
        let h = crate::input::hardware::gpu_traits("h200")
            .host
            .clone()
            .expect("preset");
        assert_eq!(h.ram_bytes, 2e12);
        assert_eq!(h.cpu_cores, 2 * 56);
        // 8 × 3.84 TB U.2 data drives = 30.72 TB.
        assert!((h.nvme_bytes - 30.72e12).abs() < 1e6);
    }
}
