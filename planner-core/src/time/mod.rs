//! Seconds per step: collectives (α–β), the step's communication, and the step cost.
//!
//! Invariant: Sibling of `memory`: never imports it (or anything above).

pub mod adapters;
pub mod calibrated_step;
pub mod collectives;
pub mod comms;
pub mod cost;
pub mod deepspeed_zero3;
pub mod elementwise;
pub mod epoch;
pub mod gemm_shape;
pub mod kernel_launch;
pub mod layer_time;
pub mod nccl_algo;
pub mod offload;
