# Megatron-LM pretrain_gpt.py arguments for 70B model (article); DP = world / (TP × PP × CP) = 64.
MEGATRON_ARGS=(
  # Parallelism
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 1
  --context-parallel-size 1
  --overlap-grad-reduce
  # Batch
  --micro-batch-size 1
  --global-batch-size 512
  --seq-length 4096
  --max-position-embeddings 4096
  # Model shape
  --num-layers 80
  --hidden-size 8192
  --ffn-hidden-size 28672
  --num-attention-heads 64
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
  --tokenizer-model meta-llama/Llama-3.1-70B
)
# Data, tokenizer files, learning rate and iterations are not planned by meshplan.
DATA_AND_OPTIMIZER_ARGS=(--data-path "<data-prefix>" --lr "<lr>" --train-iters "<iters>")
# HEAD_NODE_ADDR and JOB_ID as in launch.sh; run on every node.
TORCHRUN_ARGS=(--nnodes=8 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=$HEAD_NODE_ADDR:29500 --rdzv-id=$JOB_ID)
torchrun "${TORCHRUN_ARGS[@]}" pretrain_gpt.py "${MEGATRON_ARGS[@]}" "${DATA_AND_OPTIMIZER_ARGS[@]}"

---- notes ----
- Custom model '70B model (article)' has the shapes of preset 'llama-3.1-70b'; its Hugging Face repo and layer class are used. Change them if your checkpoint differs.
- RoPE base and scaling are not in meshplan's model: add --rotary-base 500000 --use-rope-scaling from the model's config.json (rope_theta).
- Megatron-LM keeps gradients in fp32 main-grad buffers (the 18 B/param recipe); this plan counts 2-byte gradients. Choose 'mixed-adam-fp32-grads' to plan for Megatron's memory.
- Megatron pads the vocabulary (128256) to a multiple of 128 × TP for the embedding split.
