#!/usr/bin/env python3
"""Render the embedded MSU conversations: ``msu_bench/conversations/*.yaml`` → ``data/``.

Not needed at install or test time (the rendered audio ships with the package). Needs Debian's
TTS engines and sox, as ``tools/render_corpus.py`` describes::

    python tools/render_conversations.py          # all conversations
    python tools/render_conversations.py en_c03   # some (the manifest is rewritten for all)

Writes ``data/audio/<id>.opus`` (16 kHz Ogg/Opus, byte-reproducible), ``data/manifest.jsonl``
(one conversation a line: the script's annotations plus measured turn times) and
``data/render_info.json``. Conversations outside 60–120 s are listed (fix their text).
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lalm_eval.audio.io import TARGET_SR, read_audio, write_audio  # noqa: E402
from lalm_eval.audio.tts import engine_versions  # noqa: E402
from lalm_eval.seeding import stable_int  # noqa: E402
from msu_bench.render import CONVERSATIONS_DIR, palette, render_conversation  # noqa: E402

DATA = CONVERSATIONS_DIR / "data"


def render_one(path: Path) -> dict:
    script = yaml.safe_load(path.read_text(encoding="utf-8"))
    mix, turns = render_conversation(script, str(path), seed=stable_int("background", script["id"]) % (2**31))
    rel = Path("audio") / f"{script['id']}.opus"
    write_audio(DATA / rel, mix, TARGET_SR)
    decoded, sr = read_audio(DATA / rel, target_sr=None)
    speakers = {k: {**v, "voice_recipe": palette()[v["voice"]]["recipe"]} for k, v in script["speakers"].items()}
    return {
        **script,
        "speakers": speakers,
        "turns": turns,
        "audio": rel.as_posix(),
        "duration": round(len(decoded) / sr, 3),
        "sampling_rate": sr,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="*", help="conversation ids to (re)render; default: all")
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args(argv)
    paths = sorted(CONVERSATIONS_DIR.glob("*_c*.yaml"))
    manifest_path = DATA / "manifest.jsonl"
    old = {}
    if manifest_path.is_file():
        old = {r["id"]: r for r in map(json.loads, manifest_path.read_text(encoding="utf-8").splitlines())}
    todo = [p for p in paths if not args.ids or p.stem in args.ids]
    with ThreadPoolExecutor(args.jobs) as pool:
        fresh = {r["id"]: r for r in pool.map(render_one, todo)}
    records = [fresh.get(p.stem) or old[p.stem] for p in paths if p.stem in fresh or p.stem in old]
    manifest_path.write_text(
        "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records), encoding="utf-8"
    )
    bad = [(r["id"], r["duration"]) for r in records if not 60 <= r["duration"] <= 120]
    info = {
        "format": "ogg/opus 16 kHz mono",
        "engines": engine_versions(),
        "n_conversations": len(records),
        "durations": {r["id"]: r["duration"] for r in records},
        "outside_60_120_s": bad,
    }
    (DATA / "render_info.json").write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for r in records:
        print(f"{r['id']}: {r['duration']:6.1f} s, {len(r['speakers'])} speakers, {len(r['turns'])} turns")
    if bad:
        print(f"outside 60-120 s: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
