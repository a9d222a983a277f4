//! A GEMM's time from its shape: the output split into tiles, the tiles run in waves over the
//! GPU's multiprocessors, each tile's main loop at the large-GEMM rate of one multiprocessor,
//! its result written back at that multiprocessor's share of HBM, the whole bounded below by
//! the bytes it must move, plus one kernel launch.
//!
//! A curve over the smallest dimension ([`crate::input::gemm_efficiency::GemmEfficiency`])
//! cannot see that a GEMM of 96 tiles leaves 36 of an H100's 132 SMs idle, nor that a short
//! `K` leaves each tile's write-back exposed; this model does, and `meshplan validate --parts`
//! sets it against the published GEMM benchmarks.

use crate::input::gemm_efficiency::GemmEfficiency;
use crate::input::hardware::{gpu_multiprocessors, GpuSpec};
use crate::time::kernel_launch::GRAPH_KERNEL_LAUNCH_S;

/// One GEMM, or `groups` GEMMs of the same shape run as one grouped kernel (the experts of an
/// MoE layer): `C[m × n] = A[m × k] · B[k × n]` per group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmShape {
    /// Rows of `A` and `C` per group (tokens).
    pub m: f64,
    /// Columns of `B` and `C`.
    pub n: f64,
    /// The reduced dimension.
    pub k: f64,
    /// Groups run by one kernel (1 for a plain GEMM).
    pub groups: f64,
}

/// The GPU as a GEMM sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmUnit {
    /// Streaming multiprocessors (compute units on AMD).
    pub multiprocessors: f64,
    /// The rate large GEMMs of this dtype reach on the whole GPU, FLOP/s: the datasheet peak
    /// times the measured large-GEMM share.
    pub mainloop_flops_per_s: f64,
    /// HBM bandwidth streaming kernels reach, bytes/s.
    pub hbm_bytes_per_s: f64,
    /// Bytes per element of `A` and `B` (1 for FP8, 2 for BF16).
    pub input_bytes: f64,
    /// Bytes per element of `C` (2: BF16 output).
    pub output_bytes: f64,
}

impl GemmUnit {
    /// `gpu` as its record states it, for FP8 (`fp8`) or BF16 operands and BF16 output;
    /// `None` where the record states no multiprocessor count (or no FP8 rate for FP8).
    /// The main-loop rate: the dtype's peak × the large-GEMM share of the default curve
    /// ([`GemmEfficiency::max_fraction`]) × the GPU's measured BF16 (and FP8) shares × what
    /// its power limit leaves; HBM: the measured streaming share, else `hbm_default_fraction`.
    pub fn for_gpu(gpu: &GpuSpec, fp8: bool, hbm_default_fraction: f64) -> Option<GemmUnit> {
        let sms = gpu_multiprocessors(&gpu.id)?;
        let shares = &gpu.traits().compute;
        let (peak, share, input_bytes) = if fp8 {
            if gpu.fp8_flops_per_s <= 0.0 {
                return None;
            }
            let share = shares.bf16_gemm_relative_to_h100 * shares.fp8_gemm_relative_to_bf16;
            (gpu.fp8_flops_per_s, share, 1.0)
        } else {
            (gpu.bf16_flops_per_s, shares.bf16_gemm_relative_to_h100, 2.0)
        };
        let large = GemmEfficiency::default().max_fraction;
        Some(GemmUnit {
            multiprocessors: f64::from(sms),
            mainloop_flops_per_s: peak * large * share * shares.tensor_fraction_at_power_limit,
            hbm_bytes_per_s: gpu.hbm_bytes_per_s
                * shares.hbm_stream_fraction.unwrap_or(hbm_default_fraction),
            input_bytes,
            output_bytes: 2.0,
        })
    }
}

/// An output tile, elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tile {
    /// Rows.
    pub m: u32,
    /// Columns.
    pub n: u32,
}

/// What a GEMM costs, seconds, with the parts that set it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmTime {
    /// The GEMM, launch included.
    pub seconds: f64,
    /// The tile the heuristic picks.
    pub tile: Tile,
    /// Waves of tiles over the multiprocessors.
    pub waves: f64,
    /// The tiles' main loops and write-backs in waves.
    pub compute_s: f64,
    /// Reading `A` and `B` and writing `C` once at the HBM rate.
    pub memory_s: f64,
}

// DeepGEMM's candidate tiles (deep_gemm/jit_kernels/gemm.py `get_best_configs`): BLOCK_M of
// 64, 128 or 256, BLOCK_N from 16 to 128 in steps of 8 and 144, 160, with at least one side
// ≤ 128.
const BLOCK_MS: [u32; 3] = [64, 128, 256];

fn block_ns() -> impl Iterator<Item = u32> {
    (16..=128).step_by(8).chain([144, 160])
}

/// Tiles of `tile` over the shape, all groups.
fn tiles(shape: &GemmShape, tile: Tile) -> f64 {
    (shape.m / f64::from(tile.m)).ceil() * (shape.n / f64::from(tile.n)).ceil() * shape.groups
}

/// The tile DeepGEMM's heuristic picks (deep_gemm/jit_kernels/gemm.py `get_best_configs`):
/// the fewest waves over the multiprocessors, then the fullest last wave, then on a tie the
/// smaller tile on a shared side or the wider `N`.
pub fn pick_tile(shape: &GemmShape, multiprocessors: f64) -> Tile {
    let sms = multiprocessors.max(1.0);
    let waves = |t: Tile| (tiles(shape, t) / sms).ceil();
    let last_wave = |t: Tile| {
        let r = tiles(shape, t) % sms;
        if r > 0.0 {
            r
        } else {
            sms
        }
    };
    let mut best: Option<Tile> = None;
    for bm in BLOCK_MS {
        for bn in block_ns().filter(|&bn| bm <= 128 || bn <= 128) {
            let t = Tile { m: bm, n: bn };
            let better = match best {
                None => true,
                Some(b) if waves(t) != waves(b) => waves(t) < waves(b),
                Some(b) if last_wave(t) != last_wave(b) => last_wave(t) > last_wave(b),
                Some(b) => {
                    (bm == b.m && bn < b.n) || (bn == b.n && bm < b.m) || (bm != b.m && bn > b.n)
                }
            };
            if better {
                best = Some(t);
            }
        }
    }
    best.unwrap_or(Tile { m: 128, n: 128 })
}

/// The GEMM's time on `unit`.
pub fn gemm_time(shape: &GemmShape, unit: &GemmUnit) -> GemmTime {
    let sms = unit.multiprocessors.max(1.0);
    let tile = pick_tile(shape, sms);
    let (tm, tn) = (f64::from(tile.m), f64::from(tile.n));
    let waves = (tiles(shape, tile) / sms).ceil();
    // One tile's main loop: 2·tm·tn·k FLOPs at one multiprocessor's share of the large-GEMM rate.
    let mainloop_s = 2.0 * tm * tn * shape.k / (unit.mainloop_flops_per_s / sms).max(1.0);
    // Its write-back: the C tile at one multiprocessor's share of HBM (all write at once).
    let epilogue_s = tm * tn * unit.output_bytes / (unit.hbm_bytes_per_s / sms).max(1.0);
    // Persistent Hopper/Blackwell kernels overlap a tile's write-back with the next tile's main
    // loop (CUTLASS's warp-specialized ping-pong schedule): the slower of the two sets the pace
    // and the faster shows once, at the first main loop or the last write-back.
    let compute_s = waves * mainloop_s.max(epilogue_s) + mainloop_s.min(epilogue_s);
    // Every operand read once and the output written once.
    let bytes = shape.groups
        * ((shape.m * shape.k + shape.k * shape.n) * unit.input_bytes
            + shape.m * shape.n * unit.output_bytes);
    let memory_s = bytes / unit.hbm_bytes_per_s.max(1.0);
    GemmTime {
        seconds: compute_s.max(memory_s) + GRAPH_KERNEL_LAUNCH_S,
        tile,
        waves,
        compute_s,
        memory_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(m: f64, n: f64, k: f64, groups: f64) -> GemmShape {
        GemmShape { m, n, k, groups }
    }

    fn h100_fp8() -> GemmUnit {
        GemmUnit {
            multiprocessors: 132.0,
            mainloop_flops_per_s: 1300e12,
            hbm_bytes_per_s: 3.0e12,
            input_bytes: 1.0,
            output_bytes: 2.0,
        }
    }

    #[test]
    fn the_heuristic_fills_one_wave_when_it_can() {
        // 2048³ on 132 SMs: 256 × 128 tiles make 8 × 16 = 128 tiles, one wave; no other
        // candidate makes one wave with more.
        let s = shape(2048.0, 2048.0, 2048.0, 1.0);
        assert_eq!(pick_tile(&s, 132.0), Tile { m: 256, n: 128 });
        // M = 64 rows, N = 2112: 16-wide tiles make 132 tiles, exactly one full wave.
        let skinny = shape(64.0, 2112.0, 7168.0, 1.0);
        assert_eq!(pick_tile(&skinny, 132.0), Tile { m: 64, n: 16 });
    }

    #[test]
    fn a_one_wave_gemm_pays_its_tile_its_write_back_and_a_launch() {
        let s = shape(2048.0, 2048.0, 2048.0, 1.0);
        let t = gemm_time(&s, &h100_fp8());
        // By hand: main loop 2·256·128·2048 / (1300e12 / 132) = 13.63 µs; write-back
        // 256·128·2 B / (3e12 / 132) = 2.88 µs; one wave: 13.63 + 2.88 + 1.3 = 17.81 µs.
        let mainloop = 2.0 * 256.0 * 128.0 * 2048.0 / (1300e12 / 132.0);
        let epilogue = 256.0 * 128.0 * 2.0 / (3e12 / 132.0);
        assert!((t.seconds - (mainloop + epilogue + 1.3e-6)).abs() < 1e-12);
        assert_eq!(t.waves, 1.0);
    }

    #[test]
    fn a_skinny_gemm_is_bound_by_its_bytes() {
        // 64 × 2112 × 7168 FP8: B alone is 15.1 MB, 5.0 µs at 3 TB/s; the main loop of one
        // 64 × 16 tile is 1.5 µs.
        let s = shape(64.0, 2112.0, 7168.0, 1.0);
        let t = gemm_time(&s, &h100_fp8());
        let bytes = (64.0 * 7168.0 + 7168.0 * 2112.0) + 64.0 * 2112.0 * 2.0;
        assert!((t.seconds - (bytes / 3e12 + 1.3e-6)).abs() < 1e-12);
        assert!(t.memory_s > t.compute_s);
    }

    #[test]
    fn grouping_fills_the_waves_one_gemm_leaves_empty() {
        // One expert's 2048 × 1536 × 2048 GEMM fills one wave partly; sixteen in one grouped
        // kernel fill whole waves, so each costs less than alone.
        let one = shape(2048.0, 1536.0, 2048.0, 1.0);
        let sixteen = GemmShape {
            groups: 16.0,
            ..one
        };
        let u = h100_fp8();
        assert!(gemm_time(&sixteen, &u).seconds < 16.0 * gemm_time(&one, &u).seconds);
    }
}
