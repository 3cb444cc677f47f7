"""Offline English speech recognition with pocketsphinx (its wheel ships the en-US model).

Optional: the ``asr`` extra (``pip install 'lalm-eval[asr]'``). pocketsphinx is imported only when
something is transcribed, so recognition and speaker counting work without it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import numpy as np

from lalm_eval.errors import ConfigError

INSTALL_HINT = "pip install 'lalm-eval[asr]'"


def pocketsphinx_version() -> str:
    try:
        return version("pocketsphinx")
    except PackageNotFoundError:
        return "missing"


class PocketsphinxASR:
    """``transcribe(audio)`` → lower-case words; one decoder, built on first use."""

    def __init__(self, sr: int = 16_000):
        self.sr = sr
        self._decoder = None
        self.name = f"pocketsphinx-{pocketsphinx_version()}-en-us"

    @property
    def decoder(self):
        if self._decoder is None:
            try:
                from pocketsphinx import Decoder
            except ImportError as exc:
                raise ConfigError(
                    f"the cascade's English speech recogniser needs pocketsphinx: {INSTALL_HINT}"
                ) from exc
            self._decoder = Decoder(samprate=self.sr, logfn="/dev/null")
        return self._decoder

    def transcribe(self, audio: np.ndarray) -> str:
        audio = np.asarray(audio, dtype=np.float32)
        if audio.size == 0:
            return ""
        pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        d = self.decoder
        d.start_utt()
        d.process_raw(pcm, full_utt=True)
        d.end_utt()
        hyp = d.hyp()
        return " ".join(hyp.hypstr.split()) if hyp is not None else ""
