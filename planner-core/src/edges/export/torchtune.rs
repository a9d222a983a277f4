//! torchtune: a recipe config (YAML) for `tune run`, full or LoRA/QLoRA fine-tuning, one
//! device or distributed.
//!
//! Keys as torchtune's own configs write them: recipes/configs/llama3_1/8B_qlora_single_device.yaml
//! (model `lora_attn_modules`, `apply_lora_to_mlp`, `apply_lora_to_output`, `lora_rank`,
//! `lora_alpha`, `lora_dropout`; `tokenizer.max_seq_len`; `batch_size`;
//! `gradient_accumulation_steps`; `enable_activation_checkpointing`;
//! `enable_activation_offloading`; `dtype`), 8B_full_single_device.yaml (`dataset.packed`,
//! `bitsandbytes.optim.PagedAdamW8bit`, `LinearCrossEntropyLoss`) and 8B_lora.yaml
//! (`tune run --nproc_per_node N lora_finetune_distributed`).

use super::*;
use crate::base::free_text::yaml_string;
use crate::input::finetune::{FineTuneMode, LoraTargets};

/// torchtune's model family module and size of a Hugging Face checkpoint
/// (torchtune/models/llama3_1/_model_builders.py `llama3_1_8b`, `lora_llama3_1_8b`,
/// `qlora_llama3_1_8b`, ...; torchtune/models/mistral/_model_builders.py `mistral_7b`, ...),
/// with its tokenizer builder.
fn family(hf_repo: &str) -> Option<(&'static str, &'static str, &'static str)> {
    let llama = "torchtune.models.llama3.llama3_tokenizer";
    match hf_repo {
        "meta-llama/Llama-3.1-8B" => Some(("llama3_1", "8b", llama)),
        "meta-llama/Llama-3.1-70B" => Some(("llama3_1", "70b", llama)),
        "meta-llama/Llama-3.1-405B" => Some(("llama3_1", "405b", llama)),
        "mistralai/Mistral-7B-v0.1" => Some((
            "mistral",
            "7b",
            "torchtune.models.mistral.mistral_tokenizer",
        )),
        _ => None,
    }
}

/// The recipe `tune run` starts: full or LoRA (QLoRA is LoRA with a `qlora_` model builder),
/// one device or distributed.
fn recipe(mode: FineTuneMode, world: u64) -> &'static str {
    let one = world <= 1;
    match mode {
        FineTuneMode::Full if one => "full_finetune_single_device",
        FineTuneMode::Full => "full_finetune_distributed",
        // DoRA is LoRA with `use_dora` in torchtune's builders; the other PEFT methods have no
        // torchtune recipe and are exported as LoRA, with a note.
        _ if one => "lora_finetune_single_device",
        _ => "lora_finetune_distributed",
    }
}

/// The model builder's component path, or a placeholder (and a note) for other models.
fn builder(c: &Ctx, mode: FineTuneMode, notes: &mut Vec<String>) -> (String, String) {
    let found = c.identity.hf_repo.and_then(family);
    let Some((module, size, tokenizer)) = found else {
        notes.push(
            "torchtune has no model builder known to meshplan for this model: fill in \
             model._component_ and tokenizer._component_ (torchtune/models/<family>/_model_builders.py)."
                .to_string(),
        );
        return (
            yaml_string("<torchtune model builder>"),
            yaml_string("<torchtune tokenizer builder>"),
        );
    };
    let prefix = match mode {
        FineTuneMode::Full => "",
        FineTuneMode::Qlora => "qlora_",
        FineTuneMode::Lora | FineTuneMode::Dora => "lora_",
        FineTuneMode::LoraFa | FineTuneMode::Ia3 | FineTuneMode::PromptTuning => {
            notes.push(format!(
                "torchtune has no {} recipe: this config trains LoRA with the same rank and targets.",
                mode.label()
            ));
            "lora_"
        }
    };
    (
        format!("torchtune.models.{module}.{prefix}{module}_{size}"),
        tokenizer.to_string(),
    )
}

/// The model block's adapter keys. torchtune names attention modules `q_proj`, `k_proj`,
/// `v_proj`, `output_proj` (torchtune/modules/peft/lora.py LORA_ATTN_MODULES) and adapts the
/// MLP's three linears together (`apply_lora_to_mlp`).
fn lora_keys(out: &mut String, t: &LoraTargets, rank: u32, alpha: u32, notes: &mut Vec<String>) {
    let attn: Vec<&str> = [
        (t.q, "'q_proj'"),
        (t.k, "'k_proj'"),
        (t.v, "'v_proj'"),
        (t.o, "'output_proj'"),
    ]
    .into_iter()
    .filter_map(|(on, n)| on.then_some(n))
    .collect();
    let mlp = [t.gate, t.up, t.down];
    let all_mlp = mlp.iter().all(|&b| b);
    if mlp.iter().any(|&b| b) && !all_mlp {
        notes.push(format!(
            "torchtune adapts the MLP's gate, up and down projections together \
             (apply_lora_to_mlp): the plan's {} cannot be expressed; this file adapts all three.",
            t.to_list()
        ));
    }
    let _ = writeln!(out, "  lora_attn_modules: [{}]", attn.join(", "));
    let mlp_on = if mlp.iter().any(|&b| b) {
        "True"
    } else {
        "False"
    };
    let _ = writeln!(out, "  apply_lora_to_mlp: {mlp_on}");
    let _ = writeln!(out, "  apply_lora_to_output: False");
    let _ = writeln!(out, "  lora_rank: {rank}");
    let _ = writeln!(out, "  lora_alpha: {alpha}");
    let _ = writeln!(out, "  lora_dropout: 0.0");
}

/// The optimizer block: bitsandbytes' paged 8-bit AdamW for the 8-bit recipe (torchtune's
/// 8B_full_single_device.yaml), `torch.optim.AdamW` otherwise.
fn optimizer(out: &mut String, c: &Ctx, notes: &mut Vec<String>) {
    let _ = writeln!(out, "optimizer:");
    if c.s.precision.recipe == PrecisionRecipe::Adam8Bit {
        let _ = writeln!(out, "  _component_: bitsandbytes.optim.PagedAdamW8bit");
    } else {
        let _ = writeln!(out, "  _component_: torch.optim.AdamW");
        let _ = writeln!(out, "  fused: True");
        if !matches!(
            c.s.precision.recipe,
            PrecisionRecipe::MixedAdam | PrecisionRecipe::MixedAdamFp32Grads
        ) {
            c.precision_notes(notes, "torchtune");
        }
    }
    let _ = writeln!(out, "  lr: {}", yaml_string("<learning-rate>"));
}

/// The torchtune recipe config of the plan and the `tune run` line in its first comment.
pub(super) fn torchtune(c: &Ctx) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let l = &c.s.layout;
    let ft = &c.s.training.finetune;
    let recipe = recipe(ft.mode, c.world);
    let nproc = if c.world > 1 {
        format!("--nproc_per_node {} ", c.world)
    } else {
        String::new()
    };
    let mp = c.model_parallel();
    if !mp.is_empty() {
        notes.push(format!(
            "torchtune's recipes shard with FSDP2 only: the plan's {} is not expressed.",
            mp.join(", ")
        ));
    }
    if c.world > 1 && l.zero != ZeroStage::Zero3 {
        notes.push(format!(
            "torchtune's distributed recipes always shard parameters (FSDP2, ZeRO-3); the plan's {} is not a setting.",
            l.zero.label()
        ));
    }
    if !c.s.training.offload.is_none() {
        notes.push(format!(
            "{} is not written: torchtune's enable_activation_offloading moves activations, not optimizer state.",
            c.s.training.offload.label()
        ));
    }
    let mut out = String::new();
    let _ = writeln!(out, "# Plan: {} ({})", c.name, ft.mode.label());
    let _ = writeln!(out, "# tune run {nproc}{recipe} --config torchtune.yaml");
    let _ = writeln!(out, "output_dir: /tmp/torchtune/meshplan");
    let (model, tokenizer) = builder(c, ft.mode, &mut notes);
    let _ = writeln!(out, "model:");
    let _ = writeln!(out, "  _component_: {model}");
    if let Some(lora) = ft.adapters() {
        lora_keys(&mut out, &lora.targets, lora.rank, lora.alpha, &mut notes);
        if ft.mode == FineTuneMode::Dora {
            // torchtune/models/llama3_1/_model_builders.py lora_llama3_1_*: `use_dora` (DoRALinear).
            let _ = writeln!(out, "  use_dora: True");
        }
    }
    let _ = writeln!(out, "tokenizer:");
    let _ = writeln!(out, "  _component_: {tokenizer}");
    let _ = writeln!(out, "  path: {}", yaml_string("<tokenizer.model path>"));
    let _ = writeln!(out, "  max_seq_len: {}", c.s.training.seq_len);
    let _ = writeln!(out, "checkpointer:");
    let _ = writeln!(
        out,
        "  _component_: torchtune.training.FullModelHFCheckpointer"
    );
    let _ = writeln!(out, "  checkpoint_dir: {}", yaml_string("<checkpoint dir>"));
    let _ = writeln!(
        out,
        "  checkpoint_files: {}",
        yaml_string("<safetensors files>")
    );
    let _ = writeln!(out, "  output_dir: ${{output_dir}}");
    let _ = writeln!(
        out,
        "  model_type: {}",
        yaml_string("<LLAMA3 | MISTRAL | ...>")
    );
    let _ = writeln!(out, "dataset:");
    let _ = writeln!(
        out,
        "  _component_: {}",
        yaml_string("<torchtune dataset builder>")
    );
    let packed = if c.s.training.packing {
        "True"
    } else {
        "False"
    };
    let _ = writeln!(out, "  packed: {packed}");
    let _ = writeln!(out, "shuffle: True");
    let _ = writeln!(out, "batch_size: {}", l.micro_batch);
    match &c.accumulation {
        Ok(a) => {
            let _ = writeln!(out, "gradient_accumulation_steps: {a}");
        }
        Err(why) => notes.push(why.clone()),
    }
    optimizer(&mut out, c, &mut notes);
    let _ = writeln!(out, "loss:");
    let _ = writeln!(
        out,
        "  _component_: torchtune.modules.loss.LinearCrossEntropyLoss"
    );
    let _ = writeln!(out, "epochs: 1");
    let _ = writeln!(out, "device: cuda");
    let _ = writeln!(out, "dtype: bf16");
    let checkpointing = if l.recompute == Recompute::Full {
        "True"
    } else {
        "False"
    };
    let _ = writeln!(out, "enable_activation_checkpointing: {checkpointing}");
    let _ = writeln!(out, "enable_activation_offloading: False");
    if l.recompute == Recompute::Selective {
        notes.push(
            "Selective recompute is not a torchtune switch: enable_activation_checkpointing \
             recomputes whole layers."
                .to_string(),
        );
    }
    notes.push(
        "Fill in the tokenizer path, checkpoint directory and files, model_type, dataset \
         builder and learning rate (the \"<...>\" values)."
            .to_string(),
    );
    (out, notes)
}
