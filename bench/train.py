#!/usr/bin/env python3
"""Training throughput of the PALM §5.2 recipes through ``lalm_eval.training`` (issue 13).

    python bench/train.py                                   # tiny Qwen2-Audio on CPU, every recipe
    python bench/train.py --arch qwen2-audio-7b --device cuda --recipes full,lora_attn_ffn,prompt_tuning
    python bench/train.py --steps 6 --batch_size 2 --seconds 20 --json out.json

Each recipe runs ``--steps`` optimizer steps of ``--batch_size`` examples (``--seconds`` of audio
each, a PALM-like question naming a subject and a templated answer) through the same code path as
``lalm-eval train`` (task YAML → examples → the adapter's ``build_inputs`` → ``Trainer``), and reports
samples/s (transformers' ``train_samples_per_second``, first step included, and the same without
the first step from the step timestamps), trainable parameters and, on CUDA, peak GPU memory.

``qwen2-audio-7b``: the full-size Qwen2-Audio-7B architecture (Qwen-7B text model: 32 layers of
4096, FFN 11008, 32 heads, vocab 156032; Whisper-large-v3-style encoder: 32 layers of 1280, 20
heads, FFN 5120, 128 mel bins) with random weights, config built here (nothing downloaded), built
directly on the device in bf16; the processor and tokenizer are the tiny model's (ids stay below
its vocab), which changes nothing in the compute. ``full`` runs with gradient checkpointing (bf16
AdamW states; ~70 GB before activations), the others without unless ``--gradient_checkpointing``.

Measured (tiny, CPU, 2 cores, 6 steps x 2 examples of 20 s, 2026-12-01): samples/s full 5.8,
lora_all_linear 8.4, lora_attn 9.4, lora_attn_ffn 7.6, lora_audio_tower 6.1, lora_ffn 10.8,
prompt_tuning 11.0. The 7B run has not been made (no GPU in this session).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NAMES = ["Alice", "Bob", "Carol", "David"]


def fixture(root: Path, n: int, seconds: float) -> Path:
    """A local dataset (train split) and task folder shaped like PALM recognition."""
    import datasets
    import numpy as np
    import soundfile as sf

    from lalm_eval.hub.card import front_matter, write_card
    from lalm_eval.hub.parquet import export_dataset_dict

    rng = np.random.default_rng(0)
    rows = {"question": [], "answer": [], "audio": [], "n_speakers": [], "queried": []}
    for i in range(n):
        name = NAMES[i % len(NAMES)]
        buf = io.BytesIO()
        sf.write(buf, (0.1 * rng.standard_normal(int(16000 * seconds))).astype("float32"), 16000, format="FLAC")
        rows["question"].append(f"Can you identify {name}'s voice in this conversation?")
        rows["answer"].append(f"Yes, {name} is speaking in this audio." if i % 2 else f"No, {name} does not speak.")
        rows["audio"].append({"bytes": buf.getvalue(), "path": None})
        rows["n_speakers"].append(1)
        rows["queried"].append([name])
    features = datasets.Features(
        {
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "audio": datasets.Audio(sampling_rate=16000),
            "n_speakers": datasets.Value("int32"),
            "queried": datasets.Sequence(datasets.Value("string")),
        }
    )
    files = export_dataset_dict(
        {"main": datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows, features)})}, root / "ds"
    )
    write_card(root / "ds", f"---\n{front_matter(files)}\n---\n")
    tasks = root / "tasks"
    tasks.mkdir()
    (tasks / "bench_recognition.yaml").write_text(f"""task: bench_recognition
dataset_path: {root / "ds"}
dataset_name: main
training_split: train
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "Listen to the audio, then answer the question.\\nQuestion: {{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
doc_to_subjects: "{{{{ queried }}}}"
metric_list: [{{metric: token_f1, aggregation: mean, higher_is_better: true}}]
metadata: {{version: 1}}
""")
    return tasks


def adapter_for(arch: str, tiny_dir: Path, device: str):
    import torch

    from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter

    adapter = Qwen2AudioAdapter(pretrained=str(tiny_dir), device=device)
    if arch == "tiny":
        return adapter
    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration

    tok = adapter.tokenizer
    from lalm_eval.models.tiny import model_shape

    shape = model_shape("qwen2_audio_7b")  # the 7B's config values, as bench/gpu_backends.py builds it
    cfg = Qwen2AudioConfig(**shape, audio_token_index=tok.convert_tokens_to_ids("<|AUDIO|>"))
    cfg.text_config.pad_token_id = tok.pad_token_id
    with torch.device(device):
        model = Qwen2AudioForConditionalGeneration._from_config(cfg, dtype=adapter.torch_dtype)
    model.generation_config.pad_token_id = tok.pad_token_id
    adapter._model = model
    return adapter


def run(recipe: str, args, tiny_dir: Path, tasks: Path, work: Path) -> dict:
    import torch

    from lalm_eval.training.trainer import TrainOptions, train

    cuda = args.device.startswith("cuda")
    adapter = adapter_for(args.arch, tiny_dir, args.device)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    stamps = []

    opts = TrainOptions(
        tasks=["bench_recognition"],
        recipe=recipe,
        output_dir=work / recipe,
        cache_dir=work / "cache",
        include_path=[str(tasks)],
        max_steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=1e-5,
        tokens=16 if recipe == "prompt_tuning" else None,
        gradient_checkpointing=args.gradient_checkpointing or (recipe == "full" and args.arch != "tiny"),
        save_steps=10**9,
    )
    t0 = time.time()
    info = train(adapter, opts)
    wall = time.time() - t0
    points = json.loads((work / recipe / "loss.json").read_text())
    stamps = [p["step"] for p in points]
    out = {
        "recipe": recipe,
        "arch": args.arch,
        "device": args.device,
        "dtype": adapter.dtype,
        "steps": info["global_step"],
        "batch_size": args.batch_size,
        "audio_s": args.seconds,
        "train_samples_per_second": info["train_samples_per_second"],
        "train_seconds": info["seconds"],
        "wall_seconds_incl_setup": round(wall, 1),
        "trainable_parameters": info["trainable_parameters"],
        "loss_first": info["loss_first"],
        "loss_last": info["loss_last"],
        "logged_steps": len(stamps),
    }
    if cuda:
        out["peak_gpu_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    del adapter
    if cuda:
        torch.cuda.empty_cache()
    return out


def main() -> int:
    from lalm_eval.models.tiny import make_tiny_model
    from lalm_eval.training.recipes import available_recipes

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", choices=["tiny", "qwen2-audio-7b"], default="tiny")
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--recipes",
        default=None,
        help="comma-separated (default: all on tiny; full,lora_attn_ffn,prompt_tuning on the 7B)",
    )
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch_size", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=20.0, help="audio per example")
    ap.add_argument("--gradient_checkpointing", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    default = available_recipes() if args.arch == "tiny" else ["full", "lora_attn_ffn", "prompt_tuning"]
    recipes = [r.strip() for r in args.recipes.split(",")] if args.recipes else default
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tiny_dir = make_tiny_model("qwen2_audio", work / "tiny")
        tasks = fixture(work, n=max(8, args.steps * args.batch_size), seconds=args.seconds)
        for recipe in recipes:
            try:
                rows.append(run(recipe, args, tiny_dir, tasks, work))
            except Exception as exc:  # noqa: BLE001 - e.g. CUDA OOM for one recipe: report it, go on
                rows.append({"recipe": recipe, "arch": args.arch, "error": repr(exc)[:500]})
            print(json.dumps(rows[-1]), flush=True)
    print("\n| recipe | samples/s | trainable params | peak GPU GiB | loss first → last |\n|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['recipe']} | {r.get('train_samples_per_second', '—')} | {r.get('trainable_parameters', '—'):,} | "
            f"{r.get('peak_gpu_memory_gib', '—')} | {r.get('loss_first', '—')} → {r.get('loss_last', r.get('error'))} |"
            if "error" not in r
            else f"| {r['recipe']} | error: {r['error']} | | | |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
