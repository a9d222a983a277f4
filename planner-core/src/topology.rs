//! Where each parallel group of a layout lands on the cluster: which ranks it
//! holds, how many of them share a node, and so which link its traffic crosses.
//!
//! Ranks are numbered in a configurable group order, fastest-varying first.
//! The default is Megatron-LM's `tp-cp-ep-dp-pp`: TP groups are consecutive
//! ranks, so with TP ≤ GPUs per node they stay on NVLink. Expert parallelism
//! folds into the `cp × dp` ranks (Megatron Core's expert rank generator), so
//! it has no axis of its own.

use serde::{Deserialize, Serialize};

use crate::layout::Layout;

/// A communication group of a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// Tensor-parallel group (per-layer all-reduces or all-gather/reduce-scatter).
    Tp,
    /// Context-parallel group (ring exchange of K/V).
    Cp,
    /// Expert-parallel group (token all-to-all), carved from the `cp × dp` ranks.
    Ep,
    /// Data-parallel group proper.
    Dp,
    /// Pipeline group (point-to-point between neighbouring stages).
    Pp,
    /// `dp × cp` ranks that hold the same dense weights: dense gradient reduction
    /// and ZeRO sharding run over it (Megatron's data-parallel-with-context group).
    DpCp,
    /// `dp × cp / ep` ranks that hold the same experts: expert gradient reduction.
    ExpertDp,
}

impl GroupKind {
    /// Every group, in display order.
    pub const ALL: [GroupKind; 7] = [
        GroupKind::Tp,
        GroupKind::Cp,
        GroupKind::Ep,
        GroupKind::Dp,
        GroupKind::Pp,
        GroupKind::DpCp,
        GroupKind::ExpertDp,
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
        let g = gpus_per_node.max(1);
        let per_node = count_below(factors, g).clamp(1, size);
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

/// A group given by two `(stride, size)` factors.
type Factors2 = [(u64, u64); 2];

/// Placement of every group of a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Indexed by [`GroupKind::index`].
    pub groups: [GroupPlacement; 7],
}

impl Placement {
    /// Places `layout`'s groups on nodes of `gpus_per_node` GPUs in `order`.
    pub fn of(layout: &Layout, gpus_per_node: u32, order: RankOrder) -> Self {
        Self::of_sizes(
            u64::from(layout.tp),
            u64::from(layout.cp),
            u64::from(layout.dp),
            u64::from(layout.pp),
            u64::from(layout.ep),
            u64::from(gpus_per_node),
            order,
        )
    }

    /// As [`Placement::of`] from bare group sizes (the mesh search's hot path).
    pub fn of_sizes(
        tp: u64,
        cp: u64,
        dp: u64,
        pp: u64,
        ep: u64,
        gpus_per_node: u64,
        order: RankOrder,
    ) -> Self {
        let s = order.strides(tp, cp, dp, pp);
        let g = gpus_per_node;
        // EP occupies the fastest part of the cp × dp index space; the rest of
        // that space is the expert data-parallel group.
        let (fast, slow) = if s.cp <= s.dp {
            ((s.cp, cp), (s.dp, dp))
        } else {
            ((s.dp, dp), (s.cp, cp))
        };
        let ep = ep.max(1);
        let (ep_factors, edp_factors): (Factors2, Factors2) = if ep <= fast.1 {
            (
                [(fast.0, ep), (0, 1)],
                [(fast.0.saturating_mul(ep), fast.1 / ep), slow],
            )
        } else {
            let over = ep / fast.1.max(1);
            (
                [fast, (slow.0, over)],
                [(slow.0.saturating_mul(over), slow.1 / over.max(1)), (0, 1)],
            )
        };
        let p = |kind, f: &[(u64, u64)]| GroupPlacement::from_factors(kind, f, g);
        Placement {
            groups: [
                p(GroupKind::Tp, &[(s.tp, tp)]),
                p(GroupKind::Cp, &[(s.cp, cp)]),
                p(GroupKind::Ep, &ep_factors),
                p(GroupKind::Dp, &[(s.dp, dp)]),
                p(GroupKind::Pp, &[(s.pp, pp)]),
                p(GroupKind::DpCp, &[fast, slow]),
                p(GroupKind::ExpertDp, &edp_factors),
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
