//! The run's bill: what a training run or a serving fleet costs in days, dollars and energy,
//! what failures and checkpoints take at scale, and the inverse questions (the smallest cluster
//! that meets a deadline, the fewest GPUs that hold a request rate).
//!
//! Invariant: imports `search` and below, never `evaluate`, `figures`, `view` or `edges`.

pub mod checkpoint;
pub mod deadline;
pub mod energy;
pub mod failures;
pub mod fleet;
pub mod rank;
pub mod run;
pub mod terms;
