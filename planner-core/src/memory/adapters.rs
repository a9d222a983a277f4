//! Memory of LoRA and QLoRA training: the adapters' parameters per rank, the
//! frozen (QLoRA: NF4-quantized) base weights, the adapters' optimizer state, and
//! which saved activations a frozen linear layer no longer needs. The mode and its
//! settings are [`crate::input::finetune`].

use serde::{Deserialize, Serialize};

use crate::base::explain::{fmt_bytes, fmt_num};
use crate::base::explain::{Term, Unit};
use crate::input::finetune::*;
use crate::input::framework::Framework;
use crate::input::layer_ops::{layer_ops, Input};
use crate::input::layout::{Layout, ZeroStage};
use crate::input::model::{ModelSpec, ParamBreakdown};
use crate::input::precision::Precision;
use crate::memory::activations::{LayerKind, TensorKind};
use crate::memory::model_state::{
    rank_params, stage_spans, ModelStateBytes, RankParams, ShardGroups, StageSpan, StatePart,
};
use crate::memory::state_terms::ModelStateBar;

/// Adapter parameters one rank of `span` holds, split like [`RankParams`] (dense part
/// sharded by ZeRO over dp·cp, routed-expert adapters ÷EP over dp·cp/ep).
pub fn adapter_rank_params(
    model: &ModelSpec,
    layout: &Layout,
    span: &StageSpan,
    ft: &FineTune,
    count: Count,
) -> RankParams {
    let t = f64::from(layout.tp.max(1));
    let ep = f64::from(layout.ep.max(1));
    let (dense, moe_dense, routed) = layer_adapter_params(model, ft, count, t);
    let routed = routed / ep;
    let mut largest: f64 = 0.0;
    if span.dense_layers > 0 {
        largest = dense;
    }
    if span.moe_layers > 0 {
        largest = largest.max(moe_dense + routed);
    }
    // Prompt tuning's embeddings sit with the input embedding, on the first stage.
    let prompt = if span.embedding {
        prompt_params_counted(model, ft, count)
    } else {
        0.0
    };
    RankParams {
        dense: f64::from(span.dense_layers) * dense
            + f64::from(span.moe_layers) * moe_dense
            + prompt,
        expert: f64::from(span.moe_layers) * routed,
        largest_unit: largest.max(prompt),
    }
}

/// Bytes per adapter parameter: weights, gradients and optimizer state (master + moments).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdapterBytes {
    /// Weight bytes.
    pub weight: f64,
    /// Gradient bytes.
    pub grad: f64,
    /// Optimizer state bytes (master + moments).
    pub optimizer: f64,
}

impl AdapterBytes {
    /// The adapters' bytes: the recipe's, or fp32 where the stack keeps adapters in fp32.
    /// PEFT `get_peft_model(..., autocast_adapter_dtype=True)` (the default,
    /// peft/tuners/tuners_utils.py `_cast_adapter_dtype`) casts bf16/fp16 adapter weights to
    /// fp32; their gradients are fp32 and torch.optim.AdamW keeps its moments in the
    /// parameter's dtype (torch/optim/adamw.py `torch.zeros_like(p)`), with no master copy.
    pub fn of(precision: &Precision, fp32_adapters: bool) -> Self {
        if !fp32_adapters {
            return AdapterBytes {
                weight: precision.weight_bytes,
                grad: precision.grad_bytes,
                optimizer: precision.optimizer_state_bytes(),
            };
        }
        // 8-bit Adam keeps two 1-byte moments whatever the parameter dtype (bitsandbytes).
        let moments = if precision.recipe == crate::input::precision::PrecisionRecipe::Adam8Bit {
            2.0
        } else {
            8.0
        };
        AdapterBytes {
            weight: 4.0,
            grad: 4.0,
            optimizer: moments,
        }
    }
}

/// Of a rank's base parameters, those QLoRA leaves unquantized: embedding, LM head,
/// norms (not `nn.Linear` modules, or kept out by `modules_to_not_convert`). Biases are
/// counted with their linear layers (bitsandbytes keeps them in the compute dtype; they are < 0.01% of Llama-style models).
fn unquantized_rank_params(
    model: &ModelSpec,
    params: &ParamBreakdown,
    layout: &Layout,
    span: &StageSpan,
    rank: &RankParams,
) -> f64 {
    let t = f64::from(layout.tp.max(1));
    let computed = params.total() as f64;
    let scale = if computed > 0.0 {
        model.nominal_params.unwrap_or(computed) / computed
    } else {
        0.0
    };
    let mut raw = f64::from(span.layers) * params.norms_per_layer as f64;
    if span.embedding {
        raw += params.embedding as f64 / t;
    }
    if span.output {
        raw += params.final_norm as f64;
        if params.output > 0 {
            raw += params.output as f64 / t;
        } else if layout.pp > 1 {
            raw += params.embedding as f64 / t;
        }
    }
    (raw * scale).min(rank.total())
}

/// Model state of one rank of a stage when adapters train.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdapterState {
    /// The mode (LoRA or QLoRA).
    pub mode: FineTuneMode,
    /// Base parameters on the rank.
    pub base_params: f64,
    /// Of those, QLoRA's NF4-quantized ones (0 under LoRA).
    pub quantized_params: f64,
    /// Frozen base weights, bytes: LoRA `bytes_w·Ψ`; QLoRA NF4 linears plus fp32 rest.
    pub base_weight_bytes: f64,
    /// Average bytes per base parameter before sharding (what a ZeRO-3 gather of a base unit moves).
    pub base_bytes_per_param: f64,
    /// Whether ZeRO-3/FSDP shards the base weights (it shards every parameter, frozen ones too).
    pub base_sharded: bool,
    /// Whether ZeRO-2/3 shards the adapter gradients.
    pub grads_sharded: bool,
    /// Whether ZeRO-1/2/3 shards the adapter optimizer state.
    pub optimizer_sharded: bool,
    /// Adapter parameters on the rank.
    pub adapters: RankParams,
    /// Of those, the ones that train (LoRA-FA leaves `A` frozen).
    pub trainable_adapters: RankParams,
    /// Bytes per adapter parameter by category.
    pub adapter_bytes: AdapterBytes,
    /// Adapter weights, bytes on the rank (after ZeRO-3 sharding).
    pub adapter_weight_bytes: f64,
    /// Adapter gradients, bytes (after ZeRO-2 sharding).
    pub adapter_grad_bytes: f64,
    /// Adapter optimizer state (master + moments), bytes (after ZeRO-1 sharding).
    pub adapter_optimizer_bytes: f64,
    /// Of that state, what a paged optimizer (QLoRA's) keeps in CUDA unified memory: in the
    /// device's used memory, outside PyTorch's allocator counters.
    pub paged_optimizer_bytes: f64,
}

impl AdapterState {
    /// The sums per category, as full training reports them: weights (frozen base +
    /// adapters), gradients and optimizer state (adapters only).
    pub fn model_state(&self) -> ModelStateBytes {
        let part = |bytes: f64, sharded: bool| {
            if sharded {
                StatePart {
                    replicated: 0.0,
                    sharded: bytes,
                }
            } else {
                StatePart {
                    replicated: bytes,
                    sharded: 0.0,
                }
            }
        };
        ModelStateBytes {
            weights: part(
                self.base_weight_bytes + self.adapter_weight_bytes,
                self.base_sharded,
            ),
            gradients: part(self.adapter_grad_bytes, self.grads_sharded),
            optimizer: part(self.adapter_optimizer_bytes, self.optimizer_sharded),
        }
    }

    /// Everything.
    pub fn total(&self) -> f64 {
        self.base_weight_bytes
            + self.adapter_weight_bytes
            + self.adapter_grad_bytes
            + self.adapter_optimizer_bytes
    }
}

/// Model state of one rank of `span` when adapters train; `None` under full fine-tuning.
///
/// Frozen base weights have no gradient and no optimizer state (Hu et al. 2021 §4.2:
/// "we do not need to calculate the gradients or maintain the optimizer states for most
/// parameters"); adapters carry the recipe's weight, gradient and optimizer bytes.
/// ZeRO shards what exists (Rajbhandari et al. 2020 §5): stage 1 the adapters' optimizer
/// state, 2 also their gradients, 3 also every weight, frozen base included (FSDP shards
/// every parameter of a unit whether it requires grad or not).
pub fn adapter_state(
    model: &ModelSpec,
    params: &ParamBreakdown,
    precision: &Precision,
    layout: &Layout,
    span: &StageSpan,
    rank: &RankParams,
    (finetune, framework): (&FineTune, Framework),
) -> Option<AdapterState> {
    finetune.adapters()?;
    let groups = ShardGroups::of(layout);
    let zero = layout.zero.number();
    let base = rank.total();
    let quantized = match finetune.mode {
        FineTuneMode::Qlora => base - unquantized_rank_params(model, params, layout, span, rank),
        _ => 0.0,
    };
    let unquantized_bytes = if framework == Framework::Torchtune {
        precision.weight_bytes
    } else {
        QLORA_UNQUANTIZED_BYTES_PER_PARAM
    };
    let unsharded_base = base_bytes(
        finetune.mode,
        precision,
        (base, quantized),
        unquantized_bytes,
    );
    // ZeRO-3 over dp·cp for dense parameters and dp·cp/ep for routed experts, as for full training.
    let sharded_base = if rank.total() > 0.0 {
        let dense_share = rank.dense / rank.total();
        unsharded_base * (dense_share / groups.dense + (1.0 - dense_share) / groups.expert)
    } else {
        0.0
    };
    let adapters = adapter_rank_params(model, layout, span, finetune, Count::All);
    let trainable = adapter_rank_params(model, layout, span, finetune, Count::Trainable);
    let bytes = AdapterBytes::of(precision, framework.peft_adapters());
    let shard = |bytes_per_param: f64, params: &RankParams, sharded: bool| {
        if sharded {
            bytes_per_param * (params.dense / groups.dense + params.expert / groups.expert)
        } else {
            bytes_per_param * params.total()
        }
    };
    Some(AdapterState {
        mode: finetune.mode,
        base_params: base,
        quantized_params: quantized,
        base_weight_bytes: if zero >= 3 {
            sharded_base
        } else {
            unsharded_base
        },
        base_bytes_per_param: if base > 0.0 {
            unsharded_base / base
        } else {
            0.0
        },
        base_sharded: zero >= 3,
        grads_sharded: zero >= 2,
        optimizer_sharded: zero >= 1,
        adapters,
        trainable_adapters: trainable,
        adapter_bytes: bytes,
        adapter_weight_bytes: shard(bytes.weight, &adapters, zero >= 3),
        adapter_grad_bytes: shard(bytes.grad, &trainable, zero >= 2),
        // bitsandbytes paged optimizers (QLoRA §3 "Paged Optimizers") allocate their state in
        // CUDA unified memory and page it to CPU only when the GPU runs out: the peak counts it
        // on the GPU, the worst case a run that fits sees.
        adapter_optimizer_bytes: shard(bytes.optimizer, &trainable, zero >= 1),
        // QLoRA's optimizer is bitsandbytes' paged AdamW (Dettmers et al. 2023 §3, "Paged
        // Optimizers"; PEFT/TRL recipes pass `optim="paged_adamw_*"`).
        paged_optimizer_bytes: if finetune.mode == FineTuneMode::Qlora {
            let paged = adapter_rank_params(model, layout, span, finetune, Count::PagedTrainable);
            shard(bytes.optimizer, &paged, zero >= 1)
        } else {
            0.0
        },
    })
}

fn sharding(sharded: bool) -> &'static str {
    if sharded {
        "sharded"
    } else {
        "replicated"
    }
}

/// The four model-state bars (DDP, ZeRO-1, ZeRO-2, ZeRO-3) when adapters train, on the
/// pipeline stage holding the most parameters (as [`crate::memory::model_state`] does for
/// full training); `None` under full fine-tuning.
pub fn model_state_bars(
    model: &ModelSpec,
    precision: &Precision,
    layout: &Layout,
    finetune: &FineTune,
    framework: Framework,
) -> Option<Vec<ModelStateBar>> {
    let lora = finetune.adapters()?;
    let params = model.param_breakdown();
    let (spans, count) = stage_spans(&params, layout.pp);
    let mut span = spans[0];
    let mut rank = rank_params(model, &params, layout, &span);
    for s in spans.iter().take(count).skip(1) {
        let r = rank_params(model, &params, layout, s);
        if r.total() > rank.total() {
            (span, rank) = (*s, r);
        }
    }
    let bars = ZeroStage::ALL
        .iter()
        .filter_map(|&zero| {
            let mut l = layout.clone();
            l.zero = zero;
            let state = adapter_state(
                model,
                &params,
                precision,
                &l,
                &span,
                &rank,
                (finetune, framework),
            )?;
            let (sharded, replicated) = state_terms(&state, precision, &l, lora)
                .into_iter()
                .partition(|t| t.label.ends_with("(sharded)"));
            Some(ModelStateBar {
                zero,
                replicated,
                sharded,
                total_bytes: state.total(),
            })
        })
        .collect();
    Some(bars)
}

/// The explained model-state terms of a stage when adapters train.
pub fn state_terms(
    state: &AdapterState,
    precision: &Precision,
    layout: &Layout,
    lora: &LoraSettings,
) -> Vec<Term> {
    let groups = ShardGroups::of(layout);
    let n = fmt_num(groups.dense);
    let base_note = if state.base_sharded {
        format!("; ZeRO-3/FSDP shards the frozen weights too, ÷ N = dp·cp = {n}")
    } else {
        String::new()
    };
    let mut terms = Vec::new();
    match state.mode {
        FineTuneMode::Qlora => {
            let plain = state.base_params - state.quantized_params;
            terms.push(Term {
                key: "model_state.base_weights".into(),
                label: format!(
                    "frozen base weights, NF4 linears + fp32 rest ({})",
                    sharding(state.base_sharded)
                ),
                unit: Unit::Bytes,
                value: state.base_weight_bytes,
                formula: "(4.127/8)·Ψ_linear + 4·Ψ_rest".into(),
                worked: format!(
                    "0.5159 × {} + 4 × {}{} = {}",
                    fmt_num(state.quantized_params),
                    fmt_num(plain),
                    if state.base_sharded { format!(", ÷ {n}") } else { String::new() },
                    fmt_bytes(state.base_weight_bytes)
                ),
                assumption: format!(
                    "Dettmers et al. 2023 §3: NF4 with double quantization = 4 + 0.127 bits per weight (blocksize-64 constants in 8 bits, blocksize 256 fp32 second level); embeddings, norms and LM head are not nn.Linear 4-bit layers (transformers replace_with_bnb_linear keeps lm_head) and PEFT prepare_model_for_kbit_training casts them to fp32; no gradients, no optimizer state{base_note}"
                ),
            });
        }
        _ => terms.push(Term {
            key: "model_state.base_weights".into(),
            label: format!("frozen base weights ({})", sharding(state.base_sharded)),
            unit: Unit::Bytes,
            value: state.base_weight_bytes,
            formula: "bytes_w·Ψ".into(),
            worked: format!(
                "{} × {}{} = {}",
                fmt_num(precision.weight_bytes),
                fmt_num(state.base_params),
                if state.base_sharded { format!(" / {n}") } else { String::new() },
                fmt_bytes(state.base_weight_bytes)
            ),
            assumption: format!(
                "Hu et al. 2021 §4.2: frozen weights need no gradients and no optimizer state{base_note}"
            ),
        }),
    }
    let r = lora.rank;
    let targets = lora.targets.to_list();
    let parts = [
        (
            "model_state.adapter_weights",
            "LoRA adapter weights",
            state.adapter_weight_bytes,
            state.adapter_bytes.weight,
            state.base_sharded,
            state.adapters.total(),
        ),
        (
            "model_state.adapter_gradients",
            "LoRA adapter gradients",
            state.adapter_grad_bytes,
            state.adapter_bytes.grad,
            state.grads_sharded,
            state.trainable_adapters.total(),
        ),
        (
            "model_state.adapter_optimizer",
            if state.mode == FineTuneMode::Qlora {
                "LoRA adapter optimizer state (paged)"
            } else {
                "LoRA adapter optimizer state"
            },
            state.adapter_optimizer_bytes,
            state.adapter_bytes.optimizer,
            state.optimizer_sharded,
            state.trainable_adapters.total(),
        ),
    ];
    for (key, label, bytes, k, sharded, ad) in parts {
        let paged = if key == "model_state.adapter_optimizer" && state.mode == FineTuneMode::Qlora {
            "; bitsandbytes paged optimizer: the state of tensors of at least 1e5 elements lives in CUDA unified memory (optimizer.py get_state_buffer), paged to CPU only under memory pressure: counted in the device's total, outside torch.cuda.max_memory_allocated/reserved"
        } else {
            ""
        };
        terms.push(Term {
            key: key.into(),
            label: format!("{label} ({})", sharding(sharded)),
            value: bytes,
            unit: Unit::Bytes,
            formula: if sharded { "k·Ψ_A/N".into() } else { "k·Ψ_A".into() },
            worked: format!(
                "{} × {}{} = {}",
                fmt_num(k),
                fmt_num(ad),
                if sharded { format!(" / {n}") } else { String::new() },
                fmt_bytes(bytes)
            ),
            assumption: format!(
                "Ψ_A = the {} parameters on this rank{}, targets {targets}, r = {r} (LoRA: r·(d_in + d_out) per linear, Hu et al. 2021 §4.1; the factor on a TP-split side is split, the other replicated); {} B/param ({}){paged}",
                state.mode.label(),
                if key == "model_state.adapter_weights" { "" } else { " that train" },
                fmt_num(k),
                if state.adapter_bytes.weight == 4.0 { "fp32 adapters, PEFT autocast_adapter_dtype" } else { precision.recipe.label() }
            ),
        });
    }
    terms
}

// ---------------------------------------------------------------------------
// Activations.

/// Whether a tensor the full-training accounting saves is still saved when the base
/// linear layers are frozen and adapters sit on the linears that read the inputs marked in
/// `read` ([`crate::input::layer_ops::LayerOps::inputs_read_by`]).
///
/// PyTorch saves a matmul's input only for its weight's gradient: the autograd codegen
/// (tools/autograd/gen_variable_type.py, `guard_for`) guards each saved input by
/// `should_compute_output` of the one derivative that uses it, and `mm`'s input appears only
/// in the weight's derivative (tools/autograd/derivatives.yaml); bitsandbytes' `MatMul4Bit`
/// saves only the quantized weight (`ctx.tensors = (None, B)`). A targeted linear's input is
/// still saved by its adapter's `lora_A` (PEFT's default `lora_dropout = 0` makes the dropout
/// an identity, so it is the same tensor). Tensors that the attention core, norms, activation
/// functions or the router need for input gradients stay.
pub(crate) fn frozen_keeps(kind: TensorKind, read: &[bool; 6], flash_attention: bool) -> bool {
    use TensorKind as K;
    let read = |input: Input| read[input as usize];
    match kind {
        K::QkvInput => read(Input::AttentionNorm),
        // FlashAttention's backward needs its output O (Dao et al. 2022 Alg. 2), which is the
        // output projection's input: kept with flash attention whatever the targets.
        K::ProjInput => read(Input::AttentionOutput) || flash_attention,
        K::FfnInput | K::ExpertInput => read(Input::FfnNorm),
        K::GeluOutput
        | K::SwigluOutput
        | K::ExpertGeluOutput
        | K::ExpertSwigluOutput
        | K::SharedGeluOutput
        | K::SharedSwigluOutput => read(Input::FfnHidden),
        // The frozen LM head's input is needed only for its weight gradient.
        K::OutputInput => false,
        _ => true,
    }
}

/// Values per token one layer's adapters save: each targeted linear's `lora_A` output
/// (`r` values), which `lora_B` saves for its weight gradient (Hu et al. 2021 §4.1, PEFT
/// `lora.Linear.forward`: `lora_B(lora_A(dropout(x)))`). Routed experts see only their tokens
/// (top-k of them per token).
pub(crate) fn adapter_values_per_token(
    model: &ModelSpec,
    kind: LayerKind,
    lora: &LoraSettings,
) -> f64 {
    let r = f64::from(lora.rank);
    let modules: f64 = layer_ops(model, kind == LayerKind::Moe)
        .iter()
        .filter(|op| op.targeted_by(&lora.targets))
        .map(|op| op.per_token)
        .sum();
    r * modules
}

/// The targets whose *input* an adapter saves (its trainable first factor needs it for its
/// gradient): LoRA, QLoRA and DoRA's `lora_A`; none under LoRA-FA (`A` frozen, PEFT lorafa.py)
/// or prompt tuning; IA3 only on feed-forward modules, where PEFT scales the input before the
/// frozen linear (ia3/layer.py `Linear.forward`, `is_feedforward`).
pub fn input_saving_targets(method: FineTuneMode, targets: &LoraTargets) -> LoraTargets {
    match method {
        FineTuneMode::Lora | FineTuneMode::Qlora | FineTuneMode::Dora => *targets,
        FineTuneMode::Ia3 => {
            LoraTargets::from_flags([false, false, false, false, false, false, targets.down])
        }
        FineTuneMode::Full | FineTuneMode::LoraFa | FineTuneMode::PromptTuning => {
            LoraTargets::from_flags([false; 7])
        }
    }
}

/// Output width of each targeted linear of one layer, with whether PEFT's IA3 treats it as
/// feed-forward (the down projections): `(d_out, feedforward, copies)`, where `copies` counts
/// an FFN module once per routed expert a token visits, or once per shared expert.
pub(crate) fn targeted_outputs(
    model: &ModelSpec,
    kind: LayerKind,
    targets: &LoraTargets,
) -> Vec<(f64, bool, f64)> {
    layer_ops(model, kind == LayerKind::Moe)
        .iter()
        .filter(|op| op.targeted_by(targets))
        .map(|op| (op.d_out, op.feedforward, op.per_token))
        .collect()
}

/// Values per token one layer's DoRA or IA3 adapters save beyond LoRA's: DoRA keeps, per
/// adapted linear, the base output and the LoRA output (PEFT dora.py
/// `DoraLinearLayer.forward`: `(mag_norm_scale - 1) * base_result + mag_norm_scale *
/// lora_result * scaling` saves both for the magnitude's gradient), `2·d_out`; IA3 keeps the
/// output of each non-feed-forward module it scales (`result * ia3_scaling`), `d_out`.
pub(crate) fn method_output_values(
    model: &ModelSpec,
    kind: LayerKind,
    method: FineTuneMode,
    lora: &LoraSettings,
) -> f64 {
    let per_module = match method {
        FineTuneMode::Dora => 2.0,
        FineTuneMode::Ia3 => 1.0,
        _ => return 0.0,
    };
    targeted_outputs(model, kind, &lora.targets)
        .into_iter()
        .filter(|(_, ff, _)| !(method == FineTuneMode::Ia3 && *ff))
        .map(|(d_out, _, n)| per_module * d_out * n)
        .sum()
}
