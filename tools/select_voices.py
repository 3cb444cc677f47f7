#!/usr/bin/env python3
"""Pick mutually distinct TTS voices for the embedded PALM corpus: the measurement behind ``voices.yaml``.

Renders ~260 candidate voice recipes (flite, festival and espeak-ng voices with their variants,
plus derived ones: sox pitch shifts and espeak base pitch) on the same four test sentences per
language (taken from ``palm_bench/corpus/source/negatives.yaml``), embeds every clip with
resemblyzer GE2E and estimates each engine voice's gender from its median F0 (librosa pYIN,
> 150 Hz is female). The derived recipes were made as extra female voices (male voices pitched
up, female ones at another base pitch, slt shifted both ways) and count as female whatever their
F0 (several measure 110-150 Hz; the F0 column shows it). Voices with no voiced frames or
identical to an earlier candidate (centroid cosine >= 0.99) are dropped. Subjects fill the slots
(en, F) x6, (en, M) x6, (zh, F) x3, (zh, M) x3 greedily, each slot taking the candidate that
minimises

    max centroid cosine to the subjects already chosen - 0.5 * mean within-voice cosine,

followed by 5 sweeps that re-choose each slot given all the others; festival's
``cmu_us_slt_arctic_hts`` (the same speaker as flite ``slt``) is never a subject. Prints the
selection (flagging an espeak variant shared by subjects of different languages, which
``voices.yaml`` avoids), then per (language, gender) the remaining candidates by their highest
cosine to a subject: the menu from which graded negatives are picked.

The final assignment of the selected voices to named subjects (matching gender and age) and the
choice of graded negatives were made by hand from this output and recorded in ``voices.yaml``.
Needs Debian's TTS engines and sox (the apt line is in ``tools/render_corpus.py``); takes about
3 minutes on 2 idle cores (``--languages zh`` a minute or two)::

    python tools/select_voices.py [--languages en,zh] [--jobs N] [--out-json sel.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lalm_eval.audio.io import TARGET_SR  # noqa: E402
from lalm_eval.audio.speaker import get_speaker_encoder  # noqa: E402
from lalm_eval.audio.tts import VoiceRecipe, synthesize  # noqa: E402

NEGATIVES = ROOT / "palm_bench" / "corpus" / "source" / "negatives.yaml"
VARIANTS = [
    "",
    *(f"+f{i}" for i in range(1, 6)),
    *(f"+m{i}" for i in range(1, 8)),
    *(
        "+" + v
        for v in "Annie Andy klatt Alicia Linda Steph Michael Max Zac Gene John Lee Mike Denis "
        "Auntie Belinda anika Jacky Quincy Robert Paul grandpa Edward".split()
    ),
]
EN_ESPEAK = ("en-us", "en-gb", "en-gb-scotland", "en-029", "en-gb-x-rp")
ZH_ESPEAK = "cmn-latn-pinyin"  # reads Hanzi; plain `cmn` does not
SLOTS = {"en": {"F": 6, "M": 6}, "zh": {"F": 3, "M": 3}}
NOT_SUBJECTS = {"festival:cmu_us_slt_arctic_hts"}  # the same speaker as flite slt
FEMALE_F0_HZ, DUPLICATE_COS, INTRA_WEIGHT, SWEEPS = 150.0, 0.99, 0.5, 5


def espeak(voice: str, **kw) -> dict:
    return {"engine": "espeak-ng", "voice": voice, **kw}


def candidates(lang: str) -> list[tuple[VoiceRecipe, bool]]:
    """(recipe, derived) pairs of one language: engine voices, then the derived extra female voices."""
    if lang == "zh":
        base = [espeak(ZH_ESPEAK + v) for v in VARIANTS]
        derived = [
            espeak(ZH_ESPEAK + v, pitch_cents=c)
            for v in ("+m1", "+Andy", "+klatt", "+Jacky", "+Michael")
            for c in (500, 700)
        ]
        derived += [espeak(ZH_ESPEAK + v, pitch=p) for v in ("+f3", "+f1", "+Alicia", "+f4", "+f5") for p in (20, 85)]
    else:
        base = [{"engine": "flite", "voice": v} for v in ("kal", "awb", "rms", "slt")]
        base += [{"engine": "festival", "voice": v} for v in ("ked_diphone", "cmu_us_slt_arctic_hts")]
        base += [espeak(b + v) for b in EN_ESPEAK for v in VARIANTS]
        derived = [{"engine": "flite", "voice": v, "pitch_cents": c} for v in ("rms", "kal", "awb") for c in (500, 700)]
        derived += [{"engine": "festival", "voice": "ked_diphone", "pitch_cents": c} for c in (500, 700)]
        derived += [{"engine": "flite", "voice": "slt", "pitch_cents": c} for c in (-250, 250)]
        derived += [espeak(v, pitch=p) for v in ("en-us+f2", "en-gb+f3", "en-029+f5", "en-us+f4") for p in (20, 85)]
    return [(VoiceRecipe.from_dict(d), False) for d in base] + [(VoiceRecipe.from_dict(d), True) for d in derived]


def test_sentences(lang: str, n: int = 4) -> list[str]:
    """Every 8th of the language's first 40 negative-pool utterances (several speakers' texts)."""
    negatives = yaml.safe_load(NEGATIVES.read_text(encoding="utf-8"))["negatives"]
    pool = [u for spk in negatives if spk["language"] == lang for u in spk["utterances"]]
    return pool[:40:8][:n]


def render(recipe: VoiceRecipe, texts: list[str]) -> tuple[list[np.ndarray], float]:
    """The recipe's clips and the median F0 (Hz) of the first one; NaN when nothing is voiced."""
    import librosa

    audios = [synthesize(t, recipe) for t in texts]
    f0, _, _ = librosa.pyin(audios[0], fmin=60, fmax=400, sr=TARGET_SR, frame_length=1024)
    voiced = f0[~np.isnan(f0)]
    return audios, float(np.median(voiced)) if voiced.size else float("nan")


def survey(langs: list[str], jobs: int, cache_dir: str | None) -> dict:
    """Render and embed all candidates; returns names, languages, F0, within-voice and centroid cosines."""
    cands = [(lang, r, derived) for lang in langs for r, derived in candidates(lang)]
    texts = {lang: test_sentences(lang) for lang in langs}
    print(f"rendering {len(cands)} candidates x {len(texts[langs[0]])} sentences ...", flush=True)
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda c: render(c[1], texts[c[0]]), cands))
    encoder = get_speaker_encoder("resemblyzer", cache_dir=cache_dir)
    flat = encoder.embed([a for audios, _ in results for a in audios])
    bounds = np.cumsum([0] + [len(audios) for audios, _ in results])
    embs = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    cent = np.stack([e.mean(0) for e in embs])
    cent /= np.linalg.norm(cent, axis=1, keepdims=True)
    intra = [float(((e @ e.T).sum() - np.trace(e @ e.T)) / (len(e) * (len(e) - 1))) for e in embs]
    f0 = [f for _, f in results]
    gender = [
        None if np.isnan(f) else "F" if derived or f > FEMALE_F0_HZ else "M" for f, (_, _, derived) in zip(f0, cands)
    ]
    return {
        "encoder": encoder.name,
        "texts": texts,
        "recipes": [c[1] for c in cands],
        "names": [c[1].describe() for c in cands],
        "lang": [c[0] for c in cands],
        "f0": f0,
        "derived": [c[2] for c in cands],
        "gender": gender,
        "intra": np.array(intra),
        "cos": cent @ cent.T,
    }


def screen(data: dict) -> dict[int, str]:
    """Why each dropped candidate is dropped (no voiced frames, or duplicate of an earlier one)."""
    keep, dropped = [], {}
    for i in range(len(data["names"])):
        dup = next((j for j in keep if data["cos"][i, j] >= DUPLICATE_COS), None)
        if data["gender"][i] is None:
            dropped[i] = "no voiced frames"
        elif dup is not None:
            dropped[i] = f"duplicate of {data['names'][dup]} ({data['cos'][i, dup]:.3f})"
        else:
            keep.append(i)
    return dropped


def best(slot: tuple[str, str], others: list[int], pool: list[int], data: dict) -> int:
    """The candidate for ``slot`` with the lowest criterion given the ``others``."""
    eligible = [
        i
        for i in pool
        if (data["lang"][i], data["gender"][i]) == slot and i not in others and data["names"][i] not in NOT_SUBJECTS
    ]
    if not eligible:
        raise SystemExit(f"no candidate left for slot {slot}")
    return min(
        eligible, key=lambda i: max((data["cos"][i, j] for j in others), default=0.0) - INTRA_WEIGHT * data["intra"][i]
    )


def select(slots: list[tuple[str, str]], pool: list[int], data: dict) -> list[int]:
    """Greedy fill of the slots in order, then SWEEPS passes re-choosing each slot given the rest."""
    sel: list[int] = []
    for slot in slots:
        sel.append(best(slot, sel, pool, data))
    for _ in range(SWEEPS):
        for k, slot in enumerate(slots):
            sel[k] = best(slot, sel[:k] + sel[k + 1 :], pool, data)
    return sel


def nearest(i: int, among: list[int], data: dict) -> tuple[int, float]:
    j = max((j for j in among if j != i), key=lambda j: data["cos"][i, j])
    return j, float(data["cos"][i, j])


def shared_variants(sel: list[int], data: dict) -> list[str]:
    """espeak variants used by subjects of more than one language (voices.yaml has none)."""
    langs: dict[str, set] = {}
    for i in sel:
        if data["recipes"][i].engine == "espeak-ng":
            langs.setdefault("+" + data["recipes"][i].voice.partition("+")[2], set()).add(data["lang"][i])
    return [f"{v} ({', '.join(sorted(ls))})" for v, ls in langs.items() if len(ls) > 1]


def report(sel: list[int], pool: list[int], data: dict) -> None:
    names, lang, gender = data["names"], data["lang"], data["gender"]
    print(f"\nselected subjects:\n{'lang':4} g {'recipe':50} {'F0':>4} {'within':>6}  nearest subject (cosine)")
    for i in sel:
        j, c = nearest(i, sel, data)
        print(
            f"{lang[i]:4} {gender[i]} {names[i]:50} {data['f0'][i]:4.0f} {data['intra'][i]:6.3f}  {names[j]} ({c:.3f})"
        )
    for note in shared_variants(sel, data):
        print(f"note: espeak variant {note} is shared across languages")
    for slot in dict.fromkeys((lang[i], gender[i]) for i in sel):
        rest = sorted(
            (i for i in pool if (lang[i], gender[i]) == slot and i not in sel), key=lambda i: -nearest(i, sel, data)[1]
        )
        print(f"\nremaining {slot} candidates by highest cosine to a subject:")
        for i in rest:
            j, c = nearest(i, sel, data)
            print(f"  {c:.3f}  {names[i]:50} nearest {names[j]}")


def write_json(path: Path, sel: list[int], dropped: dict[int, str], data: dict) -> None:
    def cand(i: int) -> dict:
        f0 = data["f0"][i]
        return {
            "name": data["names"][i],
            "language": data["lang"][i],
            "recipe": data["recipes"][i].to_dict(),
            "f0_hz": None if np.isnan(f0) else round(f0, 1),
            "gender": data["gender"][i],
            "derived": data["derived"][i],
            "within_cos": round(float(data["intra"][i]), 4),
            "dropped": dropped.get(i),
        }

    out = {
        "encoder": data["encoder"],
        "texts": data["texts"],
        "selection": [
            {
                **cand(i),
                "nearest": data["names"][nearest(i, sel, data)[0]],
                "nearest_cos": round(nearest(i, sel, data)[1], 4),
            }
            for i in sel
        ],
        "candidates": [cand(i) for i in range(len(data["names"]))],
        "centroid_cos": np.round(data["cos"], 4).tolist(),
    }
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--languages", default="en,zh", help="comma-separated, from: en, zh")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel renders")
    ap.add_argument("--cache-dir", default=None, help="speaker-embedding cache (passed to the encoder)")
    ap.add_argument("--out-json", type=Path, default=None, help="write the selection and all similarities")
    args = ap.parse_args(argv)
    langs = [lang.strip() for lang in args.languages.split(",") if lang.strip()]
    if not langs or set(langs) - set(SLOTS):
        ap.error(f"--languages must name some of {sorted(SLOTS)}")

    data = survey(langs, args.jobs, args.cache_dir)
    dropped = screen(data)
    pool = [i for i in range(len(data["names"])) if i not in dropped]
    print(f"{len(pool)} distinct voiced candidates of {len(data['names'])}")
    slots = [(lang, g) for lang in langs for g in "FM" for _ in range(SLOTS[lang][g])]
    sel = select(slots, pool, data)
    report(sel, pool, data)
    if args.out_json:
        write_json(args.out_json, sel, dropped, data)
        print(f"\nwrote {args.out_json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
