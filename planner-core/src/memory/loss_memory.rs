//! The loss's transient memory on the last pipeline stage: the logit-sized tensors a
//! framework's cross entropy holds at the start of the backward pass, on top of every
//! saved activation and of the fp32 logits the activation accounting already counts.

use crate::input::framework::Framework;
use crate::memory::activations::ActivationSetup;

/// One logit-sized transient of the loss.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossTransient {
    /// What it is.
    pub name: &'static str,
    /// Bytes per logit value.
    pub bytes_per_logit: f64,
    /// Where the framework's code makes it, one line.
    pub source: &'static str,
}

/// torchtitan (torchtitan/models/llama/model.py `self.output(h).float()`, train.py
/// `F.cross_entropy(pred.flatten(0, 1), labels)` then `del pred` before backward):
/// log_softmax saves its fp32 output; its backward receives nll_loss's dense fp32 gradient
/// and writes a fresh fp32 gradient of the logits while both are alive.
const TORCHTITAN: [LossTransient; 2] = [
    LossTransient {
        name: "fp32 gradient of the log-softmax output (nll_loss backward)",
        bytes_per_logit: 4.0,
        source: "torchtitan train.py: F.cross_entropy = log_softmax + nll_loss, eager autograd",
    },
    LossTransient {
        name: "fp32 gradient of the logits (log_softmax backward)",
        bytes_per_logit: 4.0,
        source: "torchtitan train.py: log_softmax backward allocates its input's gradient",
    },
];

/// Megatron-Core (megatron/core/tensor_parallel/cross_entropy.py,
/// `VocabParallelCrossEntropy.calculate_logits_max` casts the BF16 logits with `.float()`;
/// exp and the gradient are computed in place on that copy): the BF16 logits live beside
/// the fp32 copy while it is made.
const MEGATRON_CORE: [LossTransient; 1] = [LossTransient {
    name: "BF16 logits beside their fp32 copy",
    bytes_per_logit: 2.0,
    source: "megatron/core/tensor_parallel/cross_entropy.py: logits.float(), then in place",
}];

/// Hugging Face Transformers ≥ 4.46 (src/transformers/loss/loss_utils.py `ForCausalLMLoss`:
/// `logits = logits.float()` inside the loss; the model returns its BF16 logits in
/// `CausalLMOutputWithPast.logits`, which the training loop's `outputs` keeps through
/// backward): beside the saved fp32 log-softmax output, the BF16 logits and the two fp32
/// gradients of the eager cross entropy's backward.
const HF_TRANSFORMERS: [LossTransient; 3] = [
    LossTransient {
        name: "BF16 logits held by the model output",
        bytes_per_logit: 2.0,
        source: "transformers LlamaForCausalLM.forward returns logits; the loop keeps outputs",
    },
    LossTransient {
        name: "fp32 gradient of the log-softmax output (nll_loss backward)",
        bytes_per_logit: 4.0,
        source: "transformers loss_utils.py fixed_cross_entropy: F.cross_entropy, eager autograd",
    },
    LossTransient {
        name: "fp32 gradient of the logits (log_softmax backward)",
        bytes_per_logit: 4.0,
        source: "log_softmax backward allocates its input's gradient before the .float() cast's",
    },
];

/// torchtune (torchtune/modules/loss/ce_chunked_output_loss.py `CEWithChunkedOutputLoss`,
/// `num_output_chunks = 8`; the model returns its output as 8 BF16 chunks): each chunk is cast
/// `.float()` inside its own cross entropy, so beside the saved fp32 log-softmax outputs the BF16
/// chunks stay alive and the backward's two fp32 gradients exist for one chunk at a time.
/// `CEWithChunkedOutputLoss(num_output_chunks=8)`, the default of torchtune's recipes.
const TORCHTUNE_LOSS_CHUNKS: f64 = 8.0;
/// Two fp32 gradients (4 + 4 B) over one of the loss's chunks, per logit.
const TORCHTUNE_CHUNK_GRAD_BYTES: f64 = (4.0 + 4.0) / TORCHTUNE_LOSS_CHUNKS;

const TORCHTUNE: [LossTransient; 2] = [
    LossTransient {
        name: "BF16 logit chunks held for the loss",
        bytes_per_logit: 2.0,
        source:
            "torchtune TransformerDecoder.chunked_output: [self.output(chunk) for chunk in ...]",
    },
    LossTransient {
        name: "fp32 gradients of one chunk of 8 (nll_loss and log_softmax backward)",
        bytes_per_logit: TORCHTUNE_CHUNK_GRAD_BYTES,
        source: "ce_chunked_output_loss.py: F.cross_entropy(logits.float(), ...) per chunk",
    },
];

/// The framework's loss transients.
pub fn loss_transients(framework: Framework) -> &'static [LossTransient] {
    match framework {
        // DeepSpeed wraps the model's own loss: no transient of its own.
        Framework::Article | Framework::DeepSpeed | Framework::DeepSpeed2021 => &[],
        Framework::MegatronCore => &MEGATRON_CORE,
        Framework::Torchtitan => &TORCHTITAN,
        Framework::HfTransformers | Framework::HfDeepSpeed => &HF_TRANSFORMERS,
        Framework::Torchtune => &TORCHTUNE,
    }
}

/// Logit values on one rank for one micro-batch: `(s/cp)·b` tokens × `V/t` (a
/// vocab-parallel loss, Megatron's and torchtitan's `loss_parallel`, splits V by TP).
pub fn logits_per_rank(vocab: u32, setup: &ActivationSetup) -> f64 {
    setup.seq_len / f64::from(setup.cp.max(1)) * setup.micro_batch * f64::from(vocab)
        / f64::from(setup.tp.max(1))
}

/// Bytes of the loss transients on the stage that holds the loss (0 elsewhere, and 0 when
/// the logits are not counted at all).
pub fn loss_transient_bytes(
    framework: Framework,
    vocab: u32,
    setup: &ActivationSetup,
    holds_loss: bool,
) -> f64 {
    if !holds_loss || !setup.count_logits {
        return 0.0;
    }
    let per_logit: f64 = loss_transients(framework)
        .iter()
        .map(|t| t.bytes_per_logit)
        .sum();
    per_logit * logits_per_rank(vocab, setup)
}
