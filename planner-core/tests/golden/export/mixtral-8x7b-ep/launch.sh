# Mixtral 8x7B on 32 GPUs: DP 8 × TP 2 × PP 2 × CP 1 (EP 8 × expert-TP 1 folded over TP × CP × DP). Run on every node.
export HEAD_NODE_ADDR="<head-node-address>"
export JOB_ID="<unique-job-id>"
TRAIN_SCRIPT="<path/to/train.py>"
# Megatron/TE order TP communication behind compute only with one hardware queue.
export CUDA_DEVICE_MAX_CONNECTIONS=1
# Fewer allocator splits: the plan reserves 5% for fragmentation.
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
torchrun \
  --nnodes=4 \
  --nproc-per-node=8 \
  --rdzv-backend=c10d \
  --rdzv-endpoint=$HEAD_NODE_ADDR:29500 \
  --rdzv-id=$JOB_ID \
  "$TRAIN_SCRIPT" "$@"

---- notes ----
- torchrun only starts the processes; the parallel degrees come from the training script's own configuration (see the other exports).
