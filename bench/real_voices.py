"""Real recordings that packages ship, as speaker-labelled clips (no synthetic speech here).

``scripts/fetch_real_voices.sh`` installs and downloads all of it (idempotent). Debian
(``apt-get install --no-install-recommends asterisk-core-sounds-en-wav
asterisk-core-sounds-es-wav asterisk-core-sounds-fr-wav asterisk-core-sounds-it-wav
asterisk-core-sounds-ru-wav asterisk-prompt-it-menardi-wav pocketsphinx-testdata``; Menardi's
folder comes from ``asterisk-prompt-it-menardi-wav``, not from the core Italian sounds):

- the Asterisk PBX prompts, one professional voice talent per folder under
  ``/usr/share/asterisk/sounds/``: ``en_US_f_Allison`` and ``es_MX_f_Allison`` (the same person,
  Allison Smith, in two languages), ``fr_CA_f_June``, ``it_IT_f_Menardi``, ``it_IT_m_Carlo``,
  ``ru_RU_f_IvrvoiceRU``; 8 kHz studio recordings, CC-BY-SA-3.0 (Allison) / see each package;
- ``pocketsphinx-testdata``: a few LibriVox utterances of one reader
  (``/usr/share/pocketsphinx/test/data/librivox``).

PyPI: the ``pyannote-audio`` wheel (4.0.7) carries ``pyannote/audio/sample/sample.wav``, a real
30 s two-person telephone call, with its RTTM; :func:`pyannote_call` reads it from an installed
``pyannote.audio`` or from a wheel file (``pip download --no-deps pyannote-audio==4.0.7``), so
torch-only machines need not install pyannote itself.

Every loader returns ``{speaker: [16 kHz float32 clips]}`` and ``{}`` when its source is absent.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

SR = 16_000
ASTERISK = Path("/usr/share/asterisk/sounds")
#: folder → speaker; both Allison folders are one person
ASTERISK_VOICES = {
    "en_US_f_Allison": "allison",
    "es_MX_f_Allison": "allison",
    "fr_CA_f_June": "june",
    "it_IT_f_Menardi": "menardi",
    "it_IT_m_Carlo": "carlo",
    "ru_RU_f_IvrvoiceRU": "ivrvoice_ru",
}
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
PYANNOTE_SAMPLE = "pyannote/audio/sample/sample"


def _read(path_or_bytes, sr: int = SR) -> np.ndarray:
    from lalm_eval.audio.io import read_audio

    return read_audio(path_or_bytes, sr)[0]


def asterisk_voices(
    min_s: float = 1.5,
    max_per_folder: int | None = None,
    folders: tuple[str, ...] | None = None,
    max_s: float | None = None,
) -> dict[str, list[np.ndarray]]:
    """Prompts of ``min_s`` to ``max_s`` seconds per voice (top folder only), the longest
    ``max_per_folder`` of each folder (all when None), in file-name order."""
    import soundfile as sf

    out: dict[str, list[np.ndarray]] = {}
    for folder, speaker in ASTERISK_VOICES.items():
        d = ASTERISK / folder
        if (folders and folder not in folders) or not d.is_dir():
            continue
        long = []
        for f in sorted(d.glob("*.wav")):
            try:
                seconds = sf.info(str(f)).duration
            except RuntimeError:  # a few prompts are empty or unreadable
                continue
            if seconds >= min_s and (max_s is None or seconds <= max_s):
                long.append((seconds, f))
        picked = sorted(long, key=lambda x: -x[0])[:max_per_folder] if max_per_folder else long
        for _, f in sorted(picked, key=lambda x: x[1].name):
            out.setdefault(speaker, []).append(_read(f))
    return out


def librivox_reader(min_s: float = 1.5) -> dict[str, list[np.ndarray]]:
    clips = [a for a in (_read(f) for f in sorted(LIBRIVOX.glob("*.wav"))) if len(a) >= min_s * SR]
    return {"librivox_reader": clips} if clips else {}


def _pyannote_sources() -> tuple[bytes, str] | None:
    try:
        import importlib.util

        spec = importlib.util.find_spec("pyannote.audio")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        base = Path(spec.origin).parent / "sample" / "sample"
        if base.with_suffix(".wav").is_file():
            return base.with_suffix(".wav").read_bytes(), base.with_suffix(".rttm").read_text()
    for wheel in sorted(Path(p).expanduser() for p in _wheel_candidates()):
        if wheel.is_file():
            with zipfile.ZipFile(wheel) as z:
                return z.read(PYANNOTE_SAMPLE + ".wav"), z.read(PYANNOTE_SAMPLE + ".rttm").decode()
    return None


def _wheel_candidates() -> list[str]:
    import glob
    import os

    where = os.environ.get("PYANNOTE_WHEEL_DIR", "")
    return [
        p
        for d in [where, "/tmp/spk/pyannote-audio", "~/.cache/lalm_eval/wheels"]
        if d
        for p in glob.glob(str(Path(d).expanduser() / "pyannote_audio-*.whl"))
    ]


def pyannote_call() -> tuple[np.ndarray, list[tuple[str, float, float]]] | None:
    """The real two-person call ``(audio, [(speaker, start_s, end_s), ...])``, or None."""
    found = _pyannote_sources()
    if found is None:
        return None
    wav, rttm = found
    turns = []
    for line in rttm.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "SPEAKER":
            turns.append((f[7], float(f[3]), float(f[3]) + float(f[4])))
    return _read(io.BytesIO(wav)), turns


def call_speakers(min_s: float = 1.0) -> dict[str, list[np.ndarray]]:
    """Single-speaker stretches of the real call (overlaps with the other speaker cut out)."""
    found = pyannote_call()
    if found is None:
        return {}
    audio, turns = found
    out: dict[str, list[np.ndarray]] = {}
    for spk, a, b in turns:
        for other, c, d in turns:  # trim any overlap with another speaker's turn
            if other != spk and c < b and d > a:
                if c <= a:
                    a = max(a, d)
                else:
                    b = min(b, c)
        if b - a >= min_s:
            out.setdefault("call_" + spk, []).append(audio[int(a * SR) : int(b * SR)])
    return out


def alternating_dialogue(
    a: list[np.ndarray],
    b: list[np.ndarray],
    seconds: float = 30.0,
    gap_s: float = 0.3,
    noise: float = 0.002,
    seed: int = 0,
) -> tuple[np.ndarray, list[tuple[int, float, float]]]:
    """A ``seconds``-long dialogue of turns taken alternately from ``a`` and ``b`` (clips in
    order), separated by ``gap_s`` of faint noise; returns the audio and ``(speaker 0/1, start, end)``."""
    rng = np.random.default_rng(seed)
    parts, turns, t, i = [], [], 0.0, 0
    total = int(seconds * SR)
    while True:
        clip = (a, b)[i % 2][(i // 2) % len((a, b)[i % 2])]
        if (t + len(clip) / SR) * SR > total:
            break
        parts.append(clip)
        turns.append((i % 2, t, t + len(clip) / SR))
        t += len(clip) / SR
        gap = int(gap_s * SR)
        parts.append(np.zeros(gap, np.float32))
        t += gap_s
        i += 1
    audio = np.concatenate(parts)[:total]
    audio = np.pad(audio, (0, total - len(audio)))
    return (audio + noise * rng.standard_normal(total)).astype(np.float32), turns
