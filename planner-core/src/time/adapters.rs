//! Step time of LoRA and QLoRA training against full fine-tuning (adapter FLOPs,
//! backward without frozen weight gradients, QLoRA dequantization), and the
//! fine-tuning summary the page and `meshplan eval` show.

use serde::{Deserialize, Serialize};

use crate::base::explain::{fmt_num, Term, Unit};
use crate::input::finetune::*;
use crate::input::layer_ops::layer_ops;
use crate::input::model::ModelSpec;
use crate::input::precision::Precision;

// ---------------------------------------------------------------------------
// Step time.

/// What the step-time model needs to know about adapters, computed once per scenario.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdapterTime {
    /// The mode (LoRA or QLoRA).
    pub mode: FineTuneMode,
    /// Adapter rank `r`: the small dimension of every adapter GEMM.
    pub rank: f64,
    /// Adapter parameters a token passes through (routed experts: its top-k).
    pub active_adapter_params: f64,
    /// All adapter parameters (the optimizer updates only these).
    pub adapter_params: f64,
    /// Of those, in routed experts.
    pub expert_adapter_params: f64,
    /// NF4 base parameters outside routed experts that are dequantized on every use (QLoRA; 0 under LoRA).
    pub quantized_dense_params: f64,
    /// NF4 routed-expert parameters (QLoRA; 0 under LoRA).
    pub quantized_expert_params: f64,
    /// Base parameters (Ψ, nominal scale applied).
    pub base_params: f64,
    /// DoRA: HBM bytes per micro-batch forward of recomputing each adapted linear's weight norm
    /// ([`dora_norm_bytes`]); 0 for every other method.
    pub dora_norm_bytes: f64,
}

/// PEFT's DoRA recomputes, every training forward (its cache is off while training),
/// `‖W + s·B·A‖` per output row of each adapted linear (peft/tuners/lora/dora.py
/// `DoraLinearLayer.forward`): `get_lora_weight` builds an fp32 `d_in × d_in` identity and
/// writes `B·A` as fp32 (`lora_B(lora_A(x_eye))`), the base weight is cast to fp32
/// (`weight.to(x.dtype)`, read 2 B, write 4 B), `scaling * lora_weight` (read 4, write 4), the
/// sum (read 8, write 4) and the row norm (read 4): 34 B per weight element plus 8 B per
/// identity element. Memory-bound; the norm is detached, so backward repeats none of it.
pub fn dora_norm_bytes(model: &ModelSpec, finetune: &FineTune) -> f64 {
    const PER_WEIGHT: f64 = 4.0 + (2.0 + 4.0) + (4.0 + 4.0) + (8.0 + 4.0) + 4.0;
    const PER_IDENTITY: f64 = 4.0 + 4.0;
    if finetune.mode != FineTuneMode::Dora || model.mla.is_some() {
        return 0.0;
    }
    let per_layer: f64 = layer_ops(model, false)
        .iter()
        .filter(|op| op.targeted_by(&finetune.lora.targets))
        .map(|op| PER_WEIGHT * op.d_in * op.d_out + PER_IDENTITY * op.d_in * op.d_in)
        .sum();
    // Dense layers' linears (routed experts are not adapted by DoRA here).
    f64::from(model.layers) * per_layer
}

impl AdapterTime {
    /// Average bytes per frozen base parameter: the working dtype under LoRA; NF4 linears
    /// and fp32 rest under QLoRA (see `memory::adapters::adapter_state`).
    pub fn base_bytes_per_param(&self, precision: &Precision) -> f64 {
        match self.mode {
            FineTuneMode::Qlora if self.base_params > 0.0 => {
                base_bytes(
                    self.mode,
                    precision,
                    (
                        self.base_params,
                        self.quantized_dense_params + self.quantized_expert_params,
                    ),
                    QLORA_UNQUANTIZED_BYTES_PER_PARAM,
                ) / self.base_params
            }
            _ => precision.weight_bytes,
        }
    }

    /// The adapters of a scenario; `None` under full fine-tuning.
    pub fn of(model: &ModelSpec, finetune: &FineTune) -> Option<Self> {
        let lora = finetune.adapters()?;
        let pb = model.param_breakdown();
        let (dense, moe_dense, routed) = layer_adapter_params(model, finetune, Count::All, 1.0);
        let moe_layers = pb.moe_layers as f64;
        let top = model.moe.as_ref().map_or(0.0, |m| {
            f64::from(m.experts_per_token) / f64::from(m.routed_experts.max(1))
        });
        let scale = model.param_scale();
        let experts = pb.routed_experts_total() as f64 * scale;
        let (quantized_dense_params, quantized_expert_params) =
            if finetune.mode == FineTuneMode::Qlora {
                let unquantized = pb.embedding
                    + pb.output
                    + pb.final_norm
                    + (pb.dense_layers + pb.moe_layers) * pb.norms_per_layer;
                let total = pb.total() as f64 * scale;
                (
                    (total - unquantized as f64 * scale - experts).max(0.0),
                    experts,
                )
            } else {
                (0.0, 0.0)
            };
        Some(AdapterTime {
            mode: finetune.mode,
            rank: f64::from(lora.rank),
            active_adapter_params: pb.dense_layers as f64 * dense
                + moe_layers * (moe_dense + routed * top),
            adapter_params: adapter_params_total(model, finetune, Count::Trainable),
            expert_adapter_params: moe_layers * routed,
            quantized_dense_params,
            quantized_expert_params,
            base_params: pb.total() as f64 * scale,
            dora_norm_bytes: dora_norm_bytes(model, finetune),
        })
    }
}

// ---------------------------------------------------------------------------
// Summary.

/// What the page and `meshplan eval` show about the fine-tuning mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FineTuneSummary {
    /// The mode and adapter settings.
    pub finetune: FineTune,
    /// "LoRA r = 16, α = 32 on q,k,v,o".
    pub label: String,
    /// Trainable adapter parameters in the whole model.
    pub adapter_params: f64,
    /// `adapter_params / Ψ`.
    pub trainable_fraction: f64,
    /// Step time of this layout in this mode, s.
    pub step_s: f64,
    /// Step time of the same layout with full fine-tuning, s.
    pub full_step_s: f64,
    /// Explained: adapter parameters (count) and the step-time ratio to full fine-tuning.
    pub terms: Vec<Term>,
}

/// The summary of a scenario's adapters; `None` under full fine-tuning. `step_s` and
/// `full_step_s` come from the caller's time model (the same layout in both modes).
pub fn summary(
    model: &ModelSpec,
    finetune: &FineTune,
    step_s: f64,
    full_step_s: f64,
) -> Option<FineTuneSummary> {
    let lora = finetune.adapters()?;
    let adapter_params = adapter_params_total(model, finetune, Count::Trainable);
    let psi = model.params();
    let pb = model.param_breakdown();
    let layers = pb.dense_layers + pb.moe_layers;
    let per_layer = if layers > 0 {
        adapter_params / layers as f64
    } else {
        0.0
    };
    let targets = lora.targets.to_list();
    let ratio = if full_step_s > 0.0 {
        step_s / full_step_s
    } else {
        0.0
    };
    let quant = if finetune.mode == FineTuneMode::Qlora {
        "; QLoRA adds the dequantization of every NF4 weight before each forward and backward GEMM (bitsandbytes MatMul4Bit, memory-bound)"
    } else {
        ""
    };
    Some(FineTuneSummary {
        finetune: *finetune,
        label: format!(
            "{} r = {}, α = {} on {targets}",
            finetune.mode.label(),
            lora.rank,
            lora.alpha
        ),
        adapter_params,
        trainable_fraction: if psi > 0.0 { adapter_params / psi } else { 0.0 },
        step_s,
        full_step_s,
        terms: vec![
            Term {
                key: "finetune.adapter_params".into(),
                label: "trainable adapter parameters".into(),
                unit: Unit::Count,
                value: adapter_params,
                formula: "Σ_layers Σ_targets r·(d_in + d_out)".into(),
                worked: format!(
                    "{layers} layers × {} = {} ({:.3}% of Ψ = {})",
                    fmt_num(per_layer),
                    fmt_num(adapter_params),
                    100.0 * adapter_params / psi.max(1.0),
                    fmt_num(psi)
                ),
                assumption: format!(
                    "Hu et al. 2021 §4.1: A (r × d_in) and B (d_out × r) per targeted linear ({targets}); MoE: every routed and shared expert's linears"
                ),
            },
            Term {
                key: "finetune.step_vs_full".into(),
                label: "step time vs full fine-tuning".into(),
                unit: Unit::Ratio,
                value: ratio,
                formula: "t_step(adapters) / t_step(full)".into(),
                worked: format!("{:.4} s / {:.4} s = {:.3}", step_s, full_step_s, ratio),
                assumption: format!(
                    "forward unchanged plus 2·Ψ_A FLOPs per token; backward computes input gradients through frozen layers (≈ 2N per token) but no weight gradients for them (saves ≈ 2N per token); gradient communication and the optimizer step cover the adapters only{quant}"
                ),
            },
        ],
    })
}
