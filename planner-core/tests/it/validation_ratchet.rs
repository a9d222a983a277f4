//! A ratchet on `meshplan validate`'s summary: fails when the model's accuracy on the
//! published runs falls back past what it reaches today, so a later change cannot quietly
//! undo it. Raise the recorded values (never lower them without saying which mechanism moved
//! them, in the commit and in docs/measurement-log.md) when the model changes. The history of
//! each figure before issue 39 is in `git log -p` of this file.
//!
//! Issue 39's targets on all 187 rows (tokens/s + iteration time median ≤ 8%, p90 ≤ 20%,
//! max ≤ 40%; peak memory median ≤ 8%, max ≤ 20%; the published mesh in the top 10 for ≥ 80%)
//! are not met yet; the figures below are today's, measured with
//! `cargo run --release -p meshplan -- validate --json` on 2026-12-07 (session 23).
//! Issue 12's targets on the 125 rows the model was developed against still hold
//! (`the_issue_12_targets_hold_on_the_development_rows`).

use planner_core::edges::validation::{
    run_validation, ErrorStats, RowResult, ValidationOptions, ALL_GROUP, TIME_GROUP,
};

const DATASET: &str = include_str!("../../../validation/public-runs.json");

/// Rounding slack on each recorded figure: 0.2 percentage points.
const SLACK: f64 = 0.002;

/// Tokens/s + iteration time over all 187 rows: (median, p90, max, share within 25%).
/// Session 23, after FSDP under pipelining, NCCL's tuner, torchtitan's pipeline defaults and
/// BLOOM's DeepSpeed pipeline engine and B200 / GB200 / MI325X GEMMs at their measured BF16 share;
/// the max is Qwen3-30B-A3B (MoE with many small
/// experts, +141%: not modelled yet, docs/measurement-log.md).
const TIME_TODAY: (f64, f64, f64, f64) = (0.0856, 0.3186, 1.4146, 0.8769);
/// Every quantity over all 187 rows.
const ALL_TODAY: (f64, f64, f64, f64) = (0.0745, 0.2482, 1.9206, 0.8983);
/// Peak memory over its 15 rows. Session 26: torchtitan's TP saves the all-gathered input of
/// its column-parallel linears (Framework::saves_gathered_tp_inputs): the max (70B on 256
/// GPUs) fell from 22.5% to 17.3%, which meets issue 39's ≤ 20%; the p90 rose from 9.9% to
/// 10.5% because the 405B interleaved row, already over-predicted (+10.0%), gains the same
/// tensors (+12.6%): its miss lies elsewhere (docs/measurement-log.md).
const MEMORY_TODAY: (f64, f64, f64, f64) = (0.0435, 0.1054, 0.1730, 1.0);
/// Rows whose published mesh is among the search's top 10 distinct meshes: 117 of 179
/// (session 26, after torchtitan's TP saves its gathered inputs; 115 before). The development
/// rows' count fell from 97 with NCCL's tuner pricing collectives (time/nccl_algo.rs).
const MESH_TOP_10_TODAY: usize = 117;
/// Issue 12's target share, on the development rows.
const TOP_10_TARGET_SHARE: f64 = 0.75;

fn check(group: &str, s: &ErrorStats, today: (f64, f64, f64, f64)) {
    let (median, p90, max, within_25) = today;
    let got = |v: Option<f64>, name: &str| v.unwrap_or_else(|| panic!("{group}: no {name}"));
    let m = got(s.median, "median");
    let p = got(s.p90, "p90");
    let x = got(s.max, "max");
    let w = got(s.within_25, "within_25");
    assert!(m <= median + SLACK, "{group}: median {m:.4} > {median}");
    assert!(p <= p90 + SLACK, "{group}: p90 {p:.4} > {p90}");
    assert!(x <= max + SLACK, "{group}: max {x:.4} > {max}");
    assert!(
        w >= within_25 - SLACK,
        "{group}: within 25% {w:.4} < {within_25}"
    );
}

#[test]
fn the_summary_does_not_fall_back() {
    let r = run_validation(DATASET, ValidationOptions { search: false }).expect("dataset parses");
    let group = |name: &str| {
        r.by_quantity
            .iter()
            .find(|g| g.group == name)
            .unwrap_or_else(|| panic!("group {name}"))
    };
    check(TIME_GROUP, &group(TIME_GROUP).stats, TIME_TODAY);
    check(ALL_GROUP, &group(ALL_GROUP).stats, ALL_TODAY);
    check(
        "peak_memory_gib",
        &group("peak_memory_gib").stats,
        MEMORY_TODAY,
    );
    assert_eq!(group(ALL_GROUP).stats.compared, 187);
    // Korthikanti et al. 2022 Table 4, one layer's forward + backward: +4.6% to +10.9%.
    check(
        "per_layer_fwd_bwd_ms",
        &group("per_layer_fwd_bwd_ms").stats,
        (0.0915, 0.1040, 0.1088, 1.0),
    );
}

/// The |errors| of the development rows (those without a first-seen error) of `quantities`.
fn development_errors(rows: &[RowResult], quantities: &[&str]) -> ErrorStats {
    let errors: Vec<f64> = rows
        .iter()
        .filter(|r| r.first_seen.is_none() && quantities.contains(&r.quantity.id()))
        .filter_map(|r| r.comparison.as_ref().map(|c| c.relative_error))
        .collect();
    planner_core::edges::validation::error_stats(&errors, 0)
}

/// Issue 12's targets on the 125 rows the model was developed against: median |error| ≤ 10%,
/// p90 ≤ 25%, no row beyond 50%, for tokens/s and iteration time together, and for MFU and
/// TFLOP/s under the conventions `meshplan validate` states.
#[test]
fn the_issue_12_targets_hold_on_the_development_rows() {
    let r = run_validation(DATASET, ValidationOptions { search: false }).expect("dataset parses");
    for quantities in [
        &["tokens_per_s_per_gpu", "iteration_time_s"][..],
        &["mfu"][..],
        &["tflops_per_gpu_reported"][..],
    ] {
        let s = development_errors(&r.rows, quantities);
        let (m, p, x) = (s.median, s.p90, s.max);
        assert!(m.is_some_and(|m| m <= 0.10), "{quantities:?}: median {m:?}");
        assert!(p.is_some_and(|p| p <= 0.25), "{quantities:?}: p90 {p:?}");
        assert!(x.is_some_and(|x| x <= 0.50), "{quantities:?}: max {x:?}");
    }
}

/// The search over every row with a full layout: the published mesh's rank must stay in the
/// top 10 as often.
#[test]
fn the_search_ranks_do_not_fall_back() {
    let r = run_validation(DATASET, ValidationOptions { search: true }).expect("dataset parses");
    let s = r.search.as_ref().expect("search summary");
    assert!(
        s.mesh_top_10 >= MESH_TOP_10_TODAY,
        "published mesh in the top 10 distinct meshes for {} rows, {MESH_TOP_10_TODAY} before",
        s.mesh_top_10
    );
    let dev: Vec<_> = r
        .rows
        .iter()
        .filter(|row| row.first_seen.is_none())
        .filter_map(|row| row.search.as_ref())
        .collect();
    let top = dev
        .iter()
        .filter(|s| s.mesh_rank.is_some_and(|m| m <= 10))
        .count();
    let share = top as f64 / dev.len().max(1) as f64;
    assert!(
        share >= TOP_10_TARGET_SHARE,
        "published mesh in the search's top 10 for {:.1}% of the development rows, target {:.0}%",
        100.0 * share,
        100.0 * TOP_10_TARGET_SHARE
    );
}
