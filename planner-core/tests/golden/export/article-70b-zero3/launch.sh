# 70B model (article) on 64 GPUs: DP 64 × TP 1 × PP 1 × CP 1. Run on every node.
export HEAD_NODE_ADDR="<head-node-address>"
export JOB_ID="<unique-job-id>"
TRAIN_SCRIPT="<path/to/train.py>"
# Fewer allocator splits: the plan reserves 5% for fragmentation.
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
torchrun \
  --nnodes=8 \
  --nproc-per-node=8 \
  --rdzv-backend=c10d \
  --rdzv-endpoint=$HEAD_NODE_ADDR:29500 \
  --rdzv-id=$JOB_ID \
  "$TRAIN_SCRIPT" "$@"

---- notes ----
- Custom model '70B model (article)' has the shapes of preset 'llama-3.1-70b'; its Hugging Face repo and layer class are used. Change them if your checkpoint differs.
- torchrun only starts the processes; the parallel degrees come from the training script's own configuration (see the other exports).
