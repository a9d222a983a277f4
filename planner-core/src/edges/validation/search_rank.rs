//! The published mesh's rank in the mesh search of its row's scenario ([`SearchRank`]), and
//! the summary of those ranks ([`SearchSummary`]).

use serde::{Deserialize, Serialize};

use crate::input::layout::ZeroStage;
use crate::input::scenario::Scenario;
use crate::search::mesh::{
    reason_counts, search_scenario, Knobs, MeshDims, ReasonCount, RejectReason, SearchSpace,
};
use crate::time::cost::CostOptions;

use super::compare::RowResult;
use super::dataset::PublishedRun;
use super::recipes::{family, Family};
use super::summary::{quantile, tally_reason, ReasonTally};

/// Rank of the published mesh in the mesh search of the row's scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchRank {
    /// Candidates the search considered.
    pub candidates: u64,
    /// Candidates that passed every rule and fit.
    pub feasible: u64,
    /// 1-based rank of the best feasible candidate with the published dp, tp, pp, cp, ep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
    /// 1-based rank of the published mesh among distinct meshes: each mesh counted once,
    /// at its best candidate (ZeRO stage, recompute, micro-batch, schedule as the search
    /// chose them), so one faster mesh's several knob settings count as one mesh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh_rank: Option<u64>,
    /// The knobs of that candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_knobs: Option<Knobs>,
    /// Its predicted step time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_step_s: Option<f64>,
    /// The search's first candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_dims: Option<MeshDims>,
    /// Its predicted step time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_step_s: Option<f64>,
    /// Why the published mesh is not feasible (candidates by reason), when it is not.
    pub rejected_reasons: Vec<ReasonCount>,
}

/// Runs the search on a row's scenario and finds its published mesh.
pub(super) fn search_rank(run: &PublishedRun, scenario: &Scenario) -> Result<SearchRank, String> {
    // The default space; the output caps are lifted and every knob setting kept as its own
    // row, so both ranks come from one search: the knob-level position, and the mesh's place
    // in the default list (one row per mesh at its best candidate, `keep_best_per_mesh`),
    // which is the first position counting each faster mesh once.
    let mut space = SearchSpace {
        max_results: usize::MAX,
        max_rejected: usize::MAX,
        one_row_per_mesh: false,
        ..SearchSpace::default()
    };
    // The search proposes what the row's framework ran (as `Framework::runs_schedule` does for
    // schedules): the Megatron-LM of Narayanan et al. 2021 and Korthikanti et al. 2022 keeps a
    // full model copy per data-parallel worker (Narayanan et al. 2021 §2.1; its Table 2 runs
    // ZeRO-3 through DeepSpeed as the alternative), without the distributed optimizer of later
    // Megatron-LM (`--use-distributed-optimizer`, megatron/optimizer/distrib_optimizer.py, first
    // committed 2022-03-09 in NVIDIA/Megatron-LM 28b63ec78b, after Narayanan's runs); the
    // rows map to DDP (map_run's stated default), so their searches propose DDP only.
    if family(&run.source) == Family::MegatronPaper && !run.fsdp {
        space.zero_stages = vec![ZeroStage::Ddp];
    }
    let result = search_scenario(scenario, &space, CostOptions::default(), None)
        .map_err(|e| e.to_string())?;
    let published = MeshDims {
        dp: scenario.layout.dp,
        tp: run.tp,
        pp: run.pp,
        cp: run.cp,
        ep: run.ep,
        expert_tp: scenario.layout.expert_tp,
    };
    let at = result.feasible.iter().position(|f| f.dims == published);
    let mut rejected_reasons: Vec<ReasonCount> = Vec::new();
    if at.is_none() {
        let mut counts = [0u64; RejectReason::ALL.len()];
        for block in result.rejected.iter().filter(|b| b.dims == published) {
            for r in block.reasons.iter() {
                counts[r as usize] += block.candidates;
            }
        }
        rejected_reasons = reason_counts(counts);
        if rejected_reasons.is_empty() {
            rejected_reasons.push(ReasonCount {
                reason: "not_enumerated".to_string(),
                candidates: 0,
            });
        }
    }
    let top = result.feasible.first();
    let mesh_rank = at.map(|i| {
        let faster: std::collections::HashSet<MeshDims> =
            result.feasible[..i].iter().map(|f| f.dims).collect();
        faster.len() as u64 + 1
    });
    Ok(SearchRank {
        candidates: result.candidates,
        feasible: result.feasible_count,
        rank: at.map(|i| i as u64 + 1),
        mesh_rank,
        best_knobs: at.map(|i| result.feasible[i].knobs),
        published_step_s: at.map(|i| result.feasible[i].step_s),
        top_dims: top.map(|f| f.dims),
        top_step_s: top.map(|f| f.step_s),
        rejected_reasons,
    })
}

/// Summary of the mesh-search ranks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchSummary {
    /// What was searched and how.
    pub method: String,
    /// Rows searched (representable rows with a full layout).
    pub rows: usize,
    /// Distinct scenarios searched (rows of one run share a search).
    pub searches: usize,
    /// Rows whose published mesh is feasible in the search.
    pub ranked: usize,
    /// Rows whose published mesh ranks in the top 10.
    pub top_10: usize,
    /// `top_10 / rows`.
    pub top_10_share: Option<f64>,
    /// Median rank of the ranked rows.
    pub median_rank: Option<f64>,
    /// Rows whose published mesh is in the top 10 distinct meshes ([`SearchRank::mesh_rank`]).
    pub mesh_top_10: usize,
    /// `mesh_top_10 / rows`.
    pub mesh_top_10_share: Option<f64>,
    /// Median [`SearchRank::mesh_rank`] of the ranked rows.
    pub median_mesh_rank: Option<f64>,
    /// Rows whose published mesh the search rejects, by reason (a row may have several).
    pub rejected: Vec<ReasonTally>,
}

pub(super) fn search_summary(rows: &[RowResult], searches: usize) -> SearchSummary {
    let searched: Vec<(&RowResult, &SearchRank)> = rows
        .iter()
        .filter_map(|r| r.search.as_ref().map(|s| (r, s)))
        .collect();
    let mut ranks: Vec<f64> = searched
        .iter()
        .filter_map(|(_, s)| s.rank.map(|r| r as f64))
        .collect();
    ranks.sort_by(f64::total_cmp);
    let top_10 = searched
        .iter()
        .filter(|(_, s)| s.rank.is_some_and(|r| r <= 10))
        .count();
    let mut mesh_ranks: Vec<f64> = searched
        .iter()
        .filter_map(|(_, s)| s.mesh_rank.map(|r| r as f64))
        .collect();
    mesh_ranks.sort_by(f64::total_cmp);
    let mesh_top_10 = mesh_ranks.iter().filter(|r| **r <= 10.0).count();
    let mut rejected: Vec<ReasonTally> = Vec::new();
    for (row, s) in &searched {
        for rc in &s.rejected_reasons {
            tally_reason(&mut rejected, &rc.reason, &row.id);
        }
    }
    SearchSummary {
        method: "planner_core::mesh::search_scenario on each row's scenario with the default SearchSpace (output caps lifted so every feasible candidate is ranked); mesh rank = 1-based position of the published dp, tp, pp, cp, ep in the search's list, which holds each mesh once at its best ZeRO stage, recompute, micro-batch and schedule (SearchSpace::one_row_per_mesh), by predicted step time; rank = the position of its best candidate when every knob setting is its own row".to_string(),
        rows: searched.len(),
        searches,
        ranked: ranks.len(),
        top_10,
        top_10_share: (!searched.is_empty()).then(|| top_10 as f64 / searched.len() as f64),
        median_rank: quantile(&ranks, 0.5),
        mesh_top_10,
        mesh_top_10_share: (!searched.is_empty())
            .then(|| mesh_top_10 as f64 / searched.len() as f64),
        median_mesh_rank: quantile(&mesh_ranks, 0.5),
        rejected,
    }
}
