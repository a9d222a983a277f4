#!/bin/sh
# Plan: Llama 3.1 70B (full fine-tuning) with TRL SFTTrainer, PEFT and Accelerate
set -eu
cat > accelerate.yaml <<'MESHPLAN_EOF'
# accelerate launch --config_file fsdp2.yaml --machine_rank $NODE_RANK <train-script.py>
compute_environment: LOCAL_MACHINE
debug: false
distributed_type: FSDP
downcast_bf16: 'no'
fsdp_config:
  fsdp_activation_checkpointing: false
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_cpu_ram_efficient_loading: true
  fsdp_offload_params: false
  # true frees gathered weights after forward (ZeRO-3); false keeps them for backward (ZeRO-2).
  fsdp_reshard_after_forward: false
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
  fsdp_version: 2
machine_rank: 0
main_process_ip: <head-node-address>
main_process_port: 29500
main_training_function: main
mixed_precision: bf16
num_machines: 64
num_processes: 512
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
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-70B", **model_kwargs)
args = SFTConfig(output_dir="sft-output", run_name="meshplan: Llama 3.1 70B", max_length=32768, packing=False, per_device_train_batch_size=1, gradient_accumulation_steps=16, gradient_checkpointing=False, bf16=True, optim="adamw_torch_fused", num_train_epochs=1)
dataset = load_dataset("<dataset>", split="train")
SFTTrainer(model=model, args=args, train_dataset=dataset, peft_config=None).train()
MESHPLAN_EOF
accelerate launch --config_file accelerate.yaml --num_processes 512 train_sft.py

---- notes ----
- The plan uses TP 8, PP 4, CP 4; an Accelerate FSDP2 config has only data parallelism (no PP; TP and CP need Accelerate's ParallelismConfig in code). This file runs the DP part over all 512 GPUs, which is a different layout: use Megatron-LM or torchtitan for this plan.
- FSDP has no ZeRO-1 (optimizer-only sharding): this file uses the closest, fsdp_reshard_after_forward: false (ZeRO-2: gradients sharded too, so less memory than planned and the same traffic).
- Selective recompute has no Accelerate switch (fsdp_activation_checkpointing recomputes whole layers); with flash attention the attention scores are not saved anyway.
- Batch is set in the script: per-device batch 1, gradient accumulation 16 (global batch 64 = 1 × 16 × DP 4).
- Selective recompute is not a TRL switch: gradient_checkpointing recomputes whole layers.
- Fill in the dataset (load_dataset) and, for a custom model, its Hugging Face id; learning rate and schedule are TRL's defaults.
