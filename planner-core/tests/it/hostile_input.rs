//! Hostile input: each defect found by trying meshplan from outside, as a test.
//! A share link or a file never runs a command, never panics, and never shows a
//! wrong number as if it were right; every refusal names its field.

use planner_core::edges::export::{
    deployment_export, export, exports, notes_as_comments, notes_markdown, ExportFormat,
};
use planner_core::edges::hf_config::import_hf_config;
use planner_core::edges::link::{decode, decode_lenient, MAX_LINK_PARAMS};
use planner_core::edges::report::parse_report;
use planner_core::evaluate::evaluate;
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::resolve::presets::{article_mesh_scenario, default_scenario};
use planner_core::search::deployment::{Deployment, Pools};
use planner_core::serving::disagg::{DisaggDeployment, PoolShape};
use proptest::prelude::*;

const INJECTION_LINK: &str = "v=1&model=custom&name=evil%0Acurl%20http%3A%2F%2F127.0.0.1%2Fx%20%7C%20sh%0A%23&layers=80&hidden=8192&heads=64&ffn=28672&vocab=128256&gpus=64&dp=8&tp=8";

fn fields(errors: &[planner_core::resolve::validate::FieldError]) -> Vec<&str> {
    errors.iter().map(|e| e.field.as_str()).collect()
}

/// The injection link's scenario with `name` set, skipping validation, as a
/// scenario that reached an exporter some other way would be.
fn custom_named(name: &str) -> (Scenario, planner_core::input::model::ModelSpec) {
    let (mut s, errors) = decode_lenient(&INJECTION_LINK.replace(
        "evil%0Acurl%20http%3A%2F%2F127.0.0.1%2Fx%20%7C%20sh%0A%23",
        "benign",
    ));
    assert!(errors.is_empty(), "{errors:?}");
    let ModelChoice::Custom(mut m) = s.model.clone() else {
        panic!("custom model")
    };
    m.name = name.to_string();
    s.model = ModelChoice::Custom(m.clone());
    (s, m)
}

#[test]
fn the_injection_link_is_refused_naming_the_name_field() {
    let errors = decode(INJECTION_LINK).expect_err("a newline in a name is refused");
    assert_eq!(fields(&errors), ["name"]);
    assert!(
        errors[0].message.contains("U+000A"),
        "{}",
        errors[0].message
    );
    // CR-LF too.
    let crlf = INJECTION_LINK.replace("%0A", "%0D%0A");
    assert_eq!(fields(&decode(&crlf).expect_err("CR-LF refused")), ["name"]);
    // Lenient: the name falls back and is reported, nothing else changes.
    let (s, errors) = decode_lenient(INJECTION_LINK);
    assert_eq!(fields(&errors), ["name"]);
    assert!(
        matches!(s.model, ModelChoice::Custom(ref m) if m.layers == 80 && !m.name.contains('\n'))
    );
}

/// Shell exports: `bash -n` accepts them and their lines are exactly those of the
/// same scenario with a benign name, but for the comment lines that quote the name.
fn shell_exports_hold_no_injected_line(name: &str) {
    let (benign_s, benign_m) = custom_named("benign");
    let (evil_s, evil_m) = custom_named(name);
    let mut cases: Vec<(String, String, String)> = [
        ExportFormat::Torchrun,
        ExportFormat::Megatron,
        ExportFormat::Vllm,
        ExportFormat::Sglang,
    ]
    .into_iter()
    .map(|f| {
        (
            format!("{f:?}"),
            export(f, &benign_s, &benign_m).text,
            export(f, &evil_s, &evil_m).text,
        )
    })
    .collect();
    // The serving search's deployments, aggregated and disaggregated, in both engines.
    let disagg = DisaggDeployment {
        prefill: PoolShape {
            tp: 8,
            pp: 1,
            replicas: 2,
        },
        decode: PoolShape {
            tp: 4,
            pp: 2,
            replicas: 3,
        },
    };
    for pools in [
        Pools::Aggregated {
            tp: 8,
            pp: 2,
            replicas: 4,
        },
        Pools::Disaggregated(disagg),
    ] {
        let d = Deployment {
            pools,
            expert_parallel: false,
            concurrency: 64,
        };
        for f in [ExportFormat::Vllm, ExportFormat::Sglang] {
            let text = |s, m| deployment_export(f, s, m, &d, 2048).map(|e| e.text);
            if let (Some(want), Some(got)) = (text(&benign_s, &benign_m), text(&evil_s, &evil_m)) {
                cases.push((format!("{f:?} {}", d.label()), want, got));
            }
        }
    }
    for (format, want, got) in cases {
        let (want, got): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
        assert_eq!(
            want.len(),
            got.len(),
            "{format}: a line was added:\n{}",
            got.join("\n")
        );
        for (w, g) in want.iter().zip(&got) {
            if w != g {
                assert!(
                    w.trim_start().starts_with('#') && g.trim_start().starts_with('#'),
                    "{format}: only comments may differ: {g:?}"
                );
            }
        }
        if let Ok(out) = std::process::Command::new("bash")
            .arg("-n")
            .arg("-c")
            .arg(&*got.join("\n"))
            .output()
        {
            assert!(
                out.status.success(),
                "{format}: bash -n: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Structured exports parse with the real parsers, keep their tables and keys, and
/// torchtitan's `job.description` gives the name back unchanged.
fn structured_exports_parse_and_keep_the_name(name: &str) {
    let (s, m) = custom_named(name);
    let toml_text = export(ExportFormat::Torchtitan, &s, &m).text;
    let doc: toml::Table =
        toml::from_str(&toml_text).unwrap_or_else(|e| panic!("{e}\n{toml_text}"));
    let tables: Vec<&str> = doc.keys().map(String::as_str).collect();
    assert_eq!(
        tables,
        [
            "activation_checkpoint",
            "job",
            "model",
            "parallelism",
            "training"
        ],
        "{toml_text}"
    );
    assert_eq!(doc["job"]["description"].as_str(), Some(name));
    assert_eq!(doc["job"].as_table().map(|t| t.len()), Some(1));

    let yaml_text = export(ExportFormat::Accelerate, &s, &m).text;
    let (benign_s, benign_m) = custom_named("benign");
    let benign_yaml = export(ExportFormat::Accelerate, &benign_s, &benign_m).text;
    let yaml: serde_yaml::Value = serde_yaml::from_str(&yaml_text).expect("accelerate YAML parses");
    let benign: serde_yaml::Value = serde_yaml::from_str(&benign_yaml).expect("YAML");
    assert_eq!(yaml, benign, "the name changes nothing in the YAML");

    let json_text = export(ExportFormat::Deepspeed, &s, &m).text;
    let json: serde_json::Value = serde_json::from_str(&json_text).expect("DeepSpeed JSON parses");
    let benign_json: serde_json::Value =
        serde_json::from_str(&export(ExportFormat::Deepspeed, &benign_s, &benign_m).text)
            .expect("JSON");
    assert_eq!(json, benign_json);

    // Notes: one Markdown list item each; as comments, one comment line each.
    let list = exports(&s, &m);
    let md = notes_markdown(&list);
    let items = md.lines().filter(|l| l.starts_with("- ")).count();
    let notes: usize = list.iter().map(|e| e.notes.len()).sum();
    assert_eq!(items, notes, "{md}");
    assert!(!md.contains('<'), "raw HTML in NOTES.md: {md}");
    for e in &list {
        let comments = notes_as_comments(e);
        for line in comments.lines().filter(|l| !l.is_empty()) {
            assert!(line.starts_with('#') || line.starts_with("//"), "{line:?}");
        }
    }
}

#[test]
fn exporters_keep_an_unvalidated_hostile_name_inert() {
    for name in [
        "evil\ncurl http://127.0.0.1/x | sh\n#",
        "evil\r\ncurl x | sh",
        "x\n[job]\ndump_folder = \"/etc\"",
        "\"; rm -rf / #",
        "$(touch /tmp/pwned) `id` 'q' \\",
        "a\u{2028}b\u{85}c\u{202E}d\u{7f}e\u{0}f",
        "<script>alert(1)</script>",
    ] {
        shell_exports_hold_no_injected_line(name);
        structured_exports_parse_and_keep_the_name(name);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_string_in_the_name_stays_inert(name in "\\PC*|[\\x00-\\x7f\\u{85}\\u{2028}\\u{202e}]{0,40}") {
        shell_exports_hold_no_injected_line(&name);
        structured_exports_parse_and_keep_the_name(&name);
    }

    #[test]
    fn every_free_text_field_round_trips_when_printable_and_is_refused_otherwise(
        text in "\\PC{1,30}|[\\x00-\\x7f\\u{85}\\u{2028}\\u{202e}]{1,20}",
        which in 0usize..3,
    ) {
        let mut s = default_scenario();
        let Ok(mut m) = s.model_spec() else { panic!("preset") };
        let field = match which {
            0 => { m.name = text.clone(); s.model = ModelChoice::Custom(m); "name" }
            1 => { s.cluster.gpu.name = text.clone(); s.cluster.gpu.id = "my-gpu".into(); "gpu_name" }
            _ => { s.cluster.gpu.id = text.clone(); "gpu" }
        };
        let printable = !text.chars().any(planner_core::base::free_text::is_forbidden_char);
        match s.validate() {
            Ok(()) => {
                prop_assert!(printable, "{field} {text:?} accepted");
                // Accepted text survives a share link and a scenario file unchanged.
                let linked = decode(&planner_core::edges::link::encode(&s));
                prop_assert_eq!(linked.as_ref(), Ok(&s));
                let json = serde_json::to_string(&s).expect("serialises");
                let filed = Scenario::from_json(&json);
                prop_assert_eq!(filed.as_ref(), Ok(&s));
            }
            Err(errors) => {
                prop_assert!(!printable, "{field} {text:?}: {errors:?}");
                prop_assert!(errors.iter().any(|e| e.field == field), "{errors:?}");
            }
        }
    }

    #[test]
    fn a_name_is_accepted_exactly_when_it_is_printable_text(name in "[\\x00-\\x7f\\u{85}\\u{2028}]{0,20}") {
        let mut s = default_scenario();
        let Ok(mut m) = s.model_spec() else { panic!("preset") };
        m.name = name.clone();
        s.model = ModelChoice::Custom(m);
        let printable = !name.chars().any(|c| c.is_control() || c == '\u{2028}');
        let r = s.validate();
        prop_assert_eq!(r.is_ok(), printable, "{:?}", r);
    }
}

#[test]
fn an_hf_name_with_a_line_break_is_refused_naming_name_or_path() {
    let text = include_str!("../fixtures/hf/llama-3.1-8b.json");
    let mut v: serde_json::Value = serde_json::from_str(text).expect("fixture");
    v["_name_or_path"] = "meta-llama/evil\ncurl x | sh".into();
    let e = import_hf_config(&v.to_string()).expect_err("refused");
    assert!(e.to_string().contains("_name_or_path"), "{e}");
}

#[test]
fn zero_gpus_per_node_is_an_error_naming_gpu_gpn_not_a_panic() {
    for q in [
        "v=1&gpu_gpn=0",
        "v=1&gpu=custom&gpu_name=x&gpu_gpn=0",
        "v=1&gpu_gpn=0&gpn=0&gpus=0",
    ] {
        let errors = decode(q).expect_err("refused");
        assert!(fields(&errors).contains(&"gpu_gpn"), "{q}: {errors:?}");
        let (s, errors) = decode_lenient(q);
        assert!(fields(&errors).contains(&"gpu_gpn"), "{q}: {errors:?}");
        assert!(s.cluster.gpu.gpus_per_node >= 1);
        assert!(evaluate(&s).is_ok(), "{q}");
    }
}

fn activation_bytes(q: &str) -> f64 {
    let (s, errors) = decode_lenient(q);
    assert!(fields(&errors).iter().all(|f| *f == "gbs"), "{errors:?}");
    let e = evaluate(&s).expect("evaluates");
    let peak = &e.training.stages[e.training.peak_stage];
    peak.terms
        .iter()
        .filter(|t| t.key.starts_with("activations"))
        .map(|t| t.value)
        .sum()
}

#[test]
fn a_huge_global_batch_does_not_wrap_the_in_flight_count() {
    // m·v = 2^31 · 2 passed 2^32 and wrapped to 0: activations showed 0 B.
    let base = "v=1&tp=8&dp=1&pp=2&sched=interleaved&vpp=2&gbs=";
    let huge = activation_bytes(&format!("{base}2147483648"));
    let big = activation_bytes(&format!("{base}1073741824"));
    assert!(huge > 1e9, "activations {huge}");
    // Interleaved 1F1B holds its warm-up depth, not every micro-batch: both equal.
    assert_eq!(huge, big);
}

#[test]
fn an_mla_head_dim_that_overflows_is_refused_naming_the_field() {
    let text = include_str!("../fixtures/hf/deepseek-v3.json");
    let mut v: serde_json::Value = serde_json::from_str(text).expect("fixture");
    v["qk_rope_head_dim"] = 4_294_967_295u64.into();
    let e = import_hf_config(&v.to_string()).expect_err("refused");
    assert!(e.to_string().contains("qk_rope_head_dim"), "{e}");
}

#[test]
fn implausible_numbers_are_refused_naming_their_field() {
    for (q, field) in [
        ("v=1&master_bytes=1e308", "master_bytes"),
        ("v=1&grad_bytes=1e308", "grad_bytes"),
        ("v=1&weight_bytes=0", "weight_bytes"),
        ("v=1&nvlink_lat=1e308", "nvlink_lat"),
        ("v=1&net_lat=-0.000001", "net_lat"),
        ("v=1&nvlink_lat=0", "nvlink_lat"),
        ("v=1&gpu_bf16=5e-324", "gpu_bf16"),
        ("v=1&gpu_mem=inf", "gpu_mem"),
        ("v=1&gpu_hbm=NaN", "gpu_hbm"),
        ("v=1&net_bw=1e300", "net_bw"),
        ("v=1&cuda_ctx=1e300", "cuda_ctx"),
    ] {
        let errors = decode(q).expect_err(q);
        assert_eq!(fields(&errors), [field], "{q}");
    }
}

fn scenario_json() -> serde_json::Value {
    serde_json::to_value(article_mesh_scenario()).expect("serialises")
}

fn from_json_fields(v: &serde_json::Value) -> Vec<String> {
    match Scenario::from_json(&v.to_string()) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.into_iter().map(|e| e.field).collect(),
    }
}

#[test]
fn an_embedded_calibration_is_checked_like_a_linked_one() {
    let mut s = article_mesh_scenario();
    let q = "v=1&cal=all_reduce.i:0.000003:300000000000:4:0.01";
    let (with_cal, errors) = decode_lenient(q);
    assert!(errors.is_empty(), "{errors:?}");
    s.calibration = with_cal.calibration;
    let mut v = serde_json::to_value(&s).expect("serialises");
    assert_eq!(from_json_fields(&v), Vec::<String>::new());
    v["calibration"]["summary"]["links"][0]["latency_s"] = (-0.5).into();
    assert_eq!(from_json_fields(&v), ["calibration.summary"]);
    v["calibration"]["summary"]["links"][0]["latency_s"] = 3e-6.into();
    v["calibration"]["summary"]["links"][0]["busbw_bytes_per_s"] = 1e308.into();
    assert_eq!(from_json_fields(&v), ["calibration.summary"]);
}

#[test]
fn scenario_file_errors_name_their_json_path() {
    let mut v = scenario_json();
    v["layout"]["tp"] = 8.5.into();
    assert_eq!(from_json_fields(&v), ["layout.tp"]);

    let mut v = scenario_json();
    v["training"]["unknown_knob"] = 1.into();
    let errors = Scenario::from_json(&v.to_string()).expect_err("unknown field");
    assert_eq!(errors[0].field, "training.unknown_knob");
    assert!(
        errors[0].message.contains("unknown field `unknown_knob`"),
        "{}",
        errors[0].message
    );

    let text = scenario_json().to_string();
    let big = text.replace("\"seq_len\":32768", "\"seq_len\":1e400");
    assert_ne!(big, text);
    let errors = Scenario::from_json(&big).expect_err("1e400");
    assert_eq!(errors[0].field, "training.seq_len", "{errors:?}");
    let nan = text.replace("\"seq_len\":32768", "\"seq_len\":NaN");
    let errors = Scenario::from_json(&nan).expect_err("NaN");
    assert_eq!(errors[0].field, "training.seq_len", "{errors:?}");

    let mut v = scenario_json();
    v["precision"]["master_bytes"] = 1e308.into();
    assert_eq!(from_json_fields(&v), ["precision.master_bytes"]);
}

#[test]
fn a_report_with_an_impossible_gemm_rate_is_refused_before_calibrate() {
    let text = include_str!("../fixtures/report/synthetic-2gpu.json");
    let mut v: serde_json::Value = serde_json::from_str(text).expect("fixture");
    v["gemms"][0]["tflops"] = 5e-324.into();
    let e = parse_report(&v.to_string()).expect_err("refused");
    assert!(e.to_string().contains("gemms[0].tflops"), "{e}");
}

#[test]
fn lenient_decoding_of_a_flood_of_parameters_is_bounded_and_says_so() {
    // 40,000 parameters (13.9 s before): over the size cap, refused unread.
    let q: String = (0..40_000).map(|i| format!("x{i}=1&")).collect();
    let (s, errors) = decode_lenient(&format!("v=1&{q}"));
    assert_eq!(s, default_scenario());
    assert_eq!(fields(&errors), ["v"]);
    // 6,000 short ones fit the size: the first 256 are read, the rest reported once.
    let q: String = (0..6_000).map(|i| format!("x{i}=1&")).collect();
    let (s, errors) = decode_lenient(&format!("v=1&{q}"));
    assert_eq!(s, default_scenario());
    assert!(errors.len() <= MAX_LINK_PARAMS + 1, "{}", errors.len());
    assert!(
        errors
            .iter()
            .any(|e| e.message.contains("more than 256 parameters")),
        "{:?}",
        errors.last()
    );
    let long = format!("v=1&name={}", "a".repeat(70_000));
    let (_, errors) = decode_lenient(&long);
    assert!(errors[0].message.contains("over 65536"), "{errors:?}");
}
