# Megatron-LM pretrain_gpt.py arguments for Llama 3.1 70B; DP = world / (TP × PP × CP) = 4.
MEGATRON_ARGS=(
  # Parallelism
  --tensor-model-parallel-size 8
  --pipeline-model-parallel-size 4
  --context-parallel-size 4
  --sequence-parallel
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
  # Activation recomputation
  --recompute-granularity selective
  # Batch
  --micro-batch-size 1
  --global-batch-size 64
  --seq-length 32768
  --max-position-embeddings 32768
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
export CUDA_DEVICE_MAX_CONNECTIONS=1
# HEAD_NODE_ADDR and JOB_ID as in launch.sh; run on every node.
TORCHRUN_ARGS=(--nnodes=64 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=$HEAD_NODE_ADDR:29500 --rdzv-id=$JOB_ID)
torchrun "${TORCHRUN_ARGS[@]}" pretrain_gpt.py "${MEGATRON_ARGS[@]}" "${DATA_AND_OPTIMIZER_ARGS[@]}"

---- notes ----
- RoPE base and scaling are not in meshplan's model: add --rotary-base 500000 --use-rope-scaling from the model's config.json (rope_theta).
- Megatron-LM keeps gradients in fp32 main-grad buffers (the 18 B/param recipe); this plan counts 2-byte gradients. Choose 'mixed-adam-fp32-grads' to plan for Megatron's memory.
- Megatron pads the vocabulary (128256) to a multiple of 128 × TP for the embedding split.
