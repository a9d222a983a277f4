//! The run's bill section's answers drawn as markup in the worker
//! (`planner_core::edges::bill_page`): the rankings' leaders, the deadline question's sizes
//! and the fleet question's GPU types. Each row carries its numbers unrounded in `data-`
//! attributes (what the end-to-end test compares with planner-core's native values) and
//! shows them through `Unit::format`; every text from the model is HTML-escaped.

use std::fmt::Write;

use planner_core::base::explain::Unit;
use planner_core::edges::bill_page::BillAnswer;
use planner_core::view::bill::{DeadlineView, FleetAnswer, RankLeader};

use crate::serving_markup::html;

/// The answer as the section shows it.
pub fn draw(answer: &BillAnswer) -> String {
    match answer {
        BillAnswer::Rankings(leaders) => rankings(leaders),
        BillAnswer::Deadline(view) => deadline(view),
        BillAnswer::Fleet(answer) => fleet(answer),
    }
}

fn key_label(key: &str) -> &'static str {
    match key {
        "time" => "Fastest",
        "dollars" => "Cheapest",
        _ => "Least energy",
    }
}

fn rankings(leaders: &[RankLeader]) -> String {
    if leaders.is_empty() {
        return r#"<p class="issue" data-testid="bill-rankings-empty">No mesh fits this cluster, or the GPU has no board power to price its energy.</p>"#.into();
    }
    let distinct = {
        let mut meshes: Vec<&str> = leaders.iter().map(|l| l.mesh.as_str()).collect();
        meshes.sort_unstable();
        meshes.dedup();
        meshes.len()
    };
    let mut out = String::new();
    let note = match distinct {
        1 => "One mesh leads all three rankings: at one cluster size a rented run's dollars follow its time, and here its energy does too.".to_string(),
        n => format!("{n} different meshes lead the three rankings."),
    };
    let _ = write!(
        out,
        r#"<p class="explain" data-testid="bill-rankings-note" data-distinct="{distinct}">{}</p><table class="figures bill-rankings"><thead><tr><th scope="col">Ranked by</th><th scope="col">Leader</th><th scope="col">Expected</th><th scope="col">Dollars</th><th scope="col">Energy</th></tr></thead><tbody>"#,
        html(&note)
    );
    for l in leaders {
        let same_as_first = leaders
            .first()
            .is_some_and(|f| f.mesh == l.mesh && f.key != l.key);
        let _ = write!(
            out,
            r#"<tr data-testid="bill-rank-{key}" data-mesh="{mesh}" data-days="{d}" data-usd="{u}" data-energy="{e}"{cls}><th scope="row">{label}</th><td>{mesh}</td><td class="num">{days}</td><td class="num">{usd}</td><td class="num">{energy}</td></tr>"#,
            key = html(l.key),
            mesh = html(&l.mesh),
            d = l.expected_days,
            u = l.total_usd,
            e = l.energy_j,
            cls = if same_as_first {
                r#" class="same""#
            } else {
                ""
            },
            label = key_label(l.key),
            days = Unit::Days.format(l.expected_days),
            usd = Unit::Dollars.format(l.total_usd),
            energy = Unit::Joules.format(l.energy_j),
        );
    }
    out.push_str("</tbody></table>");
    out
}

fn deadline(view: &DeadlineView) -> String {
    if let Some(e) = &view.error {
        return format!(
            r#"<p class="issue error" data-testid="deadline-error">{}</p>"#,
            html(e)
        );
    }
    let mut out = match view.answer.and_then(|i| view.rows.get(i)) {
        Some(r) => format!(
            r#"<p class="bill-answer" data-testid="deadline-answer" data-nodes="{}" data-gpus="{}">Smallest cluster: <strong>{} nodes ({} GPUs)</strong>, {}: {} expected, {}.</p>"#,
            r.nodes,
            r.gpus,
            r.nodes,
            r.gpus,
            html(r.mesh.as_deref().unwrap_or("")),
            Unit::Days.format(r.expected_days),
            Unit::Dollars.format(r.total_usd)
        ),
        None => r#"<p class="issue" data-testid="deadline-answer" data-nodes="">No size listed meets the goal.</p>"#.into(),
    };
    out.push_str(r#"<table class="figures bill-deadline"><thead><tr><th scope="col">Nodes</th><th scope="col">GPUs</th><th scope="col">Verdict</th><th scope="col">Mesh judged</th><th scope="col">Step</th><th scope="col">Expected</th><th scope="col">Dollars</th><th scope="col">Energy</th><th scope="col">Goodput</th></tr></thead><tbody>"#);
    for r in &view.rows {
        let cell = |unit: Unit, v: f64| {
            if v.is_finite() {
                unit.format(v)
            } else {
                "–".into()
            }
        };
        let _ = write!(
            out,
            r#"<tr data-testid="deadline-size" data-nodes="{n}" data-verdict="{v}" data-days="{d}" data-usd="{u}"><td class="num">{n}</td><td class="num">{g}</td><td class="verdict {v}">{why}</td><td>{mesh}</td><td class="num">{step}</td><td class="num">{days}</td><td class="num">{usd}</td><td class="num">{energy}</td><td class="num">{goodput}</td></tr>"#,
            n = r.nodes,
            g = r.gpus,
            v = r.verdict,
            d = r.expected_days,
            u = r.total_usd,
            why = html(r.why),
            mesh = html(r.mesh.as_deref().unwrap_or("–")),
            step = cell(Unit::Seconds, r.step_s),
            days = cell(Unit::Days, r.expected_days),
            usd = cell(Unit::Dollars, r.total_usd),
            energy = cell(Unit::Joules, r.energy_j),
            goodput = cell(Unit::Fraction, r.goodput),
        );
    }
    out.push_str("</tbody></table>");
    out
}

fn fleet(answer: &FleetAnswer) -> String {
    let mut out = String::new();
    if let Some(best) = answer.options.first() {
        let _ = write!(
            out,
            r#"<p class="bill-answer" data-testid="fleet-answer" data-gpu="{g}" data-gpus="{n}">Cheapest per million tokens: <strong>{n} × {g}</strong> ({units} × {unit}).</p>"#,
            g = html(&best.gpu),
            n = best.gpus,
            units = best.units,
            unit = html(&best.unit),
        );
    } else {
        out.push_str(r#"<p class="issue" data-testid="fleet-answer" data-gpu="">No GPU type allowed meets the target.</p>"#);
    }
    out.push_str(r#"<table class="figures bill-fleet"><thead><tr><th scope="col">GPU</th><th scope="col">GPUs</th><th scope="col">Unit × copies</th><th scope="col">Load</th><th scope="col">$ / M tokens</th><th scope="col">J / M tokens</th><th scope="col">Power</th><th scope="col">Idle power</th></tr></thead><tbody>"#);
    for o in &answer.options {
        let usd = o.usd_per_m_tokens;
        let _ = write!(
            out,
            r#"<tr data-testid="fleet-option" data-gpu="{g}" data-gpus="{n}" data-usd-per-m="{u}" title="GPUs × $/GPU-hour / (requests/s × output tokens × 3,600) × 1e6"><td>{g}</td><td class="num">{n}</td><td>{unit} × {units}</td><td class="num">{load}</td><td class="num">{usd}</td><td class="num">{j}</td><td class="num">{w}</td><td class="num">{idle}</td></tr>"#,
            g = html(&o.gpu),
            n = o.gpus,
            u = usd.map(|u| u.to_string()).unwrap_or_default(),
            unit = html(&o.unit),
            units = o.units,
            load = Unit::Fraction.format(o.load_share),
            usd = usd.map_or("no list price".into(), |u| Unit::Dollars.format(u)),
            j = Unit::Joules.format(o.j_per_m_tokens),
            w = Unit::Watts.format(o.facility_w),
            idle = Unit::Watts.format(o.idle_facility_w),
        );
    }
    out.push_str("</tbody></table>");
    if !answer.refused.is_empty() {
        out.push_str(r#"<ul class="bill-refused" data-testid="fleet-refused">"#);
        for (gpu, why) in &answer.refused {
            let _ = write!(out, "<li>{}: {}</li>", html(gpu), html(why));
        }
        out.push_str("</ul>");
    }
    out
}
