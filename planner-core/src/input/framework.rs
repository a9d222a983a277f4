//! The training framework whose memory semantics a scenario follows: which transient
//! tensors its loss holds and which PyTorch counter its logs report. The choice is
//! explicit because frameworks differ on exactly these points.

use serde::{Deserialize, Serialize};

/// Whose memory semantics the transients follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framework {
    /// The article's accounting (ZeRO paper model state, Korthikanti activations, one fp32
    /// copy of the logits): no framework-specific transient.
    #[default]
    Article,
    /// Megatron-Core: vocab-parallel cross entropy on an fp32 copy of the logits, computed
    /// and differentiated in place.
    MegatronCore,
    /// torchtitan: fp32 logits (`self.output(h).float()`) into `F.cross_entropy`, the
    /// reserved peak in its logs.
    Torchtitan,
    /// DeepSpeed ZeRO ([`crate::memory::deepspeed_zero`]): contiguous-gradient buffers of
    /// `reduce_bucket_size`, ZeRO-3 prefetch bucket and live-parameter cap, the optimizer
    /// step's fp32 gradient partition. The loss is the model code's (no transient added).
    DeepSpeed,
    /// DeepSpeed's releases of 2021 before v0.5.5 (v0.3–v0.5.4), what Narayanan et al. 2021
    /// ran ZeRO-3 with: the same memory semantics as [`Framework::DeepSpeed`], and ZeRO-3
    /// gathers and reduce-scatters each parameter through PyTorch 1.8's list-form collectives,
    /// at the rate [`crate::time::deepspeed_zero3`] takes from DeepSpeed's own measurement.
    DeepSpeed2021,
    /// Hugging Face Transformers model code in PyTorch eager (the Trainer, TRL, Accelerate or a
    /// plain loop, with PEFT adapters): the tensors its Llama-family modules save
    /// ([`crate::memory::hf_activations`]), its loss (`loss_utils.py` `ForCausalLMLoss`,
    /// transformers ≥ 4.46), PEFT's fp32 adapters.
    HfTransformers,
    /// DeepSpeed ZeRO driving Hugging Face Transformers model code (the Trainer's or
    /// Accelerate's DeepSpeed integration): DeepSpeed's buffers and the Transformers tensors.
    HfDeepSpeed,
    /// torchtune's recipes: its eager Llama modules (torchtune/modules), LoRA adapters in the
    /// model's dtype, the chunked cross entropy (`CEWithChunkedOutputLoss`), NF4 through torchao
    /// with the rest kept BF16, pure-BF16 training.
    Torchtune,
}

impl Framework {
    /// All frameworks, in display order.
    pub const ALL: [Framework; 8] = [
        Framework::Article,
        Framework::MegatronCore,
        Framework::Torchtitan,
        Framework::DeepSpeed,
        Framework::DeepSpeed2021,
        Framework::HfTransformers,
        Framework::HfDeepSpeed,
        Framework::Torchtune,
    ];

    /// DeepSpeed of any release: its ZeRO memory semantics and its per-module parameter hooks.
    pub fn is_deepspeed(self) -> bool {
        matches!(
            self,
            Framework::DeepSpeed | Framework::DeepSpeed2021 | Framework::HfDeepSpeed
        )
    }

    /// Whether the model runs as eager PyTorch Llama modules, Transformers' or torchtune's
    /// ([`crate::memory::hf_activations`]).
    pub fn eager_modules(self) -> bool {
        matches!(
            self,
            Framework::HfTransformers | Framework::HfDeepSpeed | Framework::Torchtune
        )
    }

    /// Whether tensor parallelism saves the all-gathered, full-sequence input of the
    /// column-parallel linears: torchtitan's TP plan (torchtitan/models/llama3/infra/parallelize.py
    /// `apply_tp`, the plan of PyTorch's TP tutorial) redistributes the sequence-sharded norm
    /// output `Shard(1) → Replicate()` (`PrepareModuleInput` on `attention` and `feed_forward`)
    /// and the `ColwiseParallel` linears' autograd saves that replicated tensor for their weight
    /// gradients; Megatron saves the sharded one and all-gathers it again in backward
    /// (Korthikanti et al. 2022 §4.2.2).
    pub fn saves_gathered_tp_inputs(self) -> bool {
        self == Framework::Torchtitan
    }

    /// Whether adapters are PEFT's: cast to fp32 (`autocast_adapter_dtype`), reading an fp32 copy
    /// of their input, and QLoRA's unquantized parameters cast to fp32
    /// (`prepare_model_for_kbit_training`).
    pub fn peft_adapters(self) -> bool {
        matches!(self, Framework::HfTransformers | Framework::HfDeepSpeed)
    }

    /// A single process of this framework frees its gradients between steps (see
    /// [`crate::memory::stage_peak::grads_born_in_backward`]).
    pub fn frees_gradients_between_steps(self) -> bool {
        matches!(self, Framework::HfTransformers | Framework::Torchtune)
    }

    /// Stable identifier used in links and the CLI.
    pub fn id(self) -> &'static str {
        match self {
            Framework::Article => "article",
            Framework::MegatronCore => "megatron-core",
            Framework::Torchtitan => "torchtitan",
            Framework::DeepSpeed => "deepspeed",
            Framework::DeepSpeed2021 => "deepspeed-2021",
            Framework::HfTransformers => "hf",
            Framework::HfDeepSpeed => "hf-deepspeed",
            Framework::Torchtune => "torchtune",
        }
    }

    /// Parses [`Framework::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.id() == id)
    }

    /// Whether the framework can run `schedule` (the search proposes only what it can).
    pub fn runs_schedule(self, schedule: crate::input::layout::Schedule) -> bool {
        use crate::input::layout::Schedule;
        match self {
            // Megatron-LM megatron/core/pipeline_parallel/schedules.py get_forward_backward_func
            // (NVIDIA/Megatron-LM d98e8a64dd): 1F1B without or with interleaving, no zero
            // bubble, no GPipe.
            Framework::MegatronCore => {
                matches!(schedule, Schedule::OneFOneB | Schedule::Interleaved)
            }
            // DeepSpeed deepspeed/runtime/pipe/engine.py trains with schedule.TrainSchedule
            // (1F1B) only: no virtual stages, no zero bubble (deepspeedai/DeepSpeed edaa72212).
            Framework::DeepSpeed | Framework::DeepSpeed2021 | Framework::HfDeepSpeed => {
                schedule == Schedule::OneFOneB
            }
            // Transformers has no pipeline schedule of its own; a plain PyTorch loop runs one stage.
            Framework::HfTransformers => schedule == Schedule::OneFOneB,
            // torchtune's recipes run FSDP2 and TP, no pipeline schedule.
            Framework::Torchtune => schedule == Schedule::OneFOneB,
            // torch.distributed.pipelining (torchtitan's schedules) has ScheduleGPipe,
            // Schedule1F1B, ScheduleInterleaved1F1B and ScheduleInterleavedZeroBubble; the
            // article draws them all.
            Framework::Torchtitan | Framework::Article => true,
        }
    }

    /// Parameters per data-parallel gradient bucket when the framework sizes its buckets itself
    /// (`None`: the scenario's `gradient_bucket_bytes`, PyTorch DDP's `bucket_cap_mb`).
    /// Megatron-Core with `--ddp-bucket-size` unset: `ddp_config.bucket_size = max(40000000,
    /// 1000000 * get_data_parallel_world_size(with_context_parallel=True))` parameters
    /// (megatron/training/training.py `get_model`, megatron/core/distributed/
    /// distributed_data_parallel.py: "make buckets larger to ensure that chunks used in NCCL
    /// ring-reduce implementations are large enough to remain bandwidth-bound").
    pub fn dp_bucket_params(self, dp_cp: u32) -> Option<f64> {
        match self {
            Framework::MegatronCore => Some((1e6 * f64::from(dp_cp.max(1))).max(40e6)),
            Framework::Article
            | Framework::Torchtitan
            | Framework::DeepSpeed
            | Framework::DeepSpeed2021
            | Framework::HfTransformers
            | Framework::HfDeepSpeed
            | Framework::Torchtune => None,
        }
    }

    /// What the page says it used.
    pub fn label(self) -> &'static str {
        match self {
            Framework::Article => "the article's accounting (no framework transients)",
            Framework::MegatronCore => "Megatron-Core semantics",
            Framework::Torchtitan => "torchtitan semantics",
            Framework::DeepSpeed => "DeepSpeed ZeRO semantics (config.py defaults)",
            Framework::DeepSpeed2021 => {
                "DeepSpeed ZeRO semantics of 2021 (v0.3–v0.5.4: per-parameter list-form gathers)"
            }
            Framework::HfTransformers => "Hugging Face Transformers + PEFT semantics (eager)",
            Framework::HfDeepSpeed => "DeepSpeed ZeRO with Hugging Face Transformers model code",
            Framework::Torchtune => "torchtune recipe semantics (eager, chunked cross entropy)",
        }
    }
}
