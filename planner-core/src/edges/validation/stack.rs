//! A memory row's training stack as scenario choices: the framework whose semantics it runs
//! (`framework`), the fine-tuning method and its adapter settings (`finetune`, `lora_*`,
//! `virtual_tokens`), the optimizer (`optimizer`), offload (`offload`) and ZeRO++ (`zeropp`).
//! A value the model cannot express makes the row not representable, with the reason.

use crate::input::finetune::{FineTune, FineTuneMode, LoraTargets};
use crate::input::framework::Framework;
use crate::input::offload::Offload;
use crate::input::precision::PrecisionRecipe;

use super::dataset::PublishedRun;

/// What a row's stack fields set in its scenario.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RowStack {
    /// The framework, when the row names one.
    pub framework: Option<Framework>,
    /// The fine-tuning method and settings.
    pub finetune: FineTune,
    /// Offload.
    pub offload: Offload,
    /// A precision recipe the optimizer implies, when it implies one.
    pub recipe: Option<PrecisionRecipe>,
}

/// The framework a row's `framework` text names. DeepSpeed runs driven through Transformers'
/// model code (the Trainer's or Accelerate's integration, a script calling
/// `deepspeed.initialize` on a `transformers` model) follow both semantics.
pub(super) fn framework_named(text: &str) -> Result<Framework, String> {
    let t = text.to_ascii_lowercase();
    let hf = ["transformers", "peft", "trl", "accelerate", "hf "]
        .iter()
        .any(|k| t.contains(k))
        || t.starts_with("hf");
    if t.contains("deepspeed") {
        return Ok(if hf {
            Framework::HfDeepSpeed
        } else {
            Framework::DeepSpeed
        });
    }
    if t.contains("torchtune") {
        return Ok(Framework::Torchtune);
    }
    if hf {
        return Ok(Framework::HfTransformers);
    }
    if t.contains("torchtitan") {
        return Ok(Framework::Torchtitan);
    }
    if t.contains("megatron") || t.contains("nemo") {
        return Ok(Framework::MegatronCore);
    }
    Err(format!(
        "framework '{}' is not one whose memory semantics meshplan models (Transformers/TRL/PEFT, DeepSpeed, torchtitan, Megatron-Core)",
        crate::base::free_text::one_line(text)
    ))
}

/// PEFT module names (`q_proj`, …, `all-linear`) as targets.
fn targets_named(list: &str) -> Result<LoraTargets, String> {
    const PEFT: [&str; 7] = LoraTargets::PEFT_NAMES;
    if list.trim() == "all-linear" {
        return Ok(LoraTargets::from_flags([true; 7]));
    }
    let mut flags = [false; 7];
    for name in list.split(',').map(str::trim) {
        let Some(i) = PEFT.iter().position(|n| *n == name) else {
            return Err(format!(
                "lora_targets: '{}' is not a module meshplan models (known: {}, all-linear)",
                crate::base::free_text::one_line(name),
                PEFT.join(", ")
            ));
        };
        flags[i] = true;
    }
    Ok(LoraTargets::from_flags(flags))
}

/// The method and its settings; PEFT's defaults where the row is silent (listed in `defaults`).
fn finetune_of(run: &PublishedRun, defaults: &mut Vec<String>) -> Result<FineTune, String> {
    let mut ft = FineTune::default();
    let Some(name) = run.finetune.as_deref() else {
        return Ok(ft);
    };
    ft.mode = FineTuneMode::from_id(name).ok_or_else(|| {
        format!(
            "finetune '{}' is not a method meshplan models (known: {})",
            crate::base::free_text::one_line(name),
            FineTuneMode::ALL.map(FineTuneMode::id).join(", ")
        )
    })?;
    if let Some(r) = run.lora_rank {
        ft.lora.rank = r;
    } else if ft.mode.uses_rank() {
        // peft/tuners/lora/config.py LoraConfig: `r: int = 8`.
        defaults.push("lora_rank not stated: 8 (PEFT LoraConfig default)".to_string());
        ft.lora.rank = 8;
    }
    if let Some(a) = run.lora_alpha {
        ft.lora.alpha = a;
    }
    ft.lora.targets = match (&run.lora_targets, ft.mode) {
        (Some(list), _) => targets_named(list)?,
        // peft/utils/constants.py TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING["llama"].
        (None, FineTuneMode::Ia3) => {
            defaults.push(
                "IA3 targets not stated: k_proj, v_proj, down_proj (PEFT's Llama default)"
                    .to_string(),
            );
            targets_named("k_proj,v_proj,down_proj")?
        }
        // constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING["llama"].
        (None, m) if m.uses_rank() => {
            defaults
                .push("lora_targets not stated: q_proj, v_proj (PEFT's Llama default)".to_string());
            targets_named("q_proj,v_proj")?
        }
        (None, _) => ft.lora.targets,
    };
    if ft.mode == FineTuneMode::PromptTuning {
        match run.virtual_tokens {
            Some(n) => ft.virtual_tokens = n,
            None => defaults.push(format!(
                "virtual_tokens not stated: {}",
                crate::input::finetune::DEFAULT_VIRTUAL_TOKENS
            )),
        }
    }
    Ok(ft)
}

/// The recipe an optimizer name implies; `None` keeps the row's precision recipe.
fn recipe_of(run: &PublishedRun) -> Result<Option<PrecisionRecipe>, String> {
    match run.optimizer.as_deref() {
        None | Some("adamw") | Some("adam") | Some("lora-fa") => Ok(None),
        // bitsandbytes AdamW8bit / PagedAdamW8bit: two 1-byte moments per parameter.
        Some("adamw-8bit") | Some("paged-adamw-8bit") => Ok(Some(PrecisionRecipe::Adam8Bit)),
        Some(other) => Err(format!(
            "optimizer '{}' is not one meshplan models (adamw, lora-fa, adamw-8bit, paged-adamw-8bit)",
            crate::base::free_text::one_line(other)
        )),
    }
}

/// DeepSpeed's offload as the row names it.
fn offload_of(run: &PublishedRun) -> Result<Offload, String> {
    match run.offload.as_deref() {
        None => Ok(Offload::None),
        Some("optimizer-cpu") => Ok(Offload::OptimizerCpu),
        Some("optimizer+params-cpu") => Ok(Offload::OptimizerParamsCpu),
        Some(other) => Err(format!(
            "offload '{}' is not one meshplan models (optimizer-cpu, optimizer+params-cpu)",
            crate::base::free_text::one_line(other)
        )),
    }
}

/// The row's stack, or why the model cannot express it.
pub(super) fn row_stack(
    run: &PublishedRun,
    defaults: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<RowStack, String> {
    let framework = run.framework.as_deref().map(framework_named).transpose()?;
    let finetune = finetune_of(run, defaults)?;
    let offload = offload_of(run)?;
    if run.zeropp == Some(true) {
        // deepspeed/runtime/zero/partition_parameters.py `_partition_param_sec`: hpZ's secondary
        // partition is allocated on `remote_device`, the CPU under parameter offload; qwZ and
        // qgZ quantize the collectives' transients only.
        if offload != Offload::OptimizerParamsCpu {
            return Err("zeropp without parameter offload: hpZ's secondary partition on the GPU is not modelled".to_string());
        }
        notes.push("ZeRO++ on: hpZ's secondary partition lives on the CPU under parameter offload, qwZ/qgZ buffers are transient: no GPU memory term".to_string());
    }
    Ok(RowStack {
        framework,
        finetune,
        offload,
        recipe: recipe_of(run)?,
    })
}
