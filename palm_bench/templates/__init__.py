"""PALM-Bench QA templates (Wang et al., PALM-Bench, Appendix B.3 Tables 12-20, B.4 Table 21).

One YAML file per kind sits next to this module: ``recognition.yaml`` (Table 12),
``captioning.yaml`` (Table 13), ``multi_speaker.yaml`` (Tables 14-20) and ``reasoning.yaml``
(Table 21). Each file's header cites its tables and documents its placeholders; English is the
paper's text, ``zh`` is this project's translation.

Placeholders are ``{name}`` (no Jinja2): ``{spk}`` for single-speaker kinds; ``{A}``-``{D}``
(candidate set), ``{P1}``-``{P4}`` (present) and ``{UP1}``-``{UP4}`` (absent) for
multi-speaker recognition; none for reasoning.

``load_templates(kind, language)`` validates the file once (cached) and returns
:class:`Template` objects; ``render(template, **values)`` fills the placeholders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

import yaml

from lalm_eval.errors import ConfigError, DataError

TEMPLATE_DIR = Path(__file__).resolve().parent
LANGUAGES = ("en", "zh")
CANDIDATES = ("A", "B", "C", "D")
_ROLES = tuple(f"P{i}" for i in range(1, 5)) + tuple(f"UP{i}" for i in range(1, 5))
PLACEHOLDERS: dict[str, frozenset[str]] = {
    "recognition": frozenset({"spk"}),
    "captioning": frozenset({"spk"}),
    "multi_speaker": frozenset(CANDIDATES + _ROLES),
    "reasoning": frozenset(),
}
KINDS = tuple(PLACEHOLDERS)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Template:
    """One QA template in one language; ``present``/``absent`` name placeholders."""

    id: str
    kind: str
    language: str
    question: str
    answer: str | None
    placeholders: tuple[str, ...]
    group: str
    table: int
    file: str
    n_speakers: int | None = None
    present: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    note: str | None = None

    @property
    def n_present(self) -> int:
        return len(self.present)


class QA(NamedTuple):
    question: str
    answer: str | None


def placeholders_in(text: str | None) -> tuple[str, ...]:
    """Placeholder names in ``text``, in order of first appearance."""
    return tuple(dict.fromkeys(_PLACEHOLDER.findall(text or "")))


def render(template: Template, **values) -> QA:
    """Fill every placeholder; extra values are ignored, a missing one is a ConfigError."""
    missing = [name for name in template.placeholders if name not in values]
    if missing:
        raise ConfigError(f"{template.file}: template {template.id!r} needs a value for {', '.join(missing)}")

    def fill(text):
        return None if text is None else _PLACEHOLDER.sub(lambda m: str(values[m[1]]), text)

    return QA(fill(template.question), fill(template.answer))


def load_templates(kind: str, language: str, folder: Path | str | None = None) -> list[Template]:
    """The templates of ``kind`` in ``language`` ("en" or "zh"), from ``folder/<kind>.yaml``."""
    if kind not in PLACEHOLDERS:
        raise ConfigError(f"unknown template kind {kind!r}; known: {', '.join(KINDS)}")
    if language not in LANGUAGES:
        raise ConfigError(f"unknown template language {language!r}; known: {', '.join(LANGUAGES)}")
    path = (Path(folder) if folder is not None else TEMPLATE_DIR).resolve() / f"{kind}.yaml"
    return [t for t in _load_file(path, kind) if t.language == language]


@cache
def _load_file(path: Path, kind: str) -> tuple[Template, ...]:
    if not path.is_file():
        raise DataError(path, "template file not found")
    text = path.read_text(encoding="utf-8")
    lines = _id_lines(text)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DataError(path, f"not valid YAML: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        raise DataError(path, f"expected a mapping with kind: {kind}", field="kind")
    if not isinstance(doc.get("groups"), list):
        raise DataError(path, "top-level list missing", field="groups")
    templates, seen = [], set()
    for g, group in enumerate(doc["groups"]):
        for entry in _group_templates(path, kind, group, g):
            tid = entry.get("id")
            if not isinstance(tid, str) or not tid:
                raise DataError(path, f"groups[{g}]: template without an id", field="id")
            line = lines.get(tid, [None])[-1 if tid in seen else 0]
            if tid in seen:
                raise DataError(path, f"duplicate template id {tid!r}", field="id", line=line)
            seen.add(tid)
            templates += _parse_template(path, kind, group, entry, line)
    return tuple(templates)


def _group_templates(path: Path, kind: str, group, g: int) -> list[dict]:
    where = f"groups[{g}]"
    if not isinstance(group, dict):
        raise DataError(path, f"{where} must be a mapping")
    for field in ("group", "table", "present", "absent", "templates"):
        if field not in group:
            raise DataError(path, f"{where}: missing value", field=field)
    for field in ("present", "absent"):
        names = group[field]
        if not isinstance(names, list) or not set(names) <= PLACEHOLDERS[kind]:
            raise DataError(path, f"{where}: {field} must list documented placeholders of {kind}", field=field)
    entries = group["templates"]
    if not (isinstance(entries, list) and entries and all(isinstance(e, dict) for e in entries)):
        raise DataError(path, f"{where}: templates must be a non-empty list of mappings", field="templates")
    return entries


def _parse_template(path: Path, kind: str, group: dict, entry: dict, line) -> list[Template]:
    tid, n = entry["id"], group.get("n_speakers")
    roles = set(group["present"]) | set(group["absent"])
    allowed = roles | set(CANDIDATES[:n] if n else ())
    out, en_names = [], None
    for lang in LANGUAGES:
        body = entry.get(lang)
        if not isinstance(body, dict) or not body.get("question"):
            raise DataError(
                path, f"template {tid!r} lacks the {lang} version (question)", field=f"{tid}.{lang}", line=line
            )
        if ("answer" in body) != ("answer" in entry["en"]):
            raise DataError(
                path,
                f"template {tid!r}: en and {lang} disagree on having an answer",
                field=f"{tid}.{lang}.answer",
                line=line,
            )
        names = {}
        for part in ("question", "answer"):
            found = placeholders_in(body.get(part))
            names[part] = set(found)
            field = f"{tid}.{lang}.{part}"
            _check_text(path, kind, tid, field, body.get(part), found, allowed, line)
        if en_names is not None and names != en_names:
            raise DataError(
                path, f"template {tid!r}: zh uses other placeholders than en", field=f"{tid}.{lang}", line=line
            )
        en_names = names
        out.append(
            Template(
                id=tid,
                kind=kind,
                language=lang,
                question=body["question"],
                answer=body.get("answer"),
                placeholders=placeholders_in(f"{body['question']} {body.get('answer') or ''}"),
                group=group["group"],
                table=int(group["table"]),
                file=str(path),
                n_speakers=n,
                present=tuple(group["present"]),
                absent=tuple(group["absent"]),
                note=entry.get("note"),
            )
        )
    return out


def _check_text(path, kind, tid, field, text, found, allowed, line) -> None:
    if text is None:
        return

    def fail(message):
        raise DataError(path, f"template {tid!r} {message}", field=field, line=line)

    unknown = [p for p in found if p not in PLACEHOLDERS[kind]]
    if unknown:
        documented = sorted(PLACEHOLDERS[kind]) or "none"
        fail(f"uses placeholder(s) {', '.join(unknown)} not in the documented set for {kind}: {documented}")
    stray = [p for p in found if p not in allowed]
    if stray:
        fail(f"uses {', '.join(stray)}, which its group's present/absent/candidate lists do not define")
    if "{" in _PLACEHOLDER.sub("", text) or "}" in _PLACEHOLDER.sub("", text):
        fail("has a malformed placeholder")


def _id_lines(text: str) -> dict[str, list[int]]:
    """Line numbers of every ``id:`` key, for error messages."""
    lines: dict[str, list[int]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        m = re.match(r"\s*-?\s*id:\s*[\"']?([^\s\"']+)", raw)
        if m:
            lines.setdefault(m[1], []).append(number)
    return lines


__all__ = [
    "CANDIDATES",
    "KINDS",
    "LANGUAGES",
    "PLACEHOLDERS",
    "QA",
    "TEMPLATE_DIR",
    "Template",
    "load_templates",
    "placeholders_in",
    "render",
]
