//! The GPUs fine-tuners use, as presets (issue 41 §3): each record against its datasheet (the
//! citations sit above each record in input/gpu_presets/), and PCIe-only nodes priced and drawn
//! as PCIe: NCCL's count of the PCIe link, not NVLink.

use planner_core::figures::topology_map::topology_map;
use planner_core::input::gpu_presets::pcie_server::{PCIE_SERVER_GPUS, PCIE_SERVER_LINKS};
use planner_core::input::hardware::{gpu_preset, gpu_presets, Cluster, GB, MIB};
use planner_core::input::intra_node_link::IntraNodeLink;
use planner_core::parallel::topology::{Domain, GroupKind, GroupPlacement};
use planner_core::resolve::presets::default_scenario;
use planner_core::time::collectives::{Collective, CommModel};
use planner_core::time::cost::CostOptions;

/// Datasheet figures, copied by hand from the documents each preset cites, one row per GPU:
/// id, memory as sold (GB) and as `nvidia-smi` reports it (MiB), memory TB/s, dense BF16 and FP8
/// TFLOPS, the intra-node link each way (GB/s), the NIC per GPU (GB/s) and the link's kind. PCIe
/// Gen4 x16 is "64 GB/s" both ways (32 each way), Gen5 x16 "128 GB/s" (64); NVLink "400 GB/s"
/// (A800) and "900 GB/s" (H20) likewise halve. PCIe cards sit in the 2-8-5-200 server (one
/// 200 Gb/s port per GPU, 25 GB/s); A800 in the DGX A800 (200 Gb/s), H20 on one 400 Gb/s NIC.
type Datasheet = (
    &'static str,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    IntraNodeLink,
);

const PCIE: IntraNodeLink = IntraNodeLink::Pcie;
const NVLINK: IntraNodeLink = IntraNodeLink::NvLink;

const DATASHEETS: [Datasheet; 10] = [
    (
        "rtx-4090", 24.0, 24_564.0, 1.008, 165.2, 330.3, 32.0, 25.0, PCIE,
    ),
    (
        "rtx-5090", 32.0, 32_607.0, 1.792, 209.5, 419.0, 64.0, 25.0, PCIE,
    ),
    (
        "rtx-6000-ada",
        48.0,
        49_140.0,
        0.96,
        364.2,
        728.5,
        32.0,
        25.0,
        PCIE,
    ),
    (
        "rtx-pro-6000",
        96.0,
        97_887.0,
        1.792,
        503.8,
        1007.6,
        64.0,
        25.0,
        PCIE,
    ),
    (
        "l40s", 48.0, 46_068.0, 0.864, 362.05, 733.0, 32.0, 25.0, PCIE,
    ),
    ("l4", 24.0, 23_034.0, 0.3, 121.0, 242.5, 32.0, 25.0, PCIE),
    ("a10", 24.0, 24_564.0, 0.6, 125.0, 0.0, 32.0, 25.0, PCIE),
    (
        "rtx-a6000",
        48.0,
        49_140.0,
        0.768,
        154.8,
        0.0,
        32.0,
        25.0,
        PCIE,
    ),
    (
        "a800", 80.0, 81_920.0, 2.039, 312.0, 0.0, 200.0, 25.0, NVLINK,
    ),
    (
        "h20", 96.0, 97_871.0, 4.0, 148.0, 296.0, 450.0, 50.0, NVLINK,
    ),
];

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn each_new_preset_carries_its_datasheet() {
    for &(id, sold_gb, mib, memory_tb_per_s, bf16, fp8, intra_gb, nic_gb, link) in &DATASHEETS {
        let g = gpu_preset(id).unwrap_or_else(|| panic!("{id} is a preset"));
        assert!(close(g.datasheet_memory_bytes, sold_gb * GB), "{id}");
        assert!(close(g.memory_bytes, mib * MIB), "{id}");
        assert!(close(g.hbm_bytes_per_s, memory_tb_per_s * 1e12), "{id}");
        assert!(close(g.bf16_flops_per_s, bf16 * 1e12), "{id}");
        assert!(close(g.fp8_flops_per_s, fp8 * 1e12), "{id}");
        assert!(close(g.intra_node_bytes_per_s, intra_gb * GB), "{id}");
        assert!(close(g.inter_node_bytes_per_s, nic_gb * GB), "{id}");
        assert_eq!(g.gpus_per_node, 8, "{id}");
        assert_eq!(g.intra_node_link(), link, "{id}");
        // Reported at most the sold GB as GiB: the driver and (on the L40S and L4) ECC keep some.
        assert!(g.memory_bytes <= sold_gb * 1024.0 * MIB, "{id}");
    }
    // The L40S and L4 report with ECC on: 15/16 of 48 and 24 GiB, less 12 and 6 MiB.
    assert_eq!(46_068.0, 48.0 * 1024.0 * 15.0 / 16.0 - 12.0);
    assert_eq!(23_034.0, 24.0 * 1024.0 * 15.0 / 16.0 - 6.0);
}

/// Issue 43 §1's presets, copied by hand from the documents each record cites: id, GB sold,
/// MiB reported, TB/s, dense BF16 / FP8 / FP6 / FP4 TFLOPS, NVLink or Infinity Fabric each way
/// (GB/s), NIC per GPU (GB/s), GPUs in the scale-up domain, board power (W). NVLink 5 "1.8 TB/s"
/// and CDNA 4's 7 × 153.6 = 1,075.2 GB/s halve; ConnectX-8 800 Gb/s = 100 GB/s, the MI35x's 400
/// Gb/s default 50 GB/s.
const ISSUE_43_SHEETS: [(&str, [f64; 11], u32, f64); 4] = [
    (
        "b300",
        [
            288.0, 275_040.0, 8.0, 2250.0, 4500.0, 4500.0, 13_125.0, 900.0, 100.0, 0.0, 0.0,
        ],
        8,
        1100.0,
    ),
    (
        "gb300-nvl72",
        [
            288.0, 284_208.0, 8.0, 2500.0, 5000.0, 5000.0, 15_000.0, 900.0, 100.0, 0.0, 0.0,
        ],
        72,
        1400.0,
    ),
    (
        "mi355x",
        [
            288.0, 294_896.0, 8.0, 2516.6, 5033.2, 10_066.3, 10_066.3, 537.6, 50.0, 0.0, 0.0,
        ],
        8,
        1400.0,
    ),
    (
        "mi350x",
        [
            288.0, 294_896.0, 8.0, 2306.9, 4613.7, 9227.5, 9227.5, 537.6, 50.0, 0.0, 0.0,
        ],
        8,
        1000.0,
    ),
];

#[test]
fn blackwell_ultra_and_cdna4_presets_carry_their_datasheets() {
    use planner_core::input::gpu_traits::{Fp4Formats, SheetFigure};
    for &(id, f, gpus, watts) in &ISSUE_43_SHEETS {
        let g = gpu_preset(id).unwrap_or_else(|| panic!("{id} is a preset"));
        assert!(close(g.datasheet_memory_bytes, f[0] * GB), "{id}");
        assert!(close(g.memory_bytes, f[1] * MIB), "{id}");
        assert!(close(g.hbm_bytes_per_s, f[2] * 1e12), "{id}");
        assert!(close(g.bf16_flops_per_s, f[3] * 1e12), "{id}");
        assert!(close(g.fp8_flops_per_s, f[4] * 1e12), "{id}");
        let sheet = g.traits().sheet;
        assert_eq!(
            sheet.fp6_flops_per_s,
            SheetFigure::Stated(f[5] * 1e12),
            "{id}"
        );
        assert_eq!(
            sheet.fp4_flops_per_s,
            SheetFigure::Stated(f[6] * 1e12),
            "{id}"
        );
        assert!(close(g.intra_node_bytes_per_s, f[7] * GB), "{id}");
        assert!(close(g.inter_node_bytes_per_s, f[8] * GB), "{id}");
        assert_eq!(g.gpus_per_node, gpus, "{id}");
        assert_eq!(
            planner_core::input::hardware::gpu_board_power_w(id),
            Some(watts),
            "{id}"
        );
        assert!(g.memory_bytes <= f[0] * 1024.0 * MIB, "{id}");
    }
    // 288 GiB less the 16 MiB rocm-smi withholds, as on the MI300X (196,608 − 16).
    assert_eq!(294_896.0, 288.0 * 1024.0 - 16.0);
    // NVFP4 runs natively on Blackwell Ultra; CDNA 4 takes MXFP4 only; Hopper has no FP4 units.
    let native = |id: &str, nvfp4: bool| {
        gpu_preset(id).and_then(|g| g.traits().sheet.native_fp4_flops_per_s(nvfp4))
    };
    assert_eq!(native("b300", true), Some(13.125e15));
    assert_eq!(native("mi355x", true), None);
    assert_eq!(native("mi355x", false), Some(10_066.3e12));
    assert_eq!(native("h100-sxm", false), None);
    let h100 = gpu_preset("h100-sxm").expect("preset");
    assert_eq!(h100.traits().sheet.fp4_formats, Fp4Formats::None);
    assert_eq!(
        h100.traits().sheet.fp4_flops_per_s,
        SheetFigure::NotOnThisPart
    );
}

#[test]
fn geforce_rates_are_the_fp32_accumulate_ones() {
    // The whitepapers' FP16-accumulate rows (RTX 4090 330.3 BF16/FP16, 660.6 FP8; RTX 5090 419
    // and 838) are twice what training, which accumulates in FP32, gets on a GeForce card.
    let rate = |id: &str| gpu_preset(id).map(|g| (g.bf16_flops_per_s, g.fp8_flops_per_s));
    let (bf16, fp8) = rate("rtx-4090").expect("preset");
    assert!((bf16 - 330.3e12 / 2.0).abs() < 0.1e12, "{bf16}");
    assert!(close(fp8, 660.6e12 / 2.0));
    let (bf16, fp8) = rate("rtx-5090").expect("preset");
    assert!(close(bf16, 419e12 / 2.0));
    assert!(close(fp8, 838e12 / 2.0));
    // A professional card of the same die runs FP32 accumulation at the full rate: the RTX 6000
    // Ada's FP8 is twice its BF16.
    let (bf16, fp8) = rate("rtx-6000-ada").expect("preset");
    assert!((fp8 / bf16 - 2.0).abs() < 1e-3);
}

#[test]
fn pcie_presets_have_no_nvlink_and_no_nccl_tuner_node() {
    let pcie: Vec<_> = gpu_presets()
        .into_iter()
        .filter(|g| g.intra_node_link() == IntraNodeLink::Pcie)
        .map(|g| g.id)
        .collect();
    assert_eq!(
        pcie,
        [
            "rtx-a6000",
            "a10",
            "l40s",
            "rtx-6000-ada",
            "l4",
            "rtx-4090",
            "rtx-pro-6000",
            "rtx-5090"
        ]
    );
    for id in &pcie {
        let g = gpu_preset(id).expect("preset");
        let t = g.traits();
        assert!(t.nccl.is_none(), "{id}: α–β on the PCIe link");
        assert_eq!(t.links, PCIE_SERVER_LINKS, "{id}");
        assert_eq!(g.gpus_per_node, PCIE_SERVER_GPUS);
        // The PCIe ring step: NCCL's NCCL_HW_PCI ring Simple latency.
        assert_eq!(Cluster::of(g, 1).intra_node.latency_s, 5.7e-6, "{id}");
    }
    // The NVLink presets keep NCCL's NVLink step.
    let h100 = Cluster::of(gpu_preset("h100-sxm").expect("preset"), 1);
    assert_eq!(h100.intra_node.latency_s, 3.4e-6);
}

fn tp2() -> GroupPlacement {
    GroupPlacement {
        kind: GroupKind::Tp,
        size: 2,
        per_node: 2,
        nodes: 1,
        domain: Domain::IntraNode,
    }
}

#[test]
fn tp2_on_two_rtx_4090_is_priced_at_pcie_bandwidth() {
    let bytes = 256.0 * MIB;
    let comm = |id: &str| {
        let c = Cluster::of(gpu_preset(id).expect("preset"), 1);
        CommModel::assumed(&c).time_s(Collective::AllReduce, bytes, &tp2())
    };
    // Two ranks: a ring all-reduce of 2(n−1) = 2 steps of 5.7 µs and busbw factor 2(n−1)/n = 1,
    // at NCCL's count of the Gen4 x16 link: 32 GB/s × 24/32 = 24 GB/s.
    let rtx = comm("rtx-4090");
    let by_hand = 2.0 * 5.7e-6 + bytes / 24e9;
    assert!(close(rtx, by_hand), "{rtx} vs {by_hand}");
    assert!((rtx - 0.011_196).abs() < 1e-6, "{rtx}");
    // Two H100s over NVLink 4: NCCL's tuner, capped by the link's bus bandwidth (NVLink SHARP's
    // 480 GB/s), near the ring's 370.8 GB/s less its latencies: the 4090 pair is slower by the
    // bandwidth ratio, 370.8 / 24 = 15.5 (at most 480 / 24 = 20).
    let h100 = comm("h100-sxm");
    let ratio = rtx / h100;
    println!("TP 2 all-reduce of 256 MiB: RTX 4090 {rtx:.6} s, H100 {h100:.6} s, ratio {ratio:.2}");
    assert!(h100 >= bytes / 480e9, "{h100}");
    assert!(
        (0.9 * 370.8 / 24.0..=480.0 / 24.0).contains(&ratio),
        "{ratio}: 4090 {rtx} s, H100 {h100} s"
    );
    // An RTX 5090's Gen5 link doubles NCCL's count (48 GB/s): half the 4090's transfer time.
    let rtx5090 = comm("rtx-5090");
    assert!(close(rtx5090, 2.0 * 5.7e-6 + bytes / 48e9), "{rtx5090}");
}

#[test]
fn the_topology_figure_says_pcie_for_a_pcie_node() {
    let mut s = default_scenario();
    let model = s.model_spec().expect("model");
    let h100 = topology_map(&s, &model, &CostOptions::default());
    assert_eq!(h100.intra_node_link, "NVLink");
    s.cluster = Cluster::of(gpu_preset("rtx-4090").expect("preset"), s.cluster.nodes);
    let rtx = topology_map(&s, &model, &CostOptions::default());
    assert_eq!(rtx.intra_node_link, "PCIe");
    let tp = rtx
        .traffic
        .iter()
        .find(|t| t.kind == GroupKind::Tp)
        .expect("TP traffic");
    assert_eq!(tp.placement.domain, Domain::IntraNode);
    assert!(tp.intra_node_bytes_per_step > 0.0);
    s.cluster = Cluster::of(gpu_preset("mi300x").expect("preset"), s.cluster.nodes);
    let amd = topology_map(&s, &model, &CostOptions::default());
    assert_eq!(amd.intra_node_link, "Infinity Fabric");
}
