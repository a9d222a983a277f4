//! Fine-tuning modes: full fine-tuning, LoRA and QLoRA. Owns the mode a scenario
//! trains in, the adapter parameter count, the frozen and quantized base weights,
//! which saved activations a frozen linear layer no longer needs, and the step-time
//! terms that differ from full fine-tuning.
//!
//! Full fine-tuning is the default and changes nothing anywhere: every function here
//! returns `None` (or the full-training value) for it.

use serde::{Deserialize, Serialize};

use crate::base::explain::Term;
use crate::edges::export::ExportFormat;
use crate::input::layout::{Layout, ZeroStage};
use crate::input::model::{FfnKind, ModelSpec, ParamBreakdown};
use crate::input::precision::Precision;
use crate::memory::activations::{LayerKind, TensorKind};
use crate::memory::model_state::{
    fmt_bytes, fmt_num, rank_params, stage_spans, ModelStateBar, ModelStateBytes, RankParams,
    ShardGroups, StageSpan, StatePart,
};

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
}

impl FineTuneMode {
    /// All modes.
    pub const ALL: [FineTuneMode; 3] =
        [FineTuneMode::Full, FineTuneMode::Lora, FineTuneMode::Qlora];

    /// Stable identifier (link value).
    pub fn id(self) -> &'static str {
        match self {
            FineTuneMode::Full => "full",
            FineTuneMode::Lora => "lora",
            FineTuneMode::Qlora => "qlora",
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
        }
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
        }
    }
}

impl FineTune {
    /// Whether this is the default (not written to scenario files).
    pub fn is_default(&self) -> bool {
        *self == FineTune::default()
    }

    /// The adapter settings when adapters train (LoRA or QLoRA).
    pub fn adapters(&self) -> Option<&LoraSettings> {
        (self.mode != FineTuneMode::Full).then_some(&self.lora)
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

/// One linear layer's shape on a rank, and how TP splits it.
#[derive(Clone, Copy)]
enum Split {
    /// Column-parallel (Megatron): the output dimension is split.
    Column,
    /// Row-parallel: the input dimension is split.
    Row,
    /// Not split by TP (MLA down-projections, routed experts with expert-TP = 1).
    Replicated,
}

/// Hu et al. 2021 (LoRA) §4.1: the adapter of a `d_in → d_out` linear is `A: r × d_in`
/// and `B: d_out × r`, `r·(d_in + d_out)` parameters. Under TP the factor that touches the
/// split dimension is split with it and the other is replicated (the product must stay
/// local to the rank's shard).
fn adapter_params(r: f64, d_in: f64, d_out: f64, split: Split, t: f64) -> f64 {
    match split {
        Split::Column => r * (d_in + d_out / t),
        Split::Row => r * (d_in / t + d_out),
        Split::Replicated => r * (d_in + d_out),
    }
}

/// Adapter parameters of one FFN of width `f` on a rank.
fn ffn_adapter_params(
    model: &ModelSpec,
    lora: &LoraSettings,
    f: f64,
    tp: f64,
    expert: bool,
) -> f64 {
    let r = f64::from(lora.rank);
    let h = f64::from(model.hidden);
    let tg = &lora.targets;
    let (col, row) = if expert {
        (Split::Replicated, Split::Replicated)
    } else {
        (Split::Column, Split::Row)
    };
    let mut n = 0.0;
    // SwiGLU has gate and up (h → f) and down (f → h); a GeLU MLP has up and down only.
    if tg.gate && model.ffn_kind == FfnKind::SwiGlu {
        n += adapter_params(r, h, f, col, tp);
    }
    if tg.up {
        n += adapter_params(r, h, f, col, tp);
    }
    if tg.down {
        n += adapter_params(r, f, h, row, tp);
    }
    n
}

/// Adapter parameters of one layer's attention on a rank.
fn attention_adapter_params(model: &ModelSpec, lora: &LoraSettings, tp: f64) -> f64 {
    let r = f64::from(lora.rank);
    let h = f64::from(model.hidden);
    let a = f64::from(model.heads);
    let tg = &lora.targets;
    let mut n = 0.0;
    match &model.mla {
        Some(mla) => {
            // DeepSeek-V2 §2.1.2 modules (HF names q_proj | q_a_proj + q_b_proj,
            // kv_a_proj_with_mqa, kv_b_proj, o_proj); down-projections are not TP-split.
            let qk = f64::from(mla.qk_nope_head_dim + mla.qk_rope_head_dim);
            if tg.q {
                if mla.q_lora_rank == 0 {
                    n += adapter_params(r, h, a * qk, Split::Column, tp);
                } else {
                    let rq = f64::from(mla.q_lora_rank);
                    n += adapter_params(r, h, rq, Split::Replicated, tp);
                    n += adapter_params(r, rq, a * qk, Split::Column, tp);
                }
            }
            if tg.k || tg.v {
                let kv = f64::from(mla.kv_lora_rank);
                let rope = f64::from(mla.qk_rope_head_dim);
                let up = a * f64::from(mla.qk_nope_head_dim + mla.v_head_dim);
                n += adapter_params(r, h, kv + rope, Split::Replicated, tp);
                n += adapter_params(r, kv, up, Split::Column, tp);
            }
            if tg.o {
                n += adapter_params(r, a * f64::from(mla.v_head_dim), h, Split::Row, tp);
            }
        }
        None => {
            let d = f64::from(model.head_dim);
            let q = a * d;
            let kv = f64::from(model.kv_heads) * d;
            if tg.q {
                n += adapter_params(r, h, q, Split::Column, tp);
            }
            if tg.k {
                n += adapter_params(r, h, kv, Split::Column, tp);
            }
            if tg.v {
                n += adapter_params(r, h, kv, Split::Column, tp);
            }
            if tg.o {
                n += adapter_params(r, q, h, Split::Row, tp);
            }
        }
    }
    n
}

/// Adapter parameters of one dense layer and of one MoE layer (dense part, routed
/// experts before EP) on a rank with TP degree `tp`.
fn layer_adapter_params(model: &ModelSpec, lora: &LoraSettings, tp: f64) -> (f64, f64, f64) {
    let attention = attention_adapter_params(model, lora, tp);
    let dense = attention + ffn_adapter_params(model, lora, f64::from(model.ffn), tp, false);
    match &model.moe {
        None => (dense, 0.0, 0.0),
        Some(moe) => {
            let fe = f64::from(moe.expert_ffn);
            // Shared experts are TP-split like a dense FFN; routed experts use expert-TP = 1.
            let shared =
                f64::from(moe.shared_experts) * ffn_adapter_params(model, lora, fe, tp, false);
            let routed =
                f64::from(moe.routed_experts) * ffn_adapter_params(model, lora, fe, tp, true);
            (dense, attention + shared, routed)
        }
    }
}

/// Adapter parameters in the whole model (no TP): what PEFT's `print_trainable_parameters` reports.
pub fn adapter_params_total(model: &ModelSpec, lora: &LoraSettings) -> f64 {
    let pb = model.param_breakdown();
    let (dense, moe_dense, routed) = layer_adapter_params(model, lora, 1.0);
    pb.dense_layers as f64 * dense + pb.moe_layers as f64 * (moe_dense + routed)
}

/// Adapter parameters one rank of `span` holds, split like [`RankParams`] (dense part
/// sharded by ZeRO over dp·cp, routed-expert adapters ÷EP over dp·cp/ep).
pub fn adapter_rank_params(
    model: &ModelSpec,
    layout: &Layout,
    span: &StageSpan,
    lora: &LoraSettings,
) -> RankParams {
    let t = f64::from(layout.tp.max(1));
    let ep = f64::from(layout.ep.max(1));
    let (dense, moe_dense, routed) = layer_adapter_params(model, lora, t);
    let routed = routed / ep;
    let mut largest: f64 = 0.0;
    if span.dense_layers > 0 {
        largest = dense;
    }
    if span.moe_layers > 0 {
        largest = largest.max(moe_dense + routed);
    }
    RankParams {
        dense: f64::from(span.dense_layers) * dense + f64::from(span.moe_layers) * moe_dense,
        expert: f64::from(span.moe_layers) * routed,
        largest_unit: largest,
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
    /// Adapter weights, bytes on the rank (after ZeRO-3 sharding).
    pub adapter_weight_bytes: f64,
    /// Adapter gradients, bytes (after ZeRO-2 sharding).
    pub adapter_grad_bytes: f64,
    /// Adapter optimizer state (master + moments), bytes (after ZeRO-1 sharding).
    pub adapter_optimizer_bytes: f64,
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

/// Bytes per frozen base parameter: the working dtype under LoRA; under QLoRA the
/// quantized linears at [`NF4_DOUBLE_QUANT_BITS_PER_PARAM`] and the rest at
/// [`QLORA_UNQUANTIZED_BYTES_PER_PARAM`].
fn base_bytes(mode: FineTuneMode, precision: &Precision, base: f64, quantized: f64) -> f64 {
    match mode {
        FineTuneMode::Qlora => {
            quantized * NF4_DOUBLE_QUANT_BITS_PER_PARAM / 8.0
                + (base - quantized) * QLORA_UNQUANTIZED_BYTES_PER_PARAM
        }
        _ => base * precision.weight_bytes,
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
    finetune: &FineTune,
) -> Option<AdapterState> {
    let lora = finetune.adapters()?;
    let groups = ShardGroups::of(layout);
    let zero = layout.zero.number();
    let base = rank.total();
    let quantized = match finetune.mode {
        FineTuneMode::Qlora => base - unquantized_rank_params(model, params, layout, span, rank),
        _ => 0.0,
    };
    let unsharded_base = base_bytes(finetune.mode, precision, base, quantized);
    // ZeRO-3 over dp·cp for dense parameters and dp·cp/ep for routed experts, as for full training.
    let sharded_base = if rank.total() > 0.0 {
        let dense_share = rank.dense / rank.total();
        unsharded_base * (dense_share / groups.dense + (1.0 - dense_share) / groups.expert)
    } else {
        0.0
    };
    let adapters = adapter_rank_params(model, layout, span, lora);
    let shard = |bytes_per_param: f64, sharded: bool| {
        if sharded {
            bytes_per_param * (adapters.dense / groups.dense + adapters.expert / groups.expert)
        } else {
            bytes_per_param * adapters.total()
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
        adapter_weight_bytes: shard(precision.weight_bytes, zero >= 3),
        adapter_grad_bytes: shard(precision.grad_bytes, zero >= 2),
        // bitsandbytes paged optimizers (QLoRA §3 "Paged Optimizers") allocate their state in
        // CUDA unified memory and page it to CPU only when the GPU runs out: the peak counts it
        // on the GPU, the worst case a run that fits sees.
        adapter_optimizer_bytes: shard(precision.optimizer_state_bytes(), zero >= 1),
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
            let state = adapter_state(model, &params, precision, &l, &span, &rank, finetune)?;
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
                bytes: state.base_weight_bytes,
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
            bytes: state.base_weight_bytes,
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
    let ad = state.adapters.total();
    let r = lora.rank;
    let targets = lora.targets.to_list();
    let parts = [
        (
            "model_state.adapter_weights",
            "LoRA adapter weights",
            state.adapter_weight_bytes,
            precision.weight_bytes,
            state.base_sharded,
        ),
        (
            "model_state.adapter_gradients",
            "LoRA adapter gradients",
            state.adapter_grad_bytes,
            precision.grad_bytes,
            state.grads_sharded,
        ),
        (
            "model_state.adapter_optimizer",
            if state.mode == FineTuneMode::Qlora {
                "LoRA adapter optimizer state (paged)"
            } else {
                "LoRA adapter optimizer state"
            },
            state.adapter_optimizer_bytes,
            precision.optimizer_state_bytes(),
            state.optimizer_sharded,
        ),
    ];
    for (key, label, bytes, k, sharded) in parts {
        let paged = if key == "model_state.adapter_optimizer" && state.mode == FineTuneMode::Qlora {
            "; bitsandbytes paged optimizer: unified memory, paged to CPU only under memory pressure, so counted on the GPU"
        } else {
            ""
        };
        terms.push(Term {
            key: key.into(),
            label: format!("{label} ({})", sharding(sharded)),
            bytes,
            formula: if sharded { "k·Ψ_A/N".into() } else { "k·Ψ_A".into() },
            worked: format!(
                "{} × {}{} = {}",
                fmt_num(k),
                fmt_num(ad),
                if sharded { format!(" / {n}") } else { String::new() },
                fmt_bytes(bytes)
            ),
            assumption: format!(
                "Ψ_A = Σ over targeted linears ({targets}) of r·(d_in + d_out), r = {r} (Hu et al. 2021 §4.1), on this rank (the factor on a TP-split side is split, the other replicated); {} B/param ({}){paged}",
                fmt_num(k),
                precision.recipe.label()
            ),
        });
    }
    terms
}

// ---------------------------------------------------------------------------
// Activations.

/// Whether a tensor the full-training accounting saves is still saved when the base
/// linear layers are frozen and `targets` carry adapters.
///
/// PyTorch saves a matmul's input only for its weight's gradient: the autograd codegen
/// (tools/autograd/gen_variable_type.py, `guard_for`) guards each saved input by
/// `should_compute_output` of the one derivative that uses it, and `mm`'s input appears only
/// in the weight's derivative (tools/autograd/derivatives.yaml); bitsandbytes' `MatMul4Bit`
/// saves only the quantized weight (`ctx.tensors = (None, B)`). A targeted linear's input is
/// still saved by its adapter's `lora_A` (PEFT's default `lora_dropout = 0` makes the dropout
/// an identity, so it is the same tensor). Tensors that the attention core, norms, activation
/// functions or the router need for input gradients stay.
pub(crate) fn frozen_keeps(
    kind: TensorKind,
    targets: &LoraTargets,
    swiglu: bool,
    flash_attention: bool,
) -> bool {
    use TensorKind as K;
    let first_ffn = targets.up || (targets.gate && swiglu);
    match kind {
        K::QkvInput => targets.q || targets.k || targets.v,
        // FlashAttention's backward needs its output O (Dao et al. 2022 Alg. 2), which is the
        // output projection's input: kept with flash attention whatever the targets.
        K::ProjInput => targets.o || flash_attention,
        K::FfnInput | K::ExpertInput => first_ffn,
        K::GeluOutput
        | K::SwigluOutput
        | K::ExpertGeluOutput
        | K::ExpertSwigluOutput
        | K::SharedGeluOutput
        | K::SharedSwigluOutput => targets.down,
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
    let tg = &lora.targets;
    let swiglu = model.ffn_kind == FfnKind::SwiGlu;
    let ffn_modules = f64::from(u8::from(tg.gate && swiglu) + u8::from(tg.up) + u8::from(tg.down));
    let attention_modules = match &model.mla {
        Some(mla) => {
            let q = if mla.q_lora_rank > 0 { 2 } else { 1 };
            f64::from(if tg.q { q } else { 0 } + if tg.k || tg.v { 2 } else { 0 } + u8::from(tg.o))
        }
        None => f64::from(u8::from(tg.q) + u8::from(tg.k) + u8::from(tg.v) + u8::from(tg.o)),
    };
    let ffn_copies = match (kind, &model.moe) {
        (LayerKind::Moe, Some(moe)) => {
            f64::from(moe.experts_per_token) + f64::from(moe.shared_experts)
        }
        _ => 1.0,
    };
    r * (attention_modules + ffn_modules * ffn_copies)
}

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
}

impl AdapterTime {
    /// Average bytes per frozen base parameter: the working dtype under LoRA; NF4 linears
    /// and fp32 rest under QLoRA (see [`adapter_state`]).
    pub fn base_bytes_per_param(&self, precision: &Precision) -> f64 {
        match self.mode {
            FineTuneMode::Qlora if self.base_params > 0.0 => {
                base_bytes(
                    self.mode,
                    precision,
                    self.base_params,
                    self.quantized_dense_params + self.quantized_expert_params,
                ) / self.base_params
            }
            _ => precision.weight_bytes,
        }
    }

    /// The adapters of a scenario; `None` under full fine-tuning.
    pub fn of(model: &ModelSpec, finetune: &FineTune) -> Option<Self> {
        let lora = finetune.adapters()?;
        let pb = model.param_breakdown();
        let (dense, moe_dense, routed) = layer_adapter_params(model, lora, 1.0);
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
            adapter_params: adapter_params_total(model, lora),
            expert_adapter_params: moe_layers * routed,
            quantized_dense_params,
            quantized_expert_params,
            base_params: pb.total() as f64 * scale,
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
    let adapter_params = adapter_params_total(model, lora);
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
                bytes: adapter_params,
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
                bytes: ratio,
                formula: "t_step(adapters) / t_step(full)".into(),
                worked: format!("{:.4} s / {:.4} s = {:.3}", step_s, full_step_s, ratio),
                assumption: format!(
                    "forward unchanged plus 2·Ψ_A FLOPs per token; backward computes input gradients through frozen layers (≈ 2N per token) but no weight gradients for them (saves ≈ 2N per token); gradient communication and the optimizer step cover the adapters only{quant}"
                ),
            },
        ],
    })
}

// ---------------------------------------------------------------------------
// Exports.

/// PEFT module names of the targets, Llama-style (`q_proj` … `down_proj`).
fn peft_modules(t: &LoraTargets) -> Vec<&'static str> {
    let names = [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ];
    names
        .into_iter()
        .zip(t.flags())
        .filter(|(_, on)| *on)
        .map(|(n, _)| n)
        .collect()
}

/// Megatron-Core module names of the targets: q, k and v share the fused `linear_qkv`,
/// gate and up the fused `linear_fc1` (megatron/core/transformer/attention.py, mlp.py).
fn megatron_modules(t: &LoraTargets) -> Vec<&'static str> {
    let mut m = Vec::new();
    if t.q || t.k || t.v {
        m.push("linear_qkv");
    }
    if t.o {
        m.push("linear_proj");
    }
    if t.gate || t.up {
        m.push("linear_fc1");
    }
    if t.down {
        m.push("linear_fc2");
    }
    m
}

fn quoted(list: &[&str]) -> String {
    let items: Vec<String> = list.iter().map(|m| format!("\"{m}\"")).collect();
    format!("[{}]", items.join(", "))
}

/// Notes an export adds for LoRA/QLoRA; empty under full fine-tuning and for the
/// serving exports. Only fixed names and numbers appear in them.
pub fn export_notes(tool: ExportFormat, finetune: &FineTune) -> Vec<String> {
    let Some(lora) = finetune.adapters() else {
        return Vec::new();
    };
    let qlora = finetune.mode == FineTuneMode::Qlora;
    let (r, alpha) = (lora.rank, lora.alpha);
    // PEFT LoraConfig (peft/src/peft/tuners/lora/config.py) and transformers'
    // BitsAndBytesConfig; the QLoRA paper's optimizer is paged 32-bit AdamW (`paged_adamw_32bit`).
    let peft = format!(
        "peft.LoraConfig(r={r}, lora_alpha={alpha}, lora_dropout=0.0, target_modules={})",
        quoted(&peft_modules(&lora.targets))
    );
    let bnb = "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16), peft.prepare_model_for_kbit_training(model) and optim=\"paged_adamw_32bit\"";
    let script = |what: &str| {
        if qlora {
            format!("{what} has no LoRA/QLoRA setting: load the model with {bnb} and wrap it with {peft} in the training script.")
        } else {
            format!(
                "{what} has no LoRA setting: wrap the model with {peft} in the training script."
            )
        }
    };
    match tool {
        ExportFormat::Torchrun => vec![script("torchrun")],
        ExportFormat::Accelerate => vec![script("Accelerate's config")],
        ExportFormat::Deepspeed => vec![script("The DeepSpeed config")],
        // Megatron-Bridge docs/training/peft.md: ConfigContainer(peft=LoRA(target_modules=[...], dim, alpha, dropout)).
        ExportFormat::Megatron => {
            let mut n = vec![format!(
                "pretrain_gpt.py has no LoRA; Megatron-Bridge does: ConfigContainer(peft=LoRA(target_modules={}, dim={r}, alpha={alpha}, dropout=0.0)). Its fused linear_qkv and linear_fc1 take one adapter each, so q/k/v (and gate/up) cannot be targeted apart.",
                quoted(&megatron_modules(&lora.targets))
            )];
            if qlora {
                n.push("Megatron has no NF4 base weights: QLoRA runs with PEFT and bitsandbytes, not Megatron.".to_string());
            }
            n
        }
        // torchtitan/components/lora.py: LoRAConverter(rank, alpha) wraps every nn.Linear.
        ExportFormat::Torchtitan => {
            let mut n = vec![format!(
                "torchtitan's LoRA converter (torchtitan/components/lora.py, rank = {r}, alpha = {alpha}) adapts every nn.Linear, the output layer included: it cannot target {} only.",
                lora.targets.to_list()
            )];
            if qlora {
                n.push(
                    "torchtitan has no NF4 base weights: QLoRA runs with PEFT and bitsandbytes."
                        .to_string(),
                );
            }
            n
        }
        ExportFormat::Vllm | ExportFormat::Sglang => Vec::new(),
    }
}
