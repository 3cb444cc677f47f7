"""Metrics through the harness: metric_list options, BLEU/F1 per sample, the LLM judge (scripted
text LLM) with failures counted and excluded, the judge missing without --judge, CIs, the report."""

import json

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.llm.base import TextLLM
from lalm_eval.metrics.scoring import ScoreItem, ScoringContext, make_metric
from lalm_eval.metrics.text import token_f1
from lalm_eval.report.assemble import write_outputs
from lalm_eval.report.results import load_results
from tests.evaluation_helpers import evaluate_names
from tests.test_evaluator import Scripted, dataset_dir  # noqa: F401 - fixture reused


class ScriptedJudge(TextLLM):
    """Replies like the captioning judge: score 1 when the response contains the reference, else 0;
    a reply without JSON for responses containing 'Alice' (→ a judge failure after the retry)."""

    def __init__(self):
        self.calls = 0

    def complete(self, batch, **settings):
        replies = []
        for chat in batch:
            self.calls += 1
            prompt = next(m["content"] for m in chat if m["role"] == "user")
            response = prompt.rsplit("• response: “", 1)[1].split("”", 1)[0]  # the item's, after the examples
            replies.append("I think it is fine." if response == "Alice" else json.dumps({"score": 1, "comment": "ok"}))
        return replies

    @property
    def settings(self):
        return {"backend": "scripted", "model": "judge-1", "temperature": 0.0, "max_tokens": 64}


@pytest.fixture
def judged_tasks(tmp_path, dataset_dir):  # noqa: F811
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "t.yaml").write_text(f"""
task: who_judged
dataset_path: {dataset_dir}
dataset_name: main
test_split: test
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "{{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
generation_kwargs: {{max_new_tokens: 4}}
metric_list:
  - {{metric: token_f1, aggregation: mean, higher_is_better: true}}
  - {{metric: bleu, aggregation: mean, higher_is_better: true}}
  - {{metric: llm_judge, judge: palm_captioning, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1, breakdown: [language]}}
""")
    return folder


def test_judge_missing_without_llm_is_reported_not_zero(judged_tasks, tmp_path):
    run = evaluate_names(
        Scripted(), ["who_judged"], include_path=[judged_tasks], cache_dir=tmp_path / "c", use_cache=False
    )
    r = run.results["who_judged"]
    assert r.summary["llm_judge"] is None and "--judge" in r.metrics["llm_judge"]["missing"]
    assert r.summary["token_f1"] == 1.0  # the Scripted adapter answers every scored doc right
    assert r.summary["token_f1_ci95"] == [1.0, 1.0]
    files = write_outputs(run, {"model": "scripted"}, tmp_path / "out", log_samples=False)
    report = files["report"].read_text()
    assert "| who_judged | llm_judge | — |" in report and "no LLM judge configured" in report
    # BLEU says how it tokenised: the scored docs are English (0, 2) and Mandarin (3, 5)
    assert "tok:13a+zh" in report


def test_judge_failures_are_counted_and_excluded(judged_tasks, tmp_path):
    llm = ScriptedJudge()
    run = evaluate_names(
        Scripted(),
        ["who_judged"],
        include_path=[judged_tasks],
        cache_dir=tmp_path / "c",
        use_cache=False,
        judge_llm=llm,
    )
    r = run.results["who_judged"]
    info = r.metrics["llm_judge"]
    # 4 scored docs: answers Bob, Bob, Alice, Alice → the two 'Alice' replies carry no JSON
    assert info["judge_failures"] == 2 and info["n"] == 2
    assert r.summary["llm_judge"] == 1.0  # the mean of the two judged items, failures left out
    assert r.counters["llm_judge_failures"] == 2
    assert info["judge"]["model"] == "judge-1" and info["judge"]["judge"] == "palm_captioning"
    failed = [row for row in run.results["who_judged"].rows if row.get("metric_errors", {}).get("llm_judge")]
    assert len(failed) == 2 and all(row["metrics"]["llm_judge"] is None for row in failed)
    calls = llm.calls

    again = evaluate_names(
        Scripted(),
        ["who_judged"],
        include_path=[judged_tasks],
        cache_dir=tmp_path / "c",
        use_cache=False,
        judge_llm=llm,
    )
    # rescoring: successes from the judge cache, only the failures are asked again (twice each)
    assert llm.calls - calls == 4
    assert again.results["who_judged"].metrics["llm_judge"]["judge_cache_hits"] == 2
    results = load_results(write_outputs(again, {"model": "s"}, tmp_path / "o", log_samples=False)["results"])
    assert results["metric_info"]["who_judged"]["llm_judge"]["judge_failures"] == 2
    assert results["results"]["who_judged"]["llm_judge,none"] == 1.0


def test_metric_options_are_checked():
    with pytest.raises(ConfigError, match="unknown option"):
        make_metric({"metric": "bleu", "tokenize": "zh"}, ScoringContext())
    with pytest.raises(ConfigError, match="unknown metric 'bleuu'. Did you mean 'bleu'") as e:
        make_metric({"metric": "bleuu"}, ScoringContext(), where="t.yaml: metric_list[0]")
    assert str(e.value).startswith("t.yaml: metric_list[0]: ") and "token_f1" in str(e.value)  # lists names
    with pytest.raises(ConfigError, match="unknown aggregation 'totally_bogus'; accepted: mean, median or"):
        make_metric({"metric": "token_f1", "aggregation": "totally_bogus"})
    with pytest.raises(ConfigError, match="'token_f1' has no corpus-level value"):
        make_metric({"metric": "token_f1", "aggregation": "bleu"})
    with pytest.raises(ConfigError, match="parser 'last_letter'"):  # option values, not only names
        make_metric({"metric": "mcq_accuracy", "parser": "last_letter"})
    with pytest.raises(ConfigError, match="unknown judge 'palm_captoning'"):
        make_metric({"metric": "llm_judge", "judge": "palm_captoning"})
    for aggregation in ("mean", "median", "corpus", "bleu"):
        make_metric({"metric": "bleu", "aggregation": aggregation})
    make_metric({"metric": "wer", "aggregation": "corpus"})


def test_bleu_metric_per_sample_and_corpus_signature():
    import sacrebleu

    items = [
        ScoreItem("the cat sat on the mat", "the cat sat on the mat", {"language": "en"}, "q"),
        ScoreItem("我喜欢猫", "我喜欢狗", {"language": "zh"}, "q"),
        ScoreItem("", "nothing here", {"language": "en"}, "q"),
    ]
    result = make_metric({"metric": "bleu"}, ScoringContext()).compute(items)
    assert result.values[0] == pytest.approx(100.0)
    assert result.values[1] == pytest.approx(sacrebleu.sentence_bleu("我喜欢猫", ["我喜欢狗"], tokenize="zh").score)
    assert result.values[2] == 0.0
    assert "13a" in result.extra["signature"] and "zh" in result.extra["signature"]


def test_sample_metric_wraps_plain_functions():
    items = [ScoreItem("Alice is here", "alice is here", {}, "q"), ScoreItem("Bob", "Alice", {}, "q")]
    result = make_metric({"metric": "token_f1"}, ScoringContext()).compute(items)
    assert result.values == [1.0, 0.0]  # normalised to the same tokens; nothing shared


def test_recognition_presence_uses_the_queried_names():
    items = [
        ScoreItem(
            "Amy is speaking; Daisy is not.",
            "Only Amy appears; Daisy does not.",
            {"question": "Do Amy and Daisy both appear?", "queried": ["Amy", "Daisy"]},
            "prompt",
        ),
        ScoreItem(
            "Both of them appear.",
            "Only Amy appears; Daisy does not.",
            {"question": "Do Amy and Daisy both appear?", "queried": ["Amy", "Daisy"]},
            "prompt",
        ),
    ]
    metric = make_metric({"metric": "recognition_presence", "names_field": "queried"}, ScoringContext())
    assert metric.compute(items).values == [1.0, 0.5]


class EmptyOrChinese(Scripted):
    """Like Scripted, but answers "" to the first doc and in Chinese to the third."""

    def generate(self, requests, batch_size=1):
        out = super().generate(requests, batch_size)
        return [
            type(r)("" if q.doc_id == 0 else "爱丽丝" if q.doc_id == 2 else r.text, r.error)
            if r.text is not None
            else r
            for q, r in zip(requests, out)
        ]


def test_empty_and_other_language_responses_are_scored_not_dropped(judged_tasks, tmp_path):
    llm = ScriptedJudge()
    run = evaluate_names(
        EmptyOrChinese(),
        ["who_judged"],
        include_path=[judged_tasks],
        cache_dir=tmp_path / "c",
        use_cache=False,
        judge_llm=llm,
    )
    rows = {r["doc_id"]: r for r in run.results["who_judged"].rows}
    # an empty answer is an answer: every metric scores it (0 for the reference metrics), no error
    assert rows[0]["response"] == "" and rows[0]["error"] is None
    assert rows[0]["metrics"]["token_f1"] == 0.0 and rows[0]["metrics"]["bleu"] == 0.0
    assert rows[0]["metrics"]["llm_judge"] == 1.0  # the (scripted) judge saw it and decided
    # a Chinese answer to an English item: scored against the English reference, not skipped
    assert rows[2]["metrics"]["token_f1"] == 0.0 and rows[2]["metrics"]["llm_judge"] == 1.0
    info = run.results["who_judged"].metrics
    assert info["token_f1"]["n"] == 4 and info["llm_judge"]["judge_failures"] == 2  # docs 3, 5 answer "Alice"


def test_bertscore_values_are_cached_so_rescoring_loads_no_model(tmp_path, monkeypatch):
    import lalm_eval.metrics.bertscore as bs

    items = [
        ScoreItem("Alice greets Bob warmly", "Alice says hello to Bob", {}, "q"),
        ScoreItem("It rains", "The weather is sunny", {}, "q"),
    ]
    context = ScoringContext(cache_dir=tmp_path)
    first = make_metric({"metric": "bertscore"}, context).compute(items)
    assert first.extra["computed"] == 2 and first.values[0] > first.values[1]

    asked = []

    def recording_model(predictions, references, **kwargs):
        asked.append(list(zip(predictions, references)))
        return bs.BertScoreResult(
            [0.25] * len(predictions), [0.25] * len(predictions), [0.25] * len(predictions), "fake", 6
        )

    monkeypatch.setattr(bs, "bertscore", recording_model)
    again = make_metric({"metric": "bertscore"}, context).compute(items)
    assert again.values == first.values and again.extra["from_cache"] == 2 and asked == []  # no model call
    third = make_metric({"metric": "bertscore"}, context).compute(items + [ScoreItem("x", "y", {}, "q")])
    # only the new pair goes to the model, and its value is the model's, not another pair's
    assert asked == [[("x", "y")]] and third.values == [*first.values, 0.25]
    assert (third.extra["computed"], third.extra["from_cache"]) == (1, 2)
