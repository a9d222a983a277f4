//! Where each parallel group of a layout lands on the cluster: which ranks it
//! holds, how many of them share a node, and so which link its traffic crosses.
//!
//! Ranks are numbered in a configurable group order, fastest-varying first.
//! The default is Megatron-LM's `tp-cp-ep-dp-pp`: TP groups are consecutive
//! ranks, so with TP ≤ GPUs per node they stay on NVLink. The MoE layers regroup
//! each stage's `tp × cp × dp` ranks into expert-TP × EP × expert-DP
//! ([`crate::parallel::fold`], Megatron Core's MoE parallel folding), so EP has no axis of its own.

use serde::{Deserialize, Serialize};

use crate::input::layout::Layout;
use crate::parallel::fold::{ExpertGrid, StageSpace};

/// A communication group of a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// Tensor-parallel group (per-layer all-reduces or all-gather/reduce-scatter).
    Tp,
    /// Context-parallel group (ring exchange of K/V).
    Cp,
    /// Expert-parallel group (token all-to-all), carved from a stage's `tp × cp × dp`
    /// ranks after the expert-TP group ([`crate::parallel::fold`]).
    Ep,
    /// Data-parallel group proper.
    Dp,
    /// Pipeline group (point-to-point between neighbouring stages).
    Pp,
    /// `dp × cp` ranks that hold the same dense weights: dense gradient reduction
    /// and ZeRO sharding run over it (Megatron's data-parallel-with-context group).
    DpCp,
    /// `tp·cp·dp / (expert_tp·ep)` ranks that hold the same experts: expert gradient
    /// reduction and expert ZeRO sharding.
    ExpertDp,
    /// Expert-tensor-parallel group: the ranks one routed expert's FFN is split over
    /// (the fastest part of a stage's `tp × cp × dp` ranks; the TP group when expert-TP = TP).
    ExpertTp,
}

impl GroupKind {
    /// Every group, in display order.
    pub const ALL: [GroupKind; 8] = [
        GroupKind::Tp,
        GroupKind::Cp,
        GroupKind::Ep,
        GroupKind::Dp,
        GroupKind::Pp,
        GroupKind::DpCp,
        GroupKind::ExpertDp,
        GroupKind::ExpertTp,
    ];

    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            GroupKind::Tp => "tp",
            GroupKind::Cp => "cp",
            GroupKind::Ep => "ep",
            GroupKind::Dp => "dp",
            GroupKind::Pp => "pp",
            GroupKind::DpCp => "dp_cp",
            GroupKind::ExpertDp => "expert_dp",
            GroupKind::ExpertTp => "expert_tp",
        }
    }

    /// Position in [`GroupKind::ALL`], for fixed-size arrays indexed by group.
    pub fn index(self) -> usize {
        match self {
            GroupKind::Tp => 0,
            GroupKind::Cp => 1,
            GroupKind::Ep => 2,
            GroupKind::Dp => 3,
            GroupKind::Pp => 4,
            GroupKind::DpCp => 5,
            GroupKind::ExpertDp => 6,
            GroupKind::ExpertTp => 7,
        }
    }
}

/// One of the four axes that multiply to the world size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Tensor parallel.
    Tp,
    /// Context parallel.
    Cp,
    /// Data parallel.
    Dp,
    /// Pipeline parallel.
    Pp,
}

/// Order in which ranks are numbered, fastest-varying axis first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RankOrder(pub [Axis; 4]);

impl Default for RankOrder {
    /// Megatron-LM's `tp-cp-ep-dp-pp` (EP folds into cp × dp).
    fn default() -> Self {
        RankOrder([Axis::Tp, Axis::Cp, Axis::Dp, Axis::Pp])
    }
}

impl RankOrder {
    /// Parses an order like `tp-cp-dp-pp` (an `ep` entry is accepted and ignored,
    /// since EP folds into cp × dp). Every one of tp, cp, dp, pp must appear once.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut axes = Vec::with_capacity(4);
        for part in text.split(['-', ',', ' ']).filter(|p| !p.is_empty()) {
            let axis = match part.to_ascii_lowercase().as_str() {
                "tp" => Axis::Tp,
                "cp" => Axis::Cp,
                "dp" => Axis::Dp,
                "pp" => Axis::Pp,
                "ep" => continue,
                other => return Err(format!("rank order: unknown axis `{other}`")),
            };
            if axes.contains(&axis) {
                return Err(format!("rank order: axis `{part}` appears twice"));
            }
            axes.push(axis);
        }
        match <[Axis; 4]>::try_from(axes) {
            Ok(order) => Ok(RankOrder(order)),
            Err(_) => Err("rank order: must name each of tp, cp, dp, pp once".to_string()),
        }
    }

    /// Rank stride of each axis for these sizes: `[tp, cp, dp, pp]` strides.
    pub fn strides(&self, tp: u64, cp: u64, dp: u64, pp: u64) -> AxisStrides {
        let mut stride = 1u64;
        let mut out = AxisStrides {
            tp: 1,
            cp: 1,
            dp: 1,
            pp: 1,
        };
        for axis in self.0 {
            let size = match axis {
                Axis::Tp => {
                    out.tp = stride;
                    tp
                }
                Axis::Cp => {
                    out.cp = stride;
                    cp
                }
                Axis::Dp => {
                    out.dp = stride;
                    dp
                }
                Axis::Pp => {
                    out.pp = stride;
                    pp
                }
            };
            stride = stride.saturating_mul(size.max(1));
        }
        out
    }
}

/// Rank distance between neighbours along each axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxisStrides {
    /// Tensor-parallel stride.
    pub tp: u64,
    /// Context-parallel stride.
    pub cp: u64,
    /// Data-parallel stride.
    pub dp: u64,
    /// Pipeline stride.
    pub pp: u64,
}

/// Which link a group's traffic crosses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// A single rank: no traffic.
    Local,
    /// All members in one node (NVLink/NVSwitch or PCIe).
    IntraNode,
    /// Every member on a different node (network only).
    InterNode,
    /// Several members per node over several nodes: a two-level collective.
    Hierarchical,
}

impl Domain {
    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            Domain::Local => "local",
            Domain::IntraNode => "intra_node",
            Domain::InterNode => "inter_node",
            Domain::Hierarchical => "hierarchical",
        }
    }
}

/// Where one group lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupPlacement {
    /// Which group.
    pub kind: GroupKind,
    /// Members.
    pub size: u64,
    /// Members that share a node (the group containing rank 0; groups are congruent).
    pub per_node: u64,
    /// Nodes the group spans: `ceil(size / per_node)`.
    pub nodes: u64,
    /// The link its traffic crosses.
    pub domain: Domain,
}

impl GroupPlacement {
    /// Places a group given by `(stride, size)` factors on nodes of `gpus_per_node`.
    ///
    /// Members of the group through rank 0 are `Σ kᵢ·strideᵢ`, `0 ≤ kᵢ < sizeᵢ`;
    /// node 0 holds the members below `gpus_per_node`. Only factors with a
    /// stride below a node contribute, so the count visits at most
    /// `gpus_per_node²` combinations and never allocates.
    pub fn from_factors(kind: GroupKind, factors: &[(u64, u64)], gpus_per_node: u64) -> Self {
        let size: u64 = factors
            .iter()
            .map(|&(_, n)| n.max(1))
            .fold(1u64, |a, n| a.saturating_mul(n));
        let per_node = count_below(factors, gpus_per_node.max(1));
        Self::from_count(kind, size, per_node)
    }

    /// A group of `size` members, `per_node` of them (clamped to `1..=size`) on the node of
    /// rank 0; groups are congruent.
    pub fn from_count(kind: GroupKind, size: u64, per_node: u64) -> Self {
        let size = size.max(1);
        let per_node = per_node.clamp(1, size);
        let nodes = size.div_ceil(per_node);
        let domain = if size <= 1 {
            Domain::Local
        } else if nodes <= 1 {
            Domain::IntraNode
        } else if per_node <= 1 {
            Domain::InterNode
        } else {
            Domain::Hierarchical
        };
        GroupPlacement {
            kind,
            size,
            per_node,
            nodes,
            domain,
        }
    }

    /// True when the group's traffic leaves a node.
    pub fn crosses_nodes(&self) -> bool {
        matches!(self.domain, Domain::InterNode | Domain::Hierarchical)
    }
}

/// Members `Σ kᵢ·sᵢ < limit` (one node's worth) of a group given by factors.
fn count_below(factors: &[(u64, u64)], limit: u64) -> u64 {
    fn rec(factors: &[(u64, u64)], offset: u64, limit: u64) -> u64 {
        match factors.split_first() {
            None => u64::from(offset < limit),
            Some((&(stride, size), rest)) => {
                let mut count = 0;
                let mut k = 0;
                while k < size.max(1) {
                    let o = offset.saturating_add(k.saturating_mul(stride));
                    if o >= limit {
                        break;
                    }
                    count += rec(rest, o, limit);
                    if stride == 0 {
                        break;
                    }
                    k += 1;
                }
                count
            }
        }
    }
    rec(factors, 0, limit)
}

/// Placement of every group of a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Indexed by [`GroupKind::index`].
    pub groups: [GroupPlacement; 8],
}

impl Placement {
    /// Places `layout`'s groups on nodes of `gpus_per_node` GPUs in `order`.
    pub fn of(layout: &Layout, gpus_per_node: u32, order: RankOrder) -> Self {
        Self::of_sizes(
            u64::from(layout.tp),
            u64::from(layout.cp),
            u64::from(layout.dp),
            u64::from(layout.pp),
            (u64::from(layout.expert_tp), u64::from(layout.ep)),
            u64::from(gpus_per_node),
            order,
        )
    }

    /// As [`Placement::of`] from bare group sizes (the mesh search's hot path); the MoE
    /// layers' `(expert_tp, ep)` fold over the stage's ranks ([`crate::parallel::fold`]).
    pub fn of_sizes(
        tp: u64,
        cp: u64,
        dp: u64,
        pp: u64,
        (etp, ep): (u64, u64),
        gpus_per_node: u64,
        order: RankOrder,
    ) -> Self {
        let s = order.strides(tp, cp, dp, pp);
        let g = gpus_per_node;
        let (fast, slow) = if s.cp <= s.dp {
            ((s.cp, cp), (s.dp, dp))
        } else {
            ((s.dp, dp), (s.cp, cp))
        };
        // The MoE layers' groups: expert-TP, then EP, then expert-DP, fastest first in
        // the stage's tp × cp × dp ranks (Megatron Core's expert rank generator).
        let grid = ExpertGrid::of_sizes(tp, cp, dp, etp, ep);
        let [etp_g, ep_g, edp_g] = StageSpace::new(&s, tp, cp, dp).expert_groups(&grid, g);
        let p = |kind, f: &[(u64, u64)]| GroupPlacement::from_factors(kind, f, g);
        Placement {
            groups: [
                p(GroupKind::Tp, &[(s.tp, tp)]),
                p(GroupKind::Cp, &[(s.cp, cp)]),
                ep_g,
                p(GroupKind::Dp, &[(s.dp, dp)]),
                p(GroupKind::Pp, &[(s.pp, pp)]),
                p(GroupKind::DpCp, &[fast, slow]),
                edp_g,
                etp_g,
            ],
        }
    }

    /// The placement of one group.
    pub fn group(&self, kind: GroupKind) -> &GroupPlacement {
        &self.groups[kind.index()]
    }

    /// Groups whose traffic should stay in a node but leaves it: the TP group,
    /// whose per-layer collectives the article places on the fastest domain.
    pub fn warnings(&self, gpus_per_node: u32) -> Vec<PlacementWarning> {
        let g = self.group(GroupKind::Tp);
        if !g.crosses_nodes() {
            return Vec::new();
        }
        let why = if g.size > u64::from(gpus_per_node) {
            "is larger than a node"
        } else {
            "is numbered across nodes by the rank order"
        };
        vec![PlacementWarning {
            kind: GroupKind::Tp,
            rule: "tp_spans_nodes",
            message: format!(
                "TP group of {} {why}: it spans {} nodes ({} per node), so every layer's collectives cross the network",
                g.size, g.nodes, g.per_node
            ),
        }]
    }
}

/// A group whose placement costs bandwidth.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementWarning {
    /// Which group.
    pub kind: GroupKind,
    /// Machine key (`tp_spans_nodes`, ...).
    pub rule: &'static str,
    /// Sentence for a person.
    pub message: String,
}

/// A rank's coordinate on every axis of a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RankCoords {
    /// Index in its TP group.
    pub tp: u64,
    /// Index in its CP group.
    pub cp: u64,
    /// Index in its DP group.
    pub dp: u64,
    /// Pipeline stage.
    pub pp: u64,
    /// Index in its EP group (carved from the stage's `tp × cp × dp` index after expert-TP).
    pub ep: u64,
}

/// Group sizes with their rank strides: converts between ranks and coordinates
/// exactly as [`Placement::of_sizes`] numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankGrid {
    /// Sizes `[tp, cp, dp, pp]`, each at least 1.
    pub sizes: [u64; 4],
    /// The MoE layers' expert-TP × EP × expert-DP split of a stage (`etp = ep = 1`
    /// when the layout's do not divide `tp·cp·dp`).
    pub expert: ExpertGrid,
    /// Rank strides.
    pub strides: AxisStrides,
    /// A stage's `tp × cp × dp` index space, fastest axis first.
    stage: StageSpace,
}

impl RankGrid {
    /// The grid of `layout` numbered in `order`.
    pub fn of(layout: &Layout, order: RankOrder) -> Self {
        let (tp, cp, dp, pp) = (
            u64::from(layout.tp.max(1)),
            u64::from(layout.cp.max(1)),
            u64::from(layout.dp.max(1)),
            u64::from(layout.pp.max(1)),
        );
        let strides = order.strides(tp, cp, dp, pp);
        RankGrid {
            sizes: [tp, cp, dp, pp],
            expert: ExpertGrid::of(layout),
            strides,
            stage: StageSpace::new(&strides, tp, cp, dp),
        }
    }

    /// Ranks of the layout.
    pub fn world(&self) -> u64 {
        self.sizes.iter().fold(1u64, |a, &n| a.saturating_mul(n))
    }

    /// Index in the stage's `tp × cp × dp` space, fastest axis first.
    fn combined(&self, c: &RankCoords) -> u64 {
        self.stage.combine([c.tp, c.cp, c.dp])
    }

    /// Coordinates of `rank`.
    pub fn coords(&self, rank: u64) -> RankCoords {
        let s = &self.strides;
        let [tp, cp, dp, pp] = self.sizes;
        let mut c = RankCoords {
            tp: (rank / s.tp) % tp,
            cp: (rank / s.cp) % cp,
            dp: (rank / s.dp) % dp,
            pp: (rank / s.pp) % pp,
            ep: 0,
        };
        c.ep = (self.combined(&c) / self.expert.etp) % self.expert.ep;
        c
    }

    /// Rank of coordinates (the `ep` field is ignored: it follows from tp, cp and dp).
    pub fn rank(&self, c: &RankCoords) -> u64 {
        let s = &self.strides;
        [(c.tp, s.tp), (c.cp, s.cp), (c.dp, s.dp), (c.pp, s.pp)]
            .iter()
            .fold(0u64, |a, &(x, st)| a.saturating_add(x.saturating_mul(st)))
    }

    /// Ordinal of the group of `kind` through a rank with coordinates `c`, in
    /// `0..world/size`: the mixed-radix number of the coordinates the group does not vary.
    pub fn group_ordinal(&self, kind: GroupKind, c: &RankCoords) -> u64 {
        let [tp, cp, dp, pp] = self.sizes;
        let ExpertGrid { etp, ep, edp } = self.expert;
        let comb = self.combined(c);
        let digits: [(u64, u64); 3] = match kind {
            GroupKind::Tp => [(c.cp, cp), (c.dp, dp), (c.pp, pp)],
            GroupKind::Cp => [(c.tp, tp), (c.dp, dp), (c.pp, pp)],
            GroupKind::Dp => [(c.tp, tp), (c.cp, cp), (c.pp, pp)],
            GroupKind::Pp => [(c.tp, tp), (c.cp, cp), (c.dp, dp)],
            GroupKind::Ep => [(comb % etp, etp), (comb / (etp * ep), edp), (c.pp, pp)],
            GroupKind::DpCp => [(c.tp, tp), (c.pp, pp), (0, 1)],
            GroupKind::ExpertDp => [(comb % (etp * ep), etp * ep), (c.pp, pp), (0, 1)],
            GroupKind::ExpertTp => [(comb / etp, ep * edp), (c.pp, pp), (0, 1)],
        };
        let mut ordinal = 0;
        let mut radix = 1;
        for (digit, size) in digits {
            ordinal = digit.saturating_mul(radix).saturating_add(ordinal);
            radix = radix.saturating_mul(size.max(1));
        }
        ordinal
    }

    /// The next member of `kind`'s group after `rank` (ring order, wrapping), or
    /// `None` for the last pipeline stage (PP is a chain, not a ring) and 1-member groups.
    pub fn next_in_group(&self, kind: GroupKind, rank: u64) -> Option<u64> {
        let c = self.coords(rank);
        let [tp, cp, dp, pp] = self.sizes;
        let ExpertGrid { etp, ep, edp } = self.expert;
        let mut n = c;
        let via_combined = |comb: u64, n: &mut RankCoords| {
            let [t, k, d] = self.stage.split(comb);
            n.tp = t;
            n.cp = k;
            n.dp = d;
        };
        let comb = self.combined(&c);
        let size = match kind {
            GroupKind::Tp => {
                n.tp = (c.tp + 1) % tp;
                tp
            }
            GroupKind::Cp => {
                n.cp = (c.cp + 1) % cp;
                cp
            }
            GroupKind::Dp => {
                n.dp = (c.dp + 1) % dp;
                dp
            }
            GroupKind::Pp => {
                if c.pp + 1 >= pp {
                    return None;
                }
                n.pp = c.pp + 1;
                pp
            }
            GroupKind::Ep => {
                let e = (comb / etp) % ep;
                let base = comb - e * etp;
                via_combined(base + ((e + 1) % ep) * etp, &mut n);
                ep
            }
            GroupKind::DpCp => {
                // The cp × dp ranks with this tp index, the faster of cp and dp first.
                if self.strides.cp <= self.strides.dp {
                    let k = (c.cp + cp * c.dp + 1) % (cp * dp);
                    (n.cp, n.dp) = (k % cp, k / cp);
                } else {
                    let k = (c.dp + dp * c.cp + 1) % (cp * dp);
                    (n.dp, n.cp) = (k % dp, k / dp);
                }
                cp * dp
            }
            GroupKind::ExpertDp => {
                via_combined((comb + etp * ep) % (etp * ep * edp), &mut n);
                edp
            }
            GroupKind::ExpertTp => {
                let base = comb - comb % etp;
                via_combined(base + (comb % etp + 1) % etp, &mut n);
                etp
            }
        };
        if size <= 1 {
            return None;
        }
        Some(self.rank(&n))
    }
}
