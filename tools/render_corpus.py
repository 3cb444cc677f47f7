#!/usr/bin/env python3
"""Render the embedded PALM corpus from its authored text: ``palm_bench/corpus/source`` → ``data``.

Not needed at install or test time: the rendered clips ship with the package. Rerun it only when
the authored text or the voices change. Needs Debian's TTS engines and sox::

    apt-get install -y --no-install-recommends espeak-ng espeak-ng-data festival \
        festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts flite sox
    python tools/render_corpus.py            # writes palm_bench/corpus/data/

Reproducible: the same text, voices and engine/sox/libopus versions give the same bytes (the
versions are recorded in ``render_info.json``). Clips are encoded as 16 kHz Ogg/Opus (about
3.7 kB/s, decoded by soundfile's libsndfile without FFmpeg); durations in the manifest are
measured on the decoded audio. Utterances whose rendering falls outside ``--min-s``/``--max-s``
are skipped and listed in ``render_info.json`` (the text is the thing to fix).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lalm_eval.audio.io import TARGET_SR, read_audio, write_audio  # noqa: E402
from lalm_eval.audio.tts import VoiceRecipe, engine_versions, synthesize  # noqa: E402
from lalm_eval.errors import ConfigError  # noqa: E402
from palm_bench.corpus.embedded import DATA_DIR, SOURCE_DIR, load_speakers  # noqa: E402


def resolve_voices(path: Path, speaker_ids) -> dict[str, tuple[VoiceRecipe, str | None]]:
    """Map each speaker to its recipe; ``derived_from`` copies another speaker's recipe and
    applies the given sox shifts (the corpus's near-identical impostors)."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    missing = sorted(set(speaker_ids) - set(raw))
    if missing:
        raise ConfigError(f"{path}: no voice for speaker(s) {missing}")
    unknown = sorted(set(raw) - set(speaker_ids))
    if unknown:
        raise ConfigError(f"{path}: voices for unknown speaker(s) {unknown}")
    out = {}
    for sid, spec in raw.items():
        spec = dict(spec)
        parent = spec.pop("derived_from", None)
        if parent is not None:
            if parent not in raw or "derived_from" in raw[parent]:
                raise ConfigError(f"{path}: {sid}.derived_from must name a speaker with a plain recipe, got {parent!r}")
            spec = {**raw[parent], **spec}
        out[sid] = (VoiceRecipe.from_dict(spec, where=f"{path}: {sid}"), parent)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=SOURCE_DIR)
    ap.add_argument("--out", type=Path, default=DATA_DIR)
    ap.add_argument("--min-s", type=float, default=3.0)
    ap.add_argument("--max-s", type=float, default=10.0)
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args(argv)

    speakers = load_speakers(args.source)
    voices = resolve_voices(args.source / "voices.yaml", speakers)
    jobs = [(sid, i, text) for sid, spk in speakers.items() for i, text in enumerate(spk.texts, start=1)]

    def render(job):
        sid, i, text = job
        return synthesize(text, voices[sid][0])

    print(f"rendering {len(jobs)} utterances of {len(speakers)} speakers ...", flush=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        audios = list(pool.map(render, jobs))

    if args.out.exists():
        shutil.rmtree(args.out)
    lines, skipped = [], []
    for (sid, i, text), audio in zip(jobs, audios):
        uid = f"{sid}_u{i:03d}"
        seconds = len(audio) / TARGET_SR
        if not args.min_s <= seconds <= args.max_s:
            skipped.append({"id": uid, "duration": round(seconds, 2), "text": text})
            continue
        rel = Path("audio") / sid / f"{uid}.opus"
        write_audio(args.out / rel, audio, TARGET_SR)
        decoded, sr = read_audio(args.out / rel, target_sr=None)
        recipe, parent = voices[sid]
        voice = recipe.to_dict() | ({"derived_from": parent} if parent else {})
        lines.append(
            {
                "id": uid,
                "speaker": sid,
                "language": speakers[sid].language,
                "text": text,
                "duration": round(len(decoded) / sr, 3),
                "audio": rel.as_posix(),
                "sampling_rate": sr,
                "voice": voice,
            }
        )
    manifest = "".join(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n" for rec in lines)
    (args.out / "manifest.jsonl").write_text(manifest, encoding="utf-8")
    import soundfile

    info = {
        "format": "ogg/opus 16 kHz mono (libsndfile default bitrate)",
        "libsndfile": soundfile.__libsndfile_version__,
        "engines": engine_versions(),
        "n_utterances": len(lines),
        "duration_bounds_s": [args.min_s, args.max_s],
        "skipped": skipped,
    }
    (args.out / "render_info.json").write_text(json.dumps(info, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} clips to {args.out}; skipped {len(skipped)} outside [{args.min_s}, {args.max_s}] s")
    for s in skipped:
        print(f"  skipped {s['id']} ({s['duration']} s): {s['text']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
