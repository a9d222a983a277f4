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

mod hub {
    use planner_core::edges::hub::safetensors::{header_bytes, header_length, Dtype};
    use planner_core::edges::hub::{parse_endpoint, status_message};
    use planner_core::edges::import_page::{
        fits_a_field, hub_files_answer, hub_files_reply, hub_files_reply_text, hub_headers_answer,
        HubReply, Job,
    };

    /// Llama 3.2 1B (tied embeddings), as the CLI's fixture hub serves it.
    const CONFIG: &str = r#"{"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
      "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "head_dim": 64,
      "vocab_size": 128256, "tie_word_embeddings": true, "hidden_act": "silu"}"#;

    /// One shard's header JSON as the page reads it (the bytes after the 8-byte length).
    fn header_json() -> String {
        let mut t = vec![(
            "model.embed_tokens.weight".to_string(),
            Dtype::BF16,
            vec![128_256, 2048],
        )];
        for i in 0..16 {
            let p = format!("model.layers.{i}");
            for (n, s) in [
                ("self_attn.q_proj.weight", vec![2048, 2048]),
                ("self_attn.k_proj.weight", vec![512, 2048]),
                ("self_attn.v_proj.weight", vec![512, 2048]),
                ("self_attn.o_proj.weight", vec![2048, 2048]),
                ("mlp.gate_proj.weight", vec![8192, 2048]),
                ("mlp.up_proj.weight", vec![8192, 2048]),
                ("mlp.down_proj.weight", vec![2048, 8192]),
                ("input_layernorm.weight", vec![2048]),
                ("post_attention_layernorm.weight", vec![2048]),
            ] {
                t.push((format!("{p}.{n}"), Dtype::BF16, s));
            }
        }
        t.push(("model.norm.weight".to_string(), Dtype::BF16, vec![2048]));
        let bytes = header_bytes(&t);
        let n = header_length("model.safetensors", &bytes[..8]).expect("length") as usize;
        String::from_utf8(bytes[8..8 + n].to_vec()).expect("utf-8")
    }

    #[test]
    fn a_hub_model_crosses_the_worker_with_its_exact_count() {
        let index = r#"{"metadata": {"total_size": 2471628800},
          "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                         "model.norm.weight": "model-00002-of-00002.safetensors"}}"#;
        let job = Job::HubFiles {
            repo: "org/tiny".into(),
            config: CONFIG.into(),
            quant: None,
            index: Some(index.into()),
        };
        assert_eq!(Job::from_text(&job.to_text()), Some(job));
        let files = hub_files_answer("org/tiny", CONFIG, None, Some(index));
        assert_eq!(
            hub_files_reply(&hub_files_reply_text(&files)),
            Ok(vec![
                "model-00001-of-00002.safetensors".to_string(),
                "model-00002-of-00002.safetensors".to_string()
            ])
        );
        // No index: one file.
        assert_eq!(
            hub_files_answer("org/tiny", CONFIG, None, None),
            Ok(vec!["model.safetensors".to_string()])
        );
        let headers = vec![("model.safetensors".to_string(), header_json())];
        let job = Job::HubHeaders {
            repo: "org/tiny".into(),
            config: CONFIG.into(),
            quant: None,
            headers: headers.clone(),
        };
        assert_eq!(Job::from_text(&job.to_text()), Some(job));
        let reply = hub_headers_answer("org/tiny", CONFIG, None, &headers).expect("model");
        let back = HubReply::from_text(&reply.to_text()).expect("reply");
        // 1,235,814,400 worked in hub_model.rs (llama_3_2_1b_is_tied_by_its_headers); 2 bytes
        // each in BF16.
        assert_eq!(back.model_params, 1_235_814_400);
        assert_eq!(back.config_params, 1_235_814_400);
        assert_eq!(back.weight_bytes, 2_471_628_800);
        assert_eq!(back.spec.params(), 1_235_814_400.0);
        assert_eq!(back.spec.name, "tiny");
        assert_eq!(back, reply);
    }

    #[test]
    fn hub_refusals_name_what_went_wrong() {
        let resnet =
            r#"{"architectures": ["ResNetForImageClassification"], "model_type": "resnet"}"#;
        let e = hub_files_answer("org/resnet", resnet, None, None).expect_err("resnet");
        assert!(e.contains("not a transformer"), "{e}");
        let e = hub_files_reply(&hub_files_reply_text(&Err(e.clone()))).expect_err("err");
        assert!(e.contains("not a transformer"), "{e}");
        let bad_index = r#"{"weight_map": {"a": "../../etc/passwd"}}"#;
        assert!(hub_files_answer("org/tiny", CONFIG, None, Some(bad_index)).is_err());
        let e = HubReply::from_text(&HubReply::failed_text("no")).expect_err("failed");
        assert_eq!(e, "no");
        assert!(!fits_a_field("{\"a\": 1}\u{1e}"));
        let m = status_message(
            "org/gated",
            "config.json",
            "u",
            401,
            "paste its config.json",
        );
        assert!(
            m.contains("gated or private") && m.contains("paste its config.json"),
            "{m}"
        );
        assert!(status_message("o/m", "config.json", "u", 404, "").contains("not found (HTTP 404"));
        assert!(status_message("o/m", "config.json", "u", 429, "").contains("rate limited"));
    }

    #[test]
    fn endpoints_are_https_or_this_machine() {
        assert_eq!(
            parse_endpoint("https://huggingface.co/"),
            Ok("https://huggingface.co".into())
        );
        assert_eq!(
            parse_endpoint("https://hf-mirror.com"),
            Ok("https://hf-mirror.com".into())
        );
        assert_eq!(
            parse_endpoint("http://127.0.0.1:8123"),
            Ok("http://127.0.0.1:8123".into())
        );
        assert_eq!(
            parse_endpoint("http://localhost:9/hub"),
            Ok("http://localhost:9/hub".into())
        );
        for bad in [
            "http://example.com",
            "http://127.0.0.1.evil.com",
            "javascript:alert(1)",
            "https://",
            "https://a b",
            "https://x/\"><script>",
            "ftp://huggingface.co",
            "https://x/?q=1",
        ] {
            assert!(parse_endpoint(bad).is_err(), "{bad}");
        }
    }
}
