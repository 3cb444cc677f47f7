"""PALM-Bench's rule scorer as a local Hugging Face ``evaluate`` module (offline), beside the
harness's own (:mod:`lalm_eval.metrics.hf_evaluate`):

- ``palm_recognition_presence``: mean PALM recognition-presence score
  (:func:`palm_bench.recognition.recognition_presence_score`); inputs predictions, references
  and ``questions``.

``load("palm_recognition_presence")`` or ``evaluate.load(module_path("palm_recognition_presence"))``.
"""

from __future__ import annotations

from pathlib import Path

from lalm_eval.metrics.hf_evaluate import load_module, module_folder

MODULES = ("palm_recognition_presence",)
_HERE = Path(__file__).resolve().parent


def module_path(name: str) -> str:
    """The folder of module ``name``, to give to ``evaluate.load``."""
    return module_folder(_HERE, MODULES, name)


def load(name: str, **kwargs):
    """``evaluate.load(module_path(name), keep_in_memory=True, **kwargs)``."""
    return load_module(module_path(name), **kwargs)
