#!/usr/bin/env python3
"""GPU: the HF ``qwen2_audio`` adapter vs the ``vllm`` adapter on the full-size Qwen2-Audio-7B
architecture with random weights, bf16, on the embedded PALM test split (``palm_recognition``).

Nothing is downloaded: the config is written here (``qwen2_audio_7b`` of
lalm_eval/models/model_shapes.yaml), the weights are random
(seeded, transformers' own init, built on the GPU in bf16), the tokenizer is the project's tiny
byte-level BPE with the Qwen chat/audio special tokens, padded with plain filler tokens to the
7B's vocabulary size so every id the model can emit decodes to text. Outputs are meaningless;
the point is throughput at the real size and whether both backends produce the same greedy text.

    python bench/gpu_backends.py [--work DIR] [--n 0] [--hf_batch_size auto]   # via bench/gpu_backends.sh

Config: text = Qwen2-7B as in Qwen2-Audio-7B(-Instruct)'s config.json (hidden 4096, 32 layers,
32 heads, 32 KV heads, intermediate 11008, vocab 156032, 8192 positions, rope theta 10000);
audio encoder = transformers' ``Qwen2AudioEncoderConfig`` defaults, which are the 7B's (d_model
1280, 32 layers, 20 heads, ffn 5120, 128 mel bins, 1500 source positions). transformers'
``Qwen2AudioConfig()`` text defaults are Qwen2Config's generic ones (intermediate 22016, vocab
151936), hence the explicit values.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def shape_7b() -> dict:
    """Qwen2-Audio-7B's config values (``qwen2_audio_7b`` in lalm_eval/models/model_shapes.yaml)."""
    from lalm_eval.models.tiny import model_shape

    return model_shape("qwen2_audio_7b")


def tokenizer_7b():
    """The tiny BPE (+ chat/audio specials) with filler vocabulary entries up to the 7B's vocab size:
    plain ``<rN>`` tokens no merge produces but every id decodes to (not added tokens: 155k of
    those would make transformers' tokenizer files huge and slow to load)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from lalm_eval.models.tiny import _BASE_SPECIAL, _SENTENCES

    audio = ["<|audio_bos|>", "<|AUDIO|>", "<|audio_eos|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        _SENTENCES * 20,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=_BASE_SPECIAL + audio,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    vocab_size = shape_7b()["text_config"]["vocab_size"]
    for i in range(vocab_size - len(vocab)):
        vocab[f"<r{i}>"] = len(vocab)
    tok = Tokenizer.from_str(json.dumps(data))
    assert tok.get_vocab_size(with_added_tokens=True) == vocab_size
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        additional_special_tokens=_BASE_SPECIAL[1:] + audio,
    )


def build_model(out: Path) -> Path:
    """Write the random-weight 7B (bf16 safetensors, ~17 GB) and its processor to ``out``, once."""
    if (out / "model.safetensors.index.json").is_file():
        return out
    import torch
    from transformers import (
        Qwen2AudioConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        WhisperFeatureExtractor,
    )

    from lalm_eval.models.tiny import QWEN2_AUDIO_TEMPLATE

    t0 = time.perf_counter()
    tokenizer = tokenizer_7b()
    processor = Qwen2AudioProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=128, sampling_rate=16000),
        tokenizer=tokenizer,
        chat_template=QWEN2_AUDIO_TEMPLATE,
    )
    cfg = Qwen2AudioConfig(**shape_7b(), audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"))
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = Qwen2AudioForConditionalGeneration(cfg)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    params = sum(p.numel() for p in model.parameters())
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, max_shard_size="5GB")
    processor.save_pretrained(out)
    del model
    torch.cuda.empty_cache()
    print(f"built {params / 1e9:.2f} B parameters (bf16) into {out} in {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/lalm-gpu-bench"))
    ap.add_argument("--n", type=int, default=0, help="docs of the PALM recognition test split (0: all)")
    ap.add_argument(
        "--tokens",
        type=int,
        default=0,
        help="new tokens (also the minimum); 0: the task's own kwargs (128 new tokens, greedy)",
    )
    ap.add_argument("--hf_batch_size", default="auto")
    ap.add_argument("--gpu_memory_utilization", type=float, default=0.85)
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("gpu_backends.py: no CUDA device visible to torch; this benchmark is for a GPU machine")
    from vllm_vs_hf import load_requests, report, run_child

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    model = build_model(work / "qwen2-audio-7b-random")
    load_requests(1, work / "cache", None)  # the embedded PALM build, once, outside the timings
    tokens = args.tokens or None
    print(f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}", flush=True)
    hf = run_child("hf", str(model), args.n, work, tokens, "bfloat16", "cuda", args.hf_batch_size, all_rows=True)
    print(f"hf done: {hf['n']} samples, generation {hf['generate_s']:.1f} s", flush=True)
    vl = run_child(
        "vllm",
        str(model),
        args.n,
        work,
        tokens,
        "bfloat16",
        "cuda",
        args.hf_batch_size,
        all_rows=True,
        vllm_args={"gpu_memory_utilization": args.gpu_memory_utilization, "max_model_len": 8192},
    )
    text = report(hf, vl)
    print(text)
    (work / "gpu_backends.json").write_text(
        json.dumps({"hf": hf, "vllm": vl, "report": text, "gpu": torch.cuda.get_device_name(0)}, indent=1)
    )
    print(f"wrote {work / 'gpu_backends.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
