//! planner-core: the model of memory, time and communication behind meshplan.
//!
//! Pure Rust with no I/O and no web or CUDA dependencies: it compiles natively
//! (the `meshplan` command, gpu-bench) and to wasm (the app). Every number the
//! app shows comes from here, with the formula and assumption that produced it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod activations;
pub mod bounds;
pub mod breakdown;
pub mod calibrated_step;
pub mod calibration;
pub mod collectives;
pub mod comms;
pub mod cost;
pub mod evaluate;
pub mod explain;
pub mod export;
pub mod finetune;
pub mod fold;
pub mod framework;
pub mod free_text;
pub mod hardware;
pub mod hf_config;
pub mod import_sniff;
mod json_value;
pub mod kv_cache;
pub mod layer_step;
pub mod layout;
pub mod link;
pub mod loss_memory;
pub mod memory;
pub mod memory_summary;
pub mod mesh;
pub mod model;
pub mod nccl_tests;
pub mod pipeline;
pub mod precision;
pub mod presets;
pub mod report;
pub mod scenario;
pub mod serving;
pub mod serving_disagg;
pub mod serving_page;
pub mod serving_search;
pub mod serving_time;
pub mod serving_validation;
pub mod stage_split;
pub mod teaching;
pub mod teaching_sums;
pub mod topology;
pub mod torchtitan_sac;
pub mod validate;
pub mod validation;
