//! Validation of the step-time model against published training runs
//! (`validation/public-runs.json`, described in `validation/README.md`).
//!
//! Pure: the caller passes the dataset's text. Each row is mapped to a
//! [`Scenario`](crate::input::scenario::Scenario) (every field the source leaves unsaid takes a
//! default that the row's result lists), evaluated with [`crate::evaluate::evaluate`], and its
//! published quantity compared with the prediction. A row the model cannot
//! express is kept, as "not representable", with the precise reason. Nothing
//! here is fitted to the rows: this module measures the model, it does not tune it.
//!
//! One concept per module; every public item is re-exported here, so its path is
//! `crate::edges::validation::X` whichever module holds it:
//!
//! - `dataset`: the dataset's rows ([`PublishedRun`], [`Quantity`], [`FirstSeen`]…), reading
//!   them ([`parse_runs`], [`parse_rows`]) and each field's bounds;
//! - `models`: the model of a row: known public models ([`known_model_key`],
//!   [`model_for_key`]) and shapes from the row;
//! - `recipes`: what a row's source ran: its framework family and the settings its published
//!   recipe takes where the row is silent (overlap, stage split, MoE routing, expert TP,
//!   micro-batch);
//! - `stack`: a memory row's training stack (framework, fine-tuning method, optimizer,
//!   offload, ZeRO++) as scenario choices;
//! - `mapping`: a row as a scenario ([`map_run`], [`MappedRun`]), the defaults it takes, and the
//!   dataset's GPU names ([`dataset_gpu_preset`]);
//! - `compare`: a mapped row evaluated and compared ([`validate_run`], [`validate_runs`],
//!   [`Comparison`]) under the FLOP conventions of its source ([`conventions`]);
//! - `kv_pool`: a serving engine's KV-pool rows against the serving model;
//! - `summary`: error statistics and the report's groups ([`ErrorStats`], [`GroupSummary`],
//!   [`ValidationReport`], [`summarize`]), the first-seen groups included;
//! - `search_rank`: the published mesh's rank in the mesh search ([`SearchRank`],
//!   [`SearchSummary`]);
//! - `page`: the page's validation-worker protocol ([`PageSummary`], [`PageReply`],
//!   [`page_summary`]) and the rows nearest a scenario ([`nearness`], [`nearest_rows`]).

mod compare;
mod dataset;
mod kv_pool;
mod mapping;
mod models;
mod page;
mod recipes;
mod search_rank;
mod stack;
mod summary;

pub use compare::{
    conventions, run_validation, validate_run, validate_runs, Breakdown, Comparison, RowResult,
    ValidationOptions,
};
pub use dataset::{
    check_row_text, check_unique_id, parse_checked_rows, parse_rows, parse_runs, FirstSeen,
    FlopConvention, MemoryKind, ModelShape, PublishedRun, Quantity, RunPrecision, RunRecompute,
    RunSchedule, MAX_DATASET_BYTES, MEMORY_RUNS_JSON, PUBLIC_RUNS_JSON,
};
pub use mapping::{dataset_gpu_preset, map_run, MappedRun, DATASET_GPUS};
pub use models::{known_model_key, model_core_name, model_for_key, KNOWN_MODEL_NAMES};
pub use page::{
    nearest_rows, nearness, page_summary, shape_nearness, PageGroup, PageReply, PageRow,
    PageSummary, RunShape,
};
pub use recipes::run_framework;
pub use search_rank::{SearchRank, SearchSummary};
pub use summary::{
    error_stats, quantile, summarize, summarize_by_source, tally_reason, ErrorStats, GroupSummary,
    ReasonTally, ValidationReport, ALL_GROUP, ALL_TIME_GROUP, TIME_GROUP,
};
