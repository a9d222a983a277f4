//! `deadline`: the smallest cluster (node count from a list or the powers of two) that trains
//! the token budget by a deadline, within a budget when one is given, and its mesh; each
//! smaller size with the reason it fails.

use std::fmt::Write;

use planner_core::base::explain::{display_dollars, display_joules, fmt_seconds};
use planner_core::bill::deadline::{smallest_cluster, DeadlineAnswer, TrainingGoal};

use crate::commands::bill::BillFlags;
use crate::error::CliError;
use crate::input::read_file_or_link;

/// Arguments of `meshplan deadline`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario JSON file (`-` reads stdin) or a share link: its model, GPU, batch and bill
    /// (its node count and layout are searched).
    pub input: String,
    /// `--hf MODEL_ID`: a Hub model in place of the scenario's.
    #[command(flatten)]
    pub hub: crate::input::HubFlag,
    /// Expected wall-clock allowed, days (default: the scenario's `bill_days`, 30).
    #[arg(long)]
    pub days: Option<f64>,
    /// Dollars allowed (default: the scenario's `bill_budget`, none).
    #[arg(long)]
    pub budget: Option<f64>,
    /// Node counts to try, comma-separated (default: the scenario's `bill_nodes`, else powers
    /// of two up to --max-gpus).
    #[arg(long, value_delimiter = ',')]
    pub nodes: Vec<u32>,
    /// Largest cluster the powers of two reach, GPUs.
    #[arg(long, default_value_t = 65_536)]
    pub max_gpus: u64,
    /// Search every size (default: stop at the answer and the size above it).
    #[arg(long)]
    pub every_size: bool,
    /// The bill's inputs (the token budget: --tokens or --steps).
    #[command(flatten)]
    pub bill: BillFlags,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Searches each size and renders the answer.
pub fn run(args: &Args) -> Result<String, CliError> {
    if let Some(d) = args
        .days
        .filter(|d| !(d.is_finite() && *d > 0.0 && *d <= 36_500.0))
    {
        return Err(CliError::BadInput(format!(
            "--days: {d} is outside (0, 36500]"
        )));
    }
    if let Some(b) = args.budget.filter(|b| !(b.is_finite() && *b >= 0.0)) {
        return Err(CliError::BadInput(format!(
            "--budget: {b} is not a dollar amount"
        )));
    }
    let scenario = args
        .bill
        .apply(args.hub.apply(read_file_or_link(&args.input)?)?)?;
    let goals = &scenario.bill.goals;
    let model = scenario
        .model_spec()
        .map_err(|e| CliError::BadInput(format!("model: {e}")))?;
    let goal = TrainingGoal {
        deadline_days: args.days.unwrap_or(goals.deadline_days),
        budget_usd: args.budget.or(goals.budget_usd),
        node_counts: if args.nodes.is_empty() {
            goals.node_counts.clone()
        } else {
            args.nodes.clone()
        },
        max_gpus: args.max_gpus.min(planner_core::base::bounds::MAX_GPUS),
        every_size: args.every_size,
    };
    let answer = smallest_cluster(&scenario, &model, &goal)
        .map_err(|e| CliError::BadInput(e.to_string()))?;
    if args.json {
        serde_json::to_string_pretty(&answer)
            .map_err(|e| CliError::BadInput(format!("result cannot be written as JSON: {e}")))
    } else {
        Ok(render_table(&answer, &goal))
    }
}

fn render_table(a: &DeadlineAnswer, goal: &TrainingGoal) -> String {
    let mut out = String::new();
    let budget = goal.budget_usd.map_or(String::new(), |b| {
        format!(", budget {}", display_dollars(b))
    });
    let _ = writeln!(out, "Deadline {} days{budget}", goal.deadline_days);
    match a.answer {
        Some(i) => {
            let s = &a.sizes[i];
            let _ = writeln!(out, "Smallest cluster: {} nodes ({} GPUs)", s.nodes, s.gpus);
        }
        None => {
            let _ = writeln!(out, "No size tried meets the goal.");
        }
    }
    let _ = writeln!(
        out,
        "  {:>6} {:>7}  {:<28} {:>9} {:>9} {:>10} {:>10}  verdict",
        "nodes", "GPUs", "mesh (DP×TP×PP×CP×EP)", "step", "days", "dollars", "energy"
    );
    for s in &a.sizes {
        let (mesh, step, days, usd, energy) = match &s.plan {
            Some(p) => (
                format!(
                    "{}×{}×{}×{}×{} {}",
                    p.dims.dp,
                    p.dims.tp,
                    p.dims.pp,
                    p.dims.cp,
                    p.dims.ep,
                    p.knobs.zero.label()
                ),
                fmt_seconds(p.step_s),
                format!("{:.1}", p.expected_days),
                display_dollars(p.total_usd),
                display_joules(p.energy_j),
            ),
            None => ("—".into(), "—".into(), "—".into(), "—".into(), "—".into()),
        };
        let _ = writeln!(
            out,
            "  {:>6} {:>7}  {:<28} {:>9} {:>9} {:>10} {:>10}  {}",
            s.nodes,
            s.gpus,
            mesh,
            step,
            days,
            usd,
            energy,
            s.verdict.message()
        );
    }
    out.trim_end().to_string()
}
