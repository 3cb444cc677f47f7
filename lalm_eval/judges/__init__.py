"""LLM judges: the machinery (templates, strict verdicts, cache, ``--judge`` specs and presets).

``make_judge(name, llm, cache_dir)`` builds a judge registered in :data:`JUDGES`, every one through
the entry-point group ``lalm_eval.judges`` (the benchmarks' own: ``palm_captioning``,
``palm_recognition``, ``palm_reasoning`` from palm_bench.judges, ``msu``, ``msu_error_type`` from
msu_bench.judges);
``judge_llm_from_spec("openai:model=gpt-4o-mini,base_url=http://127.0.0.1:8000/v1,concurrency=8")``
builds the judge's text LLM from a ``--judge`` option; a named preset of a task folder's
``judge_presets.yaml`` (``tasks/palm/``) stands for a
backend and its options (``--judge palm_paper:base_url=http://host:8000/v1``: PALM's judge,
Qwen3-Omni-30B-A3B-Thinking, with its decoding recorded). See :mod:`lalm_eval.judges.base` for the
contract (strict JSON verdicts, one retry, failures as ``score=None``, a resumable cache; with
``samples=K``, K seeded verdicts per item and their mean) and :mod:`lalm_eval.judges.decoding` for
``--judge_samples`` and the footnote text that names a judge's decoding beside its scores.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError
from lalm_eval.judges.base import JUDGES, Judge, JudgeItem, JudgeResult, count_failures
from lalm_eval.judges.cache import JudgeCache
from lalm_eval.llm.base import TextLLM

__all__ = [
    "JUDGES",
    "CACHE_FILE",
    "Judge",
    "JudgeCache",
    "JudgeItem",
    "JudgeResult",
    "count_failures",
    "judge_llm_from_spec",
    "judge_presets",
    "make_judge",
    "parse_judge_spec",
]

CACHE_FILE = "judge_cache.sqlite"  # the file make_judge keeps in its cache_dir
PRESETS_GLOB = "*/judge_presets.yaml"  # a task folder's named --judge presets
FLAG = "--judge"
_EXAMPLE = "openai:model=gpt-4o-mini,base_url=http://127.0.0.1:8000/v1"


def preset_files() -> list[Path]:
    """The task folders' ``judge_presets.yaml`` files (``tasks/palm/``: the paper's judge; a plug-in's
    task folder, :func:`lalm_eval.resources.task_folders`), in name order per folder."""
    from lalm_eval.resources import task_folders

    return [
        f for folder in task_folders() for f in sorted([*folder.glob(PRESETS_GLOB), *folder.glob("judge_presets.yaml")])
    ]


@lru_cache(maxsize=1)
def judge_presets() -> dict[str, dict]:
    """``{name: {"backend", "options", "description"}}`` from the task folders' ``judge_presets.yaml``
    (:func:`preset_files`); a name defined twice is an error naming both files."""
    data, where = {}, {}
    for file in preset_files():
        for name, preset in (yaml.safe_load(file.read_text(encoding="utf-8")) or {}).items():
            if (
                not isinstance(preset, dict)
                or not isinstance(preset.get("backend"), str)
                or not isinstance(preset.get("options", {}), dict)
            ):
                raise ConfigError(f"{file}: preset {name!r} needs a 'backend' and an 'options' mapping")
            if name in data:
                raise ConfigError(f"{file}: preset {name!r} is also defined in {where[name]}; rename one of them")
            data[name], where[name] = preset, file
    return data


def parse_judge_spec(spec: str) -> tuple[str, dict]:
    """``"backend:key=value,key=value"`` → ``(backend, {key: value})``. Values are read as YAML
    (``concurrency=8`` → 8, ``temperature=0.0`` → 0.0) except those of the text options
    (:func:`lalm_eval.llm.options.text_option_names`: model, base_url, pretrained …), kept as
    written. A value cannot contain a comma. Errors name ``--judge``."""
    from lalm_eval.llm.options import read_items

    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"{FLAG}: the spec is empty; write it as BACKEND[:key=value,...], e.g. {_EXAMPLE}")
    backend, _, rest = spec.strip().partition(":")
    backend = backend.strip()
    if not backend or "=" in backend:
        raise ConfigError(
            f"{FLAG} {spec!r}: does not start with a backend or preset name; write it as BACKEND[:key=value,...], "
            f"e.g. {_EXAMPLE}"
        )
    items = [part.strip() for part in rest.split(",") if part.strip()] if rest.strip() else []
    return backend, read_items(items, FLAG)


def judge_llm_from_spec(spec: str) -> TextLLM:
    """The text LLM a ``--judge`` spec names: ``openai:model=...,base_url=...,concurrency=8`` or
    ``hf:pretrained=/path/to/model,batch_size=8`` (any backend in ``TEXT_LLMS``; options are its
    constructor's keyword arguments, each checked by kind and range, :mod:`lalm_eval.llm.options`;
    the API key comes from ``OPENAI_API_KEY``, not the spec), or a preset of :func:`judge_presets`
    (``palm_paper[:base_url=...]``), its options under the spec's. Every error names ``--judge``
    and comes now, before any answer is generated."""
    import difflib

    from lalm_eval.errors import UnknownNameError
    from lalm_eval.llm.base import TEXT_LLMS
    from lalm_eval.llm.options import build_text_llm

    backend, options = parse_judge_spec(spec)
    presets = judge_presets()
    if backend not in TEXT_LLMS:
        if backend not in presets:
            names = [*TEXT_LLMS.names(), *presets]
            close = difflib.get_close_matches(backend, names, n=2)
            hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
            raise UnknownNameError(
                f"{FLAG}: unknown backend or preset {backend!r}{hint}; give a backend ({', '.join(TEXT_LLMS.names())}) "
                f"or a preset ({', '.join(presets)})"
            )
        preset = presets[backend]
        options = {**preset.get("options", {}), **options, "preset": backend}
        backend = preset["backend"]
    return build_text_llm(backend, options, FLAG)


def make_judge(name: str, llm: TextLLM, cache_dir: str | Path | None = None, **kwargs) -> Judge:
    """The judge registered as ``name`` over ``llm``, caching verdicts in
    ``cache_dir/judge_cache.sqlite`` (no cache when ``cache_dir`` is None); ``kwargs`` go to the
    judge (``chunk_size``; ``samples`` and ``seed``: K verdicts per item, seeded from ``seed``)."""
    cache = JudgeCache(Path(cache_dir) / CACHE_FILE) if cache_dir is not None else None
    return JUDGES.get(name)(llm, cache=cache, **kwargs)
