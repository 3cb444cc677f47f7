#!/usr/bin/env bash
# Install (scripts/install.sh: .venv with the project and its test tools, ".[dev]"), then run the
# test suite in that environment (slow benchmarks are excluded by pyproject's -m 'not slow').
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(bash scripts/install.sh | tail -1)
export PATH="$BIN:$PATH"
"$BIN/python" -m pytest -q --durations=25 "$@"
