//! nccl-tests parsing and the α–β / GEMM fits, on synthetic outputs generated
//! from known parameters (not measurements) in nccl-tests' own print format.

use planner_core::edges::calibration_fit::{calibrate, fit_gemm, samples_from_nccl};
use planner_core::edges::nccl_tests::{parse, parse_json, parse_text};
use planner_core::input::calibration::{CommSample, GemmSample};
use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::layout::Layout;
use planner_core::input::precision::Precision;
use planner_core::input::scenario::{
    ActivationOptions, ModelChoice, Overheads, Scenario, Serving, Training, SCENARIO_VERSION,
};
use planner_core::resolve::presets::model_preset;
use planner_core::time::collectives::{Collective, CommModel, LinkDomain};
use planner_core::time::cost::{CostOptions, StepModel};

/// Time of an all-reduce of `bytes` on `n` ranks at α per step and `busbw` GB/s, µs.
fn ar_time_us(bytes: f64, n: f64, alpha_us: f64, busbw_gb: f64) -> f64 {
    2.0 * (n - 1.0) * alpha_us + bytes * 2.0 * (n - 1.0) / n / (busbw_gb * 1e3)
}

/// A table as nccl-tests prints it (`src/util.cu` format strings), with 8 ranks on `hosts`.
fn table(hosts: &[&str], per_host: usize, alpha_us: f64, busbw_gb: f64) -> String {
    let n = (hosts.len() * per_host) as f64;
    let mut s = String::new();
    s.push_str("# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703\n");
    s.push_str("# Collective test starting: all_reduce_perf\n");
    s.push_str("# nThread 1 nGpus 1 minBytes 1024 maxBytes 1073741824 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n#\n# Using devices\n");
    let mut r = 0;
    for h in hosts {
        for d in 0..per_host {
            s.push_str(&format!(
                "#  Rank {r:2} Group  0 Pid {:6} on {h:>10} device {d:2} [0000:18:00] NVIDIA H100 80GB HBM3\n",
                1000 + r
            ));
            r += 1;
        }
    }
    s.push_str("#\n#                                                              out-of-place                       in-place          \n");
    s.push_str("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
    s.push_str("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n");
    let mut bytes = 1024.0;
    while bytes <= 1073741824.0 {
        let t = ar_time_us(bytes, n, alpha_us, busbw_gb);
        let alg = bytes / t / 1e3;
        let bus = alg * 2.0 * (n - 1.0) / n;
        s.push_str(&format!(
            "{:12}  {:12}  {:>8}  {:>6}  {:>6}  {:7.2}  {:6.2}  {:6.2}  {:6}  {:7.2}  {:6.2}  {:6.2}  {:6}\n",
            bytes as u64,
            (bytes / 2.0) as u64,
            "bfloat16",
            "sum",
            -1,
            t,
            alg,
            bus,
            0,
            t,
            alg,
            bus,
            0
        ));
        bytes *= 4.0;
    }
    s.push_str("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 123.4 \n#\n# Collective test concluded: all_reduce_perf\n");
    s
}

#[test]
fn text_table_parses_with_op_ranks_and_hosts() {
    let run = parse_text(&table(&["node-a"], 8, 3.0, 400.0)).expect("parse");
    assert_eq!(run.op, Some(Collective::AllReduce));
    assert_eq!(run.ranks, Some(8));
    assert_eq!(run.hosts, Some(1));
    // 1 KiB .. 1 GiB by ×4: 11 sizes, out-of-place and in-place.
    assert_eq!(run.rows.len(), 22);
    assert_eq!(run.rows[0].size_bytes, 1024.0);
    assert!(run.rows[1].in_place);
}

#[test]
fn alpha_beta_fit_recovers_the_generating_link() {
    let run = parse(&table(&["node-a"], 8, 3.0, 400.0)).expect("parse");
    let samples = samples_from_nccl(&run, None, None, None).expect("samples");
    let c = Cluster::of(gpu_preset("h100-sxm").expect("gpu"), 1);
    let cal = calibrate(&samples, &[], &CommModel::assumed(&c), 989e12);
    assert_eq!(cal.links.len(), 1);
    let l = cal.links[0];
    assert_eq!(
        (l.op, l.domain),
        (Collective::AllReduce, LinkDomain::IntraNode)
    );
    // The table rounds times to 0.01 µs, so the fit is close, not exact.
    assert!((l.busbw_bytes_per_s / 400e9 - 1.0).abs() < 0.01, "{l:?}");
    assert!((l.latency_s / 3e-6 - 1.0).abs() < 0.05, "{l:?}");
    assert!(l.max_relative_error < 0.01);
}

#[test]
fn two_level_samples_fit_the_network_after_the_node_stages() {
    // 2 hosts × 8: generate times from the two-level model with a 45 GB/s network.
    let c = Cluster::of(gpu_preset("h100-sxm").expect("gpu"), 2);
    let mut truth = CommModel::assumed(&c);
    for op in Collective::ALL {
        truth.set_measured(
            op,
            LinkDomain::InterNode,
            planner_core::time::collectives::AlphaBeta {
                latency_s: 8e-6,
                busbw_bytes_per_s: 45e9,
            },
        );
    }
    let layout = Layout {
        dp: 16,
        ..Layout::default()
    };
    let p = planner_core::parallel::topology::Placement::of(&layout, 8, Default::default());
    let g = p.group(planner_core::parallel::topology::GroupKind::Dp);
    let samples: Vec<CommSample> = [1e6, 1e7, 1e8, 1e9]
        .iter()
        .map(|&b| CommSample {
            op: Collective::AllReduce,
            ranks: 16,
            ranks_per_node: 8,
            bytes: b,
            time_s: truth.time_s(Collective::AllReduce, b, g),
        })
        .collect();
    let cal = calibrate(&samples, &[], &CommModel::assumed(&c), 989e12);
    let l = cal.links[0];
    assert_eq!(l.domain, LinkDomain::InterNode);
    assert!((l.busbw_bytes_per_s / 45e9 - 1.0).abs() < 1e-6, "{l:?}");
    assert!((l.latency_s / 8e-6 - 1.0).abs() < 1e-6, "{l:?}");
}

#[test]
fn json_output_parses_like_the_table() {
    let json = include_str!("../fixtures/nccl/all_gather_perf.json");
    let run = parse_json(json).expect("json");
    assert_eq!(run.op, Some(Collective::AllGather));
    assert_eq!((run.ranks, run.hosts), (Some(2), Some(2)));
    assert_eq!(run.rows.len(), 3);
    let s = samples_from_nccl(&run, None, None, None).expect("samples");
    assert!(s.iter().all(|x| x.ranks_per_node == 1));
}

#[test]
fn bad_inputs_name_where() {
    let e = parse_json(r#"{"results":[{"size":"x"}]}"#).expect_err("bad size");
    assert_eq!(e.at, "results[0].size");
    let e = parse_json(
        r#"{"results":[{"size":8,"out_of_place":{"time":"nan","alg_bw":0,"bus_bw":0}}]}"#,
    )
    .expect_err("nan");
    assert_eq!(e.at, "results[0].out_of_place.time");
    let e = parse_text("# nothing here\n").expect_err("empty");
    assert_eq!(e.at, "input");
    let e =
        parse_text("         8    2   float  sum  -1  -5.0  0.0  0.0  0\n").expect_err("negative");
    assert_eq!(e.at, "line 1");
    assert!(parse("{not json").is_err());
    // No op named anywhere: the caller must supply it.
    let run = parse_text(
        "   1024   256   float   sum   -1   10.0   0.1   0.1   0   10.0   0.1   0.1   0\n",
    )
    .expect("row");
    assert!(samples_from_nccl(&run, None, Some(8), None).is_err());
    assert!(samples_from_nccl(&run, Some(Collective::AllReduce), Some(8), None).is_ok());
}

#[test]
fn gemm_fit_recovers_a_saturating_curve_and_marks_predictions_measured() {
    let peak = 989e12;
    let samples: Vec<GemmSample> = [256u64, 512, 1024, 4096, 8192]
        .iter()
        .map(|&d| GemmSample {
            m: 8192,
            n: d,
            k: 8192,
            flops_per_s: peak * 0.85 * d as f64 / (d as f64 + 200.0),
        })
        .collect();
    let fit = fit_gemm(&samples, peak).expect("fit");
    assert!((fit.efficiency.max_fraction - 0.85).abs() < 1e-9);
    assert!((fit.efficiency.half_dim - 200.0).abs() < 1e-6);

    let cal = calibrate(
        &[],
        &samples,
        &CommModel::assumed(&Cluster::of(gpu_preset("h100-sxm").expect("g"), 1)),
        peak,
    );
    let model = model_preset("llama-3.1-70b").expect("m");
    let sc = Scenario {
        version: SCENARIO_VERSION,
        model: ModelChoice::Preset("llama-3.1-70b".into()),
        precision: Precision::default(),
        cluster: Cluster::of(gpu_preset("h100-sxm").expect("g"), 1),
        training: Training {
            seq_len: 4096,
            global_batch: 8,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        layout: Layout {
            tp: 8,
            ..Layout::default()
        },
        activations: ActivationOptions::default(),
        overheads: Overheads::default(),
        serving: Serving::default(),
        calibration: None,
        bill: Default::default(),
    };
    let assumed = StepModel::new(&model, &sc, CostOptions::default()).evaluate(&sc.layout);
    let measured = StepModel::new(&model, &sc, CostOptions::default())
        .with_calibration(&cal)
        .evaluate(&sc.layout);
    let gemm = |c: &planner_core::time::cost::StepCost| {
        c.inputs
            .iter()
            .find(|i| i.key == "gemm_efficiency")
            .map(|i| i.measured)
    };
    assert_eq!(gemm(&assumed), Some(false));
    assert_eq!(gemm(&measured), Some(true));
    assert!((measured.gemm_efficiency - 0.85 * 1024.0 / 1224.0).abs() < 1e-9);
    // The summary is small and round-trips through JSON.
    let text = serde_json::to_string(&cal).expect("json");
    assert!(text.len() < 400, "{text}");
    let back: planner_core::input::calibration::CalibrationSummary =
        serde_json::from_str(&text).expect("back");
    let (a, b) = (back.gemm.expect("a"), cal.gemm.expect("b"));
    assert!((a.efficiency.max_fraction - b.efficiency.max_fraction).abs() < 1e-12);
    assert!((a.efficiency.half_dim - b.efficiency.half_dim).abs() < 1e-9);
}

#[test]
fn bench_report_feeds_the_fits() {
    use planner_core::edges::calibration_fit::samples_from_report;
    use planner_core::input::precision::ComputeDtype;
    let text = include_str!("../fixtures/report/synthetic-2gpu.json");
    let report = planner_core::edges::report::parse_report(text).expect("report");
    let (comm, gemm) = samples_from_report(&report, ComputeDtype::Bf16);
    assert_eq!(comm.len(), report.collectives.len());
    assert_eq!(gemm.len(), 1);
    let c = Cluster::of(gpu_preset("h100-sxm").expect("gpu"), 1);
    let cal = calibrate(&comm, &gemm, &CommModel::assumed(&c), 989e12);
    // One 64 MiB all-reduce on 2 ranks in 400 µs: busbw = 67.1 MB · 1 / 400 µs = 167.8 GB/s.
    let ar = cal
        .links
        .iter()
        .find(|l| l.op == Collective::AllReduce)
        .expect("all-reduce fit");
    assert_eq!(ar.domain, LinkDomain::IntraNode);
    assert!((ar.busbw_bytes_per_s / 167.77216e9 - 1.0).abs() < 1e-9);
    let g = cal.gemm.expect("gemm");
    assert!((g.efficiency.at(4096.0) - 549.755813888 / 989.0).abs() < 1e-9);
}

#[test]
fn bus_factors_match_the_report_module() {
    use planner_core::edges::calibration_fit::collective_of;
    use planner_core::edges::report::{busbw_factor, CollectiveOp};
    for op in CollectiveOp::ALL {
        for n in [2u32, 3, 8, 64, 1000] {
            assert_eq!(
                collective_of(op).busbw_factor(u64::from(n)),
                busbw_factor(op, n),
                "{op:?} {n}"
            );
        }
    }
}

#[test]
fn summaries_from_outside_are_checked() {
    use planner_core::input::calibration::{CalibrationSummary, FittedLink};
    let mut s = CalibrationSummary {
        version: 1,
        links: vec![FittedLink {
            op: Collective::AllReduce,
            domain: LinkDomain::InterNode,
            latency_s: 1e-5,
            busbw_bytes_per_s: 45e9,
            points: 3,
            max_relative_error: 0.01,
        }],
        gemm: None,
    };
    assert!(s.check().is_ok());
    s.links[0].busbw_bytes_per_s = 0.0;
    assert_eq!(
        s.check().expect_err("zero bw").split(':').next(),
        Some("links[0].busbw_bytes_per_s")
    );
    s.links[0].busbw_bytes_per_s = 45e9;
    s.version = 7;
    assert!(s.check().expect_err("version").starts_with("version"));
}

#[test]
fn launcher_prefixes_and_integer_times_are_read() {
    // Open MPI --tag-output and Slurm --label prefixes; large times print without decimals.
    let text = "\
[1,0]<stdout>:# Collective test starting: all_reduce_perf
[1,0]<stdout>:#  Rank  0 Group  0 Pid 21 on worker-0 device  0 [0x35] NVIDIA H100 80GB HBM3
[1,0]<stdout>:#  Rank  1 Group  0 Pid 21 on worker-1 device  0 [0x35] NVIDIA H100 80GB HBM3
[1,0]<stdout>:worker-0:21:27 [0] NCCL INFO Connected all rings
[1,0]<stdout>:   1073741824     268435456     float     sum      -1    24000   44.74   44.74      0    24010   44.72   44.72    N/A
 0:   2147483648     536870912     float     sum      -1    47000   45.69   45.69      0    47020   45.67   45.67      0
";
    let run = parse_text(text).expect("parse");
    assert_eq!(run.op, Some(Collective::AllReduce));
    assert_eq!((run.ranks, run.hosts), (Some(2), Some(2)));
    assert_eq!(run.rows.len(), 4);
    assert_eq!(run.rows[0].time_us, 24000.0);
    assert_eq!(run.rows[1].wrong, None);
    let samples = samples_from_nccl(&run, None, None, None).expect("samples");
    assert!(samples.iter().all(|s| s.ranks_per_node == 1));
    let c = Cluster::of(gpu_preset("h100-sxm").expect("gpu"), 2);
    let cal = calibrate(&samples, &[], &CommModel::assumed(&c), 989e12);
    assert_eq!(cal.links[0].domain, LinkDomain::InterNode);
    let bw = cal.links[0].busbw_bytes_per_s / 1e9;
    assert!(bw > 44.0 && bw < 47.0, "{bw}");
}

mod compact {
    use super::*;
    use planner_core::input::calibration::{CalibrationSummary, FittedLink, GemmFit};
    use planner_core::time::cost::GemmEfficiency;
    use proptest::prelude::*;

    fn link() -> impl Strategy<Value = FittedLink> {
        (0usize..7, any::<bool>(), 0.0f64..1e-3, 1e6f64..1e13).prop_map(|(op, intra, a, b)| {
            FittedLink {
                op: Collective::ALL[op],
                domain: if intra {
                    LinkDomain::IntraNode
                } else {
                    LinkDomain::InterNode
                },
                latency_s: a,
                busbw_bytes_per_s: b,
                points: 0,
                max_relative_error: 0.0,
            }
        })
    }

    proptest! {
        #[test]
        fn compact_form_round_trips(
            links in prop::collection::vec(link(), 0..6),
            gemm in prop::option::of((0.01f64..1.0, 0.0f64..4096.0, 1e12f64..1e16)),
        ) {
            let s = CalibrationSummary {
                version: 1,
                links,
                gemm: gemm.map(|(m, h, p)| GemmFit {
                    efficiency: GemmEfficiency { max_fraction: m, half_dim: h },
                    peak_flops_per_s: p,
                    points: 0,
                    max_relative_error: 0.0,
                }),
            };
            let text = s.to_compact();
            prop_assert_eq!(CalibrationSummary::from_compact(&text), Ok(s));
        }

        #[test]
        fn compact_parser_never_panics(text in ".{0,200}") {
            let _ = CalibrationSummary::from_compact(&text);
        }
    }

    #[test]
    fn compact_errors_name_the_entry() {
        let e = CalibrationSummary::from_compact("all_reduce.i:3e-6:4.5e11;bogus.e:1:2")
            .expect_err("bad op");
        assert!(e.starts_with("cal[1]"), "{e}");
        let e = CalibrationSummary::from_compact("all_reduce.x:3e-6:4.5e11").expect_err("link");
        assert!(e.contains("not i or e"), "{e}");
        let e = CalibrationSummary::from_compact("all_reduce.i:3e-6:-1").expect_err("neg");
        assert!(e.contains("busbw"), "{e}");
        let ok = CalibrationSummary::from_compact("all_reduce.e:1e-5:4.6e10;gemm:0.8:200:989e12")
            .expect("ok");
        assert_eq!(ok.links.len(), 1);
        assert_eq!(
            ok.to_compact(),
            "all_reduce.e:0.00001:46000000000:0:0;gemm:0.8:200:989000000000000:0:0"
        );
    }
}
