//! The assumed communication model prices each link at the bus bandwidth NCCL measures on
//! it (input/link_efficiency.rs), not its datasheet line rate; the cluster keeps the line
//! rate, and a measured fit replaces the assumed entry.

use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::time::collectives::{AlphaBeta, Collective, CommModel, LinkDomain};

fn model(gpu: &str) -> (Cluster, CommModel) {
    let c = Cluster::of(gpu_preset(gpu).expect("preset"), 2);
    let m = CommModel::assumed(&c);
    (c, m)
}

fn busbw_gb(m: &CommModel, op: Collective, d: LinkDomain) -> f64 {
    m.link(op, d).busbw_bytes_per_s / 1e9
}

fn close(a: f64, b: f64) -> bool {
    (a / b - 1.0).abs() < 1e-12
}

#[test]
fn h100_links_run_at_nccls_measured_bus_bandwidth() {
    let (c, m) = model("h100-sxm");
    // The cluster keeps the datasheet's line rates.
    assert_eq!(c.intra_node.bytes_per_s, 450e9);
    assert_eq!(c.inter_node.bytes_per_s, 50e9);
    // NVLink 4: 18 links × 20.6 GB/s (NCCL's SM90_NVLINK_BW) = 370.8 GB/s for every
    // operation but all-reduce, which NVLink SHARP takes to 480 GB/s busBw.
    for op in Collective::ALL
        .into_iter()
        .filter(|op| *op != Collective::AllReduce)
    {
        assert!(
            close(busbw_gb(&m, op, LinkDomain::IntraNode), 370.8),
            "{op:?}"
        );
    }
    assert!(close(
        busbw_gb(&m, Collective::AllReduce, LinkDomain::IntraNode),
        480.0
    ));
    // One 400 Gb/s NDR NIC per GPU: 47 GB/s, every operation.
    for op in Collective::ALL {
        assert!(
            close(busbw_gb(&m, op, LinkDomain::InterNode), 47.0),
            "{op:?}"
        );
    }
    // Latencies stay the cluster's.
    assert_eq!(
        m.link(Collective::AllGather, LinkDomain::IntraNode)
            .latency_s,
        c.intra_node.latency_s
    );
    assert_eq!(
        m.link(Collective::AllToAll, LinkDomain::InterNode)
            .latency_s,
        c.inter_node.latency_s
    );
}

#[test]
fn other_presets_take_their_own_figures_or_the_line_rate() {
    // H800: 8 NVLink 4 links, 200 GB/s per direction: 8 × 20.6 = 164.8 GB/s.
    let (_, m) = model("h800");
    assert!(close(
        busbw_gb(&m, Collective::AllGather, LinkDomain::IntraNode),
        164.8
    ));
    // A100: ~230 of 300 GB/s for every operation (no NVLink SHARP), a 200 Gb/s HDR NIC at 24.
    let (_, m) = model("a100-80gb");
    for op in Collective::ALL {
        assert!(
            close(busbw_gb(&m, op, LinkDomain::IntraNode), 230.0),
            "{op:?}"
        );
        assert!(
            close(busbw_gb(&m, op, LinkDomain::InterNode), 24.0),
            "{op:?}"
        );
    }
    // B200: 18 NVLink 5 links × 40.1 GB/s (SM100_NVLINK_BW) = 721.8 GB/s, all-reduce included.
    let (_, m) = model("b200");
    assert!(close(
        busbw_gb(&m, Collective::AllReduce, LinkDomain::IntraNode),
        721.8
    ));
    // MI300X: 7 xGMI links × 48 GB/s = 336 GB/s; no RCCL network figure: the line rate.
    let (_, m) = model("mi300x");
    assert!(close(
        busbw_gb(&m, Collective::AllToAll, LinkDomain::IntraNode),
        336.0
    ));
    assert!(close(
        busbw_gb(&m, Collective::AllToAll, LinkDomain::InterNode),
        50.0
    ));
    // A custom GPU has no cited figure: its links run at the line rates given.
    let mut gpu = gpu_preset("h100-sxm").expect("preset");
    gpu.id = "my-gpu".into();
    let m = CommModel::assumed(&Cluster::of(gpu, 2));
    assert!(close(
        busbw_gb(&m, Collective::AllGather, LinkDomain::IntraNode),
        450.0
    ));
    assert!(close(
        busbw_gb(&m, Collective::AllGather, LinkDomain::InterNode),
        50.0
    ));
}

#[test]
fn a_measured_fit_replaces_the_assumed_share() {
    let (_, mut m) = model("h100-sxm");
    let fit = AlphaBeta {
        latency_s: 20e-6,
        busbw_bytes_per_s: 44e9,
    };
    m.set_measured(Collective::AllToAll, LinkDomain::InterNode, fit);
    assert_eq!(m.link(Collective::AllToAll, LinkDomain::InterNode), fit);
    assert!(m.is_measured(Collective::AllToAll, LinkDomain::InterNode));
    // The other entries keep their assumed shares.
    assert!(close(
        busbw_gb(&m, Collective::AllGather, LinkDomain::InterNode),
        47.0
    ));
    assert!(!m.is_measured(Collective::AllGather, LinkDomain::InterNode));
}
