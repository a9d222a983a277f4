//! `bill`: a training run's days, GPU-hours, dollars and energy, failures and checkpoints, every
//! figure with its formula; the bill inputs come from the scenario (file or link) and the flags.

use std::fmt::Write;

use planner_core::base::explain::{display_dollars, display_joules};
use planner_core::input::bill::PriceKind;
use planner_core::input::scenario::Scenario;
use planner_core::view::bill::{bill_view, rank_leaders, BillView, RankLeader};

use crate::error::CliError;
use crate::input::read_file_or_link;

/// The bill's inputs as flags; each replaces the scenario's value (the link key in brackets).
#[derive(Debug, Default, clap::Args)]
pub struct BillFlags {
    /// Tokens to train on [bill_tok] (default: 20 × parameters).
    #[arg(long)]
    pub tokens: Option<f64>,
    /// Optimizer steps, in place of tokens [bill_steps].
    #[arg(long, conflicts_with = "tokens")]
    pub steps: Option<u64>,
    /// on-demand, reserved or owned [bill_price].
    #[arg(long)]
    pub price: Option<String>,
    /// $ per GPU-hour, rented [bill_usd_h] (default: the price kind's list price).
    #[arg(long)]
    pub usd_per_gpu_hour: Option<f64>,
    /// $ per GPU with its share of the server, owned [bill_capex].
    #[arg(long)]
    pub capex: Option<f64>,
    /// Years the purchase is amortised over [bill_years].
    #[arg(long)]
    pub years: Option<f64>,
    /// $ per kWh [bill_kwh].
    #[arg(long)]
    pub usd_per_kwh: Option<f64>,
    /// Facility PUE [bill_pue].
    #[arg(long)]
    pub pue: Option<f64>,
    /// A node's power besides its GPUs, W [bill_node_w].
    #[arg(long)]
    pub node_overhead_w: Option<f64>,
    /// A GPU's board power, W, in place of its datasheet's [bill_board_w].
    #[arg(long)]
    pub board_power_w: Option<f64>,
    /// Checkpoint write bandwidth per node, GB/s [bill_ckpt_gbs].
    #[arg(long)]
    pub ckpt_gb_s: Option<f64>,
    /// Restart time, s, checkpoint read aside [bill_restart_s].
    #[arg(long)]
    pub restart_s: Option<f64>,
    /// Interruptions per GPU-hour [bill_fail].
    #[arg(long)]
    pub failures_per_gpu_hour: Option<f64>,
}

impl BillFlags {
    /// `scenario` with the flags given set, validated again (errors name the link key).
    pub fn apply(&self, mut scenario: Scenario) -> Result<Scenario, CliError> {
        let b = &mut scenario.bill;
        if let Some(kind) = &self.price {
            b.price_kind = PriceKind::from_id(kind).ok_or_else(|| {
                CliError::BadInput(format!(
                    "--price [bill_price]: '{kind}' is not on-demand, reserved or owned"
                ))
            })?;
            b.usd_per_gpu_hour = b.price_kind.default_usd_per_gpu_hour();
        }
        if self.tokens.is_some() || self.steps.is_some() {
            b.tokens = self.tokens;
            b.steps = self.steps;
        }
        set(&mut b.usd_per_gpu_hour, self.usd_per_gpu_hour);
        set(&mut b.capex_usd_per_gpu, self.capex);
        set(&mut b.amortisation_years, self.years);
        set(&mut b.usd_per_kwh, self.usd_per_kwh);
        set(&mut b.pue, self.pue);
        set(&mut b.node_overhead_w, self.node_overhead_w);
        b.board_power_w = self.board_power_w.or(b.board_power_w);
        set(&mut b.checkpoint_write_gb_s_per_node, self.ckpt_gb_s);
        set(&mut b.restart_s, self.restart_s);
        set(&mut b.failures_per_gpu_hour, self.failures_per_gpu_hour);
        scenario
            .validate()
            .map_err(|errors| CliError::fields("invalid bill input:", &errors))?;
        Ok(scenario)
    }
}

fn set(field: &mut f64, flag: Option<f64>) {
    if let Some(v) = flag {
        *field = v;
    }
}

/// Arguments of `meshplan bill`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario JSON file (`-` reads stdin) or a share link (query, `?query` or full URL).
    pub input: String,
    /// `--hf MODEL_ID`: a Hub model in place of the scenario's.
    #[command(flatten)]
    pub hub: crate::input::HubFlag,
    /// The bill's inputs.
    #[command(flatten)]
    pub bill: BillFlags,
    /// Also search every mesh of the cluster, price each as a whole run, and print the leader
    /// by time, by dollars and by energy.
    #[arg(long)]
    pub rankings: bool,
    /// Print a readable table instead of JSON.
    #[arg(long)]
    pub table: bool,
}

/// Prices the scenario's run and renders its bill.
pub fn run(args: &Args) -> Result<String, CliError> {
    let scenario = args
        .bill
        .apply(args.hub.apply(read_file_or_link(&args.input)?)?)?;
    let model = scenario
        .model_spec()
        .map_err(|e| CliError::BadInput(format!("model: {e}")))?;
    let mut view = bill_view(&scenario, &model);
    if args.rankings {
        view.rankings = rank_leaders(&scenario, &model);
    }
    if args.table {
        Ok(render_table(&view) + &render_leaders(&view.rankings))
    } else {
        serde_json::to_string_pretty(&view)
            .map_err(|e| CliError::BadInput(format!("result cannot be written as JSON: {e}")))
    }
}

/// The inputs (defaults marked with their source), then every figure with its worked formula.
pub fn render_table(v: &BillView) -> String {
    let mut out = String::from("Inputs:\n");
    for i in &v.inputs {
        let note = i
            .default_source
            .map_or(String::new(), |s| format!("   default: {s}"));
        let _ = writeln!(out, "  {:<34} {:>14}{note}", i.label, i.value);
    }
    if let Some(e) = &v.error {
        let _ = writeln!(out, "No bill: {e}");
    }
    let _ = writeln!(out, "Bill:");
    for t in &v.terms {
        let _ = writeln!(
            out,
            "  {:<30} {:>18}   {}",
            t.label,
            t.unit.format(t.value),
            t.worked
        );
    }
    out.trim_end().to_string()
}

/// The leader under each key; one line when they agree.
fn render_leaders(leaders: &[RankLeader]) -> String {
    let mut out = String::new();
    if leaders.is_empty() {
        return out;
    }
    let _ = write!(
        out,
        "\nRankings (the cluster's meshes priced as whole runs):"
    );
    for l in leaders {
        let _ = write!(
            out,
            "\n  by {:<8} {:<52} {:>6.1} days {:>9} {:>10}",
            l.key,
            l.mesh,
            l.expected_days,
            display_dollars(l.total_usd),
            display_joules(l.energy_j)
        );
    }
    if leaders.windows(2).all(|w| w[0].mesh == w[1].mesh) {
        let _ = write!(out, "\n  (one mesh leads all three)");
    }
    out
}
