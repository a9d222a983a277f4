//! A ratchet on `meshplan validate`'s summary: fails when the model's accuracy on the
//! published runs falls back past what it reaches today, so a later change cannot quietly
//! undo it. Raise the recorded values (never lower them) when the model improves.
//!
//! The issue's targets (issue 12) are: median |error| ≤ 10%, p90 ≤ 25%, no row beyond 50%
//! on tokens/s and iteration time, and the published mesh in the search's top 10 for at
//! least 75% of the rows. Measured on 2026-12-01 after the memory-bound ops and MoE routing
//! copies (time/elementwise.rs), `meshplan validate --no-search`: tokens/s + iteration time
//! median 11.5% (target not met), p90 40.3% (not met), max 55.2% (not met: torchtitan rows);
//! all quantities median 9.6% (met), p90 42.2% (not met), max 325.9% (not met: the ZeRO-3
//! rows, validation/analysis/zero3-rows.md); top 10: 49 of 120 rows (40.8%, not met).

use planner_core::edges::validation::{
    run_validation, ErrorStats, ValidationOptions, ALL_GROUP, TIME_GROUP,
};

const DATASET: &str = include_str!("../../../validation/public-runs.json");

/// Rounding slack on each recorded figure: 0.2 percentage points.
const SLACK: f64 = 0.002;

/// (median, p90, max, share within 25%), as measured.
/// Lowered on 2026-12-01 (session 5) from (0.1153, 0.4035, 0.5521, 0.7179) and
/// (0.0959, 0.4218, 3.2589, 0.7833): each Megatron-family row now runs with the overlap its
/// published recipe sets (edges/validation.rs `recipe_overlap`: NeMo-Framework-Launcher 24.07
/// `ub_tp_comm_overlap`, Megatron-Bridge 25.09 `CommOverlapConfig`, the Megatron-LM README's
/// `--tp-comm-overlap`), and the TP overlap those recipes switch on makes the already
/// optimistic NeMo 24.07 and Megatron-Bridge rows faster still (median 11.5% → 17.3%).
/// Raised on 2026-12-01 from (0.1731, 0.4035, 0.5521, 0.6923) by the cited compute slowdown
/// beside overlapped communication (CostOptions::overlap_slowdown 0.1 assumed → 0.189, Lee
/// et al. 2025, each hidden second costing σ/(1 + σ)).
/// Tightened on 2026-12-02 (session 6) from (0.1666, 0.3956, 0.5512, 0.6923): FP8 GEMMs now
/// reach the lower share of their peak that ml-engineering's MAMF table measures for FP8
/// (input/gemm_efficiency.rs `fp8_relative_gemm_efficiency`, H100 SXM 70.9% against 80.3%).
/// Median lowered on 2026-12-02 (session 6, helper "tail") from 0.0902 to 0.1003 and max from
/// 0.5444 to 0.5463, share within 25% raised from 0.7692 to 0.8205: an equal-layer pipeline's
/// last stage now carries the LM head and loss on top of its layers (stage_split.rs `pace`:
/// Megatron-Core builds the output layer only where `post_process` is set), which moves
/// nemo2407-nemotron-22b (256k vocabulary, ≈ 4 layers of head on 10-layer stages) from +36.4%
/// to +3.5% but turns several Megatron rows from a few percent optimistic to a few percent
/// pessimistic (the median); and full recompute no longer repeats the LM head
/// (cost.rs `head_on_stage`: Megatron-Core checkpoints the TransformerBlock, torchtitan's
/// full AC each TransformerBlock), which makes the full-AC torchtitan T2 rows slightly more
/// optimistic (cp8 +54.4% → +54.6%).
/// Median lowered on 2026-12-02 (session 7, helper "train8") from 0.1003 to 0.1050: Megatron-Core
/// rows now pay NCCL latency per bucket of Megatron's own size (input/framework.rs
/// `dp_bucket_params`: `max(40000000, 1000000 · dp·cp)` parameters, megatron/training/training.py
/// `get_model`) instead of PyTorch DDP's 25 MB, ~8× fewer buckets: megatron24-32b −39.3% → −19.8%,
/// -70b −17.5% → −2.7%, -16b −21.6% → −0.5%, but the already optimistic small-model rows lose the
/// latency that hid their gap (megatron24-7b −0.4% → +20.4%, nemo2407-gpt3-5b +14.5% → +20.5%).
/// Median lowered again the same day (session 7, merge of helpers "train8" and "serve9") from
/// 0.1050 to 0.1110 by the A100 80 GB's measured BabelStream Copy share (input/hbm_achievable.rs,
/// 1.61 of 2.039 TB/s in place of 0.9): the A100 rows' memory-bound ops take longer, e.g.
/// korthikanti22-t5-1t-full +10.5% → +11.2%, which with megatron's buckets (nemo2407-gpt3-20b
/// −4.3% → +11.5%) moves the 20th of 39 rows from 10.5% to 11.1%.
/// Tightened on 2026-12-02 (session 7, helper "train9") from (0.1050, …, 0.5463, …) to
/// (0.0996, …, 0.5443, …): on Hopper each FP8 GEMM input is also written as its transposed FP8
/// copy (input/gemm_efficiency.rs `fp8_transpose_bytes_per_element`: TN-only FP8 GEMMs, TE
/// `fp8_cast_transpose_fused`), 3 → 4 B per cast element (nemo2407-gpt3-5b +20.5% → +18.6%,
/// nemo2407-llama3-8b +11.1% → +10.0%, nemo2407-llama3-70b +10.1% → +9.4%).
/// Both together at the merge (A100 share and Hopper's FP8 transpose): (0.0996, …, 0.5443, …).
/// Tightened on 2026-12-02 (session 8, helper "train10") from (0.0996, 0.3712, 0.5443, 0.8205)
/// by the 500 W power limit of torchtitan's 96 GB HBM2e H100 (input/power_limit.rs: tensor
/// work at the vendor's rating for that board power, linear between the H100 NVL's 400 W and
/// the SXM's 700 W ratings, 0.896; torchtitan docs/performance.md: "between SXM and NVL"):
/// torchtitan-t1-8b-eager +37.0% → +25.8%, t2-cp8 +54.4% → +38.7%, t3-128gpu +39.8% → +28.5%.
/// Tightened on 2026-12-02 (session 8, helper "train11") from (0.0942, 0.2554, 0.3867, 0.8718)
/// by the measured bus bandwidth of each link in place of its line rate
/// (input/link_efficiency.rs: NVLink 4 at NCCL's `SM90_NVLINK_BW` 20.6 of 25 GB/s per link,
/// NVLS all-reduce at 480 of 450 GB/s, A100's NVLink at 230 of 300, 400 Gb/s NICs at 47 of
/// 50 GB/s, 200 Gb/s at 24 of 25): the optimistic MoE rows lose most
/// (mbridge2509-qwen3-235b-tokendrop-h100-tps +25.5% → +21.1%, qwen3-30b +17.9% → +13.5%,
/// dsv3 +14.6% → +11.0%), the p90 target (≤ 25%) is met.
/// Tightened on 2026-12-03 (session 13) from (0.0813, 0.2462, 0.3863, 0.8974): torchtitan's
/// "selective" is its per-op policy, and the time model now recomputes what the memory model
/// already said it does not save (input/sac_policy.rs: wk, wo and w3 of each dense layer and
/// every element-wise op, the SDPA not): torchtitan-t1-8b-eager +25.6% → +18.8%, compile
/// +24.4% → +22.9%, t3-128gpu +28.2% → +21.2%, float8 +19.9% → +20.4% (its FP8 matmuls
/// recomputed cost less than the BF16 attention core priced before).
/// Tightened on 2026-12-04 (session 15) by fused attention's fall-off at short sequences
/// (input/attention_length.rs, FlashAttention-3's Figure 5: a causal call over 4K tokens reaches
/// 0.95 of its 16K rate, over a 1K CP chunk 0.78): flash-attention rows at 2K–8K lose a little
/// speed, which the optimistic ones needed (megatron24-1p7b MFU +26.7% → +25.3%).
/// From (0.0813, 0.2113, 0.3863, 0.9487).
const TIME_TODAY: (f64, f64, f64, f64) = (0.0784, 0.2059, 0.3863, 0.9487);
/// All quantities lowered again from (0.1155, …, 0.7833) by the EP overlap the
/// Megatron-Bridge DeepSeek-V3 row's script switches on (run_script.py
/// `overlap_moe_expert_parallel_comm = True`): its TFLOP/s row moves from −11% to +36%.
/// Raised again from (0.1187, 0.4130, 3.2589, 0.7750) by the same cited overlap slowdown.
/// Lowered on 2026-12-02 (session 6) from (0.1172, 0.4030, 3.0581, 0.7750) by the full
/// recompute the six Narayanan 2021 ZeRO-3 rows now take (edges/validation.rs: the Megatron +
/// ZeRO-3 recipe of DeepSpeedExamples passes `--checkpoint-activations`): their hardware FLOPs
/// grow by the recomputed forward while the priced communication stays, so gpt3-zero3-1536
/// moves from +305.8% to +318.6%.
/// Tightened the same day from (0.1172, 0.4037, 3.1858, 0.7750) by the FP8 GEMM share.
/// Tightened on 2026-12-02 (session 6, helper "tail") from (0.0830, …, 0.8250) by the LM head
/// on the last pipeline stage; max lowered from 3.1858 to 3.1889 by full recompute no longer
/// repeating the LM head (the ZeRO-3 rows run full recompute: gpt3-zero3-1536 +318.6% →
/// +318.9%).
/// Tightened on 2026-12-02 (session 7, helper "train8") from (0.0644, 0.3871, …) by Megatron's
/// gradient buckets (input/framework.rs `dp_bucket_params`).
/// Tightened on 2026-12-02 (session 7, helper "serve9") from (0.0644, 0.3871, 3.1889, 0.8500)
/// by the A100 80 GB's measured BabelStream Copy share in place of the 0.9 default
/// (input/hbm_achievable.rs, Azure AI-benchmarking-guide ND A100 v4 results: 1.61 of
/// 2.039 TB/s): the A100 rows' memory-bound ops take longer.
/// Median lowered on 2026-12-02 (session 7, helper "train9") from 0.0643 to 0.0664 by the same
/// transposed FP8 copy on Hopper (`fp8_transpose_bytes_per_element`): it slows every FP8 H100
/// row, and the already pessimistic FP8 rows near the median move further off
/// (mbridge2509-llama3-8b-h100-tps −6.5% → −7.4%, nemo2407-sft-llama2-70b-tps −4.9% → −5.6%).
/// Both together at the merge (A100 share and Hopper's FP8 transpose): (0.0641, 0.3708, 3.1600, 0.8500).
/// Tightened on 2026-12-02 (session 8, helper "train10") from (0.0641, 0.3708, 3.1600, 0.8500)
/// by the same power limit (input/power_limit.rs).
/// Median lowered the same day (helper "train10") from 0.0611 to 0.0657, p90 tightened from
/// 0.2712 to 0.2584 and the share within 25% from 0.8667 to 0.8833: the six Megatron-Bridge
/// 25.09 TFLOP/s rows now count FLOPs as their source does, the attention core on its causal
/// half (edges/validation.rs `counts_causal_attention`: Megatron-Bridge flop_utils.py,
/// Megatron-LM !2789), so each TFLOP/s row's error is its tokens/s row's: qwen3-30b +43.3% →
/// +18.5%, qwen3-235b +41.9% → +25.9%, dsv3 +28.4% → +14.6%, but llama3-8b +4.1% → −7.5% and
/// llama3-70b +0.1% → −6.6% (their agreement was the FLOP count's, not the step time's).
/// Median lowered on 2026-12-02 (session 8, helper "train11") from 0.0657 to 0.0700; p90
/// tightened from 0.2584 to 0.2449, max from 3.1600 to 3.0985 and the share within 25% from
/// 0.8833 to 0.9000: each link now runs at its measured bus bandwidth, not its line rate
/// (input/link_efficiency.rs, cited there). The optimistic rows come closer (the ZeRO-3
/// gpt3-zero3-1536 +316.0% → +309.8%, the Megatron-Bridge MoE rows 4 points each), but the
/// already pessimistic rows near the median move further off (mbridge2509-llama3-70b-h100
/// −6.6% → −7.6%, megatron-examples-llama3-70b −6.7% → −7.7%, nemo-longseq-llama2-7b-64k
/// −6.6% → −7.7%).
/// Tightened on 2026-12-02 (session 11) from (0.0700, 0.2449, 3.0985, 0.9000) to
/// (0.0701, 0.2363, 3.0985, 0.9040): the five Korthikanti 2022 Table 4 per-layer rows are
/// compared, by one decoder layer's marginal time in the step (time/layer_time.rs), at
/// +4.6% to +10.6%; 125 of 125 rows compared.
/// Tightened on 2026-12-03 (session 13) from (0.0701, 0.2363, 3.0985, 0.9040) by torchtitan's
/// per-op selective recompute (input/sac_policy.rs), as above.
/// Tightened on 2026-12-04 (session 15) by fused attention's fall-off at short sequences
/// (input/attention_length.rs, FlashAttention-3's Figure 5: a causal call over 4K tokens reaches
/// 0.95 of its 16K rate, over a 1K CP chunk 0.78): flash-attention rows at 2K–8K lose a little
/// speed, as above.
/// From (0.0701, 0.2164, 3.0985, 0.9200).
/// Tightened on 2026-12-05 (session 20) from (0.0655, 0.2160, 3.0985, 0.9280): the six
/// Narayanan 2021 ZeRO-3 rows run DeepSpeed of 2021 (input/framework.rs `DeepSpeed2021`,
/// time/deepspeed_zero3.rs): each parameter's gather and each gradient's reduce-scatter at the
/// per-GPU rate of DeepSpeed's own ZeRO-3 forward on one NVLink node (deepspeedai/DeepSpeed#1174),
/// and DeepSpeed's gather for the recomputed forward with its reuse rule: gpt3-zero3-1536
/// +309.8% → −5.7%, 530b-zero3-2240 +291.7% → −14.4%, 530b-zero3-1120 +109.2% → −18.6%.
const ALL_TODAY: (f64, f64, f64, f64) = (0.0602, 0.1818, 0.3863, 0.9760);
/// Rows with the published mesh in the search's top 10, as measured (49 before the recipes'
/// overlap, 55 after: `meshplan validate`, 2026-12-01). Lowered to 51 by the cited compute
/// slowdown beside overlapped communication (CostOptions::overlap_slowdown 0.1 assumed →
/// 0.189, Lee et al. 2025): it charges the hidden collectives of the published meshes more,
/// and megatron24-16b (tflops, mfu: #1 → #20) and torchtitan-t3-8b-128gpu (tps, mem:
/// #1 → #14) leave the top 10.
/// 53 after the FP8 GEMM share (input/gemm_efficiency.rs); 63 once the search proposed only
/// the schedules each row's framework runs (input/framework.rs `runs_schedule`).
/// 66 once an equal-layer pipeline's last stage carries the LM head (stage_split.rs `pace`).
/// 68 once Megatron-Core rows pay latency per Megatron-sized gradient bucket
/// (input/framework.rs `dp_bucket_params`). Lowered to 65 when each row's search checks fits
/// against the capacity the device reports instead of 90% of it (edges/validation.rs,
/// `usable_fraction: 1.0`): more micro-batch and recompute settings of the faster meshes fit,
/// so more candidates (not more meshes) stand ahead of the published one.
/// 74 once the Narayanan 2021 / Korthikanti 2022 rows' searches propose DDP only, as their
/// Megatron-LM ran (edges/validation.rs `search_rank`).
/// 80 (session 15) once short CP chunks and short sequences run attention at fused attention's
/// measured lower rate (input/attention_length.rs).
const TOP_10_TODAY: usize = 80;
/// The same count with each faster mesh counted once (`SearchRank::mesh_rank`): 82, 83 after
/// Megatron's gradient buckets, 92 once fits are checked against the device's capacity (the
/// published layouts of nemo2407-sft-llama2-70b, nemo2407-gpt3-20b and the Llama 3.1 405B rows
/// at PP 8 × VPP 8 peak at 72–79 GiB in the model, above 90% of an H100's 79.6 GiB, and ran);
/// 99 once the Narayanan 2021 / Korthikanti 2022 rows' searches propose DDP only.
/// Lowered to 97 (session 8, helper "train11") by the measured bus bandwidth of each link
/// (input/link_efficiency.rs): megatron24-32b's published mesh (tflops and mfu rows) moves
/// from mesh #10 to #11 as meshes with less NVLink traffic gain on it.
/// Since session 12 this is the published mesh's place in the search's own list, which holds
/// each mesh once at its best knobs (`SearchSpace::one_row_per_mesh`), as the page and
/// `meshplan search` show it.
/// Lowered to 95 (session 13) by torchtitan's per-op selective recompute (input/sac_policy.rs):
/// it no longer repeats the SDPA, the largest forward cost at 32K–64K tokens, so selective
/// meshes of the torchtitan T2 rows gain on the published full-recompute ones
/// (torchtitan-t2-8b-cp2, tps and mem rows: mesh #9 → #11).
/// Raised to 97 (session 15) with fused attention's fall-off at short sequences and short CP
/// chunks (input/attention_length.rs).
const MESH_TOP_10_TODAY: usize = 97;
/// Issue 12's target: the published mesh in the search's top 10 for at least 75% of the rows
/// with a full layout.
const TOP_10_TARGET_SHARE: f64 = 0.75;

fn check(group: &str, s: &ErrorStats, today: (f64, f64, f64, f64)) {
    let (median, p90, max, within_25) = today;
    let got = |v: Option<f64>, name: &str| v.unwrap_or_else(|| panic!("{group}: no {name}"));
    let m = got(s.median, "median");
    let p = got(s.p90, "p90");
    let x = got(s.max, "max");
    let w = got(s.within_25, "within_25");
    assert!(m <= median + SLACK, "{group}: median {m:.4} > {median}");
    assert!(p <= p90 + SLACK, "{group}: p90 {p:.4} > {p90}");
    assert!(x <= max + SLACK, "{group}: max {x:.4} > {max}");
    assert!(
        w >= within_25 - SLACK,
        "{group}: within 25% {w:.4} < {within_25}"
    );
}

#[test]
fn the_summary_does_not_fall_back() {
    let r = run_validation(DATASET, ValidationOptions { search: false }).expect("dataset parses");
    let group = |name: &str| {
        r.by_quantity
            .iter()
            .find(|g| g.group == name)
            .unwrap_or_else(|| panic!("group {name}"))
    };
    check(TIME_GROUP, &group(TIME_GROUP).stats, TIME_TODAY);
    check(ALL_GROUP, &group(ALL_GROUP).stats, ALL_TODAY);
    assert_eq!(group(ALL_GROUP).stats.compared, 125);
    // Korthikanti et al. 2022 Table 4, one layer's forward + backward: today +4.6% to +10.6%.
    check(
        "per_layer_fwd_bwd_ms",
        &group("per_layer_fwd_bwd_ms").stats,
        (0.0888, 0.1010, 0.1059, 1.0),
    );
}

/// Issue 12's targets on each quantity it names: median |error| ≤ 10%, p90 ≤ 25%, no row
/// beyond 50%, for tokens/s and iteration time together, and for MFU and TFLOP/s under the
/// conventions `meshplan validate` states.
#[test]
fn the_issue_targets_hold_on_every_quantity() {
    let r = run_validation(DATASET, ValidationOptions { search: false }).expect("dataset parses");
    for name in [TIME_GROUP, "mfu", "tflops_per_gpu_reported"] {
        let g = r
            .by_quantity
            .iter()
            .find(|g| g.group == name)
            .unwrap_or_else(|| panic!("group {name}"));
        let s = &g.stats;
        assert_eq!(s.not_representable, 0, "{name}");
        let (m, p, x) = (s.median, s.p90, s.max);
        assert!(m.is_some_and(|m| m <= 0.10), "{name}: median {m:?}");
        assert!(p.is_some_and(|p| p <= 0.25), "{name}: p90 {p:?}");
        assert!(x.is_some_and(|x| x <= 0.50), "{name}: max {x:?}");
    }
}

/// The search over every row with a full layout (71 distinct searches; `meshplan validate`
/// took 0.30 s in all in release on 2026-12-05): the published mesh's rank must stay in the
/// top 10 as often.
#[test]
fn the_search_ranks_do_not_fall_back() {
    let r = run_validation(DATASET, ValidationOptions { search: true }).expect("dataset parses");
    let s = r.search.expect("search summary");
    assert!(
        s.top_10 >= TOP_10_TODAY,
        "published mesh in the top 10 for {} rows, {TOP_10_TODAY} before",
        s.top_10
    );
    assert!(
        s.mesh_top_10 >= MESH_TOP_10_TODAY,
        "published mesh in the top 10 distinct meshes for {} rows, {MESH_TOP_10_TODAY} before",
        s.mesh_top_10
    );
    let share = s.mesh_top_10_share.expect("rows searched");
    assert!(
        share >= TOP_10_TARGET_SHARE,
        "published mesh in the search's top 10 for {:.1}% of rows, target {:.0}%",
        100.0 * share,
        100.0 * TOP_10_TARGET_SHARE
    );
}
