"""Concrete speaker encoders: resemblyzer GE2E (default) and SpeechBrain ECAPA-TDNN.

Imported lazily through the registry in :mod:`lalm_eval.audio.speaker`, so torch and speechbrain
load only when an encoder is built.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lalm_eval.audio.speaker import SpeakerEncoder, UnusableClip

NO_SPEECH = (
    "no speech left after voice-activity trimming (resemblyzer drops silence: the clip is silent, "
    "noise only, or shorter than about 0.2 s of speech)"
)


class ResemblyzerEncoder(SpeakerEncoder):
    """GE2E LSTM encoder (256-d) whose weights ship inside the ``resemblyzer`` wheel.

    Batched for real: every clip is cut into resemblyzer's 1.6 s partial windows, the partials
    of the whole batch go through the LSTM in one forward pass, and each clip's embedding is the
    normalised mean of its partials, the same computation as ``VoiceEncoder.embed_utterance``.
    """

    name = "resemblyzer-ge2e"
    dim = 256

    def __init__(self, device: str = "cpu", cache_dir=None, batch_size: int = 64, max_partials_per_forward: int = 512):
        super().__init__(cache_dir=cache_dir, batch_size=batch_size)
        import torch
        from resemblyzer import VoiceEncoder

        self._torch = torch
        self.model = VoiceEncoder(device=device, verbose=False).eval()
        self.max_partials = max_partials_per_forward

    @staticmethod
    def _preprocess(wav: np.ndarray) -> np.ndarray:
        """resemblyzer's ``preprocess_wav`` (volume normalisation + long-silence trimming), the same
        samples out; its trimming packs the PCM with ``struct.pack(*samples)``, here ``tobytes``."""
        from resemblyzer.audio import normalize_volume
        from resemblyzer.hparams import audio_norm_target_dBFS

        with np.errstate(all="ignore"):  # a silent clip: log10(0) in its volume normalisation
            return _trim_long_silences(normalize_volume(wav, audio_norm_target_dBFS, increase_only=True))

    @classmethod
    def check_clip(cls, audio: np.ndarray) -> str | None:
        reason = super().check_clip(audio)
        if reason is None and cls._preprocess(np.asarray(audio, dtype=np.float32)).size == 0:
            return NO_SPEECH
        return reason

    def _partials(self, wav: np.ndarray, index: int = 0) -> np.ndarray:
        from resemblyzer import audio

        reason = SpeakerEncoder.check_clip(wav)
        wav = self._preprocess(wav) if reason is None else wav
        if reason is not None or wav.size == 0:
            raise UnusableClip(index, reason or NO_SPEECH)
        wav_slices, mel_slices = self.model.compute_partial_slices(len(wav), rate=1.3, min_coverage=0.75)
        if wav_slices[-1].stop >= len(wav):
            wav = np.pad(wav, (0, wav_slices[-1].stop - len(wav)), "constant")
        mel = audio.wav_to_mel_spectrogram(wav)
        return np.stack([mel[s] for s in mel_slices])

    def _embed_batch(self, audios: list[np.ndarray]) -> np.ndarray:
        partials = [self._partials(a, i) for i, a in enumerate(audios)]
        counts = [len(p) for p in partials]
        stacked = np.concatenate(partials)
        outs = []
        with self._torch.no_grad():
            for start in range(0, len(stacked), self.max_partials):
                mels = self._torch.from_numpy(stacked[start : start + self.max_partials]).to(self.model.device)
                outs.append(self.model(mels).cpu().numpy())
        partial_embs = np.concatenate(outs)
        bounds = np.cumsum([0] + counts)
        means = [partial_embs[bounds[i] : bounds[i + 1]].mean(axis=0) for i in range(len(audios))]
        return np.stack(means)


def _trim_long_silences(wav: np.ndarray) -> np.ndarray:
    """``resemblyzer.audio.trim_long_silences`` step by step, with the 16-bit PCM made by numpy
    (the same little-endian bytes as its ``struct.pack``, several times faster)."""
    import webrtcvad
    from resemblyzer import hparams as hp
    from resemblyzer.audio import int16_max
    from scipy.ndimage import binary_dilation

    step = (hp.vad_window_length * hp.sampling_rate) // 1000
    wav = wav[: len(wav) - (len(wav) % step)]
    pcm = np.round(wav * int16_max).astype("<i2").tobytes()
    vad = webrtcvad.Vad(mode=3)
    flags = np.array(
        [vad.is_speech(pcm[a * 2 : (a + step) * 2], sample_rate=hp.sampling_rate) for a in range(0, len(wav), step)]
    )
    width = hp.vad_moving_average_width
    padded = np.cumsum(np.concatenate((np.zeros((width - 1) // 2), flags, np.zeros(width // 2))), dtype=float)
    padded[width:] = padded[width:] - padded[:-width]
    mask = np.round(padded[width - 1 :] / width).astype(bool)
    mask = binary_dilation(mask, np.ones(hp.vad_max_silence_length + 1))
    return wav[np.repeat(mask, step)]


class EcapaEncoder(SpeakerEncoder):
    """SpeechBrain ECAPA-TDNN (192-d), e.g. ``speechbrain/spkrec-ecapa-voxceleb``.

    ``source`` is a local folder holding ``hyperparams.yaml``, ``embedding_model.ckpt``,
    ``mean_var_norm_emb.ckpt``, ``classifier.ckpt`` and ``label_encoder.txt`` (works offline), or
    a Hub id (needs the network). Needs the ``ecapa`` extra (speechbrain + torchaudio).
    """

    dim = 192

    def __init__(
        self,
        source: str = "speechbrain/spkrec-ecapa-voxceleb",
        device: str = "cpu",
        savedir: str | None = None,
        cache_dir=None,
        batch_size: int = 32,
    ):
        self.name = "ecapa-" + Path(str(source).rstrip("/")).name
        super().__init__(cache_dir=cache_dir, batch_size=batch_size)
        try:
            import torch
            from speechbrain.inference.speaker import EncoderClassifier
        except ImportError as exc:
            raise ImportError(
                "the 'ecapa' speaker encoder needs speechbrain and torchaudio: "
                "pip install 'lalm-eval[ecapa]' (see README: torchaudio needs a matching torch)"
            ) from exc
        self._torch = torch
        self.model = EncoderClassifier.from_hparams(source=str(source), savedir=savedir, run_opts={"device": device})

    def _embed_batch(self, audios: list[np.ndarray]) -> np.ndarray:
        torch = self._torch
        lengths = [len(a) for a in audios]
        longest = max(lengths)
        wavs = torch.zeros(len(audios), longest)
        for i, a in enumerate(audios):
            wavs[i, : len(a)] = torch.from_numpy(a)
        rel = torch.tensor([n / longest for n in lengths])
        with torch.no_grad():
            emb = self.model.encode_batch(wavs, wav_lens=rel)
        return emb.squeeze(1).cpu().numpy()
