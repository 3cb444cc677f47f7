"""Qwen2-Audio (``Qwen2AudioForConditionalGeneration`` + ``Qwen2AudioProcessor``).

The Hub chat template of Qwen2-Audio-7B-Instruct recognises an audio part by an ``audio`` or
``audio_url`` key (``{% if 'audio' in content or 'audio_url' in content %}``), not by its type, and
renders ``Audio N: <|audio_bos|><|AUDIO|><|audio_eos|>``; a bare ``{"type": "audio"}`` would be
dropped and the audio never placed. So every audio part gets a placeholder ``audio_url`` (the
audio itself goes to the processor). The processor expands each ``<|AUDIO|>`` to the audio's
frame count; the Whisper feature extractor pads or cuts every audio to 30 s, so longer audio is
truncated (the model was trained on at most 30 s), which is logged.
"""

from __future__ import annotations

import logging

from lalm_eval.api import AUDIO_SR
from lalm_eval.models.hf_base import HFAudioAdapter

log = logging.getLogger(__name__)


class Qwen2AudioAdapter(HFAudioAdapter):
    name = "qwen2_audio"
    model_class_name = "Qwen2AudioForConditionalGeneration"
    AUDIO_KEYS = ("input_features",)
    ONE_ROW_PER_AUDIO = True
    AUDIO_PART_KEY = "audio_url"
    MAX_AUDIO_SECONDS = 30.0

    def prepare_audio(self, audio, request):
        if len(audio) > self.MAX_AUDIO_SECONDS * AUDIO_SR:
            log.warning("%s: task %r doc %s: audio of %.1f s is cut to %.0f s by the feature extractor",
                        self.name, request.task, request.doc_id, len(audio) / AUDIO_SR, self.MAX_AUDIO_SECONDS)
        return super().prepare_audio(audio, request)
