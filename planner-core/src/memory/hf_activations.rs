//! The tensors Hugging Face Transformers' Llama-family model code saves for backward when it
//! runs eager (no fused kernels): what `LlamaRMSNorm`, `LlamaAttention` with SDPA,
//! `LlamaMLP` and `LlamaForCausalLM` keep, with PEFT's adapter layers (LoRA, QLoRA, DoRA,
//! LoRA-FA, IA3, prompt tuning) on top. The Megatron-style list is
//! [`crate::memory::activations`]; this one replaces it for dense, non-MLA layers when the
//! scenario runs Transformers model code ([`crate::input::framework::Framework::eager_modules`]).
//!
//! Each entry cites the module's code (transformers src/transformers/models/llama/
//! modeling_llama.py, integrations/sdpa_attention.py; PEFT src/peft/tuners/lora/layer.py,
//! dora.py, ia3/layer.py) and PyTorch's rule for what an op saves: a saved input is kept only
//! if the derivative that reads it is needed (tools/autograd/gen_variable_type.py guards each
//! saved variable by `should_compute_output`), so a frozen linear keeps no input.

use crate::input::finetune::{FineTuneMode, LoraTargets};
use crate::input::framework::Framework;
use crate::input::layer_ops::{layer_ops, AttentionCore};
use crate::input::layout::Recompute;
use crate::input::model::{FfnKind, ModelSpec};
use crate::input::scenario::Training;
use crate::memory::activations::{
    ActivationSetup, DroppedBy, LayerKind, RawTensor, TensorKind, TpSplit,
};
use crate::memory::adapters::targeted_outputs;

/// A tensor of the Transformers / PEFT list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HfTensor {
    /// The decoder layer's input, kept by gradient checkpointing.
    CheckpointInput,
    /// `LlamaRMSNorm`: `hidden_states.to(torch.float32)`, saved by `pow(2)` and the `rsqrt` product.
    NormFp32Input,
    /// `LlamaRMSNorm`: `self.weight * hidden_states.to(input_dtype)` saves the normalised BF16
    /// values for the norm weight's gradient.
    NormedForWeight,
    /// The normalised input saved by trainable q/k/v (or gate/up) projections.
    LinearInput,
    /// PEFT: an fp32 copy of a targeted linear's input (`_cast_input_dtype` to the fp32
    /// adapter's dtype), saved by a trainable `lora_A` or IA3's feed-forward scaling.
    AdapterInputFp32,
    /// PEFT: `lora_A`'s fp32 output, saved by `lora_B`.
    AdapterIntermediateFp32,
    /// SDPA inputs: Q, and K and V (repeated over the query groups when a mask is passed).
    SdpaQkv,
    /// SDPA's output and fp32 log-sum-exp (memory-efficient / flash kernels).
    SdpaOutput,
    /// Eager attention: the fp32 softmax and its BF16 cast.
    EagerScores,
    /// `attn_output.transpose(1, 2).reshape(...)`: the output projection's input (a copy).
    ProjInput,
    /// `LlamaMLP`: `act_fn(gate_proj(x)) * up_proj(x)`: gate output (SiLU's input), SiLU
    /// output and up output (the product's operands).
    MlpIntermediates,
    /// The down projection's input (the product), saved when `down` trains.
    DownInput,
    /// DoRA's base and LoRA outputs, IA3's scaled outputs.
    MethodOutputs,
    /// The final norm's tensors and the LM head's input.
    FinalNorm,
}

impl HfTensor {
    /// (op, name, shape, source).
    pub(crate) fn describe(self) -> (&'static str, &'static str, &'static str, &'static str) {
        let llama = "transformers models/llama/modeling_llama.py";
        match self {
            HfTensor::CheckpointInput => (
                "checkpoint",
                "decoder layer input (gradient checkpointing)",
                "s·b·h",
                "transformers GradientCheckpointingLayer: torch.utils.checkpoint keeps the layer's inputs",
            ),
            HfTensor::NormFp32Input => ("norm", "RMSNorm input upcast to fp32", "s·b·h", llama),
            HfTensor::NormedForWeight => (
                "norm",
                "RMSNorm output before the weight (for the weight's gradient)",
                "s·b·h",
                llama,
            ),
            HfTensor::LinearInput => ("linear", "projection input (trainable weight)", "s·b·h", llama),
            HfTensor::AdapterInputFp32 => (
                "peft",
                "fp32 copy of each targeted linear's input",
                "s·b·d_in per module",
                "PEFT lora/layer.py Linear.forward: x = self._cast_input_dtype(x, lora_A.weight.dtype); fp32 adapters (autocast_adapter_dtype)",
            ),
            HfTensor::AdapterIntermediateFp32 => (
                "peft",
                "lora_A output (fp32, saved by lora_B)",
                "s·b·r per module",
                "PEFT lora/layer.py: lora_B(lora_A(dropout(x)))",
            ),
            HfTensor::SdpaQkv => (
                "attention",
                "Q, K, V into SDPA (K, V repeated over groups under a mask)",
                "s·b·(a + 2·kv')·d",
                "transformers integrations/sdpa_attention.py: repeat_kv unless use_gqa_in_sdpa (no mask)",
            ),
            HfTensor::SdpaOutput => (
                "attention",
                "SDPA output and fp32 log-sum-exp",
                "s·b·a·d",
                "PyTorch _scaled_dot_product_efficient_attention / flash backward",
            ),
            HfTensor::EagerScores => (
                "attention",
                "fp32 softmax and its BF16 cast",
                "b·a·s·s",
                "transformers eager_attention_forward: softmax(dtype=float32).to(query.dtype)",
            ),
            HfTensor::ProjInput => ("attention.o_proj", "o_proj input (transposed copy)", "s·b·a·d", llama),
            HfTensor::MlpIntermediates => (
                "mlp",
                "gate output, SiLU output, up output",
                "s·b·3f",
                "transformers LlamaMLP: down_proj(act_fn(gate_proj(x)) * up_proj(x)), eager",
            ),
            HfTensor::DownInput => ("mlp.down_proj", "down projection input", "s·b·f", llama),
            HfTensor::MethodOutputs => (
                "peft",
                "DoRA base and LoRA outputs / IA3 scaled outputs",
                "s·b·d_out per module",
                "PEFT dora.py DoraLinearLayer.forward; ia3/layer.py Linear.forward",
            ),
            HfTensor::FinalNorm => (
                "final_norm",
                "final RMSNorm fp32 input (+ normed and LM head input when trained)",
                "s·b·h",
                llama,
            ),
        }
    }
}

/// Whether this list describes `kind` layers of `model` under `setup`: eager Llama modules
/// (Transformers' or torchtune's), a dense layer, standard (non-MLA) attention.
pub(crate) fn describes(model: &ModelSpec, kind: LayerKind, setup: &ActivationSetup) -> bool {
    setup.eager_modules && kind == LayerKind::Dense && model.mla.is_none()
}

/// Whether K and V reach attention repeated over the query groups: torchtune expands them
/// whenever the heads differ (torchtune/modules/attention.py `MultiHeadAttention.forward`:
/// `k.unsqueeze(2).expand(expand_shape).flatten(1, 2)`); Transformers repeats them when a mask
/// is passed (integrations/sdpa_attention.py: `use_gqa_in_sdpa` needs `attention_mask is
/// None`), which unpacked batches padded to their longest sequence carry.
pub(crate) fn repeats_kv(framework: Framework, training: &Training) -> bool {
    match framework {
        Framework::Torchtune => true,
        // Packed (padding-free) batches pass no mask: SDPA takes the K/V heads as they are.
        f => f.peft_adapters() && !training.packing,
    }
}

/// What trains around one layer.
struct Trains {
    /// Every weight trains (full fine-tuning).
    full: bool,
    /// PEFT adapters stored in fp32 read an fp32 copy of their input.
    lora_a: [bool; 7],
}

impl Trains {
    fn of(setup: &ActivationSetup) -> Self {
        let full = setup.method == FineTuneMode::Full;
        let lora_a = match &setup.adapters {
            Some(l) => {
                crate::memory::adapters::input_saving_targets(setup.method, &l.targets).flags()
            }
            None => [false; 7],
        };
        Trains { full, lora_a }
    }
}

/// Calls `f` with every tensor one Transformers decoder layer saves.
pub(crate) fn visit_layer(
    model: &ModelSpec,
    setup: &ActivationSetup,
    mut f: impl FnMut(RawTensor),
) {
    use HfTensor as T;
    let h = f64::from(model.hidden);
    let a = model.heads.max(1);
    let e = setup.activation_bytes;
    let tr = Trains::of(setup);
    let mut emit = |kind: T, values: f64, seq_squared: bool, bytes: f64, split, dropped| {
        if values > 0.0 {
            f(RawTensor {
                kind: TensorKind::Hf(kind),
                values_per_token: values,
                heads: a,
                seq_squared,
                dtype_bytes: bytes,
                split,
                dropped_by: dropped,
            });
        }
    };
    use DroppedBy as D;
    use TpSplit as S;
    if setup.recompute == Recompute::Full {
        // GradientCheckpointingLayer: torch.utils.checkpoint keeps the layer input.
        emit(
            T::CheckpointInput,
            h,
            false,
            e,
            S::SequenceParallel,
            D::Never,
        );
    }
    // Two RMSNorms per layer, each saving its fp32 upcast (the residual stream requires grad).
    emit(
        T::NormFp32Input,
        2.0 * h,
        false,
        4.0,
        S::SequenceParallel,
        D::Full,
    );
    if tr.full {
        // Both norms' weights train: each keeps its normalised BF16 input to the weight product.
        emit(
            T::NormedForWeight,
            2.0 * h,
            false,
            e,
            S::SequenceParallel,
            D::Full,
        );
        // q/k/v share the first norm's output; gate/up the second's.
        emit(
            T::LinearInput,
            2.0 * h,
            false,
            e,
            S::SequenceParallel,
            D::Full,
        );
    }
    let (values, bytes) = adapter_inputs(model, setup, &tr);
    emit(
        T::AdapterInputFp32,
        values,
        false,
        bytes,
        S::Replicated,
        D::Full,
    );
    visit_attention(model, setup, &tr, &mut emit);
    visit_mlp(model, setup, &tr, &mut emit);
    visit_adapters(model, setup, &mut emit);
}

/// Values per token of the adapters' saved inputs, and their bytes: PEFT keeps an fp32 copy per
/// targeted linear (lora/layer.py `_cast_input_dtype` to the fp32 adapter); torchtune's
/// `LoRALinear` reads the module's own input, so linears that share one (q, k, v; gate, up)
/// save it once, at the activation dtype. Full fine-tuning's inputs are [`HfTensor::LinearInput`].
fn adapter_inputs(model: &ModelSpec, setup: &ActivationSetup, tr: &Trains) -> (f64, f64) {
    if tr.full {
        return (0.0, 0.0);
    }
    let saving = LoraTargets::from_flags(tr.lora_a);
    let ops = layer_ops(model, false);
    let saved = || ops.iter().filter(|op| op.targeted_by(&saving));
    if setup.peft_adapters {
        return (saved().map(|op| op.d_in).sum(), 4.0);
    }
    // One saved input per distinct tensor the targeted linears read.
    let values = saved()
        .enumerate()
        .filter(|(i, op)| saved().take(*i).all(|earlier| earlier.input != op.input))
        .map(|(_, op)| op.d_in)
        .sum();
    (values, setup.activation_bytes)
}

type Emit<'a> = dyn FnMut(HfTensor, f64, bool, f64, TpSplit, DroppedBy) + 'a;

/// SDPA (or eager attention) and the output projection's input.
fn visit_attention(model: &ModelSpec, setup: &ActivationSetup, tr: &Trains, emit: &mut Emit) {
    use DroppedBy as D;
    use HfTensor as T;
    use TpSplit as S;
    let a = f64::from(model.heads.max(1));
    let core = AttentionCore::of(model);
    let (q, out) = (core.query_width(), core.output_width());
    let e = setup.activation_bytes;
    // integrations/sdpa_attention.py: with a mask (`use_gqa_in_sdpa` needs `attention_mask is
    // None`) K and V are repeated to every query head before SDPA, which saves the repeats.
    let kv = if setup.repeat_kv || !setup.flash_attention {
        q
    } else {
        core.key_width()
    };
    emit(T::SdpaQkv, q + 2.0 * kv, false, e, S::Heads, D::Full);
    if setup.flash_attention {
        // The memory-efficient / flash backward reads the output and an fp32 log-sum-exp per head.
        emit(T::SdpaOutput, out, false, e, S::Heads, D::Full);
        emit(T::SdpaOutput, a, false, 4.0, S::Heads, D::Full);
    } else {
        // eager_attention_forward: fp32 softmax (4 B) saved by its backward, BF16 cast saved by the
        // product with V.
        emit(T::EagerScores, a, true, 4.0 + e, S::Heads, D::Full);
    }
    if tr.full {
        // modeling_llama.py: attn_output.reshape(...).contiguous() feeds o_proj, a fresh tensor.
        emit(T::ProjInput, out, false, e, S::Heads, D::Full);
    }
}

/// The MLP's intermediates and the down projection's input.
fn visit_mlp(model: &ModelSpec, setup: &ActivationSetup, tr: &Trains, emit: &mut Emit) {
    use DroppedBy as D;
    use HfTensor as T;
    use TpSplit as S;
    let f = layer_ops(model, false).ffn_width_per_token();
    let e = setup.activation_bytes;
    let kept = match model.ffn_kind {
        // act_fn(gate) saves gate; the product saves act_fn(gate) and up.
        FfnKind::SwiGlu => 3.0,
        // GeLU MLP: the activation saves its input.
        FfnKind::GeluMlp => 1.0,
    };
    emit(
        T::MlpIntermediates,
        kept * f,
        false,
        e,
        S::FfnWidth,
        D::Full,
    );
    if tr.full {
        emit(T::DownInput, f, false, e, S::FfnWidth, D::Full);
    }
}

/// The adapters' own saved tensors: `lora_A` outputs and DoRA / IA3 outputs.
fn visit_adapters(model: &ModelSpec, setup: &ActivationSetup, emit: &mut Emit) {
    use DroppedBy as D;
    use HfTensor as T;
    use TpSplit as S;
    let Some(lora) = &setup.adapters else {
        return;
    };
    let modules = targeted_outputs(model, LayerKind::Dense, &lora.targets).len() as f64;
    // PEFT's fp32 adapters output fp32; torchtune's run in the model's dtype.
    let adapter_bytes = if setup.peft_adapters {
        4.0
    } else {
        setup.activation_bytes
    };
    if setup.method.uses_rank() {
        emit(
            T::AdapterIntermediateFp32,
            modules * f64::from(lora.rank),
            false,
            adapter_bytes,
            S::Replicated,
            D::Full,
        );
    }
    // DoRA: base output at the activation dtype, LoRA output in fp32 (fp32 adapters); IA3: BF16
    // module outputs (`(result * ia3_scaling).to(result_dtype)` saves the BF16 result).
    let outputs =
        crate::memory::adapters::method_output_values(model, LayerKind::Dense, setup.method, lora);
    let bytes = match setup.method {
        FineTuneMode::Dora => (setup.activation_bytes + adapter_bytes) / 2.0,
        _ => setup.activation_bytes,
    };
    emit(
        T::MethodOutputs,
        outputs,
        false,
        bytes,
        S::Replicated,
        D::Full,
    );
}

/// The last stage's final norm, LM head input and fp32 log-softmax output (the loss's other
/// transients are [`crate::memory::loss_memory`]'s).
pub(crate) fn visit_extras(
    model: &ModelSpec,
    setup: &ActivationSetup,
    last: bool,
    mut f: impl FnMut(RawTensor),
) {
    if !last {
        return;
    }
    let h = f64::from(model.hidden);
    let e = setup.activation_bytes;
    let full = setup.method == FineTuneMode::Full;
    let mut emit = |kind, values_per_token, dtype_bytes, split| {
        f(RawTensor {
            kind,
            values_per_token,
            heads: model.heads.max(1),
            seq_squared: false,
            dtype_bytes,
            split,
            dropped_by: DroppedBy::Never,
        })
    };
    // Final RMSNorm: fp32 upcast; when everything trains, its normed input to the weight and
    // the LM head's input as well.
    let norm_bytes = 4.0 + if full { 2.0 * e } else { 0.0 };
    emit(
        TensorKind::Hf(HfTensor::FinalNorm),
        h,
        norm_bytes,
        TpSplit::SequenceParallel,
    );
    if setup.count_logits {
        // loss_utils.py ForCausalLMLoss: `logits.float()` into cross_entropy, whose log_softmax
        // saves its fp32 output.
        emit(
            TensorKind::Logits,
            f64::from(model.vocab),
            4.0,
            TpSplit::FfnWidth,
        );
    }
}
