"""Bad input to ``lalm-eval`` itself: its flags, the task YAML it loads, ``lalm-eval check`` and
``lalm-eval train``, and ``kill -9`` during a run and during training (issue 20).

Every error comes before a model is built (the counting adapter below is never constructed),
names the flag or the file (and line or field), and says how to fix it, in the one shape
``lalm-eval: error: <flag or file>: <what is wrong>; <how to fix>``.

The data: one tiny Parquet + card folder (3 test docs, 4 train docs of 1-s tones, the layout
``palm-bench build`` writes), the task YAML of each case beside it, and a tiny random-weight
Qwen2-Audio for ``train`` and the two ``kill -9`` cases; all built once for the module.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import datasets
import pytest

from lalm_eval.api import Adapter, Response
from lalm_eval.hub.card import front_matter, write_card
from lalm_eval.hub.parquet import export_dataset_dict
from lalm_eval.models import MODELS
from tests.bad_inputs.harness import Case, run_case, run_cli, run_killed
from tests.test_training import _split

CLI = "lalm-eval"
SHARED: dict = {}  # built once for the module (the `shared` fixture)


class Counting(Adapter):
    """Answers every request with ``answer``; counts how often it is built and asked (never, for bad input)."""

    name = "test_cli_inputs"
    built = 0
    asked = 0

    def __init__(self, answer: str = "Alice"):
        super().__init__()
        type(self).built += 1
        self.answer = answer

    def identity(self):
        return {"name": self.name, "answer": self.answer}

    def generate(self, requests, batch_size=1):
        type(self).asked += len(requests)
        self.n_generated += len(requests)
        return [Response(self.answer) for _ in requests]


def write_dataset(folder: Path, splits: dict[str, int], config: str = "main") -> Path:
    """A Parquet + card folder with one config of ``{split: n docs}`` (question, answer, 1-s audio)."""
    parts = {split: _split(n, 0) for split, n in splits.items()}
    files = export_dataset_dict({config: datasets.DatasetDict(parts)}, folder)
    write_card(folder, f"---\n{front_matter(files)}\n---\n")
    return folder


TASK = """task: tt
dataset_path: {ds}
dataset_name: main
test_split: test
training_split: train
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "{{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
generation_kwargs: {{max_new_tokens: 4}}
metric_list:
  - {{metric: exact_match, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1}}
"""

HOOKS = """def other(doc):
    return "x"


def broken(doc):
    return doc["no_such_field"]


def drop_all(dataset):
    return dataset.select([])
"""


@pytest.fixture(scope="module", autouse=True)
def shared(tmp_path_factory):
    from lalm_eval.models.tiny import make_tiny_model

    if Counting.name not in MODELS:
        MODELS.register(Counting.name, Counting)
    root = tmp_path_factory.mktemp("cli_inputs")
    SHARED["ds"] = write_dataset(root / "ds", {"train": 4, "test": 3})
    SHARED["cache"] = root / "cache"  # datasets prepared once for every case
    SHARED["tiny"] = make_tiny_model("qwen2_audio", root / "tiny")
    return SHARED


@pytest.fixture(autouse=True)
def fresh_counts():
    Counting.built = Counting.asked = 0


def task_folder(tmp: Path, *edits: tuple[str, str], extra: str = "", name: str = "tasks") -> Path:
    """The case's task folder: ``TASK`` over the shared dataset, each ``(old, new)`` edit applied,
    ``extra`` appended, and the hook file ``utils.py`` beside it."""
    text = TASK.format(ds=SHARED["ds"])
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    folder = tmp / name
    folder.mkdir(exist_ok=True)
    (folder / "t.yaml").write_text(text + extra, encoding="utf-8")
    (folder / "utils.py").write_text(HOOKS, encoding="utf-8")
    return folder


def run_argv(tmp: Path, *extra, folder: Path | None = None, tasks: str = "tt", cache: bool = False) -> list[str]:
    folder = folder or task_folder(tmp)
    argv = ["--model", Counting.name, "--tasks", tasks, "--include_path", str(folder)]
    argv += ["--cache_dir", str(tmp / "cache" if cache else SHARED["cache"])]
    return argv + ([] if cache else ["--no_cache"]) + [str(a) for a in extra]


def a_file(tmp: Path) -> Path:
    path = tmp / "a_file"
    path.write_text("not a folder\n")
    return path


def no_model(tmp, result) -> None:
    """The error came before any model was built, so no model call was made."""
    assert Counting.built == 0 and Counting.asked == 0, (Counting.built, Counting.asked)


def flag(*extra, says=(), exit=2, check=no_model, **kw) -> dict:
    return dict(make=lambda tmp: run_argv(tmp, *extra), says=says, exit=exit, check=check, **kw)


def yaml_case(*edits, extra="", says=()) -> dict:
    return dict(make=lambda tmp: run_argv(tmp, folder=task_folder(tmp, *edits, extra=extra)), says=says, check=no_model)


# -- cases whose input needs more than one flag ------------------------------------------------


def cached_then(batch_size: str):
    """Every answer in the response cache first (a good run), then the same run at ``batch_size``."""

    def make(tmp):
        folder = task_folder(tmp)
        assert run_cli(CLI, run_argv(tmp, folder=folder, cache=True)).rc == 0
        Counting.built = Counting.asked = 0
        return run_argv(tmp, "--batch_size", batch_size, folder=folder, cache=True)

    return make


def report_into_a_file(tmp):
    """A run's output folder (what is in it is read after the flags are checked) and a file as the output."""
    (tmp / "run").mkdir()
    return ["report", str(tmp / "run"), "--output_path", str(a_file(tmp))]


def check_argv(tmp, *extra):
    folder = task_folder(tmp)
    base = ["check", "--model", Counting.name, "--tasks", "tt", "--include_path", str(folder)]
    return base + ["--cache_dir", str(SHARED["cache"]), "--limit", "2"] + [str(a) for a in extra]


def train_argv(tmp, *extra, out: Path | None = None) -> list[str]:
    folder = task_folder(tmp)
    argv = ["train", "--model", "qwen2_audio", "--model_args", f"pretrained={SHARED['tiny']}", "--tasks", "tt"]
    argv += ["--include_path", str(folder), "--recipe", "lora_attn", "--output_dir", str(out or tmp / "trained")]
    return argv + ["--cache_dir", str(SHARED["cache"]), "--learning_rate", "1e-2"] + [str(a) for a in extra]


def train_case(*extra, says=()):
    return dict(make=lambda tmp: train_argv(tmp, "--max_steps", "2", *extra), says=says)


def train_over_old_checkpoints(tmp):
    out = tmp / "trained"
    (out / "checkpoints" / "checkpoint-3").mkdir(parents=True)
    (out / "checkpoints" / "checkpoint-3" / "trainer_state.json").write_text('{"global_step": 3}')
    return train_argv(tmp, "--max_steps", "2", out=out)


def duplicate_task(tmp):
    folder = task_folder(tmp)
    (folder / "again.yaml").write_text((folder / "t.yaml").read_text())
    return run_argv(tmp, folder=folder)


def group_with_unknown_member(tmp):
    folder = task_folder(tmp)
    (folder / "g.yaml").write_text("group: gg\ntask: [tt, no_such_task]\n")
    return run_argv(tmp, folder=folder, tasks="gg")


CASES = [
    # -- numbers and names of `lalm-eval` (issue: --limit 0 / -1 and --tasks "" evaluated 0 docs, exit 0)
    Case("cli-limit-zero", CLI, **flag("--limit", "0", says=("--limit", "got 0", "omit --limit"))),
    Case("cli-limit-negative", CLI, **flag("--limit", "-1", says=("--limit", "got -1"))),
    Case("cli-limit-not-a-number", CLI, **flag("--limit", "ten", says=("--limit", "'ten' is not a whole number"))),
    Case("cli-tasks-empty", CLI, make=lambda tmp: run_argv(tmp, tasks=""), says=("--tasks", "no task names")),
    Case("cli-tasks-comma", CLI, make=lambda tmp: run_argv(tmp, tasks=","), says=("--tasks", "no task names")),
    Case("cli-tasks-blank", CLI, make=lambda tmp: run_argv(tmp, tasks=" "), says=("--tasks", "lalm-eval tasks")),
    Case(
        "cli-tasks-unknown",
        CLI,
        make=lambda tmp: run_argv(tmp, tasks="ttt"),
        says=("--tasks", "unknown task, group or tag 'ttt'", "did you mean tt"),
        check=no_model,
    ),
    Case("cli-batch-size-zero", CLI, **flag("--batch_size", "0", says=("--batch_size", "got 0"))),
    Case("cli-batch-size-negative", CLI, **flag("--batch_size", "-3", says=("--batch_size", "got -3"))),
    Case("cli-batch-size-text", CLI, **flag("--batch_size", "big", says=("--batch_size", "'big'", "or auto"))),
    Case("cli-batch-size-auto-n", CLI, **flag("--batch_size", "auto:4", says=("--batch_size", "auto:n"))),
    # issue: --batch_size 0 was accepted when every answer was cached
    Case("cli-batch-size-zero-all-cached", CLI, make=cached_then("0"), says=("--batch_size", "got 0"), check=no_model),
    Case("cli-stream-chunk-negative", CLI, **flag("--stream_chunk", "-1", says=("--stream_chunk", "got -1"))),
    Case("cli-seed-negative", CLI, **flag("--seed", "-1", says=("--seed", "from 0 to 4294967295"))),
    Case("cli-seed-text", CLI, **flag("--seed", "abc", says=("--seed", "'abc' is not a whole number"))),
    Case("cli-max-cost-negative", CLI, **flag("--max_cost", "-1", says=("--max_cost", ">= 0"))),
    Case("cli-max-cost-nan", CLI, **flag("--max_cost", "nan", says=("--max_cost", "finite", "got nan"))),
    Case(
        "cli-failure-share-above-one", CLI, **flag("--max_failure_share", "2", says=("--max_failure_share", "0 to 1"))
    ),
    Case("cli-prices-missing", CLI, **flag("--prices", "no_such_prices.yaml", says=("--prices", "no such file"))),
    Case("cli-device-unknown", CLI, **flag("--device", "gpu", says=("--device", "'gpu' is not a device"))),
    # generation kwargs: as lm-eval reads them (k=v,k=v), every key and value checked before a model call
    Case("cli-gen-kwargs-no-equals", CLI, **flag("--gen_kwargs", "max_new_tokens", says=("--gen_kwargs", "key=value"))),
    Case("cli-gen-kwargs-negative", CLI, **flag("--gen_kwargs", "max_new_tokens=-5", says=("--gen_kwargs", "got -5"))),
    Case(
        "cli-gen-kwargs-unknown",
        CLI,
        **flag("--gen_kwargs", "max_new_token=8", says=("did you mean 'max_new_tokens'",)),
    ),
    Case(
        "cli-gen-kwargs-not-bool", CLI, **flag("--gen_kwargs", "do_sample=maybe", says=("do_sample", "true or false"))
    ),
    # model args: malformed, given twice (the last silently won), misspelt, or a model no registry holds
    Case("cli-model-args-no-equals", CLI, **flag("--model_args", "answer", says=("--model_args", "not key=value"))),
    Case(
        "cli-model-args-twice", CLI, **flag("--model_args", "answer=A,answer=B", says=("--model_args", "given twice"))
    ),
    Case("cli-model-args-misspelt", CLI, **flag("--model_args", "anwser=A", says=("did you mean 'answer'",))),
    Case(
        "cli-model-unknown",
        CLI,
        make=lambda tmp: [a if a != Counting.name else "qwen2_audo" for a in run_argv(tmp)],
        says=("--model", "did you mean 'qwen2_audio'"),
    ),
    # output folders: checked before any model call (issue: failed AFTER the evaluation)
    Case(
        "cli-output-path-is-a-file",
        CLI,
        make=lambda tmp: run_argv(tmp, "--output_path", a_file(tmp)),
        says=("--output_path {tmp}/a_file", "is a file"),
        check=no_model,
    ),
    Case(
        "cli-output-path-under-a-file",
        CLI,
        make=lambda tmp: run_argv(tmp, "--output_path", a_file(tmp) / "out"),
        says=("--output_path", "which is a file"),
        check=no_model,
    ),
    Case(
        "cli-dry-run-output-path-is-a-file",
        CLI,
        make=lambda tmp: run_argv(tmp, "--dry_run", "--output_path", a_file(tmp)),
        says=("--output_path", "is a file"),
        check=no_model,
    ),
    Case("cli-report-output-path-is-a-file", CLI, make=report_into_a_file, says=("--output_path", "is a file")),
    Case(
        "cli-report-folder-missing",
        CLI,
        make=lambda tmp: ["report", str(tmp / "no_run")],
        says=("{tmp}/no_run", "no such folder"),
    ),
    Case(
        "cli-report-folder-without-results",
        CLI,
        make=lambda tmp: ["report", str(tmp)],
        says=("{tmp}: no results_*.json here", "--output_path"),
    ),
    Case(
        "cli-make-tiny-model-into-a-file",
        CLI,
        make=lambda tmp: ["make-tiny-model", "qwen2_audio", str(a_file(tmp))],
        says=("is a file",),
    ),
    Case(
        "cli-include-path-missing",
        CLI,
        make=lambda tmp: run_argv(tmp, folder=tmp / "no_tasks_here"),
        says=("--include_path {tmp}/no_tasks_here", "no such file or folder"),
    ),
    # -- task YAML (through --include_path): every mistake named at load, before the model
    Case("task-unknown-key", CLI, **yaml_case(extra="shuffle: true\n", says=("t.yaml", "unknown task key 'shuffle'"))),
    Case(
        "task-dataset-path-missing-key",
        CLI,
        **yaml_case(("dataset_path: ", "# dataset_path: "), says=("t.yaml: dataset_path: missing",)),
    ),
    Case(
        "task-function-missing",
        CLI,
        **yaml_case(
            ('doc_to_text: "{{ question }}"', "doc_to_text: !function utils.nothere"),
            says=("t.yaml", "has no function 'nothere'", "did you mean 'other'"),
        ),
    ),
    Case(
        "task-hook-raises",
        CLI,
        **yaml_case(
            ('doc_to_text: "{{ question }}"', "doc_to_text: !function utils.broken"),
            says=("t.yaml: task 'tt': doc_to_text (!function utils.broken) failed", "keyerror"),
        ),
    ),
    Case(
        "task-audio-is-text",
        CLI,
        **yaml_case(
            ('doc_to_audio: "{{ audio }}"', 'doc_to_audio: "{{ question }}"'),
            says=("t.yaml: task 'tt': doc_to_audio gives a str", "{{ audio }}"),
        ),
    ),
    Case(
        "task-metric-unknown",
        CLI,
        **yaml_case(("metric: exact_match", "metric: exact_matc"), says=("metric_list[0]", "'exact_match'")),
    ),
    Case(
        "task-aggregation-unknown",
        CLI,
        **yaml_case(("aggregation: mean", "aggregation: meen"), says=("metric_list[0]", "unknown aggregation 'meen'")),
    ),
    Case(
        "task-metadata-missing",
        CLI,
        **yaml_case(("metadata: {version: 1}", ""), says=("t.yaml: metadata", "version")),
    ),
    Case(
        "task-group-lists-unknown-task",
        CLI,
        make=group_with_unknown_member,
        says=("g.yaml: group 'gg'", "'no_such_task'", "lalm-eval tasks"),
        check=no_model,
    ),
    Case("task-duplicate-name", CLI, make=duplicate_task, says=("duplicate name 'tt'", "rename one")),
    Case(
        "task-yaml-syntax-error",
        CLI,
        **yaml_case(
            ("metadata: {version: 1}", "metadata: {version: 1\nfoo: [}"), says=("t.yaml:13", "invalid task yaml")
        ),
    ),
    Case(
        "task-template-field-missing",
        CLI,
        **yaml_case(
            ("{{ question }}", "{{ questoin }}"),
            says=("t.yaml: task 'tt': doc_to_text", "'questoin' is undefined", "{{ questoin }}", "question"),
        ),
    ),
    Case(
        "task-generation-kwargs-not-a-mapping",
        CLI,
        **yaml_case(
            ("{max_new_tokens: 4}", "[max_new_tokens]"), says=("t.yaml: generation_kwargs", "must be a mapping")
        ),
    ),
    Case(
        "task-generation-kwargs-wrong-type",
        CLI,
        **yaml_case(
            ("{max_new_tokens: 4}", "{max_new_tokens: many}"),
            says=("t.yaml: generation_kwargs: max_new_tokens", "whole number"),
        ),
    ),
    Case(
        "task-filter-unknown",
        CLI,
        **yaml_case(
            extra="filter_list:\n  - name: x\n    filter:\n      - {function: lowercase}\n",
            says=("t.yaml: filter_list[0].filter[0]", "unknown filter function 'lowercase'"),
        ),
    ),
    Case(
        "task-filter-regex-broken",
        CLI,
        **yaml_case(
            extra="filter_list:\n  - name: x\n    filter:\n      - {function: regex, regex_pattern: '(unclosed'}\n",
            says=("t.yaml: filter_list[0].filter[0]", "does not compile"),
        ),
    ),
    # the dataset a task names: opened (and its first doc rendered) before the model is built
    Case(
        "task-split-missing",
        CLI,
        **yaml_case(("test_split: test", "test_split: validation"), says=("t.yaml: task 'tt'", "validation", "test")),
    ),
    Case(
        "task-dataset-path-missing",
        CLI,
        **yaml_case(
            ("dataset_path: ", "dataset_path: /no/such/folder  # "), says=("t.yaml: task 'tt'", "/no/such/folder")
        ),
    ),
    Case(
        "task-config-missing",
        CLI,
        **yaml_case(("dataset_name: main", "dataset_name: reasoning"), says=("t.yaml: task 'tt'", "'reasoning'")),
    ),
    Case(
        "task-no-docs-at-all",
        CLI,
        **yaml_case(extra="process_docs: !function utils.drop_all\n", says=("no docs to evaluate in tt",)),
    ),
    # -- lalm-eval check (issue: one batch size and no second backend compared nothing, then passed)
    Case(
        "check-one-batch-size-no-model-b",
        CLI,
        make=lambda tmp: check_argv(tmp, "--batch_sizes", "1"),
        says=("--batch_sizes 1", "nothing to compare", "--model_b"),
        check=no_model,
    ),
    Case(
        "check-batch-size-zero",
        CLI,
        make=lambda tmp: check_argv(tmp, "--batch_sizes", "1,0"),
        says=("--batch_sizes", "'1,0'"),
        check=no_model,
    ),
    Case(
        "check-batch-size-twice",
        CLI,
        make=lambda tmp: check_argv(tmp, "--batch_sizes", "2,2"),
        says=("--batch_sizes", "2 given twice"),
        check=no_model,
    ),
    Case(
        "check-limit-zero",
        CLI,
        make=lambda tmp: check_argv(tmp, "--limit", "0"),
        says=("--limit", "got 0"),
        check=no_model,
    ),
    Case(
        "check-min-identical-above-one",
        CLI,
        make=lambda tmp: check_argv(tmp, "--min_identical", "1.5"),
        says=("--min_identical", "0 to 1"),
        check=no_model,
    ),
    Case(
        "check-output-path-is-a-file",
        CLI,
        make=lambda tmp: check_argv(tmp, "--output_path", a_file(tmp)),
        says=("--output_path", "is a file"),
        check=no_model,
    ),
    # -- lalm-eval train: every number checked before the examples or the model are loaded
    Case("train-max-steps-zero", CLI, **train_case("--max_steps", "0", says=("--max_steps", "0 steps trains nothing"))),
    Case("train-learning-rate-negative", CLI, **train_case("--learning_rate", "-1", says=("--learning_rate", "> 0"))),
    Case("train-epochs-zero", CLI, **train_case("--epochs", "0", says=("--epochs", "> 0"))),
    Case("train-batch-size-zero", CLI, **train_case("--batch_size", "0", says=("--batch_size", "got 0"))),
    Case("train-limit-zero", CLI, **train_case("--limit", "0", says=("--limit", "got 0"))),
    Case("train-freeze-unknown", CLI, **train_case("--freeze", "vision_tower", says=("--freeze", "'vision_tower'"))),
    Case(
        "train-output-dir-is-a-file",
        CLI,
        make=lambda tmp: train_argv(tmp, "--max_steps", "2", out=a_file(tmp)),
        says=("--output_dir", "is a file"),
    ),
    Case(
        "train-output-dir-under-a-file",
        CLI,
        make=lambda tmp: train_argv(tmp, "--max_steps", "2", out=a_file(tmp) / "out"),
        says=("--output_dir", "which is a file"),
    ),
    Case(
        "train-over-old-checkpoints",
        CLI,
        make=train_over_old_checkpoints,
        says=("--output_dir", "checkpoint-3", "--resume_from_checkpoint"),
    ),
    Case(
        "train-resume-without-checkpoints",
        CLI,
        make=lambda tmp: train_argv(tmp, "--max_steps", "2", "--resume_from_checkpoint"),
        says=("--resume_from_checkpoint", "no complete checkpoint"),
    ),
]

EXTRA_CASE_IDS = ["task-palm-build-without-config", "cli-kill9-run-resumes", "train-kill9-resumes"]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def test_palm_build_without_config(tmp_path):
    """``--tasks palm_reasoning`` run beside a ``palm-bench/`` build with no ``reasoning`` config
    (a folder-corpus build): the task, its YAML and the config named, before a model is built
    (issue: ``BuilderConfig 'reasoning' not found``)."""
    write_dataset(tmp_path / "palm-bench", {"test": 2}, config="recognition")
    argv = ["--model", Counting.name, "--tasks", "palm_reasoning", "--cache_dir", str(SHARED["cache"]), "--no_cache"]
    result = run_cli(CLI, argv, cwd=tmp_path)
    assert result.rc == 2, result.err[-2000:]
    from tests.bad_inputs.harness import assert_error_shape

    assert_error_shape(CLI, result)
    line = result.error_line
    assert "palm_reasoning.yaml: task 'palm_reasoning'" in line and "'reasoning'" in line, line
    assert "recognition" in line, line  # the configs the build has
    assert Counting.built == 0


# -- kill -9 ----------------------------------------------------------------------------------


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1) as con:
            return con.execute("SELECT count(*) FROM responses").fetchone()[0]
    except sqlite3.Error:
        return 0


def _answers(folder: Path) -> list:
    (path,) = folder.glob("samples_tt_*.jsonl")
    return [(row["doc_id"], row["response"]) for row in map(json.loads, path.read_text().splitlines())]


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """The two ``kill -9`` cases' first commands, started together (their interpreter start-up,
    most of their cost, overlaps on two cores) and each killed at its own point: a run once an
    answer is in the response cache, a training once its first checkpoint is complete. The run
    uninterrupted is made here meanwhile, in this process."""
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path_factory.mktemp("killed")
    n = 5  # enough that the kill lands mid-run on a fast machine too (a doc: one 30-s mel window)
    data = write_dataset(root / "ds5", {"test": n})
    folder = task_folder(root, (f"dataset_path: {SHARED['ds']}", f"dataset_path: {data}"), name="run_tasks")
    run = ["--model", "qwen2_audio", "--model_args", f"pretrained={SHARED['tiny']}", "--tasks", "tt"]
    run += ["--include_path", str(folder), "--stream_chunk", "1", "--log_samples"]
    run += ["--cache_dir", str(root / "cache"), "--output_path", str(root / "out")]
    db = root / "cache" / "responses.sqlite"
    out = root / "trained"
    train = train_argv(root, "--max_steps", "4", "--save_steps", "1", "--limit", "1", out=out)
    first = out / "checkpoints" / "checkpoint-1" / "trainer_state.json"
    elsewhere = {str(root / "cache"): str(root / "cache2"), str(root / "out"): str(root / "whole")}
    with ThreadPoolExecutor(2) as pool:
        kills = [
            pool.submit(run_killed, CLI, run, lambda: _rows(db) >= 1),
            pool.submit(run_killed, CLI, train, first.is_file),
        ]
        # meanwhile, here: the same run uninterrupted, on a cache and output folder of its own
        whole = run_cli(CLI, [elsewhere.get(a, a) for a in run])
        for kill in kills:
            kill.result()
    assert whole.rc == 0, whole.err[-2000:]
    return {"root": root, "n": n, "run": run, "done": _rows(db), "train": train, "out": out}


def test_kill9_during_a_run_resumes(killed):
    """``kill -9`` once some answers are in the response cache; the same command again answers
    those from the cache, generates only the rest (hits + misses = docs) and ends with the results
    of an uninterrupted run."""
    root, n, argv, done = killed["root"], killed["n"], killed["run"], killed["done"]
    out = root / "out"
    assert 1 <= done < n and not list(out.glob("results_*.json"))  # killed mid-run, nothing claimed finished
    again = run_cli(CLI, argv)
    assert again.rc == 0, again.err[-2000:]
    hits, misses, calls = map(
        int, re.search(r"cache: (\d+) hits, (\d+) misses; model calls: (\d+)", again.out).groups()
    )
    assert (hits, misses, calls) == (done, n - done, n - done)  # nothing computed twice, nothing lost
    assert _answers(out) == _answers(root / "whole")
    results = [json.loads(next(f.glob("results_*.json")).read_text())["results"] for f in (out, root / "whole")]
    assert results[0] == results[1]


def test_kill9_during_training_resumes(killed):
    """``kill -9`` after the first checkpoint: ``train_info.json`` does not claim a finished
    training; ``--resume_from_checkpoint`` continues from the last complete checkpoint, and one
    left half-written (a kill during its save) is set aside, never resumed from."""
    out, argv = killed["out"], killed["train"]
    info = json.loads((out / "train_info.json").read_text())
    assert info["status"] == "incomplete" and "resume_from_checkpoint" in info["note"]
    half = out / "checkpoints" / "checkpoint-99"  # what a kill during a save leaves: no trainer_state.json
    half.mkdir()
    (half / "adapter_model.safetensors").write_bytes(b"")
    again = run_cli(CLI, [*argv, "--resume_from_checkpoint"])
    assert again.rc == 0, again.err[-2000:]
    info = json.loads((out / "train_info.json").read_text())
    assert info["status"] == "finished" and info["global_step"] == 4 and info["resumed_from_step"] >= 1
    # ours, and any the kill caught mid-save (--save_steps 1: a save at every step)
    set_aside = info["incomplete_checkpoints_set_aside"]
    assert "incomplete-checkpoint-99" in set_aside
    assert all(re.fullmatch(r"incomplete-checkpoint-\d+", name) for name in set_aside), set_aside
    assert (out / "checkpoints" / "incomplete-checkpoint-99").is_dir() and (out / "adapter_model.safetensors").is_file()
