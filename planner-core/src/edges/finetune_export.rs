//! What each export says about LoRA and QLoRA: PEFT `LoraConfig` /
//! `BitsAndBytesConfig`, Megatron-Bridge `peft=LoRA(...)`, torchtitan's `lora.py`.

use crate::edges::export::ExportFormat;
use crate::input::finetune::*;

// ---------------------------------------------------------------------------
// Exports.

/// PEFT module names of the targets, Llama-style (`q_proj` … `down_proj`).
pub(crate) fn peft_modules(t: &LoraTargets) -> Vec<&'static str> {
    LoraTargets::PEFT_NAMES
        .into_iter()
        .zip(t.flags())
        .filter(|(_, on)| *on)
        .map(|(n, _)| n)
        .collect()
}

/// Megatron-Core module names of the targets: q, k and v share the fused `linear_qkv`,
/// gate and up the fused `linear_fc1` (megatron/core/transformer/attention.py, mlp.py).
fn megatron_modules(t: &LoraTargets) -> Vec<&'static str> {
    let mut m = Vec::new();
    if t.q || t.k || t.v {
        m.push("linear_qkv");
    }
    if t.o {
        m.push("linear_proj");
    }
    if t.gate || t.up {
        m.push("linear_fc1");
    }
    if t.down {
        m.push("linear_fc2");
    }
    m
}

fn quoted(list: &[&str]) -> String {
    let items: Vec<String> = list.iter().map(|m| format!("\"{m}\"")).collect();
    format!("[{}]", items.join(", "))
}

/// Notes an export adds for LoRA/QLoRA; empty under full fine-tuning and for the
/// serving exports. Only fixed names and numbers appear in them.
pub fn export_notes(tool: ExportFormat, finetune: &FineTune) -> Vec<String> {
    let Some(lora) = finetune.adapters() else {
        return Vec::new();
    };
    let qlora = finetune.mode == FineTuneMode::Qlora;
    let (r, alpha) = (lora.rank, lora.alpha);
    // PEFT LoraConfig (peft/src/peft/tuners/lora/config.py) and transformers'
    // BitsAndBytesConfig; the QLoRA paper's optimizer is paged 32-bit AdamW (`paged_adamw_32bit`).
    let peft = format!(
        "peft.LoraConfig(r={r}, lora_alpha={alpha}, lora_dropout=0.0, target_modules={})",
        quoted(&peft_modules(&lora.targets))
    );
    let bnb = "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16), peft.prepare_model_for_kbit_training(model) and optim=\"paged_adamw_32bit\"";
    let script = |what: &str| {
        if qlora {
            format!("{what} has no LoRA/QLoRA setting: load the model with {bnb} and wrap it with {peft} in the training script.")
        } else {
            format!(
                "{what} has no LoRA setting: wrap the model with {peft} in the training script."
            )
        }
    };
    match tool {
        ExportFormat::Torchrun => vec![script("torchrun")],
        ExportFormat::Accelerate => vec![script("Accelerate's config")],
        ExportFormat::Deepspeed => vec![script("The DeepSpeed config")],
        // Megatron-Bridge docs/training/peft.md: ConfigContainer(peft=LoRA(target_modules=[...], dim, alpha, dropout)).
        ExportFormat::Megatron => {
            let mut n = vec![format!(
                "pretrain_gpt.py has no LoRA; Megatron-Bridge does: ConfigContainer(peft=LoRA(target_modules={}, dim={r}, alpha={alpha}, dropout=0.0)). Its fused linear_qkv and linear_fc1 take one adapter each, so q/k/v (and gate/up) cannot be targeted apart.",
                quoted(&megatron_modules(&lora.targets))
            )];
            if qlora {
                n.push("Megatron has no NF4 base weights: QLoRA runs with PEFT and bitsandbytes, not Megatron.".to_string());
            }
            n
        }
        // torchtitan/components/lora.py: LoRAConverter(rank, alpha) wraps every nn.Linear.
        ExportFormat::Torchtitan => {
            let mut n = vec![format!(
                "torchtitan's LoRA converter (torchtitan/components/lora.py, rank = {r}, alpha = {alpha}) adapts every nn.Linear, the output layer included: it cannot target {} only.",
                lora.targets.to_list()
            )];
            if qlora {
                n.push(
                    "torchtitan has no NF4 base weights: QLoRA runs with PEFT and bitsandbytes."
                        .to_string(),
                );
            }
            n
        }
        // Both write the adapters themselves (torchtune's model builder keys; PEFT's LoraConfig).
        ExportFormat::Torchtune | ExportFormat::Trl => Vec::new(),
        ExportFormat::Vllm | ExportFormat::Sglang => Vec::new(),
    }
}
