//! The four collectives on a few ranks: who sends which chunk, and their time on the current cluster.

use super::*;

// ---------------------------------------------------------------------------
// The four collectives
// ---------------------------------------------------------------------------

/// One cell of a collective grid: chunk `chunk` of the tensor, holding the sum
/// of the contributions of `from` (one rank: a plain chunk; several: a partial
/// or full sum).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkCell {
    /// Which chunk of the tensor (0-based).
    pub chunk: u32,
    /// Ranks whose data is summed in this cell, ascending.
    pub from: Vec<u32>,
}

/// What the current layout uses a collective for, with its real sizes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectiveUse {
    /// What for.
    pub purpose: Purpose,
    /// Which group.
    pub group: GroupKind,
    /// Group size.
    pub ranks: u64,
    /// Link crossed.
    pub domain: Domain,
    /// Size of one call, nccl-tests convention, bytes.
    pub message_bytes: f64,
    /// Bytes each rank sends per call: `message × busbw factor(n)` (2(n−1)/n for all-reduce).
    pub bytes_sent_per_rank_per_call: f64,
    /// Calls per step.
    pub calls_per_step: f64,
    /// Bytes each rank sends per step.
    pub bytes_sent_per_rank_per_step: f64,
}

/// Before/after grids of one collective on `ranks` ranks, and its uses in the layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectiveDemo {
    /// The operation.
    pub op: Collective,
    /// Ranks drawn.
    pub ranks: u32,
    /// `before[rank][slot]`: what each rank holds before (`None`: empty slot).
    pub before: Vec<Vec<Option<ChunkCell>>>,
    /// `after[rank][slot]`: what each rank holds after.
    pub after: Vec<Vec<Option<ChunkCell>>>,
    /// Fraction of one rank's full tensor each rank sends (nccl-tests busbw factor).
    pub busbw_factor: f64,
    /// The layout's calls of this operation.
    pub uses: Vec<CollectiveUse>,
}

/// The four collectives the article draws.
pub const DEMO_COLLECTIVES: [Collective; 4] = [
    Collective::AllReduce,
    Collective::ReduceScatter,
    Collective::AllGather,
    Collective::AllToAll,
];

/// Before/after grids of `op` on `ranks` ranks (each rank's tensor in `ranks`
/// chunks), with the layout's uses of `op` taken from `comms`.
///
/// All-to-all: before, rank `r` slot `c` holds its piece for rank `c`; after,
/// rank `r` slot `c` holds rank `c`'s piece for `r` (chunk `r` from `c`).
pub fn collective_demo(
    op: Collective,
    ranks: u32,
    comms: &[CommItem],
) -> Result<CollectiveDemo, FieldError> {
    if !(2..=MAX_DEMO_RANKS).contains(&ranks) {
        return Err(field_error(
            "ranks",
            format!("must be 2 to {MAX_DEMO_RANKS}, got {ranks}"),
        ));
    }
    let n = ranks;
    let all: Vec<u32> = (0..n).collect();
    let cell = |chunk: u32, from: Vec<u32>| Some(ChunkCell { chunk, from });
    let grid = |f: &dyn Fn(u32, u32) -> Option<ChunkCell>| -> Vec<Vec<Option<ChunkCell>>> {
        (0..n).map(|r| (0..n).map(|c| f(r, c)).collect()).collect()
    };
    let (before, after) = match op {
        Collective::AllReduce => (
            grid(&|r, c| cell(c, vec![r])),
            grid(&|_, c| cell(c, all.clone())),
        ),
        Collective::ReduceScatter => (
            grid(&|r, c| cell(c, vec![r])),
            grid(&|r, c| if r == c { cell(c, all.clone()) } else { None }),
        ),
        Collective::AllGather => (
            grid(&|r, c| if r == c { cell(c, vec![r]) } else { None }),
            grid(&|_, c| cell(c, vec![c])),
        ),
        Collective::AllToAll => (
            grid(&|r, c| cell(c, vec![r])),
            grid(&|r, c| cell(r, vec![c])),
        ),
        Collective::Broadcast => (
            grid(&|r, c| if r == 0 { cell(c, vec![0]) } else { None }),
            grid(&|_, c| cell(c, vec![0])),
        ),
        Collective::Reduce => (
            grid(&|r, c| cell(c, vec![r])),
            grid(&|r, c| if r == 0 { cell(c, all.clone()) } else { None }),
        ),
        Collective::SendRecv => (
            grid(&|r, c| if r == 0 { cell(c, vec![0]) } else { None }),
            grid(&|r, c| if r <= 1 { cell(c, vec![0]) } else { None }),
        ),
    };
    let uses = comms
        .iter()
        .filter(|i| i.op == op)
        .map(|i| {
            let per_call = i.message_bytes * op.busbw_factor(i.ranks);
            CollectiveUse {
                purpose: i.purpose,
                group: i.group,
                ranks: i.ranks,
                domain: i.domain,
                message_bytes: i.message_bytes,
                bytes_sent_per_rank_per_call: per_call,
                calls_per_step: i.calls_per_step,
                bytes_sent_per_rank_per_step: per_call * i.calls_per_step,
            }
        })
        .collect();
    Ok(CollectiveDemo {
        op,
        ranks,
        before,
        after,
        busbw_factor: op.busbw_factor(u64::from(n)),
        uses,
    })
}

/// The article's four collectives on four ranks, each with the current layout's uses.
pub fn collective_figure(
    scenario: &Scenario,
    model: &ModelSpec,
    options: &CostOptions,
) -> Vec<CollectiveDemo> {
    let comms = layout_comms(scenario, model, options);
    DEMO_COLLECTIVES
        .iter()
        .filter_map(|&op| collective_demo(op, 4, &comms).ok())
        .collect()
}

/// Every communication item of the scenario's layout.
fn layout_comms(scenario: &Scenario, model: &ModelSpec, options: &CostOptions) -> Vec<CommItem> {
    let step = StepModel::for_scenario(model, scenario, options.clone());
    let placement = step.placement(&scenario.layout);
    step.step_comms(&scenario.layout, &placement)
        .iter()
        .copied()
        .collect()
}
