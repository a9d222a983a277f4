//! The offload settings the DeepSpeed and Accelerate exports write.

use crate::input::layout::ZeroStage;
use crate::input::offload::*;

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
