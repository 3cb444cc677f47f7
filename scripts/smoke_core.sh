#!/usr/bin/env bash
# The core install as a user makes it, checked end to end (CI's first stage):
#   scripts/install.sh with LALM_EXTRAS= (pip install -e . alone: no extra, no manual pin) into
#   $LALM_VENV (default .venv), then in that environment: `lalm-eval doctor` (exit 0),
#   `lalm-eval doctor --model vllm` (exit 1: no vLLM in the core), `palm-bench build --preset
#   small`, and the tiny random-weight Qwen2-Audio on palm_recognition (--limit 4).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
BIN=$(LALM_EXTRAS= bash scripts/install.sh | tail -1)
export PATH="$BIN:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LALM_EVAL_CACHE="$work/cache" HF_DATASETS_CACHE="$work/hf"
echo "smoke_core.sh: core install ready in $(( $(date +%s) - start ))s ($BIN)"

lalm-eval doctor
rc=0; lalm-eval doctor --model vllm >"$work/doctor_vllm.txt" || rc=$?
if "$BIN/python" -c "import vllm" 2>/dev/null; then
  echo "smoke_core.sh: vllm is importable in the core environment (it should not be)" >&2; exit 1
fi
if [ "$rc" != 1 ] || ! grep -q "^FAIL  *vllm " "$work/doctor_vllm.txt"; then
  cat "$work/doctor_vllm.txt"; echo "smoke_core.sh: doctor --model vllm should fail on vllm (exit $rc)" >&2; exit 1
fi

t=$(date +%s)
(cd "$work" && palm-bench build --out palm-bench --preset small)
echo "smoke_core.sh: palm-bench build in $(( $(date +%s) - t ))s"
t=$(date +%s)
(cd "$work" && lalm-eval make-tiny-model qwen2_audio tiny >/dev/null \
  && lalm-eval --model qwen2_audio --model_args pretrained=tiny --tasks palm_recognition --limit 4 \
       --output_path out >run.log 2>&1) || { tail -30 "$work/run.log"; exit 1; }
ls "$work"/out/results_*.json >/dev/null
echo "smoke_core.sh: tiny Qwen2-Audio on palm_recognition (4 docs) in $(( $(date +%s) - t ))s"
echo "smoke_core.sh: core path ok in $(( $(date +%s) - start ))s"
