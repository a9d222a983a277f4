vllm serve meta-llama/Llama-3.1-70B \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --max-model-len 32768 \
  --gpu-memory-utilization 0.9 \
  --max-num-seqs 16 \
  --dtype bfloat16

---- notes ----
- Custom model '70B model (article)' has the shapes of preset 'llama-3.1-70b'; its Hugging Face repo and layer class are used. Change them if your checkpoint differs.
- vLLM's --gpu-memory-utilization bounds weights, KV cache and activations together, like the plan's memory_utilization.
