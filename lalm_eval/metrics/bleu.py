"""BLEU through sacrebleu, with the tokenizer chosen per item (``zh`` for Chinese, ``13a`` otherwise).

sacrebleu's corpus BLEU (Post, 2018, "A Call for Clarity in Reporting BLEU Scores") is computed
from sufficient statistics summed over the corpus: matched and total n-gram counts for n = 1..4
plus hypothesis and reference lengths. This module keeps those statistics per item
(:class:`BleuStats`, from ``BLEU.sentence_score``) so that

- a mixed English/Chinese corpus is scored with each item tokenised for its own language and the
  statistics summed once (:func:`corpus_bleu_from_stats`); for a one-language corpus this equals
  ``sacrebleu.corpus_bleu(preds, [refs], tokenize=...)`` exactly;
- a bootstrap can resample items and recompute corpus BLEU without re-tokenising
  (:func:`corpus_bleu_statistic`, used with :func:`lalm_eval.metrics.bootstrap.bootstrap_ci_indices`);
- the report can say which tokenizers were used (:func:`bleu_signature`).

Settings are sacrebleu's defaults: mixed case, one reference, ``exp`` smoothing, n-grams up to 4,
no effective order at corpus level (sentence BLEU uses effective order, as sacrebleu recommends).
An empty prediction scores 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from typing import TYPE_CHECKING

import sacrebleu
from sacrebleu.metrics.bleu import BLEU

if TYPE_CHECKING:
    import numpy as np

MAX_NGRAM_ORDER = 4
SMOOTH_METHOD = "exp"
# Language codes scored with sacrebleu's "zh" tokenizer (one token per CJK character).
_CHINESE = {"zh", "zho", "chi", "cmn", "yue", "chinese", "mandarin", "cantonese"}
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD_OR_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@dataclass(frozen=True)
class BleuStats:
    """One item's BLEU sufficient statistics (sacrebleu's segment statistics).

    ``counts[n-1]`` / ``totals[n-1]``: matched / hypothesis n-grams of order n;
    ``sys_len`` / ``ref_len``: hypothesis / reference length in tokens of ``tokenize``.
    """

    counts: tuple[int, int, int, int]
    totals: tuple[int, int, int, int]
    sys_len: int
    ref_len: int
    tokenize: str

    def as_dict(self) -> dict:
        """JSON-ready form (for per-sample records); :meth:`from_dict` reads it back."""
        return {**asdict(self), "counts": list(self.counts), "totals": list(self.totals)}

    @classmethod
    def from_dict(cls, data: dict) -> BleuStats:
        return cls(
            tuple(data["counts"]),
            tuple(data["totals"]),
            int(data["sys_len"]),
            int(data["ref_len"]),
            str(data["tokenize"]),
        )


def is_chinese_language(language: str | None) -> bool:
    """True for Chinese language codes: zh, zh-CN, zh_TW, zh-Hans, cmn, cmn-Hans-CN, yue, ..."""
    if not language:
        return False
    code = language.strip().lower().replace("_", "-")
    return code in _CHINESE or code.split("-", 1)[0] in _CHINESE


def tokenizer_for(text: str, language: str | None) -> str:
    """sacrebleu tokenizer for an item: ``"zh"`` for Chinese, else ``"13a"``.

    With a language code, the code decides (:func:`is_chinese_language`). Without one, the text
    decides: ``"zh"`` when CJK characters are more than half of its tokens, counting each CJK
    character and each run of other letters/digits as one token (so "我用iPhone" is Chinese and
    "the word 你好 means hello" is not).
    """
    if language:
        return "zh" if is_chinese_language(language) else "13a"
    pieces = _WORD_OR_CJK.findall(text or "")
    cjk = sum(1 for piece in pieces if _CJK.fullmatch(piece))
    return "zh" if pieces and cjk * 2 > len(pieces) else "13a"


@cache
def _bleu(tokenize: str) -> BLEU:
    """One sentence-level scorer per tokenizer (building the zh tokenizer is not free)."""
    return BLEU(tokenize=tokenize, effective_order=True)


def bleu_stats(prediction: str, reference: str, language: str | None = None) -> BleuStats:
    """Segment statistics of one prediction against one reference.

    The tokenizer follows ``language``, or the *reference* text when ``language`` is None (a
    model answering in the wrong language is still tokenised like the expected answer).
    """
    prediction, reference = prediction or "", reference or ""
    tokenize = tokenizer_for(reference, language)
    score = _bleu(tokenize).sentence_score(prediction, [reference])
    return BleuStats(
        tuple(int(c) for c in score.counts),
        tuple(int(t) for t in score.totals),
        int(score.sys_len),
        int(score.ref_len),
        tokenize,
    )


def _score(
    counts: Sequence[int], totals: Sequence[int], sys_len: int, ref_len: int, effective_order: bool = False
) -> float:
    return BLEU.compute_bleu(
        list(counts),
        list(totals),
        int(sys_len),
        int(ref_len),
        smooth_method=SMOOTH_METHOD,
        effective_order=effective_order,
        max_ngram_order=MAX_NGRAM_ORDER,
    ).score


def corpus_bleu_from_stats(stats: Sequence[BleuStats]) -> float:
    """Corpus BLEU (0-100) of summed item statistics, as ``sacrebleu.corpus_bleu`` computes it.

    An empty list scores 0.0.
    """
    if not stats:
        return 0.0
    counts = [sum(s.counts[n] for s in stats) for n in range(MAX_NGRAM_ORDER)]
    totals = [sum(s.totals[n] for s in stats) for n in range(MAX_NGRAM_ORDER)]
    return _score(counts, totals, sum(s.sys_len for s in stats), sum(s.ref_len for s in stats))


def corpus_bleu(
    predictions: Sequence[str], references: Sequence[str], languages: Sequence[str | None] | None = None
) -> float:
    """Corpus BLEU of aligned predictions/references, each item tokenised for its language."""
    if len(predictions) != len(references) or (languages is not None and len(languages) != len(predictions)):
        raise ValueError("predictions, references and languages must have the same length")
    langs = languages if languages is not None else [None] * len(predictions)
    return corpus_bleu_from_stats([bleu_stats(p, r, lang) for p, r, lang in zip(predictions, references, langs)])


def sentence_bleu(prediction: str, reference: str, language: str | None = None) -> float:
    """Sentence BLEU (0-100) with effective order, as ``sacrebleu.sentence_bleu`` computes it."""
    s = bleu_stats(prediction, reference, language)
    return _score(s.counts, s.totals, s.sys_len, s.ref_len, effective_order=True)


def corpus_bleu_statistic(stats: Sequence[BleuStats]) -> Callable[[np.ndarray], float]:
    """``statistic(indices) -> corpus BLEU`` of the items at ``indices`` (repeats allowed).

    For :func:`lalm_eval.metrics.bootstrap.bootstrap_ci_indices`: the statistics are stacked
    into one integer matrix once, so each resample is a row sum plus one ``compute_bleu``.
    """
    import numpy as np

    matrix = np.array([[s.sys_len, s.ref_len, *s.counts, *s.totals] for s in stats], dtype=np.int64)
    matrix = matrix.reshape(len(stats), 2 + 2 * MAX_NGRAM_ORDER)

    def statistic(indices: np.ndarray) -> float:
        row = matrix[np.asarray(indices, dtype=np.intp)].sum(axis=0).tolist()
        return _score(row[2 : 2 + MAX_NGRAM_ORDER], row[2 + MAX_NGRAM_ORDER :], row[0], row[1])

    return statistic


def bleu_signature(stats: Sequence[BleuStats]) -> str:
    """Reproducibility signature naming the tokenizers used, e.g.
    ``"sacrebleu 2.6.0 BLEU nrefs:1 case:mixed tok:13a+zh smooth:exp"``."""
    tokenizers = "+".join(sorted({s.tokenize for s in stats})) or "none"
    return f"sacrebleu {sacrebleu.__version__} BLEU nrefs:1 case:mixed tok:{tokenizers} smooth:{SMOOTH_METHOD}"
