#!/bin/sh
# Plan: Mixtral 8x7B (full fine-tuning) with TRL SFTTrainer, PEFT and Accelerate
set -eu
cat > accelerate.yaml <<'MESHPLAN_EOF'
# accelerate launch --config_file fsdp2.yaml --machine_rank $NODE_RANK <train-script.py>
compute_environment: LOCAL_MACHINE
debug: false
distributed_type: FSDP
downcast_bf16: 'no'
fsdp_config:
  fsdp_activation_checkpointing: true
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_cpu_ram_efficient_loading: true
  fsdp_offload_params: false
  # true frees gathered weights after forward (ZeRO-3); false keeps them for backward (ZeRO-2).
  fsdp_reshard_after_forward: false
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_transformer_layer_cls_to_wrap: MixtralDecoderLayer
  fsdp_version: 2
machine_rank: 0
main_process_ip: <head-node-address>
main_process_port: 29500
main_training_function: main
mixed_precision: bf16
num_machines: 4
num_processes: 32
rdzv_backend: c10d
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
MESHPLAN_EOF
cat > train_sft.py <<'MESHPLAN_EOF'
import torch
from datasets import load_dataset
from peft import IA3Config, LoraConfig, PromptTuningConfig
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
from trl import SFTConfig, SFTTrainer

model_kwargs = {"torch_dtype": torch.bfloat16}
model = AutoModelForCausalLM.from_pretrained("mistralai/Mixtral-8x7B-v0.1", **model_kwargs)
args = SFTConfig(output_dir="sft-output", run_name="meshplan: Mixtral 8x7B", max_length=4096, packing=False, per_device_train_batch_size=1, gradient_accumulation_steps=32, gradient_checkpointing=True, bf16=True, optim="adamw_torch_fused", num_train_epochs=1)
dataset = load_dataset("<dataset>", split="train")
SFTTrainer(model=model, args=args, train_dataset=dataset, peft_config=None).train()
MESHPLAN_EOF
accelerate launch --config_file accelerate.yaml --num_processes 32 train_sft.py

---- notes ----
- The plan uses TP 2, PP 2, EP 8; an Accelerate FSDP2 config has only data parallelism (no PP; TP and CP need Accelerate's ParallelismConfig in code). This file runs the DP part over all 32 GPUs, which is a different layout: use Megatron-LM or torchtitan for this plan.
- FSDP has no ZeRO-1 (optimizer-only sharding): this file uses the closest, fsdp_reshard_after_forward: false (ZeRO-2: gradients sharded too, so less memory than planned and the same traffic).
- Batch is set in the script: per-device batch 1, gradient accumulation 32 (global batch 256 = 1 × 32 × DP 8).
- Fill in the dataset (load_dataset) and, for a custom model, its Hugging Face id; learning rate and schedule are TRL's defaults.
