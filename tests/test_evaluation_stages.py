"""The evaluation's stages each do their job once (issue 22): one ``lalm-eval --tasks
palm_recognition`` run on the tiny embedded build loads the task once, builds each of its metrics
once, opens its dataset once (``prepare_dataset``, ``load_dataset``, ``process_docs``) and reads the
response cache once per doc; the filter registry resolves names when the task loads; the docs
stage reads rows again from the parked dataset; ``process_results`` is refused and
``validation_split`` is the split evaluated without a ``test_split``."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

import pytest

from lalm_eval.api import Adapter, Response
from lalm_eval.errors import ConfigError
from lalm_eval.evaluation import docs as docs_stage
from lalm_eval.models import MODELS
from tests.bad_inputs.harness import run_cli
from tests.test_palm_enrollment import shared_build

LIMIT = 4


class Echo(Adapter):
    """Answers every request ``Alice``; counts what reaches it."""

    name = "stages_echo"
    generated: list = []

    def identity(self):
        return {"name": self.name}

    def generate(self, requests, batch_size=1):
        type(self).generated += [(r.task, r.doc_id) for r in requests]
        self.n_generated += len(requests)
        return [Response("Alice") for _ in requests]


@pytest.fixture(scope="module")
def build(tmp_path_factory, corpus):
    if Echo.name not in MODELS:
        MODELS.register(Echo.name, Echo)
    built = shared_build(tmp_path_factory, corpus)[0]
    work = tmp_path_factory.mktemp("stages")
    os.symlink(built, work / "palm-bench")  # ./palm-bench: the prepare_dataset hook uses the build
    return work


class Spies:
    """Counters around each stage's expensive calls (``monkeypatch``: undone after the test)."""

    def __init__(self, monkeypatch):
        from lalm_eval.cache import ResponseCache
        from lalm_eval.metrics import scoring
        from lalm_eval.tasks import TaskManager, config, task

        self.calls: collections.Counter = collections.Counter()
        self.cache_keys: collections.Counter = collections.Counter()

        def counted(owner, attr, label):
            real = getattr(owner, attr)

            def spy(*args, **kwargs):
                self.calls[label] += 1
                return real(*args, **kwargs)

            monkeypatch.setattr(owner, attr, spy)

        counted(TaskManager, "load_task", "load_task")
        counted(task.Task, "from_yaml", "from_yaml")
        counted(config, "make_metric", "make_metric")
        counted(scoring, "make_metric", "make_metric")
        counted(docs_stage, "load_dataset_fresh", "load_dataset")
        counted(task.Task, "process_docs", "process_docs")
        real_hook = task.Task.hook

        def hook(this, name):
            fn = real_hook(this, name)
            if name != "prepare_dataset" or fn is None:
                return fn

            def prepare(*args, **kwargs):
                self.calls["prepare_dataset"] += 1
                return fn(*args, **kwargs)

            return prepare

        monkeypatch.setattr(task.Task, "hook", hook)
        real_get = ResponseCache.get_many

        def get_many(this, keys):
            keys = list(keys)
            self.cache_keys.update(keys)
            return real_get(this, keys)

        monkeypatch.setattr(ResponseCache, "get_many", get_many)


def _run(build: Path, cache: Path, *extra):
    argv = ["--model", Echo.name, "--tasks", "palm_recognition", "--limit", LIMIT, "--cache_dir", cache, *extra]
    return run_cli("lalm-eval", argv, cwd=build)


def _no_bertscore(monkeypatch):
    """BERTScore's backbone is not what is counted here: each item scores 0 without loading it."""
    from lalm_eval.metrics.scoring import MetricResult
    from lalm_eval.metrics.task_metrics import BertScoreMetric

    monkeypatch.setattr(
        BertScoreMetric, "compute", lambda self, items: MetricResult([0.0] * len(items), [None] * len(items))
    )


def test_one_run_loads_builds_opens_and_reads_the_cache_once(build, tmp_path, monkeypatch):
    _no_bertscore(monkeypatch)
    spies = Spies(monkeypatch)
    Echo.generated = []
    result = _run(build, tmp_path / "cache", "--output_path", tmp_path / "out")
    assert result.rc == 0, result.err[-2000:]
    from lalm_eval.tasks import TaskManager

    n_metrics = len(TaskManager().load_task("palm_recognition").config.metric_list)  # after the spies' count
    spies.calls["load_task"] -= 1
    spies.calls["from_yaml"] -= 1
    spies.calls["make_metric"] -= n_metrics
    assert spies.calls["load_task"] == spies.calls["from_yaml"] == 1
    assert spies.calls["make_metric"] == n_metrics
    assert spies.calls["prepare_dataset"] == spies.calls["load_dataset"] == spies.calls["process_docs"] == 1
    assert len(Echo.generated) == LIMIT
    assert len(spies.cache_keys) == LIMIT and set(spies.cache_keys.values()) == {1}  # each doc's key read once
    (path,) = (tmp_path / "out").glob("**/results_*.json")
    assert json.loads(path.read_text())["n-samples"]["palm_recognition"]["scored"] == LIMIT

    # the warm rerun: every answer from the cache, still one read per doc and nothing generated
    spies.calls.clear()
    spies.cache_keys.clear()
    Echo.generated = []
    again = _run(build, tmp_path / "cache")
    assert again.rc == 0 and f"cache: {LIMIT} hits, 0 misses" in again.out
    assert Echo.generated == [] and set(spies.cache_keys.values()) == {1} and len(spies.cache_keys) == LIMIT
    assert spies.calls["load_dataset"] == spies.calls["process_docs"] == 1


def test_metric_count_matches_the_task_yaml(build):
    from lalm_eval.tasks import TaskManager

    task = TaskManager().load_task("palm_recognition")
    assert len(task.metrics) == len(task.config.metric_list) >= 4
    assert [m.name for m in task.metrics][:3] == ["recognition_presence", "bleu", "token_f1"]
    copy = task.replaced(test_split="validation")
    assert copy.metrics is task.metrics and copy.eval_split == "validation"  # copies share what loaded


def test_parked_docs_are_mapped_again_without_reopening(build, tmp_path, monkeypatch):
    from lalm_eval.tasks import TaskManager

    cwd = os.getcwd()
    os.chdir(build)
    try:
        task = TaskManager().load_task("palm_recognition")
        opened = docs_stage.open_docs(task, tmp_path / "c", 3)
    finally:
        os.chdir(cwd)
    first = [dict(d) for d in opened.docs]
    monkeypatch.setattr(docs_stage, "load_dataset_fresh", lambda *a, **k: pytest.fail("dataset opened again"))
    opened.park()
    assert opened._docs is None and len(opened) == 3  # let go, its length kept
    assert [dict(d) for d in opened.docs] == first  # the same rows, mapped again from the files


def _task_yaml(folder: Path, extra: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "t.yaml"
    path.write_text(
        "task: t\ndataset_path: somewhere\ndoc_to_text: '{{ q }}'\nmetadata: {version: 1}\n"
        "metric_list: [{metric: exact_match, aggregation: mean, higher_is_better: true}]\n" + extra
    )
    return path


def test_filter_pipelines_resolved_at_load(tmp_path):
    from lalm_eval.evaluation.filters import FILTERS, Filter
    from lalm_eval.tasks import Task

    task = Task.from_yaml(
        _task_yaml(
            tmp_path / "a",
            "filter_list:\n  - name: answer\n    filter:\n"
            "      - {function: regex, regex_pattern: '<A>(.*?)</A>'}\n      - {function: strip}\n",
        )
    )
    (pipeline,) = task.filters
    counters: dict = {}
    assert pipeline.name == "answer" and pipeline.apply("x <A> Bob </A>", counters) == "Bob"
    assert pipeline.apply("no tags ", counters) == "no tags" and counters == {"filter_misses": 1}

    class Upper(Filter):  # a plug-in: registered, then named by a task
        def apply(self, text, counters):
            return text.upper()

    FILTERS.register("stages_upper", Upper)
    upper = Task.from_yaml(_task_yaml(tmp_path / "b", "filter_list: [{name: u, filter: [{function: stages_upper}]}]\n"))
    assert upper.filters[0].apply("bob", {}) == "BOB"
    with pytest.raises(ConfigError, match=r"t\.yaml: filter_list\[0\]\.filter\[0\]: unknown filter function 'stirp'"):
        Task.from_yaml(_task_yaml(tmp_path / "c", "filter_list: [{name: x, filter: [{function: stirp}]}]\n"))
    two = "filter_list: [{name: x, filter: [{function: strip}]}, {name: y, filter: [{function: strip}]}]\n"
    with pytest.raises(ConfigError, match="2 pipelines .*one filter pipeline per task"):
        Task.from_yaml(_task_yaml(tmp_path / "d", two))


def test_process_results_refused_and_validation_split_evaluated(tmp_path):
    from lalm_eval.tasks import Task

    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "utils.py").write_text("def score(doc, results):\n    return {'acc': 1.0}\n")
    with pytest.raises(ConfigError, match=r"t\.yaml: process_results: utils\.score is not run"):
        Task.from_yaml(_task_yaml(folder, "process_results: !function utils.score\n"))
    val = Task.from_yaml(_task_yaml(tmp_path / "v", "validation_split: dev\n"))
    assert val.eval_split == "dev"
    both = Task.from_yaml(_task_yaml(tmp_path / "w", "validation_split: dev\ntest_split: test\n"))
    assert both.eval_split == "test"


STAGES = ("imports", "task_loading", "dataset_open", "model_load", "scan", "generation", "scoring")


def test_results_json_carries_the_stage_timings(build, tmp_path, monkeypatch):
    _no_bertscore(monkeypatch)
    result = _run(build, tmp_path / "cache", "--output_path", tmp_path / "out")
    assert result.rc == 0, result.err[-2000:]
    (path,) = (tmp_path / "out").glob("**/results_*.json")
    timings = json.loads(path.read_text())["timings"]
    stages = timings["stages"]
    assert set(STAGES) <= set(stages), stages
    assert all(isinstance(v, float) and v >= 0 for v in stages.values())
    assert sum(stages.values()) <= timings["wall_s"] + 0.01  # each stage rounded to the millisecond
