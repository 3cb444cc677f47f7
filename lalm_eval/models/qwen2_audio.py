"""Qwen2-Audio (``Qwen2AudioForConditionalGeneration`` + ``Qwen2AudioProcessor``).

The Hub chat template of Qwen2-Audio-7B-Instruct recognises an audio part by an ``audio`` or
``audio_url`` key (``{% if 'audio' in content or 'audio_url' in content %}``), not by its type, and
renders ``Audio N: <|audio_bos|><|AUDIO|><|audio_eos|>``; a bare ``{"type": "audio"}`` would be
dropped and the audio never placed. So every audio part gets a placeholder ``audio_url`` (the
audio itself goes to the processor). The processor expands each ``<|AUDIO|>`` to the audio's
frame count; the Whisper feature extractor pads or cuts every audio to 30 s (the model was trained
on at most 30 s): ``AUDIO_LIMIT_S = 30`` and the ``long_audio`` policy (``hf_base``) decide what
happens to longer audio, and every sample records what the model heard.
"""

from __future__ import annotations

from lalm_eval.models.hf_base import HFAudioAdapter


class Qwen2AudioAdapter(HFAudioAdapter):
    name = "qwen2_audio"
    model_class_name = "Qwen2AudioForConditionalGeneration"
    AUDIO_KEYS = ("input_features",)
    ONE_ROW_PER_AUDIO = True
    AUDIO_PART_KEY = "audio_url"
    AUDIO_LIMIT_S = 30.0  # WhisperFeatureExtractor's n_samples / sampling_rate
    MODEL_TYPES = ("qwen2_audio",)
    #: Qwen2AudioProcessor gives an audio of F mel frames (hop 160 samples) ((F-1)//2+1-2)//2+1
    #: audio tokens; the model takes a prompt whose audio tokens are never adjacent for one that the
    #: processor did not expand, and fails (transformers' "Expanding inputs ... should be done in
    #: processing", then a TypeError). Two tokens need 7 frames: 961 samples (0.06 s).
    MIN_AUDIO_SAMPLES = 961
