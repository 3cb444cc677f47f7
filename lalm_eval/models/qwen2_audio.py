"""Qwen2-Audio (``Qwen2AudioForConditionalGeneration`` + ``Qwen2AudioProcessor``).

The Hub chat template of Qwen2-Audio-7B-Instruct recognises an audio part by an ``audio`` or
``audio_url`` key (``{% if 'audio' in content or 'audio_url' in content %}``), not by its type, and
renders ``Audio N: <|audio_bos|><|AUDIO|><|audio_eos|>``; a bare ``{"type": "audio"}`` would be
dropped and the audio never placed. So every audio part gets a placeholder ``audio_url`` (the
audio itself goes to the processor). The processor expands each ``<|AUDIO|>`` to the audio's
frame count.

What it hears: 30 s of each audio, and that is the model's, not a constant's. Its audio encoder
takes exactly ``audio_config.max_source_positions * 2`` mel frames (3000 for every released
checkpoint: transformers' ``Qwen2AudioEncoder.forward`` raises on any other length; vLLM's
``qwen2_audio.py`` runs "a fixed 30s mel input" through the same tower), 160-sample hops at
16 kHz: 30 s. ``AUDIO_LIMIT_RULE = "encoder_input"`` (:mod:`lalm_eval.models.audio_limits`) reads
``max_source_positions`` from ``config.json`` and the hop and rate from the loaded feature
extractor; a feature extractor saved with another ``chunk_length`` gets ``max_length`` of the
encoder's input, so that the features are what the encoder takes (``Qwen2AudioProcessor`` would
pad them to its own window and the encoder would refuse them). The ``long_audio`` policy
(``hf_base``) decides what happens to longer audio, and every sample records what the model heard.
"""

from __future__ import annotations

from lalm_eval.models.hf_base import HFAudioAdapter


class Qwen2AudioAdapter(HFAudioAdapter):
    name = "qwen2_audio"
    model_class_name = "Qwen2AudioForConditionalGeneration"
    AUDIO_KEYS = ("input_features",)
    ONE_ROW_PER_AUDIO = True
    AUDIO_PART_KEY = "audio_url"
    AUDIO_LIMIT_RULE = "encoder_input"  # the encoder's fixed 3000-frame input (30 s), see the module docstring
    MODEL_TYPES = ("qwen2_audio",)
    #: Qwen2AudioProcessor gives an audio of F mel frames (hop 160 samples) ((F-1)//2+1-2)//2+1
    #: audio tokens; the model takes a prompt whose audio tokens are never adjacent for one that the
    #: processor did not expand, and fails (transformers' "Expanding inputs ... should be done in
    #: processing", then a TypeError). Two tokens need 7 frames: 961 samples (0.06 s).
    MIN_AUDIO_SAMPLES = 961
