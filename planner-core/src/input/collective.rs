//! The collectives NCCL runs, their bus-bandwidth factors and latency steps, the
//! α–β cost form of one link, and which of the two links (intra- or inter-node).
//! Vocabulary only: the communication model that prices a step is
//! [`crate::time::collectives`].
//!
//! Sizes follow nccl-tests (`doc/PERFORMANCE.md`): for all-reduce the buffer,
//! for all-gather and reduce-scatter the full gathered size, for all-to-all the
//! bytes each rank sends in total, for send/recv the message.

use serde::{Deserialize, Serialize};

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
            // All peers' sends are posted in one NCCL group and proceed concurrently: "calls
            // within a group can be seen as progressing independently" (NCCL user guide,
            // "Point-to-point communication", whose all-to-all is one group of sends and receives).
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

    pub(crate) fn index(self) -> usize {
        match self {
            LinkDomain::IntraNode => 0,
            LinkDomain::InterNode => 1,
        }
    }
}
