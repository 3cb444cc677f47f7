"""WER / CER (jiwer, corpus level) and MMAU option parsing: values worked out by hand."""

import pytest

from lalm_eval.metrics.asr import normalize_chars, normalize_words
from lalm_eval.metrics.choice import parse_option
from lalm_eval.metrics.scoring import ScoreItem, ScoringContext, make_metric, summarize


def _run(metric, pairs, docs=None, **options):
    items = [ScoreItem(hyp, ref, (docs or [{}] * len(pairs))[k], "") for k, (ref, hyp) in enumerate(pairs)]
    return make_metric(
        {"metric": metric, "aggregation": "mean", "higher_is_better": False, **options}, ScoringContext()
    ).compute(items)


def test_normalisers():
    assert normalize_words("Hello, World!  It’s 'quoted'.") == "hello world it's quoted"
    assert normalize_chars("今天 天气，很好！ OK") == "今天天气很好ok"


def test_wer_is_corpus_level():
    pairs = [
        ("HELLO WORLD", "Hello, world!"),  # 0 edits / 2 words
        ("THE CAT SAT ON THE MAT", "The cat sat on mat."),  # 1 deletion ("the") / 6
        ("GOOD MORNING", "good morning everyone"),  # 1 insertion / 2
        ("I DON'T KNOW", "I do not know"),
    ]  # don't→do (sub) + "not" (ins) = 2 / 3
    r = _run("wer", pairs)
    # corpus: (0 + 1 + 1 + 2) / (2 + 6 + 2 + 3) = 4 / 13; the mean of the per-utterance rates
    # would be (0 + 1/6 + 1/2 + 2/3) / 4 = 1/3, a different number
    assert r.summary == pytest.approx(4 / 13)
    assert r.values == pytest.approx([0.0, 1 / 6, 0.5, 2 / 3])
    assert (r.extra["substitutions"], r.extra["deletions"], r.extra["insertions"], r.extra["reference_units"]) == (
        1,
        1,
        2,
        13,
    )
    stats = summarize(r, (0, "t", "wer"), "corpus")  # the tasks' aggregation: corpus
    assert stats["value"] == pytest.approx(4 / 13) and stats["stderr"] is None
    low, high = stats["ci95"]  # a CI of the corpus ratio: every resample lies in [0, 2/3]
    assert 0.0 <= low <= 4 / 13 <= high <= 2 / 3
    assert summarize(r, (0, "t", "wer"), "mean")["value"] == pytest.approx(1 / 3)  # as written


def test_cer_ignores_aishell_spaces_and_punctuation():
    pairs = [
        ("今天 天气 很 好", "今天天气真好。"),  # 很→真: 1 substitution / 6 characters
        ("你 好", "你好吗"),
    ]  # 1 insertion / 2
    r = _run("cer", pairs)
    assert r.summary == pytest.approx(2 / 8)
    assert r.values == pytest.approx([1 / 6, 1 / 2])
    # without normalisation the "。" is one more insertion: 3 / 8
    assert _run("cer", pairs, normalize=False).summary == pytest.approx(3 / 8)


def test_empty_reference_is_counted_not_scored():
    r = _run("wer", [("...", "anything"), ("ONE TWO", "one")])  # second: 1 deletion / 2
    assert r.values == [None, 0.5] and "empty reference" in r.errors[0]
    assert r.summary == 0.5 and summarize(r, (0,))["failures"] == 1


OPTIONS = ["Piano", "Guitar", "Electric guitar", "Drums"]


@pytest.mark.parametrize(
    "reply, index",
    [
        ("B", 1),
        ("(B)", 1),
        ("B.", 1),
        ("C. Electric guitar", 2),
        ("The answer is (D).", 3),
        ("Answer: A", 0),
        ("guitar", 1),
        ("It sounds like an electric guitar.", 2),  # longer option wins
        ("A dog is barking", None),  # "A" starting a sentence is not a letter
        ("Not a piano, a guitar", None),  # two options named: no choice
        ("I cannot tell", None),
        ("", None),
        ("B. Piano", 1),  # the letter wins over the text after it
        ("I think it's D.", 3),
        ("Probably (C)", 2),
        ("It is a dog barking in the rain, so A", 0),
        ("Played on a piano in E", 0),  # E is no letter of 4 options: the text names Piano
    ],
)
def test_parse_option(reply, index):
    assert parse_option(reply, OPTIONS) == index


def test_option_accuracy():
    docs = [{"choices": OPTIONS}] * 4
    pairs = [("Guitar", "B"), ("Guitar", "electric guitar"), ("Drums", "no idea"), ("guitar ", "Guitar")]
    r = _run("option_accuracy", pairs, docs)
    assert r.values == [1.0, 0.0, 0.0, 1.0] and r.extra["unparsed"] == 1
    bad = _run("option_accuracy", [("Violin", "A")], [{"choices": OPTIONS}])
    assert bad.values == [None] and "not one of the options" in bad.errors[0]
