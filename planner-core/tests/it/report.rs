//! Report parsing, checking and the nccl-tests bandwidth conventions.

use planner_core::edges::report::{
    algbw_gb_per_s, busbw_factor, busbw_gb_per_s, parse_report, report_to_json, BenchReport,
    CollectiveOp, CollectiveResult, Dtype, Environment, GemmResult, GpuInfo, LayerStepKind,
    LayerStepResult, MemoryBandwidthResult, Note, NoteLevel, ReportError, MAX_REPORT_TEXT_BYTES,
};
use proptest::prelude::*;
use std::path::PathBuf;

/// Rows of published nccl-tests tables: (op, ranks, size bytes, time µs, algbw, busbw),
/// as printed (two decimals). From public all_reduce_perf / all_gather_perf logs
/// (4 ranks on one node; 16 ranks on 4 nodes).
const NCCL_TESTS_ROWS: [(CollectiveOp, u32, u64, f64, f64, f64); 6] = [
    (CollectiveOp::AllReduce, 4, 2_097_152, 75.82, 27.66, 41.49),
    (
        CollectiveOp::AllReduce,
        4,
        33_554_432,
        317.64,
        105.64,
        158.46,
    ),
    (
        CollectiveOp::AllReduce,
        4,
        4_294_967_296,
        31422.1,
        136.69,
        205.03,
    ),
    (
        CollectiveOp::AllReduce,
        16,
        33_554_432,
        2045.76,
        16.40,
        30.75,
    ),
    (
        CollectiveOp::AllReduce,
        16,
        4_294_967_296,
        283_197.0,
        15.17,
        28.44,
    ),
    (CollectiveOp::AllGather, 16, 262_144, 206.36, 1.27, 1.19),
];

#[test]
fn algbw_and_busbw_reproduce_published_nccl_tests_rows() {
    for (op, ranks, bytes, time_us, algbw, busbw) in NCCL_TESTS_ROWS {
        let a = algbw_gb_per_s(bytes, time_us);
        let b = busbw_gb_per_s(op, ranks, bytes, time_us);
        assert!(
            (a - algbw).abs() <= 0.006,
            "{op:?} {bytes}: algbw {a} vs {algbw}"
        );
        assert!(
            (b - busbw).abs() <= 0.006,
            "{op:?} {bytes}: busbw {b} vs {busbw}"
        );
    }
}

#[test]
fn busbw_factors_are_the_nccl_tests_definitions() {
    // nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n; all-gather, reduce-scatter (n-1)/n;
    // broadcast, reduce 1; alltoall.cu (n-1)/n; sendrecv.cu 1.
    for n in [2u32, 3, 4, 8, 16, 72, 1024] {
        let nf = f64::from(n);
        assert_eq!(
            busbw_factor(CollectiveOp::AllReduce, n),
            2.0 * (nf - 1.0) / nf
        );
        for op in [
            CollectiveOp::AllGather,
            CollectiveOp::ReduceScatter,
            CollectiveOp::AllToAll,
        ] {
            assert_eq!(busbw_factor(op, n), (nf - 1.0) / nf);
        }
        for op in [
            CollectiveOp::Broadcast,
            CollectiveOp::Reduce,
            CollectiveOp::SendRecv,
        ] {
            assert_eq!(busbw_factor(op, n), 1.0);
        }
    }
}

fn sample_report() -> BenchReport {
    let env = Environment {
        gpus: (0..2)
            .map(|rank| GpuInfo {
                rank,
                host: "node0".into(),
                name: "Example GPU".into(),
                memory_bytes: 80_000_000_000,
                compute_capability: "9.0".into(),
            })
            .collect(),
        gpu_count: 2,
        driver_version: "example".into(),
        cuda_version: "12.8".into(),
        nccl_version: "2.26.2".into(),
        hosts: vec!["node0".into()],
        ranks: 2,
        ranks_per_node: 2,
        topology: "synthetic fixture, not a measurement".into(),
    };
    let mut r = BenchReport::new("fixture (synthetic, not measured)", 0, env);
    for (op, in_place) in [
        (CollectiveOp::AllReduce, false),
        (CollectiveOp::AllGather, true),
    ] {
        let bytes = 1u64 << 26;
        let time_us = 400.0;
        r.collectives.push(CollectiveResult {
            op,
            ranks: 2,
            ranks_per_node: 2,
            group: "world".into(),
            dtype: Dtype::Bf16,
            bytes,
            count: bytes / Dtype::Bf16.bytes(),
            in_place,
            time_us,
            algbw_gb_per_s: algbw_gb_per_s(bytes, time_us),
            busbw_gb_per_s: busbw_gb_per_s(op, 2, bytes, time_us),
            wrong: 0,
        });
    }
    r.gemms.push(GemmResult {
        m: 4096,
        n: 4096,
        k: 4096,
        dtype: Dtype::Bf16,
        label: "square".into(),
        time_us: 250.0,
        tflops: planner_core::edges::report::gemm_tflops(4096, 4096, 4096, 250.0),
    });
    r.memory_bandwidth.push(MemoryBandwidthResult {
        label: "d2d copy".into(),
        bytes: 2 << 30,
        time_us: 1000.0,
        gb_per_s: algbw_gb_per_s(2 << 30, 1000.0),
    });
    r.layer_steps.push(LayerStepResult {
        kind: LayerStepKind::TpMlp,
        label: "synthetic mlp".into(),
        hidden: 4096,
        ffn: 14336,
        tokens: 4096,
        dtype: Dtype::Bf16,
        tp: 2,
        dp: 1,
        compute_us: 900.0,
        comm_us: 200.0,
        sequential_us: 1100.0,
        overlapped_us: 950.0,
        exposed_comm_us: 50.0,
        peak_memory_bytes: 3_000_000_000,
    });
    r.notes.push(Note {
        level: NoteLevel::Skipped,
        section: "collectives".into(),
        subject: "all_reduce bf16 68719476736 B".into(),
        message: "out of memory".into(),
    });
    r.complete = true;
    r
}

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
}

#[test]
fn fixture_parses_to_the_sample_report() {
    let expected = sample_report();
    let path = fixture_path("synthetic-2gpu.json");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let text = report_to_json(&expected).expect("sample is valid");
        std::fs::write(&path, text + "\n").expect("write fixture");
    }
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    assert_eq!(parse_report(&text), Ok(expected));
}

fn sample_value() -> serde_json::Value {
    serde_json::to_value(sample_report()).expect("serialises")
}

fn parse_value(v: &serde_json::Value) -> Result<BenchReport, ReportError> {
    parse_report(&v.to_string())
}

#[test]
fn wrong_version_is_rejected_before_fields() {
    let mut v = sample_value();
    v["schema_version"] = 2.into();
    // A future version may have other fields: the version is the error, not a field.
    v.as_object_mut().expect("object").remove("collectives");
    assert_eq!(
        parse_value(&v),
        Err(ReportError::UnsupportedVersion { found: Some(2) })
    );
    v.as_object_mut().expect("object").remove("schema_version");
    let err = parse_value(&v).unwrap_err();
    assert_eq!(err, ReportError::UnsupportedVersion { found: None });
    assert_eq!(err.path(), "schema_version");
}

#[test]
fn missing_field_names_its_parent_path() {
    let mut v = sample_value();
    v["collectives"][1]
        .as_object_mut()
        .expect("object")
        .remove("time_us");
    let err = parse_value(&v).unwrap_err();
    assert_eq!(err.path(), "collectives[1]");
    assert!(err.to_string().contains("time_us"), "{err}");
}

/// Breaks one field of a valid report.
type Mutation = fn(&mut serde_json::Value);

#[test]
fn negative_and_absurd_values_name_the_field() {
    let cases: [(&str, Mutation); 8] = [
        ("collectives[1].time_us", |v| {
            v["collectives"][1]["time_us"] = (-3.0).into()
        }),
        ("collectives[0].bytes", |v| {
            v["collectives"][0]["bytes"] = (-1).into()
        }),
        ("collectives[0].bytes", |v| {
            v["collectives"][0]["bytes"] = 20_000_000_000_000u64.into()
        }),
        ("collectives[0].ranks", |v| {
            v["collectives"][0]["ranks"] = 2_000_000.into()
        }),
        ("environment.ranks_per_node", |v| {
            v["environment"]["ranks_per_node"] = 3.into()
        }),
        ("gemms[0].tflops", |v| {
            v["gemms"][0]["tflops"] = (-1.0).into()
        }),
        ("memory_bandwidth[0].time_us", |v| {
            v["memory_bandwidth"][0]["time_us"] = 0.0.into()
        }),
        ("layer_steps[0].peak_memory_bytes", |v| {
            v["layer_steps"][0]["peak_memory_bytes"] = 1e14.into()
        }),
    ];
    for (path, mutate) in cases {
        let mut v = sample_value();
        mutate(&mut v);
        let err = parse_value(&v).expect_err(path);
        assert_eq!(err.path(), path, "{err}");
    }
}

#[test]
fn infinite_literal_names_the_field() {
    let text = sample_value()
        .to_string()
        .replacen("\"time_us\":400.0", "\"time_us\":1e999", 1);
    let err = parse_report(&text).unwrap_err();
    assert_eq!(err.path(), "collectives[0].time_us", "{err}");
}

#[test]
fn non_finite_values_are_rejected_before_writing() {
    let mut r = sample_report();
    r.collectives[0].busbw_gb_per_s = f64::NAN;
    let err = report_to_json(&r).unwrap_err();
    assert_eq!(err.path(), "collectives[0].busbw_gb_per_s");
    r.collectives[0].busbw_gb_per_s = f64::INFINITY;
    assert_eq!(
        r.validate().unwrap_err().path(),
        "collectives[0].busbw_gb_per_s"
    );
}

#[test]
fn oversized_text_is_rejected_before_parsing() {
    let text = " ".repeat(MAX_REPORT_TEXT_BYTES + 1);
    assert!(matches!(
        parse_report(&text),
        Err(ReportError::TooLarge { .. })
    ));
}

#[test]
fn trailing_garbage_and_non_json_are_syntax_errors() {
    let text = sample_value().to_string() + " x";
    assert!(matches!(
        parse_report(&text),
        Err(ReportError::Syntax { .. })
    ));
    assert!(matches!(
        parse_report("not json"),
        Err(ReportError::Syntax { .. })
    ));
}

#[test]
fn incomplete_report_round_trips() {
    let mut r = sample_report();
    r.complete = false;
    let text = report_to_json(&r).expect("valid");
    assert_eq!(parse_report(&text), Ok(r));
}

fn op_strategy() -> impl Strategy<Value = CollectiveOp> {
    prop::sample::select(CollectiveOp::ALL.to_vec())
}

proptest! {
    #[test]
    fn busbw_never_exceeds_twice_algbw(op in op_strategy(), ranks in 1u32..100_000, bytes in 1u64..1u64 << 40, time_us in 0.1f64..1e7) {
        let a = algbw_gb_per_s(bytes, time_us);
        let b = busbw_gb_per_s(op, ranks, bytes, time_us);
        prop_assert!(b >= 0.0 && b <= 2.0 * a + 1e-12);
    }

    #[test]
    fn measured_rows_round_trip(op in op_strategy(), ranks in 1u32..4096, log_bytes in 0u32..36, time_us in 0.5f64..1e6, in_place: bool, wrong in 0u64..10) {
        let mut r = sample_report();
        let bytes = 1u64 << log_bytes;
        r.collectives = vec![CollectiveResult {
            op, ranks, ranks_per_node: ranks.min(8), group: "tp".into(), dtype: Dtype::Fp16,
            bytes, count: bytes / 2, in_place, time_us,
            algbw_gb_per_s: algbw_gb_per_s(bytes, time_us),
            // A report cannot count more wrong elements than it checked (`count`).
            busbw_gb_per_s: busbw_gb_per_s(op, ranks, bytes, time_us), wrong: wrong.min(bytes / 2),
        }];
        let text = report_to_json(&r).expect("valid");
        prop_assert_eq!(parse_report(&text), Ok(r));
    }
}
