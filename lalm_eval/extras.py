"""Optional dependencies: one extra per use (``pip install 'lalm-eval[train]'``), imported lazily.

:func:`require` imports a module an extra provides, or raises a :class:`ConfigError` that names the
extra to install and what needed it, instead of a bare ``ModuleNotFoundError`` deep in a run.
``lalm-eval doctor`` lists which extras this environment has.
"""

from __future__ import annotations

import importlib

from lalm_eval.errors import ConfigError

# module → (extra, PyPI distribution)
EXTRA_OF = {
    "peft": ("train", "peft"),
    "lhotse": ("lhotse", "lhotse"),
    "pocketsphinx": ("asr", "pocketsphinx"),
    "openai": ("api", "openai"),
    "google.genai": ("api", "google-genai"),
    "speechbrain": ("ecapa", "speechbrain"),
}


def install_hint(module: str) -> str:
    extra, dist = EXTRA_OF[module]
    return f"pip install 'lalm-eval[{extra}]' (in a checkout: pip install -e '.[{extra}]'), which installs {dist}"


def require(module: str, purpose: str):
    """``importlib.import_module(module)``; when it is not installed, a ConfigError naming
    ``purpose`` (what needed it) and the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name and not (module == exc.name or module.startswith(exc.name + ".")):
            raise  # the module is there but one of its own imports is broken: show that
        raise ConfigError(
            f"{purpose} needs {EXTRA_OF[module][1]}, which is not installed: "
            f"{install_hint(module)}; `lalm-eval doctor` lists what this environment has"
        ) from None
