//! The layout rules of offload: the ZeRO stage each choice needs, a known host, NVMe
//! where NVMe is used. Host capacity is checked with the memory it needs
//! ([`crate::memory::offload::capacity_violations`]).

use crate::input::layout::ZeroStage;
use crate::input::offload::*;
use crate::input::scenario::Scenario;
use crate::resolve::validate::{RuleViolation, Severity};

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
                crate::base::free_text::one_line(&scenario.cluster.gpu.id)
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
