//! The one import of measurement files that `meshplan calibrate` and the page's
//! measured view share: format sniffing, parsing, the GPU the fit is relative to,
//! and the refused fits.

use planner_core::base::bounds::MAX_COLLECTIVE_RANKS;
use planner_core::edges::calibration_fit::{check_group_ranks, samples_from_report};
use planner_core::edges::import_sniff::{
    fit_measurements, gpu_for_device, read_measurements, MeasurementFormat, NcclContext,
    MAX_MEASUREMENT_FILE_BYTES,
};
use planner_core::edges::report::parse_report;
use planner_core::input::hardware::gpu_preset;
use planner_core::input::precision::ComputeDtype;
use planner_core::time::collectives::Collective;

const REPORT: &str = include_str!("../fixtures/report/synthetic-2gpu.json");
const NCCL_JSON: &str = include_str!("../fixtures/nccl/all_gather_perf.json");
const NCCL_TEXT: &str =
    include_str!("../../../tests/e2e/fixtures/synthetic-nccl-all-reduce-8gpu.txt");

#[test]
fn one_rule_tells_the_three_formats_apart() {
    assert_eq!(
        MeasurementFormat::sniff(REPORT),
        MeasurementFormat::BenchReport
    );
    assert_eq!(
        MeasurementFormat::sniff(NCCL_JSON),
        MeasurementFormat::NcclTestsJson
    );
    assert_eq!(
        MeasurementFormat::sniff(NCCL_TEXT),
        MeasurementFormat::NcclTestsText
    );
    // Leading blanks do not matter; the key does, not the word in prose.
    assert_eq!(
        MeasurementFormat::sniff("\n  {\"schema_version\": 1}"),
        MeasurementFormat::BenchReport
    );
    assert_eq!(
        MeasurementFormat::sniff("# this log mentions \"schema_version\" in a comment"),
        MeasurementFormat::NcclTestsText
    );
    assert_eq!(
        MeasurementFormat::sniff(""),
        MeasurementFormat::NcclTestsText
    );
    assert_eq!(MeasurementFormat::BenchReport.label(), "gpu-bench report");
    assert_eq!(
        MeasurementFormat::NcclTestsJson.label(),
        "nccl-tests output"
    );
    assert_eq!(MAX_MEASUREMENT_FILE_BYTES, 32 * 1024 * 1024);
}

#[test]
fn a_report_gives_its_samples_device_and_notes() {
    let m = read_measurements(REPORT, &NcclContext::default()).expect("report");
    assert_eq!(m.format, MeasurementFormat::BenchReport);
    let report = parse_report(REPORT).expect("parses");
    let (comm, gemm) = samples_from_report(&report, ComputeDtype::Bf16);
    assert_eq!(m.comm, comm);
    assert_eq!(m.gemm, gemm);
    assert_eq!(m.comm.len(), 2);
    assert_eq!(m.gemm.len(), 1);
    assert_eq!(m.layer_steps.len(), 1);
    assert_eq!(m.device.as_deref(), Some("Example GPU"));
    assert_eq!(m.ranks_per_node, 2);
    // Writer first, then the report's one remark; it is complete, so no "stopped early".
    assert_eq!(m.notes.len(), 2, "{:?}", m.notes);
    assert!(
        m.notes[0].starts_with("Written by “fixture"),
        "{}",
        m.notes[0]
    );
    assert_eq!(
        m.notes[1],
        "collectives: all_reduce bf16 68719476736 B (out of memory)"
    );
    let incomplete = REPORT.replacen("\"complete\": true", "\"complete\": false", 1);
    assert_ne!(incomplete, REPORT);
    let m = read_measurements(&incomplete, &NcclContext::default()).expect("report");
    assert_eq!(
        m.notes.last().map(String::as_str),
        Some("The run stopped early: the report holds what was measured.")
    );
}

#[test]
fn nccl_output_takes_the_callers_context_when_it_lacks_its_own() {
    let m = read_measurements(NCCL_TEXT, &NcclContext::default()).expect("text");
    assert_eq!(m.format, MeasurementFormat::NcclTestsText);
    assert!(m.comm.iter().all(|c| c.op == Collective::AllReduce));
    // 8 ranks on one host (node-a): 8 per node.
    assert!(m.comm.iter().all(|c| c.ranks == 8 && c.ranks_per_node == 8));
    assert_eq!(m.ranks_per_node, 8);
    assert_eq!(m.device, None);
    assert!(m.gemm.is_empty() && m.layer_steps.is_empty() && m.notes.is_empty());

    // Without the "Collective test starting" line the operation must come from the caller.
    let anonymous: String = NCCL_TEXT
        .lines()
        .filter(|l| !l.contains("Collective test starting"))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = read_measurements(&anonymous, &NcclContext::default()).expect_err("no op");
    assert_eq!(e.format, MeasurementFormat::NcclTestsText);
    assert!(e.to_string().contains("does not name its operation"), "{e}");
    let given = NcclContext {
        op: Some(Collective::AllReduce),
        ..NcclContext::default()
    };
    let m = read_measurements(&anonymous, &given).expect("op given");
    assert!(m.comm.iter().all(|c| c.op == Collective::AllReduce));

    let j = read_measurements(NCCL_JSON, &NcclContext::default()).expect("json");
    assert_eq!(j.format, MeasurementFormat::NcclTestsJson);
    assert!(j.comm.iter().all(|c| c.op == Collective::AllGather));
    // Two devices on hosts "a" and "b": 2 ranks, 1 per node.
    assert!(j.comm.iter().all(|c| c.ranks == 2 && c.ranks_per_node == 1));
}

#[test]
fn nccl_context_no_run_can_have_is_refused_naming_the_flag() {
    let refused = |ranks: Option<u64>, ranks_per_node: Option<u64>| {
        let context = NcclContext {
            ranks,
            ranks_per_node,
            ..NcclContext::default()
        };
        read_measurements(NCCL_TEXT, &context)
            .expect_err("impossible group")
            .to_string()
    };
    // 0 per node on one node would be fitted as an inter-node link.
    assert!(refused(None, Some(0)).contains("--ranks-per-node:"));
    // More per node than the 8 ranks the output lists.
    assert!(refused(None, Some(9)).contains("--ranks-per-node:"));
    assert!(refused(Some(4), Some(8)).contains("--ranks-per-node:"));
    // 10^8 ranks fitted a 0.4 ps latency.
    let e = refused(Some(100_000_000), Some(3));
    assert!(e.contains("--ranks:") && e.contains("1000000"), "{e}");
    assert!(refused(Some(0), None).contains("--ranks:"));
    assert_eq!(check_group_ranks(MAX_COLLECTIVE_RANKS, 8), Ok(()));
    assert_eq!(check_group_ranks(1, 1), Ok(()));
}

#[test]
fn errors_say_what_the_file_was_taken_for() {
    let nan = REPORT.replacen("\"time_us\": 400.0", "\"time_us\": NaN", 1);
    assert_ne!(nan, REPORT);
    let e = read_measurements(&nan, &NcclContext::default()).expect_err("NaN");
    assert_eq!(e.format, MeasurementFormat::BenchReport);
    assert!(
        e.to_string()
            .starts_with("not a usable gpu-bench report — "),
        "{e}"
    );
    let future = REPORT.replacen("\"schema_version\": 1", "\"schema_version\": 2", 1);
    let e = read_measurements(&future, &NcclContext::default()).expect_err("v2");
    assert!(
        e.to_string().contains("schema_version: 2 is not supported"),
        "{e}"
    );
    let e = read_measurements("hello, this is not a benchmark\n", &NcclContext::default())
        .expect_err("prose");
    assert!(
        e.to_string()
            .starts_with("neither a gpu-bench report (JSON) nor nccl-tests output — "),
        "{e}"
    );
    let e = read_measurements("{\"results\": 3}", &NcclContext::default()).expect_err("json");
    assert_eq!(e.format, MeasurementFormat::NcclTestsJson);
    assert!(e.to_string().contains("nccl-tests JSON"), "{e}");
}

#[test]
fn the_fit_is_relative_to_the_named_gpu_and_refused_when_empty() {
    let h100 = gpu_preset("h100-sxm").expect("preset");
    let mi300 = gpu_preset("mi300x").expect("preset");
    let (g, note) = gpu_for_device(Some("NVIDIA H100 80GB HBM3"), &mi300);
    assert_eq!(g.id, "h100-sxm");
    assert!(note.contains("the report's device"), "{note}");
    let (g, note) = gpu_for_device(Some("Example GPU"), &mi300);
    assert_eq!(g.id, "mi300x");
    assert!(note.contains("“Example GPU” is not a preset"), "{note}");
    let (g, note) = gpu_for_device(None, &mi300);
    assert_eq!(g.id, "mi300x");
    assert!(note.contains("names no device"), "{note}");

    // The synthetic table was generated from α = 3 µs per step and 360 GB/s bus
    // bandwidth: its 1 KiB row is 2 × 7 steps × 3 µs = 42 µs, as printed.
    let m = read_measurements(NCCL_TEXT, &NcclContext::default()).expect("text");
    let fit = fit_measurements(&m.comm, &m.gemm, &h100).expect("fit");
    assert_eq!(fit.summary.links.len(), 1);
    let link = fit.summary.links[0];
    assert!(
        (link.busbw_bytes_per_s / 360e9 - 1.0).abs() < 0.01,
        "{link:?}"
    );
    assert!((link.latency_s / 3e-6 - 1.0).abs() < 0.05, "{link:?}");
    assert!(fit.summary.gemm.is_none());
    assert!(fit.summary.check().is_ok());

    let e = fit_measurements(&[], &[], &h100).expect_err("empty");
    assert!(e.starts_with("nothing to fit"), "{e}");
}
