"""Hooks of the forgetting checks (PALM Table 4): local copies of LibriSpeech, AISHELL-1 and MMAU in
their distributed layouts, and the embedded corpus's held-out clips, each turned once into a
Parquet folder + card (``lalm_eval.hub``) that ``datasets.load_dataset`` opens.

``prepare_<corpus>(dataset_path, dataset_name, cache_dir)`` (the tasks' ``hooks.prepare_dataset``)
finds the copy — ``dataset_path`` when it is an existing folder (a task YAML that includes one of
ours and sets ``dataset_path: /data/LibriSpeech``), else the folder in the corpus's environment
variable — reads ``dataset_name`` (the corpus split) and builds
``<cache_dir>/datasets/forgetting-<corpus>-<split>-<hash>`` once: config ``dataset_name``, split
``test``. The build is keyed by the copy's path and a listing of its files (names and sizes), so
a changed copy is rebuilt. Audio bytes are stored as distributed (FLAC / WAV / Opus), embedded
as the Parquet is written; the evaluator decodes and resamples them to 16 kHz.

Layouts (a missing copy or file is a ConfigError / DataError naming the variable, path and layout):

- LibriSpeech (``LALM_EVAL_LIBRISPEECH``): ``<root>/<split>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt``
  (one ``<ID> <TEXT>`` a line) beside ``<ID>.flac``; ``<root>`` or ``<root>/LibriSpeech``.
- AISHELL-1 (``LALM_EVAL_AISHELL1``): ``<root>/transcript/aishell_transcript_v0.8.txt`` (``<ID> 文 本``,
  words separated by spaces) and ``<root>/wav/<split>/<speaker>/<ID>.wav`` (the per-speaker
  ``.tar.gz`` of the distribution extracted); ``<root>`` or ``<root>/data_aishell``. Only the
  transcript's lines with a wav in the split are rows (the transcript covers every split); a wav
  without a transcript line is skipped and counted (AISHELL-1 has a few).
- MMAU (``LALM_EVAL_MMAU``): ``<root>/mmau-<split>.json`` (``mmau-test-mini.json``) or the JSON
  file itself: a list of ``{id, audio_id, question, choices, answer, task, category,
  sub-category, difficulty, dataset}`` as the MMAU repository publishes test-mini (field names
  from memory of that release, not checked against a copy here: ``id``, ``audio_id``,
  ``question``, ``choices``, ``answer`` are required, the rest optional); ``audio_id`` is a path
  relative to the JSON's folder (``./test-mini-audios/<id>.wav``). An answer that is not one of
  the choices is skipped and counted.
- embedded (no variable): the clips of the embedded corpus that no training split uses — the test
  split of palm_bench's clip split (``palm_bench.splits.split_clips``) under the ``small`` preset's
  ``seed`` and ``test_fraction``, i.e. the clips of PALM-Bench's test scenes, never in a train
  row or the enrollment config; configs ``en`` and ``zh``.

Skips go to ``build_info.json`` (``skipped``: counts and the first examples) and the card.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.build_once import build_once, jsonable

log = logging.getLogger(__name__)

SPLIT = "test"  # the one split of every built folder (the corpus split is the config)
LAYOUTS = {
    "librispeech": (
        "LALM_EVAL_LIBRISPEECH",
        "<root>/<split>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt beside <ID>.flac",
    ),
    "aishell1": (
        "LALM_EVAL_AISHELL1",
        "<root>/transcript/aishell_transcript_v0.8.txt and <root>/wav/<split>/<speaker>/<ID>.wav",
    ),
    "mmau": (
        "LALM_EVAL_MMAU",
        "<root>/mmau-<split>.json (a list of {id, audio_id, question, choices, answer, "
        "...}) with audio_id paths relative to it",
    ),
}
AISHELL_TRANSCRIPT = Path("transcript") / "aishell_transcript_v0.8.txt"
MMAU_REQUIRED = ("id", "audio_id", "question", "choices", "answer")
MMAU_OPTIONAL = {
    "task": "task",
    "category": "category",
    "sub-category": "sub_category",
    "difficulty": "difficulty",
    "dataset": "dataset",
}
EMBEDDED_PRESET = "small"


# -- the hooks -------------------------------------------------------------------------------------


def prepare_librispeech(dataset_path: str, dataset_name: str | None, cache_dir) -> str:
    return _prepare("librispeech", dataset_path, dataset_name, cache_dir, _librispeech_root, read_librispeech)


def prepare_aishell1(dataset_path: str, dataset_name: str | None, cache_dir) -> str:
    return _prepare("aishell1", dataset_path, dataset_name, cache_dir, _aishell_root, read_aishell1)


def prepare_mmau(dataset_path: str, dataset_name: str | None, cache_dir) -> str:
    return _prepare("mmau", dataset_path, dataset_name, cache_dir, _mmau_json, read_mmau)


def prepare_embedded(dataset_path: str, dataset_name: str | None, cache_dir) -> str:
    """The embedded corpus's held-out clips (module docstring); ``dataset_name`` is ``en`` or ``zh``."""
    if dataset_name not in ("en", "zh"):
        raise ConfigError(f"dataset_name must be 'en' or 'zh' (the embedded corpus's languages), got {dataset_name!r}")
    from palm_bench.config import load_preset

    cfg = load_preset(EMBEDDED_PRESET)
    from palm_bench.corpus.embedded import DATA_DIR

    config = {
        "corpus": "embedded",
        "language": dataset_name,
        "preset": EMBEDDED_PRESET,
        "seed": cfg.seed,
        "test_fraction": cfg.test_fraction,
        "manifest": hashlib.sha256((DATA_DIR / "manifest.jsonl").read_bytes()).hexdigest(),
    }
    out = _cache(cache_dir, dataset_path) / "datasets" / f"forgetting-embedded-{dataset_name}"
    return str(
        build_once(
            out,
            jsonable(config),
            lambda folder: _write(
                folder, "embedded", dataset_name, config, *read_embedded(dataset_name, cfg.seed, cfg.test_fraction)
            ),
        )
    )


def _prepare(corpus: str, dataset_path, dataset_name, cache_dir, locate, read) -> str:
    if not dataset_name:
        raise ConfigError(f"{corpus}: the task needs dataset_name (the corpus split, e.g. test-clean)")
    source = locate(_copy_root(corpus, dataset_path), dataset_name)
    listed = [source / AISHELL_TRANSCRIPT, source / "wav" / dataset_name] if corpus == "aishell1" else [source]
    config = {"corpus": corpus, "split": dataset_name, "source": str(source), "listing": _listing(listed)}
    digest = hashlib.sha256(str(source).encode()).hexdigest()[:10]
    out = _cache(cache_dir, dataset_path) / "datasets" / f"forgetting-{corpus}-{dataset_name}-{digest}"
    return str(
        build_once(
            out,
            jsonable(config),
            lambda folder: _write(folder, corpus, dataset_name, config, *read(source, dataset_name)),
        )
    )


def _cache(cache_dir, dataset_path) -> Path:
    if cache_dir is None:
        raise ConfigError(f"dataset_path {dataset_path!r}: a cache dir is needed to build the local copy into")
    return Path(cache_dir)


def _copy_root(corpus: str, dataset_path) -> Path:
    """``dataset_path`` when it is a folder or file, else the corpus's environment variable."""
    env, layout = LAYOUTS[corpus]
    if dataset_path and Path(str(dataset_path)).exists():
        return Path(str(dataset_path)).resolve()
    value = os.environ.get(env)
    if not value:
        raise ConfigError(
            f"{corpus}: no local copy: set {env}=/path/to/the/copy (or give the task a dataset_path "
            f"that exists; {dataset_path!r} does not). Expected layout: {layout}. Nothing is "
            "downloaded."
        )
    root = Path(value).expanduser()
    if not root.exists():
        raise ConfigError(f"{corpus}: {env}={value!r} does not exist. Expected layout: {layout}")
    return root.resolve()


def _listing(paths: list[Path]) -> str:
    """sha256 of the files read (names and sizes; folders recursively): a changed copy is rebuilt."""
    digest = hashlib.sha256()
    for path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for p in files:
            digest.update(f"{p.as_posix()}\t{p.stat().st_size}\n".encode())
    return digest.hexdigest()


# -- readers of the real layouts ---------------------------------------------------------------------


def _librispeech_root(root: Path, split: str) -> Path:
    for cand in (root / split, root / "LibriSpeech" / split):
        if cand.is_dir():
            return cand
    env, layout = LAYOUTS["librispeech"]
    raise ConfigError(
        f"librispeech: no split folder {split!r} in {root} (nor {root / 'LibriSpeech'}); expected {layout}"
    )


def read_librispeech(split_dir: Path, split: str) -> tuple[list[dict], dict]:
    """Rows ``{id, speaker, chapter, text, language, audio}`` of one split folder, by utterance id."""
    rows = []
    transcripts = sorted(split_dir.glob("*/*/*.trans.txt"))
    if not transcripts:
        raise DataError(
            split_dir,
            f"no <speaker>/<chapter>/<speaker>-<chapter>.trans.txt here; expected {LAYOUTS['librispeech'][1]}",
        )
    for trans in transcripts:
        speaker, chapter = trans.parent.parent.name, trans.parent.name
        for lineno, line in enumerate(trans.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            utt, _, text = line.strip().partition(" ")
            if not text or not utt.startswith(f"{speaker}-{chapter}-"):
                raise DataError(trans, f"line is not '<{speaker}-{chapter}-NNNN> TEXT': {line!r}", line=lineno)
            audio = trans.parent / f"{utt}.flac"
            if not audio.is_file():
                raise DataError(audio, f"audio of utterance {utt!r} ({trans.name} line {lineno}) not found")
            rows.append(
                {
                    "id": utt,
                    "speaker": speaker,
                    "chapter": chapter,
                    "text": text.strip(),
                    "language": "en",
                    "audio": _audio(audio),
                }
            )
    return sorted(rows, key=lambda r: r["id"]), {}


def _aishell_root(root: Path, split: str) -> Path:
    for cand in (root, root / "data_aishell"):
        if (cand / AISHELL_TRANSCRIPT).is_file():
            return cand
    raise ConfigError(
        f"aishell1: no {AISHELL_TRANSCRIPT} in {root} (nor {root / 'data_aishell'}); expected {LAYOUTS['aishell1'][1]}"
    )


def read_aishell1(root: Path, split: str) -> tuple[list[dict], dict]:
    """Rows ``{id, speaker, text, language, audio}`` of ``wav/<split>/`` that the transcript covers."""
    transcript = root / AISHELL_TRANSCRIPT
    texts = {}
    for lineno, line in enumerate(transcript.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        utt, _, text = line.strip().partition(" ")
        if not text.strip():
            raise DataError(transcript, f"line has an id but no text: {line!r}", line=lineno)
        texts[utt] = text.strip()
    wav_dir = root / "wav" / split
    if not wav_dir.is_dir():
        raise ConfigError(f"aishell1: no folder {wav_dir}; expected {LAYOUTS['aishell1'][1]}")
    wavs = sorted(wav_dir.glob("*/*.wav"))
    if not wavs:
        packed = sorted(wav_dir.glob("*.tar.gz"))
        hint = (
            (
                f" ({len(packed)} per-speaker .tar.gz there: extract them, e.g. "
                f"`for f in {wav_dir}/*.tar.gz; do tar xzf $f -C {root / 'wav'}/..; done`)"
            )
            if packed
            else ""
        )
        raise DataError(wav_dir, f"no <speaker>/<ID>.wav files{hint}")
    rows, untranscribed = [], []
    for wav in wavs:
        if wav.stem not in texts:
            untranscribed.append(wav.relative_to(root).as_posix())
            continue
        rows.append(
            {
                "id": wav.stem,
                "speaker": wav.parent.name,
                "text": texts[wav.stem],
                "language": "zh",
                "audio": _audio(wav),
            }
        )
    return rows, _skips({"no transcript line": untranscribed})


def _mmau_json(root: Path, split: str) -> Path:
    if root.is_file():
        return root
    path = root / f"mmau-{split}.json"
    if not path.is_file():
        found = sorted(p.name for p in root.glob("*.json"))
        raise ConfigError(
            f"mmau: no {path.name} in {root} (JSON files there: {found or 'none'}); expected {LAYOUTS['mmau'][1]}"
        )
    return path


def read_mmau(path: Path, split: str) -> tuple[list[dict], dict]:
    """Rows ``{id, question, choices, answer, task, category, sub_category, difficulty, dataset,
    audio}``; skips (answer not among the choices) counted."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(path, f"not valid JSON: {exc}") from exc
    if not isinstance(items, list):
        raise DataError(path, f"the top level must be a list of questions, got {type(items).__name__}")
    rows, not_a_choice = [], []
    for k, item in enumerate(items):
        where = f"item {k}"
        if not isinstance(item, dict):
            raise DataError(path, f"{where} must be an object, got {type(item).__name__}")
        for field in MMAU_REQUIRED:
            if item.get(field) in (None, "", []):
                raise DataError(path, f"{where} (id {item.get('id')!r}): missing value", field=field)
        choices = item["choices"]
        if not isinstance(choices, list) or len(choices) < 2:
            raise DataError(
                path, f"{where} (id {item['id']!r}): choices must be a list of two or more options", field="choices"
            )
        choices = [str(c) for c in choices]
        if " ".join(str(item["answer"]).lower().split()) not in [" ".join(c.lower().split()) for c in choices]:
            not_a_choice.append(str(item["id"]))
            continue
        audio = (path.parent / str(item["audio_id"])).resolve()
        if not audio.is_file():
            raise DataError(
                path, f"{where} (id {item['id']!r}): audio {item['audio_id']!r} not found at {audio}", field="audio_id"
            )
        row = {
            "id": str(item["id"]),
            "question": str(item["question"]),
            "choices": choices,
            "answer": str(item["answer"]),
            "audio": _audio(audio),
        }
        row.update({ours: str(item.get(theirs) or "") for theirs, ours in MMAU_OPTIONAL.items()})
        rows.append(row)
    return rows, _skips({"answer not among the choices": not_a_choice})


def read_embedded(language: str, seed: int, test_fraction: float) -> tuple[list[dict], dict]:
    """Rows ``{id, speaker, text, language, audio}`` of the embedded corpus's test-split clips."""
    from palm_bench.corpus.embedded import load_embedded_corpus
    from palm_bench.splits import split_clips

    corpus = load_embedded_corpus()
    test = split_clips(corpus, test_fraction, seed)["test"]
    clips = sorted((c for speaker in test.values() for c in speaker if c.language == language), key=lambda c: c.id)
    return [
        {"id": c.id, "speaker": c.speaker, "text": c.text, "language": c.language, "audio": _audio(c.audio)}
        for c in clips
    ], {}


def _audio(path: Path) -> dict:
    """The file by path: its bytes are embedded when the Parquet is written, 100 rows at a time
    (``lalm_eval.hub.write_split``), so a large split is never held in memory; the stored path is
    the file name."""
    return {"bytes": None, "path": str(Path(path).resolve())}


def _skips(reasons: dict[str, list[str]]) -> dict:
    return {reason: {"count": len(ids), "examples": ids[:10]} for reason, ids in reasons.items() if ids}


# -- Parquet + card ------------------------------------------------------------------------------------


def _features(rows: list[dict]):
    import datasets

    string = datasets.Value("string")
    types = {"choices": datasets.List(string), "audio": datasets.Audio()}
    return datasets.Features({k: types.get(k, string) for k in rows[0]})


def _write(folder: Path, corpus: str, split: str, config: dict, rows: list[dict], skipped: dict) -> None:
    import datasets

    from lalm_eval.hub import export_dataset_dict, feature_rows, front_matter, render_card
    from lalm_eval.hub.export import finish_folder
    from lalm_eval.resources import hub_cards_dir

    if not rows:
        raise DataError(config.get("source", corpus), f"{corpus} {split}: no rows to evaluate (skipped: {skipped})")
    features = _features(rows)
    from lalm_eval.audio.io import require_codec

    require_codec()  # from_list encodes the Audio column through torchcodec
    ds = datasets.Dataset.from_list(rows, features=features)
    files = export_dataset_dict({split: datasets.DatasetDict({SPLIT: ds})}, folder)
    stats = [{"config": split, "rows": len(rows)}] + [
        {"config": f"skipped: {r}", "rows": s["count"]} for r, s in skipped.items()
    ]
    card = render_card(
        "generic.md.j2",
        {
            "configs_yaml": front_matter(files, root=folder, default_config=split, license="other"),
            "title": f"{corpus} {split} (forgetting check)",
            "description": (
                f"Built by lalm-eval's tasks/forgetting hook from {config.get('source', 'the embedded corpus')} "
                "for PALM Table 4's forgetting checks; the source's licence applies."
            ),
            "features": feature_rows(features),
            "statistics": stats,
            "repo_id": str(folder),
            "default_config": split,
            "citation": "see the source corpus",
        },
        templates=hub_cards_dir(),
    )
    finish_folder(folder, card, {"config": config, "rows": len(rows), "skipped": skipped})
    if skipped:
        log.warning("%s %s: skipped %s", corpus, split, {r: s["count"] for r, s in skipped.items()})
