# Megatron-LM pretrain_gpt.py arguments for Llama 3.1 8B; DP = world / (TP × PP × CP) = 1.
MEGATRON_ARGS=(
  # Parallelism
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 1
  --context-parallel-size 1
  # Activation recomputation
  --recompute-granularity full
  --recompute-method uniform
  --recompute-num-layers 1
  # Batch
  --micro-batch-size 1
  --global-batch-size 16
  --seq-length 2048
  --max-position-embeddings 2048
  # Model shape
  --num-layers 32
  --hidden-size 4096
  --ffn-hidden-size 14336
  --num-attention-heads 32
  --group-query-attention
  --num-query-groups 8
  --swiglu
  --normalization RMSNorm
  --position-embedding-type rope
  --untie-embeddings-and-output-weights
  --disable-bias-linear
  --attention-dropout 0.0
  --hidden-dropout 0.0
  # Precision
  --bf16
  # Tokenizer
  --tokenizer-type HuggingFaceTokenizer
  --tokenizer-model meta-llama/Llama-3.1-8B
)
# Data, tokenizer files, learning rate and iterations are not planned by meshplan.
DATA_AND_OPTIMIZER_ARGS=(--data-path "<data-prefix>" --lr "<lr>" --train-iters "<iters>")
TORCHRUN_ARGS=(--nnodes=1 --nproc-per-node=1 --standalone)
torchrun "${TORCHRUN_ARGS[@]}" pretrain_gpt.py "${MEGATRON_ARGS[@]}" "${DATA_AND_OPTIMIZER_ARGS[@]}"

---- notes ----
- RoPE base and scaling are not in meshplan's model: add --rotary-base 500000 --use-rope-scaling from the model's config.json (rope_theta).
- Megatron-LM keeps gradients in fp32 main-grad buffers (the 18 B/param recipe); this plan counts 2-byte gradients. Choose 'mixed-adam-fp32-grads' to plan for Megatron's memory.
- Megatron pads the vocabulary (128256) to a multiple of 128 × TP for the embedding split.
- pretrain_gpt.py has no LoRA; Megatron-Bridge does: ConfigContainer(peft=LoRA(target_modules=["linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"], dim=16, alpha=32, dropout=0.0)). Its fused linear_qkv and linear_fc1 take one adapter each, so q/k/v (and gate/up) cannot be targeted apart.
- Megatron has no NF4 base weights: QLoRA runs with PEFT and bitsandbytes, not Megatron.
