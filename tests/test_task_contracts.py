"""Contracts of the built-in tasks (tasks/), in the style of lm-eval's tests/test_tasks.py: every
task loads and turns docs shaped like its dataset's rows into a prompt with one audio, a target
and metrics the harness knows; the groups resolve as documented; hooks behave.

Docs are synthetic, built from the builders' ``FEATURES`` (every column present, typed default
values, then realistic English and Mandarin content), so a template that reads a column the
dataset does not have fails here. No dataset is built or downloaded.
"""

from __future__ import annotations

import io
import json
import re
import sys

import datasets
import numpy as np
import pytest
import soundfile as sf

from lalm_eval.errors import DataError
from lalm_eval.judges import JUDGES
from lalm_eval.metrics.scoring import ScoringContext, make_metric
from lalm_eval.tasks import TaskManager
from msu_bench.builder import FEATURES as MSU_FEATURES
from msu_bench.taxonomy import load_taxonomy
from palm_bench.builder import FEATURES as PALM_FEATURES

TM = TaskManager()
# the MSU-Benchmark multiple-choice tasks (tasks/msu_mcq/) have their own contract: tests/test_msu_mcq_eval.py;
# the forgetting checks (tasks/forgetting/) theirs: tests/test_forgetting_tasks.py
ALL_TASKS = [t for t in TM.all_tasks() if not t.startswith("msu_mcq") and "forgetting" not in TM.file_of(t).parts]
ALL_GROUPS = [g for g in TM.all_groups() if not g.startswith("msu_mcq") and "forgetting" not in TM.file_of(g).parts]
JUDGE_OF = {"recognition": "palm_recognition", "captioning": "palm_captioning", "reasoning": "palm_reasoning"}
STRATEGIES = ("", "_hd", "_hd_cot", "_ad", "_ad_cot")
PALM_TASKS = ("recognition", "captioning", "reasoning")
ENROLL_TASKS = ("palm_recognition_enroll", "palm_captioning_enroll")  # + reference clips: test_palm_enroll_tasks.py
TAXONOMY = load_taxonomy()
CJK = re.compile(r"[\u4e00-\u9fff]")


def audio_value(seconds: float = 0.5, sr: int = 16000) -> dict:
    """A row's ``audio`` as the Parquet export stores it: encoded bytes and a path."""
    t = np.arange(int(seconds * sr)) / sr
    buf = io.BytesIO()
    sf.write(buf, (0.2 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), sr, format="FLAC")
    return {"bytes": buf.getvalue(), "path": "clip.flac"}


def default_of(feature):
    if isinstance(feature, datasets.Audio):
        return audio_value()
    if isinstance(feature, (datasets.List, datasets.Sequence, list)):
        return []
    if isinstance(feature, datasets.Value):
        if feature.dtype == "string":
            return ""
        return 0.0 if feature.dtype.startswith("float") else 0
    raise TypeError(f"no default for feature {feature!r}")


def row(features: datasets.Features, **values) -> dict:
    """A doc with every dataset column (typed defaults) and ``values`` on top; no unknown keys."""
    unknown = set(values) - set(features)
    assert not unknown, f"not dataset columns: {unknown}"
    return {**{name: default_of(f) for name, f in features.items()}, **values}


def subject(sid, name, hd, ad):
    return {"id": sid, "name": name, "hd": hd, "ad": ad}


AMY = subject(
    "en_s01",
    "Amy",
    "Amy's voice is bright and fast, with lively intonation.",
    "Likely female voice; F0 mainly 190-250 Hz, averaging around 220 Hz; speaking rate about 200 wpm.",
)
BOB = subject(
    "en_s02",
    "Bob",
    "Bob's voice is steady and composed, a typical adult male mid-range voice.",
    "Likely male voice; F0 mainly 90-130 Hz; strong low-frequency chest resonance.",
)
LI = subject(
    "zh_s02",
    "李明",
    "李明的声音是一个音高偏低的男声，语速适中，吐字规整。",
    "推测为男声，基频主要分布在 80–95 Hz，平均约 85 Hz，音高偏低。",
)
PROFILES = {
    "Amy": "Age: 28\nOccupation: Nurse\nInterests:\n- movie: Loves romantic comedies.",
    "李明": "年龄: 34\n职业: 后端开发工程师\n兴趣:\n- 音乐: 爱听摇滚乐。",
}


def palm_docs(task: str) -> list[dict]:
    """Three rows of PALM config ``task``: English multi-subject, Mandarin, English negative."""
    if task == "reasoning":
        specs = [
            (
                "en",
                "Think about Amy, who speaks in this recording. Can you recommend a movie she might enjoy?",
                "A good answer builds on what Amy says and on her profile (movie: romantic comedies).",
                [AMY],
                2,
            ),
            (
                "zh",
                "想一想这段录音里说话的李明。你能推荐一首他可能会喜欢的歌吗？",
                "好的回答应结合李明在录音中说的话以及李明的个人资料（音乐：摇滚乐）。",
                [LI],
                1,
            ),
            ("en", "What gift would Amy like, given what she says here?", "Something for a movie night.", [AMY], 3),
        ]
    elif task == "captioning":
        specs = [
            (
                "en",
                "What did Amy and Bob talk about?",
                "Amy said she will arrive shortly; Bob asked her to wait.",
                [AMY, BOB],
                3,
            ),
            ("zh", "李明在音频里谈论的是什么？", "李明说：“写代码的时候我喜欢戴耳机听摇滚。”", [LI], 1),
            ("en", "What did Bob express in the audio?", "This audio doesn't involve Bob.", [BOB], 2),
        ]
    else:
        specs = [
            ("en", "Did Amy or Bob speak in this conversation?", "Amy spoke; Bob did not.", [AMY, BOB], 4),
            ("zh", "这段音频里李明在说话吗？", "是的，李明在说话。", [LI], 1),
            ("en", "Is the speaker Bob?", "No, Bob did not speak.", [BOB], 2),
        ]
    docs = []
    for i, (language, question, answer, subjects, n_speakers) in enumerate(specs):
        target = subjects[0]["name"]
        docs.append(
            row(
                PALM_FEATURES,
                id=f"test-{i:06d}-0",
                task=task,
                language=language,
                question=question,
                answer=answer,
                n_speakers=n_speakers,
                target=target,
                target_id=subjects[0]["id"],
                queried=[s["name"] for s in subjects],
                queried_ids=[s["id"] for s in subjects],
                label="negative" if i == 2 else "positive",
                negative_stratum="hard" if i == 2 else "",
                subjects=subjects,
                profile=PROFILES.get(target, "") if task == "reasoning" else "",
            )
        )
    return docs


def msu_docs(task_id: str) -> list[dict]:
    """Three rows of MSU task ``task_id``: the paper's example question (en), a Mandarin one, another en."""
    spec = TAXONOMY.task(task_id)
    out = []
    for i, (language, question, answer) in enumerate(
        [
            ("en", spec.example_question, spec.example_answer),
            ("zh", "对话中一共有几位说话人？", "三位。"),
            ("en", "What does the second speaker say first?", "Hello, everyone."),
        ]
    ):
        out.append(
            row(
                MSU_FEATURES,
                id=f"seg{i}-q00",
                segment_id=f"seg{i}",
                source="embedded",
                language=language,
                duration=75.0,
                n_speakers=3,
                tier=spec.tier,
                capability=spec.capability,
                task_id=spec.id,
                task_name=spec.name,
                question=question,
                answer=answer,
                inference_prompt=spec.inference_prompt(language),
            )
        )
    return out


def docs_for(name: str, task) -> list[dict]:
    if name.startswith("palm_"):
        return palm_docs(task.config.dataset_name)
    return msu_docs(name.removeprefix("msu_"))


def is_cot(name: str) -> bool:
    return name.endswith("_cot")


# -- every task ---------------------------------------------------------------------------------


def test_the_built_in_tasks_are_the_documented_ones():
    palm = sorted(f"palm_{t}{s}" for t in PALM_TASKS for s in STRATEGIES)
    msu = sorted(f"msu_{t.id}" for t in TAXONOMY.tasks)
    assert len(palm) == 15 and len(msu) == 25
    assert ALL_TASKS == sorted(palm + list(ENROLL_TASKS) + msu)


@pytest.mark.parametrize("name", ALL_TASKS, ids=ALL_TASKS)
class TestTaskContract:
    @pytest.fixture
    def task(self, name):
        return TM.load_task(name)

    @pytest.fixture
    def docs(self, name, task, monkeypatch):
        docs = docs_for(name, task)
        if name in ENROLL_TASKS:  # one synthetic reference clip per subject instead of a built dataset
            clips = {
                s["id"]: [{"clip_id": f"{s['id']}_u001", "name": s["name"], "audio": audio_value()}]
                for s in (AMY, BOB, LI)
            }
            monkeypatch.setitem(task.config.process_docs.resolve().__globals__, "_enrollment_clips", lambda path: clips)
            return task.process_docs(docs, dataset_path="palm-bench")
        return task.process_docs(docs)  # MSU tasks keep their rows (all of them here)

    def test_loads_with_its_name_and_version(self, name, task):
        assert task.name == name and task.version == 1.0 and task.alias != name
        assert task.config.test_split == "test" and task.config.output_type == "generate_until"

    def test_text_is_nonempty_and_contains_the_question(self, task, docs):
        assert len(docs) == 3
        for doc in docs:
            text = task.render_text(doc)
            assert isinstance(text, str) and text.strip() and doc["question"] in text

    def test_one_audio_part_and_that_audio(self, task, docs):
        for doc in docs:
            messages = task.messages(doc)
            parts = [p for m in messages for p in (m["content"] if isinstance(m["content"], list) else [])]
            refs = [r["audio"] for r in doc.get("enrollment", [])]  # enrollment tasks: reference clips first
            assert sum(p.get("type") == "audio" for p in parts) == 1 + len(refs)
            assert task.audio_of(doc) == refs + [doc["audio"]]

    def test_target_is_the_answer(self, task, docs):
        for doc in docs:
            assert task.render_target(doc) == doc["answer"]

    def test_generation_kwargs_and_metrics(self, name, task):
        kwargs = task.gen_kwargs
        assert kwargs.get("max_new_tokens", 0) > 0 and kwargs.get("do_sample") is False
        if name.startswith("palm_"):
            assert kwargs["max_new_tokens"] == (384 if is_cot(name) else 128)
        metrics = task.config.metric_list
        assert all(m["aggregation"] == "mean" and m["higher_is_better"] is True for m in metrics)
        for entry in metrics:  # every entry builds: known metric, known options
            make_metric(entry, ScoringContext())
        names = [m["metric"] for m in metrics]
        judge = next(m for m in metrics if m["metric"] == "llm_judge")
        features = PALM_FEATURES if name.startswith("palm_") else MSU_FEATURES
        assert set((judge.get("context") or {}).values()) <= set(features)  # judge context from real columns
        assert judge["judge"] in JUDGES.names()
        if name.startswith("palm_"):  # the paper's BLEU, F1, BERTScore and LLM score (§5, A.4)
            kind = task.config.dataset_name
            assert {"bleu", "token_f1", "bertscore"} <= set(names) and judge["judge"] == JUDGE_OF[kind]
            assert ("recognition_presence" in names) == (kind == "recognition")
        else:  # MSU: judged on its three dimensions, failures classified into its error types
            assert judge["judge"] == "msu" and judge["classify_failures"] == "msu_error_type"

    def test_breakdown_columns_are_dataset_columns(self, name, task):
        features = PALM_FEATURES if name.startswith("palm_") else MSU_FEATURES
        breakdown = task.config.metadata["breakdown"]
        assert breakdown and set(breakdown) <= set(features)

    def test_cot_tasks_declare_the_answer_filter(self, name, task, docs):
        filters = {f["name"]: f["filter"] for f in task.config.filter_list or []}
        if not is_cot(name):
            assert not filters
            return
        steps = filters["answer"]
        assert [s["function"] for s in steps] == ["regex", "take_first"]
        pattern = steps[0]["regex_pattern"]
        # the paper's Table 10 shape, with and without closing tags
        assert (
            re.findall(
                pattern,
                "<Reasoning> matches Amy's profile. </Reasoning>\n<Answer> Yes, it is Amy. </Answer>",
                flags=re.S,
            )[0]
            == "Yes, it is Amy."
        )
        assert (
            re.findall(pattern, "<Reasoning> bright voice.\n<Answer> I believe the speaker is Amy.", flags=re.S)[0]
            == "I believe the speaker is Amy."
        )
        assert not re.findall(pattern, "Amy.", flags=re.S)
        for doc in docs:
            text = task.render_text(doc)
            assert "<Reasoning>" in text and "<Answer>" in text

    def test_hooks_are_resolvable(self, name, task):
        assert callable(task.hook("prepare_dataset"))
        if name.startswith("msu_"):
            assert task.config.process_docs is not None and callable(task.config.process_docs.resolve())


# -- what the PALM prompts carry --------------------------------------------------------------------


@pytest.mark.parametrize("task_name", PALM_TASKS)
@pytest.mark.parametrize("suffix", STRATEGIES, ids=lambda s: s.lstrip("_") or "base")
def test_palm_prompt_strategy(task_name, suffix):
    task = TM.load_task(f"palm_{task_name}{suffix}")
    assert task.config.dataset_path == "palm-bench" and task.config.dataset_name == task_name
    assert set(task.config.tags) >= {"palm_all"}
    for doc in palm_docs(task_name):
        text = task.render_text(doc)
        for s in doc["subjects"]:
            assert (s["hd"] in text) == ("_hd" in suffix), (suffix, text)
            assert (s["ad"] in text) == ("_ad" in suffix), (suffix, text)
            if suffix:
                assert s["name"] in text
        if doc["profile"]:
            assert doc["profile"] in text
        assert "profile" not in text.lower() or task_name == "reasoning"
        instructions = text.replace(doc["question"], "")
        for s in doc["subjects"]:
            instructions = instructions.replace(s["hd"], "").replace(s["ad"], "").replace(s["name"], "")
        instructions = instructions.replace(doc["profile"], "")
        for tag in ("<Reasoning>", "</Reasoning>", "<Answer>", "</Answer>"):
            instructions = instructions.replace(tag, "")
        if doc["language"] == "zh":  # Chinese instructions, no English ones
            assert CJK.search(instructions) and not re.search(r"[A-Za-z]{2,}", instructions), text
        else:
            assert not CJK.search(instructions), text


def test_palm_task_tags():
    assert sorted(TM.resolve(["palm_all"])) == sorted(f"palm_{t}{s}" for t in PALM_TASKS for s in STRATEGIES)
    for t in PALM_TASKS:
        assert sorted(TM.resolve([f"palm_{t}_all"])) == sorted(f"palm_{t}{s}" for s in STRATEGIES)


# -- MSU: process_docs keeps one task's rows --------------------------------------------------------


def test_msu_task_ids_match_the_taxonomy():
    utils = TM.load_task("msu_t1_sr_speaker_counting").config.process_docs.resolve().__globals__
    assert list(utils["TASK_IDS"]) == [t.id for t in TAXONOMY.tasks]


def test_msu_process_docs_keeps_only_its_task():
    mixed = [
        doc
        for t in ("t1_sr_speaker_counting", "t4_mst_dialogue_transcription", "t2_sda_emotion_evolution")
        for doc in msu_docs(t)
    ]
    task = TM.load_task("msu_t4_mst_dialogue_transcription")
    kept = task.process_docs(mixed)
    assert [d["task_id"] for d in kept] == ["t4_mst_dialogue_transcription"] * 3
    assert task.gen_kwargs["max_new_tokens"] == 1024
    table = datasets.Dataset.from_list([{"task_id": d["task_id"], "question": d["question"]} for d in mixed])
    kept = TM.load_task("msu_t1_sr_speaker_counting").process_docs(table)
    assert isinstance(kept, datasets.Dataset) and kept["task_id"] == ["t1_sr_speaker_counting"] * 3
    assert len(TM.load_task("msu_t3_msri_social_role_recognition").process_docs(table)) == 0


# -- groups ---------------------------------------------------------------------------------------


def test_palm_groups():
    assert TM.resolve(["palm"]) == ["palm_recognition", "palm_captioning", "palm_reasoning"]
    for suffix in STRATEGIES:
        group = f"palm{suffix or '_base'}"
        assert TM.resolve([group]) == [f"palm_{t}{suffix}" for t in PALM_TASKS], group


def test_msu_groups_follow_the_taxonomy():
    assert len(TM.resolve(["msu"])) == 25
    assert TM.resolve(["msu"]) == [
        f"msu_{t.id}"
        for tier in TAXONOMY.tiers
        for cap in TAXONOMY.capabilities
        if cap.tier == tier.id
        for t in TAXONOMY.tasks_of_capability(cap.id)
    ]
    assert TM.resolve(["msu_tier4"]) == [f"msu_{t.id}" for t in TAXONOMY.tasks_of_tier("tier4")]
    assert len(TM.resolve(["msu_tier4"])) == 5
    for tier in TAXONOMY.tiers:
        assert TM.load_group(f"msu_{tier.id}").task == [
            f"msu_{c.id}" for c in TAXONOMY.capabilities if c.tier == tier.id
        ]
        assert sorted(TM.resolve([f"msu_{tier.id}"])) == sorted(f"msu_{t.id}" for t in TAXONOMY.tasks_of_tier(tier.id))
    for cap in TAXONOMY.capabilities:
        assert TM.resolve([f"msu_{cap.id}"]) == [f"msu_{t.id}" for t in TAXONOMY.tasks_of_capability(cap.id)]


@pytest.mark.parametrize("group", ALL_GROUPS)
def test_every_group_aggregates_its_tasks_metrics_weighted_by_size(group):
    config = TM.load_group(group)
    aggregated = [a["metric"] for a in config.aggregate_metric_list]
    assert {"token_f1", "llm_judge"} <= set(aggregated)
    assert all(a["aggregation"] == "mean" and a["weight_by_size"] is True for a in config.aggregate_metric_list)
    produced = {m["metric"] for t in TM.resolve([group]) for m in TM.load_task(t).config.metric_list}
    assert set(aggregated) <= produced  # no aggregate of a metric no member computes
    assert config.group_alias


def test_task_hashes_are_distinct():
    hashes = {name: TM.load_task(name).task_hash for name in ALL_TASKS}
    assert len(set(hashes.values())) == len(ALL_TASKS)


# -- prepare_dataset ------------------------------------------------------------------------------


@pytest.fixture(params=["palm", "msu"])
def prepare(request):
    task = TM.load_task("palm_recognition" if request.param == "palm" else "msu_t1_sr_speaker_counting")
    return task.config.dataset_path, task.hook("prepare_dataset")


def test_prepare_dataset_keeps_a_local_folder_and_a_hub_id(prepare, tmp_path, monkeypatch):
    name, hook = prepare
    monkeypatch.setattr(hook, "build", lambda *a, **k: pytest.fail("must not build"))
    folder = tmp_path / "my-build"
    folder.mkdir()
    cache = tmp_path / "cache"
    assert hook(str(folder), "all", cache) == str(folder)
    assert hook(f"someone/{name}", "all", cache) == f"someone/{name}"
    (tmp_path / name).mkdir()  # `<name>/` in the current directory, as `<bench> build` writes it
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match="not a dataset build"):  # an empty folder is no build
        hook(name, "all", cache)
    (tmp_path / name / "README.md").write_text("---\nconfigs:\n- config_name: all\n  data_files: x.parquet\n---\n")
    assert hook(name, "all", cache) == name
    assert not cache.exists()


def test_prepare_dataset_builds_the_bare_name_once(prepare, tmp_path, monkeypatch):
    """A stub stands in for the real build: what is checked is the once-only, config-keyed logic."""
    name, hook = prepare
    monkeypatch.chdir(tmp_path)  # no `<name>/` folder here
    calls = []

    def fake_build(out, cfg, cache_dir):
        calls.append(out)
        out.mkdir(parents=True)
        (out / "build_info.json").write_text(json.dumps({"config": cfg.to_dict()}))

    monkeypatch.setattr(hook, "build", fake_build)
    cache = tmp_path / "cache"
    expected = cache / "datasets" / f"{name}-small"
    assert hook(name, "all", cache) == str(expected)
    assert hook(name, "all", str(cache)) == str(expected)
    assert len(calls) == 1 and (expected / "build_info.json").is_file()
    assert not list(expected.parent.glob("*.tmp-*"))
    # a folder built with another config is rebuilt
    info = json.loads((expected / "build_info.json").read_text())
    info["config"]["seed"] = 12345
    (expected / "build_info.json").write_text(json.dumps(info))
    assert hook(name, "all", cache) == str(expected)
    assert len(calls) == 2 and json.loads((expected / "build_info.json").read_text())["config"]["seed"] != 12345


def test_task_hooks_import_no_benchmark_until_a_build():
    """Loading the hooks (and taking the no-build paths) must not import palm_bench / msu_bench
    in a fresh process: the harness stays benchmark-free unless a build is asked for. The one
    exception is the metric a task selects from its benchmark's package (``recognition_presence``
    from ``palm_bench.metrics``, an entry point), built when the task loads; it imports no builder."""
    import subprocess

    code = (
        "import sys\nfrom lalm_eval.tasks import TaskManager\ntm = TaskManager()\n"
        "for n in ('palm_recognition_hd_cot', 'msu_t1_sr_speaker_counting'):\n"
        "    t = tm.load_task(n)\n    assert t.hook('prepare_dataset')('owner/x', 'all', None) == 'owner/x'\n"
        "    t.process_docs([])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('palm_bench', 'msu_bench')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['palm_bench', 'palm_bench.metrics']", out.stdout + out.stderr
