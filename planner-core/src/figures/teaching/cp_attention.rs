//! Context parallelism: the causal attention grid and the ring's steps.

use super::*;

// ---------------------------------------------------------------------------
// Context parallelism: causal grid and ring
// ---------------------------------------------------------------------------

/// How sequence chunks are assigned to CP ranks.
///
/// Megatron-LM (`get_batch_on_this_cp_rank`) cuts the sequence into `2·cp`
/// chunks and gives rank r chunks r and `2cp−1−r`, so every rank gets one early
/// (cheap) and one late (expensive) chunk of the causal triangle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpAssignment {
    /// Rank r holds chunks 2r and 2r+1 (contiguous).
    Plain,
    /// Rank r holds chunks r and 2cp−1−r (Megatron's load-balanced "zig-zag").
    ZigZag,
}

/// One (query chunk, key chunk) block of the causal attention grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttentionBlock {
    /// Query chunk.
    pub q: u32,
    /// Key/value chunk.
    pub k: u32,
    /// Rank that computes it (owner of the query chunk).
    pub rank: u32,
    /// Computed (`k ≤ q`); skipped blocks are above the diagonal.
    pub computed: bool,
    /// On the diagonal: half of it is masked.
    pub diagonal: bool,
    /// Ring step in which the keys arrive: `(rank − owner(k)) mod cp` (0 = own keys).
    pub ring_step: u32,
}

/// The causal grid under one assignment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpGrid {
    /// The assignment.
    pub assignment: CpAssignment,
    /// `chunks_of_rank[r]`: the chunks rank r holds.
    pub chunks_of_rank: Vec<[u32; 2]>,
    /// Row-major `2cp × 2cp` blocks (`q` major).
    pub blocks: Vec<AttentionBlock>,
    /// Work per rank in full blocks (a diagonal block counts ½).
    pub work_per_rank: Vec<f64>,
    /// Busiest rank's work over the mean: 1 is perfect balance.
    pub imbalance: f64,
}

/// The context-parallel figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpAttention {
    /// Ranks.
    pub cp: u32,
    /// Chunks: `2·cp`.
    pub chunks: u32,
    /// Tokens per chunk.
    pub tokens_per_chunk: f64,
    /// Computed blocks: `cp·(2cp+1)` (the lower triangle with its diagonal).
    pub computed_blocks: u32,
    /// Contiguous assignment.
    pub plain: CpGrid,
    /// Load-balanced assignment.
    pub zigzag: CpGrid,
    /// Ring steps per layer forward: `cp − 1` sends of K/V.
    pub ring_steps: u32,
    /// K/V bytes each rank passes to the next per ring step per layer:
    /// `seq/cp × K/V bytes per token per layer`.
    pub kv_bytes_per_step: f64,
}

fn cp_grid(cp: u32, assignment: CpAssignment) -> CpGrid {
    let chunks = 2 * cp;
    let owner = |c: u32| match assignment {
        CpAssignment::Plain => c / 2,
        CpAssignment::ZigZag => c.min(chunks - 1 - c),
    };
    let chunks_of_rank = (0..cp)
        .map(|r| match assignment {
            CpAssignment::Plain => [2 * r, 2 * r + 1],
            CpAssignment::ZigZag => [r, chunks - 1 - r],
        })
        .collect();
    let mut work = vec![0.0; cp as usize];
    let mut blocks = Vec::with_capacity((chunks * chunks) as usize);
    for q in 0..chunks {
        for k in 0..chunks {
            let rank = owner(q);
            let computed = k <= q;
            let diagonal = k == q;
            if computed {
                work[rank as usize] += if diagonal { 0.5 } else { 1.0 };
            }
            blocks.push(AttentionBlock {
                q,
                k,
                rank,
                computed,
                diagonal,
                // Ring attention (Liu et al. 2023): at step t rank r holds the K/V of rank r−t.
                ring_step: (rank + cp - owner(k)) % cp,
            });
        }
    }
    let mean = work.iter().sum::<f64>() / f64::from(cp);
    let max = work.iter().copied().fold(0.0, f64::max);
    CpGrid {
        assignment,
        chunks_of_rank,
        blocks,
        work_per_rank: work,
        imbalance: if mean > 0.0 { max / mean } else { 1.0 },
    }
}

/// The causal grid of `2·cp` chunks of a `seq_len` sequence under the plain and
/// zig-zag assignments, and the ring's K/V bytes per step for
/// `kv_bytes_per_token` (K and V bytes per token per layer on one rank).
pub fn cp_attention(
    cp: u32,
    seq_len: u32,
    kv_bytes_per_token: f64,
) -> Result<CpAttention, FieldError> {
    if !(1..=MAX_DRAWN_CP).contains(&cp) {
        return Err(field_error(
            "cp",
            format!("must be 1 to {MAX_DRAWN_CP} to draw, got {cp}"),
        ));
    }
    if seq_len < 2 * cp {
        return Err(field_error(
            "seq_len",
            format!("must be at least 2·cp = {}, got {seq_len}", 2 * cp),
        ));
    }
    let seq_per_rank = f64::from(seq_len) / f64::from(cp);
    Ok(CpAttention {
        cp,
        chunks: 2 * cp,
        tokens_per_chunk: f64::from(seq_len) / f64::from(2 * cp),
        computed_blocks: cp * (2 * cp + 1),
        plain: cp_grid(cp, CpAssignment::Plain),
        zigzag: cp_grid(cp, CpAssignment::ZigZag),
        ring_steps: cp - 1,
        kv_bytes_per_step: seq_per_rank * kv_bytes_per_token,
    })
}

/// [`cp_attention`] for the scenario: its CP degree (2 when the layout has none,
/// to show the idea), sequence length and the model's K/V bytes per token of a
/// micro-batch on one TP rank.
pub fn cp_attention_for(scenario: &Scenario, model: &ModelSpec) -> Result<CpAttention, FieldError> {
    let inp = CommInputs::new(
        model,
        &scenario.precision,
        &scenario.training,
        &scenario.overheads,
    );
    let layout = &scenario.layout;
    let cp = if layout.cp >= 2 { layout.cp } else { 2 };
    // comms.rs: TP splits K/V heads until it exceeds them.
    let kv_split = f64::from(layout.tp.max(1)).min(f64::from(inp.kv_heads.max(1)));
    // Per micro-batch: b sequences' K/V travel together.
    let kv_bytes = f64::from(layout.micro_batch.max(1)) * inp.kv_values_per_token / kv_split
        * inp.activation_bytes;
    cp_attention(cp.min(MAX_DRAWN_CP), scenario.training.seq_len, kv_bytes)
}
