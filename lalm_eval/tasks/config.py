"""Task and group configs: dataclasses whose fields ARE lm-evaluation-harness's YAML keys.

An lm-eval user reads our YAML as theirs, with these departures, each an error rather than a
silent difference: only ``output_type: generate_until``; every metric states ``aggregation``
and ``higher_is_better``, and is built once, when the task loads (:func:`lalm_eval.metrics.scoring.make_metric`:
name, options and aggregation checked), as is every ``filter_list`` step
(:func:`lalm_eval.evaluation.filters.build_filters`; one pipeline per task); ``process_results``
is refused (metrics come from ``metric_list``); ``validation_split`` is what lm-eval makes it, the
split evaluated when ``test_split`` is unset; ``metadata.version`` is required; a string ``doc_to_text`` /
``doc_to_target`` / ``doc_to_audio`` / ``description`` is always a Jinja2 template (never a
column name); lmms-eval's ``doc_to_messages`` (a ``!function`` returning chat messages or the user
turn's interleaved text/audio parts) and one key of ours, ``hooks`` (named ``!function`` hooks,
e.g. ``prepare_dataset``).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nativetypes

from lalm_eval.errors import ConfigError, UnknownNameError
from lalm_eval.evaluation.filters import build_filters
from lalm_eval.metrics.scoring import make_metric
from lalm_eval.tasks.gen_kwargs import check_gen_kwargs
from lalm_eval.tasks.loader import FunctionRef, load_yaml

TEMPLATE_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
NATIVE_ENV = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)  # doc_to_audio
SUPPORTED_OUTPUT_TYPES = ("generate_until",)
_BARE_NAME = re.compile(r"^[A-Za-z_]\w*$")
# lm-eval task keys we do not run (loglikelihood / few-shot / image machinery): named in the error
LM_EVAL_ONLY_KEYS = {
    "doc_to_choice": "multiple-choice scoring is loglikelihood; put the choices in the prompt template",
    "target_delimiter": "there is no loglikelihood continuation",
    "fewshot_delimiter": "no few-shot prompts",
    "fewshot_split": "no few-shot prompts",
    "num_fewshot": "no few-shot prompts",
    "fewshot_config": "no few-shot prompts",
    "doc_to_image": "audio tasks: use doc_to_audio",
    "should_decontaminate": "not supported",
    "doc_to_decontamination_query": "not supported",
    "repeats": "not supported",
    "custom_dataset": "use hooks: {prepare_dataset: !function ...}",
}


@dataclasses.dataclass(frozen=True)
class TaskConfig:
    task: str
    task_alias: str | None = None
    tag: str | list[str] | None = None
    dataset_path: str | None = None
    dataset_name: str | None = None
    dataset_kwargs: dict | None = None
    test_split: str | None = None
    validation_split: str | None = None
    training_split: str | None = None  # what `lalm-eval train` fine-tunes on (lm-eval's key)
    process_docs: FunctionRef | None = None
    doc_to_text: str | FunctionRef | None = None
    doc_to_target: str | FunctionRef | None = None
    doc_to_audio: str | FunctionRef | None = None
    description: str | None = None
    output_type: str = "generate_until"
    generation_kwargs: dict | None = None
    metric_list: list[dict] | None = None
    filter_list: list[dict] | None = None
    process_results: FunctionRef | None = None
    metadata: dict | None = None
    # lmms-eval's key: a !function giving the chat messages, or just the user turn's content parts
    # ({"type": "text", "text": ...} / {"type": "audio"}) to interleave labels and audios; the
    # audio parts must match doc_to_audio's audios one for one (Task.messages checks); with content
    # parts, doc_to_text (when set) is appended as the last text part
    doc_to_messages: FunctionRef | None = None
    # ours
    hooks: dict[str, FunctionRef] | None = None
    # the names of the people a doc's prompt is about (Jinja2 native template or !function giving a
    # list of names, e.g. "{{ queried }}"): Request.subjects, for per-speaker soft prompts
    doc_to_subjects: str | FunctionRef | None = None

    @classmethod
    def from_dict(cls, data: dict, file: str | Path = "<dict>") -> TaskConfig:
        """Build and validate; an unknown, missing or mistyped key is a ConfigError naming ``file``."""
        return cls.resolve(data, file)[0]

    @classmethod
    def resolve(cls, data: dict, file: str | Path = "<dict>") -> tuple[TaskConfig, list, list]:
        """:meth:`from_dict`, and what its checks built: the ``metric_list`` entries' metrics and the
        ``filter_list``'s pipelines (a :class:`~lalm_eval.tasks.task.Task` owns them)."""
        check_known_keys(cls, data, file, "task")
        if "task" not in data:
            raise ConfigError(f"{file}: missing key 'task' (the task's name); add task: <name>")
        config = cls(**data)
        metrics, filters = _validate_task(config, str(file))
        return config, metrics, filters

    @classmethod
    def from_yaml(cls, path: str | Path) -> TaskConfig:
        return cls.from_dict(load_yaml(Path(path)), Path(path).resolve())

    @property
    def tags(self) -> list[str]:
        return [self.tag] if isinstance(self.tag, str) else list(self.tag or [])

    @property
    def version(self) -> Any:
        return (self.metadata or {}).get("version")

    def to_dict(self) -> dict:
        """The keys that are set (what a YAML would say after includes are merged)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}


@dataclasses.dataclass(frozen=True)
class GroupConfig:
    group: str
    group_alias: str | None = None
    task: list[str] = dataclasses.field(default_factory=list)  # task names, tags or nested groups
    aggregate_metric_list: list[dict] | None = None  # [{metric, aggregation: mean, weight_by_size}]
    metadata: dict | None = None

    @classmethod
    def from_dict(cls, data: dict, file: str | Path = "<dict>") -> GroupConfig:
        check_known_keys(cls, data, file, "group")
        for key in ("group", "task"):
            if key not in data:
                raise ConfigError(f"{file}: missing key {key!r} in group config; add {key}: ...")
        data = dict(data)
        if isinstance(data["task"], str):
            data["task"] = [data["task"]]
        config = cls(**data)
        _validate_group(config, str(file))
        return config

    @classmethod
    def from_yaml(cls, path: str | Path) -> GroupConfig:
        return cls.from_dict(load_yaml(Path(path)), Path(path).resolve())


def check_known_keys(cls, data: dict, file, kind: str) -> None:
    known = [f.name for f in dataclasses.fields(cls)]
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            if kind == "task" and key in LM_EVAL_ONLY_KEYS:
                hint = f" (an lm-eval key lalm-eval does not support: {LM_EVAL_ONLY_KEYS[key]})"
            raise ConfigError(f"{file}: unknown {kind} key {key!r}{hint}; known keys: {', '.join(known)}")


def _fail(file: str, key: str, message: str, fix: str | None = None):
    """``<file>: <key>: <message>; <fix>`` (the fix defaults to naming what to correct)."""
    raise ConfigError(f"{file}: {key}: {message}; {fix or f'correct {key} in this task YAML'}")


def _want(file: str, key: str, value, types: tuple, what: str, fix: str | None = None) -> None:
    if value is not None and not isinstance(value, types):
        _fail(file, key, f"must be {what}, got {type(value).__name__} {value!r}", fix or f"write {key} as {what}")


def check_template(file: str, key: str, value, bare_name_check: bool = True) -> None:
    """A str is a Jinja2 template (syntax-checked now); a FunctionRef a hook; nothing else."""
    if value is None or isinstance(value, FunctionRef):
        return
    if not isinstance(value, str):
        _fail(
            file,
            key,
            f"must be a Jinja2 template string or !function module.fn, got {value!r}",
            "quote the template, e.g. '{{ question }}'",
        )
    if bare_name_check and _BARE_NAME.match(value.strip()):
        _fail(
            file,
            key,
            f"{value!r} looks like an lm-eval column name, and in lalm-eval a string is always a Jinja2 template",
            f"write '{{{{ {value.strip()} }}}}' to use the doc field",
        )
    try:
        TEMPLATE_ENV.parse(value)
    except jinja2.TemplateSyntaxError as exc:
        _fail(
            file,
            key,
            f"invalid Jinja2 template (line {exc.lineno} of the template): {exc.message}",
            "fix the template's syntax (https://jinja.palletsprojects.com/en/stable/templates/)",
        )


def _validate_task(c: TaskConfig, file: str) -> tuple[list, list]:
    if not isinstance(c.task, str) or not c.task.strip() or "," in c.task:
        _fail(file, "task", f"must be a non-empty name without commas, got {c.task!r}", "give the task a name")
    for key in ("task_alias", "dataset_path", "dataset_name", "test_split", "validation_split", "training_split"):
        _want(file, key, getattr(c, key), (str,), "a string")
    if not (
        isinstance(c.tag, (str, type(None))) or (isinstance(c.tag, list) and all(isinstance(t, str) for t in c.tag))
    ):
        _fail(file, "tag", f"must be a name or a list of names, got {c.tag!r}", "write tag: name or tag: [a, b]")
    for key in ("dataset_kwargs", "generation_kwargs"):
        _want(file, key, getattr(c, key), (dict,), "a mapping", f"write {key}: {{name: value, ...}}")
    if c.generation_kwargs:
        check_gen_kwargs(c.generation_kwargs, f"{file}: generation_kwargs")
    if c.dataset_path is None and "prepare_dataset" not in (c.hooks or {}):
        _fail(
            file,
            "dataset_path",
            "missing, so the task has no docs",
            "give dataset_path: a local folder (Parquet + card) or a Hub dataset id",
        )
    for key in ("process_docs", "process_results", "doc_to_messages"):
        _want(file, key, getattr(c, key), (FunctionRef,), "a !function module.fn")
    if c.process_results is not None:
        _fail(
            file,
            "process_results",
            f"{c.process_results.spec} is not run: lalm-eval scores every task with its metric_list "
            "(lm-eval's process_results(doc, results) -> {metric: value} is not supported)",
            "remove process_results and score with metric_list entries (a !function metric is called "
            "with (prediction, reference))",
        )
    for key in ("doc_to_text", "doc_to_target", "doc_to_audio", "doc_to_subjects"):
        check_template(file, key, getattr(c, key))
    _want(file, "description", c.description, (str,), "a Jinja2 template string")
    check_template(file, "description", c.description, bare_name_check=False)
    if c.doc_to_text is None and c.doc_to_messages is None:
        _fail(
            file,
            "doc_to_text",
            "missing, and a task needs doc_to_text (or doc_to_messages) to build prompts",
            "add doc_to_text: '{{ question }}' (a Jinja2 template over the doc's fields)",
        )
    if c.output_type not in SUPPORTED_OUTPUT_TYPES:
        _fail(
            file,
            "output_type",
            f"{c.output_type!r} is not supported",
            f"lalm-eval runs generative tasks only: {', '.join(SUPPORTED_OUTPUT_TYPES)}",
        )
    metrics = _validate_metrics(c.metric_list, file)
    filters = build_filters(c.filter_list, file)
    if not isinstance(c.metadata, dict) or "version" not in c.metadata:
        _fail(
            file,
            "metadata",
            f"must be a mapping with a 'version', got {c.metadata!r}",
            "write e.g. metadata: {version: 1.0}",
        )
    _want(file, "hooks", c.hooks, (dict,), "a mapping of hook name → !function module.fn")
    for name, ref in (c.hooks or {}).items():
        _want(file, f"hooks.{name}", ref, (FunctionRef,), "a !function module.fn")
        if ref is None:
            _fail(file, f"hooks.{name}", "must be a !function module.fn, got null", f"write {name}: !function utils.fn")
    return metrics, filters


def _validate_metrics(metrics, file: str) -> list:
    """Every ``metric_list`` entry checked and its metric built (in entry order)."""
    _want(file, "metric_list", metrics, (list,), "a list of {metric, aggregation, higher_is_better}")
    built = []
    for i, m in enumerate(metrics or []):
        if not isinstance(m, dict) or "metric" not in m:
            _fail(
                file,
                f"metric_list[{i}]",
                f"must be a mapping with a 'metric', got {m!r}",
                "write - {metric: exact_match, aggregation: mean, higher_is_better: true}",
            )
        name = m["metric"]
        if not isinstance(name, (str, FunctionRef)):
            _fail(
                file,
                f"metric_list[{i}]",
                f"'metric' must be a name or !function, got {name!r}",
                "name a registered metric or a !function module.fn",
            )
        for key in ("aggregation", "higher_is_better"):
            if key not in m:
                _fail(
                    file,
                    f"metric_list[{i}] (metric {str(name)!r})",
                    f"missing {key!r}",
                    "lalm-eval requires aggregation and higher_is_better on every metric "
                    "(e.g. aggregation: mean, higher_is_better: true)",
                )
        if not isinstance(m["aggregation"], (str, FunctionRef)):
            _fail(
                file,
                f"metric_list[{i}] (metric {str(name)!r})",
                f"aggregation must be a name or !function, got {m['aggregation']!r}",
                "write e.g. aggregation: mean",
            )
        if not isinstance(m["higher_is_better"], bool):
            _fail(
                file,
                f"metric_list[{i}] (metric {str(name)!r})",
                f"higher_is_better must be true or false, got {m['higher_is_better']!r}",
                "write higher_is_better: true or false",
            )
        # the metric itself: a registered name, its options and the aggregation it accepts
        try:
            built.append(make_metric(m, where=f"{file}: metric_list[{i}]"))
        except UnknownNameError as exc:  # the registry's message lists the names; say what to do
            if "; " in str(exc):
                raise
            raise UnknownNameError(f"{exc}; name one of these metrics or a !function module.fn") from None
    return built


def _validate_group(g: GroupConfig, file: str) -> None:
    if not isinstance(g.group, str) or not g.group.strip() or "," in g.group:
        _fail(file, "group", f"must be a non-empty name without commas, got {g.group!r}")
    _want(file, "group_alias", g.group_alias, (str,), "a string")
    if not isinstance(g.task, list) or not g.task:
        _fail(file, "task", f"must be a non-empty list of task, tag or group names, got {g.task!r}")
    for i, name in enumerate(g.task):
        if not isinstance(name, str):
            _fail(
                file,
                f"task[{i}]",
                f"must be a task, tag or group name (inline task definitions are not supported), got {name!r}",
                "give the task its own YAML and list its name here",
            )
    _want(
        file,
        "aggregate_metric_list",
        g.aggregate_metric_list,
        (list,),
        "a list of {metric, aggregation, weight_by_size}",
    )
    for i, m in enumerate(g.aggregate_metric_list or []):
        where = f"aggregate_metric_list[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("metric"), str):
            _fail(file, where, f"must be a mapping with a 'metric' name, got {m!r}")
        extra = sorted(set(m) - {"metric", "aggregation", "weight_by_size"})
        if extra:
            _fail(file, where, f"unknown key(s) {extra}", "the keys it takes: metric, aggregation, weight_by_size")
        if m.get("aggregation") != "mean":
            _fail(
                file,
                where,
                f"aggregation must be 'mean' (the only group aggregation), got {m.get('aggregation')!r}",
                "write aggregation: mean",
            )
        if not isinstance(m.get("weight_by_size", False), bool):
            _fail(file, where, f"weight_by_size must be true or false, got {m['weight_by_size']!r}")
    _want(file, "metadata", g.metadata, (dict,), "a mapping")
