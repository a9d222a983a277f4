//! gpu-bench: measures NCCL collectives, cuBLASLt GEMMs, device memory bandwidth
//! and sharded layer steps, and writes them as a planner-core [`BenchReport`].
//!
//! CUDA, NCCL and cuBLASLt are loaded at run time, so this crate builds and its
//! tests pass on machines without CUDA; [`libs::check`] names any library that
//! is missing before anything touches it (cudarc panics otherwise).
//!
//! [`BenchReport`]: planner_core::edges::report::BenchReport

#![warn(missing_docs)]

pub mod collectives;
pub mod data;
pub mod gemm;
pub mod gpu;
pub mod groups;
pub mod launch;
pub mod layer;
pub mod libs;
pub mod membw;
pub mod rendezvous;
pub mod suite;
pub mod sweep;
pub mod table;

/// Exit status: everything requested was measured.
pub const EXIT_SUCCESS: i32 = 0;
/// Exit status: the run failed before producing a report (missing library, no GPU, bad arguments).
pub const EXIT_FAILURE: i32 = 1;
/// Exit status: bad command-line arguments (clap's convention).
pub const EXIT_USAGE: i32 = 2;
/// Exit status: a report was written but is partial (Ctrl-C, or some sizes skipped).
pub const EXIT_PARTIAL: i32 = 3;
