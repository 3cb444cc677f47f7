"""Where the project's resource folders (``tasks/``, ``hub_cards/``) are on this install.

In a source checkout (editable install) they are top-level folders beside the packages; a wheel
carries them inside ``lalm_eval/_resources/``. Both places are tried, wheel first.
"""

from __future__ import annotations

from pathlib import Path

from lalm_eval.errors import ConfigError

RESOURCE_NAMES = ("tasks", "hub_cards")
_PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """The folder of resource ``name`` (``"tasks"`` or ``"hub_cards"``)."""
    if name not in RESOURCE_NAMES:
        raise ConfigError(f"unknown resource folder {name!r}; expected one of {RESOURCE_NAMES}")
    candidates = [_PACKAGE_DIR / "_resources" / name, _PACKAGE_DIR.parent / name]
    for path in candidates:
        if path.is_dir():
            return path
    raise FileNotFoundError(
        f"resource folder {name!r} not found (looked in {', '.join(map(str, candidates))}); "
        "the installation is incomplete: reinstall lalm-eval"
    )


def tasks_dir() -> Path:
    return resource_dir("tasks")


def hub_cards_dir() -> Path:
    return resource_dir("hub_cards")
