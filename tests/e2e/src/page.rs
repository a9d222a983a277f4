//! The page's selectors, named once: every end-to-end test finds an element of the
//! page through a constant or function here, so a renamed `data-testid` in the app
//! is one edit here. Constants are whole CSS selectors; functions build the ones
//! the tests pick by a value (a control, a ZeRO stage, a collective, a tab).

// accuracy-…
pub const ACCURACY_SUMMARY: &str = "[data-testid=accuracy-summary]";
pub const ACCURACY_DONE: &str = "[data-testid=accuracy-done]";
pub const ACCURACY_NEAREST: &str = "[data-testid=accuracy-nearest]";
/// The accuracy section's first-seen table: rows by their error when first seen and today.
pub const ACCURACY_FIRST_SEEN: &str = "[data-testid=accuracy-first-seen]";
pub const ACCURACY_OPEN: &str = "[data-testid=accuracy-open]";
pub const ACCURACY_VIEW: &str = "[data-testid=accuracy-view]";

// bench-…
pub const BENCH_COLLECTIVES: &str = "[data-testid=bench-collectives]";
pub const BENCH_FILE: &str = "[data-testid=bench-file]";
pub const BENCH_GEMMS: &str = "[data-testid=bench-gemms]";
pub const BENCH_LAYER_STEPS: &str = "[data-testid=bench-layer-steps]";
pub const BENCH_MESSAGE: &str = "[data-testid=bench-message]";

// breakdown-…
pub const BREAKDOWN_VIEW: &str = "[data-testid=breakdown-view]";

// bubble-…
pub const BUBBLE_IDLE: &str = "[data-testid=bubble-idle]";
pub const BUBBLE_OVERHEAD: &str = "[data-testid=bubble-overhead]";

// cal-…
pub const CAL_BADGE: &str = "[data-testid=cal-badge]";
pub const CAL_CLEAR: &str = "[data-testid=cal-clear]";
pub const CAL_ENABLED: &str = "[data-testid=cal-enabled]";
pub const CAL_LINKS: &str = "[data-testid=cal-links]";

// chart-…
pub const CHART_BUSBW: &str = "[data-testid=chart-busbw]";
pub const CHART_ZERO: &str = "[data-testid=chart-zero]";

// coll-…
pub const COLL_ALL_REDUCE: &str = "[data-testid=coll-all_reduce]";
pub const COLL_ALL_REDUCE_USE_0: &str = "[data-testid=coll-all_reduce-use-0]";

// copy-…
pub const COPY_LINK: &str = "[data-testid=copy-link]";

// cp-…
pub const CP_RANKS: &str = "[data-testid=cp-ranks]";

// deferred-…
pub const DEFERRED_VIEWS: &str = "[data-testid=deferred-views]";

// deploy-…
pub const DEPLOY_ROW_0: &str = "[data-testid=deploy-row-0]";

// ep-…
pub const EP_CAPACITY: &str = "[data-testid=ep-capacity]";
pub const EP_DROPPED: &str = "[data-testid=ep-dropped]";
pub const EP_EXPERTS: &str = "[data-testid=ep-experts]";

// example-…
pub const EXAMPLE_ARTICLE_70B: &str = "[data-testid=example-article-70b]";
pub const EXAMPLE_DEFAULT: &str = "[data-testid=example-default]";
pub const EXAMPLE_ARTICLE_MESH: &str = "[data-testid=example-article-mesh]";
pub const EXAMPLE_FINETUNE: &str = "[data-testid=example-finetune]";

// export-…
pub const EXPORT_COPY_DEEPSPEED: &str = "[data-testid=export-copy-deepspeed]";
pub const EXPORT_STATUS_DEEPSPEED: &str = "[data-testid=export-status-deepspeed]";

// exports-…
pub const EXPORTS_VIEW: &str = "[data-testid=exports-view]";

// forward-…
pub const FORWARD_IDLE_SHARES: &str = "[data-testid=forward-idle-shares]";
pub const FORWARD_ONLY: &str = "[data-testid=forward-only]";

// grid-…
pub const GRID_NOTE: &str = "[data-testid=grid-note]";

// hf-…
pub const HF_APPLY: &str = "[data-testid=hf-apply]";
pub const HF_CONFIG_TEXT: &str = "[data-testid=hf-config-text]";
pub const HF_FILE: &str = "[data-testid=hf-file]";
pub const HF_MESSAGE: &str = "[data-testid=hf-message]";

// hub-…
pub const HUB_ENDPOINT: &str = "[data-testid=hub-endpoint]";
pub const HUB_FETCH: &str = "[data-testid=hub-fetch]";
pub const HUB_ID: &str = "[data-testid=hub-id]";
pub const HUB_IMPORT: &str = "[data-testid=hub-import]";
pub const HUB_MESSAGE: &str = "[data-testid=hub-message]";

// include-…
pub const INCLUDE_OTHER: &str = "[data-testid=include-other]";

// input-…
pub const INPUT_DP: &str = "[data-testid=input-dp]";
pub const INPUT_DATASET_TOKENS: &str = "[data-testid=input-dataset-tokens]";
pub const INPUT_FRAMEWORK: &str = "[data-testid=input-framework]";
pub const INPUT_FT: &str = "[data-testid=input-ft]";
pub const INPUT_GBS: &str = "[data-testid=input-gbs]";
pub const INPUT_GPU: &str = "[data-testid=input-gpu]";
pub const INPUT_KERNELS: &str = "[data-testid=input-kernels]";
pub const INPUT_LAYERS: &str = "[data-testid=input-layers]";
pub const INPUT_LORA_MOD: &str = "[data-testid=input-lora_mod]";
pub const INPUT_LORA_R: &str = "[data-testid=input-lora_r]";
pub const INPUT_MODEL: &str = "[data-testid=input-model]";
pub const INPUT_MOE_CF: &str = "[data-testid=input-moe_cf]";
pub const INPUT_OV_EP: &str = "[data-testid=input-ov_ep]";
pub const INPUT_OV_GRAD: &str = "[data-testid=input-ov_grad]";
pub const INPUT_OV_PARAM: &str = "[data-testid=input-ov_param]";
pub const INPUT_OV_TP: &str = "[data-testid=input-ov_tp]";
pub const INPUT_PACK: &str = "[data-testid=input-pack]";
pub const INPUT_PP: &str = "[data-testid=input-pp]";
pub const INPUT_SCHED: &str = "[data-testid=input-sched]";
pub const INPUT_SEQ: &str = "[data-testid=input-seq]";
pub const INPUT_SERVE_CONC: &str = "[data-testid=input-serve_conc]";
pub const INPUT_SP: &str = "[data-testid=input-sp]";
pub const INPUT_SPLIT: &str = "[data-testid=input-split]";
pub const INPUT_TP: &str = "[data-testid=input-tp]";
pub const INPUT_VPP: &str = "[data-testid=input-vpp]";
pub const INPUT_ZERO: &str = "[data-testid=input-zero]";

// issue-…
pub const ISSUE_DP: &str = "[data-testid=issue-dp]";
pub const ISSUE_PP: &str = "[data-testid=issue-pp]";

// epoch-…, finetune-…, fit-…, will-it-fit
pub const EPOCH_TIME: &str = "[data-testid=epoch-time]";
pub const FINETUNE_SETUP: &str = "[data-testid=finetune-setup]";
pub const FINETUNE_VIEW: &str = "[data-testid=finetune-view]";
pub const FIT_APPLY_0: &str = "[data-testid=fit-apply-0]";
pub const FIT_CURRENT: &str = "[data-testid=fit-current]";
pub const FIT_FIX: &str = "[data-testid=fit-fix]";
pub const FIT_FIXES: &str = "[data-testid=fit-fixes]";
pub const FIT_MAX_MBS: &str = "[data-testid=fit-max-mbs]";
pub const FIT_MAX_SEQ: &str = "[data-testid=fit-max-seq]";
pub const WILL_IT_FIT: &str = "[data-testid=will-it-fit]";

// kv-…
pub const KV_PER_TOKEN: &str = "[data-testid=kv-per-token]";

// learn-…
pub const LEARN_TAB_CP: &str = "[data-testid=learn-tab-cp]";
pub const LEARN_TAB_EP: &str = "[data-testid=learn-tab-ep]";
pub const LEARN_TAB_MLP: &str = "[data-testid=learn-tab-mlp]";
pub const LEARN_VIEW: &str = "[data-testid=learn-view]";

// link-…
pub const LINK_NOTICE: &str = "[data-testid=link-notice]";

// measured-…
pub const MEASURED_VIEW: &str = "[data-testid=measured-view]";

// memory-…
pub const MEMORY_FRAMEWORK: &str = "[data-testid=memory-framework]";
pub const MEMORY_PEAKS: &str = "[data-testid=memory-peaks]";
pub const MEMORY_VIEW: &str = "[data-testid=memory-view]";

// mesh-…
pub const MESH_FILTER_CLEAR: &str = "[data-testid=mesh-filter-clear]";
pub const MESH_FILTER_TP: &str = "[data-testid=mesh-filter-tp]";
pub const MESH_MORE: &str = "[data-testid=mesh-more]";
pub const MESH_REJECTED_ROW: &str = "[data-testid=mesh-rejected-row]";
pub const MESH_ROW: &str = "[data-testid=mesh-row]";
pub const MESH_SORT_MFU: &str = "[data-testid=mesh-sort-mfu]";
pub const MESH_STATUS: &str = "[data-testid=mesh-status]";
pub const MESH_TAB_FEASIBLE: &str = "[data-testid=mesh-tab-feasible]";
pub const MESH_TAB_REJECTED: &str = "[data-testid=mesh-tab-rejected]";
pub const MESH_TABLE: &str = "[data-testid=mesh-table]";
pub const MESH_TIMING: &str = "[data-testid=mesh-timing]";
pub const MESH_VIEW: &str = "[data-testid=mesh-view]";

// mlp-…
pub const MLP_TP: &str = "[data-testid=mlp-tp]";

// model-…
pub const MODEL_IMPORT: &str = "[data-testid=model-import]";

// peak-…
pub const PEAK_ALLOCATED: &str = "[data-testid=peak-allocated]";
pub const PEAK_DEVICE: &str = "[data-testid=peak-device]";
pub const PEAK_RESERVED: &str = "[data-testid=peak-reserved]";
pub const PEAK_TOTAL_1: &str = "[data-testid=peak-total-1]";
pub const PEAK_TOTAL_2: &str = "[data-testid=peak-total-2]";

// pipeline-…
pub const PIPELINE_PMV: &str = "[data-testid=pipeline-pmv]";
pub const PIPELINE_SPLIT: &str = "[data-testid=pipeline-split]";
pub const PIPELINE_SPLIT_PACE: &str = "[data-testid=pipeline-split-pace]";
pub const PIPELINE_VIEW: &str = "[data-testid=pipeline-view]";

// serve-…
pub const SERVE_COMPUTING: &str = "[data-testid=serve-computing]";
pub const SERVE_TPOT: &str = "[data-testid=serve-tpot]";

// serving-…
pub const SERVING_VIEW: &str = "[data-testid=serving-view]";

// share-…
pub const SHARE_LINK: &str = "[data-testid=share-link]";

// state-…
pub const STATE_TOTAL_0: &str = "[data-testid=state-total-0]";
pub const STATE_TOTAL_3: &str = "[data-testid=state-total-3]";

// step-…
pub const STEP_TIME: &str = "[data-testid=step-time]";
pub const STEP_TOTAL: &str = "[data-testid=step-total]";

// term-…
pub const TERM_TABLE: &str = "[data-testid=term-table]";

// topo-…
pub const TOOLTIP: &str = "[data-testid=tooltip]";
pub const TOPO_BY_PP: &str = "[data-testid=topo-by-pp]";

// topology-…
pub const TOPOLOGY_CAPTION: &str = "[data-testid=topology-caption]";
pub const TOPOLOGY_HOVER: &str = "[data-testid=topology-hover]";
pub const TOPOLOGY_VIEW: &str = "[data-testid=topology-view]";
pub const TOPOLOGY_WARNING: &str = "[data-testid=topology-warning]";

// value-…
pub const VALUE_DP: &str = "[data-testid=value-dp]";
pub const VALUE_SERVE_TP: &str = "[data-testid=value-serve_tp]";
pub const VALUE_TP: &str = "[data-testid=value-tp]";

// volume-…
pub const VOLUME_NETWORK: &str = "[data-testid=volume-network]";
pub const VOLUME_NVLINK: &str = "[data-testid=volume-nvlink]";

/// The `data-testid` selector of `id` (the one place the attribute is spelled).
pub fn testid(id: &str) -> String {
    format!("[data-testid={id}]")
}

/// A ZeRO stage's model-state cell of the memory table (`n` = 0 DDP … 3 ZeRO-3).
pub fn state_total(n: impl std::fmt::Display) -> String {
    testid(&format!("state-total-{n}"))
}

/// The shown value of control `name` (a link parameter: `dp`, `tp`, …).
pub fn value(name: &str) -> String {
    testid(&format!("value-{name}"))
}

/// Every segment of the step-time bar.
pub const STEP_SEGMENTS: &str = "[data-testid^=step-seg-]";

/// The mesh search's filter for `name` (`tp`, `pp`, …).
pub fn mesh_filter(name: &str) -> String {
    testid(&format!("mesh-filter-{name}"))
}

/// The "not used by this layout" note of collective `id` in the learn view.
pub fn collective_none(id: &str) -> String {
    testid(&format!("coll-{id}-none"))
}

/// The `i`-th use of collective `id` in the learn view.
pub fn collective_use(id: &str, i: impl std::fmt::Display) -> String {
    testid(&format!("coll-{id}-use-{i}"))
}

/// A chart's PNG download link (`id` is the chart's testid).
pub fn download(id: &str) -> String {
    testid(&format!("download-{id}"))
}

/// A tab of the learn view (`ddp`, `fsdp`, `tp`, `cp`, `pp`, `ep`, `mlp`).
pub fn learn_tab(tab: &str) -> String {
    testid(&format!("learn-tab-{tab}"))
}

/// Every use of collective `id` in the learn view.
pub fn collective_uses(id: &str) -> String {
    format!("[data-testid^=coll-{id}-use-]")
}

/// The text of export `id` (`torchrun`, `deepspeed`, …).
pub fn export_text(id: &str) -> String {
    testid(&format!("export-text-{id}"))
}

/// The notes list of export `id`.
pub fn export_notes(id: &str) -> String {
    testid(&format!("export-notes-{id}"))
}

/// The download link of export `id`.
pub fn export_download(id: &str) -> String {
    testid(&format!("export-download-{id}"))
}

// bill-… (the run's bill, app/src/views/bill.rs)
pub const BILL_VIEW: &str = "[data-testid=bill-view]";
pub const BILL_TERM_ROWS: &str = "[data-testid^=bill-term-]";
pub const BILL_DEFAULT_BADGES: &str = "[data-testid^=bill-default-]";
pub const BILL_RANK_ROWS: &str = "[data-testid^=bill-rank-]";
pub const BILL_INVERSE: &str = "[data-testid=bill-inverse]";
pub const DEADLINE_SIZES: &str = "[data-testid=deadline-size]";
pub const DEADLINE_ANSWER: &str = "[data-testid=deadline-answer]";
pub const FLEET_OPTIONS: &str = "[data-testid=fleet-option]";

/// The bill section's search panel of `job` (`rankings`, `deadline`, `fleet`).
pub fn bill_panel(job: &str) -> String {
    format!("[data-testid=bill-{job}]")
}

/// Its button.
pub fn bill_run(job: &str) -> String {
    format!("[data-testid=bill-run-{job}]")
}

/// Its status line (`data-running` 1 while it searches).
pub fn bill_status(job: &str) -> String {
    format!("[data-testid=bill-status-{job}]")
}

/// Its answer's markup.
pub fn bill_result(job: &str) -> String {
    format!("[data-testid=bill-result-{job}]")
}

/// Why it has no answer.
pub fn bill_failed(job: &str) -> String {
    format!("[data-testid=bill-failed-{job}]")
}

/// The bill's control of link key `key`.
pub fn bill_input(key: &str) -> String {
    format!("[data-testid=input-{key}]")
}

/// Why the value typed into `key`'s control was refused.
pub fn bill_error(key: &str) -> String {
    format!("[data-testid=bill-error-{key}]")
}
