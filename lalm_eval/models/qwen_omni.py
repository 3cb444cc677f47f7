"""Qwen2.5-Omni and Qwen3-Omni, thinker only (text out; the talker and token2wav are never loaded).

``Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained`` reads the full Omni checkpoint too
(transformers maps ``thinker.*`` weights and the ``thinker_config`` sub-config). Inputs come from
``AutoProcessor`` when it loads. ``Qwen2_5OmniProcessor`` also needs an image and a video
processor, and video processors need torchvision, which does not work beside the CPU torch; then
:class:`ManualOmniProcessor` builds the same inputs from the tokenizer and the feature extractor
alone, as the processor does for text + audio: Whisper features with their attention mask
(``feature_attention_mask``), and each ``<|AUDIO|>`` of the rendered chat template expanded to
as many tokens as the audio encoder will output for that audio (batch order). A test checks that
both paths give identical tensors.

Audio parts get an ``audio`` key: the Omni chat templates accept ``{"type": "audio"}``, but also
test ``'audio' in content``.

What they hear (:attr:`~lalm_eval.models.hf_base.HFAudioAdapter.audio_limit`, read from the
checkpoint, :mod:`lalm_eval.models.audio_limits`): Qwen2.5-Omni's processor
(transformers ``Qwen2_5OmniProcessor._process_audio``) calls the feature extractor with
``padding="max_length"`` and Whisper's default ``truncation=True``, so every audio is padded and
cut to the feature extractor's ``n_samples = chunk_length * sampling_rate``: the checkpoint's
``preprocessor_config.json`` ``chunk_length`` (300 s for the public Qwen2.5-Omni checkpoints, 30 s
for a feature extractor saved with the defaults), not 30 s by construction. Its audio encoder
windows any length (``n_window``), so nothing else cuts. Qwen3-Omni's processor passes
``truncation=False``: no limit.
"""

from __future__ import annotations

import json

import transformers
from transformers.feature_extraction_utils import BatchFeature
from transformers.utils import cached_file

from lalm_eval.errors import ConfigError
from lalm_eval.models.hf_base import HFAudioAdapter


class ManualOmniProcessor:
    """Text + audio inputs of an Omni thinker without ``Qwen*OmniProcessor`` (no torchvision)."""

    def __init__(self, tokenizer, feature_extractor, chat_template: str | None, output_lengths, feature_kwargs: dict):
        self.tokenizer, self.feature_extractor = tokenizer, feature_extractor
        self.chat_template, self.output_lengths, self.feature_kwargs = chat_template, output_lengths, feature_kwargs
        self.audio_token = getattr(tokenizer, "audio_token", None) or "<|AUDIO|>"

    def apply_chat_template(self, conversation, **kwargs):
        return self.tokenizer.apply_chat_template(conversation, chat_template=self.chat_template, **kwargs)

    def __call__(self, text, audio=None, sampling_rate=None, return_tensors="pt", padding=True, audio_kwargs=None):
        text, audio, data = list(text), list(audio or []), {}
        placeholders = sum(t.count(self.audio_token) for t in text)
        if placeholders != len(audio):
            raise ValueError(f"{placeholders} {self.audio_token} placeholders in the prompts, {len(audio)} audios")
        if audio:
            feats = self.feature_extractor(
                audio,
                sampling_rate=sampling_rate,
                return_attention_mask=True,
                return_tensors="pt",
                **{**self.feature_kwargs, **(audio_kwargs or {})},
            )
            mask = feats["attention_mask"]
            counts = iter(self.output_lengths(mask.sum(-1)).tolist())
            text = [
                "".join(
                    piece if j == 0 else self.audio_token * next(counts) + piece
                    for j, piece in enumerate(t.split(self.audio_token))
                )
                for t in text
            ]
            data = {"input_features": feats["input_features"], "feature_attention_mask": mask}
        enc = self.tokenizer(text, return_tensors=return_tensors, padding=padding)
        return BatchFeature({**enc, **data}, tensor_type=return_tensors)


def _chat_template(pretrained: str, tokenizer) -> str:
    """The tokenizer's chat template, else the processor's (``chat_template.jinja`` / ``.json``)."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.chat_template
    for name in ("chat_template.jinja", "chat_template.json"):
        path = cached_file(pretrained, name, _raise_exceptions_for_missing_entries=False)
        if path:
            with open(path, encoding="utf-8") as f:
                return f.read() if name.endswith(".jinja") else json.load(f)["chat_template"]
    raise ConfigError(f"{pretrained}: no chat template (tokenizer, chat_template.jinja or chat_template.json)")


class Qwen25OmniThinkerAdapter(HFAudioAdapter):
    name = "qwen2_5_omni"
    model_class_name = "Qwen2_5OmniThinkerForConditionalGeneration"
    AUDIO_KEYS = ("input_features",)
    ONE_ROW_PER_AUDIO = True
    AUDIO_PART_KEY = "audio"
    #: what ``Qwen2_5OmniProcessor._process_audio`` passes to the feature extractor: pads and cuts to
    #: its ``n_samples`` (the checkpoint's ``chunk_length``), the limit ``AUDIO_LIMIT_RULE`` reads
    FEATURE_KWARGS = {"padding": "max_length"}
    AUDIO_LIMIT_RULE = "feature_extractor"
    MODEL_TYPES = ("qwen2_5_omni", "qwen2_5_omni_thinker")
    #: the thinker's audio encoder gives F mel frames (hop 160 samples) ((F-1)//2+1-2)//2+1 tokens
    #: (:meth:`output_lengths`): none below 3 frames, and a prompt without audio tokens is answered
    #: without the audio. One token needs 3 frames: 321 samples (0.02 s).
    MIN_AUDIO_SAMPLES = 321

    @staticmethod
    def output_lengths(feature_lengths):
        from transformers.models.qwen2_5_omni.processing_qwen2_5_omni import _get_feat_extract_output_lengths

        return _get_feat_extract_output_lengths(feature_lengths)

    def load_processor(self):
        try:  # AutoProcessor falls back to the bare tokenizer when no processor is saved: not enough
            processor = super().load_processor()
        except Exception:  # noqa: BLE001 - no torchvision (video processor) or no image processor saved
            processor = None
        return processor if hasattr(processor, "feature_extractor") else self.manual_processor()

    def manual_processor(self) -> ManualOmniProcessor:
        kw = dict(trust_remote_code=self.trust_remote_code)
        tokenizer = transformers.AutoTokenizer.from_pretrained(self.pretrained, **kw)
        fe = transformers.AutoFeatureExtractor.from_pretrained(self.pretrained, **kw)
        return ManualOmniProcessor(
            tokenizer, fe, _chat_template(self.pretrained, tokenizer), self.output_lengths, dict(self.FEATURE_KWARGS)
        )


class Qwen3OmniThinkerAdapter(Qwen25OmniThinkerAdapter):
    name = "qwen3_omni"
    model_class_name = "Qwen3OmniMoeThinkerForConditionalGeneration"
    #: what ``Qwen3OmniMoeProcessor`` passes to the feature extractor (no 30 s cut)
    FEATURE_KWARGS = {"padding": True, "truncation": False}
    AUDIO_LIMIT_RULE = "none"
    N_WINDOW = 50  # Qwen3OmniMoeProcessor.n_window
    MODEL_TYPES = ("qwen3_omni_moe", "qwen3_omni_moe_thinker")
    MIN_AUDIO_SAMPLES = 1  # one mel frame gives one audio token (:meth:`output_lengths`)

    @classmethod
    def output_lengths(cls, feature_lengths):
        from transformers.models.qwen3_omni_moe.processing_qwen3_omni_moe import _get_feat_extract_output_lengths

        return _get_feat_extract_output_lengths(feature_lengths, n_window=cls.N_WINDOW)
