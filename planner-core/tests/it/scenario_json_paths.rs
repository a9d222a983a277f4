//! A range error found while reading a scenario file names the JSON path the person
//! wrote (`cluster.gpu.memory_bytes`); the same error in a share link names the link
//! parameter (`gpu_mem`).

use planner_core::edges::link::{decode, decode_lenient};
use planner_core::input::finetune::FineTuneMode;
use planner_core::input::model::AttentionWindow;
use planner_core::input::moe_routing::MoeRouting;
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::input::serving_engine::EngineProfile;
use planner_core::input::stage_split::StageSplit;
use planner_core::resolve::json_path::{json_path, JSON_PATHS};
use planner_core::resolve::presets::{article_mesh_scenario, model_preset};
use planner_core::resolve::validate::FieldError;
use serde_json::{json, Value};

/// A valid scenario with every optional section a link key can name filled in.
fn every_section() -> Scenario {
    let mut s = article_mesh_scenario();
    let mut m = model_preset("deepseek-v3").expect("preset");
    m.attention_window = Some(AttentionWindow {
        window_tokens: 4096,
        full_every: 2,
    });
    m.nominal_params = Some(6.71e11);
    s.model = ModelChoice::Custom(m);
    s.cluster.host = s.cluster.gpu.traits().host.clone();
    s.training.finetune.mode = FineTuneMode::Lora;
    s.layout.stage_split = StageSplit::FirstLast {
        first: Some(2),
        last: None,
    };
    s.overheads.moe_routing = MoeRouting {
        capacity_factor: Some(1.25),
        pad_to_capacity: false,
        measured_busiest_load: Some(1.5),
    };
    s.serving.engine_profile = Some(EngineProfile {
        max_num_batched_tokens: 8192,
        max_num_seqs: 256,
        non_torch_bytes: 2e9,
        cuda_graph_bytes: 0.0,
    });
    s.serving.mem_fraction_static = Some(0.85);
    let (with_cal, errors) = decode_lenient("v=1&cal=all_reduce.i:0.000003:300000000000:4:0.01");
    assert!(errors.is_empty(), "{errors:?}");
    s.calibration = with_cal.calibration;
    s.bill.steps = Some(1_000);
    s.bill.board_power_w = Some(700.0);
    s.bill.goals.budget_usd = Some(1e7);
    s.bill.goals.node_counts = vec![8, 16];
    s.bill.goals.fleet_gpus = vec!["h100-sxm".into()];
    s
}

fn pointer(path: &str) -> String {
    format!("/{}", path.replace('.', "/"))
}

/// Sets `path` (dotted; a number indexes a list), adding the last key when absent.
fn set(v: &mut Value, path: &str, value: Value) {
    let (parent, last) = path.rsplit_once('.').unwrap_or(("", path));
    let at = if parent.is_empty() {
        String::new()
    } else {
        pointer(parent)
    };
    match v.pointer_mut(&at) {
        Some(Value::Object(map)) => {
            map.insert(last.to_string(), value);
        }
        Some(Value::Array(list)) => list[last.parse::<usize>().expect("index")] = value,
        _ => panic!("{parent} is not in the scenario"),
    }
}

/// `base` with each (path, value) set.
fn with(base: &Value, changes: &[(&str, Value)]) -> Value {
    let mut v = base.clone();
    for (path, value) in changes {
        set(&mut v, path, value.clone());
    }
    v
}

/// Values that break a value's range but not its type; the key's own where it needs one.
fn breakers(key: &str, base: &Value, path: &str) -> Vec<Value> {
    let one = |changes: &[(&str, Value)]| vec![with(base, changes)];
    match key {
        "model" => one(&[("model", json!({ "preset": "no-such-model" }))]),
        "split" => one(&[("layout.stage_split.first_last.first", u32::MAX.into())]),
        "serve_profile" => one(&[("serving.engine_profile.max_num_seqs", 0.into())]),
        "cal" => one(&[("calibration.summary.links.0.latency_s", (-0.5).into())]),
        "bill_nodes" => one(&[("bill.goals.node_counts", json!([8, 0]))]),
        "fleet_gpus" => one(&[("bill.goals.fleet_gpus", json!(["no-such-gpu"]))]),
        "lora_mod" => one(&[("training.finetune.lora.targets", targets_none())]),
        "moe_pad" => one(&[
            ("overheads.moe_routing.pad_to_capacity", true.into()),
            ("overheads.moe_routing.capacity_factor", Value::Null),
        ]),
        _ => {
            let bad: Vec<Value> = match base.pointer(&pointer(path)) {
                Some(Value::String(_)) => vec!["bad\u{7}".into()],
                _ => vec![0.into(), (-1.0).into(), u32::MAX.into(), 1e30.into()],
            };
            bad.into_iter().map(|b| with(base, &[(path, b)])).collect()
        }
    }
}

fn targets_none() -> Value {
    json!({ "q": false, "k": false, "v": false, "o": false,
            "gate": false, "up": false, "down": false })
}

/// The errors of reading `v` as a file, when it is a scenario's JSON at all.
fn range_errors(v: &Value) -> Option<Vec<FieldError>> {
    serde_json::from_value::<Scenario>(v.clone()).ok()?;
    Scenario::from_json(&v.to_string()).err()
}

#[test]
fn every_range_error_in_a_file_names_its_json_path() {
    let base = serde_json::to_value(every_section()).expect("serialises");
    Scenario::from_json(&base.to_string()).expect("the base scenario is valid");
    for &(key, path) in JSON_PATHS {
        let named = breakers(key, &base, path).iter().find_map(|v| {
            let errors = range_errors(v)?;
            // No error of a file is named by a link key.
            for e in &errors {
                assert!(json_path(&e.field).is_none(), "{key}: {e}");
            }
            errors.into_iter().find(|e| e.field == path)
        });
        assert!(
            named.is_some(),
            "no value of {path} is refused under its path"
        );
    }
}

#[test]
fn the_issues_three_fields_by_path_in_a_file_and_by_key_in_a_link() {
    let base = serde_json::to_value(every_section()).expect("serialises");
    for (path, bad, key, link) in [
        (
            "cluster.gpu.memory_bytes",
            json!(1.0),
            "gpu_mem",
            "v=1&gpu_mem=1",
        ),
        (
            "overheads.moe_routing.capacity_factor",
            json!(0.0),
            "moe_cf",
            "v=1&moe_cf=0",
        ),
        (
            "serving.context_len",
            json!(0),
            "serve_ctx",
            "v=1&serve_ctx=0",
        ),
    ] {
        let mut v = base.clone();
        set(&mut v, path, bad);
        let errors = Scenario::from_json(&v.to_string()).expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, [path], "{errors:?}");
        let errors = decode(link).expect_err("refused");
        assert!(errors.iter().any(|e| e.field == key), "{link}: {errors:?}");
    }
}
