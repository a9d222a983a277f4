//! Text in and out: share links, HF config import, benchmark reports, nccl-tests logs, exports, published-run validation, the page's serving and import worker request formats.
//!
//! Invariant: The top layer: may import anything below; nothing imports it.

pub mod bill_page;
pub mod calibration_fit;
pub mod error_band;
pub mod export;
pub mod finetune_export;
pub mod gpu_hours_validation;
pub mod hf_config;
pub mod hub;
pub mod import_page;
pub mod import_sniff;
pub mod layer_step;
pub mod link;
pub mod mesh_page;
pub mod nccl_tests;
pub mod offload_export;
pub mod parts_validation;
pub mod report;
pub mod serving_page;
pub mod serving_validation;
pub mod validation;
