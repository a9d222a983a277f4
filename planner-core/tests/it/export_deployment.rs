//! Serving deployment exports: the vLLM and SGLang flags of a deployment the serving search
//! chose, aggregated or disaggregated, as commands a shell parses back to those flags.

use planner_core::edges::export::{deployment_export, ExportFormat};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::resolve::presets::{article_mesh_scenario, model_preset};
use planner_core::search::deployment::{Deployment, Pools};
use planner_core::serving::disagg::{DisaggDeployment, PoolShape};

fn scenario(model: &str) -> Scenario {
    let mut s = article_mesh_scenario();
    s.model = ModelChoice::Preset(model.to_string());
    s
}

/// The shell words of each command (lines joined at `\`, comments dropped).
fn commands(text: &str) -> Vec<Vec<String>> {
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(|l| shlex::split(l).expect("shell words"))
        .collect()
}

fn value<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    let i = words.iter().position(|w| w == flag)?;
    words.get(i + 1).map(String::as_str)
}

#[test]
fn aggregated_deployment_sets_tp_pp_batch_and_chunk() {
    let s = scenario("llama-3.1-70b");
    let m = model_preset("llama-3.1-70b").expect("preset");
    let d = Deployment {
        pools: Pools::Aggregated {
            tp: 4,
            pp: 2,
            replicas: 8,
        },
        expert_parallel: false,
        concurrency: 128,
    };
    let v = deployment_export(ExportFormat::Vllm, &s, &m, &d, 4096).expect("serving format");
    let c = commands(&v.text);
    assert_eq!(c.len(), 1);
    let w = &c[0];
    assert_eq!(value(w, "--tensor-parallel-size"), Some("4"));
    assert_eq!(value(w, "--pipeline-parallel-size"), Some("2"));
    assert_eq!(value(w, "--max-num-seqs"), Some("128"));
    assert_eq!(value(w, "--max-num-batched-tokens"), Some("4096"));
    assert!(!w.iter().any(|x| x == "--kv-transfer-config"));
    assert!(v.notes.iter().any(|n| n.contains("8 independent replicas")));

    let g = deployment_export(ExportFormat::Sglang, &s, &m, &d, 4096).expect("serving format");
    let w = &commands(&g.text)[0];
    assert_eq!(value(w, "--tp-size"), Some("4"));
    assert_eq!(value(w, "--pp-size"), Some("2"));
    assert_eq!(value(w, "--max-running-requests"), Some("128"));
    assert_eq!(value(w, "--chunked-prefill-size"), Some("4096"));
    assert!(!w.iter().any(|x| x == "--disaggregation-mode"));

    // Training formats have no serving deployment.
    assert!(deployment_export(ExportFormat::Megatron, &s, &m, &d, 4096).is_none());
}

#[test]
fn disaggregated_deployment_writes_a_prefill_and_a_decode_command() {
    let s = scenario("mixtral-8x7b");
    let m = model_preset("mixtral-8x7b").expect("preset");
    let d = Deployment {
        pools: Pools::Disaggregated(DisaggDeployment {
            prefill: PoolShape {
                tp: 2,
                pp: 1,
                replicas: 3,
            },
            decode: PoolShape {
                tp: 4,
                pp: 1,
                replicas: 5,
            },
        }),
        expert_parallel: true,
        concurrency: 64,
    };
    let v = deployment_export(ExportFormat::Vllm, &s, &m, &d, 2048).expect("serving format");
    assert!(v
        .text
        .contains("# prefill instance: run 3 of these, TP 2 × PP 1 = 2 GPUs each"));
    assert!(v
        .text
        .contains("# decode instance: run 5 of these, TP 4 × PP 1 = 4 GPUs each"));
    let c = commands(&v.text);
    assert_eq!(c.len(), 2);
    assert_eq!(value(&c[0], "--tensor-parallel-size"), Some("2"));
    assert_eq!(value(&c[1], "--tensor-parallel-size"), Some("4"));
    for w in &c {
        assert!(w.iter().any(|x| x == "--enable-expert-parallel"));
        let cfg: serde_json::Value =
            serde_json::from_str(value(w, "--kv-transfer-config").expect("kv transfer config"))
                .expect("JSON");
        assert_eq!(cfg["kv_connector"], "NixlConnector");
        assert_eq!(cfg["kv_role"], "kv_both");
    }
    assert_ne!(value(&c[0], "--port"), value(&c[1], "--port"));

    let g = deployment_export(ExportFormat::Sglang, &s, &m, &d, 2048).expect("serving format");
    let c = commands(&g.text);
    assert_eq!(c.len(), 2);
    assert_eq!(value(&c[0], "--disaggregation-mode"), Some("prefill"));
    assert_eq!(value(&c[1], "--disaggregation-mode"), Some("decode"));
    assert_eq!(value(&c[0], "--ep-size"), Some("2"));
    assert_eq!(value(&c[1], "--ep-size"), Some("4"));
    for w in &c {
        assert_eq!(
            value(w, "--disaggregation-transfer-backend"),
            Some("mooncake")
        );
    }
    assert_eq!(
        value(&c[0], "--disaggregation-bootstrap-port"),
        Some("8998")
    );
    assert!(g.notes.iter().any(|n| n.contains("--pd-disaggregation")));
}
