//! Scenario validation: absurd values and inconsistent sizes are errors; layout
//! divisibility rules are reported separately by [`layout_rule_violations`] so the
//! app can flag them at the control and the mesh search can reject with a reason.
//!
//! Field names are the share-link parameter names ([`crate::edges::link`]), so an error
//! points at the control (and link parameter) that holds the bad value; a scenario file's
//! reader renames them to JSON paths ([`crate::resolve::json_path`]).

use std::fmt;

use crate::base::bounds::{self, Bounds};
use crate::input::hardware::GpuSpec;
use crate::input::layout::Schedule;
use crate::input::model::ModelSpec;
use crate::input::scenario::{ModelChoice, Scenario, SCENARIO_VERSION};

pub use crate::base::bounds::{
    MAX_EXPERTS, MAX_GPUS, MAX_LAYERS, MAX_PARAMS, MAX_SEQ_LEN, MAX_VOCAB, MAX_WIDTH,
};

pub use crate::input::model::MAX_NAME_CHARS;

/// One invalid value, named by its link parameter.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldError {
    /// The link parameter name, e.g. "tp"; for an error in a scenario file, the JSON
    /// path, e.g. "layout.tp".
    pub field: String,
    /// What is wrong, for a person.
    pub message: String,
}

impl FieldError {
    /// An error on `field`.
    /// Both are made one printable line: a message may quote the bad value, and it
    /// is shown in a terminal and on the page.
    pub fn new(field: &str, message: impl Into<String>) -> Self {
        FieldError {
            field: crate::base::free_text::one_line(field),
            message: printable_message(message.into()),
        }
    }
}

/// `message` with its non-printable characters replaced (not cut: messages may be long).
fn printable_message(message: String) -> String {
    if message
        .chars()
        .any(crate::base::free_text::is_forbidden_char)
    {
        message
            .chars()
            .map(|c| {
                if crate::base::free_text::is_forbidden_char(c) {
                    '\u{FFFD}'
                } else {
                    c
                }
            })
            .collect()
    } else {
        message
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}

/// Range checks of a stage split (the model-dependent ones are the
/// `stage_split_fits_layers` rule's): counts within `MAX_LAYERS`, a list of at most
/// [`crate::input::stage_split::MAX_SPLIT_CHUNKS`] chunks.
fn check_split_ranges(e: &mut Errors, split: &crate::input::layout::StageSplit) {
    use crate::input::layout::StageSplit;
    let count = |e: &mut Errors, what: &str, n: u32| {
        if n > MAX_LAYERS {
            e.push("split", format!("{what} {n} is outside 0..={MAX_LAYERS}"));
        }
    };
    match split {
        StageSplit::Even | StageSplit::AccountEmbeddingLoss { .. } => {}
        StageSplit::FirstLast { first, last } => {
            count(e, "first stage layers", first.unwrap_or(0));
            count(e, "last stage layers", last.unwrap_or(0));
        }
        StageSplit::LessLayers { first, last } => {
            count(e, "first stage less layers", *first);
            count(e, "last stage less layers", *last);
        }
        StageSplit::Chunks(list) => {
            let max = crate::input::stage_split::MAX_SPLIT_CHUNKS;
            if list.is_empty() || list.len() > max {
                e.push(
                    "split",
                    format!("{} chunks is outside 1..={max}", list.len()),
                );
            }
            if let Some(&n) = list.iter().find(|&&n| n > MAX_LAYERS) {
                count(e, "chunk layers", n);
            }
        }
    }
}

/// Collects errors; allocates only when there is one.
struct Errors(Vec<FieldError>);

impl Errors {
    fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    fn range_u32(&mut self, field: &str, value: u32, min: u32, max: u32) {
        if value < min || value > max {
            self.push(field, format!("{value} is outside {min}..={max}"));
        }
    }

    fn within(&mut self, field: &str, value: f64, bounds: Bounds) {
        if let Err(m) = bounds.check(value) {
            self.push(field, m);
        }
    }

    fn fraction(&mut self, field: &str, value: f64) {
        if !(value > 0.0 && value <= 1.0) {
            self.push(field, format!("{value} must be in (0, 1]"));
        }
    }

    fn fraction_from_zero(&mut self, field: &str, value: f64) {
        if !(0.0..1.0).contains(&value) {
            self.push(field, format!("{value} must be in [0, 1)"));
        }
    }

    /// Free text: printable characters only, at most [`MAX_NAME_CHARS`].
    fn name(&mut self, field: &str, value: &str) {
        if let Some(problem) = crate::base::free_text::text_problem(value) {
            self.push(field, problem);
        }
    }
}

/// Range checks of the run's bill inputs, each named by its link key.
fn check_bill(e: &mut Errors, b: &crate::input::bill::RunBill) {
    if let Some(tokens) = b.tokens {
        e.within("bill_tok", tokens, bounds::BILL_TOKENS);
    }
    if let Some(steps) = b.steps {
        if steps == 0 || steps > bounds::BILL_STEPS_MAX {
            e.push(
                "bill_steps",
                format!("{steps} is outside 1..={}", bounds::BILL_STEPS_MAX),
            );
        }
        if b.tokens.is_some() {
            e.push("bill_steps", "give a token budget or steps, not both");
        }
    }
    e.within("bill_usd_h", b.usd_per_gpu_hour, bounds::USD_PER_GPU_HOUR);
    e.within("bill_capex", b.capex_usd_per_gpu, bounds::CAPEX_USD_PER_GPU);
    e.within(
        "bill_years",
        b.amortisation_years,
        bounds::AMORTISATION_YEARS,
    );
    e.within("bill_kwh", b.usd_per_kwh, bounds::USD_PER_KWH);
    e.within("bill_pue", b.pue, bounds::PUE);
    e.within("bill_node_w", b.node_overhead_w, bounds::NODE_OVERHEAD_W);
    if let Some(w) = b.board_power_w {
        e.within("bill_board_w", w, bounds::BOARD_POWER_W);
    }
    e.within(
        "bill_ckpt_gbs",
        b.checkpoint_write_gb_s_per_node,
        bounds::CHECKPOINT_GB_S,
    );
    e.within("bill_restart_s", b.restart_s, bounds::RESTART_S);
    e.within(
        "bill_fail",
        b.failures_per_gpu_hour,
        bounds::FAILURES_PER_GPU_HOUR,
    );
}

/// Range checks of the inverse questions' inputs, each named by its link key.
fn check_goals(e: &mut Errors, g: &crate::input::bill::Goals, gpus_per_node: u32) {
    e.within("bill_days", g.deadline_days, bounds::DEADLINE_DAYS);
    if let Some(b) = g.budget_usd {
        e.within("bill_budget", b, bounds::BUDGET_USD);
    }
    if g.node_counts.len() > bounds::DEADLINE_NODE_COUNTS_MAX {
        e.push(
            "bill_nodes",
            format!(
                "{} node counts; at most {}",
                g.node_counts.len(),
                bounds::DEADLINE_NODE_COUNTS_MAX
            ),
        );
    }
    let gpn = u64::from(gpus_per_node.max(1));
    if let Some(&n) = g
        .node_counts
        .iter()
        .find(|&&n| n == 0 || u64::from(n) * gpn > MAX_GPUS)
    {
        e.push(
            "bill_nodes",
            format!(
                "{n} nodes is outside 1..={} ({MAX_GPUS} GPUs)",
                MAX_GPUS / gpn
            ),
        );
    }
    e.within("fleet_rps", g.rate_rps, bounds::FLEET_RPS);
    for (key, bound) in [("fleet_ttft_ms", g.ttft_ms), ("fleet_tpot_ms", g.tpot_ms)] {
        if let Some(ms) = bound {
            e.within(key, ms, bounds::LATENCY_BOUND_MS);
        }
    }
    if g.fleet_gpus.len() > bounds::FLEET_GPUS_MAX {
        e.push(
            "fleet_gpus",
            format!(
                "{} GPU types; at most {}",
                g.fleet_gpus.len(),
                bounds::FLEET_GPUS_MAX
            ),
        );
    }
    if let Some(id) = g
        .fleet_gpus
        .iter()
        .find(|id| crate::input::hardware::gpu_preset(id).is_none())
    {
        e.push(
            "fleet_gpus",
            format!(
                "'{}' is not a GPU preset",
                crate::base::free_text::one_line(id)
            ),
        );
    }
}

/// Range checks of a custom model's shapes (link parameters of `model=custom`).
pub fn validate_model(spec: &ModelSpec) -> Result<(), Vec<FieldError>> {
    let mut e = Errors(Vec::new());
    check_model(&mut e, spec);
    if e.0.is_empty() {
        Ok(())
    } else {
        Err(e.0)
    }
}

fn check_model(e: &mut Errors, m: &ModelSpec) {
    e.name("name", &m.name);
    e.range_u32("layers", m.layers, 1, MAX_LAYERS);
    e.range_u32("hidden", m.hidden, 1, MAX_WIDTH);
    e.range_u32("heads", m.heads, 1, MAX_WIDTH);
    e.range_u32("kv_heads", m.kv_heads, 1, MAX_WIDTH);
    if m.kv_heads > m.heads && m.mla.is_none() {
        e.push(
            "kv_heads",
            format!("{} exceeds heads ({})", m.kv_heads, m.heads),
        );
    } else if m.mla.is_none() {
        if let Some(problem) = query_group_problem(("heads", m.heads), ("kv_heads", m.kv_heads)) {
            e.push("kv_heads", problem);
        }
    }
    e.range_u32("head_dim", m.head_dim, 1, MAX_WIDTH);
    e.range_u32("ffn", m.ffn, 1, MAX_WIDTH);
    e.range_u32("vocab", m.vocab, 1, MAX_VOCAB);
    e.range_u32("pos", m.learned_positions, 0, MAX_SEQ_LEN);
    if let Some(moe) = &m.moe {
        e.range_u32("experts", moe.routed_experts, 1, MAX_EXPERTS);
        e.range_u32("topk", moe.experts_per_token, 1, moe.routed_experts.max(1));
        e.range_u32("shared", moe.shared_experts, 0, MAX_EXPERTS);
        e.range_u32("expert_ffn", moe.expert_ffn, 1, MAX_WIDTH);
        e.range_u32("dense_layers", moe.dense_layers, 0, m.layers);
    }
    if let Some(mla) = &m.mla {
        e.range_u32("q_lora", mla.q_lora_rank, 0, MAX_WIDTH);
        e.range_u32("kv_lora", mla.kv_lora_rank, 1, MAX_WIDTH);
        e.range_u32("rope_dim", mla.qk_rope_head_dim, 0, MAX_WIDTH);
        e.range_u32("nope_dim", mla.qk_nope_head_dim, 0, MAX_WIDTH);
        e.range_u32("v_dim", mla.v_head_dim, 1, MAX_WIDTH);
        if mla.qk_rope_head_dim == 0 && mla.qk_nope_head_dim == 0 {
            e.push("nope_dim", "query/key head dim (nope + rope) must be ≥ 1");
        }
    }
    if let Some(w) = &m.attention_window {
        e.range_u32("window", w.window_tokens, 1, MAX_SEQ_LEN);
        e.range_u32("full_every", w.full_every, 0, m.layers);
    }
    // Each MTP module predicts one token further (DeepSeek-V3 §2.2, depth D = 1 there): more
    // modules than decoder layers is no model anyone trains.
    e.range_u32("mtp", m.mtp_layers, 0, m.layers);
    if let Some(psi) = m.nominal_params {
        if !(psi.is_finite() && psi > 0.0 && psi <= MAX_PARAMS) {
            e.push("psi", format!("{psi} must be in (0, {MAX_PARAMS:e}]"));
        }
    }
    // Guard the u64 counts: bound the size before `param_breakdown` multiplies.
    let estimate = rough_params(m);
    if estimate.is_nan() || estimate > MAX_PARAMS {
        e.push(
            "layers",
            format!("the shapes give about {estimate:.3e} parameters, over {MAX_PARAMS:e}"),
        );
    }
}

/// Why `heads` query heads cannot share `kv_heads` key/value heads, or `None` when they can;
/// each pair is (the field's name where it was read, its value), so a link and a
/// `config.json` each name their own fields.
/// GQA (Ainslie et al. 2023 §2.2; transformers LlamaAttention `num_key_value_groups =
/// num_attention_heads // num_key_value_heads`): every KV head serves a whole group of queries.
pub fn query_group_problem(heads: (&str, u32), kv_heads: (&str, u32)) -> Option<String> {
    let ((heads_field, a), (kv_field, kv)) = (heads, kv_heads);
    (kv > 0 && !a.is_multiple_of(kv)).then(|| {
        format!(
            "{heads_field} ({a}) is not a multiple of {kv_field} ({kv}): grouped-query \
             attention gives each key/value head the same number of query heads"
        )
    })
}

/// An upper bound on the parameter count, in f64 so it cannot overflow.
fn rough_params(m: &ModelSpec) -> f64 {
    let f = |x: u32| f64::from(x);
    let h = f(m.hidden);
    let a = f(m.heads);
    let attention = match &m.mla {
        Some(mla) => {
            let qk = f(mla.qk_nope_head_dim) + f(mla.qk_rope_head_dim);
            let q = h * a * qk + f(mla.q_lora_rank) * (h + a * qk + 1.0);
            let kv = h * (f(mla.kv_lora_rank) + f(mla.qk_rope_head_dim) + 1.0)
                + f(mla.kv_lora_rank) * a * (f(mla.qk_nope_head_dim) + f(mla.v_head_dim) + 1.0);
            q + kv + a * f(mla.v_head_dim) * h
        }
        None => (h + 1.0) * (2.0 * a + 2.0 * f(m.kv_heads)) * f(m.head_dim) + h,
    };
    let ffn_width = match &m.moe {
        Some(moe) => {
            f(m.ffn)
                + f(moe.expert_ffn) * (f(moe.routed_experts) + f(moe.shared_experts))
                + f(moe.routed_experts)
        }
        None => f(m.ffn),
    };
    let per_layer = attention + 3.0 * (h + 1.0) * (ffn_width + 1.0) + 4.0 * h;
    // An MTP module is one more decoder layer plus its 2h → h projection and norms.
    (f(m.layers) + f(m.mtp_layers)) * per_layer
        + f(m.mtp_layers) * (2.0 * h * h + 3.0 * h)
        + (2.0 * f(m.vocab) + f(m.learned_positions) + 2.0) * h
}

fn check_gpu(e: &mut Errors, g: &GpuSpec) {
    e.name("gpu", &g.id);
    if g.id.is_empty() {
        e.push("gpu", "GPU id is empty");
    }
    e.name("gpu_name", &g.name);
    e.within("gpu_mem", g.memory_bytes, bounds::DEVICE_MEMORY_BYTES);
    // 0 means "datasheet figure not stated".
    if g.datasheet_memory_bytes != 0.0 {
        e.within(
            "gpu_mem_datasheet",
            g.datasheet_memory_bytes,
            bounds::DEVICE_MEMORY_BYTES,
        );
    }
    e.within("gpu_hbm", g.hbm_bytes_per_s, bounds::HBM_BYTES_PER_S);
    e.within("gpu_bf16", g.bf16_flops_per_s, bounds::FLOPS_PER_S);
    // 0 means "no FP8 units".
    if g.fp8_flops_per_s != 0.0 {
        e.within("gpu_fp8", g.fp8_flops_per_s, bounds::FLOPS_PER_S);
    }
    e.within(
        "gpu_nvlink",
        g.intra_node_bytes_per_s,
        bounds::LINK_BYTES_PER_S,
    );
    e.within(
        "gpu_net",
        g.inter_node_bytes_per_s,
        bounds::LINK_BYTES_PER_S,
    );
    e.range_u32("gpu_gpn", g.gpus_per_node, 1, 1024);
}

/// The memory overheads and MoE routing: buffer sizes, fractions, capacity factor and load.
fn check_overheads(e: &mut Errors, o: &crate::input::scenario::Overheads) {
    for (field, bytes) in [
        ("cuda_ctx", o.cuda_context_bytes),
        ("nccl_buf", o.nccl_buffer_bytes_per_group),
        ("cublas_ws", o.cublas_workspace_bytes),
        ("bucket", o.gradient_bucket_bytes),
    ] {
        e.within(field, bytes, bounds::BUFFER_BYTES);
    }
    e.range_u32("z3_units", o.zero3_units_in_flight, 1, MAX_LAYERS);
    e.fraction_from_zero("frag", o.allocator_fraction);
    e.fraction("usable", o.usable_fraction);
    let r = &o.moe_routing;
    if let Some(cf) = r.capacity_factor {
        e.within("moe_cf", cf, bounds::MOE_CAPACITY_FACTOR);
    } else if r.pad_to_capacity {
        // Megatron-Bridge's apply_moe_token_drop: "ValueError: If
        // moe_expert_capacity_factor is not set and moe_pad_expert_input_to_capacity is True".
        e.push(
            "moe_pad",
            "padding to capacity needs a capacity factor (moe_cf)",
        );
    }
    if let Some(load) = r.measured_busiest_load {
        e.within("moe_load", load, bounds::MOE_BUSIEST_LOAD);
    }
}

/// The serving question: context, KV format, concurrency, parallelism and the engine's knobs.
fn check_serving(e: &mut Errors, s: &crate::input::scenario::Serving, max_degree: u32) {
    e.range_u32("serve_ctx", s.context_len, 1, MAX_SEQ_LEN);
    if !s.kv_dtype.is_kv_format() {
        e.push(
            "serve_kv",
            format!(
                "{} is a weight format; a KV cache is bf16, fp8, int8, int4 or nvfp4",
                s.kv_dtype.id()
            ),
        );
    }
    e.range_u32("serve_conc", s.target_concurrency, 1, 1_000_000);
    e.range_u32("serve_tp", s.tp, 1, max_degree);
    e.range_u32("serve_pp", s.pp, 1, max_degree);
    e.fraction("serve_util", s.memory_utilization);
    e.within("serve_ws", s.workspace_bytes, bounds::BUFFER_BYTES);
    if let Some(f) = s.mem_fraction_static {
        e.fraction("serve_memfrac", f);
    }
    if let Some(n) = s.max_running_seqs {
        e.range_u32("serve_maxseqs", n, 1, 1_000_000);
    }
    if let Some(sp) = &s.speculation {
        if let Err(m) = sp.check() {
            e.push("serve_spec", m);
        }
    }
    if let Some(p) = &s.engine_profile {
        for count in [p.max_num_batched_tokens, p.max_num_seqs] {
            e.range_u32("serve_profile", count, 1, bounds::MAX_BATCHED_TOKENS);
        }
        for bytes in [p.non_torch_bytes, p.cuda_graph_bytes] {
            e.within("serve_profile", bytes, bounds::BUFFER_BYTES);
        }
    }
}

impl Scenario {
    /// Range and consistency checks. Divisibility of the layout is not checked
    /// here: see [`layout_rule_violations`].
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors(Vec::new());
        if self.version != SCENARIO_VERSION {
            e.push(
                "v",
                format!(
                    "scenario version {} is not supported (this build reads {SCENARIO_VERSION})",
                    self.version
                ),
            );
        }
        match &self.model {
            ModelChoice::Preset(id) => {
                if crate::resolve::presets::model_preset(id).is_none() {
                    e.push(
                        "model",
                        format!(
                            "unknown model preset '{}'",
                            crate::base::free_text::one_line(id)
                        ),
                    );
                }
            }
            ModelChoice::Custom(spec) => check_model(&mut e, spec),
        }

        let p = &self.precision;
        e.within("weight_bytes", p.weight_bytes, bounds::WEIGHT_BYTES);
        e.within("grad_bytes", p.grad_bytes, bounds::STATE_BYTES);
        e.within("master_bytes", p.master_bytes, bounds::STATE_BYTES);
        e.within("optim_bytes", p.optimizer_bytes, bounds::STATE_BYTES);
        e.within("act_bytes", p.activation_bytes, bounds::ACTIVATION_BYTES);

        let c = &self.cluster;
        check_gpu(&mut e, &c.gpu);
        e.range_u32("gpn", c.gpus_per_node, 1, 1024);
        let world = c.world_size();
        if c.nodes == 0 || world > MAX_GPUS {
            e.push("gpus", format!("{world} GPUs is outside 1..={MAX_GPUS}"));
        }
        e.within(
            "nvlink_bw",
            c.intra_node.bytes_per_s,
            bounds::LINK_BYTES_PER_S,
        );
        e.within("nvlink_lat", c.intra_node.latency_s, bounds::LINK_LATENCY_S);
        e.within("net_bw", c.inter_node.bytes_per_s, bounds::LINK_BYTES_PER_S);
        e.within("net_lat", c.inter_node.latency_s, bounds::LINK_LATENCY_S);
        if let Some(h) = &c.host {
            crate::input::offload::check_host(&mut |f, v, b| e.within(f, v, b), h);
            e.range_u32("host_cores", h.cpu_cores, 1, bounds::HOST_CPU_CORES_MAX);
        }

        let t = &self.training;
        e.range_u32("seq", t.seq_len, 1, MAX_SEQ_LEN);
        e.range_u32("gbs", t.global_batch, 1, u32::MAX);
        let lora = &t.finetune.lora;
        e.range_u32("lora_r", lora.rank, 1, bounds::LORA_RANK_MAX);
        e.range_u32("lora_alpha", lora.alpha, 1, bounds::LORA_ALPHA_MAX);
        e.range_u32(
            "vtok",
            t.finetune.virtual_tokens,
            1,
            bounds::VIRTUAL_TOKENS_MAX,
        );
        if t.finetune.mode.uses_targets() && !lora.targets.any() {
            e.push(
                "lora_mod",
                format!(
                    "{} needs at least one target module",
                    t.finetune.mode.label()
                ),
            );
        }

        let l = &self.layout;
        let max_degree = u32::try_from(world.clamp(1, MAX_GPUS)).unwrap_or(u32::MAX);
        for (field, v) in [
            ("dp", l.dp),
            ("tp", l.tp),
            ("pp", l.pp),
            ("cp", l.cp),
            ("ep", l.ep),
            ("etp", l.expert_tp),
        ] {
            e.range_u32(field, v, 1, max_degree);
        }
        e.range_u32("vpp", l.virtual_stages, 1, MAX_LAYERS);
        check_split_ranges(&mut e, &l.stage_split);
        e.range_u32("mbs", l.micro_batch, 1, t.global_batch.max(1));
        if l.world_size() > world {
            e.push(
                "dp",
                format!(
                    "dp × tp × pp × cp = {} × {} × {} × {} = {} exceeds the cluster's {world} GPUs",
                    l.dp,
                    l.tp,
                    l.pp,
                    l.cp,
                    l.world_size()
                ),
            );
        }

        check_overheads(&mut e, &self.overheads);
        check_serving(&mut e, &self.serving, max_degree);
        check_bill(&mut e, &self.bill);
        check_goals(&mut e, &self.bill.goals, self.cluster.gpus_per_node);

        if let Some(measured) = &self.calibration {
            // A calibration inside a file is as foreign as one in a link: the same check.
            if let Err(m) = measured.summary.check() {
                e.push("cal", m);
            }
        }

        if e.0.is_empty() {
            Ok(())
        } else {
            Err(e.0)
        }
    }
}

/// How serious a layout rule violation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The layout cannot run as given (frameworks refuse it).
    Error,
    /// It runs, but slowly or wastefully (e.g. TP over the network).
    Warning,
}

/// One broken divisibility or placement rule of a layout.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RuleViolation {
    /// The link parameter to change, e.g. "tp".
    pub field: String,
    /// Machine key of the rule, e.g. "heads_divisible_by_tp".
    pub rule: String,
    /// What is wrong, for a person.
    pub message: String,
    /// Error or warning.
    pub severity: Severity,
}

impl RuleViolation {
    /// Whether [`Scenario::validate`] reports the same condition as an error of its own: a
    /// layout larger than the cluster is an inconsistent size there and a rule here (the
    /// exports' notes and callers that skip validation read it here). A page that shows both
    /// lists shows it once.
    pub fn restates_validation(&self) -> bool {
        self.rule == "world_exceeds_cluster"
    }

    /// Whether this violation makes the layout invalid (not just slow).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Every layout rule `scenario.layout` breaks for `model` on `scenario.cluster`.
///
/// Returns an empty `Vec` (no allocation) when every rule holds: the mesh search
/// calls this for every candidate. Rules (Megatron-LM argument checks and the
/// article's step 6, "confirm divisibility of heads, hidden dimensions, layers,
/// experts, batch, and sequence"):
/// - `heads_divisible_by_tp`, `kv_heads_divisible_by_tp` (tp a multiple of the KV
///   heads is allowed: the KV heads are then replicated), `ffn_divisible_by_tp`,
///   `expert_ffn_divisible_by_etp`;
/// - `layers_divisible_by_pp` (by pp × virtual stages, for the even split);
/// - `stage_split_fits_layers` (an uneven split's counts sum to the layers and suit
///   pp × virtual stages, as Megatron / torchtitan check them; [`crate::input::stage_split`]);
/// - `seq_divisible_by_2cp` (load-balanced causal CP splits the sequence in 2·cp chunks);
/// - `experts_divisible_by_ep`, `ep_requires_moe`, `etp_requires_moe`,
///   `etp_ep_divides_tp_cp_dp` (MoE parallel folding, [`crate::parallel::fold`]);
/// - `batch_divisible_by_dp_mbs`;
/// - `interleaved_needs_virtual_stages`, `virtual_stages_need_interleaved`,
///   `interleaved_micro_batches_divisible_by_pp`;
/// - `world_exceeds_cluster` (error), `world_below_cluster` and `tp_within_node` (warnings).
pub fn layout_rule_violations(model: &ModelSpec, scenario: &Scenario) -> Vec<RuleViolation> {
    let mut v = Violations(Vec::new());
    let d = Degrees::of(&scenario.layout);
    tensor_split_rules(&mut v, model, d);
    pipeline_and_batch_rules(&mut v, model, scenario, d);
    placement_rules(&mut v, scenario, d);
    let mut out = v.0;
    out.extend(crate::resolve::offload_rules::rule_violations(scenario));
    out
}

/// The rule violations found so far.
struct Violations(Vec<RuleViolation>);

impl Violations {
    fn add(&mut self, field: &str, rule: &str, severity: Severity, message: String) {
        self.0.push(RuleViolation {
            field: field.to_string(),
            rule: rule.to_string(),
            message,
            severity,
        });
    }
}

/// The layout's degrees, each at least 1: every modulus is guarded, because validation
/// rejects zeros but the rules may run on unvalidated input.
#[derive(Clone, Copy)]
struct Degrees {
    tp: u32,
    pp: u32,
    cp: u32,
    ep: u32,
    etp: u32,
    dp: u32,
    vs: u32,
    mbs: u32,
}

impl Degrees {
    fn of(l: &crate::input::layout::Layout) -> Self {
        Degrees {
            tp: l.tp.max(1),
            pp: l.pp.max(1),
            cp: l.cp.max(1),
            ep: l.ep.max(1),
            etp: l.expert_tp.max(1),
            dp: l.dp.max(1),
            vs: l.virtual_stages.max(1),
            mbs: l.micro_batch.max(1),
        }
    }
}

/// Heads, KV heads, FFN and experts over TP, expert-TP and EP.
fn tensor_split_rules(v: &mut Violations, model: &ModelSpec, d: Degrees) {
    use Severity::Error;
    let Degrees { tp, ep, etp, .. } = d;
    if !model.heads.is_multiple_of(tp) {
        v.add(
            "tp",
            "heads_divisible_by_tp",
            Error,
            format!(
                "{} attention heads do not split over tp = {tp}",
                model.heads
            ),
        );
    }
    if model.mla.is_none()
        && !model.kv_heads.is_multiple_of(tp)
        && !tp.is_multiple_of(model.kv_heads.max(1))
    {
        v.add(
            "tp",
            "kv_heads_divisible_by_tp",
            Error,
            format!(
                "{} KV heads neither split over nor replicate evenly across tp = {tp}",
                model.kv_heads
            ),
        );
    }
    if !model.ffn.is_multiple_of(tp) && model.moe.as_ref().is_none_or(|m| m.dense_layers > 0) {
        v.add(
            "tp",
            "ffn_divisible_by_tp",
            Error,
            format!("FFN width {} does not split over tp = {tp}", model.ffn),
        );
    }
    if let Some(moe) = &model.moe {
        // Routed experts are split over the expert-TP group, not TP (Megatron's
        // `--expert-tensor-parallel-size`; Liu et al. 2025 §3).
        if moe.expert_ffn % etp != 0 {
            v.add(
                "etp",
                "expert_ffn_divisible_by_etp",
                Error,
                format!(
                    "expert FFN width {} does not split over expert_tp = {etp}",
                    moe.expert_ffn
                ),
            );
        }
        if moe.routed_experts % ep != 0 {
            v.add(
                "ep",
                "experts_divisible_by_ep",
                Error,
                format!(
                    "{} routed experts do not split over ep = {ep}",
                    moe.routed_experts
                ),
            );
        }
    } else {
        if ep > 1 {
            v.add(
                "ep",
                "ep_requires_moe",
                Error,
                format!("ep = {ep} but the model has no experts"),
            );
        }
        if etp > 1 {
            v.add(
                "etp",
                "etp_requires_moe",
                Error,
                format!("expert_tp = {etp} but the model has no experts"),
            );
        }
    }
}

/// The stage split, CP's sequence chunks, MoE folding, the batch and the interleaved schedule.
fn pipeline_and_batch_rules(
    v: &mut Violations,
    model: &ModelSpec,
    scenario: &Scenario,
    d: Degrees,
) {
    use Severity::Error;
    let l = &scenario.layout;
    let Degrees {
        tp,
        pp,
        cp,
        ep,
        etp,
        dp,
        vs,
        mbs,
    } = d;
    let chunks = u64::from(pp) * u64::from(vs);
    let sh = crate::input::stage_split::SplitShape::new(model.layers, pp, vs);
    if let Some(problem) = l.stage_split.problem(sh) {
        v.add(
            "split",
            "stage_split_fits_layers",
            Error,
            format!("split ({}): {problem}", l.stage_split.describe(sh)),
        );
    } else if l.stage_split.is_even() && u64::from(model.layers) % chunks != 0 {
        v.add(
            "pp",
            "layers_divisible_by_pp",
            Error,
            format!(
                "{} layers do not split into pp × virtual stages = {pp} × {vs} = {chunks} equal chunks",
                model.layers
            ),
        );
    }
    let seq = scenario.training.seq_len;
    if cp > 1 && u64::from(seq) % (2 * u64::from(cp)) != 0 {
        v.add(
            "cp",
            "seq_divisible_by_2cp",
            Error,
            format!(
                "sequence {seq} does not split into 2 × cp = {} chunks",
                2 * u64::from(cp)
            ),
        );
    }
    // Liu et al. 2025 (arXiv 2504.14960) §3 and Megatron parallel_state.py: the MoE layers
    // regroup a stage's tp·cp·dp ranks into expert_tp × ep × expert-dp.
    let stage = u64::from(tp)
        .saturating_mul(u64::from(cp))
        .saturating_mul(u64::from(dp));
    let fold = u64::from(etp) * u64::from(ep);
    if stage % fold != 0 {
        v.add(
            "ep",
            "etp_ep_divides_tp_cp_dp",
            Error,
            format!(
                "expert_tp × ep = {etp} × {ep} = {fold} does not divide tp × cp × dp = {tp} × {cp} × {dp} = {stage}"
            ),
        );
    }
    let gbs = u64::from(scenario.training.global_batch);
    let per_step = u64::from(dp) * u64::from(mbs);
    if gbs % per_step != 0 {
        v.add(
            "gbs",
            "batch_divisible_by_dp_mbs",
            Error,
            format!("global batch {gbs} does not split into dp × micro-batch = {dp} × {mbs} = {per_step}"),
        );
    }
    let interleaved = l.schedule == Schedule::Interleaved;
    if interleaved && (vs < 2 || pp < 2) {
        v.add(
            "vpp",
            "interleaved_needs_virtual_stages",
            Error,
            format!("the interleaved schedule needs pp ≥ 2 and virtual stages ≥ 2 (pp = {pp}, virtual stages = {vs})"),
        );
    }
    if !interleaved && vs > 1 {
        v.add(
            "vpp",
            "virtual_stages_need_interleaved",
            Error,
            format!("{vs} virtual stages need the interleaved schedule"),
        );
    }
    if interleaved && pp > 1 {
        let micro_batches = gbs / per_step;
        if micro_batches % u64::from(pp) != 0 {
            v.add(
                "gbs",
                "interleaved_micro_batches_divisible_by_pp",
                Error,
                format!("interleaved 1F1B needs the {micro_batches} micro-batches to be a multiple of pp = {pp}"),
            );
        }
    }
}

/// The layout against the cluster: its size and TP inside a node.
fn placement_rules(v: &mut Violations, scenario: &Scenario, d: Degrees) {
    use Severity::{Error, Warning};
    let l = &scenario.layout;
    let Degrees { tp, .. } = d;
    let world = l.world_size();
    let cluster = scenario.cluster.world_size();
    if world > cluster {
        v.add(
            "dp",
            "world_exceeds_cluster",
            Error,
            format!("dp × tp × pp × cp = {world} exceeds the cluster's {cluster} GPUs"),
        );
    } else if world < cluster {
        v.add(
            "dp",
            "world_below_cluster",
            Warning,
            format!(
                "dp × tp × pp × cp = {world} leaves {} of {cluster} GPUs idle",
                cluster - world
            ),
        );
    }
    let gpn = scenario.cluster.gpus_per_node;
    if tp > gpn {
        v.add(
            "tp",
            "tp_within_node",
            Warning,
            format!("tp = {tp} spans more than one node of {gpn} GPUs: its all-reduces cross the network"),
        );
    } else if !crate::input::hardware::tp_within_node(tp, gpn) {
        v.add(
            "tp",
            "tp_within_node",
            Warning,
            format!("tp = {tp} does not divide a node of {gpn} GPUs: some TP groups straddle two nodes and their all-reduces cross the network (the step is priced on a group inside one node)"),
        );
    }
}
