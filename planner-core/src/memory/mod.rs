//! Bytes per GPU: model state for DDP and ZeRO-1/2/3, activations, loss transients, KV cache, serving memory.
//!
//! Invariant: Sibling of `time`: never imports it (or anything above).

pub mod activations;
pub mod adapters;
pub mod deepspeed_zero;
pub mod engine_kv_pool;
pub mod hf_activations;
pub mod kv_cache;
pub mod loss_memory;
pub mod model_state;
pub mod offload;
pub mod serving;
pub mod stage_peak;
pub mod state_terms;
pub mod torchtitan_sac;
pub mod training_memory;
pub mod window_kv;
