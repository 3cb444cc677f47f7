#!/usr/bin/env bash
# The main job on the embedded corpus: install, then report the corpus (counts, minutes, size,
# speaker-verification EER with the default encoder). Later stages (build → evaluate → report)
# join here as they land.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
palm-bench corpus-info
