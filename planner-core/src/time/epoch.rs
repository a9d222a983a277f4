//! Time per epoch: optimizer steps to see a dataset once, times the step time of the time
//! model ([`epoch_time`]). The dataset is stated as tokens, or as examples and their mean
//! length; `training.packing` says how examples fill sequences.

use serde::{Deserialize, Serialize};

use crate::input::scenario::Training;

/// A dataset's size as the user states it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dataset {
    /// Total tokens (only meaningful with packing: without it the example count decides).
    Tokens {
        /// Tokens in the dataset.
        tokens: f64,
    },
    /// Examples and their mean length in tokens (prompt and response together).
    Examples {
        /// Examples in the dataset.
        examples: f64,
        /// Mean tokens per example.
        mean_tokens: f64,
    },
}

/// One epoch's steps and time, and what the figure assumes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochTime {
    /// Optimizer steps per epoch.
    pub steps: f64,
    /// Seconds per step (the time model's).
    pub step_s: f64,
    /// `steps × step_s`.
    pub epoch_s: f64,
    /// Dataset tokens one step consumes (real tokens, padding excluded).
    pub tokens_per_step: f64,
    /// Whether the figure assumes packing.
    pub packing: bool,
    /// What the figure assumes, for a person.
    pub assumption: String,
}

/// Why an epoch time cannot be given, with the field (CLI flag / link key) to change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochError {
    /// The input to change ("dataset_tokens", "examples", "mean_len").
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

/// Largest dataset size accepted (tokens or examples): 1e15, far beyond any public corpus,
/// so step counts stay exact in f64.
pub const MAX_DATASET: f64 = 1e15;

fn check(field: &'static str, value: f64) -> Result<(), EpochError> {
    if (1.0..=MAX_DATASET).contains(&value) {
        Ok(())
    } else {
        Err(EpochError {
            field,
            message: format!("must be a number from 1 to {MAX_DATASET:e}"),
        })
    }
}

/// Steps and time of one epoch of `dataset` under `training` at `step_s` seconds per step.
///
/// Packing on (torchtune `PackedDataset`, TRL `SFTConfig(packing=True)`): examples are
/// concatenated into `seq_len`-token sequences, so a step consumes `global_batch × seq_len`
/// dataset tokens and `steps = ⌈tokens / (global_batch × seq_len)⌉`. Packing off: each
/// example is one sequence (cut at `seq_len`), so `steps = ⌈examples / global_batch⌉`, each step
/// priced at the full `seq_len`: an upper bound, as TRL's and torchtune's collators pad a batch
/// only to its longest example (`DataCollatorForCompletionOnlyLM`, `padded_collate_sft`).
pub fn epoch_time(
    training: &Training,
    dataset: Dataset,
    step_s: f64,
) -> Result<EpochTime, EpochError> {
    let batch = f64::from(training.global_batch.max(1));
    let seq = f64::from(training.seq_len.max(1));
    let (steps, tokens_per_step, assumption) = match (dataset, training.packing) {
        (Dataset::Tokens { tokens }, true) => {
            check("dataset_tokens", tokens)?;
            let per_step = batch * seq;
            (
                (tokens / per_step).ceil(),
                per_step,
                format!("packing: {batch} sequences × {seq} tokens of data per step"),
            )
        }
        (Dataset::Tokens { .. }, false) => {
            return Err(EpochError {
                field: "dataset_tokens",
                message: "without packing each example is its own sequence, so the step count \
                          depends on the number of examples: give examples and their mean length, \
                          or switch packing on"
                    .to_string(),
            })
        }
        (
            Dataset::Examples {
                examples,
                mean_tokens,
            },
            packing,
        ) => {
            check("examples", examples)?;
            check("mean_len", mean_tokens)?;
            if packing {
                let per_step = batch * seq;
                (
                    (examples * mean_tokens / per_step).ceil(),
                    per_step,
                    format!("packing: {examples} examples × {mean_tokens} tokens in {seq}-token sequences, {batch} per step"),
                )
            } else {
                let kept = mean_tokens.min(seq);
                (
                    (examples / batch).ceil(),
                    batch * kept,
                    format!("no packing: one example per sequence, {batch} per step, each step timed at the full {seq} tokens (an upper bound: batches pad to their longest example){}",
                        if mean_tokens > seq { format!("; examples cut at {seq} tokens") } else { String::new() }),
                )
            }
        }
    };
    Ok(EpochTime {
        steps,
        step_s,
        epoch_s: steps * step_s,
        tokens_per_step,
        packing: training.packing,
        assumption,
    })
}
