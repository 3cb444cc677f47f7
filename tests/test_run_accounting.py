"""What adapters report beside the text reaches the samples, results and report; dry runs send
nothing; ``lalm-eval check`` finds changed answers. Uses test_evaluator's small dataset and tasks."""

import glob
import json
import subprocess
import sys

import pytest

from lalm_eval.api import Adapter, Response
from lalm_eval.cli import main
from lalm_eval.report.assemble import markdown_report, write_outputs
from lalm_eval.report.results import load_results
from tests.evaluation_helpers import evaluate_names, plan_names
from tests.test_evaluator import dataset_dir, task_dir  # noqa: F401 - fixtures


class Metered(Adapter):
    """An API-like adapter: usage and model ids per answer; the 3.5 s clip is refused, the 2.5 s
    clip answered by a rerouted model; every clip over 2 s is 'truncated' to 2 s."""

    name = "metered"

    def __init__(self):
        super().__init__()
        self.sent = []
        self.estimated = None

    def identity(self):
        return {"name": self.name}

    def estimate(self, requests):
        self.estimated = [(r.task, r.doc_id) for r in requests]
        return {
            "requests": len(requests),
            "est_audio_tokens": 10 * len(requests),
            "est_text_tokens": 5,
            "max_completion_tokens": 4 * len(requests),
            "est_cost_usd": 0.01 * len(requests),
        }

    def generate(self, requests, batch_size=1):
        out = []
        for r in requests:
            self.sent.append((r.task, r.doc_id))
            s = r.audio_seconds
            meta = {"audio_s": s, "seen_s": min(s, 2.0), "truncated": s > 2.0}
            if abs(s - 3.5) < 0.01:
                out.append(Response.failed("refusal", "the provider refused", **meta))
                continue
            model = "gpt-x-2" if abs(s - 2.5) < 0.01 else "gpt-x-1"
            out.append(
                Response(
                    "Alice" if s > 2 else "Bob",
                    meta={
                        **meta,
                        "model": model,
                        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
                        "cost_usd": 0.5,
                    },
                )
            )
        return out


def test_usage_model_ids_failures_and_audio_heard_reach_results_and_report(task_dir, tmp_path):  # noqa: F811
    run = evaluate_names(Metered(), ["who_plain"], include_path=[task_dir], cache_dir=tmp_path / "c")
    info = run.results["who_plain"].sample_info
    # 6 docs: doc 4 undecodable, doc 5 (3.5 s) refused; docs 0-3 answered (1.0, 1.5, 2.0, 2.5 s)
    assert info["failures"] == {"audio_decode": 1, "refusal": 1}
    assert info["truncated"] == 2  # 2.5 s and 3.5 s (the refused one was still measured)
    assert info["audio_s"] == pytest.approx(1.0 + 1.5 + 2.0 + 2.5 + 3.5)
    assert info["seen_s"] == pytest.approx(1.0 + 1.5 + 2.0 + 2.0 + 2.0)
    assert info["usage"] == {"prompt_tokens": 40, "completion_tokens": 8} and info["cost_usd"] == 2.0
    assert info["model_ids"] == ["gpt-x-1", "gpt-x-2"]
    rows = {r["doc_id"]: r for r in run.results["who_plain"].rows}
    assert rows[5]["failure"] == "refusal" and rows[5]["response"] is None and "metrics" not in rows[5]
    assert rows[3]["model"] == "gpt-x-2" and rows[3]["truncated"] is True and rows[3]["seen_s"] == 2.0
    assert run.results["who_plain"].n["scored"] == 4
    report = markdown_report(run, "metered")
    assert "### Audio heard" in report and "| who_plain | 5 | 2 | 10.5 | 8.5 | 81.0 |" in report
    assert "### Failures by kind" in report and "| who_plain | 1 | 1 |" in report
    assert "2 different model ids: gpt-x-1, gpt-x-2" in report
    files = write_outputs(run, {"model": "metered"}, tmp_path / "out", log_samples=True)
    results = load_results(files["results"])
    assert results["sample_info"]["who_plain"]["failures"]["refusal"] == 1
    assert results["usage"]["usage"] == {"prompt_tokens": 40, "completion_tokens": 8}
    assert results["usage"]["model_ids"] == ["gpt-x-1", "gpt-x-2"]
    assert {e["failure"] for e in results["errors"]["who_plain"]} == {"refusal", "audio_decode"}
    assert results["model_identity"] == {"name": "metered"}  # what the adapter is reaches the results

    # a cached rerun: the metadata comes back from the cache; its usage is not billed again
    again = Metered()
    rerun = evaluate_names(again, ["who_plain"], include_path=[task_dir], cache_dir=tmp_path / "c")
    assert again.sent == [("who_plain", 5)]  # only the refused one is asked again
    info2 = rerun.results["who_plain"].sample_info
    assert "usage" not in info2 and info2["usage_cached"] == {"prompt_tokens": 40, "completion_tokens": 8}
    assert info2["model_ids"] == ["gpt-x-1", "gpt-x-2"] and info2["truncated"] == 2


def test_dry_run_plans_without_sending_and_discounts_cache_hits(task_dir, tmp_path):  # noqa: F811
    adapter = Metered()
    plan = plan_names(adapter, ["who"], include_path=[task_dir], cache_dir=tmp_path / "c")
    assert adapter.sent == [] and adapter.n_generated == 0
    plain = plan["tasks"]["who_plain"]
    assert plain == {
        "requests": 5,
        "cached": 0,
        "unreadable_docs": 1,
        "audio_s": pytest.approx(10.5),
        "estimate": plain["estimate"],
    } and plain["estimate"]["est_cost_usd"] == pytest.approx(0.05)
    assert plan["total"]["requests"] == 10 and plan["total"]["estimate"]["requests"] == 10
    evaluate_names(Metered(), ["who_plain"], include_path=[task_dir], cache_dir=tmp_path / "c")
    plan = plan_names(adapter, ["who"], include_path=[task_dir], cache_dir=tmp_path / "c")
    assert plan["tasks"]["who_plain"]["cached"] == 4 and plan["tasks"]["who_cot"]["cached"] == 0
    assert plan["total"]["estimate"]["requests"] == 6  # 1 refused plain doc + 5 cot docs
    assert ("who_plain", 0) not in adapter.estimated and ("who_plain", 5) in adapter.estimated


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    for arch in ("qwen2_audio", "qwen2_5_omni"):
        subprocess.run(
            [sys.executable, "-m", "lalm_eval.cli", "make-tiny-model", arch, str(root / arch)],
            check=True,
            capture_output=True,
        )
    return root


def test_dry_run_cli_and_max_cost_needs_an_api_adapter(task_dir, tiny_models, tmp_path, capsys):  # noqa: F811
    base = [
        "--model",
        "qwen2_audio",
        "--model_args",
        f"pretrained={tiny_models / 'qwen2_audio'}",
        "--tasks",
        "who_plain",
        "--include_path",
        str(task_dir),
        "--cache_dir",
        str(tmp_path / "c"),
    ]
    assert main(base + ["--dry_run", "--output_path", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "| who_plain | 5 | 0 | 10.5 |" in out and "has no cost estimate" in out and "nothing was sent" in out
    assert json.loads((tmp_path / "o" / "dry_run.json").read_text())["total"]["requests"] == 5
    assert not (tmp_path / "c" / "responses.sqlite").exists() or not glob.glob(str(tmp_path / "o" / "results_*"))
    assert main(base + ["--max_cost", "1"]) == 2
    assert "is not an API adapter" in capsys.readouterr().err


def test_check_passes_on_batching_and_fails_across_different_models(task_dir, tiny_models, tmp_path, capsys):  # noqa: F811
    q2 = f"pretrained={tiny_models / 'qwen2_audio'}"
    base = [
        "check",
        "--model",
        "qwen2_audio",
        "--model_args",
        q2,
        "--tasks",
        "who_plain",
        "--include_path",
        str(task_dir),
        "--cache_dir",
        str(tmp_path / "c"),
        "--limit",
        "6",
    ]
    assert main(base + ["--batch_sizes", "1,3", "--output_path", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "| qwen2_audio @ batch 3 | who_plain | 5/5 (100.0 %) | 0 |" in out
    report = json.loads((tmp_path / "o" / "check.json").read_text())
    assert report["comparisons"]["qwen2_audio @ batch 3"]["who_plain"]["identical"] == 5
    # another model's answers differ: exit 1, and the first difference is shown
    status = main(
        base
        + [
            "--batch_sizes",
            "1",
            "--model_b",
            "qwen2_5_omni",
            "--model_args_b",
            f"pretrained={tiny_models / 'qwen2_5_omni'}",
        ]
    )
    out = capsys.readouterr().out
    assert status == 1 and "first difference, qwen2_5_omni @ batch 1" in out and "below --min_identical" in out
    assert main(base + ["--batch_sizes", "1,x"]) == 2


def test_no_cache_reaches_adapters_that_write_the_response_cache_themselves(tmp_path):
    from lalm_eval.models.build import build_adapter

    args = "model=m,base_url=http://127.0.0.1:9/v1"
    assert build_adapter("openai_audio", args, None, str(tmp_path))._cache_path == str(tmp_path / "responses.sqlite")
    assert build_adapter("openai_audio", args, None, str(tmp_path), use_response_cache=False)._cache_path is None


def test_a_dataset_folder_rebuilt_in_place_is_read_anew(task_dir, dataset_dir, tmp_path):  # noqa: F811
    import shutil

    import datasets

    from lalm_eval.evaluation.docs import open_docs
    from lalm_eval.hub.card import front_matter, write_card
    from lalm_eval.hub.parquet import export_dataset_dict
    from lalm_eval.tasks import TaskManager
    from tests.test_evaluator import flac

    folder = tmp_path / "ds"
    shutil.copytree(dataset_dir, folder)
    (task_dir / "base.yaml").write_text((task_dir / "base.yaml").read_text().replace(str(dataset_dir), str(folder)))
    task = TaskManager(include_paths=[task_dir]).load_task("who_plain")
    assert open_docs(task, tmp_path / "c", None).n_original == 6
    shutil.rmtree(folder)  # the same folder, rebuilt with other rows
    rows = {
        "question": ["Q?"] * 2,
        "answer": ["Carol", "Dan"],
        "audio": [{"bytes": flac(1, 300), "path": None}] * 2,
        "language": ["en", "en"],
    }
    features = datasets.Features(
        {
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "audio": datasets.Audio(sampling_rate=16000),
            "language": datasets.Value("string"),
        }
    )
    files = export_dataset_dict(
        {"main": datasets.DatasetDict({"test": datasets.Dataset.from_dict(rows, features=features)})}, folder
    )
    write_card(folder, f"---\n{front_matter(files)}\n---\n")
    again = open_docs(task, tmp_path / "c", None)
    assert again.n_original == 2 and [d["answer"] for d in again.docs] == ["Carol", "Dan"]
