//! Collective operations and their α–β time on one link or across two.
//!
//! Sizes follow nccl-tests (`doc/PERFORMANCE.md`): for all-reduce the buffer,
//! for all-gather and reduce-scatter the full gathered size, for all-to-all the
//! bytes each rank sends in total, for send/recv the message. Bandwidths are
//! *bus* bandwidths: `time = steps·α + bytes·factor(n)/busbw`, so a link's
//! figure and a measured nccl-tests busbw plug into the same formula.

use serde::{Deserialize, Serialize};

use crate::input::calibration::CalibrationSummary;
pub use crate::input::collective::{AlphaBeta, Collective, LinkDomain};
use crate::input::hardware::Cluster;
use crate::input::nccl_node::NcclNode;
use crate::parallel::topology::{Domain, GroupPlacement};
use crate::time::nccl_algo::{nccl_choice, NcclTopo};

/// How a collective's time is priced, in words, for the explanations ([`CommModel::time_s`]:
/// [`Domain::Hierarchical`] runs two levels, [`Domain::InterNode`] the network link alone).
pub const COMM_TIME_ASSUMPTION: &str = "all-reduce, all-gather, reduce-scatter, broadcast and reduce as NCCL 2.30's tuner prices them (time/nccl_algo.rs: Ring, Tree, NVLS, NVLS-Tree or PAT with LL, LL128 or Simple, whichever NCCL picks for the size, node count and ranks per node, on GPUs whose node NCCL describes: input/nccl_node.rs); all-to-all, send/recv, other GPUs (PCIe-only nodes among them) and measured links: α–β with nccl-tests bus-bandwidth factors, each link at the bus bandwidth NCCL measures on it, not its line rate (input/link_efficiency.rs: NVLink 4 at 20.6 of 25 GB/s per link, all-reduce with NVLink SHARP at 480 of 450 GB/s, NVLink 5 at 40.1 of 50, A100's NVLink at 230 of 300, A800's at 20 of 25 per link, MI300X's xGMI at 48 of 64, PCIe at NCCL's count of 24 of 32 GB/s (Gen4 x16) or 48 of 64 (Gen5), a 400 Gb/s NDR NIC at 47 of 50 GB/s, a 200 Gb/s HDR NIC at 24 of 25; the line rate where no figure is cited; a calibration's measured α–β replaces them); two-level when a group has several GPUs on each of several nodes, the network link alone when it has one GPU per node";

/// α–β parameters for every (operation, link), each marked measured or assumed, and the
/// node as NCCL's tuner sees it where NCCL runs the collectives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommModel {
    /// Indexed by [`Collective::index`], then intra/inter.
    pub links: [[AlphaBeta; 2]; 7],
    /// Whether that entry came from a measurement.
    pub measured: [[bool; 2]; 7],
    /// NCCL's view of the node and its links; `None`: α–β only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl: Option<NcclLinks>,
}

/// The node and link rates NCCL's tuner reads ([`crate::time::nccl_algo::NcclTopo`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NcclLinks {
    /// GPU generation, host CPU, NVLS.
    pub node: NcclNode,
    /// NVLink per GPU per direction as NCCL counts it (links × its per-link speed), bytes/s.
    pub nvlink_bytes_per_s: f64,
    /// NIC line rate per GPU per direction, bytes/s.
    pub nic_bytes_per_s: f64,
}

impl NcclLinks {
    /// The tuner's communicator for a group of `per_node` ranks on each of `nodes` nodes.
    pub fn topo(&self, nodes: u64, per_node: u64) -> NcclTopo {
        NcclTopo {
            nodes: nodes.max(1),
            ranks_per_node: per_node.max(1),
            arch: self.node.arch,
            cpu: self.node.cpu,
            nvlink_bytes_per_s: self.nvlink_bytes_per_s,
            nic_bytes_per_s: self.nic_bytes_per_s,
            nvls: self.node.nvls,
            collnet: false,
        }
    }
}

impl CommModel {
    /// Replaces the entries a calibration fitted with its measured α–β.
    pub fn apply_calibration(&mut self, cal: &CalibrationSummary) {
        for l in &cal.links {
            self.set_measured(
                l.op,
                l.domain,
                AlphaBeta {
                    latency_s: l.latency_s,
                    busbw_bytes_per_s: l.busbw_bytes_per_s,
                },
            );
        }
    }

    /// Every operation runs at the bus bandwidth NCCL reaches on the cluster's links: the
    /// link's line rate (the cluster's figure, from the datasheet) × the measured share of
    /// it for that GPU's node and that operation (input/link_efficiency.rs), or the line rate
    /// where no share is cited. Latencies are the cluster's.
    pub fn assumed(cluster: &Cluster) -> Self {
        let traits = cluster.gpu.traits();
        let shares = traits.links;
        let entry = |op: Collective| {
            [
                AlphaBeta {
                    latency_s: cluster.intra_node.latency_s,
                    busbw_bytes_per_s: cluster.intra_node.bytes_per_s
                        * shares.intra_node_share(op).unwrap_or(1.0),
                },
                AlphaBeta {
                    latency_s: cluster.inter_node.latency_s,
                    busbw_bytes_per_s: cluster.inter_node.bytes_per_s
                        * shares.inter_node.unwrap_or(1.0),
                },
            ]
        };
        // NCCL counts NVLink per link at its own speed (20.6 GB/s for NVLink 4,
        // src/graph/topo.h SM90_NVLINK_BW), the ring share of input/link_efficiency.rs; the NIC
        // at its line rate (src/graph/topo.cc, Mbps / 8000).
        let nccl = traits.nccl.map(|node| NcclLinks {
            node,
            nvlink_bytes_per_s: cluster.intra_node.bytes_per_s
                * shares
                    .intra_node_share(Collective::AllGather)
                    .unwrap_or(1.0),
            nic_bytes_per_s: cluster.inter_node.bytes_per_s,
        });
        CommModel {
            links: Collective::ALL.map(entry),
            measured: [[false; 2]; 7],
            nccl,
        }
    }

    /// Replaces one entry with a measured fit.
    pub fn set_measured(&mut self, op: Collective, domain: LinkDomain, fit: AlphaBeta) {
        self.links[op.index()][domain.index()] = fit;
        self.measured[op.index()][domain.index()] = true;
    }

    /// The parameters of one entry.
    pub fn link(&self, op: Collective, domain: LinkDomain) -> AlphaBeta {
        self.links[op.index()][domain.index()]
    }

    /// Whether one entry was measured.
    pub fn is_measured(&self, op: Collective, domain: LinkDomain) -> bool {
        self.measured[op.index()][domain.index()]
    }

    /// Whether the links this operation on this placement uses were all measured.
    pub fn placement_measured(&self, op: Collective, g: &GroupPlacement) -> bool {
        match g.domain {
            Domain::Local => true,
            Domain::IntraNode => self.is_measured(op, LinkDomain::IntraNode),
            Domain::InterNode => self.is_measured(op, LinkDomain::InterNode),
            Domain::Hierarchical => {
                self.is_measured(op, LinkDomain::IntraNode)
                    && self.is_measured(op, LinkDomain::InterNode)
            }
        }
    }

    /// Time of one `op` of `bytes` over a placed group.
    ///
    /// A group with several members on each of several nodes runs the
    /// two-level algorithm: all-reduce = intra reduce-scatter, inter all-reduce
    /// of `bytes/k`, intra all-gather (k members per node, each GPU on its own
    /// NIC rail). Assumes no contention with other groups' traffic.
    pub fn time_s(&self, op: Collective, bytes: f64, g: &GroupPlacement) -> f64 {
        if let Some(t) = self.nccl_time_s(op, bytes, g) {
            return t;
        }
        self.alpha_beta_time_s(op, bytes, g)
    }

    /// NCCL's own price of `op` over `g` (time/nccl_algo.rs), where NCCL tunes the operation,
    /// the node is described and none of the links it crosses was measured (a measurement is
    /// the user's cluster as it runs, and replaces the tuner's estimate).
    pub fn nccl_time_s(&self, op: Collective, bytes: f64, g: &GroupPlacement) -> Option<f64> {
        let links = self.nccl.as_ref()?;
        if g.domain == Domain::Local || self.placement_measured_any(op, g) {
            return None;
        }
        let (nodes, per_node) = match g.domain {
            Domain::IntraNode => (1, g.size),
            Domain::InterNode => (g.size, 1),
            _ => (g.nodes, g.per_node),
        };
        let c = nccl_choice(op, bytes, &links.topo(nodes, per_node))?;
        // The tuner's bandwidth is an estimate for choosing; on one link it cannot beat the bus
        // bandwidth nccl-tests measures there (input/link_efficiency.rs), so the link's measured
        // figure caps it. Across nodes and inside them at once the in-node reduction changes
        // what each NIC carries, and the tuner's own figure stands.
        let cap = match g.domain {
            Domain::IntraNode => Some(self.link(op, LinkDomain::IntraNode)),
            Domain::InterNode => Some(self.link(op, LinkDomain::InterNode)),
            _ => None,
        }
        .map(|l| l.busbw_bytes_per_s / op.busbw_factor(g.size).max(1e-9));
        let algbw = cap.map_or(c.algbw_bytes_per_s, |cap| c.algbw_bytes_per_s.min(cap));
        Some(c.latency_s + bytes / algbw.max(1.0))
    }

    fn placement_measured_any(&self, op: Collective, g: &GroupPlacement) -> bool {
        match g.domain {
            Domain::Local => false,
            Domain::IntraNode => self.is_measured(op, LinkDomain::IntraNode),
            Domain::InterNode => self.is_measured(op, LinkDomain::InterNode),
            Domain::Hierarchical => {
                self.is_measured(op, LinkDomain::IntraNode)
                    || self.is_measured(op, LinkDomain::InterNode)
            }
        }
    }

    /// The α–β price of `op` over `g`: one link, or the two-level algorithm below.
    pub fn alpha_beta_time_s(&self, op: Collective, bytes: f64, g: &GroupPlacement) -> f64 {
        let intra =
            |o: Collective, b: f64, n: u64| self.link(o, LinkDomain::IntraNode).time_s(o, b, n);
        let inter =
            |o: Collective, b: f64, n: u64| self.link(o, LinkDomain::InterNode).time_s(o, b, n);
        match g.domain {
            Domain::Local => 0.0,
            Domain::IntraNode => intra(op, bytes, g.size),
            Domain::InterNode => inter(op, bytes, g.size),
            Domain::Hierarchical => {
                let k = g.per_node;
                let m = g.nodes;
                let kf = k as f64;
                // NCCL runs all-gather and reduce-scatter as one ring over all n = k·m ranks
                // (no tree for them): NCCL src/graph/tuning.cc prices its latency as
                // (nSteps − nInterSteps)·intraLat + nInterSteps·interLat with nSteps = n − 1,
                // nInterSteps = m − 1; the two levels above pay (k − 1) + (m − 1) steps, so the
                // ring's other (m − 1)(k − 1) intra-node steps are added, in seconds.
                let ring_extra_steps_s = (m.saturating_sub(1) * k.saturating_sub(1)) as f64
                    * self.link(op, LinkDomain::IntraNode).latency_s;
                match op {
                    Collective::AllReduce => {
                        intra(Collective::ReduceScatter, bytes, k)
                            + inter(Collective::AllReduce, bytes / kf, m)
                            + intra(Collective::AllGather, bytes, k)
                    }
                    Collective::ReduceScatter => {
                        intra(Collective::ReduceScatter, bytes, k)
                            + inter(Collective::ReduceScatter, bytes / kf, m)
                            + ring_extra_steps_s
                    }
                    Collective::AllGather => {
                        inter(Collective::AllGather, bytes / kf, m)
                            + intra(Collective::AllGather, bytes, k)
                            + ring_extra_steps_s
                    }
                    Collective::AllToAll => {
                        // Of the (n−1)/n that leaves a rank, (k−1)/n stays in the node.
                        let n = g.size as f64;
                        let i = self.link(op, LinkDomain::IntraNode);
                        let e = self.link(op, LinkDomain::InterNode);
                        let t_intra = bytes * (kf - 1.0) / n / i.busbw_bytes_per_s.max(1.0);
                        let t_inter = bytes * (n - kf) / n / e.busbw_bytes_per_s.max(1.0);
                        e.latency_s + t_intra.max(t_inter)
                    }
                    Collective::Broadcast | Collective::Reduce | Collective::SendRecv => {
                        inter(op, bytes, g.size)
                    }
                }
            }
        }
    }
}
