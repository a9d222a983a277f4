//! Collective operations and their α–β time on one link or across two.
//!
//! Sizes follow nccl-tests (`doc/PERFORMANCE.md`): for all-reduce the buffer,
//! for all-gather and reduce-scatter the full gathered size, for all-to-all the
//! bytes each rank sends in total, for send/recv the message. Bandwidths are
//! *bus* bandwidths: `time = steps·α + bytes·factor(n)/busbw`, so a link's
//! figure and a measured nccl-tests busbw plug into the same formula.

use serde::{Deserialize, Serialize};

use crate::input::hardware::Cluster;
use crate::parallel::topology::{Domain, GroupPlacement};

/// A collective or point-to-point operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    /// Every rank ends with the sum.
    AllReduce,
    /// Every rank ends with every shard.
    AllGather,
    /// Every rank ends with one shard of the sum.
    ReduceScatter,
    /// Every rank sends a different piece to every other.
    AllToAll,
    /// One rank's buffer to all.
    Broadcast,
    /// The sum onto one rank.
    Reduce,
    /// One rank to one other.
    SendRecv,
}

impl Collective {
    /// Every operation.
    pub const ALL: [Collective; 7] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::AllToAll,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::SendRecv,
    ];

    /// Stable identifier (nccl-tests binary stem).
    pub fn id(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::AllToAll => "alltoall",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::SendRecv => "sendrecv",
        }
    }

    /// Parses an id or a common spelling (`allreduce`, `all-reduce`, `all_reduce_perf`, ...).
    pub fn from_id(text: &str) -> Option<Self> {
        let t: String = text
            .trim()
            .trim_end_matches("_perf")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        match t.as_str() {
            "allreduce" => Some(Collective::AllReduce),
            "allgather" => Some(Collective::AllGather),
            "reducescatter" => Some(Collective::ReduceScatter),
            "alltoall" | "alltoallv" => Some(Collective::AllToAll),
            "broadcast" | "bcast" => Some(Collective::Broadcast),
            "reduce" => Some(Collective::Reduce),
            "sendrecv" | "p2p" | "send" | "recv" => Some(Collective::SendRecv),
            _ => None,
        }
    }

    /// Position in [`Collective::ALL`].
    pub fn index(self) -> usize {
        match self {
            Collective::AllReduce => 0,
            Collective::AllGather => 1,
            Collective::ReduceScatter => 2,
            Collective::AllToAll => 3,
            Collective::Broadcast => 4,
            Collective::Reduce => 5,
            Collective::SendRecv => 6,
        }
    }

    /// busbw / algbw for `n` ranks.
    pub fn busbw_factor(self, n: u64) -> f64 {
        if n <= 1 {
            return match self {
                Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
                _ => 0.0,
            };
        }
        let n = n as f64;
        match self {
            // nccl-tests doc/PERFORMANCE.md: all-reduce busbw = algbw · 2(n−1)/n.
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            // nccl-tests doc/PERFORMANCE.md: all-gather, reduce-scatter, all-to-all: (n−1)/n.
            Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => {
                (n - 1.0) / n
            }
            // nccl-tests doc/PERFORMANCE.md: broadcast, reduce, send/recv: 1.
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
        }
    }

    /// Latency steps (α terms) of the ring algorithm on `n` ranks.
    pub fn latency_steps(self, n: u64) -> f64 {
        if n <= 1 {
            return if self == Collective::SendRecv {
                1.0
            } else {
                0.0
            };
        }
        let n = n as f64;
        match self {
            // Ring all-reduce: reduce-scatter then all-gather, n−1 steps each (Patarasuk & Yuan 2009).
            Collective::AllReduce => 2.0 * (n - 1.0),
            Collective::AllGather
            | Collective::ReduceScatter
            | Collective::Broadcast
            | Collective::Reduce => n - 1.0,
            // All peers' sends are posted in one NCCL group and proceed concurrently.
            Collective::AllToAll | Collective::SendRecv => 1.0,
        }
    }
}

/// One link's α–β parameters for one operation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlphaBeta {
    /// Seconds per latency step (α).
    pub latency_s: f64,
    /// Bus bandwidth, bytes per second (1/β).
    pub busbw_bytes_per_s: f64,
}

impl AlphaBeta {
    /// `steps·α + bytes·factor/busbw` on `n` ranks of one link.
    pub fn time_s(&self, op: Collective, bytes: f64, n: u64) -> f64 {
        if n <= 1 && op != Collective::SendRecv {
            return 0.0;
        }
        if bytes <= 0.0 {
            return 0.0;
        }
        let bw = self.busbw_bytes_per_s.max(1.0);
        op.latency_steps(n) * self.latency_s + bytes * op.busbw_factor(n) / bw
    }
}

/// Which of the two links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkDomain {
    /// Inside a node.
    IntraNode,
    /// Between nodes.
    InterNode,
}

impl LinkDomain {
    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            LinkDomain::IntraNode => "intra_node",
            LinkDomain::InterNode => "inter_node",
        }
    }

    fn index(self) -> usize {
        match self {
            LinkDomain::IntraNode => 0,
            LinkDomain::InterNode => 1,
        }
    }
}

/// α–β parameters for every (operation, link), each marked measured or assumed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommModel {
    /// Indexed by [`Collective::index`], then intra/inter.
    pub links: [[AlphaBeta; 2]; 7],
    /// Whether that entry came from a measurement.
    pub measured: [[bool; 2]; 7],
}

impl CommModel {
    /// Every operation runs at the cluster's link figures (bus bandwidth = link bandwidth).
    pub fn assumed(cluster: &Cluster) -> Self {
        let intra = AlphaBeta {
            latency_s: cluster.intra_node.latency_s,
            busbw_bytes_per_s: cluster.intra_node.bytes_per_s,
        };
        let inter = AlphaBeta {
            latency_s: cluster.inter_node.latency_s,
            busbw_bytes_per_s: cluster.inter_node.bytes_per_s,
        };
        CommModel {
            links: [[intra, inter]; 7],
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
