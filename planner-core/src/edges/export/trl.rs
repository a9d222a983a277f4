//! TRL + PEFT under Accelerate: one shell script that writes the Accelerate config and a
//! `train_sft.py` (transformers `BitsAndBytesConfig`, PEFT `LoraConfig`, TRL `SFTConfig`),
//! then starts `accelerate launch`.
//!
//! Keys: trl/trainer/sft_config.py `SFTConfig` (`max_length`, `packing`; its
//! `gradient_checkpointing` and `bf16` default to True); transformers TrainingArguments
//! (`per_device_train_batch_size`, `gradient_accumulation_steps`, `optim`, `run_name`);
//! peft/src/peft/tuners/lora/config.py `LoraConfig` (`r`, `lora_alpha`, `lora_dropout`,
//! `target_modules`, `task_type`); transformers `BitsAndBytesConfig` (`load_in_4bit`,
//! `bnb_4bit_quant_type`, `bnb_4bit_use_double_quant`, `bnb_4bit_compute_dtype`,
//! `bnb_4bit_quant_storage`, which PEFT's docs/source/accelerate/fsdp.md sets to the
//! compute dtype so FSDP can shard the 4-bit weights).

use super::*;
use crate::base::free_text::python_string;
use crate::edges::finetune_export::peft_modules;
use crate::input::finetune::{FineTune, FineTuneMode, LoraTargets};

/// The heredoc delimiter: no generated line equals it (free text only reaches comments and
/// Python literals, each one line that starts with other characters).
const END: &str = "MESHPLAN_EOF";

/// transformers' `optim` name for the plan's optimizer (TrainingArguments `OptimizerNames`):
/// QLoRA's paged 32-bit AdamW (Dettmers et al. 2023), bitsandbytes' paged 8-bit AdamW for the
/// 8-bit recipe, fused torch AdamW otherwise.
fn optim(c: &Ctx) -> &'static str {
    match (c.s.precision.recipe, c.s.training.finetune.mode) {
        (PrecisionRecipe::Adam8Bit, _) => "paged_adamw_8bit",
        (_, FineTuneMode::Qlora) => "paged_adamw_32bit",
        (
            _,
            FineTuneMode::Full
            | FineTuneMode::Lora
            | FineTuneMode::Dora
            | FineTuneMode::LoraFa
            | FineTuneMode::Ia3
            | FineTuneMode::PromptTuning,
        ) => "adamw_torch_fused",
    }
}

fn python(c: &Ctx, out: &mut String, notes: &mut Vec<String>) {
    let s = c.s;
    let l = &s.layout;
    let ft = &s.training.finetune;
    let model_id = python_string(c.identity.hf_repo.unwrap_or("<hf-model-id>"));
    let _ = writeln!(out, "import torch");
    let _ = writeln!(out, "from datasets import load_dataset");
    let _ = writeln!(
        out,
        "from peft import IA3Config, LoraConfig, PromptTuningConfig"
    );
    let _ = writeln!(
        out,
        "from transformers import AutoModelForCausalLM, BitsAndBytesConfig"
    );
    let _ = writeln!(out, "from trl import SFTConfig, SFTTrainer");
    let _ = writeln!(out);
    let _ = writeln!(out, "model_kwargs = {{\"torch_dtype\": torch.bfloat16}}");
    if ft.mode == FineTuneMode::Qlora {
        let storage = if c.world > 1 {
            ", bnb_4bit_quant_storage=torch.bfloat16"
        } else {
            ""
        };
        let _ = writeln!(out, "model_kwargs[\"quantization_config\"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16{storage})");
    }
    let _ = writeln!(
        out,
        "model = AutoModelForCausalLM.from_pretrained({model_id}, **model_kwargs)"
    );
    let peft = match ft.adapters() {
        Some(_) => {
            let _ = writeln!(out, "peft_config = {}", peft_config(ft, notes));
            "peft_config"
        }
        None => "None",
    };
    let accumulation = match &c.accumulation {
        Ok(a) => *a,
        Err(why) => {
            notes.push(why.clone());
            1
        }
    };
    let py_bool = |b: bool| if b { "True" } else { "False" };
    let _ = writeln!(out, "args = SFTConfig(output_dir=\"sft-output\", run_name={}, max_length={}, packing={}, per_device_train_batch_size={}, gradient_accumulation_steps={accumulation}, gradient_checkpointing={}, bf16=True, optim={}, num_train_epochs=1)",
        python_string(&format!("meshplan: {}", c.name)),
        s.training.seq_len,
        py_bool(s.training.packing),
        l.micro_batch,
        py_bool(l.recompute == Recompute::Full),
        python_string(optim(c)),
    );
    let _ = writeln!(
        out,
        "dataset = load_dataset(\"<dataset>\", split=\"train\")"
    );
    let _ = writeln!(
        out,
        "SFTTrainer(model=model, args=args, train_dataset=dataset, peft_config={peft}).train()"
    );
}

/// The Accelerate config: the plan's FSDP2 file ([`super::accelerate`]) on several GPUs, one
/// process without distribution on one.
fn accelerate_config(c: &Ctx, out: &mut String, notes: &mut Vec<String>) {
    if c.world > 1 {
        let (yaml, more) = super::accelerate::accelerate(c);
        out.push_str(&yaml);
        notes.extend(more);
    } else {
        let _ = writeln!(out, "compute_environment: LOCAL_MACHINE");
        let _ = writeln!(out, "distributed_type: 'NO'");
        let _ = writeln!(out, "mixed_precision: bf16");
        let _ = writeln!(out, "num_machines: 1");
        let _ = writeln!(out, "num_processes: 1");
        let _ = writeln!(out, "use_cpu: false");
    }
}

/// The script: both files by quoted heredoc (nothing in them expands), then the launch.
pub(super) fn trl(c: &Ctx) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let mut out = String::new();
    let _ = writeln!(out, "#!/bin/sh");
    let _ = writeln!(
        out,
        "# Plan: {} ({}) with TRL SFTTrainer, PEFT and Accelerate",
        c.name,
        c.s.training.finetune.mode.label()
    );
    let _ = writeln!(out, "set -eu");
    let _ = writeln!(out, "cat > accelerate.yaml <<'{END}'");
    accelerate_config(c, &mut out, &mut notes);
    let _ = writeln!(out, "{END}");
    let _ = writeln!(out, "cat > train_sft.py <<'{END}'");
    python(c, &mut out, &mut notes);
    let _ = writeln!(out, "{END}");
    let _ = writeln!(
        out,
        "accelerate launch --config_file accelerate.yaml --num_processes {} train_sft.py",
        c.world
    );
    if c.s.layout.recompute == Recompute::Selective {
        notes.push(
            "Selective recompute is not a TRL switch: gradient_checkpointing recomputes whole layers."
                .to_string(),
        );
    }
    if !c.s.training.offload.is_none() && c.world == 1 {
        notes.push(format!(
            "{} on one GPU needs DeepSpeed under Accelerate (distributed_type: DEEPSPEED with the DeepSpeed export's config), not written here.",
            c.s.training.offload.label()
        ));
    }
    notes.push(
        "Fill in the dataset (load_dataset) and, for a custom model, its Hugging Face id; \
         learning rate and schedule are TRL's defaults."
            .to_string(),
    );
    (out, notes)
}

/// The PEFT config of the method (peft/tuners/lora/config.py `LoraConfig`, `use_dora`;
/// ia3/config.py `IA3Config`, `feedforward_modules`; prompt_tuning/config.py
/// `PromptTuningConfig`, `num_virtual_tokens`), one Python expression.
fn peft_config(ft: &FineTune, notes: &mut Vec<String>) -> String {
    let modules = |t: &LoraTargets| {
        peft_modules(t)
            .iter()
            .map(|m| python_string(m))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let l = &ft.lora;
    let lora = |extra: &str| {
        format!(
            "LoraConfig(r={}, lora_alpha={}, lora_dropout=0.0, target_modules=[{}]{extra}, task_type=\"CAUSAL_LM\")",
            l.rank,
            l.alpha,
            modules(&l.targets)
        )
    };
    match ft.mode {
        FineTuneMode::Full | FineTuneMode::Lora | FineTuneMode::Qlora => lora(""),
        FineTuneMode::Dora => lora(", use_dora=True"),
        FineTuneMode::LoraFa => {
            notes.push("LoRA-FA: build the optimizer with peft.optimizers.create_lorafa_optimizer(model, r, lora_alpha, lr) and pass it as SFTTrainer(optimizers=(optimizer, None)); it freezes lora_A.".to_string());
            lora("")
        }
        FineTuneMode::Ia3 => {
            let ff =
                LoraTargets::from_flags([false, false, false, false, false, false, l.targets.down]);
            format!(
                "IA3Config(target_modules=[{}], feedforward_modules=[{}], task_type=\"CAUSAL_LM\")",
                modules(&l.targets),
                modules(&ff)
            )
        }
        FineTuneMode::PromptTuning => format!(
            "PromptTuningConfig(num_virtual_tokens={}, task_type=\"CAUSAL_LM\")",
            ft.virtual_tokens
        ),
    }
}
