#!/usr/bin/env python3
"""Harness overhead on a tiny random Qwen2-Audio and embedded PALM clips, measured in one run.

Prints, side by side:
- generation phase through the adapter vs a hand-written batched ``generate`` loop over the
  same inputs (same prompts, audios, padding, 32 new tokens), at batch 8 and batch 1, and the
  overhead ratio (goal ≤ 5 %);
- the batch-8 / batch-1 speed-up of each (goal: the harness keeps the hand loop's);
- the whole ``lalm-eval`` process from shell start to results written, first run and cached
  rerun (goal: rerun ≤ 5 % of the first), split into the stages of the results JSON's
  ``timings`` block (startup, imports, task loading, dataset open, model load, scan, generation,
  scoring) plus what follows it (writing the results, report and plots, and the exit).

    python bench/harness.py [--n 64] [--work DIR] [--stages-only]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_clips(n: int, cache_dir: Path):
    """``n`` PALM recognition docs (question + decoded audio) from the embedded build."""
    from lalm_eval.evaluation.docs import open_docs
    from lalm_eval.evaluation.requests import decoded_requests
    from lalm_eval.tasks import TaskManager

    task = TaskManager().load_task("palm_recognition")
    docs = open_docs(task, cache_dir, None).docs
    seen, picked = set(), []
    for doc in docs:  # one doc per composed clip: n different audios
        if doc["audio_id"] not in seen:
            seen.add(doc["audio_id"])
            picked.append(doc)
        if len(picked) == n:
            break
    return decoded_requests(
        task, picked, {"bench": 1}, {"max_new_tokens": 32, "min_new_tokens": 32, "do_sample": False}
    )


def hand_loop(model_dir: Path, requests, batch: int) -> float:
    from transformers import AutoProcessor, Qwen2AudioForConditionalGeneration

    processor = AutoProcessor.from_pretrained(model_dir)
    processor.tokenizer.padding_side = "left"
    model = Qwen2AudioForConditionalGeneration.from_pretrained(model_dir).eval()
    order = sorted(range(len(requests)), key=lambda i: -requests[i].audio_seconds)
    run_chunks(processor, model, [requests[order[0]]])  # warm-up, as the harness gets one
    t0 = time.perf_counter()
    for start in range(0, len(order), batch):
        run_chunks(processor, model, [requests[i] for i in order[start : start + batch]])
    return time.perf_counter() - t0


def run_chunks(processor, model, chunk) -> None:
    """One hand-written batched generate call: chat template, processor, generate, decode."""
    import torch

    texts = []
    for r in chunk:
        text = r.messages[-1]["content"][-1]["text"]
        conv = [{"role": "user", "content": [{"type": "audio", "audio_url": "a.wav"}, {"type": "text", "text": text}]}]
        texts.append(processor.apply_chat_template(conv, add_generation_prompt=True, tokenize=False))
    inputs = processor(
        text=texts, audio=[r.audios[0] for r in chunk], sampling_rate=16000, return_tensors="pt", padding=True
    )
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=32, min_new_tokens=32, do_sample=False)
    processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)


def harness_generate(model_dir: Path, requests, batch: int) -> float:
    from lalm_eval.models import MODELS

    adapter = MODELS.get("qwen2_audio")(pretrained=str(model_dir), device="cpu")
    adapter.generate(requests[:1], 1)  # load weights outside the timing, as the hand loop does
    t0 = time.perf_counter()
    adapter.generate(requests, batch)
    return time.perf_counter() - t0


def whole_process(model_dir: Path, out: Path, cache: Path, n: int, no_cache: bool = False) -> tuple[float, dict]:
    """Seconds of one ``lalm-eval`` run, and its stage seconds (``timings`` of its results JSON,
    with ``writing+exit``: the wall time after the block was taken)."""
    cmd = [
        sys.executable,
        "-m",
        "lalm_eval.cli",
        "--model",
        "qwen2_audio",
        "--model_args",
        f"pretrained={model_dir}",
        "--tasks",
        "palm_recognition",
        "--limit",
        str(n),
        "--batch_size",
        "8",
        "--output_path",
        str(out),
        "--cache_dir",
        str(cache),
        "--gen_kwargs",
        "max_new_tokens=32,min_new_tokens=32",
    ]
    if no_cache:
        cmd.append("--no_cache")
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=out.parent)
    wall = time.perf_counter() - t0
    (results,) = out.glob("results_*.json")
    timings = json.loads(results.read_text(encoding="utf-8"))["timings"]
    return wall, {**timings["stages"], "writing+exit": max(0.0, wall - timings["wall_s"])}


def print_stages(runs: list[dict]) -> None:
    """Per stage: the mean seconds over ``runs`` and the share of the whole process."""
    names = list(dict.fromkeys(k for r in runs for k in r))
    total = sum(sum(r.values()) for r in runs) / len(runs)
    print(f"{'stage':>14} {'mean s':>8} {'share':>7}")
    for name in names:
        mean = sum(r.get(name, 0.0) for r in runs) / len(runs)
        print(f"{name:>14} {mean:8.2f} {mean / total:7.1%}")
    rest = total - sum(r.get("generation", 0.0) for r in runs) / len(runs)
    print(f"{'all but gen.':>14} {rest:8.2f} {rest / total:7.1%}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--work", type=Path, default=None, help="cache folder (datasets are built there once)")
    ap.add_argument(
        "--stages-only",
        action="store_true",
        help="only the whole-process stage split: 3 runs without the response cache",
    )
    args = ap.parse_args(argv)
    from lalm_eval.models.tiny import make_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.chdir(tmp)  # no ./palm-bench here: the bench and the CLI runs both use <work>/datasets
        work = args.work or tmp / "work"
        model_dir = make_tiny_model("qwen2_audio", tmp / "tiny")
        if args.stages_only:
            load_clips(args.n, work)  # the dataset built once, outside the timings
            runs = [whole_process(model_dir, tmp / f"stages{i}", work, args.n, no_cache=True)[1] for i in range(3)]
            print(f"whole lalm-eval process, {args.n} clips, batch 8, 32 new tokens, no response cache (3 runs):")
            print_stages(runs)
            return 0
        requests = load_clips(args.n, work)
        secs = sum(r.audio_seconds for r in requests)
        print(f"{len(requests)} clips, {secs / len(requests):.1f} s average, 32 new tokens each")
        rows = {}
        for batch in (8, 1):
            rows[batch] = (hand_loop(model_dir, requests, batch), harness_generate(model_dir, requests, batch))
        print(f"{'batch':>5} {'hand s':>8} {'harness s':>10} {'hand/s':>8} {'harness/s':>10} {'overhead':>9}")
        for batch, (hand, harness) in rows.items():
            print(
                f"{batch:5d} {hand:8.2f} {harness:10.2f} {len(requests) / hand:8.2f} {len(requests) / harness:10.2f} "
                f"{harness / hand - 1:+9.1%}"
            )
        print(
            f"batch-8/batch-1 speed-up: hand loop {rows[1][0] / rows[8][0]:.2f}x, harness {rows[1][1] / rows[8][1]:.2f}x"
        )
        for stale in work.glob("responses.sqlite*"):  # the first run must start with no cached responses
            stale.unlink()
        first, first_stages = whole_process(model_dir, tmp / "out1", work, args.n)
        again, _ = whole_process(model_dir, tmp / "out2", work, args.n)
        print_stages([first_stages])
        print(
            f"whole process (lalm-eval, batch 8, datasets already built): first {first:.1f} s "
            f"({args.n / first:.2f} samples/s), cached rerun {again:.1f} s = {again / first:.1%} of the first"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
