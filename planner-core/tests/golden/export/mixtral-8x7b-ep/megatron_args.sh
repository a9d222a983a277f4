# Megatron-LM pretrain_gpt.py arguments for Mixtral 8x7B; DP = world / (TP × PP × CP) = 8.
MEGATRON_ARGS=(
  # Parallelism
  --tensor-model-parallel-size 2
  --pipeline-model-parallel-size 2
  --context-parallel-size 1
  --expert-model-parallel-size 8
  --expert-tensor-parallel-size 1
  --num-layers-per-virtual-pipeline-stage 8
  --sequence-parallel
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
  # Activation recomputation
  --recompute-granularity full
  --recompute-method uniform
  --recompute-num-layers 1
  # Batch
  --micro-batch-size 1
  --global-batch-size 256
  --seq-length 4096
  --max-position-embeddings 4096
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
  # Mixture of experts
  --num-experts 8
  --moe-router-topk 2
  --moe-ffn-hidden-size 14336
  --moe-token-dispatcher-type alltoall
  --moe-grouped-gemm
  # Precision
  --bf16
  # Tokenizer
  --tokenizer-type HuggingFaceTokenizer
  --tokenizer-model mistralai/Mixtral-8x7B-v0.1
)
# Data, tokenizer files, learning rate and iterations are not planned by meshplan.
DATA_AND_OPTIMIZER_ARGS=(--data-path "<data-prefix>" --lr "<lr>" --train-iters "<iters>")
export CUDA_DEVICE_MAX_CONNECTIONS=1
# HEAD_NODE_ADDR and JOB_ID as in launch.sh; run on every node.
TORCHRUN_ARGS=(--nnodes=4 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=$HEAD_NODE_ADDR:29500 --rdzv-id=$JOB_ID)
torchrun "${TORCHRUN_ARGS[@]}" pretrain_gpt.py "${MEGATRON_ARGS[@]}" "${DATA_AND_OPTIMIZER_ARGS[@]}"

---- notes ----
- RoPE base is not in meshplan's model: add --rotary-base from the model's config.json (rope_theta).
- Router details (score function, expert bias, group-limited routing, aux-loss coefficient) are not in meshplan's model: add the --moe-router-* flags from the model card.
- Megatron-LM keeps gradients in fp32 main-grad buffers (the 18 B/param recipe); this plan counts 2-byte gradients. Choose 'mixed-adam-fp32-grads' to plan for Megatron's memory.
- Megatron pads the vocabulary (32000) to a multiple of 128 × TP for the embedding split.
