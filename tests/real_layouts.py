"""Fixtures in the on-disk formats users bring: a telephone call as audio + RTTM + per-turn
transcript (the layout :mod:`msu_bench.corpora.rttm` documents) and a PALM ``folder`` corpus with
``speakers.yaml``. Audio is synthetic (a voiced tone per speaker, a different pitch each), so
nothing here needs a TTS engine; what is tested is the layout, the times and the texts.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf
import yaml

SR = 16_000

#: 13 turns of a 30.0 s two-person call: (speaker, start, end, text). Speech spans 3.1-26.9 s,
#: so a window on the turns alone would be 23.8 s long; the recording is 30.0 s.
CALL_TURNS = [
    ("A", 3.1, 5.0, "Hello, this is the front desk of the hotel."),
    ("B", 5.3, 7.0, "Hi, I booked a room for tonight."),
    ("A", 7.2, 8.6, "May I have your name please?"),
    ("B", 8.8, 10.1, "It is Morgan, with an M."),
    ("A", 10.4, 12.2, "Thank you, I can see the booking."),
    ("B", 12.5, 14.0, "Is breakfast included in the price?"),
    ("A", 14.2, 16.3, "Yes, breakfast is served from seven to ten."),
    ("B", 16.6, 18.0, "Great, and is there parking?"),
    ("A", 18.2, 20.1, "There is a garage behind the building."),
    ("B", 20.4, 21.7, "How much does it cost?"),
    ("A", 21.9, 23.6, "Twelve euros for the night."),
    ("B", 23.9, 25.2, "Fine, see you this evening."),
    ("A", 25.4, 26.9, "Goodbye and safe travels."),
]
PITCH = {"A": 180.0, "B": 120.0}


def voiced(seconds: float, f0: float, sr: int = SR) -> np.ndarray:
    """A buzzy tone with a few harmonics and a slow amplitude wobble (speech-like energy)."""
    t = np.arange(int(round(seconds * sr))) / sr
    wave = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 6))
    return (0.08 * wave * (0.6 + 0.4 * np.sin(2 * np.pi * 3.0 * t))).astype(np.float32)


def call_audio(turns, seconds: float = 30.0, sr: int = SR, channels: int = 1) -> np.ndarray:
    rng = np.random.default_rng(0)
    audio = (0.002 * rng.standard_normal(int(round(seconds * sr)))).astype(np.float32)
    for spk, start, end, _ in turns:
        a = int(round(start * sr))
        seg = voiced(end - start, PITCH.get(spk, 150.0), sr)
        audio[a : a + len(seg)] += seg[: len(audio) - a]
    return np.stack([audio] * channels, axis=1) if channels > 1 else audio


def write_rttm_call(
    folder: Path,
    name: str = "call",
    turns=CALL_TURNS,
    seconds: float = 30.0,
    transcript_names: dict | None = None,
    transcript: str = "json",
    untranscribed: tuple[int, ...] = (),
    audio: bool = True,
) -> Path:
    """``<name>.wav`` + ``<name>.rttm`` + ``<name>.json|.csv`` in ``folder``.

    ``transcript_names`` renames speakers in the transcript only (RTTM keeps ``A``/``B``), as
    when the transcripts come from another tool than the diarization; ``untranscribed`` lists
    turn indices left out of the transcript.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if audio:
        sf.write(folder / f"{name}.wav", call_audio(turns, seconds), SR)
    lines = [f"SPEAKER {name} 1 {s:.2f} {e - s:.2f} <NA> <NA> {spk} <NA> <NA>" for spk, s, e, _ in turns]
    (folder / f"{name}.rttm").write_text("\n".join(lines) + "\n", encoding="utf-8")
    names = transcript_names or {}
    rows = [
        {"start": s, "end": e, "speaker": names.get(spk, spk), "text": text}
        for i, (spk, s, e, text) in enumerate(turns)
        if i not in untranscribed
    ]
    if transcript == "json":
        (folder / f"{name}.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    else:
        body = "".join(f'{r["start"]},{r["end"]},{r["speaker"]},"{r["text"]}"\n' for r in rows)
        (folder / f"{name}.csv").write_text("start,end,speaker,text\n" + body, encoding="utf-8")
    return folder


def write_folder_corpus(
    root: Path, speakers: dict[str, dict], clips_per_speaker: int = 3, seconds: float = 1.0
) -> Path:
    """A PALM ``folder`` corpus: ``<speaker>/<n>.wav`` + ``<n>.txt`` and ``speakers.yaml``
    holding ``speakers`` (id -> fields, e.g. ``{"language": "en", "role": "subject"}``)."""
    for i, sid in enumerate(speakers):
        for n in range(clips_per_speaker):
            path = root / sid / f"{n:02d}.wav"
            path.parent.mkdir(parents=True, exist_ok=True)
            sf.write(path, voiced(seconds, 100.0 + 15.0 * i + 3.0 * n), SR)
            path.with_suffix(".txt").write_text(f"Utterance {n} of speaker {sid}.", encoding="utf-8")
    (root / "speakers.yaml").write_text(yaml.safe_dump(speakers, allow_unicode=True), encoding="utf-8")
    return root
