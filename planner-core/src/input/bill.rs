//! What a whole training run is billed from: its token budget, the price of a GPU-hour (rented
//! on demand, reserved, or owned and amortised), electricity and the facility's PUE, and what
//! failures and checkpoints cost at scale. Every default is a published figure with its date,
//! cited in one line above it, and a default to replace with the user's own.

use serde::{Deserialize, Serialize};

/// How the GPUs are paid for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceKind {
    /// Rented by the hour, no commitment: the hourly price holds power and facility.
    #[default]
    OnDemand,
    /// Rented under a term commitment: the hourly price holds power and facility.
    Reserved,
    /// Bought: the purchase amortised over its years, plus the electricity the run draws.
    Owned,
}

impl PriceKind {
    /// Every kind.
    pub const ALL: [PriceKind; 3] = [PriceKind::OnDemand, PriceKind::Reserved, PriceKind::Owned];

    /// Stable identifier (links, files, the CLI).
    pub fn id(self) -> &'static str {
        match self {
            PriceKind::OnDemand => "on-demand",
            PriceKind::Reserved => "reserved",
            PriceKind::Owned => "owned",
        }
    }

    /// Parses [`PriceKind::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.id() == id)
    }

    /// The default hourly price of one H100 SXM GPU under this kind, US dollars; an owned GPU's
    /// hour is its amortised purchase ([`RunBill::owned_usd_per_gpu_hour`]), not a list price.
    pub fn default_usd_per_gpu_hour(self) -> f64 {
        match self {
            PriceKind::OnDemand => ON_DEMAND_USD_PER_H100_HOUR,
            PriceKind::Reserved => RESERVED_USD_PER_H100_HOUR,
            PriceKind::Owned => 0.0,
        }
    }
}

/// Lambda's public price list, 1× H100 SXM on demand, as read on 2026-05-07
/// (techbytes.app, "Serverless GPU Pricing Matrix", prices verified from vendor pages): $3.78/h.
pub const ON_DEMAND_USD_PER_H100_HOUR: f64 = 3.78;
/// Lambda reservations, 8× H100 SXM with InfiniBand, April 2026 (techplained.aptechsolutions.io,
/// "RunPod vs Vast.ai vs Lambda Labs"): $14.80/h per node = $1.85 per GPU-hour.
pub const RESERVED_USD_PER_H100_HOUR: f64 = 14.80 / 8.0;
/// DGX H100 base list price, $199,000 for 8 GPUs (supercluster.blog, "NVIDIA DGX Platform",
/// 2024, citing a reseller's list; support excluded): $24,875 per GPU with its share of the server.
pub const CAPEX_USD_PER_H100: f64 = 199_000.0 / 8.0;
/// Microsoft 10-K, fiscal 2023 (filed 2023-07-27): servers' estimated useful life extended from
/// four to six years, effective 2022-07-01.
pub const AMORTISATION_YEARS: f64 = 6.0;
/// EIA, average retail price of electricity to US industrial consumers in 2023 (released
/// 2024-03-18): 8.06 cents per kWh.
pub const USD_PER_KWH: f64 = 0.0806;
/// Uptime Institute Global Data Center Survey 2024: average annual PUE 1.56 at the respondents'
/// largest data center.
pub const PUE: f64 = 1.56;
/// NVIDIA DGX H100 datasheet (2023): system power about 10.2 kW max, of which eight H100 SXM at
/// 700 W are 5.6 kW: 4.6 kW for CPUs, memory, NICs, NVSwitches, fans and drives.
pub const NODE_OVERHEAD_W: f64 = 10_200.0 - 8.0 * 700.0;
/// The Llama 3 Herd of Models (Meta, 2024-07), §3.1.2: Tectonic sustains 2 TB/s for
/// checkpoints across the 16,384-GPU run's 2,048 nodes: 0.98 GB/s per node.
pub const CHECKPOINT_WRITE_GB_S_PER_NODE: f64 = 2_000.0 / 2_048.0;
/// FlashRecovery (arXiv 2509.03047, 2025-09): a 4,800-device training job restored in 150 s,
/// detection to the first step, checkpoint read not included; a floor for a tuned stack.
pub const RESTART_S: f64 = 150.0;
/// The Llama 3 Herd of Models (Meta, 2024-07), Table 5: 419 unexpected interruptions in a
/// 54-day snapshot on 16,384 H100: 419 / (16,384 × 54 × 24) per GPU-hour.
pub const FAILURES_PER_GPU_HOUR: f64 = 419.0 / (16_384.0 * 54.0 * 24.0);
/// Hoffmann et al. 2022 (Chinchilla), Table 3: about 20 tokens per parameter for a
/// compute-optimal run; the token budget when none is given.
pub const CHINCHILLA_TOKENS_PER_PARAM: f64 = 20.0;

/// Where each default comes from, by link key, as the page and `meshplan bill` label it (each
/// figure's citation is the one line above its constant).
pub const DEFAULT_SOURCES: [(&str, &str); 10] = [
    (
        "bill_usd_h",
        "Lambda on-demand H100 SXM list price, read 2026-05-07",
    ),
    ("bill_capex", "DGX H100 base list price / 8 GPUs, 2024"),
    ("bill_years", "Microsoft 10-K FY2023: six-year server life"),
    ("bill_kwh", "EIA, US industrial average 2023"),
    ("bill_pue", "Uptime Institute survey 2024: average PUE"),
    ("bill_node_w", "DGX H100 datasheet: 10.2 kW less 8 × 700 W"),
    (
        "bill_ckpt_gbs",
        "Llama 3 (2024): Tectonic 2 TB/s over 2,048 nodes",
    ),
    (
        "bill_restart_s",
        "FlashRecovery (2025): 150 s on 4,800 devices",
    ),
    (
        "bill_fail",
        "Llama 3 (2024): 419 interruptions, 16,384 H100 × 54 days",
    ),
    ("bill_tok", "Chinchilla (2022): 20 tokens per parameter"),
];

/// Rented list prices of the GPU presets the fleet question compares, US dollars per GPU-hour,
/// all read 2026-05-07 from the vendors' pages (techbytes.app, "Serverless GPU Pricing Matrix");
/// a GPU not listed needs its price given.
pub const LIST_USD_PER_GPU_HOUR: [(&str, f64); 6] = [
    // Lambda, 1× H100 SXM on demand.
    ("h100-sxm", ON_DEMAND_USD_PER_H100_HOUR),
    // Lambda, 1× A100 40GB on demand: $1.48/h.
    ("a100-40gb", 1.48),
    // Lambda, 1× A10 on demand: $0.86/h.
    ("a10", 0.86),
    // Modal, A100 80GB: $2.4984/h.
    ("a100-80gb", 2.4984),
    // Modal, L40S: $1.9512/h.
    ("l40s", 1.9512),
    // Modal, L4: $0.7992/h.
    ("l4", 0.7992),
];

/// The list price of GPU preset `id`, dollars per GPU-hour, when [`LIST_USD_PER_GPU_HOUR`] has one.
pub fn list_usd_per_gpu_hour(id: &str) -> Option<f64> {
    LIST_USD_PER_GPU_HOUR
        .iter()
        .find(|(g, _)| *g == id)
        .map(|(_, usd)| *usd)
}

/// The run's bill inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunBill {
    /// Tokens to train on; `None` with no `steps`: [`CHINCHILLA_TOKENS_PER_PARAM`] × Ψ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<f64>,
    /// Optimizer steps to run, in place of `tokens` (give one or the other).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
    /// How the GPUs are paid for.
    pub price_kind: PriceKind,
    /// Price of one GPU-hour rented (on demand or reserved), US dollars; unread when owned.
    pub usd_per_gpu_hour: f64,
    /// Purchase price of one GPU with its share of the server, US dollars (owned).
    pub capex_usd_per_gpu: f64,
    /// Years the purchase is amortised over (owned).
    pub amortisation_years: f64,
    /// Electricity price, US dollars per kWh.
    pub usd_per_kwh: f64,
    /// Facility power usage effectiveness: facility power over IT power.
    pub pue: f64,
    /// A node's power besides its GPUs (CPUs, memory, NICs, switches, fans), watts.
    pub node_overhead_w: f64,
    /// A GPU's board power, watts, in place of its preset's datasheet figure (a custom GPU has
    /// none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub board_power_w: Option<f64>,
    /// Checkpoint storage write bandwidth per node, GB/s (decimal).
    pub checkpoint_write_gb_s_per_node: f64,
    /// Time from a failure to training again, checkpoint read aside, seconds.
    pub restart_s: f64,
    /// Interruptions per GPU-hour.
    pub failures_per_gpu_hour: f64,
    /// What the inverse questions ask for: a deadline and a request rate.
    #[serde(skip_serializing_if = "Goals::is_default")]
    pub goals: Goals,
}

/// The inverse questions' inputs: train the token budget by a deadline (and within a
/// budget) on the fewest nodes, and serve a request rate within a latency target on the
/// fewest GPUs. The page and the share link carry them with the bill.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Goals {
    /// Expected wall-clock allowed, days.
    pub deadline_days: f64,
    /// Dollars allowed; `None`: no budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// Node counts to try; empty: the powers of two up to [`MAX_DEADLINE_GPUS`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_counts: Vec<u32>,
    /// Requests per second the fleet must serve.
    pub rate_rps: f64,
    /// Bound on p99 time to first token, ms; `None`: unbounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Bound on mean time per output token, ms; `None`: unbounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// GPU presets the fleet may use, by id; empty: every preset with a list price
    /// ([`LIST_USD_PER_GPU_HOUR`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fleet_gpus: Vec<String>,
}

/// The largest cluster the deadline question's powers of two reach, GPUs (the issue's
/// "1–64,000 GPUs").
pub const MAX_DEADLINE_GPUS: u64 = 65_536;

impl Default for Goals {
    fn default() -> Self {
        Goals {
            deadline_days: 30.0,
            budget_usd: None,
            node_counts: Vec::new(),
            rate_rps: 10.0,
            // The serving view's default targets: 2 s to the first token, 50 ms per token.
            ttft_ms: Some(2_000.0),
            tpot_ms: Some(50.0),
            fleet_gpus: Vec::new(),
        }
    }
}

impl Goals {
    /// Whether every field is its default (serde: the bill leaves the goals out).
    pub fn is_default(&self) -> bool {
        *self == Goals::default()
    }

    /// The GPU presets the fleet question compares: the listed ones, else every priced one.
    pub fn fleet_gpu_ids(&self) -> Vec<String> {
        if self.fleet_gpus.is_empty() {
            LIST_USD_PER_GPU_HOUR
                .iter()
                .map(|(id, _)| (*id).to_string())
                .collect()
        } else {
            self.fleet_gpus.clone()
        }
    }
}

impl Default for RunBill {
    fn default() -> Self {
        RunBill {
            tokens: None,
            steps: None,
            price_kind: PriceKind::OnDemand,
            usd_per_gpu_hour: ON_DEMAND_USD_PER_H100_HOUR,
            capex_usd_per_gpu: CAPEX_USD_PER_H100,
            amortisation_years: AMORTISATION_YEARS,
            usd_per_kwh: USD_PER_KWH,
            pue: PUE,
            node_overhead_w: NODE_OVERHEAD_W,
            board_power_w: None,
            checkpoint_write_gb_s_per_node: CHECKPOINT_WRITE_GB_S_PER_NODE,
            restart_s: RESTART_S,
            failures_per_gpu_hour: FAILURES_PER_GPU_HOUR,
            goals: Goals::default(),
        }
    }
}

/// Hours in a year of 365 days.
pub const HOURS_PER_YEAR: f64 = 365.0 * 24.0;

impl RunBill {
    /// Whether every field is its default (serde: the scenario leaves the bill out).
    pub fn is_default(&self) -> bool {
        *self == RunBill::default()
    }

    /// An owned GPU's hour: its purchase spread over the amortisation years,
    /// `capex / (years × 8,760 h)`.
    pub fn owned_usd_per_gpu_hour(&self) -> f64 {
        self.capex_usd_per_gpu / (self.amortisation_years * HOURS_PER_YEAR)
    }

    /// The hourly price of a GPU the bill charges: the rented price, or the owned hour.
    pub fn usd_per_gpu_hour_charged(&self) -> f64 {
        match self.price_kind {
            PriceKind::Owned => self.owned_usd_per_gpu_hour(),
            PriceKind::OnDemand | PriceKind::Reserved => self.usd_per_gpu_hour,
        }
    }

    /// Whether the electricity is billed apart (owned: the hourly rent holds it otherwise).
    pub fn bills_electricity(&self) -> bool {
        self.price_kind == PriceKind::Owned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_read_as_their_sources_state_them() {
        // 419 / (16,384 × 54 × 24) = 419 / 21,233,664 = 1.973e-5 per GPU-hour.
        assert!((FAILURES_PER_GPU_HOUR - 1.9733e-5).abs() < 1e-8);
        // 10,200 − 5,600 = 4,600 W.
        assert_eq!(NODE_OVERHEAD_W, 4_600.0);
        // $24,875 / (6 × 8,760 h) = $0.4733 per GPU-hour.
        let owned = RunBill {
            price_kind: PriceKind::Owned,
            ..RunBill::default()
        };
        assert!((owned.usd_per_gpu_hour_charged() - 0.473_269).abs() < 1e-5);
        assert!(owned.bills_electricity());
        assert!(!RunBill::default().bills_electricity());
        assert!(RunBill::default().is_default());
        assert_eq!(PriceKind::from_id("reserved"), Some(PriceKind::Reserved));
        assert_eq!(PriceKind::Reserved.default_usd_per_gpu_hour(), 1.85);
    }
}
