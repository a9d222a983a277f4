//! `planner_core::edges::serving_validation`: the published serving dataset, its mapping to a
//! scenario and load, one prediction recomputed from its terms, and a guard on today's accuracy.

use planner_core::edges::serving_validation::{
    map_serving_run, parse_serving_runs, run_serving_validation, serving_model_key,
    validate_serving_run, ServingQuantity, ServingValidationReport, ALL_SERVING_GROUP,
    SERVING_RUNS_JSON,
};
use planner_core::serving::latency::serving_time_for;

fn report() -> ServingValidationReport {
    run_serving_validation(SERVING_RUNS_JSON).expect("dataset parses")
}

#[test]
fn the_dataset_parses_with_unique_ids_and_a_source_for_every_row() {
    let runs = parse_serving_runs(SERVING_RUNS_JSON).expect("parses");
    assert_eq!(runs.len(), 55);
    let mut ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 55, "ids are unique");
    for r in &runs {
        assert!(r.url.starts_with("https://"), "{}", r.id);
        assert!(r.place.len() > 20, "{}: the table and row are named", r.id);
        assert!(
            r.notes.len() > 40,
            "{}: what the source leaves unsaid",
            r.id
        );
    }
}

#[test]
fn every_row_compares_each_measurement_or_carries_a_reason() {
    let r = report();
    assert_eq!(r.rows.len(), 55);
    for row in &r.rows {
        match &row.not_representable {
            None => {
                assert_eq!(row.comparisons.len(), row.measured.len(), "{}", row.id);
                for c in &row.comparisons {
                    assert!(c.predicted.is_finite() && c.predicted > 0.0, "{}", row.id);
                    assert!(c.relative_error.is_finite(), "{}", row.id);
                }
                assert!(row.model_source.is_some(), "{}", row.id);
                assert!(row.breakdown.is_some(), "{}", row.id);
            }
            Some(reason) => {
                assert!(row.comparisons.is_empty(), "{}", row.id);
                assert!(reason.len() > 20, "{}: {reason}", row.id);
            }
        }
    }
    // Unsaid fields are listed: every row without a KV dtype says which it used (FP8 for the
    // TensorRT-LLM rows of ModelOpt FP8 checkpoints and NIM's FP8 TensorRT-LLM profile, BF16
    // for vLLM).
    let runs = parse_serving_runs(SERVING_RUNS_JSON).expect("parses");
    for (run, row) in runs.iter().zip(&r.rows) {
        if run.kv_dtype.is_none() {
            let want = if run.engine != "vLLM" {
                "kv_dtype not stated: fp8 ("
            } else {
                "kv_dtype not stated: bf16"
            };
            assert!(
                row.defaults.iter().any(|d| d.starts_with(want)),
                "{}: {:?}",
                row.id,
                row.defaults
            );
        }
    }
}

/// Why the NIM rows take an FP8 KV cache: at concurrency 100 the page's own figures say how
/// many requests were decoding at once (Little's law: completions/s × time in decode), and
/// their cache in BF16 would not fit beside the weights in two H100s at all.
#[test]
fn a_bf16_kv_cache_cannot_hold_what_nim_c100_decodes_at_once() {
    let runs = parse_serving_runs(SERVING_RUNS_JSON).expect("parses");
    let run = runs
        .iter()
        .find(|r| r.id == "nim180-llama33-70b-h100-tp2-5000-500-c100")
        .expect("row");
    let (o, itl_s) = (
        f64::from(run.output_tokens),
        run.tpot_ms.expect("itl") / 1e3,
    );
    let completions_per_s = run.output_tokens_per_s.expect("throughput") / o;
    let decoding = completions_per_s * (o - 1.0) * itl_s;
    assert!((decoding - 85.0).abs() < 1.0, "{decoding}");
    // Each holds at least its prompt and half its output on average: 5,250 tokens; Llama 3.3
    // 70B keeps 80 layers × 8 KV heads × 128 × K and V.
    let kv_bf16 = decoding * 5250.0 * (80.0 * 8.0 * 128.0 * 2.0 * 2.0);
    let mapped = map_serving_run(run).expect("maps");
    let free = mapped.scenario.cluster.gpu.memory_bytes * 2.0 - 70.6e9;
    assert!(kv_bf16 > free, "{kv_bf16} > {free}");
    assert!(kv_bf16 / 2.0 < free);
    assert_eq!(mapped.scenario.serving.kv_dtype.bytes(), 1.0);
}

/// Why the TensorRT-LLM 1.0 rows take an FP8 KV cache: with BF16 KV, Llama 3.1 8B at 128 in /
/// 2048 out could not reach the published 22,714 output tokens/s on one H100 even if every
/// decode step did nothing but stream the cache at the datasheet bandwidth.
#[test]
fn a_bf16_kv_cache_cannot_reach_the_trt10_8b_throughput() {
    let runs = parse_serving_runs(SERVING_RUNS_JSON).expect("parses");
    let run = runs
        .iter()
        .find(|r| r.id == "trt10-h100-llama31-8b-tp1-128-2048")
        .expect("row");
    let measured = run.output_tokens_per_s.expect("throughput");
    // Llama 3.1 8B config.json: 32 layers, 8 KV heads of 128; K and V in BF16.
    let bf16_kv_bytes_per_token = 32.0 * 8.0 * 128.0 * 2.0 * 2.0;
    // Output token j of a request reads P + j − 1 cached tokens: the mean over O tokens.
    let mean_context = 128.0 + (2048.0 - 1.0) / 2.0;
    let mapped = map_serving_run(run).expect("maps");
    let hbm = mapped.scenario.cluster.gpu.hbm_bytes_per_s;
    assert!(
        (hbm / 3.35e12 - 1.0).abs() < 1e-9,
        "H100 SXM datasheet HBM3"
    );
    let bound = hbm / (mean_context * bf16_kv_bytes_per_token);
    assert!(bound < measured, "BF16 bound {bound:.0} tok/s");
    // With FP8 KV (1 byte) the bound doubles and the figure is reachable.
    assert!(2.0 * bound > measured);
    assert_eq!(mapped.scenario.serving.kv_dtype.bytes(), 1.0);
}

#[test]
fn a_static_batch_row_is_the_closed_form_of_its_terms() {
    let runs = parse_serving_runs(SERVING_RUNS_JSON).expect("parses");
    let run = runs
        .iter()
        .find(|r| r.id == "trt09-a100-llama2-7b-tp1-bs256-128-128")
        .expect("row");
    let mapped = map_serving_run(run).expect("maps");
    assert_eq!(
        mapped.model_source,
        "llama-2-7b from meta-llama/Llama-2-7b-hf config.json"
    );
    assert_eq!(mapped.scenario.cluster.gpu.id, "a100-80gb");
    // Static batching: the whole prompt in one context step, no queue.
    assert_eq!(mapped.load.prefill_chunk_tokens, 128);
    assert_eq!(mapped.load.concurrency, 256);
    let spec = mapped.scenario.model_spec().expect("model");
    let t = serving_time_for(&spec, &mapped.scenario, &mapped.load).expect("evaluates");
    // Throughput of a static batch: b · O / (O · step + b · (prefill compute + traffic)), i.e.
    // c / TPOT with TPOT = step + (c / O) · (prefill compute + its activation traffic) (one
    // GPU: per GPU = per replica).
    let step = t.decode.time.value;
    let prefill_added = t.prefill.compute_time.value + t.prefill.traffic_time.value;
    let by_hand = 256.0 * 128.0 / (128.0 * step + 256.0 * prefill_added);
    assert!((t.throughput_per_gpu.value / by_hand - 1.0).abs() < 1e-12);
    // Llama 2 7B in FP16 on one A100 80 GB: the step streams 2 bytes × 6.74e9 parameters
    // less the 32,000 × 4,096 embedding table (a lookup reads the batch's 256 rows): 13.2 GB,
    // plus 256 sequences × (128 + 63.5) cached tokens × 524,288 B (32 layers × 32 KV heads ×
    // 128 × 2 × 2 B) = 25.7 GB, at the A100 80 GB's measured BabelStream Copy, 1.61 TB/s
    // (input/gpu_presets/, Azure's ND A100 v4 results), and the 256 tokens' activations
    // through the layers' memory-bound kernels (serving/layer_traffic.rs), per token per layer
    // 2 × 4 × 4096 × 2 (norms) + 2 × (4096 + 4096) × 2 (RoPE) + 8192 × (2 + 2) (cache write)
    // + 3 × 11008 × 2 (SiLU-and-mul) = 197,120 B, × 32 layers × 256 = 1.61 GB:
    // (13.2 + 25.7 + 1.6) GB / 1.61 TB/s ≈ 25.2 ms, the memory time the dataset's table prints.
    let kv_per_token = 32.0 * 32.0 * 128.0 * 2.0 * 2.0;
    let kv = 256.0 * (128.0 + 127.0 / 2.0) * kv_per_token;
    assert!((t.decode.kv_bytes.value / kv - 1.0).abs() < 1e-9);
    let weights = t.decode.weight_bytes.value;
    let streamed = 2.0 * (6.738e9 - 32_000.0 * 4096.0 + 256.0 * 4096.0);
    assert!((weights / streamed - 1.0).abs() < 0.01, "{weights}");
    let hbm = 1.61 / 2.039 * mapped.scenario.cluster.gpu.hbm_bytes_per_s;
    let traffic = 256.0 * 32.0 * 197_120.0;
    assert!((t.decode.memory_time.value / ((weights + kv + traffic) / hbm) - 1.0).abs() < 1e-9);
    assert!((t.decode.memory_time.value - 0.0252).abs() < 0.0002);
    let row = validate_serving_run(run);
    let c = &row.comparisons[0];
    assert_eq!(c.quantity, ServingQuantity::OutputTokensPerS);
    assert!((c.predicted / t.throughput_per_gpu.value - 1.0).abs() < 1e-12);
    assert!((c.relative_error - (c.predicted / 5390.0 - 1.0)).abs() < 1e-12);
}

#[test]
fn a_maximum_load_row_takes_the_sequences_its_kv_pool_holds() {
    let runs = parse_serving_runs(SERVING_RUNS_JSON).expect("parses");
    let run = runs
        .iter()
        .find(|r| r.id == "trt10-h100-llama33-70b-tp2-1000-1000")
        .expect("row");
    assert!(run.concurrency.is_none());
    let mapped = map_serving_run(run).expect("maps");
    let spec = mapped.scenario.model_spec().expect("model");
    let t = serving_time_for(&spec, &mapped.scenario, &mapped.load).expect("evaluates");
    let seqs = (t.kv_capacity_tokens.value / 2000.0).floor() as u32;
    assert_eq!(mapped.load.concurrency, seqs);
    assert!(t.fits_kv);
    // One more sequence would not fit.
    assert!(f64::from(seqs + 1) * 2000.0 > t.kv_capacity_tokens.value);
    assert!(mapped
        .defaults
        .iter()
        .any(|d| d.starts_with("concurrency not stated (maximum load)")));
}

#[test]
fn a_perf_overview_row_pads_its_decode_gemms_to_the_next_captured_graph() {
    use planner_core::edges::serving_validation::perf_overview_padded_batch;
    use planner_core::serving::latency::graph_padded_tokens;
    // perf-overview.md llm_options.yml: batch_sizes … 256, 384, 512, 1024 …
    assert_eq!(perf_overview_padded_batch(265), Some(384));
    assert_eq!(perf_overview_padded_batch(256), Some(256));
    assert_eq!(perf_overview_padded_batch(8193), None);
    let runs = parse_serving_runs(SERVING_RUNS_JSON).expect("parses");
    let run = runs
        .iter()
        .find(|r| r.id == "trt10-h100-llama33-70b-tp2-1000-1000")
        .expect("row");
    let mapped = map_serving_run(run).expect("maps");
    let c = mapped.load.concurrency;
    assert_eq!(
        mapped.load.graph_padded_batch,
        perf_overview_padded_batch(c)
    );
    // c / O of the steps admit a prompt and run unpadded: m + (b − m)·(1 − c/O).
    let b = f64::from(mapped.load.graph_padded_batch.expect("padded"));
    let m = f64::from(c);
    let want = m + (b - m) * (1.0 - m / 1000.0);
    assert!((graph_padded_tokens(&mapped.load, m) - want).abs() < 1e-9);
    // Rows of other sources are not padded.
    let nim = runs
        .iter()
        .find(|r| r.source == "NIM 1.8.0 benchmarks")
        .expect("row");
    assert_eq!(
        map_serving_run(nim).expect("maps").load.graph_padded_batch,
        None
    );
}

#[test]
fn a_perf_overview_row_runs_each_prompt_as_one_context_chunk() {
    // trtllm-bench leaves chunked prefill off (llm_args.py enable_chunked_prefill default
    // False): every prompt of the TensorRT-LLM 1.0 rows, 5,000 tokens included, is one chunk.
    let runs = parse_serving_runs(SERVING_RUNS_JSON).expect("parses");
    let rows: Vec<_> = runs
        .iter()
        .filter(|r| r.source == "TRT-LLM 1.0 perf-overview")
        .collect();
    assert!(rows.len() >= 10);
    for run in rows {
        let mapped = map_serving_run(run).expect("maps");
        assert_eq!(
            mapped.load.prefill_chunk_tokens, run.prompt_tokens,
            "{}",
            run.id
        );
        assert!(mapped
            .defaults
            .iter()
            .any(|d| d.contains("enable_chunked_prefill default False")));
    }
}

#[test]
fn a_vllm_maximum_load_row_is_capped_at_max_num_seqs() {
    let runs = parse_serving_runs(SERVING_RUNS_JSON).expect("parses");
    let run = runs
        .iter()
        .find(|r| r.id == "oci-mi300x-llama31-405b-tp8-max-128-128")
        .expect("row");
    let mapped = map_serving_run(run).expect("maps");
    // Eight 192 GB MI300X hold thousands of 256-token sequences; vLLM runs at most 256.
    assert_eq!(mapped.load.concurrency, 256);
    assert_eq!(mapped.scenario.cluster.gpu.id, "mi300x");
}

#[test]
fn bad_input_names_the_field() {
    let one = |patch: &dyn Fn(&mut serde_json::Value)| {
        let mut rows: serde_json::Value = serde_json::from_str(SERVING_RUNS_JSON).expect("json");
        patch(&mut rows[1]);
        parse_serving_runs(&rows.to_string()).expect_err("refused")
    };
    assert_eq!(one(&|r| r["tp"] = serde_json::json!(0)).field, "[1].tp");
    assert_eq!(
        one(&|r| r["output_tokens_per_s"] = serde_json::json!(-1.0)).field,
        "[1].output_tokens_per_s"
    );
    assert_eq!(
        one(&|r| r["weight_dtype"] = serde_json::json!("fp7")).field,
        "[1].weight_dtype"
    );
    assert_eq!(
        one(&|r| r["throughput_basis"] = serde_json::Value::Null).field,
        "[1].throughput_basis"
    );
    assert_eq!(
        one(&|r| r["model_name"] = serde_json::json!("a\u{7}b")).field,
        "[1].model_name"
    );
    assert_eq!(
        one(&|r| r["speed"] = serde_json::json!(3)).field,
        "[1].speed"
    );
    assert_eq!(
        one(&|r| r["id"] = serde_json::json!("trt09-h100-llama2-7b-tp1-bs896-128-128")).field,
        "[1].id"
    );
    assert!(parse_serving_runs("{}").is_err());
}

/// Today's measurement, recorded so a later change cannot make it quietly worse. These
/// are NOT the targets (issue 14: median |error| ≤ 15% on TPOT and throughput, ≤ 25% on
/// TTFT), which the model misses today. A change that worsens a median by more than 2
/// percentage points fails here; lower these when the model improves (never raise them).
#[test]
fn serving_accuracy_does_not_regress_from_todays_measurement() {
    // Measured on 2026-12-02 with `meshplan validate --serving`: median |error|, tightened to
    // what main reached (it had kept 2026-12-01's earlier, looser figures). Throughput and the
    // TensorRT-LLM 1.0 source moved by cited inputs, not by a fit: the TensorRT-LLM rows of FP8
    // ModelOpt checkpoints take an FP8 KV cache (hf_ptq.py `--kv_cache_qformat` default fp8; a
    // BF16 cache could not stream the published 8B 128/2048 figure at H100's HBM bandwidth),
    // and their pool is kv_cache_free_gpu_mem_fraction of the memory left after weights
    // (`_torch/pyexecutor/_util.py` cal_max_tokens). The TensorRT-LLM 1.0 rows went from
    // −30…+25% to +18…+56% (median 15.4% → 25.3%): raised, not tuned back.
    // Then the engines' custom all-reduce on H100/H200 (serving/custom_all_reduce.rs, vLLM's
    // kernel measured in sglang PR #2904): TPOT 23.5% → 21.0%, throughput 27.1% → 26.7%,
    // TRT-LLM 0.9 throughput 27.4% → 26.6%, NIM 29.1% → 28.1%; TTFT 29.6% → 31.0% (the NIM
    // closed loops' queue follows their slower TP 2 decode) and vLLM CI 23.8% → 24.3% (its
    // TP 4 rows get faster): recorded as measured.
    // Then NIM's fp8 TP2 profile on its TensorRT-LLM backend with an FP8 KV cache (its c50 row
    // keeps 50 × 5,500 tokens resident, which BF16 cannot on two H100s): c50 becomes
    // comparable (−20/−19/+24%), c100 stays refused (the page's 8 s TTFT is that KV queue);
    // TTFT 31.0% → 29.4%, all 28.0% → 26.7%, NIM 28.1% → 25.8%; TPOT 21.0% → 22.6% (c25
    // −12% → −21%, c50 −19% added): recorded as measured.
    // Merged with the FP8 GEMM share of training (ml-engineering's MAMF table,
    // input/gemm_efficiency.rs, applied to FP8 weight GEMMs): TTFT 23.3%, TPOT 19.8%,
    // throughput 21.8%, e2e 28.0%, all 23.8%; by source as below.
    // Then MI300X at its measured figures (input/gpu_presets/: Azure's BabelStream Copy
    // 4.11 of 5.3 TB/s; input/gemm_efficiency.rs: ml-engineering's BF16 MAMF 51.4% and Azure's
    // hipBLASLt FP8 1159 TFLOPS): e2e 28.0% → 24.3%, all 23.8% → 23.6%, OCI MI300X 50.7% → 32.4%.
    // Then each decoder layer's 10 kernels at the launch cost measured inside a CUDA graph on
    // H100 (serving/kernel_gaps.rs: Hazy Research's 1.3 µs per kernel; vLLM llama.py's kernel
    // count), on H100 and H200 only: TTFT 23.3% → 22.7%, TPOT 19.8% → 16.1%, throughput
    // 21.8% → 20.1%, e2e 24.3% → 23.4%, all 23.6% → 21.3%; TRT-LLM 0.9 throughput 26.1% →
    // 22.1%, first token 25.1% → 23.9%, TRT-LLM 1.0 16.3% → 16.0%, NIM 20.7% → 17.3%,
    // vLLM CI 24.3% → 23.4%.
    // Then FP8 weight GEMMs on H100 at the 81.2% of datasheet bandwidth vLLM's FP8 GEMM
    // benchmark measured at M = 1–64 (serving/weight_stream.rs, vllm-project/vllm PR #49363;
    // its BF16 column confirms the 0.9 copy share): TPOT 16.1% → 11.5%, throughput 20.1% →
    // 17.9%, all 21.3% → 19.6%; TRT-LLM 0.9 throughput 22.1% → 20.1%, NIM 17.3% → 12.9%.
    // Then the TensorRT-LLM 1.0 perf-overview rows' CUDA-graph padding (their llm_options.yml
    // cuda_graph_config enable_padding, batch_sizes … 256, 384, 512, 1024 …; ServingLoad
    // graph_padded_batch on the steps that admit no prompt): throughput 17.9% → 17.4%, all
    // 19.6% → 18.9%, TRT-LLM 1.0 16.0% → 14.8%.
    // Then the embedding lookup (a step reads its tokens' rows, not the table) and the
    // embedding and output projection in BF16 under quantized linear layers (ModelOpt's
    // `"*lm_head*": {"enable": False}`, vLLM's linear-only FP8 method; memory/serving.rs
    // `vocab_dtype_bytes`): TRT-LLM 1.0 14.8% → 14.3% (smaller pools on the FP8 rows);
    // e2e 23.4% → 25.3%, all 18.9% → 19.5%, vLLM CI 23.4% → 25.3% (its BF16 rows, already
    // too fast, drop the 8B's 1.05 GB table read): recorded as measured, not tuned back.
    // Then the A100 80 GB's and H200's measured BabelStream Copy share in place of the 0.9
    // default (input/gpu_presets/: Azure AI-benchmarking-guide, ND A100 v4 1.61 of 2.039
    // TB/s, ND H200 v5 4.01 of 4.8 TB/s): throughput 17.4% → 15.3%, e2e 25.3% → 20.1%, all
    // 19.5% → 17.6%, TRT-LLM 1.0 14.3% → 13.3%, vLLM CI 25.3% → 19.8%; TRT-LLM 0.9
    // throughput 20.1% → 20.3% (its A100 rows that were too slow get slower): recorded.
    // Then, at the merge, H200 back to its own measurement (domain notes, "Achieved figures":
    // one H200 copied device memory at ~4.3 TB/s, the figure the 0.9 default stands on), not
    // the second, 7% lower BabelStream reading: throughput 15.3% → 17.4%, all 17.6% → 18.7%,
    // TRT-LLM 0.9 throughput 20.3% → 20.6%, TRT-LLM 1.0 13.3% → 14.3%: recorded as measured.
    // Then TensorRT-LLM 1.0's decode attention (XQA) reading an FP8 KV cache at the 4.03 of
    // 4.8 TB/s its tech blog 16 measured on H200 (serving/decode_attention.rs; the BF16 row,
    // 4.31 TB/s, is the copy share): throughput 17.4% → 15.7%, all 18.7% → 18.3%, TRT-LLM 1.0
    // 14.3% → 13.4%.
    // Then the memory-bound kernels between the GEMMs (serving/layer_traffic.rs: two fused
    // add + RMSNorm, RoPE, the KV-cache write and SiLU-and-mul, each tensor read and written as
    // vLLM's csrc kernels do), per token per layer in every forward, and a prefill chunk's
    // share of it in the decode step it joins: TTFT 22.7% → 15.1%, TPOT 11.5% → 8.5%,
    // throughput 15.7% → 13.0%, e2e 20.1% → 19.6%, all 18.3% → 14.9%; TRT-LLM 0.9 throughput
    // 20.6% → 19.1%, first token 23.9% → 17.0%, TRT-LLM 1.0 13.4% → 7.0%, NIM 12.9% → 8.8%,
    // vLLM CI 19.8% → 19.5%, OCI MI300X 32.4% → 29.5%.
    // Then collectives at NCCL's measured bus bandwidth (input/link_efficiency.rs; NVLink
    // SHARP all-reduce at 480 GB/s): TTFT 15.1% → 14.9%, e2e 19.6% → 19.5%; TRT-LLM 0.9
    // throughput 19.1% → 18.4%, first token 17.0% → 17.2%, NIM 8.8% → 9.1%, OCI MI300X
    // 29.5% → 27.9%.
    const BY_QUANTITY: [(&str, f64); 5] = [
        ("ttft_ms", 0.149),
        ("tpot_ms", 0.085),
        ("output_tokens_per_s", 0.130),
        ("e2e_latency_ms", 0.195),
        (ALL_SERVING_GROUP, 0.149),
    ];
    const BY_SOURCE: [(&str, f64); 6] = [
        ("TRT-LLM 0.9 throughput", 0.184),
        ("TRT-LLM 0.9 first token", 0.172),
        ("TRT-LLM 1.0 perf-overview", 0.070),
        ("NIM 1.8.0 benchmarks", 0.091),
        ("vLLM CI latency", 0.195),
        ("OCI MI300X blog", 0.279),
    ];
    const SLACK: f64 = 0.02;
    let r = report();
    for (groups, today) in [
        (&r.by_quantity, &BY_QUANTITY[..]),
        (&r.by_source, &BY_SOURCE[..]),
    ] {
        for (name, median_today) in today {
            let g = groups
                .iter()
                .find(|g| g.group == *name)
                .unwrap_or_else(|| panic!("group {name}"));
            let median = g.stats.median.expect("compared rows");
            assert!(
                median <= median_today + SLACK,
                "{name}: median |error| {median:.3} is worse than today's {median_today}"
            );
        }
    }
    // Rows compared today stay compared (a new refusal would hide a miss).
    let compared: usize = r.by_quantity.last().map_or(0, |g| g.stats.compared);
    assert!(compared >= 62, "{compared} measurements compared, 62 today");
}

/// Another serving dataset spells its models its own way: the table's names in other spellings,
/// then every model preset, are found; an unknown model is still refused by name.
#[test]
fn serving_rows_name_their_models_in_any_spelling() {
    assert_eq!(
        serving_model_key("meta-llama/Llama-3.3-70B-Instruct"),
        Some("llama-3.1-70b")
    );
    assert_eq!(serving_model_key("LLaMA 70B"), Some("llama-2-70b"));
    assert_eq!(serving_model_key("Mixtral-8x22B"), Some("mixtral-8x22b"));
    assert_eq!(serving_model_key("gpt-oss-120b"), Some("gpt-oss-120b"));
    assert_eq!(serving_model_key("Falcon 180B"), None);
}
