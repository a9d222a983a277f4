python -m sglang.launch_server \
  --model-path mistralai/Mixtral-8x7B-v0.1 \
  --tp-size 4 \
  --pp-size 1 \
  --context-length 32768 \
  --mem-fraction-static 0.9 \
  --max-running-requests 64 \
  --dtype bfloat16 \
  --kv-cache-dtype fp8_e4m3 \
  --quantization fp8

---- notes ----
- SGLang slices experts over TP by default; --ep-size places whole experts instead.
- SGLang's --mem-fraction-static covers weights and KV cache only; activations and CUDA graphs use the rest, so the same number leaves less headroom than in vLLM.
