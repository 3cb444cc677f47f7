"""Profile the ``cascade`` reference system's calls, and check two runs give the same answers.

    python bench/cascade_profile.py run --enrollment palm-bench --tasks palm,msu --out OUT
    python bench/cascade_profile.py compare OUT_BEFORE OUT_AFTER

``run`` evaluates ``--model cascade`` under cProfile with a fresh cache folder (no cached answer,
embedding or enrollment record: every call is computed), writes the samples (``--log_samples``)
to ``--out``, and prints the calls' time (the adapter's ``generate``, cumulative), calls/s, and the
profile's top lines (cumulative) among the cascade's own functions, resemblyzer's and
pocketsphinx's. ``compare`` reads the ``samples_*.jsonl`` of two such folders and says, doc by doc,
whether every response and filtered answer is identical (exit 1 when one differs).
"""

from __future__ import annotations

import argparse
import io
import json
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: functions shown in the profile's top lines (a regular expression over "file:line(function)")
FOCUS = r"cascade|speaker|segmentation|resemblyzer|pocketsphinx|webrtcvad|sklearn/cluster|augment"


def samples(folder: Path) -> dict:
    """``{(task file, doc_id): (response, filtered)}`` from a run's ``samples_*.jsonl``."""
    out = {}
    for path in sorted(folder.glob("samples_*.jsonl")):
        task = path.name.rsplit("_", 1)[0]  # samples_<task>_<timestamp>.jsonl
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[(task, row["doc_id"])] = (row.get("response"), row.get("filtered"))
    return out


def compare(before: Path, after: Path) -> int:
    a, b = samples(before), samples(after)
    if not a:
        print(f"cascade_profile: error: {before}: no samples_*.jsonl; run with --log_samples", file=sys.stderr)
        return 2
    differ = [k for k in sorted(set(a) | set(b), key=str) if a.get(k) != b.get(k)]
    for task, doc in differ[:10]:
        print(f"{task} doc {doc}:\n  before {a.get((task, doc))!r}\n  after  {b.get((task, doc))!r}")
    print(f"{len(a)} docs before, {len(b)} after: {len(differ)} differ")
    return 1 if differ else 0


def run(args) -> int:
    out = Path(args.out)
    entry = shutil.which("lalm-eval", path=str(Path(sys.executable).parent)) or shutil.which("lalm-eval")
    if entry is None:
        print("cascade_profile: error: lalm-eval: not installed beside this Python; pip install -e .", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as cache:
        model_args = f"enrollment={args.enrollment}" + (f",threads={args.threads}" if args.threads else "")
        argv = ["--model", "cascade", "--model_args", model_args]
        argv += ["--tasks", args.tasks, "--output_path", str(out), "--log_samples", "--cache_dir", cache]
        argv += ["--limit", str(args.limit)] if args.limit else []
        profile = str(Path(cache) / "profile.pstats")
        start = time.perf_counter()  # the CLI in its own process (only the entry point imports it)
        rc = subprocess.run([sys.executable, "-m", "cProfile", "-o", profile, entry, *argv]).returncode
        wall = time.perf_counter() - start
        if rc:
            return rc
        stats = pstats.Stats(profile)
    generate = [(k, v) for k, v in stats.stats.items() if k[0].endswith("cascade.py") and k[2] == "generate"]
    calls_s = sum(v[3] for _, v in generate)
    n = len(samples(out))
    print(
        f"{n} calls in {calls_s:.1f} s of generate ({n / max(calls_s, 1e-9):.2f} calls/s, "
        f"{1000 * calls_s / max(n, 1):.0f} ms/call; whole run {wall:.1f} s, under cProfile)"
    )
    text = io.StringIO()
    stats.stream = text
    stats.sort_stats("cumulative").print_stats(FOCUS, args.top)
    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[-6000:])
    return 0


def cli(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="cascade_profile", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="profile one cascade run")
    r.add_argument("--enrollment", default="palm-bench")
    r.add_argument("--tasks", default="palm,msu")
    r.add_argument("--out", required=True, help="folder for the run's samples and results")
    r.add_argument("--limit", type=int, default=0)
    r.add_argument("--threads", type=int, default=0, help="the cascade's threads= (0: left unset, as scripts/main.sh)")
    r.add_argument("--top", type=int, default=15, help="profile lines shown")
    c = sub.add_parser("compare", help="compare two runs' answers doc by doc")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    return compare(args.before, args.after) if args.command == "compare" else run(args)


if __name__ == "__main__":
    sys.exit(cli())
