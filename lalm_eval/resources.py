"""Where the project's resource folders (``tasks/``, ``hub_cards/``) are on this install, and the
task folders installed plug-ins add (:func:`task_folders`).

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


#: the entry-point group through which an installed benchmark adds its task folder
TASK_FOLDERS_GROUP = "lalm_eval.task_folders"


def task_folders() -> list[Path]:
    """The built-in ``tasks/`` folder, then the task folder of every installed plug-in that
    registers one (``[project.entry-points."lalm_eval.task_folders"] NAME = "package:ATTR"``, ATTR
    a folder path), by entry-point name: where the task manager, the report layouts and the judge
    presets look besides ``--include_path``."""
    from importlib.metadata import entry_points

    folders = [tasks_dir()]
    for ep in sorted(entry_points(group=TASK_FOLDERS_GROUP), key=lambda e: e.name):
        try:
            folder = Path(ep.load())
        except Exception as exc:  # noqa: BLE001 - a broken plug-in: say which and how to fix it
            raise ConfigError(
                f"entry point {ep.name} = {ep.value} ({TASK_FOLDERS_GROUP}): cannot load it ({exc}); "
                "reinstall or remove the package that declares it"
            ) from None
        if not folder.is_dir():
            raise ConfigError(
                f"entry point {ep.name} = {ep.value} ({TASK_FOLDERS_GROUP}): {folder} is not a folder; "
                "reinstall or remove the package that declares it"
            )
        folders.append(folder)
    return folders
