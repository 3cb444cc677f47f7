#!/usr/bin/env python3
"""PALM-Bench build throughput: × real time with and without augmentation, bytes per sample.

Builds the `small` preset on the embedded corpus twice in one run — once with the preset's
augmentation, once with augmentation off — after a warm-up build that fills the embedding and
acoustic-description caches (so both timed builds see the same cache state), and prints:

- × real time = seconds of output audio (summed over samples, as the paper counts hours) per
  second of wall time, for the whole build and for the generate phase alone;
- bytes per sample of the Parquet export;
- what the paper-scale test split (139k samples, 281 h; PALM-Bench §4.3) would take at these
  rates, in time and disk.

    python bench/palm_build.py [--preset small] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import datasets  # noqa: E402

from palm_bench.config import load_preset  # noqa: E402
from palm_bench.export import build  # noqa: E402

PAPER_TEST = {"samples": 139_000, "hours": 281.0}


def timed_build(out: Path, overrides: dict, preset: str, work: Path) -> dict:
    cfg = load_preset(preset, overrides)
    t0 = time.perf_counter()
    info = build(out, cfg, work_dir=work)
    info["wall"] = time.perf_counter() - t0
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small")
    ap.add_argument("--work-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    datasets.disable_progress_bars()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        work = args.work_dir or tmp / "work"
        timed_build(tmp / "warmup", {}, args.preset, work)
        runs = {
            "with augmentation": timed_build(tmp / "aug", {}, args.preset, work),
            "no augmentation": timed_build(tmp / "noaug", {"augmentation": {}}, args.preset, work),
        }
    print(
        f"{'build':20s} {'samples':>8s} {'audio h':>8s} {'wall s':>7s} {'gen+exp s':>9s} "
        f"{'xRT total':>10s} {'xRT gen':>8s} {'kB/sample':>10s}"
    )
    for name, info in runs.items():
        st, sec = info["stats"], info["seconds"]
        audio_s = st["total_sample_hours"] * 3600
        print(
            f"{name:20s} {st['total_samples']:8d} {st['total_sample_hours']:8.2f} {info['wall']:7.1f} "
            f"{sec['generate_and_export']:9.1f} {audio_s / info['wall']:10.0f} {audio_s / sec['generate_and_export']:8.0f} "
            f"{info['bytes_per_sample'] / 1000:10.1f}"
        )
    aug, plain = runs["with augmentation"], runs["no augmentation"]
    ratio = (plain["stats"]["total_sample_hours"] / plain["wall"]) / (aug["stats"]["total_sample_hours"] / aug["wall"])
    print(f"\nno-augmentation / augmentation throughput ratio: {ratio:.2f}")
    for name, info in runs.items():
        xrt = info["stats"]["total_sample_hours"] * 3600 / info["wall"]
        hours = PAPER_TEST["hours"] * 3600 / xrt / 3600
        # disk scales with audio, not sample count (the paper's samples average 7.3 s, ours longer)
        bytes_per_audio_s = info["parquet_bytes"] / (info["stats"]["total_sample_hours"] * 3600)
        disk_gb = PAPER_TEST["hours"] * 3600 * bytes_per_audio_s / 1e9
        print(
            f"paper-scale test split ({PAPER_TEST['samples']} samples, {PAPER_TEST['hours']:.0f} h) "
            f"{name}: ~{hours:.1f} h of build time on this machine, ~{disk_gb:.1f} GB of Parquet"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
