//! The question as types: model, precision, hardware, layout (with its stage split), fine-tuning mode, framework, calibration summary, and the scenario that holds them with its error.
//!
//! Invariant: Imports only `base`: a type here never knows how it is priced, placed or printed.

pub mod attention_length;
pub mod attention_window;
pub mod bill;
pub mod calibration;
pub mod collective;
pub mod engine_scheduler;
pub mod finetune;
pub mod framework;
pub mod fsdp_semantics;
pub mod gemm_efficiency;
pub mod gpu_presets;
pub mod gpu_traits;
pub mod hardware;
pub mod host;
pub mod intra_node_link;
pub mod kernels;
pub mod layer_ops;
pub mod layout;
pub mod link_efficiency;
pub mod model;
pub mod moe_routing;
pub mod nccl_node;
pub mod number_format;
pub mod offload;
pub mod overlap;
pub mod power_limit;
pub mod precision;
pub mod runtime_memory;
pub mod sac_policy;
pub mod scenario;
pub mod serving_engine;
pub mod speculation;
pub mod stage_split;
