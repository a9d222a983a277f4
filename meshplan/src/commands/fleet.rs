//! `fleet`: the fewest GPUs of each allowed type that serve a request rate within a TTFT and
//! TPOT target, ranked by dollars per million output tokens, with joules per million tokens and
//! the fleet's idle power.

use std::fmt::Write;

use planner_core::base::explain::{display_dollars, Unit};
use planner_core::bill::fleet::{fleet_for_rate, FleetAnswer, FleetGoal};
use planner_core::serving::latency::ServingLoad;

use crate::error::CliError;
use crate::input::read_file_or_link;

/// Arguments of `meshplan fleet`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario JSON file (`-` reads stdin) or a share link: its model, serving dtypes and engine.
    pub input: String,
    /// `--hf MODEL_ID`: a Hub model in place of the scenario's.
    #[command(flatten)]
    pub hub: crate::input::HubFlag,
    /// Requests per second the fleet must serve (default: the scenario's `fleet_rps`, 10).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Bound on p99 TTFT, ms (default: the scenario's `fleet_ttft_ms`).
    #[arg(long)]
    pub ttft_ms: Option<f64>,
    /// Bound on TPOT, ms (default: the scenario's `fleet_tpot_ms`).
    #[arg(long)]
    pub tpot_ms: Option<f64>,
    /// Prompt tokens per request.
    #[arg(long, default_value_t = ServingLoad::default().prompt_tokens)]
    pub prompt: u32,
    /// Output tokens per request.
    #[arg(long, default_value_t = ServingLoad::default().output_tokens)]
    pub output: u32,
    /// GPU presets allowed, comma-separated (default: the scenario's `fleet_gpus`, else the
    /// scenario's GPU).
    #[arg(long, value_delimiter = ',')]
    pub gpus: Vec<String>,
    /// A price per GPU-hour, `id=usd`, in place of the list price (repeatable).
    #[arg(long = "price")]
    pub prices: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Sizes each GPU type's fleet and renders the ranking.
pub fn run(args: &Args) -> Result<String, CliError> {
    if let Some(r) = args
        .rate
        .filter(|r| !(r.is_finite() && *r > 0.0 && *r <= 1e7))
    {
        return Err(CliError::BadInput(format!(
            "--rate: {r} is outside (0, 1e7]"
        )));
    }
    let scenario = args.hub.apply(read_file_or_link(&args.input)?)?;
    let goals = &scenario.bill.goals;
    let model = scenario
        .model_spec()
        .map_err(|e| CliError::BadInput(format!("model: {e}")))?;
    let gpu_ids = if !args.gpus.is_empty() {
        args.gpus.clone()
    } else if !goals.fleet_gpus.is_empty() {
        goals.fleet_gpus.clone()
    } else {
        vec![scenario.cluster.gpu.id.clone()]
    };
    let ms = |flag: Option<f64>, goal: Option<f64>| flag.or(goal).map(|ms| ms / 1e3);
    let mut goal = FleetGoal::new(
        args.rate.unwrap_or(goals.rate_rps),
        (
            ms(args.ttft_ms, goals.ttft_ms),
            ms(args.tpot_ms, goals.tpot_ms),
        ),
        gpu_ids,
    );
    goal.load.prompt_tokens = args.prompt;
    goal.load.output_tokens = args.output;
    goal.prices = args
        .prices
        .iter()
        .map(|p| price(p))
        .collect::<Result<_, _>>()?;
    let answer = fleet_for_rate(&scenario, &model, &goal);
    if args.json {
        serde_json::to_string_pretty(&answer)
            .map_err(|e| CliError::BadInput(format!("result cannot be written as JSON: {e}")))
    } else {
        Ok(render_table(&answer, &goal))
    }
}

/// `id=usd` → `(id, usd)`.
fn price(arg: &str) -> Result<(String, f64), CliError> {
    let bad = || CliError::BadInput(format!("--price: '{arg}' is not id=usd per GPU-hour"));
    let (id, usd) = arg.split_once('=').ok_or_else(bad)?;
    let usd: f64 = usd.parse().map_err(|_| bad())?;
    if !(usd.is_finite() && (0.0..=1e4).contains(&usd)) {
        return Err(bad());
    }
    Ok((id.to_string(), usd))
}

fn render_table(a: &FleetAnswer, goal: &FleetGoal) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} requests/s × {} output tokens; cheapest per million output tokens first",
        goal.rate_rps, goal.load.output_tokens
    );
    let _ = writeln!(
        out,
        "  {:<12} {:<34} {:>6} {:>9} {:>7} {:>10} {:>12} {:>10} {:>10}",
        "GPU", "unit", "units", "req/s/u", "GPUs", "$/M tok", "MJ/M tok", "power", "idle"
    );
    for o in &a.options {
        let _ = writeln!(
            out,
            "  {:<12} {:<34} {:>6} {:>9.2} {:>7} {:>10} {:>12.1} {:>10} {:>10}",
            o.gpu,
            o.unit,
            o.units,
            o.unit_rps,
            o.gpus,
            o.usd_per_m_tokens
                .map_or("no price".into(), display_dollars),
            o.j_per_m_tokens / 1e6,
            Unit::Watts.format(o.facility_w),
            Unit::Watts.format(o.idle_facility_w)
        );
    }
    for (gpu, why) in &a.refused {
        let _ = writeln!(out, "  {gpu:<12} no fleet: {why}");
    }
    out.trim_end().to_string()
}
