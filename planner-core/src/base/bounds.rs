//! Physical plausibility bounds of every number a scenario or calibration carries,
//! each written once here with why it holds; [`crate::resolve::validate`] and
//! [`crate::input::calibration::CalibrationSummary::check`] apply them where a value enters.
//!
//! They are wide (a factor of 10 to 1000 beyond any shipping part) so no real
//! device or recipe is refused, and narrow enough that every product in the model
//! stays finite: the largest product, bytes × parameters × micro-batches, stays far
//! under `f64::MAX`.

/// A closed or half-open interval with its unit, for messages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Lower end.
    pub min: f64,
    /// Whether `min` itself is allowed.
    pub min_inclusive: bool,
    /// Upper end (always allowed).
    pub max: f64,
    /// Unit for messages ("bytes", "s", "FLOP/s").
    pub unit: &'static str,
}

impl Bounds {
    const fn closed(min: f64, max: f64, unit: &'static str) -> Self {
        Bounds {
            min,
            min_inclusive: true,
            max,
            unit,
        }
    }

    const fn above(min: f64, max: f64, unit: &'static str) -> Self {
        Bounds {
            min,
            min_inclusive: false,
            max,
            unit,
        }
    }

    /// Whether `v` lies inside (NaN never does).
    pub fn contains(&self, v: f64) -> bool {
        let low = if self.min_inclusive {
            v >= self.min
        } else {
            v > self.min
        };
        low && v <= self.max
    }

    /// `Err(message)` naming the interval when `v` lies outside.
    pub fn check(&self, v: f64) -> Result<(), String> {
        if self.contains(v) {
            return Ok(());
        }
        let open = if self.min_inclusive { '[' } else { '(' };
        Err(format!(
            "{} is outside {open}{}, {}] {}",
            short(v),
            short(self.min),
            short(self.max),
            self.unit
        )
        .trim_end()
        .to_string())
    }
}

/// A number as a person reads it: plain near 1, scientific when very large or small.
fn short(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || !v.is_finite() || (1e-3..1e6).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

// Precision: the widest stored state is fp64 Adam moments (2 × 8 bytes); 16 bytes per
// parameter per category covers every recipe (ZeRO paper §3: 2 + 2 + 12 in total).
/// Weight bytes per parameter: > 0 (INT4 is 0.5), ≤ 16.
pub const WEIGHT_BYTES: Bounds = Bounds::above(0.0, 16.0, "bytes per parameter");
/// Gradient, master-weight or optimizer bytes per parameter: 0 (not kept) to 16.
pub const STATE_BYTES: Bounds = Bounds::closed(0.0, 16.0, "bytes per parameter");
/// Activation bytes per element: > 0 (FP8 is 1), ≤ 8 (fp64).
pub const ACTIVATION_BYTES: Bounds = Bounds::above(0.0, 8.0, "bytes per element");

// GPU: today's largest parts (B200/MI325X: 192–256 GB HBM, 8 TB/s, 2.5 PFLOP/s dense
// FP8, 1.8 TB/s NVLink) times 1000 at the top; a phone GPU at the bottom.
/// Device memory: 100 MB to 100 TB.
pub const DEVICE_MEMORY_BYTES: Bounds = Bounds::closed(1e8, 1e14, "bytes");
/// HBM bandwidth: 1 GB/s to 1 PB/s.
pub const HBM_BYTES_PER_S: Bounds = Bounds::closed(1e9, 1e15, "bytes/s");
/// Dense tensor FLOP rate: 1 GFLOP/s to 1 EFLOP/s per device.
pub const FLOPS_PER_S: Bounds = Bounds::closed(1e9, 1e18, "FLOP/s");
/// Link bandwidth per GPU per direction: 1 MB/s (a slow Ethernet) to 100 TB/s.
pub const LINK_BYTES_PER_S: Bounds = Bounds::closed(1e6, 1e14, "bytes/s");
// A link's α: NVLink ~2–5 µs, InfiniBand ~5–20 µs (nccl-tests small-message times);
// a second is already 10^5 × that, and 0 would make small messages free.
/// Per-message latency of a link: > 0, ≤ 1 s.
pub const LINK_LATENCY_S: Bounds = Bounds::above(0.0, 1.0, "s");
/// A fitted α: a least-squares fit may land on 0 (clamped), never below; ≤ 1 s.
pub const FITTED_LATENCY_S: Bounds = Bounds::closed(0.0, 1.0, "s");

// Overheads and serving buffers: at most a device's memory bound.
/// CUDA context, NCCL buffers, buckets, serving workspace: 0 to 100 TB.
pub const BUFFER_BYTES: Bounds = Bounds::closed(0.0, 1e14, "bytes");

// vLLM's scheduler budget: `max_num_batched_tokens` and `max_num_seqs` are at most a few
// times 10^5 in any published configuration (vLLM defaults 2048–16384 tokens, 256–1024
// sequences); 2^24 keeps T × h × bytes of the profiled activation far from overflow.
/// Tokens or sequences of a serving engine's profiling batch: 1 to 2^24.
pub const MAX_BATCHED_TOKENS: u32 = 1 << 24;

// A fit's largest relative error and a GEMM curve's half-efficiency dimension.
/// A fit's largest relative error: 0 to 1000 (100,000%).
pub const RELATIVE_ERROR: Bounds = Bounds::closed(0.0, 1e3, "");
/// GEMM half-efficiency dimension: 0 to 10^7 (a GEMM side is at most 2^24).
pub const GEMM_HALF_DIM: Bounds = Bounds::closed(0.0, 1e7, "");
/// A published serving figure (TTFT, TPOT, latency in ms; output tokens/s): from 1e-3 (a
/// microsecond; one token in 1000 s) to 1e9 (11 days; beyond any engine), so that
/// predicted / measured − 1 stays finite for any finite prediction.
pub const SERVING_MEASUREMENT: Bounds = Bounds::closed(1e-3, 1e9, "ms or tokens/s");
/// A published training or memory figure (tokens/s, seconds, MFU, TFLOP/s, GiB, KV tokens):
/// the serving figures' range, for the same reason (an MFU of 0.1% and a billion tokens/s
/// bound every real run), so that predicted / measured − 1 stays finite.
pub const TRAINING_MEASUREMENT: Bounds = Bounds::closed(1e-3, 1e9, "the quantity's unit");

// Host side of a node (crate::input::host): DGX-class servers carry 1–4 TB of RAM and 15–30 TB
// of NVMe, a GB200 NVL72 rack 17 TB of LPDDR5X; 1 PB / 100 PB leave room for any rack.
// A node without local NVMe has 0 bytes and 0 bandwidth (NVMe offload then refused).
/// Host RAM of a node: 1 GB to 1 PB.
pub const HOST_RAM_BYTES: Bounds = Bounds::closed(1e9, 1e15, "bytes");
/// Local NVMe of a node: 0 to 100 PB.
pub const NVME_BYTES: Bounds = Bounds::closed(0.0, 1e17, "bytes");
/// NVMe bandwidth of a node: 0 (none) to 100 TB/s.
pub const NVME_BYTES_PER_S: Bounds = Bounds::closed(0.0, 1e14, "bytes/s");
/// CPU cores of a node: 1 to 10^6 (a GB200 NVL72 rack has 2,592).
pub const HOST_CPU_CORES_MAX: u32 = 1_000_000;

/// A fraction of a peak (GEMM efficiency, memory share): > 0, ≤ 1.
pub const FRACTION: Bounds = Bounds::above(0.0, 1.0, "");

// LoRA (Hu et al. 2021): the rank r of an adapter is useful only up to min(d_in, d_out) of
// the layer it adapts, and the widest published hidden sizes are ~2^14 (Llama 3.1 405B:
// 16 384); 2^16 leaves room for any model while r·(d_in + d_out) stays finite. α only
// scales the update by α/r (PEFT examples use 8 to 512).
/// LoRA rank: 1 to 65 536.
pub const LORA_RANK_MAX: u32 = 65_536;
/// LoRA α: 1 to 10^6.
pub const LORA_ALPHA_MAX: u32 = 1_000_000;
/// Most prompt-tuning virtual tokens (a prompt as long as the longest sequence the planner takes).
pub const VIRTUAL_TOKENS_MAX: u32 = 1 << 20;

/// Longest sequence accepted: 10M tokens (10 × 2^20).
pub const MAX_SEQ_LEN: u32 = 10_485_760;
/// Most GPUs a scenario may hold.
pub const MAX_GPUS: u64 = 1_000_000;
// A measured collective group: the largest published training runs span ~10^5 GPUs
// (Llama 3: 16,384 H100s; xAI's Colossus ~10^5), and a fit from a larger group would
// price links for meshes no scenario may hold. Past this, an α–β fit divides by step
// counts so large that the latency lands at fractions of a picosecond.
/// Most ranks of a measured collective (nccl-tests `--ranks`): a scenario's GPU bound.
pub const MAX_COLLECTIVE_RANKS: u64 = MAX_GPUS;
/// Most layers a custom model may have.
pub const MAX_LAYERS: u32 = 10_000;
/// Largest hidden size, FFN width, head count or head dim a custom model may have.
pub const MAX_WIDTH: u32 = 1 << 22;
/// Largest vocabulary.
pub const MAX_VOCAB: u32 = 1 << 26;
/// Most routed experts per layer.
pub const MAX_EXPERTS: u32 = 1 << 16;
/// Most parameters a model may have (keeps every `u64` count far from overflow).
pub const MAX_PARAMS: f64 = 1e16;

/// An MoE capacity factor: positive (0 would drop every token). Published recipes use 1.0 to
/// 2.0 (Switch Transformer §2.2 trains at 1.0–2.0; Megatron-Bridge's token drop at 1.0);
/// Megatron sets no upper bound, and 64 keeps every product finite.
pub const MOE_CAPACITY_FACTOR: Bounds = Bounds::above(0.0, 64.0, "× the mean");

/// The busiest EP rank's measured load over the mean: at least the mean itself, and at most
/// every token on one rank of the largest EP group a scenario allows.
pub const MOE_BUSIEST_LOAD: Bounds = Bounds::closed(1.0, 1e6, "× the mean");

// The run's bill ([`crate::input::bill`]): wide enough for any run or price list, narrow
// enough that tokens × dollars × joules stay finite.
/// A token budget: the largest published pre-training runs are under 1e14 tokens.
pub const BILL_TOKENS: Bounds = Bounds::above(0.0, 1e16, "tokens");
/// Optimizer steps: a million steps a day for 3,000 years.
pub const BILL_STEPS_MAX: u64 = 1_000_000_000_000;
/// A GPU-hour's price: free (0) to 1,000× any list price.
pub const USD_PER_GPU_HOUR: Bounds = Bounds::closed(0.0, 1e4, "$ per GPU-hour");
/// A GPU's purchase price with its share of the server.
pub const CAPEX_USD_PER_GPU: Bounds = Bounds::closed(0.0, 1e8, "$");
/// Amortisation: a month to a century.
pub const AMORTISATION_YEARS: Bounds = Bounds::closed(0.1, 100.0, "years");
/// Electricity: free to 100× any retail tariff.
pub const USD_PER_KWH: Bounds = Bounds::closed(0.0, 100.0, "$ per kWh");
/// PUE is facility over IT power: at least 1 by definition (The Green Grid, WP#49).
pub const PUE: Bounds = Bounds::closed(1.0, 10.0, "");
/// A node's non-GPU power.
pub const NODE_OVERHEAD_W: Bounds = Bounds::closed(0.0, 1e6, "W");
/// A GPU's board power: above 0, 100× any shipping part.
pub const BOARD_POWER_W: Bounds = Bounds::above(0.0, 1e5, "W");
/// Checkpoint write bandwidth per node: above 0, 1,000× any parallel file system's per-node rate.
pub const CHECKPOINT_GB_S: Bounds = Bounds::above(0.0, 1e5, "GB/s");
/// Restart time: none to four months.
pub const RESTART_S: Bounds = Bounds::closed(0.0, 1e7, "s");
/// Interruptions per GPU-hour: none to one an hour on every GPU.
pub const FAILURES_PER_GPU_HOUR: Bounds = Bounds::closed(0.0, 1.0, "per GPU-hour");
/// A deadline: above 0, a century.
pub const DEADLINE_DAYS: Bounds = Bounds::above(0.0, 36_500.0, "days");
/// A budget: above 0, a thousand times the largest published training run's cost.
pub const BUDGET_USD: Bounds = Bounds::above(0.0, 1e13, "$");
/// Node counts the deadline question may list: enough for every multiple of 8 nodes up to
/// 8,192 nodes (65,536 GPUs of 8), few enough that one question stays a few seconds.
pub const DEADLINE_NODE_COUNTS_MAX: usize = 1_024;
/// A request rate: above 0, ten million requests per second.
pub const FLEET_RPS: Bounds = Bounds::above(0.0, 1e7, "requests/s");
/// A latency bound: above 0, an hour.
pub const LATENCY_BOUND_MS: Bounds = Bounds::above(0.0, 3.6e6, "ms");
/// GPU types the fleet question may compare (each runs one deployment search).
pub const FLEET_GPUS_MAX: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_infinity_and_the_ends_are_judged_by_the_interval() {
        assert!(!LINK_LATENCY_S.contains(f64::NAN));
        assert!(!LINK_LATENCY_S.contains(0.0));
        assert!(LINK_LATENCY_S.contains(1.0));
        assert!(!LINK_LATENCY_S.contains(-1e-6));
        assert!(STATE_BYTES.contains(0.0));
        assert!(!STATE_BYTES.contains(1e308));
        assert!(!FLOPS_PER_S.contains(5e-324));
        assert!(!FLOPS_PER_S.contains(f64::INFINITY));
        let m = LINK_LATENCY_S.check(-2.0).expect_err("negative latency");
        assert_eq!(m, "-2 is outside (0, 1] s");
        let m = FLOPS_PER_S.check(5e-324).expect_err("denormal rate");
        assert_eq!(m, "5e-324 is outside [1e9, 1e18] FLOP/s");
    }
}
