#!/usr/bin/env bash
# The lmms-eval stage: install lmms-eval 0.7.3 into its own venv (.venv-lmms, scripts/install_lmms.sh,
# which prints its one-line CPU patch of lmms-eval's qwen2_audio model), then run
# tests/test_lmms_stage.py -m lmms from the project's .venv: lalm-eval's exported tasks in lmms-eval
# against lalm-eval on the same docs (prompts and audio reaching the model, answers, metric values,
# lalm-eval score-samples). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(bash scripts/install.sh | tail -1)
bash scripts/install_lmms.sh
start=$(date +%s)
rc=0
"$BIN/python" -m pytest -q -m lmms tests/test_lmms_stage.py "$@" || rc=$?
echo "test_lmms.sh: lmms-eval tests finished in $(( $(date +%s) - start ))s (pytest exit $rc)"
if [ "$rc" = 5 ]; then
  echo "test_lmms.sh: no lmms-eval test was collected: that is a failure (were they renamed or unmarked?)" >&2
  exit 1
fi
exit "$rc"
