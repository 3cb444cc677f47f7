#!/usr/bin/env python3
"""The GPU check in one go: four throughput rows, one table (issue 23).

1. ``hf``: the HF ``qwen2_audio`` adapter vs a hand-written batched ``generate`` loop
   (``bench/harness.py``'s ``harness_generate`` / ``hand_loop``), batch 8, 32 new tokens;
2. ``vllm``: the ``vllm`` adapter vs raw ``vllm.LLM.generate`` on the same requests and the same
   engine (prefix and multimodal-processor caches off, so neither pass reuses the other's work;
   two alternating passes each, the faster one counted), and how many outputs are identical;
3. ``serve``: ``vllm serve`` + ``openai_audio`` at concurrency 32 (``bench/serve_throughput.py``);
4. ``train``: one LoRA training step per placement, every ``method: lora`` recipe of
   ``lalm_eval/training/recipes/`` (``bench/train.py --steps 1``).

Full size (the default, for a GPU machine): the Qwen2-Audio-7B architecture with random bf16
weights (``bench/gpu_backends.py``'s ``build_model``, config written locally, nothing downloaded),
48 PALM recognition clips. ``--tiny``: the same code path with CPU sizes: the tiny head-dim-64
Qwen2-Audio of the vLLM tests, 8 clips, float32, the CPU server flags of ``tests/vllm_serve.py``.
A row that fails prints ``failed: <reason>`` in its place; the others still run. Rows 1 and 2 run
in child processes (``--child``), so each starts with the accelerator's memory free.

    python bench/gpu_all.py [--tiny] [--work DIR] [--json FILE]    # via bench/gpu_all.sh

The full-size run has not been measured yet (no GPU in the session that wrote this).
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from lalm_eval.flags import DEFAULT_CACHE  # noqa: E402

SIZES = {
    "tiny": {
        "n": 8,
        "tokens": 32,
        "batch": 8,
        "device": "cpu",
        "dtype": "float32",
        "vllm": {},
        "serve_args": None,  # tests/vllm_serve.py's CPU_ARGS
        "train": ["--arch", "tiny", "--device", "cpu", "--batch_size", "2", "--seconds", "5"],
    },
    "full": {
        "n": 48,
        "tokens": 32,
        "batch": 8,
        "device": "cuda",
        "dtype": "bfloat16",
        "vllm": {"gpu_memory_utilization": 0.85, "max_model_len": 8192},
        "serve_args": "--dtype bfloat16 --max-model-len 8192 --gpu-memory-utilization 0.85",
        "train": ["--arch", "qwen2-audio-7b", "--device", "cuda", "--batch_size", "4", "--seconds", "20"],
    },
}
NO_REUSE = {"engine_enable_prefix_caching": False, "engine_mm_processor_cache_gb": 0}


def lora_recipes() -> list[str]:
    from lalm_eval.training.recipes import available_recipes, load_recipe

    return [r for r in available_recipes() if load_recipe(r).method == "lora"]


# children: one backend per process -------------------------------------------------------------
def child_hf(model: str, size: dict, cache: Path) -> dict:
    from harness import hand_loop, harness_generate, load_clips

    requests = load_clips(size["n"], cache)
    hand = hand_loop(Path(model), requests, size["batch"], size["device"], size["dtype"])
    adapter = harness_generate(Path(model), requests, size["batch"], size["device"], size["dtype"])
    return {"n": len(requests), "hand_s": hand, "adapter_s": adapter}


def raw_generate(llm, processor, requests, tokens: int) -> list[str]:
    """Hand-built prompts (the processor's chat template, audio first) straight into ``llm.generate``."""
    from vllm import SamplingParams

    inputs = []
    for r in requests:
        text = r.messages[-1]["content"][-1]["text"]
        conv = [{"role": "user", "content": [{"type": "audio", "audio_url": "a.wav"}, {"type": "text", "text": text}]}]
        prompt = processor.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)
        inputs.append({"prompt": prompt, "multi_modal_data": {"audio": [(r.audios[0], 16000)]}})
    params = SamplingParams(temperature=0.0, max_tokens=tokens, min_tokens=tokens)
    outputs = llm.generate(inputs, params, use_tqdm=False)
    # decoded as the adapter decodes (whole ids, special tokens skipped): vLLM's incremental
    # detokenizer can differ from that on a random model's broken UTF-8 byte sequences
    return [processor.tokenizer.decode(list(o.outputs[0].token_ids), skip_special_tokens=True) for o in outputs]


def child_vllm(model: str, size: dict, cache: Path) -> dict:
    from transformers import AutoProcessor
    from vllm_vs_hf import load_requests

    from lalm_eval.models import MODELS

    tokens = size["tokens"]
    gen = {"max_new_tokens": tokens, "min_new_tokens": tokens, "do_sample": False}
    requests = load_requests(size["n"], cache, gen)
    adapter = MODELS.get("vllm")(
        pretrained=model,
        dtype=size["dtype"],
        device=size["device"],
        limit_audio_per_prompt=1,
        **size["vllm"],
        **NO_REUSE,
    )
    llm = adapter.engine(1)
    processor = AutoProcessor.from_pretrained(model)
    adapter.generate(requests[:1])  # warm-up for both paths
    times = {"adapter": [], "raw": []}
    for _ in range(2):  # alternating passes: neither is always the first
        t0 = time.perf_counter()
        ours = [r.text for r in adapter.generate(requests)]
        times["adapter"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        raw = raw_generate(llm, processor, requests, tokens)
        times["raw"].append(time.perf_counter() - t0)
    adapter.close()
    return {
        "n": len(requests),
        "adapter_s": min(times["adapter"]),
        "raw_s": min(times["raw"]),
        "identical": sum(a == b for a, b in zip(ours, raw)),
        "failed": sum(a is None for a in ours),
    }


def run_child(kind: str, model: str, size_name: str, work: Path, cache: Path) -> dict:
    out = work / f"child_{kind}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--model", model, "--work", str(work)]
    cmd += ["--out", str(out), "--cache_dir", str(cache)] + (["--tiny"] if size_name == "tiny" else [])
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(last_error(proc))
    return json.loads(out.read_text())


def last_error(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    named = [ln for ln in lines if "Error" in ln or "error:" in ln]
    return f"exit {proc.returncode}: " + (named[-1] if named else (lines[-1] if lines else "no output"))[-300:]


# rows ------------------------------------------------------------------------------------------
def row_hf(model: str, size_name: str, work: Path, cache: Path) -> list[dict]:
    r = run_child("hf", model, size_name, work, cache)
    ours, ref = r["n"] / r["adapter_s"], r["n"] / r["hand_s"]
    note = f"{r['n']} clips, batch {SIZES[size_name]['batch']}, 32 new tokens"
    return [row("1 hf", "qwen2_audio adapter vs hand generate loop", ours, ref, note)]


def row_vllm(model: str, size_name: str, work: Path, cache: Path) -> list[dict]:
    r = run_child("vllm", model, size_name, work, cache)
    ours, ref = r["n"] / r["adapter_s"], r["n"] / r["raw_s"]
    note = f"{r['n']} clips, identical outputs {r['identical']}/{r['n']}, failed {r['failed']}"
    return [row("2 vllm", "vllm adapter vs raw vllm.LLM.generate", ours, ref, note)]


def row_serve(model: str, size_name: str, work: Path, cache: Path) -> list[dict]:
    size = SIZES[size_name]
    cmd = [sys.executable, str(HERE / "serve_throughput.py"), "--model", model, "--n", str(size["n"])]
    cmd += ["--concurrency", "32", "--tokens", str(size["tokens"]), "--work", str(work / "serve")]
    cmd += ["--cache_dir", str(cache)]
    if size["serve_args"]:
        cmd += ["--server_args", size["serve_args"]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(last_error(proc))
    cells = [c.strip() for c in proc.stdout.strip().splitlines()[-1].strip("|").split("|")]
    _, docs, answered, start, gen, rate = cells
    note = f"{answered}/{docs} answered, server start {start} s, generation {gen} s"
    return [row("3 serve", "vllm serve + openai_audio, concurrency 32", float(rate), None, note)]


def row_train(model: str, size_name: str, work: Path, cache: Path) -> list[dict]:
    out = work / "train.json"
    cmd = [sys.executable, str(HERE / "train.py"), *SIZES[size_name]["train"], "--steps", "1"]
    cmd += ["--recipes", ",".join(lora_recipes()), "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(last_error(proc))
    rows = []
    for r in json.loads(out.read_text()):
        name = f"LoRA step, {r['recipe']}"
        if "error" in r:
            rows.append(failed("4 train", name, r["error"]))
            continue
        note = f"batch {r['batch_size']} x {r['audio_s']:g} s audio, {r['trainable_parameters']:,} trainable"
        if "peak_gpu_memory_gib" in r:
            note += f", peak {r['peak_gpu_memory_gib']} GiB"
        rows.append(row("4 train", name, float(r["train_samples_per_second"]), None, note))
    return rows


ROWS = (("1 hf", row_hf), ("2 vllm", row_vllm), ("3 serve", row_serve), ("4 train", row_train))


def row(key: str, what: str, ours: float, ref: float | None, note: str) -> dict:
    return {"row": key, "what": what, "samples_per_s": ours, "reference_per_s": ref, "note": note}


def failed(key: str, what: str, reason: str) -> dict:
    return {"row": key, "what": what, "samples_per_s": None, "reference_per_s": None, "note": f"failed: {reason}"}


def table(rows: list[dict]) -> str:
    lines = ["| row | what | samples/s | reference samples/s | ratio | notes |", "|---|---|---|---|---|---|"]
    for r in rows:
        ours, ref = r["samples_per_s"], r["reference_per_s"]
        cells = [
            "—" if ours is None else f"{ours:.2f}",
            "—" if ref is None else f"{ref:.2f}",
            "—" if ours is None or not ref else f"{ours / ref:.2f}",
        ]
        lines.append(f"| {r['row']} | {r['what']} | {' | '.join(cells)} | {r['note']} |")
    return "\n".join(lines)


def prepare_model(size_name: str, work: Path) -> str:
    if size_name == "tiny":
        from lalm_eval.models.tiny import make_tiny_model

        return str(make_tiny_model("qwen2_audio", work / "t64", head_dim=64))
    import torch

    if not torch.cuda.is_available():
        print("gpu_all.py: error: no CUDA device visible to torch; pass --tiny for the CPU-sized run", file=sys.stderr)
        raise SystemExit(2)
    from gpu_backends import build_model

    return str(build_model(work / "qwen2-audio-7b-random"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="CPU sizes: tiny model, 8 clips, float32")
    ap.add_argument("--work", type=Path, default=None, help="folder for the model, dataset cache and outputs")
    ap.add_argument("--json", type=Path, default=None, help="also write the table's rows here")
    ap.add_argument(
        "--cache_dir",
        type=Path,
        default=DEFAULT_CACHE,
        help="where the PALM build is looked up / made (default: lalm-eval's own cache, as the CLI)",
    )
    ap.add_argument("--child", choices=("hf", "vllm"), default=None, help=argparse.SUPPRESS)
    ap.add_argument("--model", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.cache_dir = args.cache_dir.resolve()
    size_name = "tiny" if args.tiny else "full"
    if args.child:
        fn = child_hf if args.child == "hf" else child_vllm
        result = fn(args.model, SIZES[size_name], args.cache_dir)
        args.out.write_text(json.dumps(result))
        return 0
    work = (args.work or Path(tempfile.mkdtemp(prefix="gpu-all-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    model = prepare_model(size_name, work)
    from vllm_vs_hf import load_requests

    load_requests(1, args.cache_dir, None)  # the PALM build, once, outside the timings
    rows = []
    for key, fn in ROWS:
        t_row = time.perf_counter()
        try:
            rows += fn(model, size_name, work, args.cache_dir)
        except Exception as exc:  # noqa: BLE001 - one row's failure is reported in its row
            rows.append(failed(key, fn.__name__, str(exc).strip().splitlines()[-1][:300] if str(exc) else repr(exc)))
        print(f"gpu_all: row {key} done in {time.perf_counter() - t_row:.0f} s", file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    wall = time.perf_counter() - t0
    print(f"gpu_all: {size_name} run, {wall:.0f} s", flush=True)
    if args.json:
        args.json.write_text(
            json.dumps({"size": size_name, "wall_s": wall, "rows": rows, "table": text}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
