//! Megatron Core's MoE parallel folding: how the MoE layers regroup the ranks of a
//! pipeline stage into expert-tensor, expert and expert-data-parallel groups, where
//! those groups land, and the rule that makes the regrouping possible.
//!
//! Liu et al. 2025, "MoE Parallel Folding" (arXiv 2504.14960) §3: attention layers use
//! TP × CP × DP × PP, MoE layers ETP × EP × EDP × PP over the same ranks, so ETP × EP
//! must divide TP × CP × DP and EDP = TP·CP·DP / (ETP·EP). Megatron-LM builds the
//! expert groups with a second rank generator over the same ranks
//! (megatron/core/parallel_state.py, `initialize_model_parallel`:
//! `expert_data_parallel_size = world_size // (expert_tensor_parallel_size ×
//! expert_model_parallel_size × pipeline_model_parallel_size)` and
//! `RankGenerator(tp=expert_tensor_parallel_size, ep=expert_model_parallel_size,
//! dp=expert_data_parallel_size, pp=pp, cp=1, order=order)`): inside a stage the expert
//! ranks are numbered ETP fastest, then EP, then EDP, over the stage's tp·cp·dp ranks in
//! rank order. So with ETP = 1 the EP group takes the TP ranks first, and with ETP = TP
//! the ETP group is the TP group and EP folds into cp × dp only.

use crate::input::layout::Layout;
use crate::parallel::topology::{AxisStrides, GroupKind, GroupPlacement};

/// Ranks of a stage that hold the same experts: `EDP = tp·cp·dp / (expert_tp·ep)`, at
/// least 1 (unvalidated layouts may not divide; validation reports it).
pub fn expert_dp_ranks(layout: &Layout) -> f64 {
    let stage =
        f64::from(layout.tp.max(1)) * f64::from(layout.cp.max(1)) * f64::from(layout.dp.max(1));
    (stage / (f64::from(layout.expert_tp.max(1)) * f64::from(layout.ep.max(1)))).max(1.0)
}

/// The expert-side sizes of a stage, each at least 1, with `etp · ep · edp = tp·cp·dp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpertGrid {
    /// Expert tensor parallel.
    pub etp: u64,
    /// Expert parallel.
    pub ep: u64,
    /// Expert data parallel.
    pub edp: u64,
}

impl ExpertGrid {
    /// The grid for stage sizes `tp·cp·dp` and the requested `etp`, `ep`; a request that
    /// does not divide the stage (an unvalidated layout) falls back to `etp = ep = 1`.
    pub fn of_sizes(tp: u64, cp: u64, dp: u64, etp: u64, ep: u64) -> Self {
        let stage = tp
            .max(1)
            .saturating_mul(cp.max(1))
            .saturating_mul(dp.max(1));
        let fold = etp.max(1).saturating_mul(ep.max(1));
        if stage.is_multiple_of(fold) {
            ExpertGrid {
                etp: etp.max(1),
                ep: ep.max(1),
                edp: stage / fold,
            }
        } else {
            ExpertGrid {
                etp: 1,
                ep: 1,
                edp: stage,
            }
        }
    }

    /// The grid of `layout`.
    pub fn of(layout: &Layout) -> Self {
        Self::of_sizes(
            u64::from(layout.tp),
            u64::from(layout.cp),
            u64::from(layout.dp),
            u64::from(layout.expert_tp),
            u64::from(layout.ep),
        )
    }

    /// Ranks of one stage: `tp·cp·dp`.
    pub fn stage_ranks(&self) -> u64 {
        self.etp.saturating_mul(self.ep).saturating_mul(self.edp)
    }
}

/// The `tp × cp × dp` index space of one stage, its axes ordered by rank stride
/// (fastest first): the space the expert rank generator numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageSpace {
    /// `(stride, size, axis)` fastest first; axis 0 = tp, 1 = cp, 2 = dp.
    axes: [(u64, u64, usize); 3],
}

impl StageSpace {
    /// The space of sizes `tp`, `cp`, `dp` with the rank order's `strides`.
    pub fn new(strides: &AxisStrides, tp: u64, cp: u64, dp: u64) -> Self {
        let mut axes = [
            (strides.tp, tp.max(1), 0),
            (strides.cp, cp.max(1), 1),
            (strides.dp, dp.max(1), 2),
        ];
        // Stable, so equal strides (size-1 axes) keep tp-cp-dp order.
        axes.sort_by_key(|a| a.0);
        StageSpace { axes }
    }

    /// Rank offset of stage index `c` (digits fastest axis first). Strictly increasing in
    /// `c`: each axis's stride is at least the previous stride times its size.
    pub fn rank(&self, c: u64) -> u64 {
        let mut rest = c;
        let mut rank = 0u64;
        for (stride, size, _) in self.axes {
            rank = rank.saturating_add((rest % size).saturating_mul(stride));
            rest /= size;
        }
        rank
    }

    /// Stage index of the coordinates `[tp, cp, dp]`.
    pub fn combine(&self, coords: [u64; 3]) -> u64 {
        let mut c = 0u64;
        let mut radix = 1u64;
        for (_, size, axis) in self.axes {
            c = c.saturating_add(coords[axis].saturating_mul(radix));
            radix = radix.saturating_mul(size);
        }
        c
    }

    /// Coordinates `[tp, cp, dp]` of stage index `c`.
    pub fn split(&self, c: u64) -> [u64; 3] {
        let mut out = [0u64; 3];
        let mut rest = c;
        for (_, size, axis) in self.axes {
            out[axis] = rest % size;
            rest /= size;
        }
        out
    }

    /// Placement of the group through rank 0 whose members are stage indices
    /// `k · step`, `0 ≤ k < size`, on nodes of `gpus_per_node`. Members are counted in
    /// rank order until one leaves node 0, so at most `gpus_per_node + 1` are visited.
    pub fn place(
        &self,
        kind: GroupKind,
        step: u64,
        size: u64,
        gpus_per_node: u64,
    ) -> GroupPlacement {
        let g = gpus_per_node.max(1);
        let mut per_node = 0u64;
        let mut k = 0u64;
        while k < size.max(1) && self.rank(k.saturating_mul(step)) < g {
            per_node += 1;
            k += 1;
        }
        GroupPlacement::from_count(kind, size.max(1), per_node)
    }

    /// Placements of the expert-tensor, expert and expert-data-parallel groups of `grid`.
    pub fn expert_groups(&self, grid: &ExpertGrid, gpus_per_node: u64) -> [GroupPlacement; 3] {
        [
            self.place(GroupKind::ExpertTp, 1, grid.etp, gpus_per_node),
            self.place(GroupKind::Ep, grid.etp, grid.ep, gpus_per_node),
            self.place(
                GroupKind::ExpertDp,
                grid.etp.saturating_mul(grid.ep),
                grid.edp,
                gpus_per_node,
            ),
        ]
    }
}
