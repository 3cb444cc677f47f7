"""Mean SQuAD-style token F1 (Chinese compared character by character), as a local ``evaluate``
metric. See lalm_eval.metrics.text.token_f1."""

import datasets
import evaluate

from lalm_eval.metrics.text import token_f1

_CITATION = """\
@inproceedings{rajpurkar-etal-2016-squad,
  title = "{SQ}u{AD}: 100,000+ Questions for Machine Comprehension of Text",
  author = "Rajpurkar, Pranav and Zhang, Jian and Lopyrev, Konstantin and Liang, Percy",
  booktitle = "Proceedings of EMNLP",
  year = "2016",
}
"""

_INPUTS = """
Args:
    predictions: list of str, model outputs.
    references: list of str, one reference per prediction.
Returns:
    token_f1: mean per-item token F1, 0-1 (0.0 for no items).
"""


class LalmTokenF1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation=_CITATION,
            inputs_description=_INPUTS,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
        )

    def _compute(self, predictions, references):
        scores = [token_f1(p, r) for p, r in zip(predictions, references)]
        return {"token_f1": sum(scores) / len(scores) if scores else 0.0}
