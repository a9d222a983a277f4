//! NCCL's own price for one collective: the algorithm (ring, tree, NVLS, NVLS-tree, PAT,
//! CollNet) and protocol (LL, LL128, Simple) NCCL would pick, and the time its tuner predicts.
//! A port of NCCL 2.30.7 (github.com/NVIDIA/nccl at 5067397c, byte-identical to tag
//! `v2.30.7-1` in these files): `ncclTopoTuneModel` (`src/graph/tuning.cc`) gives every
//! (collective, algorithm, protocol) a latency and an algorithm bandwidth,
//! `ncclTopoGetAlgoTime` turns them into a time for one size, and `topoGetAlgoInfo`
//! (`src/enqueue.cc`) keeps the fastest. NCCL prices from its topology graphs (channels ×
//! per-channel bandwidth inside and between nodes); [`nccl_graphs`] derives them from per-GPU
//! NVLink and NIC figures by a reduced replay of `ncclTopoCompute` (`src/graph/search.cc`), and
//! [`nccl_choice_with_graphs`] takes graphs read off a real run (`NCCL_GRAPH_DUMP_FILE`) instead.
//!
//! # From per-GPU bandwidth to NCCL's graphs
//!
//! NCCL counts bandwidth in GB/s (1 GB/s = 1000 bytes/µs) and time in µs; the public API here is
//! in bytes/s and seconds. [`NcclTopo::nvlink_bytes_per_s`] is NCCL's per-GPU NVLink total
//! (`links × SM80_NVLINK_BW 20.0 / SM90_NVLINK_BW 20.6 / SM100_NVLINK_BW 40.1 GB/s`,
//! `src/graph/topo.h`: H100 SXM 18 × 20.6 = 370.8e9, A100 12 × 20 = 240e9, B200 18 × 40.1 =
//! 721.8e9), which is the search's `totalBw` and, behind an NVSwitch, its one-node `maxBw`.
//! [`NcclTopo::nic_bytes_per_s`] is the GPU→NIC path of one GPU, `min(NIC, PCIe)` in NCCL's
//! units (NDR 400G 50e9, HDR 200G 25e9; PCIe Gen5 x16 48e9, Gen4 x16 24e9), the multi-node
//! `maxBw`; the speed ladders quantize it, so 50e9 and 48e9 give the same Hopper graph (48) and
//! 25e9 and 24e9 the same Ampere graph (24). With `k` GPUs per node, each with its own NIC:
//! - ring: a channel at speed `s` fits `floor(nvlink / s)` times on one node (it crosses every
//!   GPU's NVSwitch port once each way) and `min(k·floor(nic / s), floor(nvlink·k / ((k−1)·s)))`
//!   times on several (one NIC in, one out; k−1 of every k GPUs forward it over NVLink). Pass 1
//!   starts at the first ladder speed `≤ maxBw`, keeps the best `channels × s`, and stops at 32
//!   channels, at `channels × s ≥ totalBw`, or when the next speed is under 0.49 × the best;
//!   `ncclTopoDupChannels` then doubles channels at half speed (not on Hopper+ below 50 GB/s with
//!   more than 4 channels); pass 2 raises the speed while the channels still fit.
//! - tree (and CollNet chain): exactly the ring's channel count, the same fit, the start speed
//!   checked against `totalBw × k/(k−1)`; pass 2 raises `bwIntra` towards `2 × bwInter`.
//! - NVLS (Hopper+, NVSwitch, ≥ 2 GPUs): one channel per head GPU, at most `min(k, 32)` and
//!   exactly `k` on one node; a channel loads every NVSwitch port with `s` and its head's with
//!   `2s`, so `s × (channels + 1) ≤ nvlink`; on several nodes one head per NIC; pass 2 raises
//!   `bwInter` up the ladder while it is under `2 × bwIntra` and fits the NIC.
//! - CollNet direct (SHARP): one head per NIC, at most `min(k, 8)`; the head's port carries `s`
//!   and the others `s/(k−1)` per channel.
//! - execution channels (the ring "plateau" test only): `2 × min(ring, tree)` channels, ×1.5 with
//!   CollNet when the chain's `bwIntra > bwInter`, ×2 again on Hopper+ across nodes when the ring's
//!   `bwIntra > 45` and fewer than 16.
//!
//! This gives NCCL's graphs for a DGX H100 (1 node: ring/tree 12 × 30, NVLS 8 × 40/60, 24
//! execution channels; several nodes with NDR: ring/tree 8 × 48/48, NVLS 8 × 40/48, 16) and a DGX
//! A100 with HDR (ring 8 × 24/24, tree 8 × 30/24, 16). It does not model PCIe-only nodes, GPUs
//! sharing a NIC, nodes without an NVSwitch, or NCCL's search timeouts.
//!
//! # Assumed, as NCCL does by default on such nodes
//! InfiniBand NIC latency 0 (`latencyInter`); LL128 enabled (GPU and NIC under one PCIe switch);
//! the tree pattern BALANCED_TREE except with one GPU per node (TREE, ×0.85); one operation per
//! launch (`numPipeOps` 1); sum reductions in a dtype NVLS and SHARP support, not fp8 (NCCL makes
//! fp8 rings over 8 ranks 1024× dearer); `sameChannels` rings (broadcast/reduce pay one hop);
//! with CollNet, a SHARP plugin that does all-gather and reduce-scatter too. Arithmetic is f64
//! where NCCL uses f32 (so results differ from NCCL's by f32 rounding, not checked here).

use crate::input::collective::Collective;

pub use crate::input::nccl_node::{NcclArch, NcclCpu};

impl NcclArch {
    /// Row of NCCL's per-architecture tables (`NCCL_VOLTA/AMPERE/HOPPER/BLACKWELL_COMPCAP_IDX`).
    fn row(self) -> usize {
        match self {
            NcclArch::Other => 0,
            NcclArch::Ampere => 1,
            NcclArch::Hopper => 2,
            NcclArch::Blackwell => 3,
        }
    }

    /// The communicator's minimum compute capability, ×10 (sm90 = 90).
    fn min_comp_cap(self) -> u32 {
        match self {
            NcclArch::Other => 70,
            NcclArch::Ampere => 80,
            NcclArch::Hopper => 90,
            NcclArch::Blackwell => 100,
        }
    }
}

/// The communicator as NCCL's tuner sees it: nodes × GPUs per node and their links.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NcclTopo {
    /// Nodes in the communicator.
    pub nodes: u64,
    /// GPUs (ranks) of the communicator on each node.
    pub ranks_per_node: u64,
    /// GPU generation.
    pub arch: NcclArch,
    /// Host CPU.
    pub cpu: NcclCpu,
    /// NVLink per GPU per direction as NCCL counts it, bytes/s: links × 20.0e9 (A100),
    /// 20.6e9 (H100), 40.1e9 (B200), e.g. 18 × 20.6e9 = 370.8e9 on H100.
    pub nvlink_bytes_per_s: f64,
    /// Network per GPU per direction, bytes/s: the GPU→NIC path, `min(NIC, PCIe)` (NDR 400G
    /// 50e9, HDR 200G 25e9). One NIC per GPU is assumed.
    pub nic_bytes_per_s: f64,
    /// NVLink SHARP (NVLS) present: an NVSwitch with multicast on Hopper or later.
    pub nvls: bool,
    /// CollNet (in-network SHARP over InfiniBand) present and enabled; usually false.
    pub collnet: bool,
}

/// One NCCL algorithm (`NCCL_ALGO_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NcclAlgo {
    /// Flat ring through every rank.
    Ring,
    /// Chain inside a node, double binary tree across nodes.
    Tree,
    /// NVLS inside a node, tree across nodes.
    NvlsTree,
    /// NVLink SHARP (switch reduction); across nodes with CollNet only.
    Nvls,
    /// Parallel aggregated trees, all-gather/reduce-scatter with one GPU per node.
    Pat,
    /// CollNet (SHARP) with direct intra-node exchange.
    CollNetDirect,
    /// CollNet (SHARP) with an intra-node chain.
    CollNetChain,
}

impl NcclAlgo {
    /// Every algorithm, in NCCL's enum order (TREE 0 … PAT 6): ties go to the first.
    pub const NCCL_ORDER: [NcclAlgo; 7] = [
        NcclAlgo::Tree,
        NcclAlgo::Ring,
        NcclAlgo::CollNetDirect,
        NcclAlgo::CollNetChain,
        NcclAlgo::Nvls,
        NcclAlgo::NvlsTree,
        NcclAlgo::Pat,
    ];

    /// Stable identifier for explanations.
    pub fn id(self) -> &'static str {
        match self {
            NcclAlgo::Ring => "ring",
            NcclAlgo::Tree => "tree",
            NcclAlgo::NvlsTree => "nvls_tree",
            NcclAlgo::Nvls => "nvls",
            NcclAlgo::Pat => "pat",
            NcclAlgo::CollNetDirect => "collnet_direct",
            NcclAlgo::CollNetChain => "collnet_chain",
        }
    }

    /// NCCL's enum value (`src/include/plugin/nccl_tuner.h`), the index of its tables.
    fn index(self) -> usize {
        match self {
            NcclAlgo::Tree => 0,
            NcclAlgo::Ring => 1,
            NcclAlgo::CollNetDirect => 2,
            NcclAlgo::CollNetChain => 3,
            NcclAlgo::Nvls => 4,
            NcclAlgo::NvlsTree => 5,
            NcclAlgo::Pat => 6,
        }
    }
}

/// One NCCL protocol (`NCCL_PROTO_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NcclProto {
    /// Low latency: 8-byte stores with a flag, half the bandwidth.
    Ll,
    /// 128-byte lines with a flag: most of the bandwidth at low latency.
    Ll128,
    /// Plain copies with fences: full bandwidth, highest latency.
    Simple,
}

impl NcclProto {
    /// Every protocol, in NCCL's enum order (LL 0, LL128 1, SIMPLE 2).
    pub const NCCL_ORDER: [NcclProto; 3] = [NcclProto::Ll, NcclProto::Ll128, NcclProto::Simple];

    /// Stable identifier for explanations.
    pub fn id(self) -> &'static str {
        match self {
            NcclProto::Ll => "ll",
            NcclProto::Ll128 => "ll128",
            NcclProto::Simple => "simple",
        }
    }

    /// NCCL's enum value, the index of its tables.
    fn index(self) -> usize {
        match self {
            NcclProto::Ll => 0,
            NcclProto::Ll128 => 1,
            NcclProto::Simple => 2,
        }
    }
}

/// One of NCCL's topology graphs (`struct ncclTopoGraph`), in NCCL's units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NcclGraph {
    /// Search channels (`nChannels`).
    pub n_channels: u64,
    /// Per-channel bandwidth inside a node (`bwIntra`), GB/s.
    pub bw_intra_gb_per_s: f64,
    /// Per-channel bandwidth to the network (`bwInter`), GB/s.
    pub bw_inter_gb_per_s: f64,
}

/// The graphs NCCL's tuner reads, as `NCCL_GRAPH_DUMP_FILE` would show them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NcclGraphs {
    /// Ring graph (also Broadcast/Reduce).
    pub ring: NcclGraph,
    /// Tree graph (also PAT).
    pub tree: NcclGraph,
    /// Whether the tree graph fell back to pattern TREE (one GPU per node): tree bandwidth ×0.85.
    pub tree_pattern_tree: bool,
    /// NVLS graph (NVLS and NVLS-tree), if NVLS is supported.
    pub nvls: Option<NcclGraph>,
    /// CollNet-direct graph, if CollNet is enabled.
    pub collnet_direct: Option<NcclGraph>,
    /// CollNet-chain graph, if CollNet is enabled.
    pub collnet_chain: Option<NcclGraph>,
    /// Execution channels (`comm->nChannels`), used by the ring plateau rule.
    pub exec_channels: u64,
}

/// NCCL's pick for one collective and the time its model gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NcclChoice {
    /// Algorithm.
    pub algo: NcclAlgo,
    /// Protocol.
    pub proto: NcclProto,
    /// Latency term, seconds, after the size-dependent ring plateau factor.
    pub latency_s: f64,
    /// Algorithm bandwidth, bytes/s, after the size-dependent tree correction.
    pub algbw_bytes_per_s: f64,
    /// `latency_s + bytes / algbw_bytes_per_s`, seconds.
    pub time_s: f64,
}

// NCCL 2.30.7 src/graph/tuning.cc:150-155 baseLatencies[algo][LL, LL128, Simple] µs, algo order Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT
const BASE_LAT_US: [[f64; 3]; 7] = [
    [6.8, 14.0, 8.4],
    [6.6, 14.0, 8.4],
    [0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0],
    [8.0, 8.0, 8.0],
];

// NCCL 2.30.7 src/graph/tuning.cc:158-163 hwLatencies[NCCL_HW_NVLINK][algo][LL, LL128, Simple] µs (the PCI row is unused: nodes are NVLink)
const NVLINK_LAT_US: [[f64; 3]; 7] = [
    [0.6, 1.25, 4.0],
    [0.6, 1.9, 3.4],
    [0.0, 0.0, 3.7],
    [0.0, 0.0, 2.8],
    [0.0, 0.0, 25.0],
    [0.0, 0.0, 25.0],
    [0.0, 0.0, 4.0],
];

// NCCL 2.30.7 src/graph/tuning.cc:170-175 hwLatencies[NCCL_HW_NET][algo][LL, LL128, Simple] µs
const NET_LAT_US: [[f64; 3]; 7] = [
    [5.0, 8.5, 14.0],
    [2.7, 4.0, 14.0],
    [0.0, 0.0, 31.0],
    [0.0, 0.0, 30.0],
    [0.0, 0.0, 18.0],
    [0.0, 0.0, 20.9],
    [0.0, 0.0, 14.0],
];

// NCCL 2.30.7 src/graph/tuning.cc:139-144 nvlsEfficiency[Volta, Ampere, Hopper, Blackwell]
const NVLS_EFFICIENCY: [f64; 4] = [0.0, 0.0, 0.85, 0.74];

// NCCL 2.30.7 src/graph/tuning.cc:178-183 llMaxBws GB/s [row][N1, N2, N4+]: rows Volta/Intel, Ampere/AMD, Hopper/AMD, Blackwell/AMD
const LL_MAX_GB_PER_S: [[f64; 3]; 4] = [
    [39.0, 39.0, 20.4],
    [87.7, 22.5, 19.0],
    [141.0, 45.0, 35.0],
    [2.0 * 141.0, 2.0 * 45.0, 2.0 * 35.0],
];

// NCCL 2.30.7 src/graph/tuning.cc:185-190 perChMaxRingLL128Bws GB/s [Volta, Ampere, Hopper, Blackwell][N1, N2, N4+]
const PER_CH_MAX_RING_LL128_GB_PER_S: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 36.7],
    [40.0, 40.0, 40.0],
];

// NCCL 2.30.7 src/graph/tuning.cc:192-197 perChMaxTreeLL128Bws GB/s [Volta, Ampere, Hopper, Blackwell][N1, N2, N4+]
const PER_CH_MAX_TREE_LL128_GB_PER_S: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 29.0],
    [55.6, 31.67, 20.0],
];

// NCCL 2.30.7 src/graph/tuning.cc:199-204 perChMaxTreeBws GB/s [Volta, Ampere, Hopper, Blackwell][N1, N2, N4+]
const PER_CH_MAX_TREE_GB_PER_S: [[f64; 3]; 4] = [
    [26.5, 18.5, 10.0],
    [24.0, 23.6, 17.8],
    [38.7, 41.4, 36.0],
    [70.0, 42.8, 24.0],
];

// NCCL 2.30.7 src/graph/tuning.cc:206-211 perChMaxNVLSTreeBws GB/s [Volta, Ampere, Hopper, Blackwell][N1, N2, N4+]
const PER_CH_MAX_NVLS_TREE_GB_PER_S: [[f64; 3]; 4] = [
    [26.5, 18.5, 10.0],
    [24.0, 23.6, 17.8],
    [0.0, 57.7, 45.5],
    [0.0, 96.0, 80.0],
];

// NCCL 2.30.7 src/graph/tuning.cc:623-627 treeCorrectionFactor[LL, LL128, Simple][log2(bytes/64)], powers of two 64 B .. 256 MiB
const TREE_CORRECTION: [[f64; 24]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.0, 1.0, 1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9,
        0.9, 0.9, 0.9, 1.0, 1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8,
        0.7, 0.7, 0.8, 0.9, 0.9, 0.9,
    ],
];

// NCCL 2.30.7 src/transport/net_ib/init.cc:558 `props->latency = 0; // Not set`: graph->latencyInter is 0 µs on InfiniBand
const NET_LATENCY_INTER_US: f64 = 0.0;

// NCCL 2.30.7 src/graph/tuning.cc:226-233 getNetOverhead: 1.0 µs on Intel x86, 2.0 on AMD x86, 1.0 otherwise
fn net_overhead_us(cpu: NcclCpu) -> f64 {
    match cpu {
        NcclCpu::Amd => 2.0,
        NcclCpu::Intel | NcclCpu::Other => 1.0,
    }
}

// NCCL 2.30.7 src/include/utils.h:56 log2i(n) = log2Down(n), floor(log2 n), −1 for 0
fn log2i(n: u64) -> i64 {
    if n == 0 {
        -1
    } else {
        i64::from(63 - n.leading_zeros())
    }
}

/// The functions NCCL tunes (`NCCL_NUM_FUNCTIONS 5`, Send/Recv not included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Func {
    Broadcast,
    Reduce,
    AllGather,
    ReduceScatter,
    AllReduce,
}

impl Func {
    fn of(op: Collective) -> Option<Func> {
        match op {
            Collective::AllReduce => Some(Func::AllReduce),
            Collective::AllGather => Some(Func::AllGather),
            Collective::ReduceScatter => Some(Func::ReduceScatter),
            Collective::Broadcast => Some(Func::Broadcast),
            Collective::Reduce => Some(Func::Reduce),
            Collective::AllToAll | Collective::SendRecv => None,
        }
    }

    fn gathers(self) -> bool {
        matches!(self, Func::AllGather | Func::ReduceScatter)
    }
}

/// What one tuning pass needs: the collective, the communicator and its graphs.
struct Ctx<'a> {
    func: Func,
    nodes: u64,
    ppn: u64,
    n_ranks: u64,
    arch: NcclArch,
    cpu: NcclCpu,
    graphs: &'a NcclGraphs,
    collnet: bool,
}

impl Ctx<'_> {
    /// `index2` of the cap tables: N1, N2, N4+ (tuning.cc:267).
    fn column(&self) -> usize {
        // NCCL 2.30.7 src/graph/tuning.cc:267 index2 = nNodes <= 2 ? nNodes - 1 : 2
        if self.nodes <= 2 {
            self.nodes.saturating_sub(1) as usize
        } else {
            2
        }
    }

    fn ll_max_gb_per_s(&self) -> f64 {
        // NCCL 2.30.7 src/graph/tuning.cc:269-271 index1 = one node ? compCapIndex : (AMD ? 1 : 0)
        let row = if self.nodes == 1 {
            self.arch.row()
        } else if self.cpu == NcclCpu::Amd {
            1
        } else {
            0
        };
        LL_MAX_GB_PER_S[row][self.column()]
    }

    fn nsteps(&self) -> f64 {
        // NCCL 2.30.7 src/graph/tuning.cc:289-291 nsteps = AllReduce 2(n−1), AllGather/ReduceScatter n−1, else n
        let n = self.n_ranks as f64;
        match self.func {
            Func::AllReduce => 2.0 * (n - 1.0),
            Func::AllGather | Func::ReduceScatter => n - 1.0,
            Func::Broadcast | Func::Reduce => n,
        }
    }

    fn graph(&self, algo: NcclAlgo) -> Option<&NcclGraph> {
        // NCCL 2.30.7 src/init.cc:980-981 graphs[] per algo: NVLS and NVLS_TREE → nvlsGraph, PAT → treeGraph
        match algo {
            NcclAlgo::Ring => Some(&self.graphs.ring),
            NcclAlgo::Tree | NcclAlgo::Pat => Some(&self.graphs.tree),
            NcclAlgo::Nvls | NcclAlgo::NvlsTree => self.graphs.nvls.as_ref(),
            NcclAlgo::CollNetDirect => self.graphs.collnet_direct.as_ref(),
            NcclAlgo::CollNetChain => self.graphs.collnet_chain.as_ref(),
        }
    }
}

/// Whether NCCL computes, enables and considers `(algo, proto)` for this collective.
fn enabled(c: &Ctx, algo: NcclAlgo, proto: NcclProto) -> bool {
    use NcclAlgo as A;
    let simple = proto == NcclProto::Simple;
    // NCCL 2.30.7 src/graph/tuning.cc:294-298 Broadcast/Reduce: Ring only; AllGather/ReduceScatter: PAT, Ring, NVLS, CollNetDirect; AllReduce: all but PAT
    let for_func = match c.func {
        Func::Broadcast | Func::Reduce => algo == A::Ring,
        Func::AllGather | Func::ReduceScatter => {
            matches!(algo, A::Pat | A::Ring | A::Nvls | A::CollNetDirect)
        }
        Func::AllReduce => algo != A::Pat,
    };
    // NCCL 2.30.7 src/graph/tuning.cc:301,338-339 NVLS, NVLS-tree and CollNet run Simple only
    let proto_ok = simple || matches!(algo, A::Ring | A::Tree);
    // NCCL 2.30.7 src/graph/tuning.cc:216-223 ncclPatEnable: 1 GPU per node (nNodes == nRanks), host network
    let pat_ok = algo != A::Pat || c.ppn == 1;
    // NCCL 2.30.7 src/graph/tuning.cc:309 NVLS/NVLS-tree need at least 2 channels; src/init.cc:1453 no NVLS graph, no NVLS
    let graph_ok = c.graph(algo).is_some_and(|g| {
        g.n_channels >= 1 && (!matches!(algo, A::Nvls | A::NvlsTree) || g.n_channels >= 2)
    });
    for_func && proto_ok && pat_ok && graph_ok && algo_allowed(c, algo)
}

/// The algorithm-level switches of `ncclTopoTuneModel` and `updateCollCostTable`.
fn algo_allowed(c: &Ctx, algo: NcclAlgo) -> bool {
    use NcclAlgo as A;
    let multi = c.nodes > 1;
    // NCCL 2.30.7 src/graph/tuning.cc:501-502 NVLS-tree disabled on a single node
    let nvls_tree_ok = algo != A::NvlsTree || multi;
    // NCCL 2.30.7 src/graph/tuning.cc:504-506, src/enqueue.cc:2008 CollNet algos and multi-node NVLS need CollNet
    let needs_collnet =
        matches!(algo, A::CollNetDirect | A::CollNetChain) || (algo == A::Nvls && multi);
    // NCCL 2.30.7 src/enqueue.cc:2001-2003 CollNet direct/chain need maxLocalRanks <= NCCL_MAX_DIRECT_ARITY + 1 = 8
    let arity_ok = !matches!(algo, A::CollNetDirect | A::CollNetChain) || c.ppn <= 8;
    // NCCL 2.30.7 src/enqueue.cc:2004-2005 NVLS for other than AllReduce needs localRanks <= NCCL_MAX_NVLS_ARITY = 32
    let nvls_arity_ok =
        !matches!(algo, A::Nvls | A::NvlsTree) || c.func == Func::AllReduce || c.ppn <= 32;
    // NCCL 2.30.7 src/graph/tuning.cc:353-374 multi-node NVLS/CollNetDirect AllGather/ReduceScatter need CollNet and localRanks <= heads
    let heads = c.graphs.collnet_direct.map_or(0, |g| g.n_channels);
    let gather_ok = !(c.func.gathers() && multi && matches!(algo, A::Nvls | A::CollNetDirect))
        || (c.collnet && c.ppn <= heads);
    nvls_tree_ok && (!needs_collnet || c.collnet) && arity_ok && nvls_arity_ok && gather_ok
}

/// Per-channel NVLS bandwidth (tuning.cc:307-322).
fn nvls_channel_gb_per_s(c: &Ctx, algo: NcclAlgo, g: &NcclGraph) -> f64 {
    let n_ch = g.n_channels as f64;
    let ppn = c.ppn as f64;
    // NCCL 2.30.7 src/graph/tuning.cc:311-312 intraBw = bwIntra × nvlsEfficiency × (nCh − 1)/nCh
    let intra = g.bw_intra_gb_per_s * NVLS_EFFICIENCY[c.arch.row()] * (n_ch - 1.0) / n_ch;
    // NCCL 2.30.7 src/graph/tuning.cc:314-318 AllReduce pipelines two operations (×2), others ×(ppn − 1)/ppn
    let intra = if c.func == Func::AllReduce {
        intra * 2.0
    } else {
        intra * (ppn - 1.0) / ppn
    };
    // NCCL 2.30.7 src/graph/tuning.cc:320 interBw = bwInter × (2 for NVLS-tree on ≤ 2 nodes)
    let inter = g.bw_inter_gb_per_s
        * if c.nodes <= 2 && algo == NcclAlgo::NvlsTree {
            2.0
        } else {
            1.0
        };
    // NCCL 2.30.7 src/graph/tuning.cc:321-322 bw = min(intraBw, interBw, NVLS-tree ? perChMaxNVLSTreeBw : ∞)
    let cap = if algo == NcclAlgo::NvlsTree {
        PER_CH_MAX_NVLS_TREE_GB_PER_S[c.arch.row()][c.column()]
    } else {
        f64::INFINITY
    };
    intra.min(inter).min(cap)
}

/// Bus bandwidth of `(algo, proto)` in GB/s before the bus→algorithm conversion (tuning.cc:305-351).
fn bus_gb_per_s(c: &Ctx, algo: NcclAlgo, proto: NcclProto, g: &NcclGraph) -> f64 {
    use NcclAlgo as A;
    let n_ch = g.n_channels as f64;
    let collnet = matches!(algo, A::CollNetDirect | A::CollNetChain);
    // NCCL 2.30.7 src/graph/tuning.cc:306 bw = nNodes <= 2 || collnet ? bwIntra : bwInter
    let mut bw = if c.nodes <= 2 || collnet {
        g.bw_intra_gb_per_s
    } else {
        g.bw_inter_gb_per_s
    };
    if matches!(algo, A::Nvls | A::NvlsTree) {
        bw = nvls_channel_gb_per_s(c, algo, g);
    }
    // NCCL 2.30.7 src/graph/tuning.cc:324 busBw = nChannels × bw
    let bus = n_ch * bw;
    match algo {
        A::Ring => ring_bus(c, proto, n_ch, bus),
        A::Tree => tree_bus(c, proto, n_ch, bus),
        // NCCL 2.30.7 src/graph/tuning.cc:337 PAT busBw × 0.75
        A::Pat => bus * 0.75,
        A::CollNetDirect => collnet_direct_bus(c, g, bus),
        A::CollNetChain | A::Nvls | A::NvlsTree => bus,
    }
}

/// Ring refinements (tuning.cc:327-329).
fn ring_bus(c: &Ctx, proto: NcclProto, n_ch: f64, bus: f64) -> f64 {
    let row = c.arch.row();
    match proto {
        // NCCL 2.30.7 src/graph/tuning.cc:327 Ring LL: min(llMaxBw, busBw × 0.5)
        NcclProto::Ll => c.ll_max_gb_per_s().min(bus * 0.5),
        // NCCL 2.30.7 src/graph/tuning.cc:328-329 Ring LL128: min(busBw × 0.92, nCh × perChMaxRingLL128Bw)
        NcclProto::Ll128 => {
            (bus * 0.92).min(n_ch * PER_CH_MAX_RING_LL128_GB_PER_S[row][c.column()])
        }
        NcclProto::Simple => bus,
    }
}

/// Tree refinements, AllReduce only (tuning.cc:330-336).
fn tree_bus(c: &Ctx, proto: NcclProto, n_ch: f64, bus: f64) -> f64 {
    let (row, col) = (c.arch.row(), c.column());
    // NCCL 2.30.7 src/graph/tuning.cc:330-331 Tree AllReduce: min(busBw × 0.92, nCh × perChMaxTreeBw)
    let bus = (bus * 0.92).min(n_ch * PER_CH_MAX_TREE_GB_PER_S[row][col]);
    let bus = match proto {
        // NCCL 2.30.7 src/graph/tuning.cc:332 Tree LL: min(busBw × 1.0/3.8, llMaxBw)
        NcclProto::Ll => (bus / 3.8).min(c.ll_max_gb_per_s()),
        // NCCL 2.30.7 src/graph/tuning.cc:333-335 Tree LL128: min(busBw × (1 node ? 7/9 : 120/128), nCh × perChMaxTreeLL128Bw)
        NcclProto::Ll128 => (bus
            * if c.nodes == 1 {
                7.0 / 9.0
            } else {
                120.0 / 128.0
            })
        .min(n_ch * PER_CH_MAX_TREE_LL128_GB_PER_S[row][col]),
        NcclProto::Simple => bus,
    };
    // NCCL 2.30.7 src/graph/tuning.cc:336 ×0.85 when any rank's tree graph has pattern TREE
    if c.graphs.tree_pattern_tree {
        bus * 0.85
    } else {
        bus
    }
}

/// CollNet-direct Simple (tuning.cc:340-350).
fn collnet_direct_bus(c: &Ctx, g: &NcclGraph, bus: f64) -> f64 {
    let ppn = c.ppn as f64;
    if c.func.gathers() {
        // NCCL 2.30.7 src/graph/tuning.cc:342 AllGather/ReduceScatter: ppn × min(bwIntra, bwInter × 0.9)
        return ppn * g.bw_intra_gb_per_s.min(g.bw_inter_gb_per_s * 0.9);
    }
    // NCCL 2.30.7 src/graph/tuning.cc:345-346 GPU/NIC ratio factor = ppn/nCh, factor −= (factor − 1)/2
    let factor = ppn / (g.n_channels as f64);
    let factor = factor - (factor - 1.0) / 2.0;
    // NCCL 2.30.7 src/graph/tuning.cc:347-348 busBw /= factor, ×0.85 on sm90+
    let bus = bus / factor;
    if c.arch.min_comp_cap() >= 90 {
        bus * 0.85
    } else {
        bus
    }
}

/// Bus → algorithm bandwidth (tuning.cc:376-383).
fn alg_gb_per_s(c: &Ctx, algo: NcclAlgo, bus: f64) -> f64 {
    use NcclAlgo as A;
    // NCCL 2.30.7 src/graph/tuning.cc:377 AllGather/ReduceScatter other than Ring keep busBw as is
    if algo != A::Ring && c.func.gathers() {
        return bus;
    }
    // NCCL 2.30.7 src/graph/tuning.cc:379-380 ratio nRanks/nsteps for Ring, NVLS, NVLS-tree; 0.5 otherwise
    let ratio = if matches!(algo, A::Ring | A::Nvls | A::NvlsTree) {
        c.n_ranks as f64 / c.nsteps()
    } else {
        0.5
    };
    bus * ratio
}

/// Latency of `(algo, proto)` in µs (tuning.cc:384-435).
fn latency_us(c: &Ctx, algo: NcclAlgo, proto: NcclProto) -> f64 {
    use NcclAlgo as A;
    let (a, p) = (algo.index(), proto.index());
    let base = BASE_LAT_US[a][p];
    let intra = NVLINK_LAT_US[a][p];
    // NCCL 2.30.7 src/graph/tuning.cc:386-389 with ppn 1 the network latency is Tree's, plus latencyInter
    let net_row = if c.ppn == 1 { A::Tree.index() } else { a };
    let inter = NET_LAT_US[net_row][p] + NET_LATENCY_INTER_US;
    // NCCL 2.30.7 src/graph/tuning.cc:390-391 Simple adds latencyInter again (flush)
    let flush = if proto == NcclProto::Simple {
        NET_LATENCY_INTER_US
    } else {
        0.0
    };
    let inter = inter + flush;
    let ppn_less_one = c.ppn.saturating_sub(1) as f64;
    let log_nodes = log2i(c.nodes) as f64;
    match algo {
        A::Ring => base + ring_latency_us(c, proto, intra, inter),
        // NCCL 2.30.7 src/graph/tuning.cc:415-416 Tree AllReduce: 2 × ((ppn − 1) × intraLat + log2i(nNodes) × interLat)
        A::Tree if c.func == Func::AllReduce => {
            base + 2.0 * (ppn_less_one * intra + log_nodes * inter)
        }
        A::Tree => base,
        // NCCL 2.30.7 src/graph/tuning.cc:418-421 CollNetDirect: 2 × (min(1, ppn − 1) × intraLat + (ppn − 1) × 0.4) + interLat
        A::CollNetDirect => {
            base + 2.0 * (ppn_less_one.min(1.0) * intra + ppn_less_one * 0.4) + inter
        }
        // NCCL 2.30.7 src/graph/tuning.cc:423 CollNetChain: 2 × (ppn − 1) × intraLat + interLat
        A::CollNetChain => base + 2.0 * ppn_less_one * intra + inter,
        // NCCL 2.30.7 src/graph/tuning.cc:424-425 NVLS: latency = intraLat (replaces base), + interLat on several nodes
        A::Nvls => intra + if c.nodes > 1 { inter } else { 0.0 },
        // NCCL 2.30.7 src/graph/tuning.cc:428 NVLS-tree: intraLat + 2 × log2i(nNodes) × interLat
        A::NvlsTree => base + intra + 2.0 * log_nodes * inter,
        // NCCL 2.30.7 src/graph/tuning.cc:431-433 PAT: log2i(nNodes) × interLat/3.5 + nRanks × 2.8
        A::Pat if c.func.gathers() => base + log_nodes * (inter / 3.5) + c.n_ranks as f64 * 2.8,
        A::Pat => base,
    }
}

/// Ring latency past the base (tuning.cc:393-413); `intra`/`inter` are Ring's NVLink and
/// network hop latencies.
fn ring_latency_us(c: &Ctx, proto: NcclProto, intra: f64, inter: f64) -> f64 {
    let (ring, p) = (NcclAlgo::Ring.index(), proto.index());
    if matches!(c.func, Func::Broadcast | Func::Reduce) {
        // NCCL 2.30.7 src/graph/tuning.cc:286,394-398 Broadcast/Reduce with sameChannels: one hop of hw[a] = one node ? NVLINK : NET
        return if c.nodes == 1 {
            NVLINK_LAT_US[ring][p]
        } else {
            NET_LAT_US[ring][p]
        };
    }
    // NCCL 2.30.7 src/graph/tuning.cc:405-408 netOverhead on several nodes, ×3 for Simple
    let overhead = if c.nodes > 1 {
        net_overhead_us(c.cpu) * if proto == NcclProto::Simple { 3.0 } else { 1.0 }
    } else {
        0.0
    };
    // NCCL 2.30.7 src/graph/tuning.cc:410 intraLat = max(intraLat, netOverhead)
    let intra = intra.max(overhead);
    // NCCL 2.30.7 src/graph/tuning.cc:411 nInterSteps = 1 node ? 0 : AllReduce ? 2(nNodes − 1) : nNodes − 1
    let inter_steps = match (c.nodes, c.func) {
        (1, _) => 0.0,
        (n, Func::AllReduce) => 2.0 * n.saturating_sub(1) as f64,
        (n, _) => n.saturating_sub(1) as f64,
    };
    // NCCL 2.30.7 src/graph/tuning.cc:412 (nsteps − nInterSteps) × intraLat + nInterSteps × interLat
    (c.nsteps() - inter_steps) * intra + inter_steps * inter
}

/// Time of one `(algo, proto)` for `bytes`, as `ncclTopoGetAlgoTime` (tuning.cc:630-655).
fn algo_time(c: &Ctx, algo: NcclAlgo, proto: NcclProto, bytes: f64) -> Option<NcclChoice> {
    let g = c.graph(algo)?;
    let bus = bus_gb_per_s(c, algo, proto, g);
    let mut bw = alg_gb_per_s(c, algo, bus);
    let mut lat = latency_us(c, algo, proto);
    // NCCL 2.30.7 src/graph/tuning.cc:634-637 bandwidth 0 = not usable
    if bw.is_nan() || bw <= 0.0 {
        return None;
    }
    // NCCL 2.30.7 src/graph/tuning.cc:630 nBytes is a size_t: whole bytes for the size tests
    let n_bytes = bytes as u64;
    // NCCL 2.30.7 src/graph/tuning.cc:639 logSize = log2i(nBytes >> 6)
    let log_size = log2i(n_bytes >> 6);
    let allreduce = c.func == Func::AllReduce;
    // NCCL 2.30.7 src/graph/tuning.cc:640-642 Tree AllReduce bw × treeCorrectionFactor[proto][logSize] for 0 <= logSize < 23
    if algo == NcclAlgo::Tree && allreduce && (0..23).contains(&log_size) {
        bw *= TREE_CORRECTION[proto.index()][log_size as usize];
    }
    // NCCL 2.30.7 src/graph/tuning.cc:643-646 NVLS-tree AllReduce the same for logSize < 24 on sm100+ with an x86 CPU
    let x86 = matches!(c.cpu, NcclCpu::Intel | NcclCpu::Amd);
    let blackwell = c.arch.min_comp_cap() >= 100;
    if algo == NcclAlgo::NvlsTree && allreduce && (0..24).contains(&log_size) && blackwell && x86 {
        bw *= TREE_CORRECTION[proto.index()][log_size as usize];
    }
    // NCCL 2.30.7 src/graph/tuning.cc:647-650 ring plateau: Ring Simple AllReduce on several nodes, nBytes/(nChannels·nRanks) >= 64 → lat × (sm < 80 ? 1.9 : 1.4)
    let per_channel_rank = n_bytes / (c.graphs.exec_channels.max(1) * c.n_ranks);
    if algo == NcclAlgo::Ring
        && proto == NcclProto::Simple
        && c.nodes > 1
        && allreduce
        && per_channel_rank >= 64
    {
        lat *= if c.arch.min_comp_cap() < 80 { 1.9 } else { 1.4 };
    }
    // NCCL's units (module doc): 1 GB/s = 1e9 bytes/s, 1 µs = 1e-6 s
    let algbw_bytes_per_s = bw * 1e9;
    let latency_s = lat * 1e-6;
    // NCCL 2.30.7 src/graph/tuning.cc:651-653 time = lat × latCount + nBytes / (1000 × bw) µs, latCount 1 for one operation
    let time_s = latency_s + bytes / algbw_bytes_per_s;
    Some(NcclChoice {
        algo,
        proto,
        latency_s,
        algbw_bytes_per_s,
        time_s,
    })
}

/// Every `(algo, proto)` NCCL would consider for `op` of `bytes` (nccl-tests sizes: all-reduce
/// the buffer, all-gather/reduce-scatter the full gathered size), in NCCL's table order, with
/// NCCL's time for each. Empty for operations NCCL does not tune (all-to-all, send/recv), for a
/// single rank, and for a size that is negative or not finite.
pub fn nccl_candidates(
    op: Collective,
    bytes: f64,
    topo: &NcclTopo,
    graphs: &NcclGraphs,
) -> Vec<NcclChoice> {
    let Some(func) = Func::of(op) else {
        return Vec::new();
    };
    let n_ranks = topo.nodes.saturating_mul(topo.ranks_per_node);
    if n_ranks <= 1 || !bytes.is_finite() || bytes < 0.0 {
        return Vec::new();
    }
    let c = Ctx {
        func,
        nodes: topo.nodes,
        ppn: topo.ranks_per_node,
        n_ranks,
        arch: topo.arch,
        cpu: topo.cpu,
        graphs,
        // NCCL 2.30.7 src/init.cc:1452,1469-1475 CollNet needs >= NCCL_COLLNET_NODE_THRESHOLD (2) nodes and a chain graph
        collnet: topo.collnet && topo.nodes >= 2 && graphs.collnet_chain.is_some(),
    };
    let mut out = Vec::new();
    for algo in NcclAlgo::NCCL_ORDER {
        for proto in NcclProto::NCCL_ORDER {
            if enabled(&c, algo, proto) {
                out.extend(algo_time(&c, algo, proto, bytes));
            }
        }
    }
    out
}

/// NCCL's pick for `op` of `bytes` on `topo` with the given graphs: the least time over
/// [`nccl_candidates`], the first in NCCL's order on a tie (`topoGetAlgoInfo`,
/// `src/enqueue.cc:2028-2046`).
pub fn nccl_choice_with_graphs(
    op: Collective,
    bytes: f64,
    topo: &NcclTopo,
    graphs: &NcclGraphs,
) -> Option<NcclChoice> {
    let mut best: Option<NcclChoice> = None;
    for cand in nccl_candidates(op, bytes, topo, graphs) {
        if best.is_none_or(|b| cand.time_s < b.time_s) {
            best = Some(cand);
        }
    }
    best
}

/// NCCL's pick for `op` of `bytes` (nccl-tests sizes) on `topo`, with the graphs
/// [`nccl_graphs`] derives; `None` for all-to-all and send/recv (NCCL has no model for them),
/// for one rank, and for a size that is negative or not finite.
///
/// Memoised per thread: the mesh search asks for the same collective of the same size on the
/// same communicator many times (405B on 16,384 H100: 14.5 ms before the tuner, 38 ms with it
/// unmemoised at about 250 ns a call), and the answer depends on nothing else; a slot holds
/// its whole key, so a collision recomputes, never answers for another key.
pub fn nccl_choice(op: Collective, bytes: f64, topo: &NcclTopo) -> Option<NcclChoice> {
    use std::cell::RefCell;
    // Slots of the memo, direct-mapped by the key's hash: a search touches a few thousand
    // distinct collectives. A fixed table and a hand hash, not a HashMap, keep hashbrown and
    // SipHash out of the page's first-load wasm.
    const MEMO_SLOTS: usize = 1 << 12;
    type Slot = Option<(ChoiceKey, Option<NcclChoice>)>;
    thread_local! {
        static MEMO: RefCell<Vec<Slot>> = RefCell::new(vec![None; MEMO_SLOTS]);
    }
    let key = ChoiceKey::of(op, bytes, topo);
    let slot = (key.fnv1a64() as usize) % MEMO_SLOTS;
    let hit = MEMO.with(|m| match m.borrow()[slot] {
        Some((k, choice)) if k == key => Some(choice),
        _ => None,
    });
    if let Some(choice) = hit {
        return choice;
    }
    let choice = nccl_choice_with_graphs(op, bytes, topo, &nccl_graphs(topo));
    MEMO.with(|m| m.borrow_mut()[slot] = Some((key, choice)));
    choice
}

/// Everything [`nccl_choice`] reads, bit for bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ChoiceKey {
    op: Collective,
    bytes: u64,
    nodes: u64,
    ranks_per_node: u64,
    arch: NcclArch,
    cpu: NcclCpu,
    nvlink: u64,
    nic: u64,
    nvls: bool,
    collnet: bool,
}

impl ChoiceKey {
    /// FNV-1a over the key's fields (the slot of [`nccl_choice`]'s memo).
    fn fnv1a64(&self) -> u64 {
        let words = [
            self.op as u64,
            self.bytes,
            self.nodes,
            self.ranks_per_node,
            self.arch as u64,
            self.cpu as u64,
            self.nvlink,
            self.nic,
            u64::from(self.nvls) | (u64::from(self.collnet) << 1),
        ];
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for w in words {
            for byte in w.to_le_bytes() {
                h ^= u64::from(byte);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }

    fn of(op: Collective, bytes: f64, t: &NcclTopo) -> Self {
        ChoiceKey {
            op,
            bytes: bytes.to_bits(),
            nodes: t.nodes,
            ranks_per_node: t.ranks_per_node,
            arch: t.arch,
            cpu: t.cpu,
            nvlink: t.nvlink_bytes_per_s.to_bits(),
            nic: t.nic_bytes_per_s.to_bits(),
            nvls: t.nvls,
            collnet: t.collnet,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Graph derivation: a reduced replay of ncclTopoCompute (src/graph/search.cc).

// NCCL 2.30.7 src/graph/search.cc:1051 speedArrayIntra GB/s (pre-Hopper, one node)
const SPEEDS_INTRA: [f64; 13] = [
    40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0,
];
// NCCL 2.30.7 src/graph/search.cc:1052-1053 speedArrayInter GB/s (pre-Hopper, several nodes)
const SPEEDS_INTER: [f64; 19] = [
    48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2,
    0.24, 0.12,
];
// NCCL 2.30.7 src/graph/search.cc:1057 sm90SpeedArrayIntra GB/s
const SPEEDS_INTRA_SM90: [f64; 11] = [
    60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0,
];
// NCCL 2.30.7 src/graph/search.cc:1058-1059 sm90SpeedArrayInter GB/s
const SPEEDS_INTER_SM90: [f64; 17] = [
    48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24,
    0.12,
];
// NCCL 2.30.7 src/graph/search.cc:1063 sm100SpeedArrayIntra GB/s
const SPEEDS_INTRA_SM100: [f64; 12] = [
    90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0,
];
// NCCL 2.30.7 src/graph/search.cc:1064-1065 sm100SpeedArrayInter GB/s
const SPEEDS_INTER_SM100: [f64; 20] = [
    96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0,
    2.4, 1.2, 0.24, 0.12,
];
// NCCL 2.30.7 src/include/device.h:91 MAXCHANNELS 64; src/init.cc:1177 ring maxChannels = MAXCHANNELS/2
const MAX_CHANNELS: u64 = 64;
// NCCL 2.30.7 src/include/device.h:213 NCCL_MAX_NVLS_ARITY
const MAX_NVLS_ARITY: u64 = 32;
// NCCL 2.30.7 src/include/device.h:199 NCCL_MAX_DIRECT_ARITY 7: CollNet direct heads <= 8 (search.cc:1130)
const MAX_DIRECT_HEADS: u64 = 8;

/// The ladder `ncclTopoCompute` walks: intra arrays without a network, inter arrays with one.
fn ladder(arch: NcclArch, multi_node: bool) -> &'static [f64] {
    // NCCL 2.30.7 src/graph/search.cc:1153-1161 sm100 / sm90 / older arrays, Intra when system->inter == 0
    match (arch, multi_node) {
        (NcclArch::Blackwell, false) => &SPEEDS_INTRA_SM100,
        (NcclArch::Blackwell, true) => &SPEEDS_INTER_SM100,
        (NcclArch::Hopper, false) => &SPEEDS_INTRA_SM90,
        (NcclArch::Hopper, true) => &SPEEDS_INTER_SM90,
        (_, false) => &SPEEDS_INTRA,
        (_, true) => &SPEEDS_INTER,
    }
}

/// One pass-1 search: the ladder, the limits, and how many channels fit at a speed.
struct Search<'a> {
    ladder: &'a [f64],
    /// `system->maxBw`, GB/s.
    max_bw: f64,
    /// `system->totalBw`, GB/s (the stop test).
    total_bw: f64,
    /// `totalBw` as the start speed sees it (× k/(k−1) for patterns other than ring).
    start_total_bw: f64,
    min_ch: u64,
    max_ch: u64,
    /// NVLS compares graphs by channel count first (search.cc:450-455).
    nvls: bool,
    fit: &'a dyn Fn(f64) -> u64,
}

/// Pass 1 of `ncclTopoCompute` (search.cc:1170-1252): best `(channels, speed)`, or `None`.
fn search_pass1(s: &Search) -> Option<(u64, f64)> {
    // NCCL 2.30.7 src/graph/search.cc:1170-1173 start at the first speed <= maxBw with speed × minChannels <= totalBw
    let mut i = s
        .ladder
        .iter()
        .position(|&v| v <= s.max_bw && v * s.min_ch as f64 <= s.start_total_bw)
        .unwrap_or(s.ladder.len().saturating_sub(1));
    let mut best: Option<(u64, f64)> = None;
    while let Some(&speed) = s.ladder.get(i) {
        let ch = (s.fit)(speed).min(s.max_ch);
        // NCCL 2.30.7 src/graph/search.cc:445-468 ncclTopoCompareGraphs: NVLS more channels or more nCh·bwInter; others more nCh·bwIntra
        let better =
            best.is_none_or(|(bc, bs)| ch as f64 * speed > bc as f64 * bs || (s.nvls && ch > bc));
        if ch >= s.min_ch.max(1) && better {
            best = Some((ch, speed));
        }
        // NCCL 2.30.7 src/graph/search.cc:635,1197-1198 done when nChannels == maxChannels or nChannels × bwInter >= totalBw
        if best.is_some_and(|(bc, bs)| bc == s.max_ch || bc as f64 * bs >= s.total_bw) {
            break;
        }
        // NCCL 2.30.7 src/graph/search.cc:1244-1248 lower the speed while none found or next/best > 0.49
        match s.ladder.get(i + 1) {
            Some(&next) if best.is_none_or(|(_, bs)| next / bs > 0.49) => i += 1,
            _ => break,
        }
    }
    best
}

/// `ncclTopoDupChannels` (search.cc:1036-1050): twice the channels at half the speed.
fn dup_channels(arch: NcclArch, ch: u64, bw: f64, max_ch: u64) -> (u64, f64) {
    // NCCL 2.30.7 src/graph/search.cc:1039-1040 skip below 25 GB/s, and on > sm80 below 50 GB/s with more than 4 channels
    if bw < 25.0 || (arch.min_comp_cap() > 80 && bw < 50.0 && ch > 4) {
        return (ch, bw);
    }
    // NCCL 2.30.7 src/graph/search.cc:1042-1048 dup = min(2·nCh, maxChannels), bw /= ceil(dup/nCh)
    let dup = (2 * ch).min(max_ch);
    (dup, bw / dup.div_ceil(ch) as f64)
}

/// Pass 2 raise (search.cc:1254-1285): the highest ladder speed above `from` (and below
/// `limit`) at which `fits` still holds, stepping one speed at a time.
fn raise(ladder: &[f64], from: f64, limit: f64, fits: &dyn Fn(f64) -> bool) -> f64 {
    // NCCL 2.30.7 src/graph/search.cc:1260-1262 start at the first ladder speed <= the graph's (else the last)
    let mut i = ladder
        .iter()
        .position(|&v| v <= from)
        .unwrap_or(ladder.len().saturating_sub(1));
    let mut speed = from;
    while i > 0 && speed < limit {
        i -= 1;
        let Some(&next) = ladder.get(i) else {
            break;
        };
        if !fits(next) {
            break;
        }
        speed = next;
    }
    speed
}

/// [`raise`] for trees, CollNet and NVLS, which step only from a speed on the ladder.
fn raise_from_ladder(ladder: &[f64], from: f64, limit: f64, fits: &dyn Fn(f64) -> bool) -> f64 {
    // NCCL 2.30.7 src/graph/search.cc:1274,1279 tmpGraph (a ladder speed) must equal the graph's bandwidth
    if ladder.contains(&from) {
        raise(ladder, from, limit, fits)
    } else {
        from
    }
}

/// Per-GPU inputs in GB/s, zero for anything not a positive number.
fn gb_per_s(bytes_per_s: f64) -> f64 {
    if bytes_per_s.is_finite() && bytes_per_s > 0.0 {
        bytes_per_s / 1e9
    } else {
        0.0
    }
}

/// The fixed quantities of one node's search.
struct Node {
    arch: NcclArch,
    multi: bool,
    k: u64,
    nvlink: f64,
    nic: f64,
    max_bw: f64,
    total_bw: f64,
}

impl Node {
    fn of(topo: &NcclTopo) -> Node {
        let (nvlink, nic) = (
            gb_per_s(topo.nvlink_bytes_per_s),
            gb_per_s(topo.nic_bytes_per_s),
        );
        let multi = topo.nodes > 1;
        // NCCL 2.30.7 src/graph/search.cc:18-51 maxBw = best GPU→NET path (several nodes) or GPU→GPU path (NVSwitch: NVLink total); totalBw = max(NVLink sum, PCI)
        let max_bw = if multi { nic } else { nvlink };
        Node {
            arch: topo.arch,
            multi,
            k: topo.ranks_per_node.max(1),
            nvlink,
            nic,
            max_bw,
            total_bw: nvlink.max(nic),
        }
    }

    /// Ring/tree channels at speed `s`: NVLink ports inside a node, NICs across.
    fn chain_fit(&self, s: f64) -> u64 {
        let k = self.k as f64;
        // Derived from NCCL 2.30.7 src/graph/search.cc ncclTopoFollowPath (module doc): one node floor(nvlink/s); several floor(nvlink·k/((k−1)·s))
        let nvlink = if !self.multi {
            (self.nvlink / s).floor()
        } else if self.k > 1 {
            (self.nvlink * k / ((k - 1.0) * s)).floor()
        } else {
            f64::INFINITY
        };
        // NCCL 2.30.7 src/graph/search.cc:738-746 a NIC takes another channel only while its remaining bw >= the speed
        let nic = if self.multi {
            k * (self.nic / s).floor()
        } else {
            f64::INFINITY
        };
        nvlink.min(nic).min(MAX_CHANNELS as f64) as u64
    }

    fn non_ring_total(&self) -> f64 {
        // NCCL 2.30.7 src/graph/search.cc:1168 patterns other than ring: totalBw × ndevs/(ndevs − 1)
        if self.k > 1 {
            self.total_bw * self.k as f64 / (self.k - 1) as f64
        } else {
            self.total_bw
        }
    }
}

// NCCL 2.30.7 src/graph/search.cc:1289-1310 no path found: 1 channel at 0.1 GB/s ("simple order")
const FALLBACK: NcclGraph = NcclGraph {
    n_channels: 1,
    bw_intra_gb_per_s: 0.1,
    bw_inter_gb_per_s: 0.1,
};

/// Ring graph (`ringGraph`, pattern RING, 1..32 channels).
fn ring_graph(n: &Node) -> NcclGraph {
    let ladder = ladder(n.arch, n.multi);
    let fit = |s: f64| n.chain_fit(s);
    // NCCL 2.30.7 src/init.cc:1176-1177 ring minChannels 1, maxChannels MAXCHANNELS/2
    let max_ch = MAX_CHANNELS / 2;
    let search = Search {
        ladder,
        max_bw: n.max_bw,
        total_bw: n.total_bw,
        start_total_bw: n.total_bw,
        min_ch: 1,
        max_ch,
        nvls: false,
        fit: &fit,
    };
    let Some((ch, s)) = search_pass1(&search) else {
        return FALLBACK;
    };
    let (ch, bw) = dup_channels(n.arch, ch, s, max_ch);
    // NCCL 2.30.7 src/graph/search.cc:1270-1273 pass 2 raises a ring's speed while nChannels still fit
    let bw = raise(ladder, bw, f64::INFINITY, &|v| n.chain_fit(v) >= ch);
    NcclGraph {
        n_channels: ch,
        bw_intra_gb_per_s: bw,
        bw_inter_gb_per_s: bw,
    }
}

/// Tree graph (`treeGraph`, BALANCED_TREE, exactly the ring's channels); also CollNet chain.
fn tree_graph(n: &Node, ring_ch: u64) -> NcclGraph {
    let ladder = ladder(n.arch, n.multi);
    let fit = |s: f64| n.chain_fit(s);
    // NCCL 2.30.7 src/init.cc:1184-1185 tree minChannels = maxChannels = ring nChannels
    let search = Search {
        ladder,
        max_bw: n.max_bw,
        total_bw: n.total_bw,
        start_total_bw: n.non_ring_total(),
        min_ch: ring_ch,
        max_ch: ring_ch,
        nvls: false,
        fit: &fit,
    };
    let Some((ch, s)) = search_pass1(&search) else {
        return FALLBACK;
    };
    let (ch, bw) = dup_channels(n.arch, ch, s, ring_ch);
    // NCCL 2.30.7 src/graph/search.cc:1279-1282 pass 2 raises a tree's bwIntra while < 2 × bwInter and it fits NVLink
    let intra_fit = |v: f64| {
        let (k, multi) = (n.k as f64, n.multi);
        // Derived (module doc): a chain loads each NVLink port with bwIntra, k−1 of k GPUs across nodes
        let per_gpu = if !multi {
            v
        } else if n.k > 1 {
            v * (k - 1.0) / k
        } else {
            0.0
        };
        ch as f64 * per_gpu <= n.nvlink
    };
    let intra = raise_from_ladder(ladder, bw, 2.0 * bw, &intra_fit);
    NcclGraph {
        n_channels: ch,
        bw_intra_gb_per_s: intra,
        bw_inter_gb_per_s: bw,
    }
}

/// NVLS graph (`nvlsGraph`): one channel per head GPU.
fn nvls_graph(n: &Node) -> Option<NcclGraph> {
    let ladder = ladder(n.arch, n.multi);
    // NCCL 2.30.7 src/graph/search.cc:1127 maxChannels = min(NCCL_MAX_NVLS_ARITY, ngpus)
    let max_ch = n.k.min(MAX_NVLS_ARITY);
    // NCCL 2.30.7 src/graph/search.cc:1135-1137 one node: minChannels = maxChannels (every GPU a head)
    let min_ch = if n.multi { 1 } else { max_ch };
    // NCCL 2.30.7 src/graph/search.cc:410-418 a channel loads each NVSwitch port with bw and its head's with 2·bw
    let fit = |s: f64| {
        let ports = ((n.nvlink / s).floor() - 1.0).max(0.0);
        let nics = if n.multi {
            n.k as f64 * (n.nic / s).floor()
        } else {
            f64::INFINITY
        };
        ports.min(nics).min(MAX_CHANNELS as f64) as u64
    };
    let search = Search {
        ladder,
        max_bw: n.max_bw,
        total_bw: n.total_bw,
        start_total_bw: n.non_ring_total(),
        min_ch,
        max_ch,
        nvls: true,
        fit: &fit,
    };
    let (ch, bw) = search_pass1(&search)?;
    // NCCL 2.30.7 src/graph/search.cc:1274-1277 pass 2 raises NVLS bwInter while < 2 × bwIntra (and the head's NIC carries it)
    let inter = raise_from_ladder(ladder, bw, 2.0 * bw, &|v| !n.multi || v <= n.nic);
    Some(NcclGraph {
        n_channels: ch,
        bw_intra_gb_per_s: bw,
        bw_inter_gb_per_s: inter,
    })
}

/// CollNet-direct graph (`collNetDirectGraph`): one head per NIC, at most 8.
fn collnet_direct_graph(n: &Node) -> Option<NcclGraph> {
    let ladder = ladder(n.arch, n.multi);
    let max_ch = n.k.min(MAX_DIRECT_HEADS);
    let k = n.k as f64;
    // NCCL 2.30.7 src/graph/search.cc:373-395 head sends bw, every other GPU bw/(k − 1), per channel
    let heads_fit = |s: f64| {
        if n.k > 1 {
            (1.0 + ((n.nvlink / s) - 1.0) * (k - 1.0)).floor().max(0.0)
        } else {
            f64::INFINITY
        }
    };
    // NCCL 2.30.7 src/graph/search.cc:754-760 one head per NIC, while the NIC has bw left
    let fit = |s: f64| {
        heads_fit(s)
            .min(k * (n.nic / s).floor())
            .min(MAX_CHANNELS as f64) as u64
    };
    let search = Search {
        ladder,
        max_bw: n.max_bw,
        total_bw: n.total_bw,
        start_total_bw: n.non_ring_total(),
        min_ch: 1,
        max_ch,
        nvls: false,
        fit: &fit,
    };
    let (ch, s) = search_pass1(&search)?;
    let (ch, bw) = dup_channels(n.arch, ch, s, max_ch);
    // NCCL 2.30.7 src/graph/search.cc:1279-1282 pass 2 raises bwIntra (collnet) while < 2 × bwInter
    let intra = raise_from_ladder(ladder, bw, 2.0 * bw, &|v| heads_fit(v) >= ch as f64);
    Some(NcclGraph {
        n_channels: ch,
        bw_intra_gb_per_s: intra,
        bw_inter_gb_per_s: bw,
    })
}

/// NCCL's graphs for `topo`, derived from its per-GPU NVLink and NIC bandwidth as the module
/// documentation describes (a reduced replay of `ncclTopoCompute`, not the full search).
pub fn nccl_graphs(topo: &NcclTopo) -> NcclGraphs {
    let n = Node::of(topo);
    let ring = ring_graph(&n);
    let tree = tree_graph(&n, ring.n_channels);
    // NCCL 2.30.7 src/graph/search.cc:1124 NVLS needs an NVSwitch and sm90+; src/transport/nvls.cc:262 and >= 2 GPUs
    let nvls_possible = topo.nvls && n.arch.min_comp_cap() >= 90 && n.k >= 2;
    let nvls = if nvls_possible { nvls_graph(&n) } else { None };
    // NCCL 2.30.7 src/init.cc:1202-1207 CollNet graphs are searched only with collnetEnable (several nodes)
    let collnet = topo.collnet && n.multi;
    let collnet_direct = if collnet {
        collnet_direct_graph(&n)
    } else {
        None
    };
    let collnet_chain = if collnet { Some(tree) } else { None };
    NcclGraphs {
        ring,
        tree,
        // NCCL 2.30.7 src/graph/search.cc:1133 with one GPU a non-ring graph becomes pattern TREE
        tree_pattern_tree: n.k == 1,
        nvls,
        collnet_direct,
        collnet_chain,
        exec_channels: exec_channels(&n, &ring, &tree, collnet_chain),
    }
}

/// `comm->nChannels` after `ncclTopoPostset` (src/graph/connect.cc:460-483).
fn exec_channels(n: &Node, ring: &NcclGraph, tree: &NcclGraph, chain: Option<NcclGraph>) -> u64 {
    // NCCL 2.30.7 src/init.cc:1459 + src/graph/connect.cc:460 min(tree, ring) channels, doubled, <= MAXCHANNELS
    let mut ch = (2 * ring.n_channels.min(tree.n_channels)).min(MAX_CHANNELS);
    // NCCL 2.30.7 src/graph/connect.cc:465-468 CollNet with chain bwIntra > bwInter and ppn > 1: + half again
    if chain.is_some_and(|g| g.bw_intra_gb_per_s > g.bw_inter_gb_per_s) && n.k > 1 {
        ch = (ch + ch / 2).min(MAX_CHANNELS);
    }
    // NCCL 2.30.7 src/graph/connect.cc:481-483 sm90+ on several nodes with ring bwIntra > 45 and < 16 channels: ×2
    if n.arch.min_comp_cap() >= 90 && n.multi && ring.bw_intra_gb_per_s > 45.0 && ch < 16 {
        ch = (2 * ch).min(MAX_CHANNELS);
    }
    ch
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: f64 = 1024.0;
    const MIB: f64 = 1024.0 * KIB;
    const GIB: f64 = 1024.0 * MIB;
    const SIZES: [f64; 5] = [KIB, MIB, 16.0 * MIB, 128.0 * MIB, GIB];

    /// DGX H100: 18 NVLink 4 links × 20.6 GB/s, one NDR 400G NIC per GPU, Xeon hosts.
    fn dgx_h100(nodes: u64) -> NcclTopo {
        NcclTopo {
            nodes,
            ranks_per_node: 8,
            arch: NcclArch::Hopper,
            cpu: NcclCpu::Intel,
            nvlink_bytes_per_s: 18.0 * 20.6e9,
            nic_bytes_per_s: 50e9,
            nvls: true,
            collnet: false,
        }
    }

    /// DGX A100: 12 NVLink 3 links × 20 GB/s, one HDR 200G NIC per GPU, EPYC hosts.
    fn dgx_a100(nodes: u64) -> NcclTopo {
        NcclTopo {
            nodes,
            ranks_per_node: 8,
            arch: NcclArch::Ampere,
            cpu: NcclCpu::Amd,
            nvlink_bytes_per_s: 12.0 * 20.0e9,
            nic_bytes_per_s: 25e9,
            nvls: true,
            collnet: false,
        }
    }

    fn graph(n_channels: u64, intra: f64, inter: f64) -> NcclGraph {
        NcclGraph {
            n_channels,
            bw_intra_gb_per_s: intra,
            bw_inter_gb_per_s: inter,
        }
    }

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    fn find(c: &[NcclChoice], algo: NcclAlgo, proto: NcclProto) -> Option<NcclChoice> {
        c.iter()
            .copied()
            .find(|x| x.algo == algo && x.proto == proto)
    }

    fn pick(op: Collective, bytes: f64, topo: &NcclTopo) -> (NcclAlgo, NcclProto) {
        let c = nccl_choice(op, bytes, topo).expect("NCCL tunes this collective");
        (c.algo, c.proto)
    }

    /// `python3 /tmp/research/nccl_model.py` (its `tune` + `t`, same graphs): µs for B = 1 KiB, 1 MiB, 16 MiB, 128 MiB, 1 GiB.
    #[rustfmt::skip]
    const PY_H100_X16: &[(NcclAlgo, NcclProto, [f64; 5])] = &[
        (NcclAlgo::Tree, NcclProto::Ll, [55.3115468409586, 260.80313725490197, 1882.7834422657952, 13213.800784313726, 105324.0062745098]),
        (NcclAlgo::Tree, NcclProto::Ll128, [99.50882758620689, 114.56574712643678, 260.20130268199233, 1256.5493793103449, 9355.895034482759]),
        (NcclAlgo::Tree, NcclProto::Simple, [176.4079012345679, 190.96355555555556, 342.8406349206349, 1212.0306172839507, 7632.940444444444]),
        (NcclAlgo::Ring, NcclProto::Ll, [311.6996078431373, 413.59843137254904, 1943.5749019607842, 13367.399215686275, 104757.9937254902]),
        (NcclAlgo::Ring, NcclProto::Ll128, [559.6069209809264, 566.6870844686648, 672.9933514986375, 1466.7468119891007, 7816.774495912807]),
        (NcclAlgo::Ring, NcclProto::Simple, [1190.0052916666666, 1671.4186666666667, 1752.6986666666667, 2359.5893333333333, 7214.714666666667]),
        (NcclAlgo::NvlsTree, NcclProto::Simple, [192.2055824175824, 197.9163956043956, 283.66232967032965, 923.8986373626374, 6045.789098901098]),
    ];
    /// `python3 /tmp/research/nccl_model.py` (its `tune` + `t`, same graphs): µs for B = 1 KiB, 1 MiB, 16 MiB, 128 MiB, 1 GiB.
    #[rustfmt::skip]
    const PY_H100_X1: &[(NcclAlgo, NcclProto, [f64; 5])] = &[
        (NcclAlgo::Tree, NcclProto::Ll, [15.226108427267846, 63.32305314009662, 442.96047235641436, 3095.075400966183, 24654.203207729468]),
        (NcclAlgo::Tree, NcclProto::Ll128, [31.507950310559007, 45.06853002070393, 176.2309868875086, 1073.563105590062, 8368.004844720495]),
        (NcclAlgo::Tree, NcclProto::Simple, [64.4068706387547, 77.063961352657, 209.13098688750864, 964.9483628556092, 6548.348212560386]),
        (NcclAlgo::Ring, NcclProto::Ll, [15.012709219858156, 28.014241134751774, 223.2278581560284, 1680.8228652482271, 13341.582921985817]),
        (NcclAlgo::Ring, NcclProto::Ll128, [40.60541062801932, 46.14048309178743, 129.24772946859903, 749.7818357487923, 5714.054685990339]),
        (NcclAlgo::Ring, NcclProto::Simple, [56.004977777777775, 61.09724444444444, 137.55591111111113, 708.447288888889, 5275.578311111112]),
        (NcclAlgo::Nvls, NcclProto::Simple, [25.003764705882354, 28.85505882352941, 86.68094117647058, 518.4475294117647, 3972.5802352941178]),
    ];
    /// `python3 /tmp/research/nccl_model.py` (its `tune` + `t`, same graphs): µs for B = 1 KiB, 1 MiB, 16 MiB, 128 MiB, 1 GiB.
    #[rustfmt::skip]
    const PY_A100_X16: &[(NcclAlgo, NcclProto, [f64; 5])] = &[
        (NcclAlgo::Tree, NcclProto::Ll, [55.31976608187134, 275.9528421052632, 2017.447485380117, 14183.381894736844, 113080.65515789474]),
        (NcclAlgo::Tree, NcclProto::Ll128, [99.51534082397004, 125.68167290886392, 378.7711776945485, 2110.252479400749, 16185.519835205992]),
        (NcclAlgo::Tree, NcclProto::Simple, [176.4159800249688, 205.85438202247192, 513.0215088282505, 2270.9338327091136, 15257.043595505618]),
        (NcclAlgo::Ring, NcclProto::Ll, [535.7069473684211, 645.1141052631579, 2287.825684210526, 14553.40547368421, 112678.04378947368]),
        (NcclAlgo::Ring, NcclProto::Ll128, [582.0127, 595.0048, 790.0768, 2246.6144, 13898.9152]),
        (NcclAlgo::Ring, NcclProto::Simple, [1772.4105833333335, 2492.1973333333335, 2654.7573333333335, 3868.538666666667, 13578.789333333334]),
    ];

    /// Every candidate's time equals nccl_model.py's to 1e-6, and the sets are the same.
    fn assert_matches_python(topo: &NcclTopo, table: &[(NcclAlgo, NcclProto, [f64; 5])]) {
        for (i, bytes) in SIZES.iter().enumerate() {
            let cands = nccl_candidates(Collective::AllReduce, *bytes, topo, &nccl_graphs(topo));
            assert_eq!(cands.len(), table.len(), "candidate set at {bytes} B");
            for (algo, proto, times_us) in table {
                let c = find(&cands, *algo, *proto).expect("candidate present");
                let us = c.time_s * 1e6;
                assert!(
                    rel(us, times_us[i]) < 1e-6,
                    "{algo:?}/{proto:?} at {bytes} B: {us} vs {}",
                    times_us[i]
                );
            }
        }
    }

    #[test]
    fn derived_graphs_are_nccls_for_dgx_h100_and_a100() {
        let one = nccl_graphs(&dgx_h100(1));
        assert_eq!(one.ring, graph(12, 30.0, 30.0));
        assert_eq!(one.tree, graph(12, 30.0, 30.0));
        assert_eq!(one.nvls, Some(graph(8, 40.0, 60.0)));
        assert_eq!(one.exec_channels, 24);
        let many = nccl_graphs(&dgx_h100(16));
        assert_eq!(many.ring, graph(8, 48.0, 48.0));
        assert_eq!(many.tree, graph(8, 48.0, 48.0));
        assert_eq!(many.nvls, Some(graph(8, 40.0, 48.0)));
        assert_eq!(many.exec_channels, 16);
        assert!(!many.tree_pattern_tree);
        let a100 = nccl_graphs(&dgx_a100(16));
        assert_eq!(a100.ring, graph(8, 24.0, 24.0));
        assert_eq!(a100.tree, graph(8, 30.0, 24.0));
        assert_eq!(a100.nvls, None, "no NVLS before sm90");
        assert_eq!(a100.exec_channels, 16);
        assert_eq!(nccl_graphs(&dgx_a100(1)).ring, graph(12, 20.0, 20.0));
    }

    #[test]
    fn every_candidate_matches_python_model_to_1e_6() {
        assert_matches_python(&dgx_h100(16), PY_H100_X16);
        assert_matches_python(&dgx_h100(1), PY_H100_X1);
        assert_matches_python(&dgx_a100(16), PY_A100_X16);
    }

    #[test]
    fn picks_match_python_model() {
        use NcclAlgo as A;
        use NcclProto as P;
        let ar = Collective::AllReduce;
        let h16 = dgx_h100(16);
        assert_eq!(pick(ar, KIB, &h16), (A::Tree, P::Ll));
        assert_eq!(pick(ar, 64.0 * KIB, &h16), (A::Tree, P::Ll));
        assert_eq!(pick(ar, MIB, &h16), (A::Tree, P::Ll128));
        assert_eq!(pick(ar, 16.0 * MIB, &h16), (A::Tree, P::Ll128));
        assert_eq!(pick(ar, 128.0 * MIB, &h16), (A::NvlsTree, P::Simple));
        assert_eq!(pick(ar, GIB, &h16), (A::NvlsTree, P::Simple));
        let h1 = dgx_h100(1);
        assert_eq!(pick(ar, KIB, &h1), (A::Ring, P::Ll));
        assert_eq!(pick(ar, MIB, &h1), (A::Ring, P::Ll));
        assert_eq!(pick(ar, 16.0 * MIB, &h1), (A::Nvls, P::Simple));
        let a16 = dgx_a100(16);
        assert_eq!(pick(ar, KIB, &a16), (A::Tree, P::Ll));
        assert_eq!(pick(ar, 128.0 * MIB, &a16), (A::Tree, P::Ll128));
        assert_eq!(pick(ar, GIB, &a16), (A::Ring, P::Simple));
        let t = nccl_choice(ar, GIB, &a16).map(|c| c.time_s * 1e6);
        assert!(
            t.is_some_and(|us| rel(us, 13578.789333333334) < 1e-6),
            "{t:?}"
        );
    }

    #[test]
    fn one_gib_all_reduce_on_16_h100_nodes_within_1pct_of_python() {
        let c = nccl_choice(Collective::AllReduce, GIB, &dgx_h100(16));
        let us = c.map(|c| c.time_s * 1e6).unwrap_or(f64::NAN);
        assert!(rel(us, 6045.789098901098) < 0.01, "{us}");
    }

    #[test]
    fn without_nvls_16_h100_nodes_fall_back_to_tree_then_ring_simple() {
        let topo = NcclTopo {
            nvls: false,
            ..dgx_h100(16)
        };
        let ar = Collective::AllReduce;
        assert_eq!(
            pick(ar, 16.0 * MIB, &topo),
            (NcclAlgo::Tree, NcclProto::Ll128)
        );
        assert_eq!(
            pick(ar, 128.0 * MIB, &topo),
            (NcclAlgo::Tree, NcclProto::Simple)
        );
        assert_eq!(pick(ar, GIB, &topo), (NcclAlgo::Ring, NcclProto::Simple));
        let us = nccl_choice(ar, GIB, &topo)
            .map(|c| c.time_s * 1e6)
            .unwrap_or(f64::NAN);
        assert!(rel(us, 7214.714666666667) < 1e-6, "{us}");
    }

    /// Latency (µs) of one candidate of a 1 KiB all-reduce on `nodes` DGX H100s.
    fn lat_us(nodes: u64, algo: NcclAlgo, proto: NcclProto) -> f64 {
        let topo = dgx_h100(nodes);
        let c = nccl_candidates(Collective::AllReduce, KIB, &topo, &nccl_graphs(&topo));
        find(&c, algo, proto).map_or(f64::NAN, |c| c.latency_s * 1e6)
    }

    #[test]
    fn ring_latency_grows_linearly_with_nodes_tree_with_log2_nodes() {
        // Ring LL per added node: 14 more NVLink steps at max(0.6, 1.0 net overhead) + 2 net steps × 2.7.
        for nodes in 2..12 {
            let step = lat_us(nodes + 1, NcclAlgo::Ring, NcclProto::Ll)
                - lat_us(nodes, NcclAlgo::Ring, NcclProto::Ll);
            assert!((step - 19.4).abs() < 1e-9, "{nodes}: {step}");
        }
        // Tree LL per doubling: 2 × 5.0 µs network hop; flat between powers of two.
        for nodes in [2, 4, 8, 16, 32] {
            let step = lat_us(2 * nodes, NcclAlgo::Tree, NcclProto::Ll)
                - lat_us(nodes, NcclAlgo::Tree, NcclProto::Ll);
            assert!((step - 10.0).abs() < 1e-9, "{nodes}: {step}");
        }
        assert_eq!(
            lat_us(17, NcclAlgo::Tree, NcclProto::Ll),
            lat_us(16, NcclAlgo::Tree, NcclProto::Ll)
        );
        assert!((lat_us(16, NcclAlgo::Tree, NcclProto::Ll) - 55.2).abs() < 1e-9);
    }

    #[test]
    fn ring_simple_plateau_starts_at_64_bytes_per_channel_and_rank() {
        // 16 execution channels × 128 ranks × 64 B = 131072 B; below it 1190 µs, from it × 1.4.
        let topo = dgx_h100(16);
        let graphs = nccl_graphs(&topo);
        let lat = |bytes: f64| {
            let c = nccl_candidates(Collective::AllReduce, bytes, &topo, &graphs);
            find(&c, NcclAlgo::Ring, NcclProto::Simple).map_or(f64::NAN, |c| c.latency_s * 1e6)
        };
        assert!((lat(131071.0) - 1190.0).abs() < 1e-9);
        assert!((lat(131072.0) - 1190.0 * 1.4).abs() < 1e-9);
        let one_node = dgx_h100(1);
        let c = nccl_candidates(
            Collective::AllReduce,
            GIB,
            &one_node,
            &nccl_graphs(&one_node),
        );
        let ring = find(&c, NcclAlgo::Ring, NcclProto::Simple).map(|c| c.latency_s * 1e6);
        assert!(
            ring.is_some_and(|us| (us - 56.0).abs() < 1e-9),
            "no plateau on one node: {ring:?}"
        );
    }

    #[test]
    fn tree_correction_applies_by_log2_size_below_512_mib() {
        let topo = dgx_h100(16);
        let graphs = nccl_graphs(&topo);
        let bw = |bytes: f64, proto: NcclProto| {
            let c = nccl_candidates(Collective::AllReduce, bytes, &topo, &graphs);
            find(&c, NcclAlgo::Tree, proto).map_or(f64::NAN, |c| c.algbw_bytes_per_s / 1e9)
        };
        // 16 MiB: log2(2^24 / 64) = 18, LL128 factor 0.9 of 116 GB/s.
        assert!((bw(16.0 * MIB, NcclProto::Ll128) - 116.0 * 0.9).abs() < 1e-9);
        // 256 MiB is index 22 (LL128 1.0); 512 MiB index 23 is past the table.
        assert!((bw(256.0 * MIB, NcclProto::Simple) - 144.0 * 0.9).abs() < 1e-9);
        assert!((bw(512.0 * MIB, NcclProto::Simple) - 144.0).abs() < 1e-9);
        // Under 64 B no correction (log2i(0) = −1); 64 B is index 0 (Simple 0.9).
        assert!((bw(63.0, NcclProto::Simple) - 144.0).abs() < 1e-9);
        assert!((bw(64.0, NcclProto::Simple) - 144.0 * 0.9).abs() < 1e-9);
    }

    #[test]
    fn all_gather_on_one_h100_node_ring_beats_nvls_at_1_gib() {
        let topo = dgx_h100(1);
        let c = nccl_candidates(Collective::AllGather, GIB, &topo, &nccl_graphs(&topo));
        let ring = find(&c, NcclAlgo::Ring, NcclProto::Simple).expect("ring");
        // 7 NVLink steps × 3.4 µs + 8.4 base; busBw 12 × 30 × n/(n − 1).
        assert!((ring.latency_s * 1e6 - 32.2).abs() < 1e-9);
        assert!(rel(ring.algbw_bytes_per_s, 360e9 * 8.0 / 7.0) < 1e-12);
        // NVLS all-gather: 8 × 40 × 0.85 × 7/8 × 7/8, no bus→alg conversion; latency 25 µs.
        let nvls = find(&c, NcclAlgo::Nvls, NcclProto::Simple).expect("nvls");
        assert!(
            rel(
                nvls.algbw_bytes_per_s,
                8.0 * 40.0 * 0.85 * 7.0 / 8.0 * 7.0 / 8.0 * 1e9
            ) < 1e-12
        );
        assert!((nvls.latency_s * 1e6 - 25.0).abs() < 1e-9);
        assert!(
            find(&c, NcclAlgo::Tree, NcclProto::Simple).is_none(),
            "no tree all-gather"
        );
        assert_eq!(
            pick(Collective::AllGather, GIB, &topo),
            (NcclAlgo::Ring, NcclProto::Simple)
        );
    }

    #[test]
    fn pat_only_for_gathers_with_one_gpu_per_node() {
        let one_per_node = NcclTopo {
            ranks_per_node: 1,
            ..dgx_h100(16)
        };
        let g = nccl_graphs(&one_per_node);
        assert!(g.tree_pattern_tree && g.nvls.is_none());
        let ag = nccl_candidates(Collective::AllGather, MIB, &one_per_node, &g);
        let pat = find(&ag, NcclAlgo::Pat, NcclProto::Simple).expect("PAT");
        // 8 base + log2(16) × 14/3.5 + 16 ranks × 2.8.
        assert!((pat.latency_s * 1e6 - 68.8).abs() < 1e-9);
        assert!(
            find(&ag, NcclAlgo::Pat, NcclProto::Ll).is_none(),
            "PAT is Simple only"
        );
        let rs = nccl_candidates(Collective::ReduceScatter, MIB, &one_per_node, &g);
        assert!(find(&rs, NcclAlgo::Pat, NcclProto::Simple).is_some());
        let ar = nccl_candidates(Collective::AllReduce, MIB, &one_per_node, &g);
        assert!(
            ar.iter().all(|c| c.algo != NcclAlgo::Pat),
            "no PAT all-reduce"
        );
        let eight = dgx_h100(16);
        let ag8 = nccl_candidates(Collective::AllGather, MIB, &eight, &nccl_graphs(&eight));
        assert!(
            ag8.iter().all(|c| c.algo != NcclAlgo::Pat),
            "no PAT with 8 GPUs per node"
        );
    }

    #[test]
    fn collnet_adds_sharp_algorithms_and_multi_node_nvls() {
        let topo = NcclTopo {
            collnet: true,
            ..dgx_h100(16)
        };
        let c = nccl_candidates(Collective::AllReduce, KIB, &topo, &nccl_graphs(&topo));
        let direct = find(&c, NcclAlgo::CollNetDirect, NcclProto::Simple).expect("direct");
        // 2 × (3.7 + 7 × 0.4) + 31; 8 × 48 / (8/8) × 0.85 × 0.5.
        assert!((direct.latency_s * 1e6 - 44.0).abs() < 1e-9);
        assert!(rel(direct.algbw_bytes_per_s, 8.0 * 48.0 * 0.85 * 0.5 * 1e9) < 1e-12);
        let chain = find(&c, NcclAlgo::CollNetChain, NcclProto::Simple).expect("chain");
        assert!((chain.latency_s * 1e6 - (2.0 * 7.0 * 2.8 + 30.0)).abs() < 1e-9);
        let nvls = find(&c, NcclAlgo::Nvls, NcclProto::Simple).expect("multi-node NVLS with SHARP");
        assert!((nvls.latency_s * 1e6 - 43.0).abs() < 1e-9);
        assert!(rel(nvls.algbw_bytes_per_s, 8.0 * 48.0 * 128.0 / 254.0 * 1e9) < 1e-12);
        assert_eq!(
            pick(Collective::AllReduce, KIB, &topo),
            (NcclAlgo::Nvls, NcclProto::Simple)
        );
        let plain = dgx_h100(16);
        let c = nccl_candidates(Collective::AllReduce, KIB, &plain, &nccl_graphs(&plain));
        assert!(c.iter().all(|x| !matches!(
            x.algo,
            NcclAlgo::Nvls | NcclAlgo::CollNetDirect | NcclAlgo::CollNetChain
        )));
    }

    #[test]
    fn broadcast_is_ring_only_with_one_hop_latency() {
        let topo = dgx_h100(16);
        let c = nccl_candidates(Collective::Broadcast, MIB, &topo, &nccl_graphs(&topo));
        assert_eq!(c.len(), 3);
        assert!(c.iter().all(|x| x.algo == NcclAlgo::Ring));
        let ll = find(&c, NcclAlgo::Ring, NcclProto::Ll).expect("ring LL");
        // 6.6 base + one network hop 2.7; busBw min(20.4 llMax Intel N4+, 0.5 × 384) × n/nsteps (1).
        assert!((ll.latency_s * 1e6 - 9.3).abs() < 1e-9);
        assert!(rel(ll.algbw_bytes_per_s, 20.4e9) < 1e-12);
        let simple = find(&c, NcclAlgo::Ring, NcclProto::Simple).expect("ring Simple");
        assert!(rel(simple.algbw_bytes_per_s, 384e9) < 1e-12);
    }

    #[test]
    fn none_for_untuned_ops_single_rank_and_bad_sizes() {
        let topo = dgx_h100(2);
        assert!(nccl_choice(Collective::AllToAll, MIB, &topo).is_none());
        assert!(nccl_choice(Collective::SendRecv, MIB, &topo).is_none());
        let single = NcclTopo {
            nodes: 1,
            ranks_per_node: 1,
            ..topo
        };
        assert!(nccl_choice(Collective::AllReduce, MIB, &single).is_none());
        assert!(nccl_choice(Collective::AllReduce, f64::NAN, &topo).is_none());
        assert!(nccl_choice(Collective::AllReduce, -1.0, &topo).is_none());
        assert!(nccl_choice(Collective::AllReduce, 0.0, &topo).is_some());
        let no_links = NcclTopo {
            nvlink_bytes_per_s: 0.0,
            nic_bytes_per_s: f64::NAN,
            ..topo
        };
        let c = nccl_choice(Collective::AllReduce, MIB, &no_links);
        assert!(
            c.is_some_and(|c| c.time_s.is_finite() && c.time_s > 0.0),
            "{c:?}"
        );
    }

    #[test]
    fn time_is_latency_plus_bytes_over_algbw() {
        for topo in [
            dgx_h100(1),
            dgx_h100(3),
            dgx_a100(4),
            NcclTopo {
                collnet: true,
                ..dgx_h100(4)
            },
        ] {
            for op in [
                Collective::AllReduce,
                Collective::AllGather,
                Collective::ReduceScatter,
                Collective::Reduce,
            ] {
                for c in nccl_candidates(op, 3.0 * MIB, &topo, &nccl_graphs(&topo)) {
                    let t = c.latency_s + 3.0 * MIB / c.algbw_bytes_per_s;
                    assert!(
                        rel(c.time_s, t) < 1e-12 && c.algbw_bytes_per_s > 0.0,
                        "{c:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn nvls_tree_size_correction_only_on_blackwell_with_x86_hosts() {
        let b200 = |cpu| NcclTopo {
            arch: NcclArch::Blackwell,
            cpu,
            nvlink_bytes_per_s: 18.0 * 40.1e9,
            ..dgx_h100(4)
        };
        let bw = |topo: &NcclTopo, bytes: f64| {
            let c = nccl_candidates(Collective::AllReduce, bytes, topo, &nccl_graphs(topo));
            find(&c, NcclAlgo::NvlsTree, NcclProto::Simple)
                .map_or(f64::NAN, |c| c.algbw_bytes_per_s)
        };
        let (x86, grace) = (b200(NcclCpu::Intel), b200(NcclCpu::Other));
        // 16 MiB: index 18, Simple factor 0.7; 1 GiB: index 24, past the table.
        assert!(rel(bw(&x86, 16.0 * MIB), 0.7 * bw(&grace, 16.0 * MIB)) < 1e-12);
        assert!(rel(bw(&x86, GIB), bw(&grace, GIB)) < 1e-12);
        let h100 = dgx_h100(4);
        assert!(
            rel(bw(&h100, 16.0 * MIB), bw(&h100, GIB)) < 1e-12,
            "no correction on Hopper"
        );
    }

    #[test]
    fn ids_are_stable() {
        let algos: Vec<&str> = NcclAlgo::NCCL_ORDER.iter().map(|a| a.id()).collect();
        assert_eq!(
            algos,
            [
                "tree",
                "ring",
                "collnet_direct",
                "collnet_chain",
                "nvls",
                "nvls_tree",
                "pat"
            ]
        );
        let protos: Vec<&str> = NcclProto::NCCL_ORDER.iter().map(|p| p.id()).collect();
        assert_eq!(protos, ["ll", "ll128", "simple"]);
    }
}
