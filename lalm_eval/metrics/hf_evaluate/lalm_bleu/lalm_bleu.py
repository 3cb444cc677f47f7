"""Corpus BLEU (sacrebleu) with per-item tokenizers, as a local ``evaluate`` metric.

Each item is tokenised with sacrebleu's "zh" tokenizer when its language (``languages=``, or the
reference text when not given) is Chinese, else "13a"; the sufficient statistics are summed and
corpus BLEU (0-100, exp smoothing) is computed once. See lalm_eval.metrics.bleu.
"""

import datasets
import evaluate

from lalm_eval.metrics.bleu import bleu_signature, bleu_stats, corpus_bleu_from_stats

_CITATION = """\
@inproceedings{post-2018-call,
  title = "A Call for Clarity in Reporting {BLEU} Scores",
  author = "Post, Matt",
  booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
  year = "2018",
}
"""

_INPUTS = """
Args:
    predictions: list of str, model outputs.
    references: list of str, one reference per prediction.
    languages: optional list of language codes (None items allowed), one per prediction.
Returns:
    bleu: corpus BLEU, 0-100.
    signature: sacrebleu version and the tokenizers used, e.g. "... tok:13a+zh smooth:exp".
"""


class LalmBleu(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation=_CITATION,
            inputs_description=_INPUTS,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
        )

    def _compute(self, predictions, references, languages=None):
        if languages is None:
            languages = [None] * len(predictions)
        if len(languages) != len(predictions):
            raise ValueError(f"{len(predictions)} predictions but {len(languages)} languages")
        stats = [bleu_stats(p, r, lang) for p, r, lang in zip(predictions, references, languages)]
        return {"bleu": corpus_bleu_from_stats(stats), "signature": bleu_signature(stats)}
