#!/usr/bin/env python3
"""The ``vllm`` adapter vs the HF ``qwen2_audio`` adapter: same weights, same embedded PALM clips.

Each backend runs in a fresh process (``--child``): import, dataset docs → requests, start-up
(HF: weights loaded; vLLM: ``vllm.LLM`` built — worker processes, profiling, KV cache), then the
generation phase (``adapter.generate`` over all requests: HF batched at ``--hf_batch_size``, vLLM
all requests submitted at once), then exit (vLLM shuts its workers down). Printed side by side:
whole process, start-up and generation seconds, samples/s and the vllm/hf ratios, and how many
outputs are identical. Greedy, ``--tokens`` new tokens per sample (also the minimum, so both do the
same work). Without ``--model``: a tiny Qwen2-Audio with head dim 64 (vLLM's CPU kernels reject
the default tiny model's 16), built here.

    .venv-vllm/bin/python bench/vllm_vs_hf.py [--n 48] [--tokens 32] [--work DIR]

Run it with an interpreter that has vLLM (``bash scripts/install_vllm.sh`` → ``.venv-vllm``); both
backends run under it. ``bench/gpu_backends.py`` reuses the children on a GPU.
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


def load_requests(n: int, cache_dir: Path, gen_kwargs: dict | None, distinct: bool = True):
    """``n`` docs of ``palm_recognition`` (0: all of the test split) as requests; ``distinct``: one
    doc per composed clip (``n`` different audios). ``gen_kwargs`` None keeps the task's own."""
    from lalm_eval.evaluation.docs import open_docs
    from lalm_eval.evaluation.requests import decoded_requests
    from lalm_eval.tasks import TaskManager

    task = TaskManager().load_task("palm_recognition")
    docs = open_docs(task, cache_dir, None).docs
    seen, picked = set(), []
    for doc in docs:
        if distinct and doc["audio_id"] in seen:
            continue
        seen.add(doc["audio_id"])
        picked.append(doc)
        if n and len(picked) == n:
            break
    return decoded_requests(task, picked, {"bench": 1}, gen_kwargs or {})


def child(args) -> int:
    """One backend in this process; timings and outputs to ``args.out`` (JSON)."""
    t0 = time.perf_counter()
    from lalm_eval.models import MODELS

    gen = json.loads(args.gen) if args.gen else None
    requests = load_requests(args.n, Path(args.cache), gen, distinct=not args.all_rows)
    t_requests = time.perf_counter()
    if args.child == "vllm":
        extra = json.loads(args.vllm_args) if args.vllm_args else {}
        adapter = MODELS.get("vllm")(
            pretrained=args.model, dtype=args.dtype, device=args.device, limit_audio_per_prompt=1, **extra
        )
        adapter.engine(1)
    else:
        adapter = MODELS.get("qwen2_audio")(pretrained=args.model, dtype=args.dtype, device=args.device)
        adapter.load()
        _ = adapter.processor
    t_start = time.perf_counter()
    responses = adapter.generate(requests, args.hf_batch_size)
    t_gen = time.perf_counter()
    Path(args.out).write_text(
        json.dumps(
            {
                "backend": args.child,
                "n": len(requests),
                "audio_s": sum(r.audio_seconds for r in requests),
                "setup_s": t_requests - t0,
                "startup_s": t_start - t_requests,
                "generate_s": t_gen - t_start,
                "texts": [r.text for r in responses],
                "errors": [r.error for r in responses if r.error],
                "completion_tokens": sum(r.meta.get("usage", {}).get("completion_tokens", 0) for r in responses),
            }
        )
    )
    if args.child == "vllm":
        adapter.close()
    return 0


def run_child(
    backend: str,
    model: str,
    n: int,
    work: Path,
    tokens: int | None,
    dtype: str,
    device: str,
    hf_batch_size: str,
    all_rows: bool = False,
    vllm_args: dict | None = None,
    timeout: int = 7200,
) -> dict:
    out = work / f"{backend}.json"
    gen = None if tokens is None else {"max_new_tokens": tokens, "min_new_tokens": tokens, "do_sample": False}
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        backend,
        "--model",
        model,
        "--n",
        str(n),
        "--cache",
        str(work / "cache"),
        "--out",
        str(out),
        "--dtype",
        dtype,
        "--device",
        device,
        "--hf_batch_size",
        str(hf_batch_size),
        "--gen",
        json.dumps(gen) if gen else "",
        "--vllm_args",
        json.dumps(vllm_args or {}),
    ] + (["--all_rows"] if all_rows else [])
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work, env=env, timeout=timeout)
    whole = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{backend} child failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result = json.loads(out.read_text())
    result["process_s"] = whole
    return result


def common_prefix(a: str, b: str) -> int:
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k


def report(hf: dict, vl: dict) -> str:
    n = hf["n"]
    rows = [
        ("whole process", "process_s"),
        ("  setup (imports, docs → requests)", "setup_s"),
        ("  start-up (HF: load; vLLM: engine)", "startup_s"),
        ("  generation", "generate_s"),
    ]
    lines = [
        f"{n} requests, {hf['audio_s'] / n:.1f} s of audio each on average",
        f"{'':38s} {'hf':>9s} {'vllm':>9s} {'vllm/hf':>8s}",
    ]
    for label, key in rows:
        lines.append(f"{label:38s} {hf[key]:9.1f} {vl[key]:9.1f} {vl[key] / hf[key]:8.2f}")
    for label, key in (("samples/s, generation phase", "generate_s"), ("samples/s, whole process", "process_s")):
        a, b = n / hf[key], n / vl[key]
        lines.append(f"{label:38s} {a:9.2f} {b:9.2f} {b / a:8.2f}")
    both = [(a, b) for a, b in zip(hf["texts"], vl["texts"]) if a is not None and b is not None]
    same = sum(a == b for a, b in both)
    prefix = sum(common_prefix(a, b) / max(1, len(a)) for a, b in both) / max(1, len(both))
    lines.append(
        f"identical outputs: {same}/{len(both)} ({same / max(1, len(both)):.1%}); mean common prefix "
        f"{prefix:.1%} of the HF output; failed: hf {n - sum(t is not None for t in hf['texts'])}, "
        f"vllm {n - sum(t is not None for t in vl['texts'])}"
    )
    if vl.get("completion_tokens"):
        lines.append(
            f"vLLM generated {vl['completion_tokens']} tokens: "
            f"{vl['completion_tokens'] / vl['generate_s']:.0f} tokens/s in the generation phase"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=48, help="requests (0: every doc; the test split has 51 clips)")
    ap.add_argument("--tokens", type=int, default=32, help="new tokens per sample (0: the task's own kwargs)")
    ap.add_argument("--model", default=None, help="model folder (default: a tiny head-dim-64 Qwen2-Audio)")
    ap.add_argument("--work", type=Path, default=None, help="folder for the dataset cache and outputs")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--hf_batch_size", default="8")
    ap.add_argument("--all_rows", action="store_true", help="every doc, not one per composed clip")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    # child mode (internal)
    ap.add_argument("--child", choices=("hf", "vllm"), default=None, help=argparse.SUPPRESS)
    ap.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--gen", default="", help=argparse.SUPPRESS)
    ap.add_argument("--vllm_args", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    with tempfile.TemporaryDirectory() as tmp:
        work = (args.work or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        model = args.model
        if model is None:
            from lalm_eval.models.tiny import make_tiny_model

            model = str(make_tiny_model("qwen2_audio", work / "t64", head_dim=64))
        load_requests(1, work / "cache", None)  # build the embedded dataset once, outside the timings
        tokens = args.tokens or None
        hf = run_child("hf", model, args.n, work, tokens, args.dtype, args.device, args.hf_batch_size, args.all_rows)
        vl = run_child("vllm", model, args.n, work, tokens, args.dtype, args.device, args.hf_batch_size, args.all_rows)
        text = report(hf, vl)
        print(text)
        if args.json:
            args.json.write_text(json.dumps({"hf": hf, "vllm": vl, "report": text}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
