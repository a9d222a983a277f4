#!/bin/sh
# Plan: Llama 3.1 8B (QLoRA (NF4 base)) with TRL SFTTrainer, PEFT and Accelerate
set -eu
cat > accelerate.yaml <<'MESHPLAN_EOF'
compute_environment: LOCAL_MACHINE
distributed_type: 'NO'
mixed_precision: bf16
num_machines: 1
num_processes: 1
use_cpu: false
MESHPLAN_EOF
cat > train_sft.py <<'MESHPLAN_EOF'
import torch
from datasets import load_dataset
from peft import IA3Config, LoraConfig, PromptTuningConfig
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
from trl import SFTConfig, SFTTrainer

model_kwargs = {"torch_dtype": torch.bfloat16}
model_kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B", **model_kwargs)
peft_config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], task_type="CAUSAL_LM")
args = SFTConfig(output_dir="sft-output", run_name="meshplan: Llama 3.1 8B", max_length=2048, packing=True, per_device_train_batch_size=1, gradient_accumulation_steps=16, gradient_checkpointing=True, bf16=True, optim="paged_adamw_32bit", num_train_epochs=1)
dataset = load_dataset("<dataset>", split="train")
SFTTrainer(model=model, args=args, train_dataset=dataset, peft_config=peft_config).train()
MESHPLAN_EOF
accelerate launch --config_file accelerate.yaml --num_processes 1 train_sft.py

---- notes ----
- Fill in the dataset (load_dataset) and, for a custom model, its Hugging Face id; learning rate and schedule are TRL's defaults.
