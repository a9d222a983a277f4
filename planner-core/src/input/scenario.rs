//! One value that holds a whole planning scenario: what the app's URL, the
//! CLI's JSON file and every evaluation are built from.

use serde::{Deserialize, Serialize};

use crate::input::calibration::CalibrationSummary;
use crate::input::engine_scheduler::KvAdmission;
use crate::input::finetune::FineTune;
use crate::input::hardware::Cluster;
use crate::input::layout::Layout;
use crate::input::model::ModelSpec;
use crate::input::number_format::NumberFormat;
use crate::input::precision::Precision;
use crate::input::serving_engine::{EngineProfile, ServingEngine};
use crate::input::speculation::Speculation;

/// Current scenario schema version. Bump when a field's meaning changes.
pub const SCENARIO_VERSION: u32 = 1;

/// Which model the scenario uses: a preset by id, or custom shapes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelChoice {
    /// A preset from [`crate::resolve::presets`], by id ("llama-3.1-70b").
    Preset(String),
    /// Shapes given in full (custom or imported from `config.json`).
    Custom(ModelSpec),
}

/// Batch and sequence of a training step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Training {
    /// Tokens per sequence.
    pub seq_len: u32,
    /// Sequences per optimizer step, over all data-parallel ranks.
    pub global_batch: u32,
    /// Full fine-tuning, LoRA or QLoRA ([`crate::input::finetune`]); files without it read as full.
    #[serde(default, skip_serializing_if = "FineTune::is_default")]
    pub finetune: FineTune,
    /// Optimizer / parameter offload to CPU or NVMe ([`crate::input::offload`]); files without it
    /// read as none.
    #[serde(
        default,
        skip_serializing_if = "crate::input::offload::Offload::is_none"
    )]
    pub offload: crate::input::offload::Offload,
    /// Whether short examples are packed into full `seq_len` sequences (torchtune `packed: True`,
    /// TRL `SFTConfig(packing=True)`); off, each example is one padded sequence. Read only by the
    /// epoch time ([`crate::time::epoch`]); files without it read as off.
    #[serde(default, skip_serializing_if = "is_false")]
    pub packing: bool,
}

/// Whether a switch is off (serde: fields left out of files when off).
fn is_false(b: &bool) -> bool {
    !*b
}

/// Switches of the activation accounting (where public estimators disagree).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivationOptions {
    /// Flash attention: no `s × s` score/softmax/dropout tensors are saved.
    pub flash_attention: bool,
    /// Logits and their softmax kept in fp32 on the last stage.
    pub fp32_logits: bool,
    /// Count the output logits at all (the last stage's largest tensor).
    pub count_logits: bool,
}

impl Default for ActivationOptions {
    fn default() -> Self {
        ActivationOptions {
            flash_attention: true,
            fp32_logits: true,
            count_logits: true,
        }
    }
}

/// Memory terms beyond model state and activations; each is shown as its own bar segment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overheads {
    /// CUDA context and kernels resident per process, bytes.
    pub cuda_context_bytes: f64,
    /// NCCL buffers per communicator, bytes.
    pub nccl_buffer_bytes_per_group: f64,
    /// cuBLAS workspaces of the process, bytes (inside the caching allocator); files
    /// without it read as 0 (not counted, as before the term existed), and 0 is not written.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cublas_workspace_bytes: f64,
    /// DDP/ZeRO gradient bucket size, bytes (PyTorch DDP default 25 MB). Under Megatron-Core
    /// semantics the time model counts Megatron's own buckets instead
    /// ([`crate::input::framework::Framework::dp_bucket_params`]); memory keeps this figure.
    pub gradient_bucket_bytes: f64,
    /// ZeRO-3 units held gathered at once (the one computing plus prefetch).
    pub zero3_units_in_flight: u32,
    /// Fraction of allocated memory lost to allocator fragmentation.
    pub allocator_fraction: f64,
    /// Fraction of device memory the plan may use before it is flagged.
    pub usable_fraction: f64,
    /// Whose memory semantics the transients follow (the loss's logit-sized tensors).
    #[serde(default)]
    pub framework: crate::input::framework::Framework,
    /// Which kernels run the layers' memory-bound work ([`crate::input::kernels`]); left out
    /// of the JSON when it is the framework's default, so older files read and write as before.
    #[serde(
        default,
        skip_serializing_if = "crate::input::kernels::Kernels::is_default"
    )]
    pub kernels: crate::input::kernels::Kernels,
    /// Which communication overlaps compute ([`crate::input::overlap`]); left out of the JSON
    /// when every switch is the framework's default.
    #[serde(
        default,
        skip_serializing_if = "crate::input::overlap::OverlapChoice::is_default"
    )]
    pub overlap: crate::input::overlap::OverlapChoice,
    /// How MoE layers route tokens: dropless or a capacity factor ([`crate::input::moe_routing`]);
    /// left out of the JSON when dropless with no measured imbalance.
    #[serde(
        default,
        skip_serializing_if = "crate::input::moe_routing::MoeRouting::is_default"
    )]
    pub moe_routing: crate::input::moe_routing::MoeRouting,
}

/// Whether a byte count is exactly 0 (serde: fields left out of files when not counted).
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Default for Overheads {
    /// What a PyTorch training process holds besides its tensors, from published
    /// measurements and documented library defaults ([`crate::input::runtime_memory`]), for
    /// an sm90 (Hopper) GPU; [`Overheads::for_gpu`] gives other GPUs' cuBLAS workspace.
    fn default() -> Self {
        use crate::input::runtime_memory as rt;
        Overheads {
            cuda_context_bytes: rt::cuda_context_bytes(),
            nccl_buffer_bytes_per_group: rt::nccl_ring_bytes_per_communicator(
                rt::NCCL_RING_CHANNELS,
            ),
            cublas_workspace_bytes: rt::cublas_workspace_bytes(true),
            gradient_bucket_bytes: 25e6,
            zero3_units_in_flight: 2,
            allocator_fraction: rt::reserved_over_allocated_fraction(),
            // A planning margin the person sets (the share of the device a plan may fill), not a
            // model term: `meshplan validate` checks fits against the whole capacity (1.0).
            usable_fraction: 0.9,
            framework: crate::input::framework::Framework::Article,
            kernels: crate::input::kernels::Kernels::FrameworkDefault,
            overlap: crate::input::overlap::OverlapChoice {
                tp_comm: crate::input::overlap::Switch::Default,
                grad_reduce: crate::input::overlap::Switch::Default,
                param_gather: crate::input::overlap::Switch::Default,
                ep_comm: crate::input::overlap::Switch::Default,
            },
            moe_routing: crate::input::moe_routing::MoeRouting::default(),
        }
    }
}

impl Overheads {
    /// [`Overheads::default`] with the cuBLAS workspace PyTorch gives `gpu_id`.
    pub fn for_gpu(gpu_id: &str) -> Self {
        use crate::input::runtime_memory as rt;
        Overheads {
            cublas_workspace_bytes: rt::cublas_workspace_bytes(rt::is_sm90(gpu_id)),
            ..Overheads::default()
        }
    }

    /// The article's scenarios: its round runtime allowance (the article lists a "runtime
    /// workspace" without a figure), kept so the article's figures stay as published here.
    /// 0.5 GB of context sits above the measured contexts (266 MB from pytorch/pytorch PR
    /// #86509, "around 400MB", ptrblck in #109888, 426 MiB on CUDA 13.0 in
    /// unslothai/unsloth-zoo PR #1053) and covers the cuBLAS workspaces; 0.1 GB per
    /// communicator is NCCL's ring buffers at about 10 channels (runtime_memory: 10 MiB a
    /// channel); 5% fragmentation sits just under the 6.6% gap of the one published pair of
    /// peaks runtime_memory cites.
    pub fn article() -> Self {
        Overheads {
            cuda_context_bytes: 0.5e9,
            nccl_buffer_bytes_per_group: 0.1e9,
            cublas_workspace_bytes: 0.0,
            allocator_fraction: 0.05,
            ..Overheads::default()
        }
    }
}

/// Dtype of served weights or KV cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServeDtype {
    /// 2 bytes.
    Bf16,
    /// 1 byte (FP8 E4M3, one FP32 scale per tensor, a few bytes a layer, not counted).
    Fp8,
    /// 1 byte (per-channel scales, 2 B a row, not counted).
    Int8,
    /// 0.5 bytes (scales and zeros not counted; `int4-g128` counts AWQ's and GPTQ's).
    Int4,
    /// FP8 with DeepSeek-V3's 128 × 128 weight blocks (checkpoints with `weight_block_size`).
    Fp8Block,
    /// MXFP8: 32-element blocks, E8M0 scales.
    Mxfp8,
    /// MXFP4: 32-element blocks, E8M0 scales.
    Mxfp4,
    /// NVFP4: 16-element blocks, E4M3 scales, an FP32 scale per tensor.
    Nvfp4,
    /// INT4 weight-only in 128-channel groups with FP16 scales and 4-bit zeros (AWQ, GPTQ).
    #[serde(rename = "int4_g128")]
    Int4G128,
    /// MXFP4 routed experts, every other weight BF16: how gpt-oss ships (openai/gpt-oss-120b
    /// config.json `quantization_config`: `"quant_method": "mxfp4"`, `modules_to_not_convert`
    /// the attention, router, embedding and LM head).
    #[serde(rename = "mxfp4_moe")]
    Mxfp4Moe,
}

impl ServeDtype {
    /// All dtypes.
    pub const ALL: [ServeDtype; 10] = [
        ServeDtype::Bf16,
        ServeDtype::Fp8,
        ServeDtype::Int8,
        ServeDtype::Int4,
        ServeDtype::Fp8Block,
        ServeDtype::Mxfp8,
        ServeDtype::Mxfp4,
        ServeDtype::Nvfp4,
        ServeDtype::Int4G128,
        ServeDtype::Mxfp4Moe,
    ];

    /// The number format of the weights it applies to (the routed experts for `mxfp4-moe`);
    /// `None` for the plain byte counts whose scales are not counted (fp8, int8, int4).
    pub fn format(self) -> Option<NumberFormat> {
        match self {
            ServeDtype::Bf16 => Some(NumberFormat::Bf16),
            ServeDtype::Fp8 | ServeDtype::Int8 | ServeDtype::Int4 => None,
            ServeDtype::Fp8Block => Some(NumberFormat::Fp8BlockWeight),
            ServeDtype::Mxfp8 => Some(NumberFormat::Mxfp8),
            ServeDtype::Mxfp4 | ServeDtype::Mxfp4Moe => Some(NumberFormat::Mxfp4),
            ServeDtype::Nvfp4 => Some(NumberFormat::Nvfp4),
            ServeDtype::Int4G128 => Some(NumberFormat::Int4Group { group: 128 }),
        }
    }

    /// Bytes per value of the weights (or cache) it applies to, scales included where
    /// [`ServeDtype::format`] names the layout; `mxfp4-moe`: its BF16 weights (the routed
    /// experts' bytes are [`ServeDtype::routed_expert_bytes`]).
    pub fn bytes(self) -> f64 {
        match self {
            ServeDtype::Bf16 | ServeDtype::Mxfp4Moe => 2.0,
            ServeDtype::Fp8 | ServeDtype::Int8 => 1.0,
            ServeDtype::Int4 => 0.5,
            other => other.format().map_or(2.0, NumberFormat::bytes_per_element),
        }
    }

    /// Bytes per routed-expert weight: [`ServeDtype::bytes`] except under `mxfp4-moe`.
    pub fn routed_expert_bytes(self) -> f64 {
        match self {
            ServeDtype::Mxfp4Moe => NumberFormat::Mxfp4.bytes_per_element(),
            other => other.bytes(),
        }
    }

    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            ServeDtype::Bf16 => "bf16",
            ServeDtype::Fp8 => "fp8",
            ServeDtype::Int8 => "int8",
            ServeDtype::Int4 => "int4",
            ServeDtype::Fp8Block => "fp8-block",
            ServeDtype::Mxfp8 => "mxfp8",
            ServeDtype::Mxfp4 => "mxfp4",
            ServeDtype::Nvfp4 => "nvfp4",
            ServeDtype::Int4G128 => "int4-g128",
            ServeDtype::Mxfp4Moe => "mxfp4-moe",
        }
    }

    /// Parses [`ServeDtype::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.id() == id)
    }

    /// Whether a KV cache can be held in it (vLLM `--kv-cache-dtype` fp8 variants, TensorRT-LLM's
    /// FP8 and NVFP4 KV caches); weight-only and per-expert formats cannot.
    pub fn is_kv_format(self) -> bool {
        matches!(
            self,
            ServeDtype::Bf16
                | ServeDtype::Fp8
                | ServeDtype::Int8
                | ServeDtype::Int4
                | ServeDtype::Nvfp4
        )
    }
}

/// The serving question: one replica's shape and the traffic it must hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Serving {
    /// Weight dtype.
    pub weight_dtype: ServeDtype,
    /// KV-cache dtype.
    pub kv_dtype: ServeDtype,
    /// Tokens per sequence held in cache (prompt + output).
    pub context_len: u32,
    /// Concurrent sequences the operator wants per replica.
    pub target_concurrency: u32,
    /// Tensor-parallel degree of a replica.
    pub tp: u32,
    /// Pipeline stages of a replica.
    pub pp: u32,
    /// Fraction of GPU memory the engine may use (vLLM `gpu_memory_utilization`, default 0.9).
    pub memory_utilization: f64,
    /// Activation/workspace bytes reserved per GPU besides weights and cache.
    pub workspace_bytes: f64,
    /// Whose accounting sizes the KV pool ([`crate::memory::engine_kv_pool`]); files without it read as vLLM.
    #[serde(default, skip_serializing_if = "ServingEngine::is_default")]
    pub engine: ServingEngine,
    /// vLLM's profiling run sized from the model (replaces `workspace_bytes`); none: the workspace figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_profile: Option<EngineProfile>,
    /// SGLang `mem_fraction_static`; none: SGLang's default for the TP degree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_fraction_static: Option<f64>,
    /// The engine's cap on running sequences (vLLM `max_num_seqs`, SGLang
    /// `max_running_requests`, TensorRT-LLM `max_batch_size`); none: the engine's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running_seqs: Option<u32>,
    /// How the engine admits requests against its KV pool; none: the engine's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_admission: Option<KvAdmission>,
    /// Speculative decoding; none: plain decoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculation: Option<Speculation>,
}

impl Default for Serving {
    fn default() -> Self {
        Serving {
            weight_dtype: ServeDtype::Bf16,
            kv_dtype: ServeDtype::Bf16,
            context_len: 32_768,
            target_concurrency: 16,
            tp: 8,
            pp: 1,
            memory_utilization: 0.9,
            workspace_bytes: 2e9,
            engine: ServingEngine::Vllm,
            engine_profile: None,
            mem_fraction_static: None,
            max_running_seqs: None,
            kv_admission: None,
            speculation: None,
        }
    }
}

/// Numbers measured on the user's own cluster (a calibration), and whether the
/// predictions use them in place of the datasheet presets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// The fitted numbers (links, GEMM efficiency), not the raw report.
    pub summary: CalibrationSummary,
    /// "Use measured numbers": when false the summary is kept but presets are used.
    pub enabled: bool,
}

/// A whole scenario: model, precision, cluster, batch, layout and options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Schema version ([`SCENARIO_VERSION`]).
    pub version: u32,
    /// The model.
    pub model: ModelChoice,
    /// Bytes per parameter and activation dtype.
    pub precision: Precision,
    /// GPUs and links.
    pub cluster: Cluster,
    /// Batch and sequence.
    pub training: Training,
    /// Parallel layout.
    pub layout: Layout,
    /// Activation accounting switches.
    pub activations: ActivationOptions,
    /// Buffers, context and headroom.
    pub overheads: Overheads,
    /// The serving question.
    pub serving: Serving,
    /// Calibration from a benchmark report, if one was imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Measured>,
    /// The run's bill inputs ([`crate::input::bill`]); files without it read as the defaults.
    #[serde(
        default,
        skip_serializing_if = "crate::input::bill::RunBill::is_default"
    )]
    pub bill: crate::input::bill::RunBill,
}
