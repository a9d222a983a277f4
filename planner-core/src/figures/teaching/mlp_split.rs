//! The Megatron MLP split: column- then row-parallel matrices and their collectives.

use super::*;

// ---------------------------------------------------------------------------
// Megatron MLP split
// ---------------------------------------------------------------------------

/// One matrix on one rank: rows × columns and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixShape {
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Bytes at the given dtype.
    pub bytes: f64,
}

/// A collective of the split: which and its size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitCollective {
    /// Operation.
    pub op: Collective,
    /// Message size, nccl-tests convention, bytes.
    pub message_bytes: f64,
    /// Bytes each rank sends: `message × busbw factor(tp)`.
    pub bytes_sent_per_rank: f64,
}

/// The MLP of one layer split over `tp` ranks (Shoeybi et al. 2019 §3, Fig. 3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MlpSplit {
    /// TP degree.
    pub tp: u32,
    /// Tokens in the micro-batch on this TP group (`b · s / cp`).
    pub tokens: u64,
    /// Input X on every rank: tokens × h (sequence parallel: tokens/tp × h before the all-gather).
    pub x: MatrixShape,
    /// Column slice of A: h × (f/tp) (SwiGLU: gate and up, h × 2f/tp).
    pub a: MatrixShape,
    /// Y = act(X·A_i): tokens × f/tp, no communication.
    pub y: MatrixShape,
    /// Row slice of B: (f/tp) × h.
    pub b: MatrixShape,
    /// Partial output Z_i = Y_i·B_i: tokens × h, summed by one all-reduce.
    pub z_partial: MatrixShape,
    /// Forward: one all-reduce of Z (g in the paper).
    pub forward: Vec<SplitCollective>,
    /// Backward: one all-reduce of dX (f in the paper).
    pub backward: Vec<SplitCollective>,
    /// Sequence parallel (Korthikanti et al. 2022 §4.2.2): all-gather of X before A and
    /// reduce-scatter of Z after B, the same bytes as the all-reduce.
    pub sequence_parallel_forward: Vec<SplitCollective>,
    /// Sequence parallel backward, in time order: all-gather of dZ (the reduce-scatter's
    /// conjugate), then reduce-scatter of dX (the all-gather's conjugate). Megatron also
    /// re-gathers X for the weight gradient, overlapped with compute; not counted here.
    pub sequence_parallel_backward: Vec<SplitCollective>,
}

/// The Megatron MLP split of `model` over `tp` ranks for `tokens` tokens
/// (`micro_batch · seq_len / cp`) at `bytes_per_value` (2 for BF16).
pub fn megatron_mlp_split(
    model: &ModelSpec,
    tp: u32,
    tokens: u64,
    bytes_per_value: f64,
) -> Result<MlpSplit, FieldError> {
    if tp == 0 {
        return Err(field_error("tp", "must be at least 1".to_string()));
    }
    let ffn = match &model.moe {
        Some(m) if model.ffn == 0 => m.expert_ffn,
        _ => model.ffn,
    };
    if !ffn.is_multiple_of(tp) {
        return Err(field_error(
            "tp",
            format!("must divide the FFN width {ffn}, got {tp}"),
        ));
    }
    let h = u64::from(model.hidden);
    let f_slice = u64::from(ffn / tp);
    let t = u64::from(tp);
    // SwiGLU's gate and up projections are both column-parallel: A_i = [gate_i | up_i].
    let a_cols = match model.ffn_kind {
        FfnKind::SwiGlu => 2 * f_slice,
        FfnKind::GeluMlp => f_slice,
    };
    let shape = |rows: u64, cols: u64| MatrixShape {
        rows,
        cols,
        bytes: rows as f64 * cols as f64 * bytes_per_value,
    };
    let z = tokens as f64 * h as f64 * bytes_per_value;
    let c = |op: Collective| SplitCollective {
        op,
        message_bytes: z,
        bytes_sent_per_rank: z * op.busbw_factor(t),
    };
    Ok(MlpSplit {
        tp,
        tokens,
        x: shape(tokens, h),
        a: shape(h, a_cols),
        y: shape(tokens, f_slice),
        b: shape(f_slice, h),
        z_partial: shape(tokens, h),
        forward: vec![c(Collective::AllReduce)],
        backward: vec![c(Collective::AllReduce)],
        sequence_parallel_forward: vec![c(Collective::AllGather), c(Collective::ReduceScatter)],
        sequence_parallel_backward: vec![c(Collective::AllGather), c(Collective::ReduceScatter)],
    })
}
