"""``lalm-eval export-tasks --to lmms-eval`` and ``lalm-eval score-samples``, without lmms-eval
(the real harness runs in the lmms-eval stage, tests/test_lmms_stage.py).

The exported hooks are called here the way lmms-eval 0.7.3 calls them (its ``ConfigurableTask``):
``datasets.load_dataset(dataset_path, dataset_name)`` of the exported YAML, ``process_docs`` on the
test split, ``doc_to_text`` on the doc without its audio columns (lmms-eval's ``*_no_media`` docs),
``doc_to_visual`` on the whole doc, ``process_results(doc, [answer.strip()])`` then each metric's
aggregation over the per-doc values; and each result is compared with what ``lalm-eval`` itself
sends and scores for the same docs.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from lalm_eval.cli import main
from lalm_eval.errors import ConfigError
from lalm_eval.evaluation.docs import open_tasks
from lalm_eval.evaluation.requests import decoded_requests
from lalm_eval.evaluation.run import evaluate
from lalm_eval.export_lmms.bridge import ExportedTasks, function_prefix
from lalm_eval.export_lmms.exporter import export_tasks, lmms_generation_kwargs
from lalm_eval.export_lmms.samples import LoggedAnswers
from lalm_eval.tasks import TaskManager
from tests.test_palm_enrollment import shared_build

BUILTIN = ("palm", "msu", "msu_mcq")
MSU_TASKS = ["msu_t1_sr_speaker_counting", "msu_t3_msri_social_role_recognition", "msu_t4_mst_dialogue_transcription"]


class FunctionTag(str):
    pass


class Loader(yaml.SafeLoader):
    pass


Loader.add_constructor("!function", lambda loader, node: FunctionTag(loader.construct_scalar(node)))


def builtin(kind: str = "tasks") -> list[str]:
    """The tasks (or groups) of the built-in PALM, MSU and MSU-MCQ folders."""
    manager = TaskManager()
    names = manager.all_tasks() if kind == "tasks" else manager.all_groups()
    folders = set(BUILTIN)
    return sorted(n for n in names if {manager.file_of(n).parent.name, manager.file_of(n).parent.parent.name} & folders)


def builtin_tasks() -> list[str]:
    return builtin("tasks")


@pytest.fixture(scope="module")
def work(tmp_path_factory, corpus):
    from msu_bench.export import build as build_msu
    from msu_bench.plan import load_preset

    palm = shared_build(tmp_path_factory, corpus)[0]
    work = tmp_path_factory.mktemp("lmms_export")
    build_msu(work / "msu-bench", load_preset("small"))
    os.symlink(palm, work / "palm-bench")  # ./palm-bench: the tasks' prepare_dataset hook uses it
    return work


@pytest.fixture(scope="module")
def exported(work):
    cwd = os.getcwd()
    os.chdir(work)
    try:
        info = export_tasks(builtin_tasks() + builtin("groups"), work / "export", cache_dir=work / "cache")
    finally:
        os.chdir(cwd)
    return work / "export", info


def utils_of(folder: Path):
    spec = importlib.util.spec_from_file_location("utils", folder / "utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_builtin_task_exports(exported):
    out, info = exported
    names = builtin_tasks()
    assert len(names) > 60
    assert sorted(info["tasks"]) == names
    assert info["not_exported"]["tasks"] == {}
    judged = [t for t in names if "llm_judge" in [m["metric"] for m in TaskManager().load_task(t).config.metric_list]]
    assert judged and sorted(info["not_exported"]["metrics"]) == sorted(judged)
    for name in names:
        folder = out / info["tasks"][name]["folder"]
        config = yaml.load((folder / f"{name}.yaml").read_text(encoding="utf-8"), Loader=Loader)
        assert config["task"] == name and config["output_type"] == "generate_until"
        assert config["reasoning_tags"] == "none"  # lmms-eval would strip <think> blocks before scoring
        assert config["generation_kwargs"]["until"] == [] or config["generation_kwargs"]["until"]
        hooks = utils_of(folder)
        tags = [v for v in config.values() if isinstance(v, FunctionTag)]
        tags += [m["aggregation"] for m in config["metric_list"]]
        assert len(tags) == 5 + len(config["metric_list"])
        for tag in tags:
            assert callable(getattr(hooks, tag.split(".", 1)[1])), (name, tag)
        assert [m["metric"] for m in config["metric_list"]] == info["tasks"][name]["metrics"]
        assert "llm_judge" not in info["tasks"][name]["metrics"]
    assert sorted(info["groups"]) == builtin("groups")
    assert (out / "palm" / "palm.yaml").is_file() and (out / "msu" / "msu_tier4.yaml").is_file()
    group = yaml.safe_load((out / "palm" / "palm.yaml").read_text(encoding="utf-8"))
    assert group["task"] == ["palm_recognition", "palm_captioning", "palm_reasoning"]
    assert {m["metric"] for m in group["aggregate_metric_list"]} == {"token_f1", "bleu", "bertscore"}


def test_mcq_tasks_export_without_the_release_and_say_so(exported):
    out, info = exported
    notes = info["tasks"]["msu_mcq"]["notes"]
    assert any("was not found at export" in n for n in notes)
    assert "# note: dataset_path" in (out / "msu_mcq" / "msu_mcq.yaml").read_text(encoding="utf-8")


def lmms_docs(config: dict, hooks, n: int):
    """The first ``n`` docs as lmms-eval 0.7.3 holds them: loaded, processed, and without media."""
    import datasets

    ds = datasets.load_dataset(config["dataset_path"], config.get("dataset_name"), split=config["test_split"])
    ds = getattr(hooks, config["process_docs"].split(".", 1)[1])(ds)
    media = [c for c, f in ds.features.items() if isinstance(f, datasets.Audio)]
    rows = [dict(ds[i]) for i in range(min(n, len(ds)))]
    return rows, [{k: v for k, v in r.items() if k not in media} for r in rows]


def lmms_task(exported, name: str, n: int):
    """The exported task's hooks, their name prefix, and its first ``n`` docs as lmms-eval holds them."""
    out, info = exported
    folder = out / info["tasks"][name]["folder"]
    config = yaml.load((folder / f"{name}.yaml").read_text(encoding="utf-8"), Loader=Loader)
    hooks = utils_of(folder)
    return (hooks, function_prefix(name), *lmms_docs(config, hooks, n))


PROMPT_TASKS = [
    *(
        f"palm_{kind}{s}"
        for kind in ("recognition", "captioning", "reasoning")
        for s in ("", "_hd", "_hd_cot", "_ad", "_ad_cot")
    ),
    "palm_recognition_enroll",
    "palm_captioning_enroll",
    *MSU_TASKS,
]


@pytest.mark.parametrize("name", PROMPT_TASKS)
def test_the_exported_prompt_and_audio_are_lalm_evals(exported, work, monkeypatch, name):
    monkeypatch.chdir(work)
    hooks, prefix, rows, no_media = lmms_task(exported, name, 3)
    opened = open_tasks([name], cache_dir=work / "cache", limit=3).opened[0]
    requests = decoded_requests(opened.task, opened.docs, {})
    assert len(rows) == len(requests) == 3
    for row, bare, request, doc in zip(rows, no_media, requests, opened.docs):
        text = getattr(hooks, f"{prefix}__doc_to_text")(bare, None)
        parts = [p for p in request.messages[-1]["content"]]
        texts = [p["text"] for p in parts if p["type"] == "text"]
        if opened.task.config.doc_to_messages is None:
            assert [p["type"] for p in parts][-1] == "text" and all(p["type"] == "audio" for p in parts[:-1])
            assert text == texts[-1]  # audio first, then the prompt: what lmms-eval's audio models send
        else:  # the one prompt that differs (docs/lmms_eval.md): the labels come after every audio
            assert "audio" in [p["type"] for p in parts[:-1]]
            assert text == "\n".join(texts)
        visuals = getattr(hooks, f"{prefix}__doc_to_visual")(row)
        assert [v["sampling_rate"] for v in visuals] == [16000] * len(request.audios)
        for got, want in zip(visuals, request.audios):
            assert np.array_equal(got["array"], want)
        assert getattr(hooks, f"{prefix}__doc_to_target")(row) == opened.task.render_target(dict(doc))


ANSWERS = [
    "Yes, {target} is speaking.",
    "<Answer> No </Answer>",
    "  two speakers\n",
    "I cannot tell.",
]


def answers_for(task, docs) -> dict[int, dict]:
    out = {}
    for i, doc in enumerate(docs):
        target = str(task.render_target(dict(doc)))
        out[i] = {"answer": target if i % 3 == 0 else ANSWERS[i % len(ANSWERS)].format(target=target), "input": None}
    return out


@pytest.mark.parametrize("name", ["palm_recognition", "palm_captioning_hd_cot", "palm_reasoning_ad", *MSU_TASKS[:2]])
def test_lmms_eval_scores_equal_lalm_evals(exported, work, monkeypatch, name):
    monkeypatch.chdir(work)
    hooks, prefix, rows, _ = lmms_task(exported, name, 12)
    opened = open_tasks([name], cache_dir=work / "cache", limit=12)
    answers = answers_for(opened.tasks[0], opened.opened[0].docs)
    ours = evaluate(LoggedAnswers({name: answers}, {"model": "given"}), opened, use_cache=False).results[name].summary
    per_doc = [
        getattr(hooks, f"{prefix}__process_results")(row, [answers[i]["answer"].strip()]) for i, row in enumerate(rows)
    ]
    metrics = exported[1]["tasks"][name]["metrics"]
    assert metrics
    for metric in metrics:
        value = getattr(hooks, f"{prefix}__agg__{metric}")([d[metric] for d in per_doc])
        assert math.isclose(value, ours[metric], rel_tol=0, abs_tol=1e-9), (metric, value, ours[metric])
    assert any(ours[m] not in (0, 1) for m in metrics), "answers that score neither all 0 nor all 1"


def write_lmms_run(folder: Path, task, docs, answers: dict[int, dict]) -> Path:
    """lmms-eval 0.7.3's --log_samples layout: <output>/<model>/<date>_samples_<task>.jsonl + results."""
    from lalm_eval.export_lmms.bridge import prompt_text

    model = folder / "outputs__tiny"
    model.mkdir(parents=True, exist_ok=True)
    with open(model / f"20261204_120000_samples_{task.name}.jsonl", "w", encoding="utf-8") as f:
        for i, doc in enumerate(docs):
            if i not in answers:
                continue
            sample = {
                "doc_id": i,
                "target": str(task.render_target(dict(doc))),
                "filtered_resps": [answers[i]["answer"]],
            }
            sample["input"] = prompt_text(task, dict(doc))
            f.write(json.dumps(sample, ensure_ascii=False) + "\n")
    (model / "20261204_120000_results.json").write_text(
        json.dumps({"config": {"model": "qwen2_audio", "model_args": "pretrained=tiny"}}), encoding="utf-8"
    )
    return model


def test_score_samples_scores_lmms_eval_output_as_lalm_eval_does(work, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(work)
    names = ["palm_recognition", "palm_captioning"]
    opened = open_tasks(names, cache_dir=work / "cache", limit=10)
    answers = {o.task.name: answers_for(o.task, o.docs) for o in opened.opened}
    for o in opened.opened:
        write_lmms_run(tmp_path / "lmms", o.task, o.docs, answers[o.task.name])
    code = main(
        [
            "score-samples",
            str(tmp_path / "lmms"),
            "--output_path",
            str(tmp_path / "scored"),
            "--layout",
            "palm_table1",
            "--cache_dir",
            str(work / "cache"),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "PALM-Bench Table 1" in printed
    run = evaluate(LoggedAnswers(answers, {"model": "given"}), opened, use_cache=False)
    (results,) = (tmp_path / "scored").glob("results_*.json")
    scored = json.loads(results.read_text(encoding="utf-8"))["results"]
    for name in names:
        for metric, value in run.results[name].summary.items():
            if isinstance(value, float):
                assert math.isclose(scored[name][f"{metric},none"], value, rel_tol=0, abs_tol=1e-9), (name, metric)
        assert scored[name]["llm_judge,none"] is None  # no --judge: reported missing, not 0


def test_score_samples_refuses_samples_of_other_prompts(work, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(work)
    opened = open_tasks(["palm_recognition"], cache_dir=work / "cache", limit=4).opened[0]
    model = write_lmms_run(tmp_path / "lmms", opened.task, opened.docs, answers_for(opened.task, opened.docs))
    file = next(model.glob("*_samples_*.jsonl"))
    lines = file.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[1])
    first["input"] = "What is said?"
    file.write_text("\n".join([lines[0], json.dumps(first), *lines[2:]]) + "\n", encoding="utf-8")
    code = main(["score-samples", str(tmp_path / "lmms"), "--cache_dir", str(work / "cache")])
    err = capsys.readouterr().err
    assert code == 2
    assert str(file) in err and "doc_id 1" in err and "not the one task 'palm_recognition' renders" in err
    code = main(
        ["score-samples", str(tmp_path / "lmms"), "--tasks", "palm_captioning", "--cache_dir", str(work / "cache")]
    )
    assert code == 2 and "no lmms-eval samples of palm_captioning" in capsys.readouterr().err


def test_a_doc_lmms_eval_did_not_log_is_a_counted_failure(work, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(work)
    opened = open_tasks(["palm_recognition"], cache_dir=work / "cache", limit=5).opened[0]
    answers = answers_for(opened.task, opened.docs)
    del answers[2]
    write_lmms_run(tmp_path / "lmms", opened.task, opened.docs, answers)
    assert (
        main(
            [
                "score-samples",
                str(tmp_path / "lmms"),
                "--output_path",
                str(tmp_path / "s"),
                "--cache_dir",
                str(work / "cache"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    (results,) = (tmp_path / "s").glob("results_*.json")
    doc = json.loads(results.read_text(encoding="utf-8"))
    info = doc["sample_info"]["palm_recognition"] if "sample_info" in doc else doc["results"]["palm_recognition"]
    assert "error" in json.dumps(info)
    (samples,) = (tmp_path / "s").glob("samples_palm_recognition_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 5 and [r["doc_id"] for r in rows if r.get("response") is None] == [2]


def test_a_task_changed_since_the_export_is_refused(exported):
    out, info = exported
    spec = {
        "palm_recognition": {"task_hash": "0" * 64, "dataset_path": "palm-bench", "include_path": [], "metrics": []}
    }
    with pytest.raises(ConfigError, match="changed since it was exported.*export-tasks again"):
        ExportedTasks(spec).hook("palm_recognition", "doc_to_text")({"question": "q"})


def test_generation_kwargs_as_lmms_eval_reads_them():
    kwargs, notes = lmms_generation_kwargs({"max_gen_toks": 64, "do_sample": False})
    assert kwargs == {"max_new_tokens": 64, "do_sample": False, "until": [], "temperature": 0}  # no "\n\n" stop
    assert notes == []
    kwargs, notes = lmms_generation_kwargs({"until": "</s>", "repetition_penalty": 1.1, "do_sample": True})
    assert kwargs["until"] == ["</s>"] and "temperature" not in kwargs
    assert len(notes) == 1 and "repetition_penalty" in notes[0]


def test_export_cli_refuses_a_folder_of_other_files(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    code = main(["export-tasks", str(tmp_path / "mine"), "--tasks", "msu_mcq", "--cache_dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and re.search(r"OUT_DIR .*mine", err)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_score_samples_names_judge_in_a_bad_judge_spec(work, monkeypatch, capsys, tmp_path):
    """The same error shape as ``lalm-eval --judge``: the flag, what is wrong, how to fix it."""
    monkeypatch.chdir(work)
    opened = open_tasks(["palm_recognition"], cache_dir=work / "cache", limit=2).opened[0]
    write_lmms_run(tmp_path / "lmms", opened.task, opened.docs, answers_for(opened.task, opened.docs))
    for spec in ("nosuchbackend:model=m", "openai:model=m,base_url=not a url"):
        code = main(["score-samples", str(tmp_path / "lmms"), "--judge", spec, "--cache_dir", str(work / "cache")])
        err = capsys.readouterr().err
        assert code == 2, err
        assert err.startswith("lalm-eval: error: --judge"), err
        assert "Traceback" not in err and "Generating" not in err  # refused before any docs were opened
