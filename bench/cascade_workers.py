"""The cascade's per-call time with its speech decoded in this process and over ASR workers,
measured side by side in one run, and its answers compared doc by doc.

    python bench/cascade_workers.py [--enrollment palm-bench] [--tasks palm,msu] [--workers 2] [--batch_size N] [--out DIR]

Runs ``lalm-eval --model cascade --model_args enrollment=...,threads=1,asr_workers=W`` for W = 1
and W = ``--workers``, each with a fresh ``--cache_dir`` (no cached answer, embedding or enrollment
record) and ``--log_samples``; prints each run's generation seconds (the results' ``timings``,
model construction excluded), ms per call and the ratio, then whether every response and filtered
answer is identical (exit 1 when one differs).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cascade_profile import compare  # noqa: E402


def one_run(entry: str, args, workers: int, out: Path) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        argv = [entry, "--model", "cascade", "--model_args"]
        argv += [f"enrollment={args.enrollment},threads=1,asr_workers={workers}", "--tasks", args.tasks]
        argv += ["--output_path", str(out), "--log_samples", "--cache_dir", cache]
        argv += ["--limit", str(args.limit)] if args.limit else []
        argv += ["--batch_size", str(args.batch_size)]
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        wall = time.perf_counter() - start
    (results,) = out.glob("results_*.json")
    data = json.loads(results.read_text(encoding="utf-8"))
    calls = sum(1 for p in out.glob("samples_*.jsonl") for line in p.read_text(encoding="utf-8").splitlines() if line)
    return {"workers": workers, "wall": wall, "generation": data["timings"]["stages"]["generation"], "calls": calls}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="cascade_workers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--enrollment", default="palm-bench")
    ap.add_argument("--tasks", default="palm,msu")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument(
        "--batch_size", type=int, default=1, help="lalm-eval --batch_size of both runs (1: as the main job)"
    )
    ap.add_argument("--out", default=None, help="folder for the two runs (default: a temporary one)")
    args = ap.parse_args(argv)
    entry = shutil.which("lalm-eval", path=str(Path(sys.executable).parent)) or shutil.which("lalm-eval")
    if entry is None:
        print("cascade_workers: error: lalm-eval: not installed beside this Python; pip install -e .", file=sys.stderr)
        return 2
    root = Path(args.out or tempfile.mkdtemp(prefix="cascade_workers_"))
    runs = [one_run(entry, args, w, root / f"workers{w}") for w in (1, args.workers)]
    print(f"{'asr_workers':>11} {'calls':>6} {'generation s':>13} {'ms/call':>8} {'wall s':>7}")
    for r in runs:
        print(
            f"{r['workers']:>11} {r['calls']:>6} {r['generation']:>13.1f} {1000 * r['generation'] / r['calls']:>8.0f} {r['wall']:>7.1f}"
        )
    print(f"per-call speed-up: {runs[0]['generation'] / runs[1]['generation']:.2f}x")
    return compare(root / "workers1", root / f"workers{args.workers}")


if __name__ == "__main__":
    sys.exit(main())
