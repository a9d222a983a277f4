//! What failures cost a synchronous run: the cluster's mean time between interruptions, the
//! checkpoint interval that minimises lost time (Young 1974), and the share of wall time left
//! for useful steps (goodput) once checkpoints, restarts and the work lost since the last
//! checkpoint are paid.
//!
//! One interrupted GPU stops every GPU of a synchronous job (Llama 3, §3.3.4: "a single GPU
//! failure may require a restart of the entire job"), so the cluster fails at `N` times one
//! GPU's rate. Failures are taken as independent and memoryless (exponential), the model
//! Young and Daly derive the interval under.

/// Seconds in an hour.
const S_PER_HOUR: f64 = 3_600.0;

/// The cluster's mean time between interruptions, seconds: `3,600 / (λ × N)` for `λ`
/// interruptions per GPU-hour on `N` GPUs; infinite when `λ` is 0.
pub fn mtbf_s(failures_per_gpu_hour: f64, gpus: f64) -> f64 {
    let per_hour = failures_per_gpu_hour * gpus;
    if per_hour > 0.0 {
        S_PER_HOUR / per_hour
    } else {
        f64::INFINITY
    }
}

/// Young 1974 ("A first order approximation to the optimum checkpoint interval", CACM 17(9)),
/// eq. 3: the compute time between checkpoints that minimises lost time, `√(2 C M)` for a
/// checkpoint that takes `C` seconds and a mean time between failures `M`; Daly 2006 (FGCS
/// 22(3)) shows it within a few percent of his higher-order optimum while `C ≪ M`.
pub fn young_interval_s(checkpoint_s: f64, mtbf_s: f64) -> f64 {
    (2.0 * checkpoint_s * mtbf_s).sqrt()
}

/// Where a run's wall time goes, as shares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goodput {
    /// Compute time between checkpoints, seconds ([`young_interval_s`]; the whole run when
    /// nothing fails).
    pub interval_s: f64,
    /// Share of the time between failures spent writing checkpoints: `C / (τ + C)`.
    pub checkpoint_share: f64,
    /// Share of wall time lost to failures: each of the `1/M` per second costs the restart `R`
    /// and, on average, half an interval and its checkpoint, `(R + (τ + C)/2) / M`.
    pub failure_share: f64,
    /// Useful step time over wall time: `(1 − failure share) × (1 − checkpoint share)`.
    pub goodput: f64,
}

/// The goodput of a run whose checkpoint takes `checkpoint_s`, restart `restart_s`, between
/// failures `mtbf_s` apart; `None` when failures come faster than the run can recover from
/// them (the failure share reaches 1: the run never finishes).
pub fn goodput(checkpoint_s: f64, restart_s: f64, mtbf_s: f64) -> Option<Goodput> {
    if !mtbf_s.is_finite() {
        return Some(Goodput {
            interval_s: f64::INFINITY,
            checkpoint_share: 0.0,
            failure_share: 0.0,
            goodput: 1.0,
        });
    }
    let tau = young_interval_s(checkpoint_s, mtbf_s);
    let checkpoint_share = if tau + checkpoint_s > 0.0 {
        checkpoint_s / (tau + checkpoint_s)
    } else {
        0.0
    };
    let failure_share = (restart_s + (tau + checkpoint_s) / 2.0) / mtbf_s;
    (failure_share < 1.0).then_some(Goodput {
        interval_s: tau,
        checkpoint_share,
        failure_share,
        goodput: (1.0 - failure_share) * (1.0 - checkpoint_share),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn young_interval_by_hand() {
        // C = 60 s, M = 3 h = 10,800 s: √(2 × 60 × 10,800) = √1,296,000 = 1,138.4 s.
        assert!((young_interval_s(60.0, 10_800.0) - 1_138.42).abs() < 0.01);
        // λ = 1.9733e-5 per GPU-hour on 16,384 GPUs: 0.3233 per hour, M = 3,600 / 0.3233 = 11,135 s
        // = 54 × 24 × 3,600 / 419 (Llama 3: "one failure every three hours").
        let m = mtbf_s(419.0 / (16_384.0 * 54.0 * 24.0), 16_384.0);
        assert!((m - 11_135.1).abs() < 0.1, "{m}");
        assert_eq!(mtbf_s(0.0, 8.0), f64::INFINITY);
    }

    #[test]
    fn goodput_by_hand() {
        // C = 60 s, R = 300 s, M = 10,800 s: τ = 1,138.42 s;
        // checkpoint share 60 / 1,198.42 = 0.05007; failure share (300 + 599.21) / 10,800 = 0.08326;
        // goodput (1 − 0.08326)(1 − 0.05007) = 0.87084.
        let g = goodput(60.0, 300.0, 10_800.0).expect("recovers");
        assert!((g.checkpoint_share - 0.050_066).abs() < 1e-5, "{g:?}");
        assert!((g.failure_share - 0.083_260).abs() < 1e-5, "{g:?}");
        assert!((g.goodput - 0.870_844).abs() < 1e-5, "{g:?}");
        // Nothing fails: every second is useful.
        assert_eq!(
            goodput(60.0, 300.0, f64::INFINITY).map(|g| g.goodput),
            Some(1.0)
        );
        // Restarts longer than the time between failures: no progress.
        assert_eq!(goodput(60.0, 20_000.0, 10_800.0), None);
    }
}
