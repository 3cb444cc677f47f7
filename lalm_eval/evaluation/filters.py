"""The filters stage: what a task's ``filter_list`` does to each response before it is scored.

As in lm-evaluation-harness (``lm_eval/filters``), each ``filter_list`` entry is its own named
pipeline, ``{name, filter: [{function, ...}, ...]}``, whose steps run in order; a step's
``function`` names a filter of :data:`FILTERS` (plug-ins: the ``lalm_eval.filters`` entry-point
group). Every step is resolved and its keys checked when the task loads (:func:`build_filters`,
called by :class:`~lalm_eval.tasks.config.TaskConfig`), so a misspelt function is a ConfigError
naming the task YAML before any model is built. lalm-eval scores one pipeline per task (lm-eval
scores every metric under every pipeline): a second entry is refused at load.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping

from lalm_eval.errors import ConfigError
from lalm_eval.registry import Registry

FILTERS = Registry("filter", entry_point_group="lalm_eval.filters")


def _fail(file: str, key: str, message: str, fix: str):
    raise ConfigError(f"{file}: {key}: {message}; {fix}")


class Filter:
    """One step of a pipeline: ``apply(text, counters) -> text``. ``KEYS``: the step's keys beside
    ``function``; ``check`` raises on a bad value (``where``: the file and step, for the error)."""

    KEYS: tuple[str, ...] = ()

    def __init__(self, step: Mapping, file: str, where: str):
        self.step = dict(step)

    def apply(self, text: str, counters: dict) -> str:
        raise NotImplementedError


class RegexFilter(Filter):
    """``regex``: the ``group_select``-th match of ``regex_pattern`` (its first non-empty group
    when the pattern has groups); a response it does not match is kept whole and counted
    (``filter_misses``)."""

    KEYS = ("group_select", "regex_pattern")

    def __init__(self, step: Mapping, file: str, where: str):
        super().__init__(step, file, where)
        pattern = step.get("regex_pattern")
        if not isinstance(pattern, str):
            _fail(file, where, f"regex: regex_pattern must be a string, got {pattern!r}", "quote the pattern")
        try:
            self.pattern = re.compile(pattern, flags=re.S)
        except re.error as exc:
            _fail(file, where, f"regex: regex_pattern {pattern!r} does not compile ({exc})", "fix the pattern")
        select = step.get("group_select", 0)
        if isinstance(select, bool) or not isinstance(select, int):
            _fail(
                file,
                where,
                f"regex: group_select must be a whole number, got {select!r}",
                "write e.g. group_select: 0 (the first match) or -1 (the last)",
            )
        self.select = select

    def apply(self, text: str, counters: dict) -> str:
        found = self.pattern.findall(text)
        if not found:
            counters["filter_misses"] = counters.get("filter_misses", 0) + 1
            return text
        pick = found[self.select]
        return pick if isinstance(pick, str) else next((g for g in pick if g), "")


class StripFilter(Filter):
    """``take_first`` (one response per request, so lm-eval's first is the response) and ``strip``:
    the text without surrounding whitespace."""

    def apply(self, text: str, counters: dict) -> str:
        return text.strip()


FILTERS.register("regex", RegexFilter)
FILTERS.register("take_first", StripFilter)
FILTERS.register("strip", StripFilter)
_BUILT_IN = ("regex", "take_first", "strip")  # the order errors list them in


def filter_names() -> list[str]:
    """The built-in filter functions, then the plug-ins'."""
    return list(dict.fromkeys([*_BUILT_IN, *FILTERS.names()]))


@dataclasses.dataclass(frozen=True)
class FilterPipeline:
    """One ``filter_list`` entry: its name and its steps, resolved."""

    name: str
    steps: tuple[Filter, ...]

    def apply(self, text: str, counters: dict) -> str:
        for step in self.steps:
            text = step.apply(text, counters)
        return text


def _step(step, file: str, where: str) -> Filter:
    if not isinstance(step, dict) or "function" not in step:
        _fail(file, where, f"must be a mapping with a 'function', got {step!r}", "write {function: take_first}")
    function = step["function"]
    if not isinstance(function, str) or function not in FILTERS:
        names = filter_names()
        close = difflib.get_close_matches(str(function), names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        _fail(file, where, f"unknown filter function {function!r}{hint}", f"use one of {', '.join(names)}")
    cls = FILTERS.get(function)
    extra = sorted(set(step) - {"function"} - set(cls.KEYS))
    if extra:
        known = ", ".join(sorted(cls.KEYS)) or "none"
        _fail(file, where, f"{function}: unknown key(s) {extra}", f"the keys it takes: {known}")
    return cls(step, file, where)


def build_filters(filters, file: str) -> list[FilterPipeline]:
    """``filter_list`` resolved: one :class:`FilterPipeline` per entry, every step's function found
    and its keys checked (a :class:`ConfigError` naming ``file`` and the step otherwise)."""
    if filters is not None and not isinstance(filters, list):
        _fail(
            file,
            "filter_list",
            f"must be a list of {{name, filter: [{{function, ...}}]}}, got {type(filters).__name__} {filters!r}",
            "write filter_list as a list of {name, filter: [{function, ...}]}",
        )
    pipelines = []
    for i, f in enumerate(filters or []):
        steps = f.get("filter") if isinstance(f, dict) else None
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not isinstance(steps, list):
            _fail(
                file,
                f"filter_list[{i}]",
                f"must be a mapping with 'name' and a 'filter' list, got {f!r}",
                "write - {name: answer, filter: [{function: take_first}]}",
            )
        built = tuple(_step(step, file, f"filter_list[{i}].filter[{j}]") for j, step in enumerate(steps))
        pipelines.append(FilterPipeline(f["name"], built))
    if len(pipelines) > 1:
        _fail(
            file,
            "filter_list",
            f"{len(pipelines)} pipelines ({', '.join(p.name for p in pipelines)}), and lalm-eval scores one "
            "filter pipeline per task (lm-eval scores every metric under each)",
            "keep one entry (its steps run in order), or give each pipeline a task YAML of its own",
        )
    return pipelines


def apply_filters(pipelines: list[FilterPipeline], text: str, counters: dict) -> str:
    """The response after the task's pipeline (unchanged without one)."""
    for pipeline in pipelines:
        text = pipeline.apply(text, counters)
    return text
