# Llama 3.1 8B on 1 GPUs: DP 1 × TP 1 × PP 1 × CP 1. Run on every node.
TRAIN_SCRIPT="<path/to/train.py>"
# Fewer allocator splits: the plan reserves 7% for fragmentation.
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
torchrun \
  --nnodes=1 \
  --nproc-per-node=1 \
  --standalone \
  "$TRAIN_SCRIPT" "$@"

---- notes ----
- torchrun only starts the processes; the parallel degrees come from the training script's own configuration (see the other exports).
- torchrun has no LoRA/QLoRA setting: load the model with BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16), peft.prepare_model_for_kbit_training(model) and optim="paged_adamw_32bit" and wrap it with peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]) in the training script.
