//! Rows built the way gpu-bench builds them survive planner-core's writer and
//! parser, and the JSON has every field the checked-in schema requires, with the right JSON types.

use gpu_bench::data::counts;
use gpu_bench::gemm::{layer_shapes, square_shapes};
use gpu_bench::sweep::{align_bytes, size_sweep};
use planner_core::edges::report::{
    algbw_gb_per_s, busbw_gb_per_s, gemm_tflops, parse_report, report_json_schema, report_to_json,
    BenchReport, CollectiveOp, CollectiveResult, Dtype, Environment, GemmResult, GpuInfo,
};
use serde_json::Value;

fn report() -> BenchReport {
    let env = Environment {
        gpus: vec![GpuInfo {
            rank: 0,
            host: "test-host".into(),
            name: "synthetic (not measured)".into(),
            memory_bytes: 80_000_000_000,
            compute_capability: "9.0".into(),
        }],
        gpu_count: 8,
        driver_version: String::new(),
        cuda_version: "12.8".into(),
        nccl_version: "2.26.2".into(),
        hosts: vec!["test-host".into()],
        ranks: 8,
        ranks_per_node: 8,
        topology: "synthetic test data".into(),
    };
    let mut r = BenchReport::new("gpu-bench test (synthetic)", 0, env);
    for op in CollectiveOp::ALL {
        for size in size_sweep(1024, 1 << 30, 8).unwrap() {
            let bytes = align_bytes(size, Dtype::Bf16.bytes() * 4, 8);
            let c = counts(op, 8, bytes / 2);
            assert!(c.send > 0 && c.recv > 0);
            // A made-up time that grows with size; the test checks plumbing, not numbers.
            let time_us = 10.0 + bytes as f64 / 2e5;
            r.collectives.push(CollectiveResult {
                op,
                ranks: 8,
                ranks_per_node: 8,
                group: "world".into(),
                dtype: Dtype::Bf16,
                bytes,
                count: bytes / 2,
                in_place: false,
                time_us,
                algbw_gb_per_s: algbw_gb_per_s(bytes, time_us),
                busbw_gb_per_s: busbw_gb_per_s(op, 8, bytes, time_us),
                wrong: 0,
            });
        }
    }
    let spec = planner_core::resolve::presets::model_preset("llama-3.1-70b").unwrap();
    let mut shapes = square_shapes(&[4096]);
    shapes.extend(layer_shapes("llama-3.1-70b", &spec, 8, 4096).unwrap());
    for s in shapes {
        r.gemms.push(GemmResult {
            m: s.m,
            n: s.n,
            k: s.k,
            dtype: Dtype::Fp8E4m3,
            label: s.label,
            time_us: 100.0,
            tflops: gemm_tflops(s.m, s.n, s.k, 100.0),
        });
    }
    r
}

#[test]
fn rows_round_trip_through_planner_core() {
    let r = report();
    let text = report_to_json(&r).expect("valid");
    assert_eq!(parse_report(&text), Ok(r));
}

/// Checks `value` against `schema`: required properties, JSON types, enums and `$ref`s.
fn conforms(value: &Value, schema: &Value, root: &Value, path: &str) -> Result<(), String> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return conforms(value, &root["$defs"][name], root, path);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            if options
                .iter()
                .any(|o| conforms(value, o, root, path).is_ok())
            {
                return Ok(());
            }
            return Err(format!("{path}: matches none of {key}"));
        }
    }
    if let Some(c) = schema.get("const") {
        return if c == value {
            Ok(())
        } else {
            Err(format!("{path}: not {c}"))
        };
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        return if e.contains(value) {
            Ok(())
        } else {
            Err(format!("{path}: {value} not in enum"))
        };
    }
    let ok = match schema.get("type").and_then(Value::as_str) {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("boolean") => value.is_boolean(),
        Some("integer") => value.is_u64() || value.is_i64(),
        Some("number") => value.is_number(),
        _ => true,
    };
    if !ok {
        return Err(format!("{path}: {value} is not {:?}", schema.get("type")));
    }
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        if value.as_f64().is_some_and(|v| v < min) {
            return Err(format!("{path}: below minimum {min}"));
        }
    }
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for field in required.iter().filter_map(Value::as_str) {
            if value.get(field).is_none() {
                return Err(format!("{path}.{field}: required but missing"));
            }
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, s) in props {
            if let Some(v) = value.get(k) {
                conforms(v, s, root, &format!("{path}.{k}"))?;
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), value.as_array()) {
        for (i, v) in arr.iter().enumerate() {
            conforms(v, items, root, &format!("{path}[{i}]"))?;
        }
    }
    Ok(())
}

#[test]
fn written_json_conforms_to_the_schema() {
    let schema: Value = serde_json::from_str(&report_json_schema()).unwrap();
    let value: Value = serde_json::from_str(&report_to_json(&report()).unwrap()).unwrap();
    conforms(&value, &schema, &schema, "$").unwrap();
    // And the checker does reject a broken report.
    let mut broken = value.clone();
    broken["collectives"][0]
        .as_object_mut()
        .unwrap()
        .remove("busbw_gb_per_s");
    assert!(conforms(&broken, &schema, &schema, "$").is_err());
    let mut broken = value;
    broken["collectives"][0]["op"] = "allreduce".into();
    assert!(conforms(&broken, &schema, &schema, "$").is_err());
}
