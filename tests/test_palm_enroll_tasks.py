"""The in-context enrollment tasks (palm_*_enroll) and the task-system pieces they use:
``doc_to_messages`` content parts (interleaved labels and audios), ``process_docs`` context
(``dataset_path``, ``metadata``), and several audios per request through a tiny Qwen2-Audio."""

from __future__ import annotations

import dataclasses
import hashlib

import datasets
import numpy as np
import pytest

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.evaluation.docs import decode_audio, open_docs
from lalm_eval.evaluation.requests import decoded_requests
from lalm_eval.tasks import Task, TaskManager
from tests.test_palm_enrollment import shared_build
from tests.test_task_system import task_yaml, write

TM = TaskManager()
ENROLL_TASKS = ("palm_recognition_enroll", "palm_captioning_enroll")
LIMIT = 6


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus):
    return shared_build(tmp_path_factory, corpus)[0]


@pytest.fixture(scope="module")
def enrollment(built):
    """``{subject_id: [rows sorted by clip_id]}`` of the build's enrollment config (audio encoded)."""
    table = datasets.load_dataset(str(built), "enrollment", split="train").cast_column(
        "audio", datasets.Audio(decode=False)
    )
    out = {}
    for row in table:
        out.setdefault(row["subject_id"], []).append(row)
    return {sid: sorted(rows, key=lambda r: r["clip_id"]) for sid, rows in out.items()}


@pytest.fixture(scope="module")
def test_clips(built):
    rows = datasets.load_dataset(str(built), "all", split="test")
    return {c for clips in rows["source_clips"] for c in clips}


def on_build(name: str, built, **metadata) -> Task:
    """Task ``name`` reading the tiny build (and ``metadata`` keys changed)."""
    task = TM.load_task(name)
    config = dataclasses.replace(task.config, dataset_path=str(built), metadata={**task.config.metadata, **metadata})
    return Task(config, task.yaml_file)


@pytest.fixture(scope="module")
def runs(built, tmp_path_factory):
    """``{task: (task, docs, requests)}`` for both enrollment tasks: LIMIT docs each (half English, half
    Mandarin), requests built, no model yet."""
    cache = tmp_path_factory.mktemp("enroll_cache")
    out = {}
    for name in ENROLL_TASKS:
        task = on_build(name, built)
        opened = open_docs(task, cache, None)
        docs, n = opened.docs, opened.n_original
        docs = [d for d in docs if d["language"] == "en"][: LIMIT // 2] + [d for d in docs if d["language"] == "zh"][
            : LIMIT // 2
        ]
        assert len(docs) == LIMIT < n
        out[name] = (task, docs, decoded_requests(task, docs, {"model": "none"}))
    return out


# -- the tasks ------------------------------------------------------------------------------------


def test_tasks_group_and_tag():
    assert TM.resolve(["palm_enroll"]) == list(ENROLL_TASKS)
    assert sorted(TM.resolve(["palm_enroll_all"])) == sorted(ENROLL_TASKS)
    for name in ENROLL_TASKS:
        task = TM.load_task(name)
        assert task.config.dataset_name == name.split("_")[1] and task.config.dataset_path == "palm-bench"
        assert task.config.metadata["n_enroll"] == 1 and task.config.metadata["strategy"] == "enroll"
        assert task.config.doc_to_text == TM.load_task(name.removesuffix("_enroll")).config.doc_to_text
        assert callable(task.hook("prepare_dataset"))


@pytest.mark.parametrize("name", ENROLL_TASKS)
def test_request_carries_the_queried_subjects_train_clips_then_the_test_audio(runs, enrollment, test_clips, name):
    task, docs, requests = runs[name]
    assert [r.doc_id for r in requests] == list(range(LIMIT))  # every doc decoded, none left out
    for doc, request in zip(docs, requests):
        queried = list(zip(doc["queried_ids"], doc["queried"]))
        assert len(request.audios) == len(queried) * 1 + 1
        for (sid, name_), ref, audio in zip(queried, doc["enrollment"], request.audios):
            first = enrollment[sid][0]  # first clip by clip_id of that subject, train split
            assert (ref["subject_id"], ref["name"], ref["clip_id"]) == (sid, name_, first["clip_id"])
            assert sha(ref["audio"]["bytes"]) == sha(first["audio"]["bytes"])
            assert np.array_equal(audio, decode_audio(first["audio"]))
            assert ref["clip_id"] not in test_clips and ref["clip_id"] not in doc["source_clips"]
        assert np.array_equal(request.audios[-1], decode_audio(doc["audio"]))


@pytest.mark.parametrize("name", ENROLL_TASKS)
def test_text_labels_each_reference_by_name_in_order(runs, name):
    task, docs, requests = runs[name]
    for doc, request in zip(docs, requests):
        (message,) = request.messages
        parts = message["content"]
        kinds = [p["type"] for p in parts]
        n = len(doc["queried"])
        assert kinds == ["text", "audio"] * (n + 1) + ["text"]
        labels = task.config.metadata["enroll_labels"][doc["language"]]
        assert [parts[2 * i]["text"] for i in range(n)] == [labels["reference"].format(name=q) for q in doc["queried"]]
        assert parts[2 * n]["text"] == labels["test"]
        assert parts[-1]["text"] == task.render_text(doc) and doc["question"] in parts[-1]["text"]
    assert {d["language"] for d in docs} == {"en", "zh"}
    zh = next(d for d in docs if d["language"] == "zh")
    assert zh["enrollment"][0]["label"] == f"{zh['queried'][0]}的参考录音："


def test_limit_applies_after_the_enrollment_is_attached(built, tmp_path):
    task = on_build("palm_captioning_enroll", built)
    opened = open_docs(task, tmp_path, 2)
    docs, n = opened.docs, opened.n_original
    assert len(docs) == 2 < n and all(d["enrollment"] and d["enroll_test_label"] for d in docs)


def test_n_enroll_from_metadata(built, tmp_path, enrollment):
    task = on_build("palm_recognition_enroll", built, n_enroll=2)
    docs = open_docs(task, tmp_path, 3).docs
    for doc, request in zip(docs, decoded_requests(task, docs, {"model": "none"})):
        assert len(request.audios) == 2 * len(doc["queried"]) + 1
        assert [r["clip_id"] for r in doc["enrollment"]] == [
            row["clip_id"] for sid in doc["queried_ids"] for row in enrollment[sid][:2]
        ]
    with pytest.raises(DataError, match="clip\\(s\\) in the 'enrollment' config, 999 needed"):
        open_docs(on_build("palm_recognition_enroll", built, n_enroll=999), tmp_path, 1)


def test_missing_enrollment_config_and_missing_path_are_named(built, tmp_path):
    import shutil

    folder = tmp_path / "no-enrollment"
    shutil.copytree(built, folder)
    card = (folder / "README.md").read_text()
    (folder / "README.md").write_text(card.replace("- config_name: enrollment\n", "- config_name: unused\n"))
    with pytest.raises(DataError, match=r"no-enrollment: no config 'enrollment' \(its configs: .*\); rebuild"):
        open_docs(on_build("palm_recognition_enroll", folder), tmp_path, 1)
    with pytest.raises(ConfigError, match="needs the dataset path"):
        TM.load_task("palm_recognition_enroll").process_docs([])


# -- several audios through a tiny Qwen2-Audio --------------------------------------------------


@pytest.fixture(scope="module")
def qwen2_audio(tmp_path_factory):
    from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter
    from lalm_eval.models.tiny import make_tiny_model

    return Qwen2AudioAdapter(str(make_tiny_model("qwen2_audio", tmp_path_factory.mktemp("tiny") / "q2a")), device="cpu")


def test_tiny_qwen2_audio_gets_every_audio_and_generates(runs, qwen2_audio):
    assert qwen2_audio.MULTI_AUDIO
    requests = [r for name in ENROLL_TASKS for r in runs[name][2][:3]]
    n_audios = [len(r.audios) for r in requests]
    assert max(n_audios) > 2
    for r in requests:  # one audio placeholder per audio, the labels between them
        prompt = qwen2_audio.render_prompt(r)
        assert prompt.count("<|AUDIO|>") == len(r.audios)
        assert prompt.index(r.messages[0]["content"][0]["text"]) < prompt.index("<|AUDIO|>")
    inputs = qwen2_audio.build_inputs(requests)
    assert inputs["input_features"].shape[0] == sum(n_audios)  # the processor received every audio
    small = [dataclasses.replace(r, gen_kwargs={"max_new_tokens": 4, "do_sample": False}) for r in requests[:2]]
    out = qwen2_audio.generate(small, batch_size=2)
    assert all(o.text is not None and o.error is None for o in out)


# -- the task-system pieces, on toy tasks ---------------------------------------------------------

HOOKS = """\
def parts(doc):
    return [{"type": "text", "text": "Ref " + doc["who"] + ":"}, {"type": "audio"},
            {"type": "text", "text": "Test:"}, {"type": "audio"}]

def two(doc):
    return [doc["ref"], doc["test"]]

def one(doc):
    return [doc["test"]]

def keep(dataset):
    return [dict(d, seen="plain") for d in dataset]

def with_context(dataset, dataset_path=None, metadata=None):
    return [dict(d, seen=(dataset_path, metadata["k"])) for d in dataset]

def with_kwargs(dataset, **context):
    return [dict(d, seen=sorted(context)) for d in dataset]
"""
DOC = {"question": "Same voice?", "answer": "yes", "who": "Amy", "ref": "r.wav", "test": "t.wav"}


def toy(tmp_path, name, extra):
    write(tmp_path, "hooks.py", HOOKS)
    return Task.from_yaml(task_yaml(tmp_path, name, extra))


def test_content_parts_interleave_and_doc_to_text_comes_last(tmp_path):
    task = toy(
        tmp_path,
        "t",
        "doc_to_messages: !function hooks.parts\ndoc_to_audio: !function hooks.two\ndescription: 'Be brief.'\n",
    )
    assert task.messages(DOC) == [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Ref Amy:"},
                {"type": "audio"},
                {"type": "text", "text": "Test:"},
                {"type": "audio"},
                {"type": "text", "text": "Same voice?"},
            ],
        },
    ]
    assert task.audio_of(DOC) == ["r.wav", "t.wav"]
    plain = toy(tmp_path / "plain", "t", "doc_to_audio: !function hooks.two\n")
    assert task.task_hash != plain.task_hash  # doc_to_messages (and its hook file) enter the hash


def test_audio_parts_must_match_the_audios(tmp_path):
    task = toy(tmp_path, "mismatch", "doc_to_messages: !function hooks.parts\ndoc_to_audio: !function hooks.one\n")
    with pytest.raises(
        ConfigError,
        match=r"mismatch\.yaml: task 'mismatch': doc_to_messages \(hooks\.parts\) gives "
        r"2 audio part\(s\) but doc_to_audio gives 1 audio",
    ):
        task.messages(DOC)


@pytest.mark.parametrize(
    "hook, seen", [("keep", "plain"), ("with_context", ("some/path", 7)), ("with_kwargs", ["dataset_path", "metadata"])]
)
def test_process_docs_gets_the_context_its_signature_asks_for(tmp_path, hook, seen):
    task = toy(tmp_path, "t", f"process_docs: !function hooks.{hook}\nmetadata: {{version: 1.0, k: 7}}\n")
    assert task.process_docs([DOC], dataset_path="some/path")[0]["seen"] == seen
