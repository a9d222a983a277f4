//! The benchmark report: what gpu-bench measures on real GPUs and the app imports.
//!
//! A [`BenchReport`] holds the environment it was measured in, NCCL collective
//! timings, GEMM rates, memory bandwidth and measured sharded-layer steps. It is
//! parsed at the edge by [`parse_report`], which rejects anything a calibration
//! should not trust (wrong version, missing fields, non-finite or negative
//! values, absurd sizes, oversized input) with an error naming the field path.
//!
//! Bandwidth conventions follow nccl-tests (`doc/PERFORMANCE.md`): see
//! [`algbw_gb_per_s`] and [`busbw_factor`].

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::input::hardware::GB;

/// The report format version this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;
/// Reports longer than this many bytes of JSON text are rejected before parsing.
pub const MAX_REPORT_TEXT_BYTES: usize = 32 * 1024 * 1024;
/// Largest byte count accepted anywhere in a report (10 TB: no GPU holds more).
pub const MAX_BYTES: u64 = 10_000_000_000_000;
/// Largest rank or GPU count accepted.
pub const MAX_RANKS: u32 = 1_000_000;
/// Largest GEMM dimension accepted.
pub const MAX_GEMM_DIM: u64 = 100_000_000;
/// Largest rate accepted, GB/s or TFLOP/s (far above any device or link).
pub const MAX_RATE: f64 = 1e7;
/// Longest string accepted in any text field.
pub const MAX_TEXT_CHARS: usize = 4096;
/// Most entries accepted in any list.
pub const MAX_ENTRIES: usize = 100_000;

/// A complete benchmark report (schema version 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchReport {
    /// Always 1 for this format.
    pub schema_version: u32,
    /// Program and version that wrote the report, e.g. "gpu-bench 0.1.0".
    pub tool: String,
    /// Seconds since the Unix epoch when the run started (UTC).
    pub created_unix_seconds: u64,
    /// Where it was measured.
    pub environment: Environment,
    /// NCCL collective timings, one row per (op, group, dtype, size, placement).
    pub collectives: Vec<CollectiveResult>,
    /// Matrix-multiply timings.
    pub gemms: Vec<GemmResult>,
    /// Device memory bandwidth timings.
    pub memory_bandwidth: Vec<MemoryBandwidthResult>,
    /// Measured sharded-layer steps (TP MLP, FSDP unit).
    pub layer_steps: Vec<LayerStepResult>,
    /// Skipped sizes and other remarks.
    pub notes: Vec<Note>,
    /// False when the run stopped early (Ctrl-C, failure): the lists hold what was measured.
    pub complete: bool,
}

/// The machines, GPUs and software a report was measured on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Environment {
    /// One entry per GPU that took part, in rank order.
    pub gpus: Vec<GpuInfo>,
    /// Number of GPUs that took part.
    pub gpu_count: u32,
    /// NVIDIA driver version, e.g. "570.124.06" (or the CUDA driver API version when that is all that is known).
    pub driver_version: String,
    /// CUDA version the driver supports, e.g. "12.8".
    pub cuda_version: String,
    /// NCCL version, e.g. "2.26.2"; empty when NCCL was not loaded.
    pub nccl_version: String,
    /// Host names, one per node, in node order.
    pub hosts: Vec<String>,
    /// World size: ranks (GPUs) in the run.
    pub ranks: u32,
    /// Ranks on each node.
    pub ranks_per_node: u32,
    /// Free-text interconnect description, e.g. "1 node × 8 GPUs, NVLink (NV18)".
    pub topology: String,
}

/// One GPU of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuInfo {
    /// Global rank that drove this GPU.
    pub rank: u32,
    /// Host it sits in.
    pub host: String,
    /// Device name as the driver reports it, e.g. "NVIDIA H200".
    pub name: String,
    /// Total device memory, bytes.
    pub memory_bytes: u64,
    /// Compute capability, e.g. "9.0".
    pub compute_capability: String,
}

/// Element type of a buffer or GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    /// IEEE single precision.
    Fp32,
    /// IEEE half precision.
    Fp16,
    /// bfloat16.
    Bf16,
    /// FP8 E4M3 (inputs of FP8 GEMMs).
    Fp8E4m3,
}

impl Dtype {
    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            Dtype::Fp32 => 4,
            Dtype::Fp16 | Dtype::Bf16 => 2,
            Dtype::Fp8E4m3 => 1,
        }
    }

    /// Short name as nccl-tests prints it ("float", "half", "bfloat16", "f8e4m3").
    pub fn nccl_name(self) -> &'static str {
        match self {
            Dtype::Fp32 => "float",
            Dtype::Fp16 => "half",
            Dtype::Bf16 => "bfloat16",
            Dtype::Fp8E4m3 => "f8e4m3",
        }
    }
}

/// An NCCL collective (or point-to-point pattern).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveOp {
    /// `ncclAllReduce` (sum).
    AllReduce,
    /// `ncclAllGather`.
    AllGather,
    /// `ncclReduceScatter` (sum).
    ReduceScatter,
    /// All-to-all as grouped `ncclSend`/`ncclRecv` to every peer.
    AllToAll,
    /// `ncclBroadcast` from rank 0.
    Broadcast,
    /// `ncclReduce` (sum) to rank 0.
    Reduce,
    /// `ncclSend`/`ncclRecv` to the next rank and from the previous one (a ring shift).
    SendRecv,
}

impl CollectiveOp {
    /// Every op, in the order gpu-bench runs them.
    pub const ALL: [CollectiveOp; 7] = [
        CollectiveOp::AllReduce,
        CollectiveOp::AllGather,
        CollectiveOp::ReduceScatter,
        CollectiveOp::AllToAll,
        CollectiveOp::Broadcast,
        CollectiveOp::Reduce,
        CollectiveOp::SendRecv,
    ];

    /// Stable snake_case name, as in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            CollectiveOp::AllReduce => "all_reduce",
            CollectiveOp::AllGather => "all_gather",
            CollectiveOp::ReduceScatter => "reduce_scatter",
            CollectiveOp::AllToAll => "all_to_all",
            CollectiveOp::Broadcast => "broadcast",
            CollectiveOp::Reduce => "reduce",
            CollectiveOp::SendRecv => "send_recv",
        }
    }
}

/// Algorithm bandwidth in GB/s (GB = 1e9): `bytes / time`.
///
/// Returns 0 for a non-positive or non-finite time rather than infinity.
// nccl-tests doc/PERFORMANCE.md "algorithm bandwidth": algbw = S / t.
pub fn algbw_gb_per_s(bytes: u64, time_us: f64) -> f64 {
    if !(time_us.is_finite() && time_us > 0.0) {
        return 0.0;
    }
    bytes as f64 / (time_us * 1e-6) / GB
}

/// Factor that turns algorithm bandwidth into bus bandwidth for `ranks` ranks.
///
/// Bus bandwidth is what each rank's link carries, comparable to the link's
/// peak whatever the rank count. With one rank (or zero) the collective
/// moves nothing across a link and the factor of the ring formulas is 0.
pub fn busbw_factor(op: CollectiveOp, ranks: u32) -> f64 {
    let n = f64::from(ranks.max(1));
    match op {
        // nccl-tests doc/PERFORMANCE.md "AllReduce": busbw = algbw × 2(n−1)/n.
        CollectiveOp::AllReduce => 2.0 * (n - 1.0) / n,
        // nccl-tests PERFORMANCE.md "ReduceScatter"/"AllGather" (S = full gathered size), and alltoall.cu: (n−1)/n.
        CollectiveOp::AllGather | CollectiveOp::ReduceScatter | CollectiveOp::AllToAll => {
            (n - 1.0) / n
        }
        // nccl-tests PERFORMANCE.md "Broadcast"/"Reduce", sendrecv.cu: busbw = algbw.
        CollectiveOp::Broadcast | CollectiveOp::Reduce | CollectiveOp::SendRecv => 1.0,
    }
}

/// Bus bandwidth in GB/s: `algbw × busbw_factor(op, ranks)`.
pub fn busbw_gb_per_s(op: CollectiveOp, ranks: u32, bytes: u64, time_us: f64) -> f64 {
    algbw_gb_per_s(bytes, time_us) * busbw_factor(op, ranks)
}

/// One timed collective at one size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollectiveResult {
    /// The collective.
    pub op: CollectiveOp,
    /// Ranks in the communicator.
    pub ranks: u32,
    /// Ranks of the communicator that share a node (equal to `ranks` inside one node).
    pub ranks_per_node: u32,
    /// Which communicator: "world", or a parallel group of a layout ("tp", "dp", "pp").
    pub group: String,
    /// Element type.
    pub dtype: Dtype,
    /// nccl-tests "size": bytes of the largest buffer (the full gathered/scattered
    /// buffer for all-gather and reduce-scatter; per-rank send buffer otherwise).
    pub bytes: u64,
    /// Elements in `bytes` (`bytes / dtype size`; nccl-tests prints the per-rank
    /// count for all-gather and reduce-scatter instead).
    pub count: u64,
    /// Output buffer aliases the input.
    pub in_place: bool,
    /// Mean time of one operation over the timed iterations, µs.
    pub time_us: f64,
    /// `bytes / time`, GB/s.
    pub algbw_gb_per_s: f64,
    /// `algbw × busbw_factor`, GB/s.
    pub busbw_gb_per_s: f64,
    /// Elements that differed from the expected result (nccl-tests "#wrong").
    pub wrong: u64,
}

/// One timed matrix multiply `C[m×n] = A[m×k] · B[k×n]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GemmResult {
    /// Rows of the output.
    pub m: u64,
    /// Columns of the output.
    pub n: u64,
    /// Inner dimension.
    pub k: u64,
    /// Input element type (accumulation is FP32).
    pub dtype: Dtype,
    /// What the shape is, e.g. "square" or "qkv tp=8 (llama-3.1-70b)".
    pub label: String,
    /// Mean time of one GEMM, µs.
    pub time_us: f64,
    /// `2mnk / time`, TFLOP/s.
    pub tflops: f64,
}

/// FLOP/s of a GEMM in TFLOP/s: `2mnk / time`.
// One multiply and one add per inner-product term (Kaplan et al. 2020, §2.1 counts 2 FLOPs per MAC).
pub fn gemm_tflops(m: u64, n: u64, k: u64, time_us: f64) -> f64 {
    if !(time_us.is_finite() && time_us > 0.0) {
        return 0.0;
    }
    2.0 * m as f64 * n as f64 * k as f64 / (time_us * 1e-6) / 1e12
}

/// One timed device-to-device copy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryBandwidthResult {
    /// What was measured, e.g. "d2d copy".
    pub label: String,
    /// Bytes moved: read plus write (twice the buffer size for a copy).
    pub bytes: u64,
    /// Mean time of one copy, µs.
    pub time_us: f64,
    /// `bytes / time`, GB/s.
    pub gb_per_s: f64,
}

/// Which sharded layer step was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LayerStepKind {
    /// Megatron tensor-parallel MLP: column-parallel GEMM, activation,
    /// row-parallel GEMM, one all-reduce (forward).
    TpMlp,
    /// One FSDP/ZeRO-3 unit: all-gather parameters, forward and backward GEMMs,
    /// reduce-scatter gradients.
    FsdpUnit,
}

/// A measured sharded-layer step, sequential and with communication overlapped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LayerStepResult {
    /// Which step.
    pub kind: LayerStepKind,
    /// What shapes, e.g. "llama-3.1-70b mlp".
    pub label: String,
    /// Hidden size `h`.
    pub hidden: u64,
    /// FFN width `f` (unsharded).
    pub ffn: u64,
    /// Tokens in the step (micro-batch × sequence).
    pub tokens: u64,
    /// Element type of weights and activations.
    pub dtype: Dtype,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Data-parallel (sharding) degree.
    pub dp: u32,
    /// Compute alone (no communication), µs.
    pub compute_us: f64,
    /// Communication alone, µs.
    pub comm_us: f64,
    /// Compute then communication on one stream, µs.
    pub sequential_us: f64,
    /// Compute and communication on separate streams, overlapped where the data allows, µs.
    pub overlapped_us: f64,
    /// Communication not hidden by compute: `overlapped − compute`, at least 0, µs.
    pub exposed_comm_us: f64,
    /// Peak device memory in use during the step, bytes.
    pub peak_memory_bytes: u64,
}

/// How serious a note is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoteLevel {
    /// Something was not measured (too large, out of memory, unsupported).
    Skipped,
    /// Measured, but the figure may mislead.
    Warning,
    /// For the record.
    Info,
}

/// A remark about the run, e.g. a size skipped for lack of memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    /// How serious.
    pub level: NoteLevel,
    /// Section: "collectives", "gemms", "memory_bandwidth", "layer_steps", "environment".
    pub section: String,
    /// What it is about, e.g. "all_reduce bf16 8589934592 B".
    pub subject: String,
    /// Why, e.g. "out of memory".
    pub message: String,
}

impl BenchReport {
    /// An empty, incomplete report for this environment, to fill as results arrive.
    pub fn new(tool: &str, created_unix_seconds: u64, environment: Environment) -> Self {
        BenchReport {
            schema_version: SCHEMA_VERSION,
            tool: tool.to_string(),
            created_unix_seconds,
            environment,
            collectives: Vec::new(),
            gemms: Vec::new(),
            memory_bandwidth: Vec::new(),
            layer_steps: Vec::new(),
            notes: Vec::new(),
            complete: false,
        }
    }

    /// Checks every value the way [`parse_report`] does; gpu-bench calls it before writing.
    pub fn validate(&self) -> Result<(), ReportError> {
        validate(self)
    }
}

/// Why a report was rejected.
#[derive(Clone, Debug, PartialEq)]
pub enum ReportError {
    /// The text is longer than [`MAX_REPORT_TEXT_BYTES`]; nothing was parsed.
    TooLarge {
        /// Length of the text, bytes.
        bytes: usize,
        /// The limit, bytes.
        limit: usize,
    },
    /// Not JSON, or JSON that does not fit the format (missing field, wrong type).
    Syntax {
        /// Field path, e.g. `collectives[3].time_us` (empty for the whole document).
        path: String,
        /// What went wrong.
        message: String,
    },
    /// `schema_version` is not one this crate reads.
    UnsupportedVersion {
        /// The version found (`None` when missing or not a number).
        found: Option<u64>,
    },
    /// A value that parses but cannot be right (negative, non-finite, absurd).
    Invalid {
        /// Field path, e.g. `collectives[3].time_us`.
        path: String,
        /// What is wrong with it.
        message: String,
    },
}

impl ReportError {
    /// The field path the error is about (empty when it is about the whole text).
    pub fn path(&self) -> &str {
        match self {
            ReportError::TooLarge { .. } => "",
            ReportError::UnsupportedVersion { .. } => "schema_version",
            ReportError::Syntax { path, .. } | ReportError::Invalid { path, .. } => path,
        }
    }
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::TooLarge { bytes, limit } => write!(
                f,
                "report is {bytes} bytes, larger than the {limit}-byte limit; not parsed"
            ),
            ReportError::Syntax { path, message } if path.is_empty() || path == "." => {
                write!(f, "report is not valid: {message}")
            }
            ReportError::Syntax { path, message } => write!(f, "{path}: {message}"),
            ReportError::UnsupportedVersion { found: Some(v) } => write!(
                f,
                "schema_version: {v} is not supported (this app reads version {SCHEMA_VERSION})"
            ),
            ReportError::UnsupportedVersion { found: None } => write!(
                f,
                "schema_version: missing or not a number (this app reads version {SCHEMA_VERSION})"
            ),
            ReportError::Invalid { path, message } => write!(f, "{path}: {message}"),
        }
    }
}

impl std::error::Error for ReportError {}

/// Parses and checks a report. Rejects text over [`MAX_REPORT_TEXT_BYTES`]
/// before parsing, then a wrong `schema_version`, then fields that are missing
/// or of the wrong type, then values that cannot be right; every error names
/// the field path.
pub fn parse_report(json: &str) -> Result<BenchReport, ReportError> {
    if json.len() > MAX_REPORT_TEXT_BYTES {
        return Err(ReportError::TooLarge {
            bytes: json.len(),
            limit: MAX_REPORT_TEXT_BYTES,
        });
    }
    // The version is read first, skipping everything else, so a future format
    // gets a version error rather than a field error.
    let probe: VersionProbe = serde_json::from_str(json).map_err(|e| ReportError::Syntax {
        path: String::new(),
        message: e.to_string(),
    })?;
    let version = probe.schema_version.as_ref().and_then(|v| v.as_u64());
    if version != Some(u64::from(SCHEMA_VERSION)) {
        return Err(ReportError::UnsupportedVersion { found: version });
    }
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let report: BenchReport =
        serde_path_to_error::deserialize(&mut deserializer).map_err(|e| ReportError::Syntax {
            path: e.path().to_string(),
            message: e.inner().to_string(),
        })?;
    deserializer.end().map_err(|e| ReportError::Syntax {
        path: String::new(),
        message: e.to_string(),
    })?;
    validate(&report)?;
    Ok(report)
}

/// Serialises a report as pretty JSON after checking it.
pub fn report_to_json(report: &BenchReport) -> Result<String, ReportError> {
    validate(report)?;
    serde_json::to_string_pretty(report).map_err(|e| ReportError::Syntax {
        path: String::new(),
        message: e.to_string(),
    })
}

/// The JSON Schema of [`BenchReport`], pretty-printed (checked in at `schemas/report.schema.json`).
pub fn report_json_schema() -> String {
    let schema = schemars::schema_for!(BenchReport);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[derive(Deserialize)]
struct VersionProbe {
    schema_version: Option<serde_json::Value>,
}

fn invalid(path: String, message: impl Into<String>) -> ReportError {
    ReportError::Invalid {
        path,
        message: message.into(),
    }
}

struct Checker {
    path: String,
}

impl Checker {
    fn at(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.path)
        }
    }

    fn text(&self, field: &str, value: &str) -> Result<(), ReportError> {
        if let Some((i, c)) = value
            .chars()
            .enumerate()
            .find(|(_, c)| crate::base::free_text::is_forbidden_char(*c))
        {
            return Err(invalid(
                self.at(field),
                format!(
                    "holds the non-printable character U+{:04X} at position {}",
                    u32::from(c),
                    i + 1
                ),
            ));
        }
        let chars = value.chars().count();
        if chars > MAX_TEXT_CHARS {
            return Err(invalid(
                self.at(field),
                format!("{chars} characters, more than {MAX_TEXT_CHARS}"),
            ));
        }
        Ok(())
    }

    fn bytes(&self, field: &str, value: u64) -> Result<(), ReportError> {
        if value > MAX_BYTES {
            return Err(invalid(
                self.at(field),
                format!("{value} bytes is absurd (limit {MAX_BYTES})"),
            ));
        }
        Ok(())
    }

    fn ranks(&self, field: &str, value: u32) -> Result<(), ReportError> {
        if value == 0 || value > MAX_RANKS {
            return Err(invalid(
                self.at(field),
                format!("{value} must be between 1 and {MAX_RANKS}"),
            ));
        }
        Ok(())
    }

    fn dim(&self, field: &str, value: u64) -> Result<(), ReportError> {
        if value == 0 || value > MAX_GEMM_DIM {
            return Err(invalid(
                self.at(field),
                format!("{value} must be between 1 and {MAX_GEMM_DIM}"),
            ));
        }
        Ok(())
    }

    fn finite_non_negative(&self, field: &str, value: f64, max: f64) -> Result<(), ReportError> {
        if !value.is_finite() {
            return Err(invalid(self.at(field), format!("{value} is not finite")));
        }
        if value < 0.0 {
            return Err(invalid(self.at(field), format!("{value} is negative")));
        }
        if value > max {
            return Err(invalid(
                self.at(field),
                format!("{value} is absurd (limit {max})"),
            ));
        }
        Ok(())
    }

    fn time(&self, field: &str, value: f64) -> Result<(), ReportError> {
        // A week in µs: no single timed operation takes longer.
        self.finite_non_negative(field, value, 604_800e6)?;
        if value == 0.0 {
            return Err(invalid(self.at(field), "a time of 0 µs cannot be measured"));
        }
        Ok(())
    }

    fn rate(&self, field: &str, value: f64) -> Result<(), ReportError> {
        self.finite_non_negative(field, value, MAX_RATE)
    }

    /// A measured GEMM rate in TFLOP/s: what the calibration fits its peak from, so
    /// it must lie where a device's rate can ([`crate::base::bounds::FLOPS_PER_S`]).
    fn tflops(&self, field: &str, value: f64) -> Result<(), ReportError> {
        crate::base::bounds::FLOPS_PER_S
            .check(value * 1e12)
            .map_err(|m| invalid(self.at(field), format!("{value} TFLOP/s: {m}")))
    }
}

fn list_len(path: &str, len: usize) -> Result<(), ReportError> {
    if len > MAX_ENTRIES {
        return Err(invalid(
            path.to_string(),
            format!("{len} entries, more than {MAX_ENTRIES}"),
        ));
    }
    Ok(())
}

fn item(list: &str, i: usize) -> Checker {
    Checker {
        path: format!("{list}[{i}]"),
    }
}

fn validate(r: &BenchReport) -> Result<(), ReportError> {
    if r.schema_version != SCHEMA_VERSION {
        return Err(ReportError::UnsupportedVersion {
            found: Some(u64::from(r.schema_version)),
        });
    }
    let top = Checker {
        path: String::new(),
    };
    top.text("tool", &r.tool)?;

    let env = &r.environment;
    let e = Checker {
        path: "environment".to_string(),
    };
    e.ranks("gpu_count", env.gpu_count)?;
    e.ranks("ranks", env.ranks)?;
    e.ranks("ranks_per_node", env.ranks_per_node)?;
    if env.ranks_per_node > env.ranks {
        return Err(invalid(
            e.at("ranks_per_node"),
            format!(
                "{} is more than the {} ranks of the run",
                env.ranks_per_node, env.ranks
            ),
        ));
    }
    for (field, value) in [
        ("driver_version", &env.driver_version),
        ("cuda_version", &env.cuda_version),
        ("nccl_version", &env.nccl_version),
        ("topology", &env.topology),
    ] {
        e.text(field, value)?;
    }
    list_len("environment.gpus", env.gpus.len())?;
    for (i, g) in env.gpus.iter().enumerate() {
        let c = item("environment.gpus", i);
        c.text("host", &g.host)?;
        c.text("name", &g.name)?;
        c.text("compute_capability", &g.compute_capability)?;
        c.bytes("memory_bytes", g.memory_bytes)?;
        if g.rank >= env.ranks {
            return Err(invalid(
                c.at("rank"),
                format!("{} is not below the world size {}", g.rank, env.ranks),
            ));
        }
    }
    list_len("environment.hosts", env.hosts.len())?;
    for (i, h) in env.hosts.iter().enumerate() {
        if h.chars().count() > MAX_TEXT_CHARS {
            return Err(invalid(
                format!("environment.hosts[{i}]"),
                "host name too long",
            ));
        }
    }

    list_len("collectives", r.collectives.len())?;
    for (i, c) in r.collectives.iter().enumerate() {
        let k = item("collectives", i);
        k.ranks("ranks", c.ranks)?;
        k.ranks("ranks_per_node", c.ranks_per_node)?;
        if c.ranks_per_node > c.ranks {
            return Err(invalid(
                k.at("ranks_per_node"),
                format!(
                    "{} is more than the {} ranks of the group",
                    c.ranks_per_node, c.ranks
                ),
            ));
        }
        k.text("group", &c.group)?;
        k.bytes("bytes", c.bytes)?;
        k.bytes("count", c.count)?;
        k.time("time_us", c.time_us)?;
        k.rate("algbw_gb_per_s", c.algbw_gb_per_s)?;
        k.rate("busbw_gb_per_s", c.busbw_gb_per_s)?;
        if c.wrong > c.count.max(1) * u64::from(c.ranks) {
            return Err(invalid(
                k.at("wrong"),
                format!("{} wrong elements is more than were checked", c.wrong),
            ));
        }
    }

    list_len("gemms", r.gemms.len())?;
    for (i, g) in r.gemms.iter().enumerate() {
        let k = item("gemms", i);
        k.dim("m", g.m)?;
        k.dim("n", g.n)?;
        k.dim("k", g.k)?;
        k.text("label", &g.label)?;
        k.time("time_us", g.time_us)?;
        k.tflops("tflops", g.tflops)?;
    }

    list_len("memory_bandwidth", r.memory_bandwidth.len())?;
    for (i, m) in r.memory_bandwidth.iter().enumerate() {
        let k = item("memory_bandwidth", i);
        k.text("label", &m.label)?;
        k.bytes("bytes", m.bytes)?;
        k.time("time_us", m.time_us)?;
        k.rate("gb_per_s", m.gb_per_s)?;
    }

    list_len("layer_steps", r.layer_steps.len())?;
    for (i, s) in r.layer_steps.iter().enumerate() {
        let k = item("layer_steps", i);
        k.text("label", &s.label)?;
        k.dim("hidden", s.hidden)?;
        k.dim("ffn", s.ffn)?;
        k.dim("tokens", s.tokens)?;
        k.ranks("tp", s.tp)?;
        k.ranks("dp", s.dp)?;
        k.time("compute_us", s.compute_us)?;
        k.time("sequential_us", s.sequential_us)?;
        k.time("overlapped_us", s.overlapped_us)?;
        // Communication can be absent (tp = dp = 1), so 0 is allowed here.
        k.finite_non_negative("comm_us", s.comm_us, 604_800e6)?;
        k.finite_non_negative("exposed_comm_us", s.exposed_comm_us, 604_800e6)?;
        k.bytes("peak_memory_bytes", s.peak_memory_bytes)?;
    }

    list_len("notes", r.notes.len())?;
    for (i, n) in r.notes.iter().enumerate() {
        let k = item("notes", i);
        k.text("section", &n.section)?;
        k.text("subject", &n.subject)?;
        k.text("message", &n.message)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algbw_is_bytes_over_time_in_decimal_gb() {
        // 1 GB in 1 ms is 1000 GB/s.
        assert!((algbw_gb_per_s(1_000_000_000, 1000.0) - 1000.0).abs() < 1e-9);
        assert_eq!(algbw_gb_per_s(1024, 0.0), 0.0);
        assert_eq!(algbw_gb_per_s(1024, f64::NAN), 0.0);
    }

    #[test]
    fn busbw_factors_match_nccl_tests() {
        assert_eq!(busbw_factor(CollectiveOp::AllReduce, 8), 1.75);
        assert_eq!(busbw_factor(CollectiveOp::AllGather, 8), 0.875);
        assert_eq!(busbw_factor(CollectiveOp::ReduceScatter, 4), 0.75);
        assert_eq!(busbw_factor(CollectiveOp::AllToAll, 2), 0.5);
        assert_eq!(busbw_factor(CollectiveOp::Broadcast, 8), 1.0);
        assert_eq!(busbw_factor(CollectiveOp::Reduce, 8), 1.0);
        assert_eq!(busbw_factor(CollectiveOp::SendRecv, 8), 1.0);
        assert_eq!(busbw_factor(CollectiveOp::AllReduce, 1), 0.0);
        assert_eq!(busbw_factor(CollectiveOp::AllReduce, 0), 0.0);
    }

    #[test]
    fn gemm_tflops_counts_two_flops_per_mac() {
        // 8192³ in 1.39 ms ≈ 791 TFLOP/s.
        let t = gemm_tflops(8192, 8192, 8192, 1390.0);
        assert!((t - 791.0).abs() < 1.0, "{t}");
    }
}
