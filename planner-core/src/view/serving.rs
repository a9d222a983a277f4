//! The serving view: KV cache per token and per sequence, concurrent sequences per
//! replica for each TP × PP choice, and the replicas-or-shard recommendation.

use serde::Serialize;

use crate::input::hardware::Cluster;
use crate::input::model::ModelSpec;
use crate::input::scenario::Serving;

/// The replica shape the user chose, with every memory term: the view's figures.
pub use crate::memory::serving::ServingPlan;

/// One cell of the concurrency table, and the table's rows and columns.
pub use crate::memory::serving::{ConcurrencyCell, TABLE_PP, TABLE_TP};

/// Replicas or shard, and why: the recommendation's headline.
pub use crate::memory::serving::{Decision, Recommendation};

/// Everything the serving view shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServingView {
    /// The replica shape the user chose.
    pub plan: ServingPlan,
    /// Max concurrent sequences over [`TABLE_TP`] × [`TABLE_PP`].
    pub table: Vec<ConcurrencyCell>,
    /// Tokens per sequence.
    pub context_len: u32,
    /// Concurrent sequences a replica should hold (the table's green cells).
    pub target_concurrency: u32,
}

/// The serving view of `model` under `serving` on `cluster`: training layout aside, so
/// the page rebuilds it only when these change. An error message when the inputs are invalid.
pub fn serving(
    model: &ModelSpec,
    serving: &Serving,
    cluster: &Cluster,
) -> Result<ServingView, String> {
    let view = crate::evaluate::serving_view(model, serving, cluster)?;
    Ok(ServingView {
        plan: view.plan,
        table: view.table,
        context_len: serving.context_len,
        target_concurrency: serving.target_concurrency,
    })
}
