"""From conversations to the MSU-Bench question plan: read the corpus, select 60-120 s segments
with at least two speakers, and ask each segment ``per_segment`` questions by templates
(and, for corpora without rich annotations, through an LLM when one is given).

Which segments a build uses is decided once, by :func:`usable_segments`, for ``build`` and
``corpus-info`` alike: a conversation in a language outside ``languages`` or without readable
audio gives none, and a segment whose span of the audio does not decode to finite samples (what
the export would refuse) is rejected with the file and the reason, before any row is written
(the embedded conversations' renders are not decoded twice: their own tests check them).

Every key of :class:`MsuConfig` is a preset YAML key and a ``--set key=value`` override; values
are checked against the field's type and range when the config is loaded (``--set seed=abc`` is
an error naming ``--set seed``; an unknown key names the closest known one).
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import math
from pathlib import Path

import yaml

from lalm_eval.cli_support import load_preset_data
from lalm_eval.errors import AudioError, ConfigError
from lalm_eval.hub.readers import skip_records
from lalm_eval.seeding import rng_for
from msu_bench.qa.generate import QAItem, generate_segment_qa
from msu_bench.segments import SegmentRule, select_segments
from msu_bench.taxonomy import load_taxonomy
from msu_bench.types import Conversation, ReadReport

log = logging.getLogger(__name__)
PRESET_DIR = Path(__file__).resolve().parent / "presets"


LANGUAGES = ("en", "zh")  # the languages of MSU's templates and inference prompts
AUDIO_FORMATS = ("flac", "wav", "opus")  # lalm_eval.audio.io.encode_audio's formats a dataset row decodes


@dataclasses.dataclass(frozen=True)
class MsuConfig:
    seed: int = 0
    per_segment: int = 10  # paper: ten QA pairs per session
    min_segment_s: float = 60.0
    max_segment_s: float = 120.0
    min_speakers: int = 2
    languages: tuple[str, ...] = ("en", "zh")
    audio_format: str = "flac"

    @classmethod
    def from_dict(cls, data: dict, where: str = "msu config", flags: set[str] = frozenset()) -> MsuConfig:
        """``data`` checked key by key: ``where`` names a preset file, ``flags`` the keys that came
        from ``--set`` (their errors name ``--set KEY``)."""
        known = [f.name for f in dataclasses.fields(cls)]
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ConfigError(f"{_where(key, where, flags)}: unknown key; {hint}known keys: {', '.join(known)}")
        values = {key: _checked(key, value, _where(key, where, flags)) for key, value in data.items()}
        cfg = cls(**values)
        if cfg.min_segment_s > cfg.max_segment_s:
            keys = [k for k in ("min_segment_s", "max_segment_s") if k in flags] or ["min_segment_s"]
            raise ConfigError(
                f"{_where(keys[0], where, flags)}: min_segment_s={cfg.min_segment_s:g} is above "
                f"max_segment_s={cfg.max_segment_s:g}; set min_segment_s <= max_segment_s"
            )
        return cfg

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["languages"] = list(self.languages)
        return out


def _where(key: str, preset: str, flags) -> str:
    return f"--set {key}" if key in flags else f"{preset}: key {key!r}"


#: the numeric keys: (kind, lowest allowed value, example)
NUMBERS = {
    "seed": (int, 0, 3),
    "per_segment": (int, 1, 10),
    "min_speakers": (int, 2, 2),
    "min_segment_s": (float, 0.0, 60),
    "max_segment_s": (float, 0.0, 120),
}


def _checked(key: str, value, where: str):
    """``value`` of config key ``key`` in the field's type and range, or a :class:`ConfigError`."""

    def bad(what: str, fix: str):
        return ConfigError(f"{where}: {value!r} is {what}; {fix}")

    if key in NUMBERS:
        kind, low, example = NUMBERS[key]
        number = not isinstance(value, bool) and isinstance(value, (int,) if kind is int else (int, float))
        if not number or not math.isfinite(value):
            raise bad("not a whole number" if kind is int else "not a number", f"give e.g. --set {key}={example}")
        if value < low or (kind is float and value == low):
            raise bad(f"{'below' if kind is int else 'not above'} {low:g}", f"give e.g. --set {key}={example}")
        return kind(value)
    if key == "languages":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not items or not all(isinstance(x, str) for x in items):
            raise bad("not a list of languages", "give e.g. --set languages=[en,zh] or --set languages=en")
        if any(x not in LANGUAGES for x in items):
            raise bad(
                f"not among the languages MSU-Bench has templates for ({', '.join(LANGUAGES)})",
                "give some of them, e.g. --set languages=[en]",
            )
        return tuple(items)
    if key == "audio_format" and value not in AUDIO_FORMATS:
        raise bad(f"not one of {', '.join(AUDIO_FORMATS)}", "give e.g. --set audio_format=flac")
    return value


def load_preset(name_or_path: str, overrides: dict | None = None) -> MsuConfig:
    """The preset's config with ``overrides`` (the ``--set`` keys) applied, every value checked."""
    names = sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))
    if not Path(name_or_path).is_file() and not (PRESET_DIR / f"{name_or_path}.yaml").is_file():
        raise ConfigError(
            f"--preset {name_or_path}: no such preset or file; give one of {', '.join(names)}, or a YAML file"
        )
    try:
        data, path = load_preset_data(name_or_path, PRESET_DIR)
    except (OSError, UnicodeError, yaml.YAMLError) as exc:
        what = " ".join(str(exc).replace(";", ",").split())
        raise ConfigError(
            f"--preset {name_or_path}: not a readable YAML file ({what}); fix it, or give one of {', '.join(names)}"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a preset must be a YAML mapping of config keys; see msu_bench/presets/small.yaml")
    overrides = overrides or {}
    return MsuConfig.from_dict({**data, **overrides}, where=str(path), flags=set(overrides))


def read_corpus(kind: str, corpus_dir: str | None, options: dict) -> ReadReport:
    """The conversations of reader ``kind`` of :data:`msu_bench.corpora.READERS`."""
    from msu_bench.corpora import read_corpus as read_with_registry

    return read_with_registry(kind, corpus_dir, options)


@dataclasses.dataclass
class MsuPlan:
    config: MsuConfig
    segments: list[Conversation]
    questions: dict[str, list[QAItem]]  # segment id -> questions
    stats: dict


def make_plan(
    cfg: MsuConfig,
    corpus: str = "embedded",
    corpus_dir: str | None = None,
    corpus_options: dict | None = None,
    llm=None,
) -> MsuPlan:
    """``llm`` (a :class:`lalm_eval.llm.TextLLM`) fills a segment's remaining questions with tasks
    its annotation cannot answer (generate + filter); without it those questions are not asked."""
    report = read_corpus(corpus, corpus_dir, corpus_options or {})
    segments, rejected = [], []
    for conv in sorted(report.conversations, key=lambda c: c.id):
        found, why = usable_segments(conv, cfg)
        segments += found
        rejected += why
    for reason in rejected:
        log.info("segment skipped: %s", reason)
    if not segments:
        raise ConfigError(f"{corpus_dir or f'--corpus {corpus}'}: {no_segment_message(report, rejected, cfg)}")
    task_ids = [t.id for t in load_taxonomy().tasks]
    asked: dict[str, int] = {}
    questions, llm_stats = {}, {}
    for seg in segments:
        items = generate_segment_qa(seg, task_ids, asked, rng_for(cfg.seed, "qa", seg.id), cfg.per_segment)
        if llm is not None and len(items) < cfg.per_segment:
            from msu_bench.fields import segment_fields
            from msu_bench.qa.llm_pipeline import llm_questions

            have = {q.task_id for q in items}
            wanted = sorted((t for t in task_ids if t not in have), key=lambda t: (asked.get(t, 0), t))
            extra = llm_questions(llm, segment_fields(seg), wanted[: cfg.per_segment - len(items)], llm_stats)
            for q in extra:
                asked[q.task_id] = asked.get(q.task_id, 0) + 1
            items += extra
        questions[seg.id] = items
    stats = {
        "llm": dict(llm.settings) if llm is not None else None,
        **llm_stats,
        "conversations": len(report.conversations),
        "segments": len(segments),
        "skipped_source_items": report.n_skipped,
        "skipped_source": skip_records(report.skips, lambda item: _relative(item, corpus_dir)),
        "untranscribed_turns": getattr(report, "n_untranscribed", 0),
        "skipped_segments": rejected,
        "questions_per_task": dict(sorted(asked.items())),
        "tasks_without_questions": sorted(set(task_ids) - set(asked)),
    }
    return MsuPlan(cfg, segments, questions, stats)


def usable_segments(conv: Conversation, cfg: MsuConfig) -> tuple[list[Conversation], list[str]]:
    """The segments of ``conv`` a build asks questions about, and why the others are not used
    (the one rule of ``build`` and ``corpus-info``; module doc)."""
    if conv.language not in cfg.languages:
        return [], [f"{conv.id}: language {conv.language!r} is not in languages {list(cfg.languages)}"]
    if conv.audio is None:  # the reader counted why (audio missing / unreadable)
        return [], [f"{conv.id}: no readable audio, so no segment"]
    found, why = select_segments(conv, SegmentRule(cfg.min_segment_s, cfg.max_segment_s, cfg.min_speakers))
    if conv.source == "embedded":  # the packaged renders: checked by their tests, and Opus decodes slowly
        return found, why
    kept = []
    for seg in found:
        problem = segment_audio_problem(seg)
        if problem:
            why.append(f"{seg.id}: audio refused ({problem})")
        else:
            kept.append(seg)
    return kept, why


def segment_audio_problem(seg: Conversation) -> str | None:
    """Why the export could not encode ``seg``'s span of its audio (the same ranged read as
    :func:`msu_bench.builder.segment_audio`, without resampling), or None."""
    from lalm_eval.audio.io import read_audio_span

    try:
        read_audio_span(seg.audio, seg.offset, seg.duration, target_sr=None)
    except AudioError as exc:  # named by its file name: build_info and the card carry no local folders
        return " ".join(str(exc).replace(str(seg.audio), seg.audio.name).replace(";", ",").split())
    return None


def _relative(file: str, corpus_dir: str | None) -> str:
    """``file`` relative to the corpus folder (so cards do not carry the builder's paths)."""
    if corpus_dir:
        try:
            return str(Path(file).relative_to(Path(corpus_dir).expanduser().resolve()))
        except ValueError:
            pass
    return str(file)


def no_segment_message(report: ReadReport, rejected: list[str], cfg: MsuConfig) -> str:
    """Why a build found nothing to ask about (the reasons per conversation, joined by " | ") and
    the knobs; the ``<what>; <fix>`` part of a :class:`DataError` naming the corpus folder."""
    shown = " | ".join(r.replace(";", ",") for r in rejected[:3])
    shown += f" | ... ({len(rejected) - 3} more)" if len(rejected) > 3 else ""
    skipped = f", and {report.n_skipped} source item(s) skipped by the reader" if report.n_skipped else ""
    return (
        f"no segment to ask questions about in its {len(report.conversations)} conversation(s) "
        f"(segments are {cfg.min_segment_s:g}-{cfg.max_segment_s:g} s with >= {cfg.min_speakers} speakers): "
        f"{shown or 'no conversation read'}{skipped}; change the rule with --set min_segment_s=... / "
        "max_segment_s=... / min_speakers=... or fix the recordings named, and see msu-bench corpus-info for "
        "every conversation and skip"
    )
