//! Activation memory by explicit tensor accounting.
//!
//! Each op of a decoder layer saves some tensors for its backward pass; this
//! module lists them (shape, dtype, what TP/SP/CP split, what recompute drops)
//! and sums them. With GPT settings (LayerNorm, dropout, 4h GeLU MLP, MHA, no
//! flash attention) the sum is exactly Korthikanti et al. 2022, Table 2; the
//! same list with Llama settings shows where public estimators disagree.
//!
//! Choices, where public estimators differ: per-token norm statistics (mean,
//! rstd: ≤ 8 B per token) are not counted, as in the paper; SwiGLU is the fused
//! kernel (gate, up and down-input saved: `6·f/h` per `sbh`, eager PyTorch
//! saves `8·f/h`); full recompute keeps the layer input, which Megatron stores
//! ÷t under sequence parallelism (the paper's table lists `2sbh`); MoE layers
//! hold the busiest EP rank's routed tokens (`crate::input::moe_routing`); the expert input and output are gathered over expert-TP.
//!
//! One numeric visitor (`visit_layer`) feeds both the allocation-free sums the
//! mesh search calls and the explained [`SavedTensor`] list the app shows.

use serde::{Deserialize, Serialize};

use crate::input::finetune::{FineTuneMode, LoraSettings};
use crate::input::framework::Framework;
use crate::input::layer_ops::{layer_ops, AttentionCore};
use crate::input::layout::{Layout, Recompute, Schedule};
use crate::input::model::{FfnKind, ModelSpec};
use crate::input::moe_routing::MoeRouting;
use crate::input::precision::Precision;
use crate::input::scenario::{ActivationOptions, Training};
use crate::memory::adapters::{adapter_values_per_token, frozen_keeps};

/// Everything the activation sums need besides the model: per-rank batch
/// shape, group sizes and switches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ActivationSetup {
    /// Sequence length `s` (tokens), before CP splits it.
    pub seq_len: f64,
    /// Micro-batch `b` (sequences).
    pub micro_batch: f64,
    /// Tensor-parallel degree `t`.
    pub tp: u32,
    /// Context-parallel degree: divides the sequence dimension of every saved
    /// tensor (score tensors keep all `s` keys; ring attention's remote K/V
    /// chunks are transient and not counted).
    pub cp: u32,
    /// Megatron sequence parallelism (splits the norm/dropout regions by `t`).
    pub sequence_parallel: bool,
    /// Expert-tensor-parallel degree of the MoE layers ([`crate::parallel::fold`]).
    pub expert_tp: u32,
    /// Expert-parallel degree: with the routing, it sets the busiest rank's load.
    pub ep: u32,
    /// How MoE layers route tokens ([`crate::input::moe_routing`]): the busiest EP rank holds
    /// its load's share of the expert-side tensors.
    pub moe_routing: MoeRouting,
    /// Recompute policy.
    pub recompute: Recompute,
    /// Flash attention: no `s × s` tensors, a fp32 log-sum-exp per head and token instead.
    pub flash_attention: bool,
    /// Logits kept in fp32 (4 B) rather than the activation dtype.
    pub fp32_logits: bool,
    /// Count the logits at all.
    pub count_logits: bool,
    /// Bytes per saved activation value (2 for BF16).
    pub activation_bytes: f64,
    /// LoRA/QLoRA adapters on frozen base weights ([`crate::input::finetune`]); `None` for full training.
    pub adapters: Option<LoraSettings>,
    /// The fine-tuning method (what the adapters save besides their `A` outputs).
    pub method: FineTuneMode,
    /// Eager PyTorch Llama modules, Transformers' or torchtune's
    /// ([`crate::memory::hf_activations`]), instead of Megatron's fused layer.
    pub eager_modules: bool,
    /// PEFT's adapters: fp32, each reading an fp32 copy of its input.
    pub peft_adapters: bool,
    /// K and V are repeated over the query groups before attention (saved at full width).
    pub repeat_kv: bool,
    /// The column-parallel linears save their all-gathered, full-sequence input under TP
    /// ([`Framework::saves_gathered_tp_inputs`]) instead of the sequence-parallel shard.
    pub gathered_tp_inputs: bool,
}

impl ActivationSetup {
    /// The setup of a training scenario's layout.
    pub fn new(
        layout: &Layout,
        training: &Training,
        options: &ActivationOptions,
        precision: &Precision,
        moe_routing: MoeRouting,
        framework: Framework,
    ) -> Self {
        ActivationSetup {
            seq_len: f64::from(training.finetune.model_seq_len(training.seq_len)),
            micro_batch: f64::from(layout.micro_batch),
            tp: layout.tp.max(1),
            cp: layout.cp.max(1),
            sequence_parallel: layout.sequence_parallel,
            expert_tp: layout.expert_tp.max(1),
            ep: layout.ep.max(1),
            moe_routing,
            recompute: layout.recompute,
            flash_attention: options.flash_attention,
            fp32_logits: options.fp32_logits,
            count_logits: options.count_logits,
            activation_bytes: precision.activation_bytes,
            adapters: training.finetune.adapters().copied(),
            method: training.finetune.mode,
            eager_modules: framework.eager_modules(),
            peft_adapters: framework.peft_adapters(),
            repeat_kv: crate::memory::hf_activations::repeats_kv(framework, training),
            gathered_tp_inputs: framework.saves_gathered_tp_inputs(),
        }
    }

    /// GPT-style reference setup of Korthikanti et al.: 2-byte activations, no
    /// flash attention, no CP, logits not counted.
    pub fn korthikanti(
        s: u32,
        b: u32,
        t: u32,
        sequence_parallel: bool,
        recompute: Recompute,
    ) -> Self {
        ActivationSetup {
            seq_len: f64::from(s),
            micro_batch: f64::from(b),
            tp: t.max(1),
            cp: 1,
            sequence_parallel,
            expert_tp: 1,
            ep: 1,
            moe_routing: MoeRouting::default(),
            recompute,
            flash_attention: false,
            fp32_logits: true,
            count_logits: false,
            activation_bytes: 2.0,
            adapters: None,
            method: FineTuneMode::Full,
            eager_modules: false,
            peft_adapters: false,
            repeat_kv: false,
            gathered_tp_inputs: false,
        }
    }
}

/// Whether a layer's FFN is dense or a mixture of experts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerKind {
    /// Dense FFN of width `ModelSpec::ffn`.
    Dense,
    /// Routed (and shared) experts.
    Moe,
}

/// What divides a tensor inside the TP group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TpSplit {
    /// Replicated in the TP group unless sequence parallelism splits its sequence by `t`.
    SequenceParallel,
    /// Split over heads: each rank holds `ceil(heads / t)` of them (K/V heads replicate once `t` exceeds them).
    Heads,
    /// Split over the FFN width: `f / t` per rank.
    FfnWidth,
    /// Whole on every rank of the TP group (a LoRA `A` factor's output).
    Replicated,
}

/// Which recompute policy drops a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DroppedBy {
    /// Never dropped: the layer input full recompute restarts from.
    Never,
    /// Dropped by full recompute.
    Full,
    /// Dropped by selective (attention core) and full recompute.
    Selective,
}

impl DroppedBy {
    fn kept_under(self, policy: Recompute) -> bool {
        match (self, policy) {
            (DroppedBy::Never, _) => true,
            (DroppedBy::Full, Recompute::Full) => false,
            (DroppedBy::Full, _) => true,
            (DroppedBy::Selective, Recompute::None) => true,
            (DroppedBy::Selective, _) => false,
        }
    }
}

/// The tensors this module knows; [`TensorKind::describe`] gives their text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TensorKind {
    Norm1Input,
    QkvInput,
    MlaQLatent,
    MlaKvLatent,
    Query,
    Key,
    Value,
    Softmax,
    AttnDropoutMask,
    AttnDropoutOutput,
    SoftmaxLse,
    ProjInput,
    AttnResidualDropoutMask,
    Norm2Input,
    FfnInput,
    GeluInput,
    GeluOutput,
    SwigluGate,
    SwigluUp,
    SwigluOutput,
    FfnResidualDropoutMask,
    RouterProbs,
    ExpertInput,
    ExpertGeluInput,
    ExpertGeluOutput,
    ExpertGate,
    ExpertUp,
    ExpertSwigluOutput,
    ExpertOutput,
    SharedGeluInput,
    SharedGeluOutput,
    SharedGate,
    SharedUp,
    SharedSwigluOutput,
    EmbeddingDropoutMask,
    FinalNormInput,
    OutputInput,
    Logits,
    AdapterIntermediate,
    /// Hugging Face / PEFT tensors ([`crate::memory::hf_activations`]).
    Hf(crate::memory::hf_activations::HfTensor),
}

/// One tensor in numbers: `values_per_token` per token of the rank's
/// sequence (times `s` again for score tensors), before TP splits it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RawTensor {
    pub(crate) kind: TensorKind,
    pub(crate) values_per_token: f64,
    /// Heads the tensor spans (for [`TpSplit::Heads`]).
    pub(crate) heads: u32,
    /// A `b·a·s·s` score tensor: one more factor `s` (CP splits only the query side).
    pub(crate) seq_squared: bool,
    pub(crate) dtype_bytes: f64,
    pub(crate) split: TpSplit,
    pub(crate) dropped_by: DroppedBy,
}

impl RawTensor {
    /// Bytes on one rank for one micro-batch, whether or not recompute drops it.
    pub(crate) fn bytes(&self, setup: &ActivationSetup) -> f64 {
        let t = f64::from(setup.tp);
        let tp_fraction = match self.split {
            TpSplit::SequenceParallel => {
                if setup.sequence_parallel {
                    1.0 / t
                } else {
                    1.0
                }
            }
            TpSplit::Heads => {
                let heads = self.heads.max(1);
                f64::from(heads.div_ceil(setup.tp)) / f64::from(heads)
            }
            TpSplit::FfnWidth => 1.0 / t,
            TpSplit::Replicated => 1.0,
        };
        // Context parallelism gives each rank s/cp tokens (queries); score
        // tensors keep the full key length s.
        let tokens = setup.seq_len / f64::from(setup.cp) * setup.micro_batch;
        let keys = if self.seq_squared { setup.seq_len } else { 1.0 };
        tokens * keys * self.values_per_token * self.dtype_bytes * tp_fraction
    }

    pub(crate) fn kept(&self, setup: &ActivationSetup) -> bool {
        self.dropped_by.kept_under(setup.recompute)
    }
}

/// `sink` wrapped so that tensors frozen base linears no longer save are skipped
/// ([`frozen_keeps`]); every tensor passes under full training.
fn saved_only<'a>(
    model: &ModelSpec,
    setup: &'a ActivationSetup,
    mut sink: impl FnMut(RawTensor) + 'a,
) -> impl FnMut(RawTensor) + 'a {
    // The inputs of the linears whose adapters save them (the dense layer's linears read the
    // same tensors as a MoE layer's experts).
    let inputs_saved = setup.adapters.map(|l| {
        let targets = crate::memory::adapters::input_saving_targets(setup.method, &l.targets);
        layer_ops(model, false).inputs_read_by(&targets)
    });
    move |t: RawTensor| {
        if inputs_saved.is_none_or(|read| frozen_keeps(t.kind, &read, setup.flash_attention)) {
            sink(t);
        }
    }
}

/// What a layer's visitors call per tensor: kind, values per token, heads, `s × s`, bytes
/// per value, TP split, the recompute policy that drops it.
type Emit<'a> = dyn FnMut(TensorKind, f64, u32, bool, f64, TpSplit, DroppedBy) + 'a;

/// Calls `f` with every tensor one layer saves for backward (before recompute
/// drops any). The single source of truth for layer activations.
pub(crate) fn visit_layer(
    model: &ModelSpec,
    kind: LayerKind,
    setup: &ActivationSetup,
    f: impl FnMut(RawTensor),
) {
    if crate::memory::hf_activations::describes(model, kind, setup) {
        crate::memory::hf_activations::visit_layer(model, setup, f);
        return;
    }
    let mut f = saved_only(model, setup, f);
    let mut emit =
        |kind, values_per_token: f64, heads, seq_squared, dtype_bytes, split, dropped_by| {
            f(RawTensor {
                kind,
                values_per_token,
                heads,
                seq_squared,
                dtype_bytes,
                split,
                dropped_by,
            })
        };
    visit_attention(model, setup, &mut emit);
    visit_ffn(model, kind, setup, &mut emit);
    visit_adapters(model, kind, setup, &mut emit);
}

/// The column-parallel linears' shared input: sequence-sharded under Megatron's SP, the
/// all-gathered full sequence under torchtitan's TP (`Framework::saves_gathered_tp_inputs`).
fn linear_input_split(setup: &ActivationSetup) -> TpSplit {
    if setup.gathered_tp_inputs {
        TpSplit::Replicated
    } else {
        TpSplit::SequenceParallel
    }
}

/// The attention half: norm, QKV input (MLA latents), the core's saved tensors, the output
/// projection's input and the residual dropout.
fn visit_attention(model: &ModelSpec, setup: &ActivationSetup, emit: &mut Emit) {
    use DroppedBy as D;
    use TensorKind as K;
    use TpSplit as S;
    let e = setup.activation_bytes;
    let h = f64::from(model.hidden);
    let a = model.heads.max(1);
    // Korthikanti §4.1 "LayerNorm": each norm saves its input, 2sbh; the first
    // one's input is the layer input that full recompute keeps.
    emit(K::Norm1Input, h, a, false, e, S::SequenceParallel, D::Never);
    // Korthikanti §4.1: the QKV projection saves its shared input, 2sbh.
    emit(
        K::QkvInput,
        h,
        a,
        false,
        e,
        linear_input_split(setup),
        D::Full,
    );
    if let Some(mla) = &model.mla {
        // DeepSeek-V2 §2.1.2: the compressed latents feed the up-projections.
        if mla.q_lora_rank > 0 {
            let q_latent = f64::from(mla.q_lora_rank);
            emit(
                K::MlaQLatent,
                q_latent,
                a,
                false,
                e,
                S::SequenceParallel,
                D::Full,
            );
        }
        let kv_latent = f64::from(mla.kv_lora_rank + mla.qk_rope_head_dim);
        emit(
            K::MlaKvLatent,
            kv_latent,
            a,
            false,
            e,
            S::SequenceParallel,
            D::Full,
        );
    }
    let core = AttentionCore::of(model);
    let k_heads = core.kv_heads.max(1);
    // Korthikanti §4.1: QKᵀ saves Q and K (4sbh with MHA); GQA shrinks K to kv_heads·d.
    emit(K::Query, core.query_width(), a, false, e, S::Heads, D::Full);
    emit(
        K::Key,
        core.key_width(),
        k_heads,
        false,
        e,
        S::Heads,
        D::Full,
    );
    let fa = f64::from(a);
    if setup.flash_attention {
        // Dao et al. 2022 (FlashAttention) Alg. 2: backward needs only Q, K, V,
        // the output and the fp32 row log-sum-exp per head and query.
        emit(K::SoftmaxLse, fa, a, false, 4.0, S::Heads, D::Selective);
    } else {
        // Korthikanti §4.1: softmax output 2as²b.
        emit(K::Softmax, fa, a, true, e, S::Heads, D::Selective);
        if model.dropout {
            // Korthikanti §4.1: dropout mask as²b (1 byte) and dropout output 2as²b.
            emit(K::AttnDropoutMask, fa, a, true, 1.0, S::Heads, D::Selective);
            emit(K::AttnDropoutOutput, fa, a, true, e, S::Heads, D::Selective);
        }
    }
    // Korthikanti §4.1: attention over values saves V, 2sbh.
    emit(
        K::Value,
        core.value_width(),
        k_heads,
        false,
        e,
        S::Heads,
        D::Full,
    );
    // Korthikanti §4.1: the output projection saves its input, 2sbh.
    emit(
        K::ProjInput,
        core.output_width(),
        a,
        false,
        e,
        S::Heads,
        D::Full,
    );
    if model.dropout {
        // Korthikanti §4.1: residual dropout mask sbh (1 byte).
        emit(
            K::AttnResidualDropoutMask,
            h,
            a,
            false,
            1.0,
            S::SequenceParallel,
            D::Full,
        );
    }
}

/// The tensors one FFN of `width` (summed over the copies a token visits) saves, at `split`.
fn ffn_tensors(
    model: &ModelSpec,
    width: f64,
    (gelu, swiglu): ([TensorKind; 2], [TensorKind; 3]),
    split: TpSplit,
    emit: &mut dyn FnMut(TensorKind, f64, TpSplit),
) {
    let kinds: &[TensorKind] = match model.ffn_kind {
        // Korthikanti §4.1 MLP: GeLU input 8sbh and second-linear input 8sbh (f = 4h).
        FfnKind::GeluMlp => &gelu,
        // Fused SwiGLU (Megatron `bias_swiglu_impl`, TE): saves gate and up
        // projections and the down-projection input; eager PyTorch also keeps silu(gate) (4 tensors).
        FfnKind::SwiGlu => &swiglu,
    };
    for k in kinds {
        emit(*k, width, split);
    }
}

/// The FFN half: norm, the first linear's input, the router, the dense FFN or the experts,
/// and the residual dropout.
fn visit_ffn(model: &ModelSpec, kind: LayerKind, setup: &ActivationSetup, emit: &mut Emit) {
    use DroppedBy as D;
    use TensorKind as K;
    use TpSplit as S;
    let e = setup.activation_bytes;
    let h = f64::from(model.hidden);
    let a = model.heads.max(1);
    emit(K::Norm2Input, h, a, false, e, S::SequenceParallel, D::Full);
    // Korthikanti §4.1 MLP: the first linear saves its input, 2sbh.
    emit(
        K::FfnInput,
        h,
        a,
        false,
        e,
        linear_input_split(setup),
        D::Full,
    );
    let moe = match (kind, &model.moe) {
        (LayerKind::Moe, Some(moe)) => Some(moe),
        _ => None,
    };
    if let Some(moe) = moe {
        // Router logits/probabilities in fp32 (Megatron router), one per expert per token.
        let experts = f64::from(moe.routed_experts);
        emit(
            K::RouterProbs,
            experts,
            a,
            false,
            4.0,
            S::SequenceParallel,
            D::Full,
        );
    }
    let mut emit_ffn = |k, width, split| emit(k, width, a, false, e, split, D::Full);
    match moe {
        Some(moe) => {
            // Each token is dispatched to top-k experts (SP splits the tokens); the busiest EP
            // rank receives `load ×` the mean (MoeRouting::busiest_rank_load), and its saved
            // expert tensors are what bound the peak. Megatron's dispatcher all-gathers the
            // dispatched tokens over the expert-TP group (token_dispatcher.py,
            // dispatch_postprocess), so a rank's expert input and output hold expert_tp × its
            // tokens at full h, while the expert's inner width is split by expert_tp: the
            // intermediate tensors keep their size.
            let tokens = crate::input::moe_routing::routed_tokens_per_rank(
                setup.micro_batch,
                setup.seq_len,
                setup.cp,
                setup.tp,
                setup.sequence_parallel,
            );
            let load = setup.moe_routing.busiest_rank_load(
                setup.ep,
                crate::input::moe_routing::assignments_per_rank(
                    tokens,
                    setup.expert_tp,
                    f64::from(moe.experts_per_token),
                ),
            );
            let top_k = f64::from(moe.experts_per_token) * load;
            let fe = f64::from(moe.expert_ffn);
            let etp = f64::from(setup.expert_tp.max(1));
            emit_ffn(K::ExpertInput, etp * top_k * h, S::SequenceParallel);
            let expert = (
                [K::ExpertGeluInput, K::ExpertGeluOutput],
                [K::ExpertGate, K::ExpertUp, K::ExpertSwigluOutput],
            );
            ffn_tensors(
                model,
                top_k * fe,
                expert,
                S::SequenceParallel,
                &mut emit_ffn,
            );
            // Expert outputs are kept for the gradient of the routing weights.
            emit_ffn(K::ExpertOutput, etp * top_k * h, S::SequenceParallel);
            if moe.shared_experts > 0 {
                let shared = (
                    [K::SharedGeluInput, K::SharedGeluOutput],
                    [K::SharedGate, K::SharedUp, K::SharedSwigluOutput],
                );
                let width = f64::from(moe.shared_experts) * fe;
                ffn_tensors(model, width, shared, S::FfnWidth, &mut emit_ffn);
            }
        }
        None => {
            let dense = (
                [K::GeluInput, K::GeluOutput],
                [K::SwigluGate, K::SwigluUp, K::SwigluOutput],
            );
            ffn_tensors(
                model,
                f64::from(model.ffn),
                dense,
                S::FfnWidth,
                &mut emit_ffn,
            );
        }
    }
    if model.dropout {
        // Korthikanti §4.1 MLP: dropout mask sbh (1 byte).
        emit(
            K::FfnResidualDropoutMask,
            h,
            a,
            false,
            1.0,
            S::SequenceParallel,
            D::Full,
        );
    }
}

/// The adapters' own saved tensors (Megatron-style adapters, at the activation dtype).
fn visit_adapters(model: &ModelSpec, kind: LayerKind, setup: &ActivationSetup, emit: &mut Emit) {
    let Some(lora) = &setup.adapters else {
        return;
    };
    let (e, a) = (setup.activation_bytes, model.heads.max(1));
    // PEFT lora.Linear: lora_B saves lora_A's r-value output; A's output is whole on every
    // TP rank (A is replicated for column-parallel layers, all-reduced for row-parallel ones).
    if setup.method.uses_rank() {
        let values = adapter_values_per_token(model, kind, lora);
        let kind = TensorKind::AdapterIntermediate;
        emit(
            kind,
            values,
            a,
            false,
            e,
            TpSplit::Replicated,
            DroppedBy::Full,
        );
    }
    // DoRA's and IA3's own saved tensors, at the activation dtype (Megatron-style adapters).
    let extra = crate::memory::adapters::method_output_values(model, kind, setup.method, lora);
    if extra > 0.0 {
        let kind = TensorKind::Hf(crate::memory::hf_activations::HfTensor::MethodOutputs);
        emit(
            kind,
            extra,
            a,
            false,
            e,
            TpSplit::Replicated,
            DroppedBy::Full,
        );
    }
}

/// Calls `f` with the tensors outside the decoder layers: the embedding's
/// dropout mask on the first stage, final norm, output projection and logits
/// on the last (Korthikanti §4.3).
pub(crate) fn visit_extras(
    model: &ModelSpec,
    setup: &ActivationSetup,
    first: bool,
    last: bool,
    f: impl FnMut(RawTensor),
) {
    if setup.eager_modules {
        crate::memory::hf_activations::visit_extras(model, setup, last, f);
        return;
    }
    let h = f64::from(model.hidden);
    let a = model.heads.max(1);
    let e = setup.activation_bytes;
    let mut f = saved_only(model, setup, f);
    let mut emit = |kind, values_per_token, dtype_bytes, split| {
        f(RawTensor {
            kind,
            values_per_token,
            heads: a,
            seq_squared: false,
            dtype_bytes,
            split,
            dropped_by: DroppedBy::Never,
        })
    };
    if first && model.dropout {
        // Korthikanti §4.3: embedding dropout mask, sbh bytes (sbh/t with SP).
        emit(
            TensorKind::EmbeddingDropoutMask,
            h,
            1.0,
            TpSplit::SequenceParallel,
        );
    }
    if last {
        // Korthikanti §4.3: final LayerNorm input 2sbh and output-projection input 2sbh (÷t with SP).
        emit(TensorKind::FinalNormInput, h, e, TpSplit::SequenceParallel);
        emit(TensorKind::OutputInput, h, e, TpSplit::SequenceParallel);
        if setup.count_logits {
            let bytes = if setup.fp32_logits { 4.0 } else { e };
            // Korthikanti §4.3: the vocab-parallel cross entropy keeps fp32 logits, 4sbv/t.
            emit(
                TensorKind::Logits,
                f64::from(model.vocab),
                bytes,
                TpSplit::FfnWidth,
            );
        }
    }
}

/// Bytes one layer keeps for one micro-batch on one rank under the setup's recompute policy.
pub fn layer_bytes(model: &ModelSpec, kind: LayerKind, setup: &ActivationSetup) -> f64 {
    let mut total = 0.0;
    visit_layer(model, kind, setup, |t| {
        if t.kept(setup) {
            total += t.bytes(setup);
        }
    });
    total
}

/// Bytes of one layer that the recompute policy drops, rebuilt and held
/// during that layer's backward: the transient working set of recompute.
pub fn layer_recompute_transient_bytes(
    model: &ModelSpec,
    kind: LayerKind,
    setup: &ActivationSetup,
) -> f64 {
    let mut total = 0.0;
    visit_layer(model, kind, setup, |t| {
        if !t.kept(setup) {
            total += t.bytes(setup);
        }
    });
    total
}

/// Bytes outside the layers for one micro-batch: embedding dropout (first
/// stage), final norm, output input and logits (last stage).
pub fn extras_bytes(model: &ModelSpec, setup: &ActivationSetup, first: bool, last: bool) -> f64 {
    let mut total = 0.0;
    visit_extras(model, setup, first, last, |t| total += t.bytes(setup));
    total
}

/// One tensor saved for the backward pass, explained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedTensor {
    /// The op that saves it ("attention.softmax").
    pub op: String,
    /// What the tensor is.
    pub name: String,
    /// Shape on one rank before splits, as text ("b·a·s·s").
    pub shape: String,
    /// Bytes per value.
    pub dtype_bytes: f64,
    /// What divides it inside the TP group.
    pub split: TpSplit,
    /// The weakest recompute policy that drops it.
    pub dropped_by: DroppedBy,
    /// Whether the current recompute policy keeps it.
    pub saved: bool,
    /// Bytes on one rank for one micro-batch (whether saved or not).
    pub bytes: f64,
    /// Source of the accounting, one line.
    pub source: String,
}

/// Where the K/V accounting comes from, and what CP does to it.
const KV_SOURCE: &str = "Korthikanti §4.1 with GQA (kv heads); under CP ring attention only the local s/cp chunk is saved, remote chunks pass through and are re-sent in backward (Megatron/TE)";

impl TensorKind {
    /// (op, name, shape, source).
    fn describe(self) -> (&'static str, &'static str, &'static str, &'static str) {
        use TensorKind as K;
        let kor = "Korthikanti et al. 2022 §4.1";
        let swiglu =
            "fused SwiGLU (Megatron bias_swiglu_impl); eager PyTorch also saves silu(gate)";
        let moe = "Megatron MoE: k per token on average, times the busiest EP rank's load (the routing's); expert input and output gathered over expert-TP";
        match self {
            K::Norm1Input => (
                "norm1",
                "layer input (norm 1 input)",
                "s·b·h",
                "Korthikanti §4.1; the tensor full recompute keeps",
            ),
            K::QkvInput => (
                "attention.qkv",
                "QKV projection input",
                "s·b·h",
                "Korthikanti §4.1; sharded by SP under Megatron, the all-gathered sequence under torchtitan's TP",
            ),
            K::MlaQLatent => (
                "attention.mla",
                "query latent",
                "s·b·q_lora_rank",
                "DeepSeek-V2 §2.1.2",
            ),
            K::MlaKvLatent => (
                "attention.mla",
                "key/value latent + RoPE key",
                "s·b·(kv_lora_rank + rope)",
                "DeepSeek-V2 §2.1.2",
            ),
            K::Query => ("attention.qk", "Q", "s·b·a·d", kor),
            K::Key => ("attention.qk", "K", "s·b·kv·d", KV_SOURCE),
            K::Value => ("attention.v", "V", "s·b·kv·d", KV_SOURCE),
            K::Softmax => ("attention.softmax", "softmax output", "b·a·s·s", kor),
            K::AttnDropoutMask => (
                "attention.dropout",
                "attention dropout mask (1 B)",
                "b·a·s·s",
                kor,
            ),
            K::AttnDropoutOutput => (
                "attention.dropout",
                "attention dropout output",
                "b·a·s·s",
                kor,
            ),
            K::SoftmaxLse => (
                "attention.flash",
                "softmax log-sum-exp (fp32)",
                "b·a·s",
                "Dao et al. 2022 Alg. 2",
            ),
            K::ProjInput => ("attention.proj", "output projection input", "s·b·a·d", kor),
            K::AttnResidualDropoutMask => (
                "attention.residual_dropout",
                "residual dropout mask (1 B)",
                "s·b·h",
                kor,
            ),
            K::Norm2Input => ("norm2", "norm 2 input", "s·b·h", kor),
            K::FfnInput => (
                "ffn.in",
                "FFN input (first linear / router)",
                "s·b·h",
                "Korthikanti §4.1; sharded by SP under Megatron, the all-gathered sequence under torchtitan's TP",
            ),
            K::GeluInput => ("ffn.gelu", "GeLU input", "s·b·f", kor),
            K::GeluOutput => ("ffn.out", "second linear input (GeLU output)", "s·b·f", kor),
            K::SwigluGate => ("ffn.swiglu", "gate projection output", "s·b·f", swiglu),
            K::SwigluUp => ("ffn.swiglu", "up projection output", "s·b·f", swiglu),
            K::SwigluOutput => ("ffn.down", "down projection input", "s·b·f", swiglu),
            K::FfnResidualDropoutMask => (
                "ffn.residual_dropout",
                "residual dropout mask (1 B)",
                "s·b·h",
                kor,
            ),
            K::RouterProbs => ("moe.router", "router probabilities (fp32)", "s·b·E", moe),
            K::ExpertInput => (
                "moe.dispatch",
                "dispatched tokens (expert input)",
                "s·b·k·h",
                moe,
            ),
            K::ExpertGeluInput => ("moe.expert", "expert GeLU input", "s·b·k·f_e", moe),
            K::ExpertGeluOutput => ("moe.expert", "expert second linear input", "s·b·k·f_e", moe),
            K::ExpertGate => ("moe.expert", "expert gate output", "s·b·k·f_e", moe),
            K::ExpertUp => ("moe.expert", "expert up output", "s·b·k·f_e", moe),
            K::ExpertSwigluOutput => ("moe.expert", "expert down input", "s·b·k·f_e", moe),
            K::ExpertOutput => (
                "moe.combine",
                "expert outputs (for routing-weight grads)",
                "s·b·k·h",
                moe,
            ),
            K::SharedGeluInput => ("moe.shared", "shared expert GeLU input", "s·b·n_s·f_e", moe),
            K::SharedGeluOutput => (
                "moe.shared",
                "shared expert second linear input",
                "s·b·n_s·f_e",
                moe,
            ),
            K::SharedGate => (
                "moe.shared",
                "shared expert gate output",
                "s·b·n_s·f_e",
                moe,
            ),
            K::SharedUp => ("moe.shared", "shared expert up output", "s·b·n_s·f_e", moe),
            K::SharedSwigluOutput => ("moe.shared", "shared expert down input", "s·b·n_s·f_e", moe),
            K::EmbeddingDropoutMask => (
                "embedding.dropout",
                "embedding dropout mask (1 B)",
                "s·b·h",
                "Korthikanti §4.3",
            ),
            K::FinalNormInput => (
                "final_norm",
                "final norm input",
                "s·b·h",
                "Korthikanti §4.3",
            ),
            K::OutputInput => (
                "output",
                "output projection input",
                "s·b·h",
                "Korthikanti §4.3",
            ),
            K::Logits => (
                "loss",
                "logits / softmax (one copy; grad written in place)",
                "s·b·V",
                "Korthikanti §4.3: 4sbv/t, vocab-parallel cross entropy",
            ),
            K::AdapterIntermediate => (
                "lora",
                "LoRA A outputs (saved by lora_B)",
                "s·b·r per targeted linear",
                "Hu et al. 2021 §4.1; PEFT lora.Linear: lora_B(lora_A(x)), lora_dropout = 0",
            ),
            K::Hf(t) => t.describe(),
        }
    }
}

fn explain(setup: &ActivationSetup, t: RawTensor) -> SavedTensor {
    let (op, name, shape, source) = t.kind.describe();
    SavedTensor {
        op: op.to_string(),
        name: name.to_string(),
        shape: shape.to_string(),
        dtype_bytes: t.dtype_bytes,
        split: t.split,
        dropped_by: t.dropped_by,
        saved: t.kept(setup),
        bytes: t.bytes(setup),
        source: source.to_string(),
    }
}

/// Every tensor one layer saves for backward, on one rank, for one micro-batch.
/// The `saved` ones sum to [`layer_bytes`].
pub fn layer_activations(
    model: &ModelSpec,
    kind: LayerKind,
    setup: &ActivationSetup,
) -> Vec<SavedTensor> {
    let mut out = Vec::new();
    visit_layer(model, kind, setup, |t| out.push(explain(setup, t)));
    out
}

/// The tensors outside the layers (see [`extras_bytes`]).
pub fn extra_activations(
    model: &ModelSpec,
    setup: &ActivationSetup,
    first: bool,
    last: bool,
) -> Vec<SavedTensor> {
    let mut out = Vec::new();
    visit_extras(model, setup, first, last, |t| out.push(explain(setup, t)));
    out
}

/// Korthikanti et al. 2022, Table 2: activation bytes per layer with 16-bit
/// activations, as published (GPT block). `t = 1` is the no-parallelism row.
/// Full recompute is the table's `2sbh` (Megatron stores it ÷t under SP; this
/// reference does not).
pub fn korthikanti_layer_bytes(
    s: f64,
    b: f64,
    h: f64,
    a: f64,
    t: f64,
    sequence_parallel: bool,
    recompute: Recompute,
) -> f64 {
    let sbh = s * b * h;
    let attention = 5.0 * a * s / h;
    match (recompute, sequence_parallel) {
        // Table 2, "Full activation recomputation": sbh·2.
        (Recompute::Full, _) => sbh * 2.0,
        // Table 2, "Tensor parallel (baseline)": sbh(10 + 24/t + 5as/(ht)).
        (Recompute::None, false) => sbh * (10.0 + 24.0 / t + attention / t),
        // Table 2, "Tensor + Sequence parallel": sbh(34/t + 5as/(ht)).
        (Recompute::None, true) => sbh * (34.0 / t + attention / t),
        // Table 2, "Tensor parallel + Selective activation recompute": sbh(10 + 24/t).
        (Recompute::Selective, false) => sbh * (10.0 + 24.0 / t),
        // Table 2, "Tensor + Sequence parallel + Selective activation recompute": sbh(34/t).
        (Recompute::Selective, true) => sbh * 34.0 / t,
    }
}

/// Micro-batches whose activations a pipeline stage holds at its peak, in
/// units of "all of this stage's layers for one micro-batch".
///
/// `stage` is 0-based; `microbatches` is `m`, the micro-batches per step.
pub fn in_flight_microbatches(
    schedule: Schedule,
    pp: u32,
    virtual_stages: u32,
    microbatches: u32,
    stage: u32,
) -> f64 {
    if pp <= 1 {
        // No pipeline: gradient accumulation runs each micro-batch's forward and backward in turn.
        return 1.0;
    }
    // One source of truth: the schedule simulation in `pipeline` is tested against these counts.
    crate::parallel::pipeline::in_flight_micro_batches(
        schedule,
        pp,
        microbatches,
        virtual_stages,
        stage,
    )
}
