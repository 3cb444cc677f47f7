"""The docs stage: each task's dataset opened once, ``process_docs`` run once, audio kept encoded.

:func:`open_tasks` loads the tasks named on the command line (YAML, metrics and filters checked)
and opens their data before any model is built, so that what is wrong with a task or its dataset
shows first. An :class:`OpenedTask` then serves every later stage — the scan, the decoding of the
cache misses, a dry run, a second evaluation (``lalm-eval check``, training's validation) — from
the same processed ``Dataset``: a file-backed one is *parked* between uses (kept as its pickled
file references, a few kB, so that its memory-mapped pages leave the RSS) and mapped again when
its rows are read, without ``prepare_dataset``, ``load_dataset`` or ``process_docs`` running again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lalm_eval.audio.io import read_audio
from lalm_eval.errors import AudioError, ConfigError, LalmEvalError
from lalm_eval.hub.load import load_dataset_fresh
from lalm_eval.tasks import Task, TaskManager
from lalm_eval.timings import Timings


def decode_audio(value) -> np.ndarray:
    """A doc's audio value (``{"bytes", "path"}``, an array, or a decoder) as 16 kHz float32."""
    if isinstance(value, np.ndarray):
        return value.astype(np.float32)
    if isinstance(value, dict) and value.get("bytes") is not None:
        return read_audio(value["bytes"])[0]
    if isinstance(value, dict) and value.get("array") is not None:
        from lalm_eval.audio.io import resample

        return resample(np.asarray(value["array"], np.float32), int(value["sampling_rate"]), 16_000)
    if isinstance(value, dict) and value.get("path"):
        return read_audio(value["path"])[0]
    raise AudioError(
        f"audio value: cannot decode a {type(value).__name__}; doc_to_audio must give an Audio column's "
        "value ({bytes, path}) or an array of samples"
    )


def light_doc(value):
    """``value`` (a doc) without audio content: every ``bytes`` value and the ``array`` of a decoded
    ``{"array", "sampling_rate"}`` become None, at any depth; the rest is kept (text fields, paths,
    labels). What the scoring keeps of each doc while the run streams."""
    if isinstance(value, (bytes, bytearray)):
        return None
    if isinstance(value, dict):
        audio = "array" in value and "sampling_rate" in value
        return {k: None if audio and k == "array" else light_doc(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(light_doc(v) for v in value)
    return value


@dataclasses.dataclass
class OpenedTask:
    """One task's docs after ``process_docs`` (a ``datasets.Dataset``, audio columns left encoded,
    or whatever sequence the hook returned), ``limit`` applied; their count before ``limit``; what
    ``process_docs`` left out on purpose, ``{reason: count}``."""

    task: Task
    n_original: int
    excluded: dict = dataclasses.field(default_factory=dict)
    _docs: Sequence[dict] | None = None
    _parked: bytes | None = None

    def __post_init__(self) -> None:
        self._len = len(self._docs) if self._docs is not None else 0

    @property
    def docs(self) -> Sequence[dict]:
        """The docs, mapped again from their files when :meth:`park` let them go."""
        if self._docs is None and self._parked is not None:
            self._docs = pickle.loads(self._parked)
        return self._docs if self._docs is not None else []

    def __len__(self) -> int:
        return self._len

    def park(self) -> None:
        """Let a file-backed ``Dataset`` go (its pickled file references kept): its mapped pages can
        leave the RSS until :attr:`docs` is read again. Other sequences are kept as they are."""
        docs = self._docs
        if docs is not None and getattr(docs, "cache_files", None):
            self._parked, self._docs = pickle.dumps(docs), None


def audio_left_encoded(ds):
    """``ds`` with every ``Audio`` column cast to ``Audio(decode=False)``: the harness decodes
    audio itself (soundfile, deterministic), from the encoded bytes."""
    import datasets

    for name, feature in ds.features.items():
        if isinstance(feature, datasets.Audio):
            ds = ds.cast_column(name, datasets.Audio(decode=False))
    return ds


def open_docs(task: Task, cache_dir: Path, limit: int | None, split: str | None = None) -> OpenedTask:
    """The task's docs of ``split`` (default: :meth:`Task.eval_split`), after ``process_docs``, read
    lazily, and their count before ``limit``.

    A ``process_docs`` hook that takes an ``excluded`` argument gets a dict to count the docs it
    leaves out on purpose, ``{reason: count}`` (e.g. the MSU release's ``reverse_*`` questions);
    they land in :attr:`OpenedTask.excluded` (the run writes them to the task's ``sample_info``,
    so the results JSON says what was left out and why)."""

    cfg = task.config
    path = cfg.dataset_path
    prepare = task.hook("prepare_dataset")
    if prepare is not None:
        path = prepare(cfg.dataset_path, cfg.dataset_name, cache_dir)
    ds = load_dataset_fresh(
        path,
        cfg.dataset_name,
        split=split or task.eval_split,
        cache_root=cache_dir,
        **(cfg.dataset_kwargs or {}),
    )  # local folders: a cache keyed by their content
    ds = audio_left_encoded(ds)
    counts: dict = {}
    ds = task.process_docs(ds, dataset_path=str(path), excluded=counts)  # hooks may open other configs of the path
    n = len(ds)
    if limit is not None:
        ds = ds.select(range(min(limit, n))) if hasattr(ds, "select") else list(ds)[:limit]
    return OpenedTask(task, n, {k: v for k, v in counts.items() if v}, ds)


@contextlib.contextmanager
def naming_task(task: Task):
    """A project error raised while ``task``'s data is opened or read, told with the task's YAML
    and name in front (unless it names the YAML already), so that the user knows which task of a
    group the dataset, split or config belongs to."""
    try:
        yield
    except LalmEvalError as exc:
        if str(task.yaml_file) not in str(exc):
            exc.args = (f"{task.yaml_file}: task {task.name!r}: {exc}", *exc.args[1:])
        raise


def probe_doc(task: Task, docs: Sequence[dict]) -> None:
    """Render the first doc's prompt, audio references, target and subjects, so that a template
    or hook that does not fit the dataset fails now, not after the model has loaded."""
    if len(docs):
        doc = dict(docs[0])
        task.messages(doc)
        task.render_target(doc)
        task.subjects_of(doc)
        for audio in task.audio_of(doc):  # an Audio column's value ({bytes, path}) or samples; not text
            if not isinstance(audio, (dict, np.ndarray)):
                shown = " ".join(repr(audio).replace(";", ",").split())[:60]
                raise ConfigError(
                    f"{task.yaml_file}: task {task.name!r}: doc_to_audio gives a {type(audio).__name__} "
                    f"({shown}), not audio; point it at the dataset's Audio column, e.g. '{{{{ audio }}}}'"
                )


@dataclasses.dataclass
class OpenedTasks:
    """What :func:`open_tasks` checked before any model is built: the tasks resolved (``names`` as
    asked, ``manager`` for the groups) and each one opened. :func:`lalm_eval.evaluation.run.evaluate`
    and :func:`lalm_eval.evaluation.plan.plan_run` take it, as often as needed."""

    names: list[str]
    manager: TaskManager
    opened: list[OpenedTask]
    cache_dir: Path
    limit: int | None = None

    @property
    def tasks(self) -> list[Task]:
        return [o.task for o in self.opened]


def check_limit(limit) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit: must be a whole number >= 1, got {limit!r}; omit it to run every doc")


def open_tasks(
    task_names: list[str], *, include_path=None, cache_dir: Path, limit: int | None = None, timings=None
) -> OpenedTasks:
    """Every task of ``task_names`` loaded (its YAML, metrics and filters checked), its dataset
    opened (a missing dataset, config or split is an error naming the task) and its first doc
    rendered: what can be wrong with the tasks and their data shows before a model is built.
    ``timings`` (a :class:`lalm_eval.timings.Timings`) gets the ``task_loading`` and ``dataset_open`` stages."""
    check_limit(limit)
    timings = timings if timings is not None else Timings()
    with timings.stage("task_loading"):
        manager = TaskManager(include_paths=include_path)
        tasks = [manager.load_task(n) for n in manager.resolve(task_names)]
    with timings.stage("dataset_open"):
        return open_loaded(task_names, manager, tasks, cache_dir, limit)


def open_loaded(names: list[str], manager: TaskManager, tasks: list[Task], cache_dir: Path, limit=None) -> OpenedTasks:
    """:func:`open_tasks` for tasks already loaded (e.g. copies reading another split)."""
    opened = []
    for task in tasks:
        with naming_task(task):
            one = open_docs(task, Path(cache_dir), limit)
            probe_doc(task, one.docs)
        opened.append(one)
    if tasks and not any(len(o.docs) for o in opened):
        left_out = {k: v for o in opened for k, v in o.excluded.items()}
        why = (
            f" ({', '.join(f'{k}: {v}' for k, v in sorted(left_out.items()))} left out by process_docs)"
            if left_out
            else ""
        )
        raise ConfigError(
            f"{tasks[0].yaml_file}: no docs to evaluate in {', '.join(t.name for t in tasks)}{why}; "
            "check the tasks' dataset_path, dataset_name and test_split"
        )
    return OpenedTasks(list(names), manager, opened, Path(cache_dir), limit)
