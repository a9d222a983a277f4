//! The topology map: the nodes × GPUs figure of a layout, with every GPU's
//! coordinates and group ordinals and the traffic of each group. Placement
//! itself lives in [`crate::parallel::topology`]; this module only draws it.

use serde::{Deserialize, Serialize};

use crate::parallel::topology::{Domain, GroupKind, GroupPlacement, RankCoords, RankGrid};

/// Most nodes the topology map draws; larger clusters are truncated and say so.
pub const MAX_DRAWN_NODES: u32 = 64;
/// Most GPU slots drawn per node; larger nodes are truncated and say so.
pub const MAX_DRAWN_SLOTS: u32 = 64;

/// One GPU slot of the drawn cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuCell {
    /// Node index.
    pub node: u32,
    /// Slot inside the node (local rank).
    pub slot: u32,
    /// Global rank, `node × gpus_per_node + slot`; `None` when the layout leaves this GPU idle.
    pub rank: Option<u64>,
    /// Coordinates on each axis (`None` when idle).
    pub coords: Option<RankCoords>,
    /// Ordinal of the group of each kind this GPU belongs to, indexed by
    /// [`GroupKind::index`] (colour index in the figure); empty when idle.
    pub groups: Vec<u64>,
}

/// Where one group kind runs and the traffic to draw for it.
///
/// Gradient and ZeRO traffic runs over `dp_cp` (the same ranks as `dp` when
/// cp = 1), so the `dp` entry itself carries no bytes; draw DP/FSDP traffic from `dp_cp`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupTraffic {
    /// Which group.
    pub kind: GroupKind,
    /// Members, per node, nodes spanned and the link.
    pub placement: GroupPlacement,
    /// Groups of this kind in the layout.
    pub groups: u64,
    /// The group leaves a node (drawn highlighted when it should not).
    pub crosses_nodes: bool,
    /// Bytes each rank sends per step in this group (nccl-tests bus bytes, from [`crate::time::comms`]).
    pub bus_bytes_per_step: f64,
    /// Of those, bytes over the intra-node link ([`TopologyMap::intra_node_link`]).
    pub intra_node_bytes_per_step: f64,
    /// Of those, bytes over the network.
    pub inter_node_bytes_per_step: f64,
    /// What this group's collectives are for.
    pub purposes: Vec<crate::time::comms::Purpose>,
    /// Every member sends to every other (all-to-all) rather than to its ring neighbour.
    pub all_pairs: bool,
    /// Distinct drawn node pairs `(a, b)`, `a < b`, joined by a ring (or chain) step of this group.
    pub inter_node_edges: Vec<(u32, u32)>,
    /// Drawn nodes where members of one group exchange data inside the node.
    pub intra_node_nodes: Vec<u32>,
}

/// The nodes × GPUs figure of a layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopologyMap {
    /// Nodes in the cluster.
    pub nodes: u32,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// What joins a node's GPUs, as the views name it ("NVLink", "PCIe", "Infinity Fabric";
    /// input/intra_node_link.rs): the link intra-node traffic is drawn on.
    pub intra_node_link: String,
    /// Ranks the layout uses (`dp·tp·pp·cp`).
    pub world_size: u64,
    /// Nodes drawn (at most [`MAX_DRAWN_NODES`]).
    pub drawn_nodes: u32,
    /// Why fewer nodes are drawn than exist, or why ranks do not fit.
    pub note: Option<String>,
    /// Every drawn GPU, node-major (at most [`MAX_DRAWN_SLOTS`] per node).
    pub gpus: Vec<GpuCell>,
    /// Per group kind with traffic or more than one member, in [`GroupKind::ALL`] order.
    pub traffic: Vec<GroupTraffic>,
    /// Groups that leave a node when they should not.
    pub warnings: Vec<TopologyWarning>,
}

/// A group drawn highlighted because it leaves a node when it should not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopologyWarning {
    /// Which group.
    pub kind: GroupKind,
    /// Machine key (`tp_spans_nodes`).
    pub rule: String,
    /// Sentence for a person.
    pub message: String,
}

/// Bytes a call of `op` of `bytes` puts on the intra-node and inter-node links
/// per rank, for a group placed as `g` (the two-level split of
/// [`crate::time::collectives::CommModel::time_s`]).
pub fn domain_bytes(
    op: crate::time::collectives::Collective,
    bytes: f64,
    g: &GroupPlacement,
) -> (f64, f64) {
    use crate::time::collectives::Collective as C;
    let f = |o: C, n: u64| o.busbw_factor(n);
    match g.domain {
        Domain::Local => (0.0, 0.0),
        Domain::IntraNode => (bytes * f(op, g.size), 0.0),
        Domain::InterNode => (0.0, bytes * f(op, g.size)),
        Domain::Hierarchical => {
            let (k, m) = (g.per_node, g.nodes);
            let kf = k as f64;
            match op {
                // Intra reduce-scatter + inter all-reduce of bytes/k + intra all-gather.
                C::AllReduce => (
                    2.0 * bytes * f(C::ReduceScatter, k),
                    bytes / kf * f(C::AllReduce, m),
                ),
                C::ReduceScatter | C::AllGather => (bytes * f(op, k), bytes / kf * f(op, m)),
                C::AllToAll => {
                    let n = g.size as f64;
                    (bytes * (kf - 1.0) / n, bytes * (n - kf) / n)
                }
                C::Broadcast | C::Reduce | C::SendRecv => (0.0, bytes * f(op, g.size)),
            }
        }
    }
}

/// The nodes × GPUs figure for `scenario`'s layout: each GPU's coordinates and
/// group ordinals, where each group runs, its bytes per step and the node
/// pairs its traffic joins. Draws at most [`MAX_DRAWN_NODES`] nodes.
pub fn topology_map(
    scenario: &crate::input::scenario::Scenario,
    model: &crate::input::model::ModelSpec,
    options: &crate::time::cost::CostOptions,
) -> TopologyMap {
    let layout = &scenario.layout;
    let gpn = scenario.cluster.gpus_per_node.max(1);
    let nodes = scenario.cluster.nodes;
    let grid = RankGrid::of(layout, options.rank_order);
    let world = grid.world();
    let step = crate::time::cost::StepModel::for_scenario(model, scenario, options.clone());
    let placement = step.placement(layout);
    let comms = step.step_comms(layout, &placement);

    let drawn_nodes = nodes.min(MAX_DRAWN_NODES);
    let drawn_slots = gpn.min(MAX_DRAWN_SLOTS);
    let mut notes = Vec::new();
    if drawn_nodes < nodes {
        notes.push(format!(
            "showing the first {drawn_nodes} of {nodes} nodes ({} of {} GPUs)",
            u64::from(drawn_nodes) * u64::from(gpn),
            u64::from(nodes) * u64::from(gpn)
        ));
    }
    if drawn_slots < gpn {
        notes.push(format!(
            "showing the first {drawn_slots} of {gpn} GPUs of each node"
        ));
    }
    let cluster_gpus = u64::from(nodes) * u64::from(gpn);
    if world > cluster_gpus {
        notes.push(format!(
            "the layout needs {world} GPUs but the cluster has {cluster_gpus}: ranks beyond it are not drawn"
        ));
    } else if world < cluster_gpus {
        notes.push(format!(
            "the layout uses {world} of {cluster_gpus} GPUs; the rest are idle"
        ));
    }

    let drawn_gpus = u64::from(drawn_nodes) * u64::from(gpn);
    let cells = u64::from(drawn_nodes) * u64::from(drawn_slots);
    let mut gpus = Vec::with_capacity(usize::try_from(cells).unwrap_or(0));
    for node in 0..drawn_nodes {
        for slot in 0..drawn_slots {
            let r = u64::from(node) * u64::from(gpn) + u64::from(slot);
            let used = r < world;
            let coords = used.then(|| grid.coords(r));
            let groups = match &coords {
                Some(c) => GroupKind::ALL
                    .iter()
                    .map(|&k| grid.group_ordinal(k, c))
                    .collect(),
                None => Vec::new(),
            };
            gpus.push(GpuCell {
                node,
                slot,
                rank: used.then_some(r),
                coords,
                groups,
            });
        }
    }

    let node_of = |r: u64| u32::try_from(r / u64::from(gpn)).unwrap_or(u32::MAX);
    let mut traffic = Vec::new();
    for kind in GroupKind::ALL {
        let g = *placement.group(kind);
        let items: Vec<&crate::time::comms::CommItem> =
            comms.iter().filter(|i| i.group == kind).collect();
        if g.size <= 1 && items.is_empty() {
            continue;
        }
        let mut bus = 0.0;
        let mut intra = 0.0;
        let mut inter = 0.0;
        let mut purposes = Vec::new();
        for i in &items {
            bus += i.bus_bytes_per_step;
            let (a, b) = domain_bytes(i.op, i.message_bytes, &g);
            intra += a * i.calls_per_step;
            inter += b * i.calls_per_step;
            if !purposes.contains(&i.purpose) {
                purposes.push(i.purpose);
            }
        }
        let mut edges = Vec::new();
        let mut intra_nodes = Vec::new();
        let limit = world.min(drawn_gpus);
        let drawn = |r: u64| r % u64::from(gpn) < u64::from(drawn_slots);
        for r in (0..limit).filter(|&r| drawn(r)) {
            if let Some(n) = grid.next_in_group(kind, r) {
                let (a, b) = (node_of(r), node_of(n));
                if a == b {
                    intra_nodes.push(a);
                } else if a < drawn_nodes && b < drawn_nodes {
                    edges.push((a.min(b), a.max(b)));
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        intra_nodes.sort_unstable();
        intra_nodes.dedup();
        traffic.push(GroupTraffic {
            kind,
            placement: g,
            groups: world / g.size.max(1),
            crosses_nodes: g.crosses_nodes(),
            bus_bytes_per_step: bus,
            intra_node_bytes_per_step: intra,
            inter_node_bytes_per_step: inter,
            purposes,
            all_pairs: kind == GroupKind::Ep,
            inter_node_edges: edges,
            intra_node_nodes: intra_nodes,
        });
    }

    // TP is the group the article keeps inside a node; other groups crossing
    // nodes are expected and are marked by `crosses_nodes` only.
    let warnings: Vec<TopologyWarning> = placement
        .warnings(gpn)
        .into_iter()
        .map(|w| TopologyWarning {
            kind: w.kind,
            rule: w.rule.to_string(),
            message: w.message,
        })
        .collect();

    TopologyMap {
        nodes,
        gpus_per_node: gpn,
        intra_node_link: scenario.cluster.gpu.intra_node_link().name().to_string(),
        world_size: world,
        drawn_nodes,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
        gpus,
        traffic,
        warnings,
    }
}
