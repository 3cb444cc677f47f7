"""The harness's reference metrics as local Hugging Face ``evaluate`` modules (offline).

``evaluate.load("bleu")`` fetches its script from the Hub; these modules are local scripts, one
``evaluate.Metric`` subclass per folder ``<name>/<name>.py``, that call this package's own metric
functions, so ``evaluate.load(module_path("lalm_bleu"))`` works without a network:

- ``lalm_bleu``: corpus BLEU, each item tokenised for its language (:mod:`lalm_eval.metrics.bleu`);
  optional ``languages=``; returns ``bleu`` and ``signature``.
- ``lalm_token_f1``: mean SQuAD token F1 (:func:`lalm_eval.metrics.text.token_f1`).
- ``lalm_bertscore``: mean BERTScore (:mod:`lalm_eval.metrics.bertscore`); optional
  ``backbone=``, ``batch_size=``, ``device=``; returns ``f1``/``precision``/``recall`` means plus
  ``backbone`` and ``num_layers``.

A benchmark ships its own modules the same way (PALM-Bench's rule scorer:
:mod:`palm_bench.evaluate_modules`), loaded with :func:`load_module`.

``evaluate.load`` copies the script into ``$HF_MODULES_CACHE`` (default
``~/.cache/huggingface/modules/evaluate_modules/metrics/<name>/<hash>/``) and imports it from
there; the script imports ``lalm_eval``, so the package must be importable. Use
:func:`load` (which keeps the inputs in memory instead of Arrow files under ``HF_EVALUATE_CACHE``)
or ``evaluate.load(module_path(name))``.
"""

from __future__ import annotations

from pathlib import Path

from lalm_eval.errors import ConfigError

MODULES = ("lalm_bleu", "lalm_token_f1", "lalm_bertscore")
_HERE = Path(__file__).resolve().parent


def module_path(name: str) -> str:
    """The folder of module ``name``, to give to ``evaluate.load``."""
    return module_folder(_HERE, MODULES, name)


def module_folder(package_dir: Path, modules: tuple[str, ...], name: str) -> str:
    """``package_dir / name`` when ``name`` is one of ``modules`` (a package of ``evaluate`` modules,
    this one or a benchmark's); else a ConfigError listing them."""
    if name not in modules:
        raise ConfigError(f"unknown evaluate module {name!r}; available: {', '.join(modules)}")
    return str(Path(package_dir) / name)


def load(name: str, **kwargs):
    """``evaluate.load(module_path(name), keep_in_memory=True, **kwargs)``."""
    return load_module(module_path(name), **kwargs)


def load_module(path: str | Path, **kwargs):
    """``evaluate.load(path, keep_in_memory=True, **kwargs)``: a local module folder ``<name>/<name>.py``."""
    import evaluate

    kwargs.setdefault("keep_in_memory", True)
    return evaluate.load(str(path), **kwargs)
