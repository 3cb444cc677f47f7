"""Per-sample text metrics: exact match and SQuAD-style token F1 (characters for Chinese).

Normalisation follows SQuAD's evaluation script (lower-case, strip punctuation and the English
articles a/an/the, collapse whitespace); Chinese text is compared character by character, since
it has no spaces. A response that failed to generate is never scored here (the evaluator
excludes it and reports it). Both are registered in :data:`lalm_eval.metrics.scoring.METRICS`.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_PUNCT = set(string.punctuation) | {
    "“",
    "”",
    "‘",
    "’",
    "—",
    "…",
    "，",
    "。",
    "？",
    "！",
    "、",
    "：",
    "；",
    "（",
    "）",
    "《",
    "》",
}


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    """Words for alphabetic text; every CJK character is its own token."""
    out = []
    for word in normalize(text).split():
        if _CJK.search(word):
            out += [piece for piece in re.findall(r"[\u3400-\u9fff\uf900-\ufaff]|[^\u3400-\u9fff\uf900-\ufaff]+", word)]
        else:
            out.append(word)
    return out


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize(prediction) == normalize(reference))


def token_f1(prediction: str, reference: str) -> float:
    pred, ref = tokens(prediction), tokens(reference)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


# how the report names them and the factor to % (see lalm_eval.metrics.scoring.Metric.display_name)
exact_match.display_name, exact_match.percent = "exact match", 100
token_f1.display_name, token_f1.percent = "token F1", 100
