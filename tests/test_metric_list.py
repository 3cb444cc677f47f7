"""metric_list checked when a task loads and honoured when it scores; the CLI's exit status.

- ``aggregation`` decides the task value: mean, median, corpus (corpus BLEU / WER from summed
  statistics, lm-eval's ``bleu``), or a ``!function``.
- An unknown metric, option or aggregation is a ConfigError naming the task file, raised by the
  task loader, so ``lalm-eval`` fails before it builds the model.
- ``lalm-eval`` exits non-zero when every doc of a task failed (``--max_failure_share`` sets
  another threshold).
"""

import numpy as np
import pytest
import sacrebleu

from lalm_eval import cli
from lalm_eval.api import Adapter, Response
from lalm_eval.errors import ConfigError, UnknownNameError
from lalm_eval.metrics.text import token_f1
from lalm_eval.models import MODELS
from lalm_eval.tasks import TaskManager
from tests.evaluation_helpers import evaluate_names
from tests.test_evaluator import Scripted, dataset_dir  # noqa: F401 - fixture reused

# docs 0, 2, 3, 5 are scored (doc 1 fails in Scripted, doc 4's audio is undecodable); targets:
TARGETS = {0: "Bob", 2: "Bob", 3: "Alice", 5: "Alice"}
ANSWERS = {0: "Bob", 2: "Bob said more words", 3: "nothing", 5: "Alice"}


class Varied(Scripted):
    """Scripted's failures, but answers of varied quality (so mean and median differ)."""

    def generate(self, requests, batch_size=1):
        out = super().generate(requests, batch_size)
        return [Response(ANSWERS[q.doc_id]) if r.text is not None else r for q, r in zip(requests, out)]


def write_task(folder, dataset, metrics: str, name: str = "agg_task"):
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(f"""
task: {name}
dataset_path: {dataset}
dataset_name: main
test_split: test
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "{{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
generation_kwargs: {{max_new_tokens: 4}}
metric_list:
{metrics}
metadata: {{version: 1}}
""")
    return path


def test_aggregation_is_honoured(tmp_path, dataset_dir):  # noqa: F811
    folder = tmp_path / "tasks"
    write_task(
        folder,
        dataset_dir,
        """
  - {metric: token_f1, aggregation: median, higher_is_better: true}
  - {metric: exact_match, aggregation: mean, higher_is_better: true}
  - {metric: bleu, aggregation: bleu, higher_is_better: true}
""",
    )
    run = evaluate_names(Varied(), ["agg_task"], include_path=[folder], cache_dir=tmp_path / "c", use_cache=False)
    r = run.results["agg_task"]
    f1 = [1.0, 0.4, 0.0, 1.0]  # "Bob said more words" vs "Bob": P 1/4, R 1 → 0.4
    assert [row["metrics"]["token_f1"] for row in run.results["agg_task"].rows if "metrics" in row] == pytest.approx(f1)
    assert r.summary["token_f1"] == pytest.approx(0.7)  # the median; the mean would be 0.6
    assert r.summary["token_f1_stderr"] is None  # a standard error of the mean only for mean
    low, high = r.summary["token_f1_ci95"]
    assert 0.0 <= low <= 0.7 <= high <= 1.0
    assert r.metrics["token_f1"]["aggregation"] == "median"
    assert r.summary["exact_match"] == pytest.approx(0.5) and r.summary["exact_match_stderr"] > 0
    # lm-eval's bleu aggregation: corpus BLEU of the summed statistics, not the mean of sentence BLEU
    preds, refs = [ANSWERS[k] for k in TARGETS], list(TARGETS.values())
    corpus = sacrebleu.corpus_bleu(preds, [refs], tokenize="13a").score  # all English tokens: one tokenizer
    sentence_mean = np.mean([row["metrics"]["bleu"] for row in run.results["agg_task"].rows if "metrics" in row])
    assert r.summary["bleu"] == pytest.approx(corpus) and abs(corpus - sentence_mean) > 1
    assert r.metrics["bleu"]["corpus_bleu"] == pytest.approx(corpus)


def test_function_aggregation_gets_the_scored_values(tmp_path, dataset_dir):  # noqa: F811
    folder = tmp_path / "tasks"
    (folder).mkdir()
    (folder / "utils.py").write_text("def worst(values):\n    return min(values)\n")
    write_task(
        folder,
        dataset_dir,
        """
  - {metric: token_f1, aggregation: !function utils.worst, higher_is_better: true}
""",
    )
    run = evaluate_names(Varied(), ["agg_task"], include_path=[folder], cache_dir=tmp_path / "c", use_cache=False)
    assert run.results["agg_task"].summary["token_f1"] == 0.0
    assert token_f1(ANSWERS[3], TARGETS[3]) == 0.0


@pytest.mark.parametrize(
    "entry, message",
    [
        (
            "{metric: token_f1, aggregation: totally_bogus, higher_is_better: true}",
            r"metric_list\[0\]: metric 'token_f1': unknown aggregation 'totally_bogus'; accepted: mean, median",
        ),
        (
            "{metric: tokn_f1, aggregation: mean, higher_is_better: true}",
            r"metric_list\[0\]: unknown metric 'tokn_f1'. Did you mean 'token_f1'\?.*Available: .*exact_match",
        ),
        (
            "{metric: bleu, tokenize: zh, aggregation: mean, higher_is_better: true}",
            r"metric_list\[0\]: metric 'bleu': unknown option\(s\) \['tokenize'\]",
        ),
        (
            "{metric: exact_match, aggregation: corpus, higher_is_better: true}",
            r"'exact_match' has no corpus-level value",
        ),
        (
            "{metric: llm_judge, judge: palm_captoning, aggregation: mean, higher_is_better: true}",
            r"unknown judge 'palm_captoning'",
        ),
    ],
)
def test_bad_metric_list_fails_when_the_task_loads(tmp_path, dataset_dir, entry, message):  # noqa: F811
    path = write_task(tmp_path / "tasks", dataset_dir, f"  - {entry}")
    with pytest.raises(ConfigError, match=message) as e:
        TaskManager(include_paths=[tmp_path / "tasks"]).load_task("agg_task")
    assert str(e.value).startswith(f"{path.resolve()}: ")  # names the task file


class AllFail(Adapter):
    """Fails every request, as a model whose server is down would."""

    name = "test_all_fail"
    built = 0

    def __init__(self, fail: str = "all"):
        super().__init__()
        type(self).built += 1
        self.fail = fail

    def identity(self):
        return {"name": self.name}

    def generate(self, requests, batch_size=1):
        self.n_generated += len(requests)
        return [
            Response.failed("error", "ConnectionError('server down')")
            if self.fail == "all" or q.doc_id % 2
            else Response(TARGETS.get(q.doc_id, "Bob"))
            for q in requests
        ]


@pytest.fixture
def all_fail():
    if AllFail.name not in MODELS:
        MODELS.register(AllFail.name, AllFail)
    AllFail.built = 0
    return AllFail


def _argv(tmp_path, folder, *extra):
    return [
        "--model",
        "test_all_fail",
        "--tasks",
        "agg_task",
        "--include_path",
        str(folder),
        "--cache_dir",
        str(tmp_path / "c"),
        "--no_cache",
        *extra,
    ]


def test_cli_fails_at_load_before_building_the_model(tmp_path, dataset_dir, all_fail, capsys):  # noqa: F811
    folder = tmp_path / "tasks"
    write_task(folder, dataset_dir, "  - {metric: token_f1, aggregation: totally_bogus, higher_is_better: true}")
    assert cli.main(_argv(tmp_path, folder)) == 2
    assert all_fail.built == 0  # no adapter was constructed, so nothing was generated
    err = capsys.readouterr().err
    assert "agg_task.yaml: metric_list[0]" in err and "totally_bogus" in err


def test_cli_exits_non_zero_when_every_request_failed(tmp_path, dataset_dir, all_fail, capsys):  # noqa: F811
    folder = tmp_path / "tasks"
    write_task(folder, dataset_dir, "  - {metric: token_f1, aggregation: mean, higher_is_better: true}")
    out = tmp_path / "out"
    assert cli.main(_argv(tmp_path, folder, "--output_path", str(out))) == 4
    err = capsys.readouterr().err
    assert "agg_task: 6/6 docs failed" in err and "error 5" in err and "audio_decode 1" in err
    assert list(out.glob("results_*.json"))  # the results are written all the same
    # docs 1, 3, 5 fail in the model and doc 4 is undecodable: 4/6; the default passes, a threshold not
    assert cli.main(_argv(tmp_path, folder, "--model_args", "fail=odd")) == 0
    assert cli.main(_argv(tmp_path, folder, "--model_args", "fail=odd", "--max_failure_share", "0.7")) == 0
    assert cli.main(_argv(tmp_path, folder, "--model_args", "fail=odd", "--max_failure_share", "0.5")) == 4
    assert "agg_task: 4/6 docs failed (audio_decode 1, error 3)" in capsys.readouterr().err
    assert cli.main(_argv(tmp_path, folder, "--max_failure_share", "2")) == 2  # a share is 0-1
    assert "--max_failure_share: must be a finite number from 0 to 1, got 2" in capsys.readouterr().err


def test_cli_shows_bugs_instead_of_hiding_them(monkeypatch, tmp_path):
    def buggy(args, *rest):
        raise KeyError("a bug, not a user error")

    monkeypatch.setattr(cli, "run_eval", buggy)
    with pytest.raises(KeyError, match="a bug"):
        cli.main(["--model", "x", "--tasks", "y"])


def test_registry_misses_are_config_errors_listing_names():
    with pytest.raises(UnknownNameError, match="unknown model 'qwen2_audo'. Did you mean 'qwen2_audio'") as e:
        MODELS.get("qwen2_audo")
    assert isinstance(e.value, ConfigError) and "hf-audio" in str(e.value)
    assert not str(e.value).startswith("'")  # not KeyError's quoted repr
    with pytest.raises(ConfigError, match="already registered"):
        MODELS.register("qwen2_audio", AllFail)


def test_one_metric_registry_whatever_is_imported_first():
    import subprocess
    import sys

    code = (
        "import lalm_eval.metrics.text as text; from lalm_eval.metrics.scoring import METRICS; "
        "print(hasattr(text, 'METRICS'), ','.join(METRICS.names()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "False"  # text.py holds the functions only
    assert set(out[1].split(",")) >= {
        "bertscore",
        "bleu",
        "cer",
        "exact_match",
        "llm_judge",
        "mcq_accuracy",
        "option_accuracy",
        "recognition_presence",
        "token_f1",
        "wer",
    }
