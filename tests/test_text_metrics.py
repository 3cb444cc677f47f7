import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.metrics.scoring import METRICS
from lalm_eval.metrics.text import exact_match, token_f1, tokens


def test_token_f1_hand_computed():
    # pred tokens: alice likes green tea (4); ref: alice likes tea (3); common 3
    # precision 3/4, recall 3/3 → F1 = 2*0.75*1/(1.75) = 0.857142...
    assert token_f1("Alice likes green tea.", "alice likes the tea") == pytest.approx(6 / 7)
    assert token_f1("nothing shared", "alice") == 0.0
    assert token_f1("", "") == 1.0 and token_f1("", "x") == 0.0


def test_chinese_is_scored_by_character():
    assert tokens("王芳说：我喜欢火锅。") == ["王", "芳", "说", "我", "喜", "欢", "火", "锅"]
    # pred 我喜欢吃火锅 (6 chars) vs ref 我喜欢火锅 (5): common 5 → P 5/6, R 1 → F1 10/11
    assert token_f1("我喜欢吃火锅", "我喜欢火锅") == pytest.approx(10 / 11)


def test_exact_match_normalises_case_punctuation_and_articles():
    assert exact_match("The answer: Yes!", "answer yes") == 1.0
    assert exact_match("Yes", "No") == 0.0


def test_metric_registry():
    assert METRICS.get("token_f1") is token_f1
    with pytest.raises(ConfigError, match="Did you mean 'token_f1'"):
        METRICS.get("token_f")
