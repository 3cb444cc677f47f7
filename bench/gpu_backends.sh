#!/usr/bin/env bash
# GPU machine: samples/s of the HF qwen2_audio adapter vs the vllm adapter on the full-size
# Qwen2-Audio-7B architecture (random bf16 weights, config written locally, nothing downloaded but
# PyPI packages), on the embedded PALM recognition test split, and their output agreement.
#
#   bash bench/gpu_backends.sh                  # WORK=/tmp/lalm-gpu-bench, all 408 test docs
#   N=64 TOKENS=32 bash bench/gpu_backends.sh   # a quicker run
#
# Needs: an NVIDIA GPU with >= 40 GB (the 7B in bf16 is 17 GB; the HF adapter's batch_size=auto
# halves itself on OOM), ~40 GB of disk under WORK (venv ~10 GB + weights 17 GB), Python >= 3.10,
# and PyPI: it installs PyPI's `vllm` (CUDA build, with its torch) and the project into its own venv
# through scripts/install_vllm.sh (VLLM_PACKAGE=vllm). Prints the table; writes WORK/gpu_backends.json.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-/tmp/lalm-gpu-bench}
mkdir -p "$WORK"
export VLLM_VENV=${VLLM_VENV:-$WORK/venv}
export VLLM_PACKAGE=${VLLM_PACKAGE:-vllm}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
start=$(date +%s)
bash scripts/install_vllm.sh
echo "gpu_backends.sh: environment ready in $(( $(date +%s) - start ))s"
"$VLLM_VENV/bin/python" bench/gpu_backends.py --work "$WORK" --n "${N:-0}" --tokens "${TOKENS:-0}" \
    --hf_batch_size "${HF_BATCH_SIZE:-auto}" --gpu_memory_utilization "${GPU_MEMORY_UTILIZATION:-0.85}"
echo "gpu_backends.sh: done in $(( $(date +%s) - start ))s"
