#!/usr/bin/env bash
# The main job on the embedded corpus: install, report the corpus, build PALM-Bench and
# MSU-Bench (`small` presets) into ./palm-bench and ./msu-bench and load them back with
# `datasets`. Later stages (evaluate → report) join here as they land.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
palm-bench corpus-info
palm-bench build --out palm-bench --preset small
msu-bench build --out msu-bench --preset small
python3 - <<'PY'
from datasets import load_dataset

ds = load_dataset("palm-bench", "recognition", split="test")
row = ds[0]
audio = row["audio"].get_all_samples()
print(f"load_dataset('palm-bench', 'recognition'): {len(ds)} test rows; first: "
      f"{row['question']!r} -> {row['answer']!r} ({audio.data.shape[-1] / audio.sample_rate:.1f} s, "
      f"{row['n_speakers']} speaker(s))")
msu = load_dataset("msu-bench", "tier4", split="test")
print(f"load_dataset('msu-bench', 'tier4'): {len(msu)} questions; first: {msu[0]['question']!r}")
PY
