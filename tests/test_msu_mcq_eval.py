"""The msu_mcq tasks end to end: the release fixture (tests/msu_release_fixture.py, real layout)
imported, then run through the evaluator with a scripted model whose replies are chosen here, and
accuracy and every breakdown of the report checked against values worked out by hand from the
authors' rules (docs/msu_release.md, "How an answer is scored")."""

import os

import pytest

from lalm_eval.api import Adapter, Response
from lalm_eval.metrics.choice import choice_outcome, parse_final_answer, parse_letter
from lalm_eval.report.assemble import write_outputs
from tests.evaluation_helpers import evaluate_names
from tests.msu_release_fixture import make_release

# The 13 questions scored by default (reverse_* left out), with the reply the model gives and what
# the authors' rules make of it. labels = rationale per option A-D (gt ground truth, ws wrong speaker,
# hal hallucination, unk unknown).
#  id         tier  cap  lang scheme            answer labels               reply                     parsed outcome
#  zh-SV-0    1     SID  zh   no_index          B      ws gt unk hal        "B"                       B  correct (lone letter)
#  zh-SV-1    1     SID  zh   time_index        B      ws gt unk hal        "Final answer: C"         C  unknown
#  zh-GI-0    1     SAR  zh   no_index          B      hal gt ws unk        "答案是A。"                A  hallucination (rule 3)
#  zh-GI-1    1     SAR  zh   speaker_index     C      gt ws hal unk (!)    "A"                       A  other (label "ground truth")
#  zh-EIR-0   2     DCR  zh   no_index          A      gt hal hal unk       "I cannot tell"           -  instruction_not_follow
#  zh-EIR-1   2     DCR  zh   unknown_index     D      hal ws unk gt        "D) hallucination"        D  correct
#  zh-BI-0    2     DSR  zh   complex_index     D      hal hal unk gt       "a podcast studio, so D"  A  hallucination (the article "A")
#  zh-SC-0    1     SID  zh   transcript_index  A      gt ws hal unk        "The answer is B"         B  wrong speaker
#  en-SV-0    1     SID  en   no_index          B      ws gt unk hal        "Final answer: B"         B  correct
#  en-SV-1    1     SID  en   complex_index     C      ws hal gt unk        "C."                      C  correct
#  en-DAR-0   2     DSA  en   transcript_index  A      gt ws hal unk        ""                        -  instruction_not_follow
#  en-DAR-1   2     DSA  en   time_index        B      ws gt unk (partial)  "D"                       D  other ("partially correct")
#  en-ER-0    1     SAR  en   no_index          C      ws hal gt unk        "b"                       B  hallucination
# reverse_* (kept only with include_reverse): zh-SV-2 (A) "A", zh-BI-1 (B) "B", en-DAR-2 (C) "C": all correct.
REPLIES = {
    "zh-SV-0": "B",
    "zh-SV-1": "Final answer: C",
    "zh-GI-0": "答案是A。",
    "zh-GI-1": "A",
    "zh-EIR-0": "I cannot tell",
    "zh-EIR-1": "D) hallucination",
    "zh-BI-0": "a podcast studio, so D",
    "zh-SC-0": "The answer is B",
    "en-SV-0": "Final answer: B",
    "en-SV-1": "C.",
    "en-DAR-0": "",
    "en-DAR-1": "D",
    "en-ER-0": "b",
    "zh-SV-2": "A",
    "zh-BI-1": "B",
    "en-DAR-2": "C",
}
# audio parts of some requests: (label, seconds) in order
PARTS = {
    "zh-SV-0": [("片段1：", 0.9), ("片段2：", 1.1)],
    "en-SV-0": [("Clip 1:", 0.9), ("Clip 2:", 1.1)],
    "zh-EIR-0": [("目标说话人片段：", 0.9), ("完整对话音频：", 4.0)],
    "zh-GI-0": [("目标说话人片段：", 0.9)],
    "en-ER-0": [("Target speaker snippet:", 0.9)],
    "zh-SV-1": [("完整对话音频：", 4.0)],
    "zh-BI-0": [("完整对话音频：", 3.0)],
    "en-SV-1": [("Full conversation audio:", 4.0)],
}


class Scripted(Adapter):
    name = "scripted-mcq"

    def __init__(self):
        super().__init__()
        self.seen = {}

    def identity(self):
        return {"name": self.name, "version": 1}

    def generate(self, requests, batch_size=1):
        out = []
        for r in requests:
            content = r.messages[-1]["content"]
            qid = content[-1]["text"].split(" ", 1)[0]
            labels = [
                p["text"] for p, nxt in zip(content, content[1:]) if p["type"] == "text" and nxt["type"] == "audio"
            ]
            self.seen[qid] = (
                list(zip(labels, [round(len(a) / 16000, 2) for a in r.audios])),
                content[-1]["text"],
                r.gen_kwargs,
            )
            out.append(Response(REPLIES[qid]))
        return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    from msu_bench.mcq_export import build_mcq

    root = tmp_path_factory.mktemp("mcq")
    build_mcq(root / "msu-bench-mcq", make_release(root / "MSU-Bench"))
    return root


@pytest.fixture
def in_workdir(workdir):
    old = os.getcwd()
    os.chdir(workdir)
    yield workdir
    os.chdir(old)


@pytest.fixture(scope="module")
def run(workdir):
    old = os.getcwd()
    os.chdir(workdir)
    try:
        adapter = Scripted()
        result = evaluate_names(
            adapter,
            ["msu_mcq", "msu_mcq_tier1", "msu_mcq_tier2", "msu_mcq_languages"],
            cache_dir=workdir / "cache",
            use_cache=False,
        )
        files = write_outputs(result, {"model": "scripted-mcq"}, workdir / "out", log_samples=True)
    finally:
        os.chdir(old)
    return result, adapter, files["report"].read_text(encoding="utf-8"), files["results"]


def tables(report: str) -> dict:
    """{title: [row cells]} of the report's '### ...' Markdown tables."""
    out, title = {}, None
    for line in report.splitlines():
        if line.startswith("### "):
            title, out[line[4:]] = line[4:], []
        elif title and line.startswith("| ") and not line.startswith("|---"):
            out[title].append([c.strip() for c in line.strip("|").split("|")])
    return {k: v[1:] for k, v in out.items()}  # header dropped


def cells(report, title, n_keys):
    """{key fields: (n, share or None, value)} of one breakdown table."""
    rows = {}
    for r in tables(report)[title]:
        key, rest = tuple(r[:n_keys]), r[n_keys:]
        share = float(rest[1]) if n_keys > 1 else None
        rows[key] = (int(rest[0]), share, float(rest[-1].split(" ")[0]))
    return rows


def test_accuracy_and_instruction_not_follow(run):
    result = run[0]
    r = result.results["msu_mcq"]
    assert r.n == {"original": 13, "effective": 13, "scored": 13}  # 16 kept, 3 reverse_* left out
    assert r.summary["mcq_accuracy"] == pytest.approx(4 / 13)  # zh-SV-0, zh-EIR-1, en-SV-0, en-SV-1
    info = r.metrics["mcq_accuracy"]
    assert info["instruction_not_follow"] == 2 and info["parser"] == "first_letter"
    assert info["error_types"] == {
        "correct": 4,
        "hallucination": 3,
        "instruction_not_follow": 2,
        "other": 2,
        "unknown": 1,
        "wrong speaker": 1,
    }


def test_results_json_counts_the_reverse_questions_left_out(run):
    import json

    doc = json.loads(run[3].read_text(encoding="utf-8"))
    info = doc["sample_info"]
    # the fixture's reverse_* questions: zh-SV-2, zh-BI-1, en-DAR-2 (tests/msu_release_fixture.py)
    want = {"msu_mcq": 3, "msu_mcq_sv": 1, "msu_mcq_bi": 1, "msu_mcq_dar": 1, "msu_mcq_zh": 2, "msu_mcq_en": 1}
    for task, n in want.items():
        assert info[task]["excluded"] == {"reverse_question": n}, task
    no_reverse = [t for t in info if t not in want]  # the other tasks of tier 1 / tier 2: none of theirs is reverse_*
    assert "msu_mcq_gi" in no_reverse and "msu_mcq_eir" in no_reverse
    assert all("excluded" not in info[t] for t in no_reverse)
    assert doc["n-samples"]["msu_mcq"]["original"] == 13  # 16 kept by the importer - 3 left out


def test_groups(run):
    groups = run[0].groups
    assert groups["msu_mcq_tier1"]["mcq_accuracy"] == pytest.approx(3 / 8)
    assert groups["msu_mcq_tier2"]["mcq_accuracy"] == pytest.approx(1 / 5)
    assert groups["msu_mcq_languages"]["mcq_accuracy"] == pytest.approx(4 / 13)
    assert run[0].results["msu_mcq_en"].summary["mcq_accuracy"] == pytest.approx(2 / 5)
    assert run[0].results["msu_mcq_zh"].summary["mcq_accuracy"] == pytest.approx(2 / 8)
    assert run[0].results["msu_mcq_sv"].summary["mcq_accuracy"] == pytest.approx(3 / 4)


def test_requests_carry_the_authors_audio_parts_and_prompt(run):
    adapter = run[1]
    for qid, parts in PARTS.items():
        assert adapter.seen[qid][0] == parts, qid
    _, prompt, kwargs = adapter.seen["en-SV-1"]
    assert prompt == (
        "en-SV-1 Is the second speaker also the one who laughs at the end?\n\nOptions:\n"
        "A. en-SV-1 Is the second speaker also the one who laughs at the end? option A\n"
        "B. en-SV-1 Is the second speaker also the one who laughs at the end? option B\n"
        "C. en-SV-1 Is the second speaker also the one who laughs at the end? option C\n"
        "D. en-SV-1 Is the second speaker also the one who laughs at the end? option D\n\n"
        "[Output format]\nOn the very last line of your reply, output only: Final answer: A/B/C/D."
    )
    zh = adapter.seen["zh-SV-1"][1]
    assert "\n\n选项：\nA. " in zh and zh.endswith("最后答案：A/B/C/D。")
    assert kwargs == {"max_new_tokens": 8, "do_sample": False}
    assert "zh-SV-2" not in adapter.seen and "en-DAR-2" not in adapter.seen  # reverse_*: never asked


def test_breakdowns_by_task_capability_tier(run):
    report = run[2]
    assert cells(report, "msu_mcq by task", 1) == {
        ("BI",): (1, None, 0.0),
        ("DAR",): (2, None, 0.0),
        ("EIR",): (2, None, 0.5),
        ("ER",): (1, None, 0.0),
        ("GI",): (2, None, 0.0),
        ("SC",): (1, None, 0.0),
        ("SV",): (4, None, 0.75),
    }
    assert cells(report, "msu_mcq by capability", 1) == {
        ("DCR",): (2, None, 0.5),
        ("DSA",): (2, None, 0.0),
        ("DSR",): (1, None, 0.0),
        ("SAR",): (3, None, 0.0),
        ("SID",): (5, None, 0.6),
    }
    assert cells(report, "msu_mcq by tier", 1) == {("tier1",): (8, None, 0.375), ("tier2",): (5, None, 0.2)}


def test_breakdowns_within_tiers(run):
    report = run[2]

    def approx(d):
        return {k: (n, pytest.approx(s, abs=6e-4), pytest.approx(v, abs=5e-5)) for k, (n, s, v) in d.items()}

    assert cells(report, "msu_mcq by language × tier", 2) == approx(
        {
            ("en", "tier1"): (3, 3 / 8, 2 / 3),
            ("en", "tier2"): (2, 2 / 5, 0.0),
            ("zh", "tier1"): (5, 5 / 8, 1 / 5),
            ("zh", "tier2"): (3, 3 / 5, 1 / 3),
        }
    )
    assert cells(report, "msu_mcq by scheme × tier", 2) == approx(
        {
            ("no_index", "tier1"): (4, 4 / 8, 0.5),
            ("time_index", "tier1"): (1, 1 / 8, 0.0),
            ("speaker_index", "tier1"): (1, 1 / 8, 0.0),
            ("transcript_index", "tier1"): (1, 1 / 8, 0.0),
            ("complex_index", "tier1"): (1, 1 / 8, 1.0),
            ("no_index", "tier2"): (1, 1 / 5, 0.0),
            ("unknown_index", "tier2"): (1, 1 / 5, 1.0),
            ("complex_index", "tier2"): (1, 1 / 5, 0.0),
            ("transcript_index", "tier2"): (1, 1 / 5, 0.0),
            ("time_index", "tier2"): (1, 1 / 5, 0.0),
        }
    )
    assert cells(report, "msu_mcq by error_type × tier", 2) == approx(
        {
            ("correct", "tier1"): (3, 3 / 8, 1.0),
            ("unknown", "tier1"): (1, 1 / 8, 0.0),
            ("hallucination", "tier1"): (2, 2 / 8, 0.0),
            ("other", "tier1"): (1, 1 / 8, 0.0),
            ("wrong speaker", "tier1"): (1, 1 / 8, 0.0),
            ("instruction_not_follow", "tier2"): (2, 2 / 5, 0.0),
            ("correct", "tier2"): (1, 1 / 5, 1.0),
            ("hallucination", "tier2"): (1, 1 / 5, 0.0),
            ("other", "tier2"): (1, 1 / 5, 0.0),
        }
    )


def test_reverse_questions_with_the_task_option(in_workdir, tmp_path):
    from lalm_eval.resources import tasks_dir

    (tmp_path / "rev.yaml").write_text(
        f"include: {tasks_dir() / 'msu_mcq' / 'msu_mcq.yaml'}\ntask: msu_mcq_with_reverse\n"
        "metadata: {version: 1.0, include_reverse: true, breakdown: [scheme]}\n"
    )
    result = evaluate_names(
        Scripted(), ["msu_mcq_with_reverse"], include_path=[tmp_path], cache_dir=tmp_path / "c", use_cache=False
    )
    r = result.results["msu_mcq_with_reverse"]
    assert r.n["scored"] == 16 and r.summary["mcq_accuracy"] == pytest.approx(7 / 16)  # 4 + 3 reverse
    assert "excluded" not in r.sample_info  # nothing left out


def test_strict_parser_task(in_workdir, tmp_path):
    adapter = Scripted()
    result = evaluate_names(adapter, ["msu_mcq_strict"], cache_dir=tmp_path / "c", use_cache=False)
    r = result.results["msu_mcq_strict"]
    # only zh-SV-1 ("Final answer: C", wrong: unknown) and en-SV-0 ("Final answer: B", right) say "Final answer"
    assert r.summary["mcq_accuracy"] == pytest.approx(1 / 13)
    assert r.metrics["mcq_accuracy"]["error_types"] == {"correct": 1, "instruction_not_follow": 11, "unknown": 1}
    assert adapter.seen["en-SV-0"][2]["max_new_tokens"] == 256


def test_no_dataset_is_a_clear_error(tmp_path):
    from lalm_eval.errors import ConfigError

    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(ConfigError, match="msu-bench build --mcq-dir"):
            evaluate_names(Scripted(), ["msu_mcq"], cache_dir=tmp_path / "c", use_cache=False)
    finally:
        os.chdir(old)


@pytest.mark.parametrize(
    "reply, letter",
    [
        ("B", "B"),
        ("  c\n", "C"),
        ("Final answer: C", "C"),
        ("The answer is B", "B"),
        ("答案是A。", "A"),  # rule 3: not flanked by capitals
        ("A podcast, so D", "A"),  # rule 2 takes A, B, C, D in that order: the article "A" wins
        ("D) HALLUCINATION", "D"),
        ("I cannot tell", ""),
        ("", ""),
        (None, ""),
        ("E", ""),
        ("BD", ""),  # no standalone letter, each flanked by a capital
        ("选D", "D"),
        ("option (b)", "B"),
    ],
)
def test_authors_letter_parser(reply, letter):
    assert parse_letter(reply) == letter


@pytest.mark.parametrize(
    "reply, letter",
    [
        ("Final answer: C", "C"),
        ("**Final answer:** (b)", "B"),
        ("最后答案：D。", "D"),
        ("最终答案: A", "A"),
        ("Final answer: A\nno wait\nFinal answer: D", "D"),
        ("B", ""),
        ("The answer is B", ""),
        ("Final answer: E", ""),
    ],
)
def test_final_answer_parser(reply, letter):
    assert parse_final_answer(reply) == letter


def test_outcomes():
    labels = ["wrong speaker", "ground truth", "unknown", "partially correct"]
    errors = ("wrong speaker", "hallucination", "unknown")
    assert [choice_outcome(x, "B", labels, error_labels=errors) for x in ["A", "B", "C", "D", ""]] == [
        "wrong speaker",
        "correct",
        "unknown",
        "other",
        "invalid",
    ]
    assert choice_outcome("A", "C", ["ground truth", "x", "y", "z"], error_labels=errors) == "other"


# -- contract of every msu_mcq task and group (the other built-in tasks: tests/test_task_contracts.py) --

from lalm_eval.metrics.scoring import ScoringContext, make_metric  # noqa: E402
from lalm_eval.tasks import TaskManager  # noqa: E402
from msu_bench.mcq import release_data  # noqa: E402
from msu_bench.mcq_builder import FEATURES as MCQ_FEATURES  # noqa: E402

TM = TaskManager()
MCQ_TASKS = [t for t in TM.all_tasks() if t.startswith("msu_mcq")]
MCQ_GROUPS = [g for g in TM.all_groups() if g.startswith("msu_mcq")]


def test_the_task_folder_covers_tasks_tiers_capabilities_languages_schemes():
    data = release_data()
    codes = [f"msu_mcq_{c.lower()}" for c in data["tasks"]]
    schemes = [f"msu_mcq_{s}" for s in data["schemes"] + [data["unknown_scheme"]]]
    assert sorted(MCQ_TASKS) == sorted(["msu_mcq", "msu_mcq_strict", "msu_mcq_en", "msu_mcq_zh"] + codes + schemes)
    assert sorted(TM.resolve(["msu_mcq_tasks"])) == sorted(codes)
    assert TM.resolve(["msu_mcq_tier2"]) == [
        "msu_mcq_bi",
        "msu_mcq_rii",
        "msu_mcq_dar",
        "msu_mcq_qasi",
        "msu_mcq_eir",
        "msu_mcq_msvs",
    ]
    assert TM.resolve(["msu_mcq_sid"]) == ["msu_mcq_rsr", "msu_mcq_sr", "msu_mcq_svs", "msu_mcq_sc", "msu_mcq_sv"]
    assert TM.resolve(["msu_mcq_languages"]) == ["msu_mcq_en", "msu_mcq_zh"]
    assert TM.resolve(["msu_mcq_schemes"]) == schemes


@pytest.mark.parametrize("name", MCQ_TASKS)
def test_every_mcq_task(name):
    task = TM.load_task(name)
    assert task.version == 1.0 and task.alias != name and callable(task.hook("prepare_dataset"))
    assert task.gen_kwargs["do_sample"] is False
    assert task.gen_kwargs["max_new_tokens"] == (256 if name == "msu_mcq_strict" else 8)
    for entry in task.config.metric_list:
        make_metric(entry, ScoringContext())
        assert entry["metric"] == "mcq_accuracy" and entry["parser"] == (
            "final_answer" if name == "msu_mcq_strict" else "first_letter"
        )
    meta = task.config.metadata
    assert meta["include_reverse"] is False and set(meta.get("select", {})) <= set(MCQ_FEATURES)
    fields = {f for e in meta["breakdown"] for f in ([e] if isinstance(e, str) else e)}
    assert fields <= set(MCQ_FEATURES) | {"error_type"}  # error_type: the metric's per-sample detail


@pytest.mark.parametrize("group", MCQ_GROUPS)
def test_every_mcq_group(group):
    config = TM.load_group(group)
    assert [a["metric"] for a in config.aggregate_metric_list] == ["mcq_accuracy"]
    assert all(a["weight_by_size"] is True for a in config.aggregate_metric_list) and config.group_alias


def test_report_states_the_reverse_questions_left_out(run):
    report = run[2]
    section = report.split("### Docs the tasks left out (not scored, not in any denominator)\n\n", 1)[1]
    table = section.split("\n\n", 1)[0].splitlines()[2:]  # header and rule dropped
    rows = {tuple(c.strip() for c in line.strip("|").split("|")) for line in table}
    assert rows == {
        ("msu_mcq", "reverse_question", "3"),
        ("msu_mcq_sv", "reverse_question", "1"),
        ("msu_mcq_bi", "reverse_question", "1"),
        ("msu_mcq_dar", "reverse_question", "1"),
        ("msu_mcq_zh", "reverse_question", "2"),
        ("msu_mcq_en", "reverse_question", "1"),
    }
    after = report.split("### msu_mcq by task\n", 1)[1].split("###", 1)[0]
    assert "Not in this table: 3 docs the task left out (reverse_question 3)." in after


def test_dry_run_states_the_reverse_questions_left_out(in_workdir, tmp_path):
    from tests.evaluation_helpers import plan_names

    plan = plan_names(Scripted(), ["msu_mcq", "msu_mcq_gi"], cache_dir=tmp_path / "c", use_cache=False)
    assert plan["tasks"]["msu_mcq"]["requests"] == 13 and plan["tasks"]["msu_mcq"]["excluded"] == {
        "reverse_question": 3
    }
    assert "excluded" not in plan["tasks"]["msu_mcq_gi"]  # GI: no reverse_* question in the fixture
