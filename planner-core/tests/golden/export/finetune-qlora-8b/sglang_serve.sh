python -m sglang.launch_server \
  --model-path meta-llama/Llama-3.1-8B \
  --tp-size 1 \
  --pp-size 1 \
  --context-length 32768 \
  --mem-fraction-static 0.9 \
  --max-running-requests 16 \
  --dtype bfloat16

---- notes ----
- SGLang's --mem-fraction-static covers weights and KV cache only; activations and CUDA graphs use the rest, so the same number leaves less headroom than in vLLM.
