"""Speech-recognition error rates: corpus WER and CER with ``jiwer`` (PALM Table 4's forgetting checks).

Both are corpus-level, as ASR papers report them: the edits (substitutions + deletions +
insertions) summed over all utterances, divided by the reference length summed over all
utterances (words for WER, characters for CER). Per utterance the rate is kept for the sample
log; the task value and its 95 % bootstrap interval are of the corpus ratio (utterances are
resampled, their counts summed).

Normalisation is explicit and applied to reference and hypothesis alike (``normalize: false``
turns it off), so a model is not charged for case or punctuation:

- WER (:func:`normalize_words`): Unicode NFKC, lower case, every punctuation or symbol character
  a space except an apostrophe inside a word (``don't``), whitespace collapsed. LibriSpeech's
  upper-case, unpunctuated references compare with a chat model's sentence-case reply. Numbers
  are not spelled out (``20`` vs ``TWENTY`` is an error) and English spelling variants are not
  merged: no Whisper-style normaliser.
- CER (:func:`normalize_chars`): NFKC, lower case, punctuation, symbols and all whitespace removed
  (AISHELL-1 puts spaces between words; a model does not), then one unit per character. Traditional
  and simplified Hanzi are not merged, nor Arabic and Chinese numerals.

A reference that is empty after normalisation cannot be scored (``None``, counted, left out).
"""

from __future__ import annotations

import unicodedata

import numpy as np

from lalm_eval.metrics.scoring import Metric, MetricResult, ScoreItem


def _is_punct_or_symbol(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def normalize_words(text: str) -> str:
    """Lower-cased words without punctuation (apostrophes inside words kept), single spaces."""
    text = unicodedata.normalize("NFKC", text or "").lower().replace("’", "'")
    chars = [" " if (_is_punct_or_symbol(c) and c != "'") else c for c in text]
    words = ("".join(chars)).split()
    return " ".join(w.strip("'") for w in words if w.strip("'"))


def normalize_chars(text: str) -> str:
    """Lower-cased characters without punctuation, symbols or whitespace."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    return "".join(c for c in text if not c.isspace() and not _is_punct_or_symbol(c))


def edit_counts(reference: str, hypothesis: str, unit: str) -> tuple[int, int, int, int]:
    """``(substitutions, deletions, insertions, reference length)`` of one utterance, by jiwer's
    alignment over words (``unit="word"``) or characters (``"char"``); texts already normalised."""
    import jiwer

    if unit == "word":
        out = jiwer.process_words(reference, hypothesis)
        n = len(reference.split())
    else:
        out = jiwer.process_characters(reference, hypothesis)
        n = len(reference)
    return out.substitutions, out.deletions, out.insertions, n


class ErrorRateMetric(Metric):
    """``wer`` / ``cer``: per-sample rates, and the corpus error rate for ``aggregation: corpus``;
    option ``normalize`` (default true)."""

    OPTIONS = ("normalize",)
    CORPUS_LEVEL = True  # summary: edits / reference units summed over the corpus
    UNIT = "word"

    def compute(self, items: list[ScoreItem]) -> MetricResult:
        norm = normalize_words if self.UNIT == "word" else normalize_chars
        plain = (
            (lambda t: " ".join((t or "").split())) if self.UNIT == "word" else (lambda t: "".join((t or "").split()))
        )
        fn = norm if self.options.get("normalize", True) else plain
        values, errors, details, counts = [], [], [], []
        for item in items:
            ref, hyp = fn(item.reference), fn(item.prediction)
            if not ref:
                values.append(None)
                errors.append("empty reference after normalisation")
                details.append(None)
                continue
            s, d, i, n = edit_counts(ref, hyp, self.UNIT)
            counts.append((s + d + i, n))
            values.append((s + d + i) / n)
            errors.append(None)
            details.append({"substitutions": s, "deletions": d, "insertions": i, "reference_units": n})
        edits = np.array([c[0] for c in counts], dtype=float)
        units = np.array([c[1] for c in counts], dtype=float)
        summary = float(edits.sum() / units.sum()) if counts else None
        totals = {
            k: int(sum(d[k] for d in details if d))
            for k in ("substitutions", "deletions", "insertions", "reference_units")
        }
        extra = {
            **totals,
            "unit": self.UNIT,
            "corpus_level": True,
            "normalizer": fn.__name__ if fn is norm else "whitespace only",
        }
        return MetricResult(
            values,
            errors,
            summary=summary,
            extra=extra,
            details=details,
            statistic=lambda idx: float(edits[idx].sum() / units[idx].sum()),
        )

    @classmethod
    def corpus_from_details(cls, details: list) -> float | None:
        """Edits over reference units, both summed over the samples' details (as ``summary``)."""
        counted = [d for d in details if d]
        if not counted or len(counted) < len(details):
            return None
        edits = sum(d["substitutions"] + d["deletions"] + d["insertions"] for d in counted)
        return float(np.float64(edits) / np.float64(sum(d["reference_units"] for d in counted)))


class WerMetric(ErrorRateMetric):
    UNIT = "word"
    display_name, percent = "word error rate", 100  # 0–1 (more for many insertions)


class CerMetric(ErrorRateMetric):
    UNIT = "char"
    display_name, percent = "character error rate", 100
