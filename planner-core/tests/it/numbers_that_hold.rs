//! Issue 39: the rows first seen at `ed42326`, the dataset reader's tolerance, FSDP under
//! pipelining as torchtitan runs it, the error bands and the parts datasets.

use planner_core::edges::error_band::{
    band_scenario, error_band, error_table, error_table_tsv, parse_error_table,
    within_band_of_best, BandKind, BandScenario, ErrorRow, ERROR_TABLE_HEADER, ERROR_TABLE_TSV,
};
use planner_core::edges::parts_validation::{validate_parts, Part, PARTS_JSON};
use planner_core::edges::validation::{
    map_run, parse_runs, run_validation, validate_run, ValidationOptions, ALL_GROUP,
    PUBLIC_RUNS_JSON, TIME_GROUP,
};
use planner_core::input::collective::Collective;
use planner_core::input::framework::Framework;
use planner_core::input::fsdp_semantics::FsdpSemantics;
use planner_core::memory::training_memory::training_memory;
use planner_core::time::comms::Purpose;
use planner_core::time::cost::{CostOptions, StepModel};

fn run_by_id(id: &str) -> planner_core::edges::validation::PublishedRun {
    parse_runs(PUBLIC_RUNS_JSON)
        .expect("dataset parses")
        .into_iter()
        .find(|r| r.id == id)
        .expect("row")
}

/// The 62 rows of `public-runs-2.json` carry the error `meshplan validate` gave them at
/// `ed42326`, before anyone here saw them (validation/README.md), and the summary over them
/// reproduces that README's first-seen table.
#[test]
fn the_first_seen_rows_keep_the_error_they_had_when_first_seen() {
    let runs = parse_runs(PUBLIC_RUNS_JSON).expect("parses");
    assert_eq!(runs.len(), 187);
    assert_eq!(runs.iter().filter(|r| r.first_seen.is_some()).count(), 62);
    let r = run_validation(PUBLIC_RUNS_JSON, ValidationOptions { search: false }).expect("runs");
    let group = |name: &str| {
        r.first_seen
            .iter()
            .find(|g| g.group == name)
            .unwrap_or_else(|| panic!("{name}"))
            .stats
            .clone()
    };
    // validation/README.md: 26 rows, 13.5% / 53.5% / 141.5%; memory 7 rows, 57.2% / 75.5% / 77.3%.
    let time = group(TIME_GROUP);
    assert_eq!(time.compared, 26);
    assert!((time.median.unwrap() - 0.135).abs() < 5e-4, "{time:?}");
    assert!((time.p90.unwrap() - 0.535).abs() < 5e-4, "{time:?}");
    assert!((time.max.unwrap() - 1.415).abs() < 5e-4, "{time:?}");
    let mem = group("peak_memory_gib");
    assert!((mem.median.unwrap() - 0.572).abs() < 5e-4, "{mem:?}");
    // The vLLM/SGLang KV rows could not be read then; they are compared now.
    assert_eq!(group(ALL_GROUP).not_representable, 3);
    let kv = r
        .first_seen_today
        .iter()
        .find(|g| g.group == "kv pool")
        .expect("kv group");
    assert_eq!(kv.stats.compared, 3);
}

/// A dataset from elsewhere: a key the reader does not know, or a training row without a
/// sequence length, makes that row not representable and names why; the file still reads.
/// A tiny `value` is refused at the edge, naming the field (issue 39 §5).
#[test]
fn a_row_the_file_cannot_express_is_reported_not_fatal() {
    let mut rows: serde_json::Value = serde_json::from_str(PUBLIC_RUNS_JSON).expect("json");
    let arr = rows.as_array_mut().expect("array");
    arr.truncate(2);
    arr[0]["optimizer_offload"] = serde_json::json!("cpu");
    arr[1]["seq_len"] = serde_json::Value::Null;
    let r = run_validation(&rows.to_string(), ValidationOptions { search: false })
        .expect("the file reads");
    let why0 = r.rows[0].not_representable.as_deref().expect("row 0");
    assert!(why0.contains("optimizer_offload"), "{why0}");
    let why1 = r.rows[1].not_representable.as_deref().expect("row 1");
    assert!(why1.contains("seq_len"), "{why1}");

    let mut tiny: serde_json::Value = serde_json::from_str(PUBLIC_RUNS_JSON).expect("json");
    tiny.as_array_mut().expect("array").truncate(1);
    tiny[0]["value"] = serde_json::json!(5e-324);
    let err = run_validation(&tiny.to_string(), ValidationOptions { search: false })
        .expect_err("a 5e-324 value is refused");
    assert_eq!(err.field, "[0].value", "{err:?}");
}

/// torchtitan under pipelining (its `reshard_after_forward = not pp_enabled`, PyTorch's
/// pipeline stage deferring gradient sync): one forward all-gather per unit per step, none in
/// backward, one reduce-scatter; the stage's parameters held unsharded in bf16 and its
/// gradient accumulated unsharded in fp32. Without pipelining FSDP gathers twice and reduces
/// per micro-batch.
#[test]
fn fsdp_under_pipelining_gathers_and_reduces_once_per_step() {
    let run = run_by_id("torchtitan-t5-405b-1f1b-mem");
    let mapped = map_run(&run).expect("maps");
    let sc = &mapped.scenario;
    assert_eq!(sc.overheads.framework, Framework::Torchtitan);
    assert_eq!(
        FsdpSemantics::of(Framework::Torchtitan, sc.layout.pp),
        FsdpSemantics::ONCE_PER_STEP
    );
    // torchtitan of 2024-12 splits the local batch of 32 into pp = 8 micro-batches.
    assert_eq!(sc.layout.micro_batch, 4);
    let model = sc.model_spec().expect("model");
    let mem = training_memory(sc, &model);
    let peak = &mem.stages[mem.peak_stage];
    let gathered = peak
        .terms
        .iter()
        .find(|t| t.key == "zero3.gathered")
        .expect("gathered");
    let grads = peak
        .terms
        .iter()
        .find(|t| t.key == "fsdp.unsharded_grads")
        .expect("unsharded gradients");
    // 4 B of fp32 gradient for each parameter the stage holds at its weight bytes (this FP8
    // row: 3 B, the bf16 weight and its fp8 cast): the same stage parameters in both.
    let w = sc.precision.weight_bytes;
    assert_eq!(w, 3.0);
    assert!(
        (grads.value / 4.0 / (gathered.value / w) - 1.0).abs() < 1e-9,
        "{grads:?} {gathered:?}"
    );

    let sm = StepModel::for_scenario(&model, sc, CostOptions::default());
    let placement = sm.placement(&sc.layout);
    let items = sm.step_comms(&sc.layout, &placement);
    let calls = |p: Purpose| {
        items
            .iter()
            .filter(|i| i.purpose == p)
            .map(|i| i.calls_per_step)
            .sum::<f64>()
    };
    assert_eq!(calls(Purpose::ParamAllGatherForward), 1.0);
    assert_eq!(calls(Purpose::ParamAllGatherBackward), 0.0);
    assert_eq!(calls(Purpose::GradReduceScatter), 1.0);
    let flat = FsdpSemantics::of(Framework::Torchtitan, 1);
    assert_eq!(flat.reduce_scatters(8.0), 8.0);
    assert_eq!(flat.backward_gathers(8.0), 8.0);
}

/// `validation/errors.tsv` is what `meshplan validate --write-errors` writes from the model
/// as it stands: after a change to the model, regenerate it
/// (`cargo run --release -p meshplan -- validate --no-search --write-errors validation/errors.tsv`).
/// It reads back to the rows it was written from, and a bad line is refused naming its line.
#[test]
fn error_table_is_current() {
    let runs = parse_runs(PUBLIC_RUNS_JSON).expect("parses");
    let r = run_validation(PUBLIC_RUNS_JSON, ValidationOptions { search: false }).expect("runs");
    let now = error_table(&runs, &r);
    let stored = parse_error_table(ERROR_TABLE_TSV).expect("table parses");
    assert_eq!(
        parse_error_table(&error_table_tsv(&now)).expect("reads back"),
        now
    );
    let bad = format!("{ERROR_TABLE_HEADER}\nx\tmfu\t1\t8\tH100-80GB\tarticle\t1\t1\t\tnan\n");
    assert_eq!(
        parse_error_table(&bad).expect_err("NaN").field,
        "line 2: today"
    );
    assert_eq!(
        parse_error_table("id\n").expect_err("header").field,
        "line 1"
    );
    assert_eq!(now.len(), stored.len());
    for (a, b) in now.iter().zip(&stored) {
        assert_eq!(
            a, b,
            "validation/errors.tsv is stale at {}: regenerate it",
            a.id
        );
    }
}

fn row(id: &str, gpu: &str, params_b: f64, gpus: u32, first: Option<f64>, today: f64) -> ErrorRow {
    ErrorRow {
        id: id.to_string(),
        quantity: planner_core::edges::validation::Quantity::TokensPerSPerGpu,
        params_b,
        gpus,
        gpu_type: gpu.to_string(),
        framework: "megatron-core".to_string(),
        tp: 8,
        pp: 1,
        first_seen: first,
        today: Some(today),
    }
}

/// The band is the median |error| of the nearest rows, each at its first-seen error where it
/// has one; a scenario on a GPU without rows, or 10× away from every row, is an extrapolation.
#[test]
fn the_band_reads_first_seen_errors_and_flags_extrapolation() {
    let table = vec![
        row("a", "H100-80GB", 70.0, 64, Some(0.30), 0.02),
        row("b", "H100-80GB", 70.0, 128, None, -0.10),
        row("c", "H100-80GB", 8.0, 8, None, 0.04),
    ];
    let s = BandScenario {
        params_b: 70.0,
        gpus: 64,
        gpu_id: "h100-sxm",
        framework: Framework::MegatronCore,
        tp: 8,
        pp: 1,
    };
    let b = error_band(&table, BandKind::StepTime, &s).expect("band");
    // |0.30| (first seen, not today's 0.02), |−0.10|, |0.04|: median 0.10.
    assert!((b.relative - 0.10).abs() < 1e-12, "{b:?}");
    assert_eq!(b.first_seen_runs, 1);
    assert!(b.extrapolation.is_none());
    assert!(b.text.starts_with("±10%"), "{}", b.text);
    assert!(b.indistinct(5.0, 5.4) && !b.indistinct(5.0, 5.6));
    assert_eq!(
        within_band_of_best(&b, &[5.0, 5.4, 5.6]),
        [false, true, false]
    );

    let far = BandScenario {
        params_b: 1000.0,
        gpus: 16384,
        ..s
    };
    assert!(error_band(&table, BandKind::StepTime, &far)
        .expect("band")
        .extrapolation
        .is_some());
    let other_gpu = BandScenario {
        gpu_id: "b200",
        ..s
    };
    let e = error_band(&table, BandKind::StepTime, &other_gpu).expect("band");
    assert!(e.extrapolation.expect("extrapolation").contains("b200"));
    assert!(
        error_band(&table, BandKind::PeakMemory, &s).is_none(),
        "no memory rows"
    );
}

/// The article's mesh gets a step-time band from the built-in table.
#[test]
fn the_article_scenario_has_a_band() {
    let sc = planner_core::resolve::presets::article_mesh_scenario();
    let model = sc.model_spec().expect("model");
    let bands = planner_core::edges::error_band::builtin_bands(&band_scenario(
        &sc,
        model.param_breakdown().total() as f64 / 1e9,
    ));
    assert!(bands
        .iter()
        .any(|b| b.kind == BandKind::StepTime && b.runs == 12));
}

/// Every parts dataset parses, each row is compared or says why not, and a collective on
/// several H100 nodes is priced by NCCL's tuner.
#[test]
fn the_parts_datasets_price_every_row_or_say_why() {
    let r = validate_parts(&PARTS_JSON).expect("parts parse");
    assert!(r.rows.len() > 200);
    for p in &r.rows {
        match (&p.relative_error, &p.not_representable) {
            (Some(e), None) => assert!(e.is_finite(), "{}", p.id),
            (None, Some(why)) => assert!(!why.is_empty(), "{}", p.id),
            _ => panic!("{}: exactly one of an error or a reason", p.id),
        }
    }
    for part in [Part::Collective, Part::Gemm, Part::Attention, Part::Hbm] {
        let g = r
            .by_part
            .iter()
            .find(|g| g.group == part.id())
            .expect("part");
        assert!(g.stats.compared > 10, "{}", part.id());
    }
    let nccl = r
        .rows
        .iter()
        .filter(|p| p.part == Part::Collective && p.how.starts_with("NCCL tuner"))
        .count();
    assert!(nccl > 50, "{nccl}");
    // A GEMM on a GPU whose record states its SMs is priced by tiles in waves
    // (time::gemm_shape): 2048³ FP8 on an H100 is one wave of 256 × 128 tiles on 132 SMs.
    let h100 = r
        .rows
        .iter()
        .find(|p| p.id == "azure-h100-gemm-2048x2048x2048")
        .expect("row");
    assert!(
        h100.how.starts_with("256×128 tiles, 1 wave(s) on 132 SMs"),
        "{}",
        h100.how
    );
    assert_eq!(
        Collective::from_id("all_reduce"),
        Some(Collective::AllReduce)
    );
}

/// One row maps the same through `validate_run` as through the whole run (the page's path).
#[test]
fn a_kv_pool_row_is_compared_with_the_engine_pool() {
    let run = run_by_id("vllm21348-qwen3-235b-sglang");
    let (r, _) = validate_run(&run);
    let c = r.comparison.expect("compared");
    // SGLang's pool at mem_fraction_static 0.93: 48,128 B per token per GPU (94 layers × 4 KV
    // heads × 128 × 2 × 2 B / TP 4).
    assert!(
        r.notes.iter().any(|n| n.contains("48128 B per token")),
        "{:?}",
        r.notes
    );
    assert!(c.predicted > 0.0);
}

/// A GPU whose measured BF16 matmul share of peak (ml-engineering's MAMF table) is below the
/// H100 SXM's 80.3% runs the default curve at that ratio; one at or above it (A100 SXM 86.9%)
/// keeps the curve. B200 and GB200 had been left out of the rule.
#[test]
fn gpus_below_h100s_measured_matmul_share_run_the_curve_at_their_ratio() {
    let rel = |id: &str| {
        planner_core::input::hardware::gpu_preset(id)
            .expect("preset")
            .traits()
            .compute
            .bf16_gemm_relative_to_h100
    };
    assert_eq!(rel("b200"), 0.776 / 0.803);
    assert_eq!(rel("gb200-nvl72"), 0.729 / 0.803);
    assert_eq!(rel("mi325x"), 0.604 / 0.803);
    assert_eq!(rel("mi300x"), 0.514 / 0.803);
    assert_eq!(rel("a100-80gb"), 1.0);
    assert_eq!(rel("h200"), 1.0);
}
