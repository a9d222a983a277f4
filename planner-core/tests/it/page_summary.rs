//! The accuracy section's worker message (`validation::PageSummary`): the same
//! figures as `run_validation`, read back by `PageReply::from_json` exactly as serde
//! reads it, and the nearest rows ranked as `nearness` ranks the published runs.

use planner_core::edges::validation::{
    nearest_rows, nearness, page_summary, parse_runs, run_validation, PageReply, ValidationOptions,
    PUBLIC_RUNS_JSON,
};
use planner_core::resolve::presets;

#[test]
fn page_summary_carries_run_validations_figures() {
    let page = page_summary(PUBLIC_RUNS_JSON).expect("dataset");
    let report =
        run_validation(PUBLIC_RUNS_JSON, ValidationOptions { search: false }).expect("dataset");
    assert_eq!(page.dataset_rows, report.dataset_rows);
    assert_eq!(page.groups.len(), report.by_quantity.len());
    for (p, g) in page.groups.iter().zip(&report.by_quantity) {
        assert_eq!((&p.group, &p.stats), (&g.group, &g.stats));
    }
    // The first-seen summary and the same rows today, group for group, as the CLI prints them.
    assert!(!page.first_seen.is_empty());
    for (page_groups, groups) in [
        (&page.first_seen, &report.first_seen),
        (&page.first_seen_today, &report.first_seen_today),
    ] {
        assert_eq!(page_groups.len(), groups.len());
        for (p, g) in page_groups.iter().zip(groups) {
            assert_eq!((&p.group, &p.stats), (&g.group, &g.stats));
        }
    }
    let compared: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.comparison.is_some())
        .collect();
    assert_eq!(page.rows.len(), compared.len());
    for (p, r) in page.rows.iter().zip(compared) {
        assert_eq!(p.id, r.id);
        let c = r.comparison.as_ref().unwrap();
        assert_eq!(
            (p.predicted, p.relative_error),
            (c.predicted, c.relative_error)
        );
    }
}

#[test]
fn from_json_reads_what_serde_writes() {
    let mut summary = page_summary(PUBLIC_RUNS_JSON).expect("dataset");
    summary.worker_ms = 12.5;
    for reply in [
        PageReply::Ready,
        PageReply::Failed("runs[3].gpus: not a count".to_string()),
        PageReply::Summary(summary),
    ] {
        let text = serde_json::to_string(&reply).unwrap();
        assert_eq!(PageReply::from_json(&text), Ok(reply.clone()));
        assert_eq!(serde_json::from_str::<PageReply>(&text).unwrap(), reply);
    }
    assert!(PageReply::from_json("{\"Summary\":{}}").is_err());
    assert!(PageReply::from_json("not json").is_err());
}

/// The record text the worker posts reads back to the same reply: every row of the
/// published runs, texts with the separators and a backslash, NaN and absent statistics.
#[test]
fn from_text_reads_what_the_worker_posts() {
    let mut summary = page_summary(PUBLIC_RUNS_JSON).expect("dataset");
    summary.worker_ms = 0.1 + 0.2;
    assert!(!summary.rows.is_empty() && !summary.groups.is_empty());
    let mut odd = summary.clone();
    odd.rows[0].notes = "tab\tand \\u backslash, \u{1f} unit, \u{1e} record, \n newline".into();
    odd.rows[0].relative_error = f64::INFINITY;
    odd.groups[0].stats.median = None;
    odd.groups[0].stats.p90 = Some(f64::MIN_POSITIVE);
    odd.first_seen[0].stats.max = None;
    odd.first_seen_today.clear();
    for reply in [
        PageReply::Ready,
        PageReply::Failed("runs[3].gpus: not a count \u{1e}".to_string()),
        PageReply::Summary(summary),
        PageReply::Summary(odd),
    ] {
        assert_eq!(PageReply::from_text(&reply.to_text()), Ok(reply));
    }
    let mut nan = page_summary(PUBLIC_RUNS_JSON).expect("dataset");
    nan.rows[0].predicted = f64::NAN;
    let Ok(PageReply::Summary(back)) = PageReply::from_text(&PageReply::Summary(nan).to_text())
    else {
        panic!("a NaN row reads back");
    };
    assert!(back.rows[0].predicted.is_nan());
    assert!(PageReply::from_text("Summary").is_err());
    assert!(PageReply::from_text("\"Ready\"").is_err());
}

#[test]
fn nearest_rows_rank_as_nearness_ranks_the_published_runs() {
    let page = page_summary(PUBLIC_RUNS_JSON).expect("dataset");
    let runs = parse_runs(PUBLIC_RUNS_JSON).expect("dataset");
    let s = presets::default_scenario();
    let params_b = s.model_spec().expect("preset").params() / 1e9;
    let (gpus, gpu, tp, pp) = (
        s.cluster.world_size(),
        s.cluster.gpu.id.clone(),
        s.layout.tp,
        s.layout.pp,
    );
    let mut scored: Vec<(f64, usize)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| page.rows.iter().any(|p| p.id == r.id))
        .map(|(i, r)| (nearness(r, params_b, gpus, &gpu, tp, pp), i))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let expected: Vec<&str> = scored
        .iter()
        .take(5)
        .map(|(_, i)| runs[*i].id.as_str())
        .collect();
    let got: Vec<&str> = nearest_rows(&page.rows, params_b, gpus, &gpu, tp, pp, 5)
        .into_iter()
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(got, expected);
}
