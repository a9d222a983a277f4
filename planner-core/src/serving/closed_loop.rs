//! The closed loop a fixed-concurrency benchmark runs (genai-perf/AIPerf `--concurrency`,
//! vLLM `benchmark_serving --max-concurrency`): `N` clients, each sending its next request
//! when its last one ends. One queueing station (prefill) and a delay station (the rest of
//! the cycle: decoding, a KV transfer), solved by approximate mean value analysis in
//! closed form.
//!
//! Approximate MVA (Schweitzer 1979; Lazowska et al. 1984, *Quantitative System
//! Performance* §6.4.2, "Schweitzer's approximation") replaces the queue an arriving
//! request sees, Q(N − 1), by (N − 1)/N · Q(N). With one queueing station of demand D and
//! think time Z, R = D·(1 + (N − 1)/N · X·R) and X = N / (R + Z) give the quadratic
//! R² + (Z − N·D)·R − D·Z = 0, whose positive root is the residence time. It is exact at
//! N = 1 (R = D), reaches the saturation bound X → 1/D as N grows (Lazowska §5.2), and in
//! between charges the wait that random arrival phases cause (product-form assumption:
//! exponential service at the queueing station), which the asymptotic bound alone puts at 0.
//!
//! A station of `m` identical servers is taken as a single server of demand D/m followed
//! by a delay of D·(m − 1)/m (Seidmann, Schweitzer and Shalev-Oren 1987, the multi-server
//! approximation used with MVA), so a lone request still spends the full D there.

/// Solution of the closed loop for the prefill station.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClosedLoop {
    /// Throughput, requests/s.
    pub rate_per_s: f64,
    /// Mean wait before a request's prefill starts, s.
    pub wait_s: f64,
    /// Utilisation of one prefill server, in [0, 1].
    pub rho: f64,
}

/// Residence time at one single-server queueing station of demand `demand_s` in a closed
/// loop of `clients` with think time `think_s` (Schweitzer's approximation, positive root).
pub fn schweitzer_residence_s(clients: f64, demand_s: f64, think_s: f64) -> f64 {
    let (n, d, z) = (clients.max(1.0), demand_s.max(0.0), think_s.max(0.0));
    if n <= 1.0 {
        // A lone client never finds anyone ahead of it.
        return d;
    }
    // R² − b·R − D·Z = 0 with b = N·D − Z; R = (b + √(b² + 4DZ)) / 2, written for b < 0 as
    // 2DZ / (√(b² + 4DZ) − b) so the light-load case keeps its digits.
    let b = n * d - z;
    let root = (b * b + 4.0 * d * z).sqrt();
    if b >= 0.0 {
        (b + root) / 2.0
    } else if root - b > 0.0 {
        2.0 * d * z / (root - b)
    } else {
        d
    }
}

/// `clients` requests in a closed loop: each spends `service_s` in one of `servers`
/// prefill servers and `think_s` after it, then returns.
pub fn solve(clients: f64, service_s: f64, think_s: f64, servers: f64) -> ClosedLoop {
    let m = servers.max(1.0);
    let s = service_s.max(f64::MIN_POSITIVE);
    // Seidmann et al. 1987: m servers of demand S ≈ one server of S/m plus a delay S·(m − 1)/m.
    let demand = s / m;
    let think = think_s.max(0.0) + s * (m - 1.0) / m;
    let residence = schweitzer_residence_s(clients, demand, think);
    // Interactive response time law (Lazowska §3.2): X = N / (R + Z).
    let rate = clients.max(1.0) / (residence + think);
    ClosedLoop {
        rate_per_s: rate,
        wait_s: (residence - demand).max(0.0),
        rho: (rate * s / m).min(1.0),
    }
}
