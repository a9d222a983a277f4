vllm serve mistralai/Mixtral-8x7B-v0.1 \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --max-model-len 32768 \
  --gpu-memory-utilization 0.9 \
  --max-num-seqs 64 \
  --dtype bfloat16 \
  --kv-cache-dtype fp8 \
  --quantization fp8

---- notes ----
- vLLM slices experts over TP by default; --enable-expert-parallel places whole experts instead (EP size = TP × DP).
- vLLM's --gpu-memory-utilization bounds weights, KV cache and activations together, like the plan's memory_utilization.
