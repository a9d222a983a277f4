//! `eval`: every prediction for one scenario and every page section's data
//! (`planner_core::view::page_views`, the same builders the page calls), as JSON or a
//! readable table.

use std::fmt::Write;
use std::path::Path;

use planner_core::base::explain::Term;
use planner_core::edges::error_band::{band_scenario, builtin_bands, BandKind};
use planner_core::edges::link;
use planner_core::evaluate::{evaluate, Evaluation};
use planner_core::input::hardware::GB;
use planner_core::input::scenario::Scenario;
use planner_core::view::{page_views, PageViews};

use crate::error::CliError;
use crate::input::read_scenario;

/// Evaluates the scenario in `path` or `link` and renders it.
pub fn run(
    path: Option<&Path>,
    query: Option<&str>,
    hf: Option<&str>,
    table: bool,
) -> Result<String, CliError> {
    let scenario = match (path, query, hf) {
        (_, Some(q), _) => {
            link::decode(q).map_err(|errors| CliError::fields("invalid link:", &errors))?
        }
        (Some(p), None, _) => read_scenario(p)?,
        (None, None, Some(_)) => planner_core::resolve::presets::default_scenario(),
        (None, None, None) => {
            return Err(CliError::BadInput(
                "give a scenario file, --link or --hf".into(),
            ))
        }
    };
    let (scenario, hub) = crate::input::with_hub_model(scenario, hf)?;
    let eval = evaluate(&scenario).map_err(|e| CliError::fields("invalid scenario:", &e.errors))?;
    let bands = builtin_bands(&band_scenario(&scenario, eval.params.total / 1e9));
    let views = page_views(&scenario);
    if table {
        let mut out = hub
            .as_ref()
            .map(crate::input::hub_table)
            .unwrap_or_default();
        out.push_str(&render_table(&scenario, &eval, &views));
        render_views(&mut out, &views);
        for b in &bands {
            let what = match b.kind {
                BandKind::StepTime => "step time, tokens/s, MFU",
                BandKind::PeakMemory => "peak memory",
            };
            let _ = writeln!(out, "\nerror band of {what}: {}", b.text);
        }
        Ok(out.trim_end().to_string())
    } else {
        let mut value = serde_json::to_value(&eval).map_err(|e| {
            CliError::BadInput(format!("evaluation cannot be written as JSON: {e}"))
        })?;
        if let (Some(obj), Ok(b)) = (value.as_object_mut(), serde_json::to_value(&bands)) {
            obj.insert("error_bands".to_string(), b);
        }
        let views = serde_json::to_value(&views).map_err(|e| {
            CliError::BadInput(format!("the page's views cannot be written as JSON: {e}"))
        })?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("views".to_string(), views);
            if let Some(h) = &hub {
                let fetched = serde_json::json!({ "model": &h.model, "files": &h.files });
                obj.insert("hub".to_string(), fetched);
            }
        }
        serde_json::to_string_pretty(&value)
            .map_err(|e| CliError::BadInput(format!("evaluation cannot be written as JSON: {e}")))
    }
}

fn gb(bytes: f64) -> String {
    format!("{:.2} GB", bytes / GB)
}

fn term_row(out: &mut String, t: &Term) {
    let _ = writeln!(out, "  {:<34} {:>12}   {}", t.label, gb(t.value), t.worked);
}

fn render_table(s: &Scenario, e: &Evaluation, views: &PageViews) -> String {
    let mut out = String::new();
    let l = &s.layout;
    let _ = writeln!(
        out,
        "{} — Ψ = {:.3}e9 ({:.3}e9 active), {} × {} {} | DP {} TP {} PP {} CP {} EP {} ETP {} | {} | seq {} | global batch {}",
        e.model.name,
        e.params.total / 1e9,
        e.params.active / 1e9,
        s.cluster.nodes,
        s.cluster.gpus_per_node,
        s.cluster.gpu.name,
        l.dp,
        l.tp,
        l.pp,
        l.cp,
        l.ep,
        l.expert_tp,
        l.zero.label(),
        s.training.seq_len,
        s.training.global_batch,
    );
    for r in &e.rules {
        let _ = writeln!(out, "  ! {:?} {}: {}", r.severity, r.field, r.message);
    }
    match &e.finetune {
        Some(ft) => {
            let _ = writeln!(out, "\nFine-tuning: {}", ft.label);
            for t in &ft.terms {
                let _ = writeln!(out, "  {:<34} {}", t.label, t.worked);
            }
        }
        None => {
            let _ = writeln!(out, "\nFine-tuning: full (every weight trains)");
        }
    }

    let _ = writeln!(out, "\nModel state per GPU (replicated + sharded):");
    for bar in &e.model_state {
        let rep = bar.replicated.iter().fold(0.0, |acc, t| acc + t.value);
        let sh = bar.sharded.iter().fold(0.0, |acc, t| acc + t.value);
        let _ = writeln!(
            out,
            "  {:<8} {:>12} = {:>12} replicated + {:>12} sharded",
            bar.zero.label(),
            gb(bar.total_bytes),
            gb(rep),
            gb(sh)
        );
    }

    let t = &e.training;
    let _ = writeln!(
        out,
        "\nTraining memory per GPU (peak {} on stage {}, usable {} of {}, {}):",
        gb(t.peak_bytes),
        t.peak_stage,
        gb(t.usable_bytes),
        gb(t.capacity_bytes),
        if t.fits { "fits" } else { "DOES NOT FIT" }
    );
    for stage in &t.stages {
        let _ = writeln!(
            out,
            " {} ({} layers): {}",
            stage.position.label(),
            stage.layers,
            gb(stage.total_bytes)
        );
        for term in &stage.terms {
            term_row(&mut out, term);
        }
    }

    let p = &views.pipeline;
    let _ = writeln!(
        out,
        "\nPipeline ({}, m = {}): idle share of the schedule {:.2}%, bubble overhead vs ideal time {:.2}%",
        p.schedule.label(),
        p.micro_batches,
        p.bubble.idle_fraction * 100.0,
        p.bubble.overhead_vs_ideal * 100.0
    );
    if !l.stage_split.is_even() {
        let sh = planner_core::input::stage_split::SplitShape::new(
            e.model.layers,
            l.pp,
            l.virtual_stages,
        );
        let ranks = l.stage_split.rank_counts(sh, 64);
        let words: Vec<String> = ranks.iter().map(u32::to_string).collect();
        let _ = writeln!(
            out,
            "Stage split: {} (link split={}); decoder layers per stage: {}{}",
            l.stage_split.describe(sh),
            l.stage_split.to_link(),
            words.join(" "),
            if l.pp > 64 { " …" } else { "" }
        );
    }

    match &e.serving {
        Ok(sv) => {
            let _ = writeln!(
                out,
                "\nServing (TP {} × PP {}): KV {:.0} B/token, {} per sequence; max concurrent sequences {}",
                sv.plan.tp,
                sv.plan.pp,
                sv.plan.kv_bytes_per_token.value,
                gb(sv.plan.kv_bytes_per_sequence.value),
                sv.plan.max_concurrent_sequences.value
            );
            let _ = writeln!(out, "  Recommendation: {}", sv.recommendation.reason);
        }
        Err(msg) => {
            let _ = writeln!(out, "\nServing: {msg}");
        }
    }
    out
}

/// The page's sections that the table above does not show: the issue list, the step
/// breakdown and the measured numbers.
fn render_views(out: &mut String, v: &PageViews) {
    let _ = writeln!(out, "\nIssues ({}):", v.issues.len());
    for i in &v.issues {
        let kind = if i.error { "error" } else { "warning" };
        let _ = writeln!(out, "  {kind} {}: {}", i.field, i.message);
    }
    if let Some(b) = &v.step_breakdown {
        let _ = writeln!(out, "\nStep breakdown ({:.1} ms):", b.total_s * 1e3);
        for seg in b.segments.iter().filter(|s| s.seconds > 0.0) {
            let _ = writeln!(
                out,
                "  {:<34} {:>10.1} ms   {}",
                seg.term.label,
                seg.seconds * 1e3,
                seg.term.worked
            );
        }
        let _ = writeln!(
            out,
            "  volume per GPU: {} in node, {} across nodes",
            gb(b.intra_node_bytes),
            gb(b.inter_node_bytes)
        );
    }
    let t = &v.measured.times;
    let ms = |x: Option<f64>| x.map_or("—".to_string(), |s| format!("{:.1} ms", s * 1e3));
    let current = match &t.current {
        Ok(s) => format!("{:.1} ms", s * 1e3),
        Err(e) => e.clone(),
    };
    let _ = writeln!(
        out,
        "\nMeasured numbers: step time used now {current}; datasheet {}; measured {}",
        ms(t.assumed_s),
        ms(t.measured_s)
    );
}
