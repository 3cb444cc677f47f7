"""The judge's decoding is part of its score (issue 21, part 5): ``--judge_samples K`` asks the judge
K times per item with K distinct seeds (each verdict cached on its own, K = 1 keeping the old keys),
the mean is scored and the judge's own spread reported; every footnote under a judge score names
the decoding; MSU's failed-answer threshold (``classify_below``) is a task option named in the
Table 4 / 6 footnotes. Judges speak to a local OpenAI-protocol server on 127.0.0.1 (the shared
``server`` fixture) or to a scripted text LLM."""

import hashlib
import json
import math
import re
import statistics
from types import SimpleNamespace

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.judges import CACHE_FILE, JudgeCache, JudgeItem, JudgeResult, judge_llm_from_spec, make_judge
from lalm_eval.judges.decoding import check_samples, sample_seeds, sample_spread
from lalm_eval.llm.base import TextLLM
from lalm_eval.metrics.scoring import ScoreItem, ScoringContext, make_metric
from lalm_eval.report.assemble import metric_details, write_outputs
from lalm_eval.report.layouts import LayoutIndex, render_layout
from lalm_eval.report.results import load_results
from tests.evaluation_helpers import evaluate_names
from tests.test_evaluator import Scripted, dataset_dir  # noqa: F401 - fixture reused
from tests.test_llm_backend import completion, server  # noqa: F401 - the shared 127.0.0.1 chat server
from tests.test_scoring import judged_tasks  # noqa: F401 - a task with an llm_judge entry


def seed_score(body) -> float:
    """The stand-in judge's verdict: a function of the request's seed (0 / 0.5 / 1), 1 without one."""
    seed = body.get("seed")
    return 1.0 if seed is None else (seed % 3) / 2


def by_seed(index, body, headers):
    return 200, completion(json.dumps({"score": seed_score(body), "comment": "by seed"})), 0.0


def judge_spec(srv, **extra) -> str:
    options = {"model": "judge-m", "base_url": srv.url, "retry_delay": 0.01, "api_key": "k", **extra}
    return "openai:" + ",".join(f"{k}={v}" for k, v in options.items())


def items(n):
    return [
        JudgeItem(question=f"Summarise clip {i}.", reference=f"Bob talks about {i}.", response=f"r{i}")
        for i in range(n)
    ]


def response_of(body) -> str:
    return re.findall(r"• response: “(.*)”", body["messages"][0]["content"])[-1]


def test_k3_sends_three_requests_per_item_with_three_distinct_seeds_and_a_rerun_hits_the_cache(server, tmp_path):
    srv = server(by_seed)
    llm = judge_llm_from_spec(judge_spec(srv, temperature=0.6))
    judge = make_judge("palm_captioning", llm, tmp_path, samples=3, seed=11)
    results = judge.judge(items(4))
    assert len(srv.requests) == 12
    seeds_of = {}
    for req in srv.requests:
        seeds_of.setdefault(response_of(req["body"]), []).append(req["body"]["seed"])
    assert sorted(seeds_of) == ["r0", "r1", "r2", "r3"]
    seeds = sorted(seeds_of["r0"])
    assert len(set(seeds)) == 3 and all(sorted(s) == seeds for s in seeds_of.values())
    expected = statistics.mean(seed % 3 / 2 for seed in seeds)  # the server's own rule, item by item
    assert [r.score for r in results] == pytest.approx([expected] * 4)
    assert all(len(r.detail["judge_samples"]) == 3 for r in results)
    assert judge.settings["samples"] == 3 and sorted(judge.settings["sample_seeds"]) == seeds
    assert judge.settings["sample_seed_source"] == "--seed 11"

    again = make_judge(
        "palm_captioning", judge_llm_from_spec(judge_spec(srv, temperature=0.6)), tmp_path, samples=3, seed=11
    )
    rerun = again.judge(items(4))
    assert len(srv.requests) == 12  # every verdict of every sample from the cache
    assert [r.score for r in rerun] == [r.score for r in results] and all(r.cached for r in rerun)

    other = make_judge("palm_captioning", llm, tmp_path, samples=3, seed=12).judge(items(1))
    new_seeds = sorted(req["body"]["seed"] for req in srv.requests[12:])
    assert len(new_seeds) == 3 and new_seeds != seeds  # another run seed: other verdicts, asked anew
    assert other[0].score == pytest.approx(statistics.mean(s % 3 / 2 for s in new_seeds))


def test_k1_sends_no_seed_and_keeps_the_cache_keys_of_earlier_runs(server, tmp_path):
    srv = server(by_seed)
    llm = judge_llm_from_spec(judge_spec(srv))
    judge = make_judge("palm_captioning", llm, tmp_path)
    # a verdict stored by an earlier version, under the key recipe as documented in judges/cache.py
    chat = judge.messages(items(1)[0])
    output = {k: v for k, v in llm.settings.items() if k in ("backend", "model", "temperature", "max_tokens")}
    payload = {"v": 1, "judge": "palm_captioning", "prompt_version": "1", "messages": chat, "llm": output}
    key = hashlib.sha256(
        json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    JudgeCache(tmp_path / CACHE_FILE).put_many([(key, JudgeResult(0.5, {"score": 0.5, "comment": "old"}), "x")])
    results = judge.judge(items(2))
    assert results[0].cached and results[0].score == 0.5  # the old entry hit
    assert len(srv.requests) == 1 and "seed" not in srv.requests[0]["body"]  # the other item, unseeded
    assert judge.settings["samples"] == 1 and "sample_seeds" not in judge.settings


def test_a_failed_sample_is_left_out_of_the_mean_and_the_spread_is_worked_by_hand(server, tmp_path):
    seeds = sample_seeds(3, 3)

    def respond(index, body, headers):
        if response_of(body) == "r0" and body["seed"] == seeds[1]:
            return 200, completion("no JSON here"), 0.0  # invalid twice (the retry too): a failed verdict
        return by_seed(index, body, headers)

    srv = server(respond)
    results = make_judge("palm_captioning", judge_llm_from_spec(judge_spec(srv)), None, samples=3, seed=3).judge(
        items(2)
    )
    scores = [s % 3 / 2 for s in seeds]
    assert results[0].score == pytest.approx((scores[0] + scores[2]) / 2)
    assert results[0].detail["judge_samples"][1] is None and results[1].score == pytest.approx(sum(scores) / 3)
    # the spread: per-item SDs (n-1) of [0, 1, 0.5] and [1, 1, 1] are 0.5 and 0; run means 0.5, 1, 0.75
    spread = sample_spread([[0.0, 1.0, 0.5], [1.0, 1.0, 1.0]])
    assert spread["mean_item_sd"] == pytest.approx(0.25)
    assert spread["run_means"] == pytest.approx([0.5, 1.0, 0.75]) and spread["run_mean_sd"] == pytest.approx(0.25)
    assert math.isclose(sample_spread([[1.0, None], [0.0, 0.0]])["run_means"][1], 0.0)


class Unseeded(TextLLM):
    def complete(self, batch, **settings):
        return []

    @property
    def settings(self):
        return {"backend": "hf", "model": "local", "temperature": 0.6}


def test_judge_samples_values_are_checked():
    with pytest.raises(ConfigError, match=r"^--judge_samples '0': must be a whole number >= 1; give e\.g\."):
        check_samples("0")
    with pytest.raises(ConfigError, match="--judge_samples 'many'"):
        check_samples("many")
    with pytest.raises(ConfigError, match=r"--judge_samples 3: there is no judge to ask \(no --judge given\)"):
        check_samples("3", None)
    with pytest.raises(ConfigError, match="the hf judge backend takes no per-request seed"):
        check_samples(3, Unseeded())
    assert check_samples("1", None) == 1 and check_samples(1, Unseeded()) == 1


def test_cli_checks_judge_samples_after_the_judge_and_before_any_task_or_model(tmp_path, capsys):
    from lalm_eval.cli import main

    base = ["--model", "no_such_model", "--tasks", "no_such_task", "--cache_dir", str(tmp_path)]
    assert main([*base, "--judge_samples", "0"]) == 2
    assert "lalm-eval: error: --judge_samples '0': must be a whole number >= 1" in capsys.readouterr().err
    assert main([*base, "--judge_samples", "3"]) == 2
    assert "--judge_samples 3: there is no judge to ask (no --judge given)" in capsys.readouterr().err
    # the README's line: the paper's judge (an OpenAI-protocol preset) takes K = 3; the run goes on to
    # the model (and stops there, at the unknown name: nothing is sent to the judge before)
    judge = ["--judge", "palm_paper:base_url=http://127.0.0.1:9/v1", "--judge_samples", "3", "--seed", "1234"]
    assert main([*base, *judge]) == 2
    err = capsys.readouterr().err
    assert "--judge_samples" not in err and "--model: unknown model 'no_such_model'" in err


def test_run_records_decoding_and_k_and_the_report_footnotes_show_them(server, judged_tasks, tmp_path):  # noqa: F811
    srv = server(by_seed)
    spec = judge_spec(srv, temperature=0.6, top_p=0.95, top_k=20, max_tokens=64)

    def run(seed, k):
        return evaluate_names(
            Scripted(),
            ["who_judged"],
            include_path=[judged_tasks],
            cache_dir=tmp_path / "c",
            use_cache=False,
            judge_llm=judge_llm_from_spec(spec),
            seed=seed,
            judge_samples=k,
        )

    first = run(5, 3)
    asked = len(srv.requests)
    assert asked == 3 * 4  # 4 scored docs (one generation failed, one clip undecodable), 3 verdicts each
    seeds = sorted({r["body"]["seed"] for r in srv.requests})
    assert len(seeds) == 3
    info = first.results["who_judged"].metrics["llm_judge"]
    assert info["judge"]["samples"] == 3 and sorted(info["judge"]["sample_seeds"]) == seeds
    assert info["judge_spread"]["samples"] == 3
    files = write_outputs(first, {"model": "scripted", "judge_samples": 3}, tmp_path / "out", log_samples=False)
    report = files["report"].read_text()
    assert f"seed one per verdict [{', '.join(map(str, info['judge']['sample_seeds']))}], samples 3" in report
    assert (
        "judge palm_captioning (prompt v1): model judge-m, temperature 0.6, top_p 0.95, top_k 20, max_tokens 64"
        in report
    )
    assert "each item's score is the mean of 3 verdicts" in report and "derived from --seed 5" in report
    sd = statistics.stdev(s % 3 / 2 for s in seeds)  # every item gets the same 3 seeds: run means = seed scores
    assert f"; judge SD {sd:.4f} over 3 verdicts |" in report
    saved = load_results(files["results"])["metric_info"]["who_judged"]["llm_judge"]
    assert saved["judge"]["sample_seeds"] == info["judge"]["sample_seeds"] and saved["judge"]["top_k"] == 20

    again = run(5, 3)
    assert len(srv.requests) == asked  # rerun: all 12 verdicts from the judge cache
    assert again.results["who_judged"].summary["llm_judge"] == first.results["who_judged"].summary["llm_judge"]

    single = run(5, 1)  # one verdict, unseeded: the footnote says the score moves from run to run
    assert all("seed" not in r["body"] for r in srv.requests[asked:])
    text = write_outputs(single, {"model": "scripted"}, tmp_path / "out1", log_samples=False)["report"].read_text()
    assert "seed server default, samples 1; sampled at temperature 0.6 with one verdict per item" in text
    assert "judge SD" not in text


# ---- MSU: the failed-answer threshold is a task option, named in the Table 4 / 6 footnotes --------


class ScriptedMsu(TextLLM):
    """The MSU judge scores a response by its text (``score=0.3`` → 0.3); the classifier calls every
    failed answer perceptual."""

    def __init__(self):
        self.classified = []

    def complete(self, batch, **settings):
        out = []
        for chat in batch:
            prompt = chat[0]["content"]
            response = prompt.rsplit("• response: “", 1)[1].split("”", 1)[0]
            if '"error_type"' in prompt:  # the classifier's prompt (msu_error_type.j2)
                self.classified.append(response)
                out.append(json.dumps({"error_type": "perceptual", "comment": "scripted"}))
                continue
            score = float(response.split("=")[1])
            sub = 0.0 if score == 0 else 0.5 if score <= 0.5 else 1.0  # overall may not exceed it
            out.append(
                json.dumps(
                    {
                        "question_type": "single",
                        "sub_questions": [{"question": "q", "score": sub}],
                        "relevance": 5,
                        "accuracy": 3,
                        "causal_question": False,
                        "causal_soundness": 5,
                        "overall": score,
                        "comment": "scripted",
                    }
                )
            )
        return out

    @property
    def settings(self):
        return {"backend": "scripted", "model": "scripted-msu", "temperature": 0.6, "top_p": 0.95, "max_tokens": 99}


def msu_entry(**options):
    return {
        "metric": "llm_judge",
        "judge": "msu",
        "context": {"task_id": "task_id"},
        "classify_failures": "msu_error_type",
        "aggregation": "mean",
        **options,
    }


SCORES = (0.0, 0.3, 0.5, 0.7, 1.0)


def msu_items():
    doc = {"task_id": "t1_sr_speaker_counting"}
    return [ScoreItem(f"score={s}", "Two.", doc, "How many speakers?") for s in SCORES]


@pytest.mark.parametrize(
    "below, failed", [(0.5, ["score=0.0", "score=0.3"]), (0.75, ["score=0.0", "score=0.3", "score=0.5", "score=0.7"])]
)
def test_classify_below_decides_which_answers_are_classified(below, failed):
    llm = ScriptedMsu()
    result = make_metric(msu_entry(classify_below=below), ScoringContext(judge_llm=llm)).compute(msu_items())
    assert result.values == pytest.approx(list(SCORES))
    assert sorted(llm.classified) == failed
    labelled = [f"score={s}" for s, d in zip(SCORES, result.details) if d.get("error_type")]
    assert labelled == failed and result.extra["error_types"] == {"perceptual": len(failed)}
    assert result.extra["classify_below"] == below and result.extra["classifier"]["judge"] == "msu_error_type"


class SeededMsu(ScriptedMsu):
    """Scores ``score=third`` 1 under the first of the run's three sample seeds, 0 under the others."""

    per_request_seed = True

    def __init__(self, seeds):
        super().__init__()
        self.seeds, self.prompts = seeds, []

    def complete(self, batch, **settings):
        self.prompts += [chat[0]["content"] for chat in batch]
        score = 1.0 if settings.get("seed") == self.seeds[0] else 0.0
        return super().complete(
            [[{"role": "user", "content": c[0]["content"].replace("score=third", f"score={score}")}] for c in batch]
        )


def test_with_k3_a_failed_answer_is_classified_once_on_the_mean_of_its_verdicts():
    llm = SeededMsu(sample_seeds(0, 3))
    entry = msu_entry(classify_below=0.5)
    item = ScoreItem("score=third", "Two.", {"task_id": "t1_sr_speaker_counting"}, "How many speakers?")
    result = make_metric(entry, ScoringContext(judge_llm=llm, judge_samples=3)).compute([item])
    assert result.values == pytest.approx([1 / 3]) and result.details[0]["judge_samples"] == [1.0, 0.0, 0.0]
    classifier_prompts = [p for p in llm.prompts if '"error_type"' in p]
    assert len(classifier_prompts) == 1 and "the judge's score of this response: 0.3333 (" in classifier_prompts[0]
    assert result.extra["judge"]["samples"] == 3 and result.extra["classifier"]["samples"] == 1


def test_classify_below_is_required_checked_and_recorded_without_a_judge():
    with pytest.raises(ConfigError, match="classify_failures needs classify_below"):
        make_metric(msu_entry(), ScoringContext())
    with pytest.raises(ConfigError, match="classify_below is set but classify_failures is not"):
        make_metric({"metric": "llm_judge", "judge": "msu", "classify_below": 0.5})
    with pytest.raises(ConfigError, match="classify_below must be a number, got 'half'"):
        make_metric(msu_entry(classify_below="half"))
    missing = make_metric(msu_entry(classify_below=0.4), ScoringContext()).compute(msu_items())
    assert missing.missing and missing.extra["classify_below"] == 0.4


@pytest.fixture(scope="module")
def index():
    return LayoutIndex.load()


def test_msu_table4_and_6_footnotes_name_the_threshold_and_the_classifiers_decoding(index):
    result = make_metric(msu_entry(classify_below=0.75), ScoringContext(judge_llm=ScriptedMsu())).compute(msu_items())
    task = "msu_t1_sr_speaker_counting"
    run = SimpleNamespace(results={task: SimpleNamespace(metrics={"llm_judge": result.extra})})  # an EvalRun's shape
    rows = [
        {
            "model": "m",
            "task_name": task,
            "tier": "tier1",
            "capability": "sr",
            "doc_id": k,
            "metrics": {"llm_judge": v},
            "metric_details": {"llm_judge": d},
        }
        for k, (v, d) in enumerate(zip(result.values, result.details))
    ]
    details = metric_details(run)
    for layout in ("msu_table4", "msu_table6"):
        text = render_layout(index.layout(layout), rows, details=details)
        assert "LLM-judge score, error types: failed answers are those judged below 0.75" in text
        assert "the project's threshold, not the paper's" in text
        assert (
            "classified once by judge msu_error_type (prompt v1): model scripted-msu, temperature 0.6, top_p 0.95"
            in text
        )
        assert "LLM-judge score: judge msu (prompt v1): model scripted-msu, temperature 0.6" in text
    table3 = render_layout(index.layout("msu_table3"), rows, details=details)
    assert "top_k server default, max_tokens 99, seed server default, samples 1; sampled at temperature 0.6" in table3
    assert "judged below" not in table3  # the threshold belongs to the error tables
