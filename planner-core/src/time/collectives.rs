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
use crate::input::link_efficiency::{inter_node_busbw_share, intra_node_busbw_share};
use crate::parallel::topology::{Domain, GroupPlacement};

/// How a collective's time is priced, in words, for the explanations ([`CommModel::time_s`]:
/// [`Domain::Hierarchical`] runs two levels, [`Domain::InterNode`] the network link alone).
pub const COMM_TIME_ASSUMPTION: &str = "α–β with nccl-tests bus-bandwidth factors, each link at the bus bandwidth NCCL measures on it, not its line rate (input/link_efficiency.rs: NVLink 4 at 20.6 of 25 GB/s per link, all-reduce with NVLink SHARP at 480 of 450 GB/s, NVLink 5 at 40.1 of 50, A100's NVLink at 230 of 300, MI300X's xGMI at 48 of 64, a 400 Gb/s NDR NIC at 47 of 50 GB/s, a 200 Gb/s HDR NIC at 24 of 25; the line rate where no figure is cited; a calibration's measured α–β replaces them); two-level when a group has several GPUs on each of several nodes, the network link alone when it has one GPU per node";

/// α–β parameters for every (operation, link), each marked measured or assumed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommModel {
    /// Indexed by [`Collective::index`], then intra/inter.
    pub links: [[AlphaBeta; 2]; 7],
    /// Whether that entry came from a measurement.
    pub measured: [[bool; 2]; 7],
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
        let gpu = cluster.gpu.id.as_str();
        let entry = |op: Collective| {
            [
                AlphaBeta {
                    latency_s: cluster.intra_node.latency_s,
                    busbw_bytes_per_s: cluster.intra_node.bytes_per_s
                        * intra_node_busbw_share(gpu, op).unwrap_or(1.0),
                },
                AlphaBeta {
                    latency_s: cluster.inter_node.latency_s,
                    busbw_bytes_per_s: cluster.inter_node.bytes_per_s
                        * inter_node_busbw_share(gpu, op).unwrap_or(1.0),
                },
            ]
        };
        CommModel {
            links: Collective::ALL.map(entry),
            measured: [[false; 2]; 7],
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
