//! The page's import worker protocol (`import_page`): every published config the importer
//! reads arrives on the page as the same shapes, a fitted summary as the same summary, and
//! a chart series as the same floats (the worker's text is the page's only copy).

use planner_core::edges::hf_config::import_hf_config;
use planner_core::edges::import_page::{BenchImport, BusbwSeries, ConfigReply, Job};
use planner_core::edges::import_sniff::{
    fit_measurements, gpu_for_device, read_measurements, NcclContext,
};
use planner_core::resolve::presets::default_scenario;

fn fixture(path: &str) -> String {
    let path = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn imported_configs_cross_the_worker_unchanged() {
    for id in [
        "deepseek-v3",
        "llama-3.1-405b",
        "llama-3.1-8b",
        "mistral-7b-v0.1",
        "mixtral-8x22b",
        "qwen2.5-72b",
        "qwen3-30b-a3b",
        "qwen3-8b",
    ] {
        let json = fixture(&format!("hf/{id}.json"));
        let spec = import_hf_config(&json).unwrap_or_else(|e| panic!("{id}: {e}"));
        let request = Job::Config { json: json.clone() }.to_text();
        assert_eq!(Job::from_text(&request), Some(Job::Config { json }), "{id}");
        let reply = ConfigReply::Imported(spec.clone()).to_text();
        assert_eq!(
            ConfigReply::from_text(&reply),
            ConfigReply::Imported(spec),
            "{id}"
        );
    }
    let failed = ConfigReply::Failed("`hidden_size`: missing".into());
    assert_eq!(ConfigReply::from_text(&failed.to_text()), failed);
    assert!(matches!(
        ConfigReply::from_text("garbage"),
        ConfigReply::Failed(_)
    ));
}

#[test]
fn a_bench_request_carries_name_scenario_and_text() {
    let s = default_scenario();
    let text = "line one\nline two\n".to_string();
    let job = Job::bench("my\nreport.json", &s, text.clone());
    let Some(Job::Bench {
        file_name,
        scenario_query,
        text: got,
    }) = Job::from_text(&job.to_text())
    else {
        panic!("not a bench request");
    };
    assert_eq!(file_name, "my report.json");
    assert_eq!(got, text);
    assert_eq!(
        planner_core::edges::link::decode(&scenario_query).ok(),
        Some(s)
    );
    // Other worker messages are not import requests.
    assert_eq!(Job::from_text("validate"), None);
}

#[test]
fn a_fitted_report_crosses_the_worker_unchanged() {
    let text = fixture("report/synthetic-2gpu.json");
    let read = read_measurements(&text, &NcclContext::default()).expect("fixture reads");
    let (gpu, _) = gpu_for_device(read.device.as_deref(), &default_scenario().cluster.gpu);
    let fit = fit_measurements(&read.comm, &read.gemm, &gpu).expect("fixture fits");
    let import = BenchImport {
        file_name: "synthetic-2gpu.json".into(),
        kind: read.format.label().into(),
        summary: fit.summary,
        busbw: vec![BusbwSeries {
            label: "all_reduce, 2 ranks (2 per node)".into(),
            color: 0,
            // Floats whose shortest text has many digits.
            measured: vec![(1048576.0, 1.0 / 3.0), (0.1 + 0.2, 123_456_789.012_345_67)],
            fitted: vec![(1.0, f64::MIN_POSITIVE)],
            preset: Vec::new(),
        }],
        head_html: "<h3>From synthetic-2gpu.json</h3>".into(),
        comm_html: String::new(),
        rest_html: "<table></table>".into(),
    };
    assert_eq!(BenchImport::from_text(&import.to_text()), Ok(import));
    assert_eq!(
        BenchImport::from_text(&BenchImport::failed_text("x.json: not JSON")),
        Err("x.json: not JSON".to_string())
    );
}
