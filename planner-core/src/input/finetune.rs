//! Fine-tuning methods: full fine-tuning, LoRA, QLoRA and PEFT's DoRA, LoRA-FA, IA3 and
//! prompt tuning. Owns the method a scenario trains with, its settings, and the count of
//! adapter parameters (all of them, and those that train) each method adds.
//!
//! Full fine-tuning is the default and changes nothing anywhere: every function here
//! returns `None` (or the full-training value) for it.

use serde::{Deserialize, Serialize};

use crate::input::layer_ops::{layer_ops, LayerOp, LayerOps, Owner, Split};
use crate::input::model::ModelSpec;
use crate::input::precision::Precision;

/// How the model's weights are trained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FineTuneMode {
    /// Every weight trains: gradients and optimizer state for all of them.
    #[default]
    Full,
    /// Frozen base weights in the working dtype plus trainable low-rank adapters (Hu et al. 2021).
    Lora,
    /// Frozen base weights in 4-bit NF4 with double quantization, BF16 adapters, paged
    /// optimizer (Dettmers et al. 2023).
    Qlora,
    /// DoRA (Liu et al. 2024): LoRA plus a trainable magnitude per output row of each adapted
    /// linear (PEFT `use_dora=True`, peft/tuners/lora/dora.py `DoraLinearLayer`).
    Dora,
    /// LoRA-FA (Zhang et al. 2023): LoRA with `A` frozen, only `B` trains (PEFT
    /// peft/optimizers/lorafa.py `create_lorafa_optimizer` sets `lora_A.requires_grad_(False)`).
    LoraFa,
    /// IA3 (Liu et al. 2022): one trainable scaling vector per targeted linear, over its output
    /// (attention) or its input (the feed-forward `down`), PEFT peft/tuners/ia3/layer.py.
    Ia3,
    /// Prompt tuning (Lester et al. 2021): `virtual_tokens` trainable embeddings prepended to every
    /// sequence, the whole model frozen (PEFT peft/tuners/prompt_tuning).
    PromptTuning,
}

impl FineTuneMode {
    /// All modes.
    pub const ALL: [FineTuneMode; 7] = [
        FineTuneMode::Full,
        FineTuneMode::Lora,
        FineTuneMode::Qlora,
        FineTuneMode::Dora,
        FineTuneMode::LoraFa,
        FineTuneMode::Ia3,
        FineTuneMode::PromptTuning,
    ];

    /// Stable identifier (link value).
    pub fn id(self) -> &'static str {
        match self {
            FineTuneMode::Full => "full",
            FineTuneMode::Lora => "lora",
            FineTuneMode::Qlora => "qlora",
            FineTuneMode::Dora => "dora",
            FineTuneMode::LoraFa => "lora-fa",
            FineTuneMode::Ia3 => "ia3",
            FineTuneMode::PromptTuning => "prompt-tuning",
        }
    }

    /// Parses [`FineTuneMode::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.id() == id)
    }

    /// "full fine-tuning", ...
    pub fn label(self) -> &'static str {
        match self {
            FineTuneMode::Full => "full fine-tuning",
            FineTuneMode::Lora => "LoRA",
            FineTuneMode::Qlora => "QLoRA (NF4 base)",
            FineTuneMode::Dora => "DoRA",
            FineTuneMode::LoraFa => "LoRA-FA (A frozen)",
            FineTuneMode::Ia3 => "IA3",
            FineTuneMode::PromptTuning => "prompt tuning",
        }
    }

    /// Whether the method reads the low-rank settings (rank, α) and the target modules.
    pub fn uses_rank(self) -> bool {
        matches!(
            self,
            FineTuneMode::Lora | FineTuneMode::Qlora | FineTuneMode::Dora | FineTuneMode::LoraFa
        )
    }

    /// Whether the method reads the target modules (the low-rank methods and IA3).
    pub fn uses_targets(self) -> bool {
        self.uses_rank() || self == FineTuneMode::Ia3
    }
}

/// The linear layers of a decoder layer LoRA adapters can target (PEFT
/// `target_modules` names of Llama-style models: `q_proj` … `down_proj`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraTargets {
    /// Query projection.
    pub q: bool,
    /// Key projection (MLA: the shared KV down/up projections).
    pub k: bool,
    /// Value projection (MLA: the shared KV down/up projections).
    pub v: bool,
    /// Attention output projection.
    pub o: bool,
    /// FFN gate projection (SwiGLU only).
    pub gate: bool,
    /// FFN up projection (the first linear of a GeLU MLP).
    pub up: bool,
    /// FFN down projection.
    pub down: bool,
}

impl LoraTargets {
    /// Module names, in link order.
    pub const NAMES: [&'static str; 7] = ["q", "k", "v", "o", "gate", "up", "down"];

    /// The same modules as PEFT's `target_modules` name them in Llama-style models.
    pub const PEFT_NAMES: [&'static str; 7] = [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ];

    /// The flags in [`LoraTargets::NAMES`] order.
    pub fn flags(&self) -> [bool; 7] {
        [
            self.q, self.k, self.v, self.o, self.gate, self.up, self.down,
        ]
    }

    /// From flags in [`LoraTargets::NAMES`] order.
    pub const fn from_flags(f: [bool; 7]) -> Self {
        LoraTargets {
            q: f[0],
            k: f[1],
            v: f[2],
            o: f[3],
            gate: f[4],
            up: f[5],
            down: f[6],
        }
    }

    /// Whether any module is targeted.
    pub fn any(&self) -> bool {
        self.flags().iter().any(|&b| b)
    }

    /// "q,k,v,o"; "none" when empty.
    pub fn to_list(&self) -> String {
        let names: Vec<&str> = Self::NAMES
            .iter()
            .zip(self.flags())
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(",")
        }
    }

    /// Parses [`LoraTargets::to_list`]: comma-separated names, each at most once.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut flags = [false; 7];
        if list == "none" {
            return Ok(Self::from_flags(flags));
        }
        for name in list.split(',') {
            let Some(i) = Self::NAMES.iter().position(|n| *n == name) else {
                return Err(format!(
                    "'{}' is not a target module (known: {}, or none)",
                    crate::base::free_text::one_line(name),
                    Self::NAMES.join(", ")
                ));
            };
            if flags[i] {
                return Err(format!("'{name}' is listed twice"));
            }
            flags[i] = true;
        }
        Ok(Self::from_flags(flags))
    }
}

/// Common target sets as (link value, label): attention only, Hu et al. 2021's q and v
/// (§7.1), and every linear layer (Dettmers et al. 2023 §4, needed to match full fine-tuning).
pub const TARGET_PRESETS: [(&str, &str); 3] = [
    ("q,k,v,o", "attention: q, k, v, o"),
    ("q,v", "q, v (Hu et al. 2021)"),
    ("q,k,v,o,gate,up,down", "all linear layers (QLoRA)"),
];

/// Adapter settings (kept when the mode is full, so switching back restores them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraSettings {
    /// Rank `r` of each adapter pair `B·A`.
    pub rank: u32,
    /// Scaling numerator `α` (the update is scaled by `α/r`); no effect on memory or time.
    pub alpha: u32,
    /// Which linear layers carry adapters.
    pub targets: LoraTargets,
}

/// The fine-tuning mode of a training scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FineTune {
    /// Full, LoRA or QLoRA.
    pub mode: FineTuneMode,
    /// Adapter settings (read only when the mode is LoRA or QLoRA).
    pub lora: LoraSettings,
    /// Virtual tokens of prompt tuning (PEFT `num_virtual_tokens`); read only by
    /// [`FineTuneMode::PromptTuning`].
    #[serde(
        default = "default_virtual_tokens",
        skip_serializing_if = "is_default_virtual_tokens"
    )]
    pub virtual_tokens: u32,
}

/// Prompt tuning's virtual tokens when a file does not say: 20, the value PEFT's prompt-tuning
/// guide uses (docs/source/task_guides/prompt_based_methods.md, `num_virtual_tokens=20`).
pub const DEFAULT_VIRTUAL_TOKENS: u32 = 20;

fn default_virtual_tokens() -> u32 {
    DEFAULT_VIRTUAL_TOKENS
}

fn is_default_virtual_tokens(n: &u32) -> bool {
    *n == DEFAULT_VIRTUAL_TOKENS
}

impl Default for FineTune {
    /// Full fine-tuning; adapters preset to the QLoRA paper's attention setting r = 16, α = 32 on q, k, v, o.
    fn default() -> Self {
        FineTune {
            mode: FineTuneMode::Full,
            lora: LoraSettings {
                rank: 16,
                alpha: 32,
                targets: LoraTargets {
                    q: true,
                    k: true,
                    v: true,
                    o: true,
                    gate: false,
                    up: false,
                    down: false,
                },
            },
            virtual_tokens: DEFAULT_VIRTUAL_TOKENS,
        }
    }
}

impl FineTune {
    /// Whether this is the default (not written to scenario files).
    pub fn is_default(&self) -> bool {
        *self == FineTune::default()
    }

    /// The adapter settings when adapters train (every method but full fine-tuning).
    pub fn adapters(&self) -> Option<&LoraSettings> {
        (self.mode != FineTuneMode::Full).then_some(&self.lora)
    }

    /// Tokens one sequence carries through the model: the data's, plus prompt tuning's
    /// virtual tokens (PEFT `PeftModelForCausalLM.forward` concatenates the prompt embeddings
    /// before the input embeddings and pads the labels with -100 over them).
    pub fn model_seq_len(&self, data_seq_len: u32) -> u32 {
        match self.mode {
            FineTuneMode::PromptTuning => data_seq_len.saturating_add(self.virtual_tokens),
            _ => data_seq_len,
        }
    }
}

// ---------------------------------------------------------------------------
// Parameters.

/// Bits per NF4 base weight with double quantization: Dettmers et al. 2023 §3
/// ("Double Quantization"): 4-bit values, blocksize-64 constants quantized to 8 bits
/// (8/64 = 0.125 bit) with one fp32 second-level constant per 256 of them (32/(64·256)).
pub const NF4_DOUBLE_QUANT_BITS_PER_PARAM: f64 = 4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0);

/// Bytes per base parameter QLoRA does not quantize (embeddings, norms, LM head):
/// PEFT `prepare_model_for_kbit_training` (peft/src/peft/utils/other.py) casts every
/// fp16/bf16 parameter that is not `Params4bit` to fp32; transformers'
/// `replace_with_bnb_linear` (src/transformers/integrations/bitsandbytes.py) converts only
/// `nn.Linear` modules and keeps `lm_head` out (`modules_to_not_convert`).
pub const QLORA_UNQUANTIZED_BYTES_PER_PARAM: f64 = 4.0;

/// HBM bytes moved per base parameter per dequantization: bitsandbytes `MatMul4Bit`
/// (bitsandbytes/autograd/_functions.py) calls `dequantize_4bit` before the forward GEMM and
/// again before the backward one, reading the packed 4-bit weight with its constants and
/// writing a BF16 copy (2 B) that the GEMM then reads.
pub const DEQUANT_BYTES_PER_PARAM: f64 = NF4_DOUBLE_QUANT_BITS_PER_PARAM / 8.0 + 2.0;

/// Which adapter parameters a count covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Every adapter parameter (what the weights take).
    All,
    /// Those that train (what gradients and optimizer state take): LoRA-FA's frozen `A` left out.
    Trainable,
    /// Those that train and sit in tensors a bitsandbytes paged optimizer pages: its state
    /// buffers come from CUDA unified memory only for tensors of at least 10^5 elements
    /// (bitsandbytes/optim/optimizer.py `get_state_buffer`: `if not self.is_paged or
    /// p.numel() < 1e5: return torch.zeros_like(p, ...)`, else `F.get_paged`).
    PagedTrainable,
}

/// bitsandbytes' smallest tensor whose optimizer state is paged, elements.
pub const PAGED_STATE_MIN_ELEMENTS: f64 = 1e5;

/// `elements` if a tensor of that size counts under `count`.
fn counted(count: Count, elements: f64) -> f64 {
    if count == Count::PagedTrainable && elements < PAGED_STATE_MIN_ELEMENTS {
        0.0
    } else {
        elements
    }
}

/// One targeted linear `d_in → d_out`: its adapter parameters on a rank of TP degree `t`.
/// Under TP the factor that touches the split dimension is split with it and the other is
/// replicated (the product must stay local to the rank's shard).
fn linear_params(ft: &FineTune, count: Count, op: &LayerOp, split: Split, t: f64) -> f64 {
    let r = f64::from(ft.lora.rank);
    let (d_in, d_out) = match split {
        Split::Column => (op.d_in, op.d_out / t),
        Split::Row => (op.d_in / t, op.d_out),
        Split::Replicated => (op.d_in, op.d_out),
    };
    match ft.mode {
        FineTuneMode::Full | FineTuneMode::PromptTuning => 0.0,
        // Hu et al. 2021 (LoRA) §4.1: `A: r × d_in` and `B: d_out × r`.
        FineTuneMode::Lora | FineTuneMode::Qlora => {
            counted(count, r * d_in) + counted(count, r * d_out)
        }
        // PEFT dora.py `DoraLinearLayer.update_layer`: the magnitude is the weight's row norm, one per output.
        FineTuneMode::Dora => {
            counted(count, r * d_in) + counted(count, r * d_out) + counted(count, d_out)
        }
        // PEFT lorafa.py: `A` frozen after initialisation, `B` trains.
        FineTuneMode::LoraFa => match count {
            Count::All => r * (d_in + d_out),
            Count::Trainable | Count::PagedTrainable => counted(count, r * d_out),
        },
        // PEFT ia3/layer.py `update_layer`: `ia3_l` is (1, in_features) for feed-forward modules,
        // (out_features, 1) otherwise (PEFT's IA3 default `feedforward_modules` for Llama are the
        // down projections).
        FineTuneMode::Ia3 => counted(count, if op.feedforward { d_in } else { d_out }),
    }
}

/// Adapter parameters of one module of `owner` in `ops` on a rank with TP degree `tp`: routed
/// experts use expert-TP = 1, so their linears are whole on the rank.
fn owner_adapter_params(ft: &FineTune, count: Count, ops: &LayerOps, owner: Owner, tp: f64) -> f64 {
    ops.of(owner)
        .filter(|op| op.targeted_by(&ft.lora.targets))
        .map(|op| {
            let split = if owner == Owner::RoutedExpert {
                Split::Replicated
            } else {
                op.split
            };
            linear_params(ft, count, op, split, tp)
        })
        .fold(0.0, |n, p| n + p)
}

/// Adapter parameters of one dense layer and of one MoE layer (dense part, routed
/// experts before EP) on a rank with TP degree `tp`.
pub(crate) fn layer_adapter_params(
    model: &ModelSpec,
    ft: &FineTune,
    count: Count,
    tp: f64,
) -> (f64, f64, f64) {
    let dense_ops = layer_ops(model, false);
    let attention = owner_adapter_params(ft, count, &dense_ops, Owner::Attention, tp);
    let dense = attention + owner_adapter_params(ft, count, &dense_ops, Owner::DenseFfn, tp);
    match &model.moe {
        None => (dense, 0.0, 0.0),
        Some(moe) => {
            let moe_ops = layer_ops(model, true);
            // Shared experts are TP-split like a dense FFN; routed experts use expert-TP = 1.
            let shared = f64::from(moe.shared_experts)
                * owner_adapter_params(ft, count, &moe_ops, Owner::SharedExpert, tp);
            let routed = f64::from(moe.routed_experts)
                * owner_adapter_params(ft, count, &moe_ops, Owner::RoutedExpert, tp);
            (dense, attention + shared, routed)
        }
    }
}

/// Prompt tuning's trainable embeddings, `virtual_tokens × h` (PEFT `PromptEmbedding`), held
/// with the input embedding; 0 for every other method.
pub fn prompt_params(model: &ModelSpec, ft: &FineTune) -> f64 {
    match ft.mode {
        FineTuneMode::PromptTuning => f64::from(ft.virtual_tokens) * f64::from(model.hidden),
        _ => 0.0,
    }
}

/// [`prompt_params`] under `count`.
pub(crate) fn prompt_params_counted(model: &ModelSpec, ft: &FineTune, count: Count) -> f64 {
    counted(count, prompt_params(model, ft))
}

/// Adapter parameters in the whole model (no TP); [`Count::Trainable`] is what PEFT's
/// `print_trainable_parameters` reports.
pub fn adapter_params_total(model: &ModelSpec, ft: &FineTune, count: Count) -> f64 {
    let pb = model.param_breakdown();
    let (dense, moe_dense, routed) = layer_adapter_params(model, ft, count, 1.0);
    pb.dense_layers as f64 * dense
        + pb.moe_layers as f64 * (moe_dense + routed)
        + prompt_params_counted(model, ft, count)
}

/// Bytes per frozen base parameter: the working dtype under LoRA; under QLoRA the
/// quantized linears at [`NF4_DOUBLE_QUANT_BITS_PER_PARAM`] and the rest at
/// `unquantized_bytes` ([`QLORA_UNQUANTIZED_BYTES_PER_PARAM`] under PEFT; torchtune keeps them
/// in the model's dtype: torchtune/modules/peft/lora.py quantizes only `LoRALinear` weights
/// with torchao's `to_nf4`).
pub(crate) fn base_bytes(
    mode: FineTuneMode,
    precision: &Precision,
    (base, quantized): (f64, f64),
    unquantized_bytes: f64,
) -> f64 {
    match mode {
        FineTuneMode::Qlora => {
            quantized * NF4_DOUBLE_QUANT_BITS_PER_PARAM / 8.0
                + (base - quantized) * unquantized_bytes
        }
        _ => base * precision.weight_bytes,
    }
}
