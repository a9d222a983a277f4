//! How the fused attention kernels' throughput falls with a short sequence: the share of its
//! long-sequence rate a causal FlashAttention call reaches at `q` query tokens. The attention
//! efficiency of `CostOptions` is a long-sequence figure; a call over a short sequence (a
//! short `seq_len`, or a context-parallel rank's chunk) runs at this share of it.
//!
//! Written by hand: a published table, interpolated, that no crate carries.

/// Causal forward throughput of FlashAttention-2, head dim 128, on an H100 80GB SXM5, TFLOP/s
/// by sequence length: Shah et al. 2024, "FlashAttention-3" (arXiv 2407.08608), Figure 5,
/// "Attention forward speed, head dim 128 (H100 80GB SXM5)", causal. The same figure's cuDNN
/// (315 … 539) and FlashAttention-3 (292 … 616) columns fall the same way (0.58 and 0.47 of
/// their 16K rate at 512 tokens, 0.90 and 0.85 at 2K).
const FA2_CAUSAL_TFLOPS: [(f64, f64); 6] = [
    (512.0, 191.0),
    (1024.0, 260.0),
    (2048.0, 298.0),
    (4096.0, 319.0),
    (8192.0, 333.0),
    (16384.0, 335.0),
];

/// The share of its long-sequence (16K and beyond) throughput a causal fused-attention call
/// over `query_tokens` tokens reaches: the table above over its 16K figure, linear in
/// log2(tokens) between its points, held at its ends (512 tokens and below: 0.570; 16K and
/// beyond: 1).
pub fn attention_length_share(query_tokens: f64) -> f64 {
    let (_, long) = FA2_CAUSAL_TFLOPS[FA2_CAUSAL_TFLOPS.len() - 1];
    let (first_len, first) = FA2_CAUSAL_TFLOPS[0];
    if !query_tokens.is_finite() || query_tokens <= first_len {
        return first / long;
    }
    for pair in FA2_CAUSAL_TFLOPS.windows(2) {
        let ((l0, t0), (l1, t1)) = (pair[0], pair[1]);
        if query_tokens <= l1 {
            let x = (query_tokens.log2() - l0.log2()) / (l1.log2() - l0.log2());
            return (t0 + x * (t1 - t0)) / long;
        }
    }
    1.0
}

#[cfg(test)]
mod tests {
    use super::attention_length_share;

    #[test]
    fn the_share_follows_the_published_figure() {
        assert!((attention_length_share(512.0) - 191.0 / 335.0).abs() < 1e-12);
        assert!((attention_length_share(256.0) - 191.0 / 335.0).abs() < 1e-12);
        assert!((attention_length_share(4096.0) - 319.0 / 335.0).abs() < 1e-12);
        // Half-way in log2 between 1K and 2K: the mean of 260 and 298.
        let mid = 2f64.powf(10.5);
        assert!((attention_length_share(mid) - 279.0 / 335.0).abs() < 1e-12);
        assert_eq!(attention_length_share(131_072.0), 1.0);
        assert!(attention_length_share(f64::NAN) > 0.0);
    }
}
