#!/usr/bin/env bash
# Install, then run the test suite (slow benchmarks are excluded by pytest.ini's -m 'not slow').
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
python3 -m pytest -q "$@"
