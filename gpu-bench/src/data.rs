//! Host-side test data for collectives: the value each rank puts in each
//! element, what each rank should hold afterwards, and conversions between
//! f32 and the 16-bit formats (so no `half` dependency is needed).
//!
//! Inputs are small integers (1..=4), exact in every format, so a sum is exact
//! until it outgrows the mantissa; beyond that the check allows the worst-case
//! rounding of a sequential sum.

use planner_core::edges::report::{CollectiveOp, Dtype};

/// Input value of element `i` on `rank`.
pub fn input_value(rank: u32, i: u64) -> f32 {
    ((u64::from(rank) + i) % 4) as f32 + 1.0
}

/// f32 → bfloat16 bits, round to nearest even.
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return 0x7fc0;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    ((bits + round) >> 16) as u16
}

/// bfloat16 bits → f32 (exact).
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// f32 → IEEE half bits, round to nearest even (overflow to infinity).
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rounded = m + half - 1 + ((m >> shift) & 1);
        return sign | (rounded >> shift) as u16;
    }
    let rounded = man + 0xfff + ((man >> 13) & 1);
    let (e, m) = if rounded & 0x80_0000 != 0 {
        (e + 1, 0)
    } else {
        (e, rounded >> 13)
    };
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    sign | ((e as u16) << 10) | m as u16
}

/// IEEE half bits → f32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise.
            let mut e = 127 - 15 + 1;
            let mut m = m;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | ((e as u32) << 23) | ((m & 0x3ff) << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// f32 → FP8 E4M3 bits (the OCP "e4m3fn" format cuBLASLt's `CUDA_R_8F_E4M3`
/// and PyTorch's `float8_e4m3fn` use: bias 7, no infinities, largest finite
/// ±448, NaN 0x7f), round to nearest even, saturating at ±448.
pub fn f32_to_e4m3(x: f32) -> u8 {
    if x.is_nan() {
        return 0x7f;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs().min(448.0);
    // Below the smallest normal (2^-6) the step is 2^-9: subnormal codes 0..=7
    // (a result of 8 is the smallest normal, whose code is also 8).
    if a < 2f32.powi(-6) {
        return sign | (a * 512.0).round_ties_even() as u8;
    }
    let e = ((a.to_bits() >> 23) & 0xff) as i32 - 127;
    let frac = a / 2f32.powi(e);
    let m = ((frac - 1.0) * 8.0).round_ties_even() as i32;
    let (e, m) = if m == 8 { (e + 1, 0) } else { (e, m) };
    sign | (((e + 7) as u8) << 3) | m as u8
}

/// FP8 E4M3 bits → f32 (exact; 0x7f and 0xff are NaN).
pub fn e4m3_to_f32(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((b >> 3) & 0xf);
    let m = f32::from(b & 0x7);
    if e == 0xf && m == 7.0 {
        return f32::NAN;
    }
    if e == 0 {
        sign * m * 2f32.powi(-9)
    } else {
        sign * (1.0 + m / 8.0) * 2f32.powi(e - 7)
    }
}

/// Appends `x` in `dtype`'s little-endian encoding.
pub fn push_value(out: &mut Vec<u8>, dtype: Dtype, x: f32) {
    match dtype {
        Dtype::Fp32 => out.extend_from_slice(&x.to_le_bytes()),
        Dtype::Fp16 => out.extend_from_slice(&f32_to_f16(x).to_le_bytes()),
        Dtype::Bf16 => out.extend_from_slice(&f32_to_bf16(x).to_le_bytes()),
        Dtype::Fp8E4m3 => out.push(f32_to_e4m3(x)),
    }
}

/// SplitMix64: a small, fast, well-mixed generator (Steele et al. 2014), enough for test data.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

/// `len` standard-normal values (Box–Muller) in `dtype`, the same for the same `seed`.
///
/// GEMM operands get these rather than the small integers of the collective
/// pattern: tensor cores draw less power on constant or low-entropy data and
/// clock higher, so a GEMM on such data runs faster than on real weights and
/// activations (or on `torch.randn`, which gpu_check.py compares against).
pub fn random_normal_bytes(dtype: Dtype, seed: u64, len: u64) -> Vec<u8> {
    let mut rng = SplitMix64(seed);
    let mut out = Vec::with_capacity((len * dtype.bytes()) as usize);
    let mut i = 0;
    while i < len {
        let r = (-2.0 * rng.unit().ln()).sqrt();
        let t = std::f64::consts::TAU * rng.unit();
        push_value(&mut out, dtype, (r * t.cos()) as f32);
        if i + 1 < len {
            push_value(&mut out, dtype, (r * t.sin()) as f32);
        }
        i += 2;
    }
    out
}

/// Reads element `i` of `bytes` in `dtype`.
pub fn read_value(bytes: &[u8], dtype: Dtype, i: usize) -> f32 {
    match dtype {
        Dtype::Fp32 => {
            let b = &bytes[4 * i..4 * i + 4];
            f32::from_le_bytes([b[0], b[1], b[2], b[3]])
        }
        Dtype::Fp16 => f16_to_f32(u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]])),
        Dtype::Bf16 => bf16_to_f32(u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]])),
        Dtype::Fp8E4m3 => e4m3_to_f32(bytes[i]),
    }
}

/// Input bytes for elements `start..start + len` of `rank`'s send buffer.
pub fn input_bytes(dtype: Dtype, rank: u32, start: u64, len: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity((len * dtype.bytes()) as usize);
    for i in start..start + len {
        push_value(&mut out, dtype, input_value(rank, i));
    }
    out
}

/// Element counts of one collective call: what each rank sends and receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Elements in each rank's send buffer.
    pub send: u64,
    /// Elements in each rank's receive buffer.
    pub recv: u64,
}

/// Send and receive element counts when the report's `bytes` (nccl-tests
/// "size", the largest buffer) holds `total` elements.
pub fn counts(op: CollectiveOp, ranks: u32, total: u64) -> Counts {
    let n = u64::from(ranks.max(1));
    match op {
        CollectiveOp::AllGather => Counts {
            send: total / n,
            recv: total,
        },
        CollectiveOp::ReduceScatter => Counts {
            send: total,
            recv: total / n,
        },
        _ => Counts {
            send: total,
            recv: total,
        },
    }
}

/// Expected value of receive element `i` on `rank` after `op` over `ranks` ranks
/// (root 0 for broadcast and reduce; `None` where the buffer is undefined,
/// i.e. reduce on a non-root rank). `per_rank` is the receive count of
/// reduce-scatter and the send count of all-gather (chunk size).
pub fn expected(op: CollectiveOp, ranks: u32, rank: u32, i: u64, chunk: u64) -> Option<f32> {
    let n = ranks.max(1);
    let sum = |idx: u64| (0..n).map(|q| input_value(q, idx)).sum::<f32>();
    match op {
        CollectiveOp::AllReduce => Some(sum(i)),
        CollectiveOp::Reduce => (rank == 0).then(|| sum(i)),
        CollectiveOp::ReduceScatter => Some(sum(u64::from(rank) * chunk + i)),
        CollectiveOp::AllGather => {
            let q = (i / chunk.max(1)) as u32;
            Some(input_value(q, i % chunk.max(1)))
        }
        CollectiveOp::Broadcast => Some(input_value(0, i)),
        CollectiveOp::AllToAll => {
            let q = (i / chunk.max(1)) as u32;
            Some(input_value(q, u64::from(rank) * chunk + i % chunk.max(1)))
        }
        CollectiveOp::SendRecv => Some(input_value((rank + n - 1) % n, i)),
    }
}

/// Unit round-off of a format.
pub fn epsilon(dtype: Dtype) -> f32 {
    match dtype {
        Dtype::Fp32 => f32::EPSILON,
        Dtype::Fp16 => 1.0 / 1024.0,
        Dtype::Bf16 => 1.0 / 128.0,
        Dtype::Fp8E4m3 => 1.0 / 8.0,
    }
}

/// Counts elements of `bytes` (receive elements `start..`) that differ from
/// the expected result by more than the rounding a sequential sum over
/// `ranks` values can cause.
pub fn count_wrong(
    op: CollectiveOp,
    dtype: Dtype,
    ranks: u32,
    rank: u32,
    chunk: u64,
    start: u64,
    bytes: &[u8],
) -> u64 {
    let len = bytes.len() / dtype.bytes() as usize;
    let reduces = matches!(
        op,
        CollectiveOp::AllReduce | CollectiveOp::Reduce | CollectiveOp::ReduceScatter
    );
    let mut wrong = 0;
    for j in 0..len {
        let Some(want) = expected(op, ranks, rank, start + j as u64, chunk) else {
            continue;
        };
        let got = read_value(bytes, dtype, j);
        let tol = if reduces {
            want * epsilon(dtype) * ranks as f32 / 2.0
        } else {
            0.0
        };
        // NaN counts as wrong.
        let close = (got - want).abs() <= tol;
        if !close {
            wrong += 1;
        }
    }
    wrong
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_formats_round_trip_small_integers_and_known_bits() {
        for k in 0..=2048 {
            let x = k as f32;
            assert_eq!(f16_to_f32(f32_to_f16(x)), x, "f16 {x}");
        }
        for k in 0..=256 {
            let x = k as f32;
            assert_eq!(bf16_to_f32(f32_to_bf16(x)), x, "bf16 {x}");
        }
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(1e6), 0x7c00);
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f32_to_f16(2f32.powi(-24)), 0x0001);
        // 2049 is halfway between 2048 and 2050 in f16: ties to even (2048).
        assert_eq!(f16_to_f32(f32_to_f16(2049.0)), 2048.0);
    }

    #[test]
    fn e4m3_round_trips_every_finite_code_and_rounds_to_nearest_even() {
        for b in 0..=255u8 {
            if b & 0x7f == 0x7f {
                assert!(e4m3_to_f32(b).is_nan());
                continue;
            }
            let x = e4m3_to_f32(b);
            let back = f32_to_e4m3(x);
            // -0 keeps its sign bit; every other code comes back unchanged.
            assert_eq!(back, b, "code {b:#04x} = {x}");
        }
        assert_eq!(f32_to_e4m3(1.0), 0x38);
        assert_eq!(f32_to_e4m3(-1.0), 0xb8);
        assert_eq!(f32_to_e4m3(448.0), 0x7e);
        assert_eq!(f32_to_e4m3(1e6), 0x7e, "saturates, never NaN");
        assert_eq!(f32_to_e4m3(-1e6), 0xfe);
        assert_eq!(f32_to_e4m3(2f32.powi(-9)), 0x01);
        // Ties go to the even code: 0.5 ulp above 0 → 0, 1.5 ulp → 2.
        assert_eq!(f32_to_e4m3(2f32.powi(-10)), 0x00);
        assert_eq!(f32_to_e4m3(3.0 * 2f32.powi(-10)), 0x02);
        // 1.0625 is halfway between 1.0 (0x38) and 1.125 (0x39): even is 0x38.
        assert_eq!(f32_to_e4m3(1.0625), 0x38);
        assert_eq!(f32_to_e4m3(1.1875), 0x3a);
        assert_eq!(f32_to_e4m3(f32::NAN), 0x7f);
    }

    #[test]
    fn random_operands_are_normal_and_reproducible() {
        let n = 100_000u64;
        let a = random_normal_bytes(Dtype::Fp32, 7, n);
        assert_eq!(a, random_normal_bytes(Dtype::Fp32, 7, n));
        assert_ne!(a, random_normal_bytes(Dtype::Fp32, 8, n));
        assert_eq!(a.len() as u64, 4 * n);
        let v: Vec<f64> = (0..n as usize)
            .map(|i| f64::from(read_value(&a, Dtype::Fp32, i)))
            .collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 1.0).abs() < 0.03, "variance {var}");
        // Odd lengths and the narrow formats: right size, many distinct values, no NaN.
        let h = random_normal_bytes(Dtype::Bf16, 1, 1001);
        assert_eq!(h.len(), 2002);
        let f8 = random_normal_bytes(Dtype::Fp8E4m3, 1, 4096);
        assert_eq!(f8.len(), 4096);
        assert!(f8.iter().all(|b| b & 0x7f != 0x7f));
        let mut distinct = f8.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 60, "{} distinct fp8 codes", distinct.len());
    }

    #[test]
    fn counts_follow_nccl_tests_sizes() {
        assert_eq!(
            counts(CollectiveOp::AllGather, 8, 1024),
            Counts {
                send: 128,
                recv: 1024
            }
        );
        assert_eq!(
            counts(CollectiveOp::ReduceScatter, 8, 1024),
            Counts {
                send: 1024,
                recv: 128
            }
        );
        assert_eq!(
            counts(CollectiveOp::AllReduce, 8, 1024),
            Counts {
                send: 1024,
                recv: 1024
            }
        );
    }

    /// Simulates each collective on the host and checks `expected` agrees.
    #[test]
    fn expected_values_match_a_host_simulation() {
        let n = 4u32;
        let chunk = 3u64;
        let total = chunk * u64::from(n);
        for rank in 0..n {
            for i in 0..total {
                let s: f32 = (0..n).map(|q| input_value(q, i)).sum();
                assert_eq!(
                    expected(CollectiveOp::AllReduce, n, rank, i, chunk),
                    Some(s)
                );
                // All-to-all: chunk q of rank's output is chunk `rank` of q's input.
                let q = (i / chunk) as u32;
                let sent = input_value(q, u64::from(rank) * chunk + i % chunk);
                assert_eq!(
                    expected(CollectiveOp::AllToAll, n, rank, i, chunk),
                    Some(sent)
                );
            }
            for j in 0..chunk {
                let idx = u64::from(rank) * chunk + j;
                let s: f32 = (0..n).map(|q| input_value(q, idx)).sum();
                assert_eq!(
                    expected(CollectiveOp::ReduceScatter, n, rank, j, chunk),
                    Some(s)
                );
            }
        }
        assert_eq!(expected(CollectiveOp::Reduce, n, 1, 0, chunk), None);
        assert_eq!(
            expected(CollectiveOp::SendRecv, n, 0, 5, chunk),
            Some(input_value(3, 5))
        );
    }

    #[test]
    fn wrong_elements_are_counted() {
        let n = 2;
        let mut out = Vec::new();
        for i in 0..8u64 {
            let v = expected(CollectiveOp::AllReduce, n, 0, i, 0).unwrap();
            push_value(&mut out, Dtype::Bf16, if i == 3 { v + 1.0 } else { v });
        }
        assert_eq!(
            count_wrong(CollectiveOp::AllReduce, Dtype::Bf16, n, 0, 0, 0, &out),
            1
        );
        let good = input_bytes(Dtype::Fp32, 1, 0, 16);
        assert_eq!(
            count_wrong(CollectiveOp::SendRecv, Dtype::Fp32, 2, 0, 0, 0, &good),
            0
        );
    }
}
