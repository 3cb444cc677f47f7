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

With ``--lmms-eval EXE`` (an lmms-eval 0.7.3 executable, e.g. from a throwaway venv), only the
whole-process comparison: ``lalm-eval`` and lmms-eval on the same clips (the first ``--n`` docs of
palm_recognition, exported to Parquet with their rendered questions; task in ``bench/lmms_task/``),
the same tiny Qwen2-Audio, batch 8, ``max_new_tokens=32`` greedy (lmms-eval's Qwen2-Audio adapter
does not pass ``min_new_tokens``, so neither run gets it), no response cache, one untimed warm-up
run of each, then 3 alternating pairs.
lmms-eval 0.7.3's Qwen2-Audio adapter moves its inputs to ``"cuda"`` under ``device_map=auto``;
on a CPU-only machine that line must be changed to ``inputs.to(self._device)`` first.

    python bench/harness.py [--n 64] [--work DIR] [--stages-only | --lmms-eval EXE]
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


def hand_loop(model_dir: Path, requests, batch: int, device: str = "cpu", dtype: str = "float32") -> float:
    import torch
    from transformers import AutoProcessor, Qwen2AudioForConditionalGeneration

    processor = AutoProcessor.from_pretrained(model_dir)
    processor.tokenizer.padding_side = "left"
    model = Qwen2AudioForConditionalGeneration.from_pretrained(model_dir, dtype=getattr(torch, dtype))
    model = model.to(device).eval()
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
    ).to(model.device, dtype=model.dtype)  # the dtype applies to the floating tensors (the features) only
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=32, min_new_tokens=32, do_sample=False)
    processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)


def harness_generate(model_dir: Path, requests, batch: int, device: str = "cpu", dtype: str = "auto") -> float:
    from lalm_eval.models import MODELS

    adapter = MODELS.get("qwen2_audio")(pretrained=str(model_dir), device=device, dtype=dtype)
    adapter.generate(requests[:1], 1)  # load weights outside the timing, as the hand loop does
    t0 = time.perf_counter()
    adapter.generate(requests, batch)
    return time.perf_counter() - t0


def user_env() -> dict:
    """The environment for both harnesses' processes: this one's, with Python's default of
    writing bytecode (a ``PYTHONDONTWRITEBYTECODE`` set here would make the editable project
    recompile its own modules in every process, which no user's second run does)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def export_clips(n: int, cache_dir: Path, out: Path) -> Path:
    """The first ``n`` palm_recognition docs (what ``--limit n`` evaluates) as Parquet rows of
    (question as rendered, audio, answer), for lmms-eval."""
    import datasets

    from lalm_eval.evaluation.docs import open_docs
    from lalm_eval.tasks import TaskManager

    task = TaskManager().load_task("palm_recognition")
    rows = []
    for doc in open_docs(task, cache_dir, n).docs:
        doc = dict(doc)
        (audio,) = task.audio_of(doc)
        question = task.messages(doc)[-1]["content"][-1]["text"]
        rows.append(
            {
                "question": question,
                "audio": {"bytes": audio["bytes"], "path": None},
                "answer": str(task.render_target(doc)),
            }
        )
    ds = datasets.Dataset.from_list(rows).cast_column("audio", datasets.Audio(sampling_rate=16000))
    ds.to_parquet(str(out / "clips.parquet"))
    template = (ROOT / "bench" / "lmms_task" / "palm_rec64.yaml.in").read_text(encoding="utf-8")
    (out / "palm_rec64.yaml").write_text(template.replace("{clips}", str(out / "clips.parquet")), encoding="utf-8")
    (out / "utils.py").write_text((ROOT / "bench" / "lmms_task" / "utils.py").read_text(encoding="utf-8"))
    return out


def lmms_process(exe: str, model_dir: Path, task_dir: Path, out: Path) -> float:
    cmd = [exe, "--model", "qwen2_audio", "--model_args", f"pretrained={model_dir},device=cpu,device_map=auto"]
    cmd += ["--tasks", "palm_rec64", "--include_path", str(task_dir), "--batch_size", "8", "--output_path", str(out)]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=out.parent, env=user_env())
    return time.perf_counter() - t0


def versus_lmms(exe: str, model_dir: Path, work: Path, tmp: Path, n: int) -> None:
    """3 alternating pairs of whole processes, lalm-eval first in each; the stage split of ours."""
    task_dir = tmp / "lmms_task"
    task_dir.mkdir()
    export_clips(n, work, task_dir)
    # one untimed run of each first: a fresh venv compiles its .pyc files and the OS reads the
    # libraries from disk on a first start, which neither harness pays on a user's second run
    whole_process(model_dir, tmp / "warm_ours", work, n, no_cache=True, gen="max_new_tokens=32")
    lmms_process(exe, model_dir, task_dir, tmp / "warm_lmms")
    ours, theirs, stages = [], [], []
    for i in range(3):
        wall, st = whole_process(model_dir, tmp / f"ours{i}", work, n, no_cache=True, gen="max_new_tokens=32")
        ours.append(wall)
        stages.append(st)
        theirs.append(lmms_process(exe, model_dir, task_dir, tmp / f"lmms{i}"))
    print(f"whole process, {n} clips, batch 8, max_new_tokens=32 greedy, 3 alternating pairs:")
    print(f"{'pair':>4} {'lalm-eval s':>12} {'lmms-eval s':>12} {'ratio':>7}")
    for i, (a, b) in enumerate(zip(ours, theirs)):
        print(f"{i + 1:4d} {a:12.2f} {b:12.2f} {b / a:6.2f}x")
    print(f"{'mean':>4} {sum(ours) / 3:12.2f} {sum(theirs) / 3:12.2f} {sum(theirs) / sum(ours):6.2f}x")
    print_stages(stages)


def whole_process(
    model_dir: Path,
    out: Path,
    cache: Path,
    n: int,
    no_cache: bool = False,
    gen: str = "max_new_tokens=32,min_new_tokens=32",
) -> tuple[float, dict]:
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
        gen,
    ]
    if no_cache:
        cmd.append("--no_cache")
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=out.parent, env=user_env())
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
    ap.add_argument(
        "--lmms-eval", default=None, metavar="EXE", help="an lmms-eval 0.7.3 executable: only the comparison"
    )
    args = ap.parse_args(argv)
    if args.lmms_eval:  # before the chdir below
        args.lmms_eval = os.path.abspath(args.lmms_eval)
    from lalm_eval.models.tiny import make_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.chdir(tmp)  # no ./palm-bench here: the bench and the CLI runs both use <work>/datasets
        work = args.work or tmp / "work"
        model_dir = make_tiny_model("qwen2_audio", tmp / "tiny")
        if args.lmms_eval:
            load_clips(args.n, work)  # the dataset built once, outside the timings
            versus_lmms(args.lmms_eval, model_dir, work, tmp, args.n)
            return 0
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
