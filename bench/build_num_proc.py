#!/usr/bin/env python3
"""Build wall time with 1 vs N processes (``--num_proc``), and a check that the shards are the same.

For each benchmark (PALM-Bench, MSU-Bench) builds the preset on the embedded corpus once to warm
the embedding and acoustic-description caches, then once per process count, and prints the wall
time of each build, of its generate + export phase (PALM; planning is one process either way), the
speed-up ``t(1) / t(N)`` and whether every Parquet shard's SHA-256 is the same for every count.

    python bench/build_num_proc.py [--benchmark palm|msu|both] [--preset small] [--num-proc 1 2]
                                   [--set audios_per_subject={train: 32, test: 16}] [--work-dir DIR]

``--set`` (PALM only) scales a build past the preset. The speed-up is bounded by the cores free
for the run: it prints how many this process may use.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import datasets  # noqa: E402

from lalm_eval.cli_support import parse_key_values  # noqa: E402


def palm_build(out: Path, preset: str, overrides: dict, work: Path, num_proc: int) -> dict:
    from palm_bench.config import load_preset
    from palm_bench.export import build

    t0 = time.perf_counter()
    info = build(out, load_preset(preset, overrides), work_dir=work, num_proc=num_proc)
    return {
        "wall": time.perf_counter() - t0,
        "generate": info["seconds"]["generate_and_export"],
        "rows": info["stats"]["total_samples"],
        "shards": info["shards"],
    }


def msu_build(out: Path, preset: str, overrides: dict, work: Path, num_proc: int) -> dict:
    from msu_bench.export import build
    from msu_bench.plan import load_preset

    t0 = time.perf_counter()
    info = build(out, load_preset(preset, overrides), num_proc=num_proc)
    return {
        "wall": time.perf_counter() - t0,
        "generate": None,
        "rows": info["stats"]["total_questions"],
        "shards": info["shards"],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", choices=["palm", "msu", "both"], default="both")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--num-proc", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="PALM build overrides")
    ap.add_argument("--work-dir", type=Path, default=None)
    ap.add_argument("--no-warmup", action="store_true", help="the caches in --work-dir are warm already")
    ap.add_argument("--keep", type=Path, default=None, help="write the builds here (default: a temporary folder)")
    args = ap.parse_args(argv)
    datasets.disable_progress_bars()
    overrides = parse_key_values(args.set)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"cores usable by this process: {cores}; load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    runs = {"palm": palm_build, "msu": msu_build}
    names = ["palm", "msu"] if args.benchmark == "both" else [args.benchmark]
    identical = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = args.keep or Path(tmp)
        work = args.work_dir or tmp / "work"
        for name in names:
            extra = overrides if name == "palm" else {}
            if not args.no_warmup:
                runs[name](tmp / f"{name}-warmup", args.preset, extra, work, 1)
            timed = {n: runs[name](tmp / f"{name}-np{n}", args.preset, extra, work, n) for n in args.num_proc}
            base = timed[args.num_proc[0]]
            same = all(t["shards"] == base["shards"] for t in timed.values())
            identical &= same
            label = f"{name} {args.preset}" + (f" {' '.join(args.set)}" if extra else "")
            print(
                f"\n{label}: {base['rows']} rows, {len(base['shards'])} shards, identical for "
                f"num_proc {args.num_proc}: {same}"
            )
            print(
                f"{'num_proc':>8s} {'wall s':>8s} {'gen+export s':>13s} {'speed-up (wall)':>16s} "
                f"{'speed-up (gen)':>15s}"
            )
            for n, t in timed.items():
                gen = f"{t['generate']:.1f}" if t["generate"] is not None else "-"
                gen_ratio = f"{base['generate'] / t['generate']:.2f}x" if t["generate"] else "-"
                print(f"{n:8d} {t['wall']:8.1f} {gen:>13s} {base['wall'] / t['wall']:15.2f}x {gen_ratio:>15s}")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
