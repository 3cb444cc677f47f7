"""The MSU-Bench task taxonomy (seed paper Table 2 / Table 5) as data: ``taxonomy.yaml``.

4 tiers → 10 capabilities → 25 tasks. Each task carries its Table 5 example, an ``answer_type``,
optional candidate ``labels`` and the inference prompt (``en`` / ``zh``, written for this project)
appended after the question. ``load_taxonomy()`` validates the file once (cached per path); every
problem is a :class:`~lalm_eval.errors.DataError` naming the file, the field and the line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType

import yaml

from lalm_eval.errors import DataError, UnknownNameError

TAXONOMY_FILE = Path(__file__).resolve().parent / "taxonomy.yaml"
LANGUAGES = ("en", "zh")
ANSWER_TYPES = ("count", "label", "yes_no_explanation", "quote", "free_text", "transcription")
_TIER_ID = re.compile(r"tier([1-9][0-9]*)")
_SNAKE = re.compile(r"[a-z0-9]+(_[a-z0-9]+)*")


@dataclass(frozen=True)
class Tier:
    id: str
    name: str
    number: int


@dataclass(frozen=True)
class Capability:
    id: str  # the paper's abbreviation, lower-cased
    name: str
    tier: str
    description: str


@dataclass(frozen=True)
class Task:
    id: str
    name: str  # exactly as in Table 2
    tier: str
    capability: str
    answer_type: str
    example_question: str
    example_answer: str
    prompt: Mapping[str, str] = field(hash=False)  # language → inference prompt
    labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)

    def inference_prompt(self, language: str = "en") -> str:
        """The answer format and constraints appended after the question in ``language``."""
        return self.prompt[language]


@dataclass(frozen=True)
class Taxonomy:
    file: str
    tiers: tuple[Tier, ...]
    capabilities: tuple[Capability, ...]
    tasks: tuple[Task, ...]
    label_sets: Mapping[str, tuple[str, ...]] = field(hash=False)

    def task(self, task_id: str) -> Task:
        return _get(self.tasks, task_id, "task")

    def tier(self, tier_id: str) -> Tier:
        return _get(self.tiers, tier_id, "tier")

    def capability(self, cap_id: str) -> Capability:
        return _get(self.capabilities, cap_id, "capability")

    def tasks_of_tier(self, tier_id: str) -> tuple[Task, ...]:
        return tuple(t for t in self.tasks if t.tier == self.tier(tier_id).id)

    def tasks_of_capability(self, cap_id: str) -> tuple[Task, ...]:
        return tuple(t for t in self.tasks if t.capability == self.capability(cap_id).id)


def _get(items, key: str, kind: str):
    by_id = {i.id: i for i in items}
    if key not in by_id:
        close = difflib.get_close_matches(str(key), by_id, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(by_id)}"
        raise UnknownNameError(f"unknown MSU {kind} {key!r}{hint}")
    return by_id[key]


def load_taxonomy(path: Path | str | None = None) -> Taxonomy:
    """The taxonomy in ``path`` (default: the shipped ``taxonomy.yaml``), validated once."""
    return _load(Path(path).resolve() if path is not None else TAXONOMY_FILE)


@cache
def _load(path: Path) -> Taxonomy:
    try:
        text = path.read_text(encoding="utf-8")
        doc = yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(path, f"cannot read the taxonomy: {exc}") from exc
    if not isinstance(doc, dict):
        raise DataError(path, "expected a mapping with tiers, capabilities, tasks")
    lines: dict[str, list[int]] = {}  # id → lines of its `id:` entries
    for m in re.finditer(r"^\s*-?\s*\{?\s*id:\s*([\w-]+)", text, re.M):
        lines.setdefault(m[1], []).append(text.count("\n", 0, m.start()) + 1)

    def err(where: str, msg: str, fld: str, key=None, nth: int = 0):
        found = lines.get(key, [])[nth:]
        return DataError(path, f"{where}: {msg}", field=fld, line=found[0] if found else None)

    def entries(section: str, required: tuple[str, ...]) -> list[dict]:
        items = doc.get(section)
        if not isinstance(items, list) or not items:
            raise DataError(path, "must be a non-empty list", field=section)
        seen = set()
        for i, e in enumerate(items):
            where = f"{section}[{i}]" + (f" ({e.get('id')})" if isinstance(e, dict) else "")
            if not isinstance(e, dict):
                raise DataError(path, f"{where}: must be a mapping", field=section)
            for f in required:
                if not _text(e.get(f)):
                    raise err(where, "missing or empty", f, e.get("id"))
            if e["id"] in seen:
                raise err(where, f"duplicate id {e['id']!r}", "id", e["id"], nth=1)
            seen.add(e["id"])
        return items

    raw_sets = doc.get("label_sets") or {}
    if not isinstance(raw_sets, dict) or not all(
        isinstance(v, list) and v and all(map(_text, v)) for v in raw_sets.values()
    ):
        raise DataError(path, "must map names to non-empty lists of labels", field="label_sets")
    label_sets = {k: tuple(v) for k, v in raw_sets.items()}

    tiers = []
    for e in entries("tiers", ("id", "name")):
        if not (m := _TIER_ID.fullmatch(e["id"])):
            raise err(f"tier {e['id']!r}", "id must be tier<number>", "id", e["id"])
        tiers.append(Tier(e["id"], e["name"], int(m[1])))
    tier_ids = {t.id: t for t in tiers}

    caps = []
    for e in entries("capabilities", ("id", "name", "tier", "description")):
        if e["tier"] not in tier_ids:
            raise err(f"capability {e['id']!r}", f"unknown tier {e['tier']!r}", "tier", e["id"])
        caps.append(Capability(e["id"], e["name"], e["tier"], e["description"]))
    cap_ids = {c.id: c for c in caps}

    tasks = []
    for e in entries("tasks", ("id", "name", "tier", "capability", "answer_type")):
        tid, where = e["id"], f"task {e['id']!r}"
        if e["tier"] not in tier_ids:
            raise err(where, f"unknown tier {e['tier']!r}", "tier", tid)
        if e["capability"] not in cap_ids:
            raise err(where, f"unknown capability {e['capability']!r}; known: {', '.join(cap_ids)}", "capability", tid)
        if (cap_tier := cap_ids[e["capability"]].tier) != e["tier"]:
            raise err(where, f"capability {e['capability']!r} is in {cap_tier}, not {e['tier']}", "tier", tid)
        prefix = f"t{tier_ids[e['tier']].number}_{e['capability']}_"
        if not tid.startswith(prefix) or not _SNAKE.fullmatch(tid[len(prefix) :]):
            raise err(where, f"id must be {prefix}<task_snake> (its tier and capability)", "id", tid)
        if e["answer_type"] not in ANSWER_TYPES:
            raise err(where, f"answer_type must be one of {', '.join(ANSWER_TYPES)}", "answer_type", tid)
        example, prompt = e.get("example"), e.get("prompt")
        for part in ("question", "answer"):
            if not isinstance(example, dict) or not _text(example.get(part)):
                raise err(where, "missing or not text", f"example.{part}", tid)
        for lang in LANGUAGES:
            if not isinstance(prompt, dict) or not _text(prompt.get(lang)):
                raise err(where, f"missing {lang} inference prompt", f"prompt.{lang}", tid)
        names = e.get("labels") or []
        unknown = [n for n in names if n not in label_sets] if isinstance(names, list) else [names]
        if unknown:
            raise err(where, f"unknown label set(s) {unknown}; known: {', '.join(label_sets)}", "labels", tid)
        tasks.append(
            Task(
                tid,
                e["name"],
                e["tier"],
                e["capability"],
                e["answer_type"],
                example["question"],
                example["answer"],
                MappingProxyType({k: prompt[k] for k in LANGUAGES}),
                MappingProxyType({n: label_sets[n] for n in names}),
            )
        )
    for c in caps:
        if not any(t.capability == c.id for t in tasks):
            raise err(f"capability {c.id!r}", "has no task", "capability", c.id)
    return Taxonomy(str(path), tuple(tiers), tuple(caps), tuple(tasks), MappingProxyType(label_sets))


def _text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())
