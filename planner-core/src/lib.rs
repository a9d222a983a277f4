//! planner-core: the model of memory, time and communication behind meshplan.
//!
//! Pure Rust with no I/O and no web or CUDA dependencies: it compiles natively
//! (the `meshplan` command, gpu-bench) and to wasm (the app). Every number the
//! app shows comes from here, with the formula and assumption that produced it.
//!
//! # Map
//!
//! Layers, bottom to top. A module imports only from its own folder and from
//! folders below it; `memory` and `time` are siblings and never import each
//! other. `tests/it/layers.rs` reads every `crate::` path and fails otherwise, and
//! checks that `app/` and `app-worker/` import only [`input`], [`view`], [`figures`],
//! [`edges`] and [`base::explain`].
//!
//! | layer | owns |
//! |---|---|
//! | [`base`] | the explained number (`Term`), input bounds, validated free text, JSON values |
//! | [`input`] | the question as types: model, precision, hardware, layout, fine-tuning, framework, calibration summary, `Scenario` and its error |
//! | [`resolve`] | presets, defaults, and the rules a scenario must meet |
//! | [`parallel`] | rank grid and group placement, MoE folding, pipeline schedules |
//! | [`memory`] · [`time`] | bytes per GPU · seconds per step (siblings) |
//! | [`serving`] | serving latency: prefill, decode, batching, queueing, disaggregation |
//! | [`search`] | the mesh search and the deployment search |
//! | [`bill`] | a run's days, dollars, energy and failures; the smallest cluster for a deadline, the fewest GPUs for a request rate |
//! | [`evaluate`] | one scenario in, every prediction out: what the CLI, the validation runs and the tests call |
//! | [`figures`] | what the page draws, as data: step breakdown, teaching figures |
//! | [`view`] | the page's only door: one builder per page section (issues, memory, pipeline, serving, step breakdown, measured numbers) and the lower-layer types the page names, re-exported with a reason; `meshplan eval` prints the same structs |
//! | [`edges`] | text in and out: links, HF configs, reports, nccl-tests, exports, validation |

// Product functions fit on a screen (clippy.toml sets the threshold); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod base;
pub mod bill;
pub mod edges;
pub mod evaluate;
pub mod figures;
pub mod input;
pub mod memory;
pub mod parallel;
pub mod resolve;
pub mod search;
pub mod serving;
pub mod time;
pub mod view;
