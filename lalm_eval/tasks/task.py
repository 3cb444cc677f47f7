"""A loaded task: its config, its folder, its hash, its resolved metrics and filters, and how one
doc becomes a prompt and audio.

Loading docs is the evaluation's docs stage (:mod:`lalm_eval.evaluation.docs`); a :class:`Task`
only turns a doc (a dict of dataset fields) into text, target, audio and chat messages, as its
YAML says, and owns the ``metric_list`` metrics and ``filter_list`` pipelines built once when it
loaded.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2

from lalm_eval.errors import ConfigError, LalmEvalError
from lalm_eval.tasks.config import NATIVE_ENV, TEMPLATE_ENV, TaskConfig
from lalm_eval.tasks.loader import FunctionRef, load_yaml


class Task:
    def __init__(
        self, config: TaskConfig, yaml_file: str | Path, metrics: list | None = None, filters: list | None = None
    ):
        self.config = config
        self.yaml_file = Path(yaml_file).resolve()
        self.folder = self.yaml_file.parent
        self._templates: dict[str, jinja2.Template] = {}
        self._resolved = (metrics, filters) if metrics is not None and filters is not None else None

    @classmethod
    def from_yaml(cls, path: str | Path) -> Task:
        path = Path(path).resolve()
        config, metrics, filters = TaskConfig.resolve(load_yaml(path), path)
        return cls(config, path, metrics, filters)

    def replaced(self, **changes) -> Task:
        """A copy reading other data (``dataset_path``, ``test_split`` …): the same YAML, metrics
        and filters (``changes`` may not touch ``metric_list`` / ``filter_list``)."""
        if {"metric_list", "filter_list"} & set(changes):
            raise ValueError("Task.replaced: build a new Task to change metric_list or filter_list")
        return Task(dataclasses.replace(self.config, **changes), self.yaml_file, self.metrics, self.filters)

    @property
    def metrics(self) -> list:
        """The :class:`~lalm_eval.metrics.scoring.Metric` of each ``metric_list`` entry, in order."""
        return self._resolve()[0]

    @property
    def filters(self) -> list:
        """The ``filter_list`` pipelines (:class:`~lalm_eval.evaluation.filters.FilterPipeline`)."""
        return self._resolve()[1]

    def _resolve(self) -> tuple[list, list]:
        if self._resolved is None:  # a Task built from a config: its checks run (and build) now
            _, metrics, filters = TaskConfig.resolve(self.config.to_dict(), self.yaml_file)
            self._resolved = (metrics, filters)
        return self._resolved

    @property
    def eval_split(self) -> str:
        """The split evaluated: ``test_split``, else ``validation_split`` (lm-eval's eval docs), else ``test``."""
        return self.config.test_split or self.config.validation_split or "test"

    def __repr__(self) -> str:
        return f"Task({self.name!r}, {self.yaml_file})"

    @property
    def name(self) -> str:
        return self.config.task

    @property
    def alias(self) -> str:
        return self.config.task_alias or self.config.task

    @property
    def version(self) -> Any:
        return self.config.version

    @property
    def gen_kwargs(self) -> dict:
        return dict(self.config.generation_kwargs or {})

    @functools.cached_property
    def task_hash(self) -> str:
        """sha256 of the resolved config (includes merged) and of every hook module it names."""
        refs: list[FunctionRef] = []
        config = _canonical(self.config.to_dict(), refs)
        hooks = sorted({(r.module_relpath, hashlib.sha256(r.source_text().encode()).hexdigest()) for r in refs})
        payload = {"config": config, "hook_sources": [list(h) for h in hooks]}
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def hook(self, name: str) -> Callable | None:
        """The named hook of ``hooks:`` (imported now), or None when the task has none by that name."""
        ref = (self.config.hooks or {}).get(name)
        return ref.resolve() if ref is not None else None

    def process_docs(self, dataset, **context):
        """``process_docs(dataset)`` when the YAML sets it, else the dataset unchanged.

        Keyword context goes to hooks whose signature asks for it (by parameter name, or all of it
        with ``**kwargs``); lm-eval hooks that take the dataset only are called as before. Offered:
        ``metadata`` (the task's ``metadata:`` mapping) and what the caller passes — the evaluator
        passes ``dataset_path``, the path it actually loaded (after ``hooks.prepare_dataset``), so
        a hook can open another config of the same dataset.
        """
        if self.config.process_docs is None:
            return dataset
        hook = self.config.process_docs.resolve()
        offered = {"metadata": dict(self.config.metadata or {}), **context}
        return self._call(self.config.process_docs, "process_docs", dataset, **_accepted_kwargs(hook, offered))

    def _call(self, ref: FunctionRef, key: str, *args, **kwargs):
        """A ``!function`` hook called on the task's data; what it raises on bad data or a broken
        hook becomes a :class:`ConfigError` naming the task, the key and the hook (project errors
        pass as they are)."""
        try:
            return ref(*args, **kwargs)
        except LalmEvalError:
            raise
        except Exception as exc:
            raise ConfigError(
                f"{self.yaml_file}: task {self.name!r}: {key} (!function {ref.spec}) failed with "
                f"{_clause(repr(exc))}; fix the hook or the data it reads (--verbose shows the traceback)"
            ) from exc

    # -- one doc → prompt pieces ------------------------------------------------------------

    def _apply(self, key: str, doc: dict, native: bool = False):
        value = getattr(self.config, key)
        if value is None:
            return None
        if isinstance(value, FunctionRef):
            return self._call(value, key, doc)
        template = self._templates.get(key)
        if template is None:
            template = (NATIVE_ENV if native else TEMPLATE_ENV).from_string(value)
            self._templates[key] = template
        fields = ", ".join(map(str, sorted(doc))) if isinstance(doc, dict) else type(doc).__name__
        where = f"{self.yaml_file}: task {self.name!r}: {key}"
        try:
            return template.render(**doc)
        except jinja2.UndefinedError as exc:
            raise ConfigError(
                f"{where}: {_clause(exc.message)} in the template {_snippet(value)}; use the doc's fields: {fields}"
            ) from exc
        except (jinja2.TemplateError, TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            raise ConfigError(
                f"{where}: the template {_snippet(value)} failed on a doc with {_clause(repr(exc))}; "
                f"fix the template (the doc's fields: {fields})"
            ) from exc

    def render_text(self, doc: dict) -> str:
        if self.config.doc_to_text is None:
            raise ConfigError(
                f"{self.yaml_file}: task {self.name!r} has no doc_to_text (it builds doc_to_messages); "
                "add doc_to_text for what needs the prompt as text"
            )
        text = self._apply("doc_to_text", doc)
        if not isinstance(text, str):
            raise ConfigError(
                f"{self.yaml_file}: task {self.name!r}: doc_to_text must give a string, got "
                f"{type(text).__name__} {_clause(repr(text))[:200]}; make the hook return the prompt text"
            )
        return text

    def render_target(self, doc: dict):
        """The reference: a string (template), or whatever the ``!function`` returns (str or list)."""
        return self._apply("doc_to_target", doc)

    def audio_of(self, doc: dict) -> list:
        """The doc's audios, in prompt order: [] when doc_to_audio is unset, one item → [item].

        A template is rendered with Jinja2 native types, so ``"{{ audio }}"`` gives the field's
        object and ``"{{ [enrollment, test] }}"`` a list of them.
        """
        audio = self._apply("doc_to_audio", doc, native=True)
        if audio is None:
            return []
        return list(audio) if isinstance(audio, (list, tuple)) else [audio]

    def subjects_of(self, doc: dict) -> list[str]:
        """The names of the people the doc's prompt is about (``doc_to_subjects``; [] when unset)."""
        names = self._apply("doc_to_subjects", doc, native=True)
        if names is None:
            return []
        names = [names] if isinstance(names, str) else list(names)
        if not all(isinstance(n, str) for n in names):
            raise ConfigError(
                f"{self.yaml_file}: task {self.name!r}: doc_to_subjects must give names (strings), got "
                f"{_clause(repr(names))[:200]}; make it give a list of names"
            )
        return names

    def render_description(self, doc: dict) -> str | None:
        return self._apply("description", doc)

    def messages(self, doc: dict) -> list[dict]:
        """Chat messages (Hugging Face convention), an optional system message (``description``)
        first.

        Without ``doc_to_messages``: one user turn with an ``{"type": "audio"}`` part per audio of
        :meth:`audio_of`, then the text of :meth:`render_text`. With it (lmms-eval's key), the hook
        returns either the whole message list (used as is) or the user turn's content parts, e.g.
        ``[{"type": "text", "text": "Reference clip of Alice:"}, {"type": "audio"},
        {"type": "text", "text": "Test audio:"}, {"type": "audio"}]``, to interleave text and
        audio; ``doc_to_text``, when set, is rendered and appended as the last text part (so the
        prompt text stays a YAML template). Either way the audio parts must be as many as the
        audios of :meth:`audio_of`, which fill them in order.
        """
        if self.config.doc_to_messages is None:
            content = [{"type": "audio"} for _ in self.audio_of(doc)]
            content.append({"type": "text", "text": self.render_text(doc)})
            return self._with_description(doc, [{"role": "user", "content": content}])
        out, spec = self._call(self.config.doc_to_messages, "doc_to_messages", doc), self.config.doc_to_messages.spec
        if isinstance(out, (list, tuple)) and out and all(isinstance(p, dict) and "type" in p for p in out):
            content = list(out)
            if self.config.doc_to_text is not None:
                content.append({"type": "text", "text": self.render_text(doc)})
            messages = self._with_description(doc, [{"role": "user", "content": content}])
        elif isinstance(out, (list, tuple)) and all(isinstance(m, dict) and "role" in m for m in out):
            messages = list(out)
        else:
            raise ConfigError(
                f"{self.yaml_file}: task {self.name!r}: doc_to_messages ({spec}) must return a list "
                f"of {{'role', 'content'}} messages or of {{'type', ...}} content parts, got "
                f"{_clause(repr(out))[:200]}; fix the hook"
            )
        n_parts = sum(
            p.get("type") == "audio"
            for m in messages
            for p in (m.get("content") if isinstance(m.get("content"), (list, tuple)) else ())
        )
        n_audios = len(self.audio_of(doc))
        if n_parts != n_audios:
            raise ConfigError(
                f"{self.yaml_file}: task {self.name!r}: doc_to_messages ({spec}) gives {n_parts} audio "
                f"part(s) but doc_to_audio gives {n_audios} audio(s); make them match, in order"
            )
        return messages

    def text_parts(self, doc: dict) -> list[str]:
        """The text parts of the user turn of :meth:`messages`, in order, without reading the doc's
        audio (the ``description`` system message aside): for harnesses that place every audio
        before one prompt text (lmms-eval's audio models)."""
        if self.config.doc_to_messages is None:
            return [self.render_text(doc)]
        out = self._call(self.config.doc_to_messages, "doc_to_messages", doc)
        if isinstance(out, (list, tuple)) and out and all(isinstance(p, dict) and "type" in p for p in out):
            texts = [p["text"] for p in out if p.get("type") == "text"]
            return texts + ([self.render_text(doc)] if self.config.doc_to_text is not None else [])
        return [
            p["text"] if isinstance(p, dict) else str(p)
            for m in out
            if m.get("role") != "system"
            for p in (m["content"] if isinstance(m.get("content"), (list, tuple)) else [m.get("content")])
            if not isinstance(p, dict) or p.get("type") == "text"
        ]

    def _with_description(self, doc: dict, messages: list[dict]) -> list[dict]:
        description = self.render_description(doc)
        if description:
            messages.insert(0, {"role": "system", "content": [{"type": "text", "text": description}]})
        return messages


def _clause(text: str) -> str:
    """``text`` as one clause of a one-line error (no newlines, no ``;``, which parts the fix off)."""
    return " ".join(str(text).replace(";", ",").split())


def _snippet(template: str, width: int = 80) -> str:
    text = _clause(template)
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def _accepted_kwargs(fn: Callable, offered: dict) -> dict:
    """The part of ``offered`` that ``fn`` takes as keyword arguments (all of it for ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature: the dataset only
        return {}
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return dict(offered)
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return {k: v for k, v in offered.items() if k in names}


def _canonical(value, refs: list[FunctionRef]):
    """JSON-ready copy of a config value; ``!function`` refs become their tag text and are collected."""
    if isinstance(value, FunctionRef):
        refs.append(value)
        return str(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v, refs) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v, refs) for v in value]
    return value
