vllm serve meta-llama/Llama-3.1-8B \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --max-model-len 32768 \
  --gpu-memory-utilization 0.9 \
  --max-num-seqs 16 \
  --dtype bfloat16

---- notes ----
- vLLM's --gpu-memory-utilization bounds weights, KV cache and activations together, like the plan's memory_utilization.
