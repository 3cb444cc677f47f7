"""``load_dataset`` for local folders without stale rows, and with clear errors.

``datasets`` keys its cache of a local folder's files on their modification times alone, so a
folder rebuilt in place, a copy made with ``cp -p``/``copytree``, or a link re-pointed at another
build can be served the rows of an earlier one (measured: a copied folder returned the rows of a
different build with the same mtimes). :func:`load_dataset_fresh` gives each local folder a cache
directory of its own, keyed by its content (resolved path, each file's relative path, size and
mtime in ns); Hub ids load as ``datasets`` loads them.

Before anything is read, what a command could only report as a ``datasets`` traceback becomes a
:class:`~lalm_eval.errors.DataError` naming the folder, what is wrong and the fix: an interrupted
build (a half-built folder, or only the temporary sibling it left: :func:`lalm_eval.hub.atomic.check_loadable`),
a config or split the folder's card does not list (with the ones it does), a path that is neither
a folder nor a Hub id, a Hub that cannot be reached, a folder with no data file ``datasets`` reads
(an empty folder, or one holding only a README without a ``configs`` block).
:func:`require_build` is for the tasks' ``prepare_dataset`` hooks: a folder under their dataset's
bare name that is not a build (no card with configs) is refused with the hook's own fix.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from lalm_eval.errors import DataError, LalmEvalError

CONFIG_FIX = "rebuild the folder with that config, or leave out the tasks that read it"
SPLIT_FIX = "set the task's split (test_split, or the split asked for) to one of them, or rebuild with that split"


def folder_cache_dir(folder: Path, cache_root: Path) -> Path:
    """``cache_root/hf_datasets/<hash of the folder's content>``."""
    root = Path(folder).resolve()
    h = hashlib.sha256(str(root).encode())
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        st = f.stat()
        h.update(f"{f.relative_to(root).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return Path(cache_root) / "hf_datasets" / h.hexdigest()[:20]


def check_dataset(path, name: str | None = None, split: str | None = None) -> None:
    """Raise the :class:`DataError` that loading ``path`` (config ``name``, ``split``) would end in,
    where it can be told without reading the data (module docstring); return quietly otherwise."""
    from lalm_eval.hub.atomic import check_loadable

    folder = Path(str(path))
    check_loadable(folder)  # interrupted builds, under the final name or beside it
    if not folder.is_dir():
        if not _looks_like_hub_id(str(path)):
            raise DataError(
                path, "no such folder, and not a Hub dataset id (owner/name); build it first, or correct the path"
            )
        return
    from lalm_eval.hub.card import card_configs

    found = card_configs(folder)
    if found is None:
        return
    configs, default = found
    if name is not None and name not in configs:
        raise DataError(
            folder, f"no config {name!r}{_why_missing(folder, name)} (its configs: {', '.join(configs)}); {CONFIG_FIX}"
        )
    config = name if name is not None else default
    base = split.strip() if isinstance(split, str) else None
    if config in configs and base and re.fullmatch(r"[\w.-]+", base) and base not in configs[config]:
        raise DataError(
            folder, f"config {config!r} has no split {base!r} (its splits: {', '.join(configs[config])}); {SPLIT_FIX}"
        )


def require_build(folder, fix: str) -> Path:
    """``folder`` when it holds a build (a ``README.md`` card with a ``configs`` block); else the
    :class:`DataError` of an interrupted build (:func:`lalm_eval.hub.atomic.check_loadable`), or
    one saying it is not a build (what is missing, what is there) followed by ``fix``."""
    from lalm_eval.hub.atomic import check_loadable
    from lalm_eval.hub.card import CARD_NAME, card_configs

    folder = Path(folder)
    check_loadable(folder)
    if card_configs(folder) is not None:
        return folder
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    there = f"it holds {', '.join(entries[:4])}" + (f" and {len(entries) - 4} more" if len(entries) > 4 else "")
    missing = f"{CARD_NAME} has no configs block" if (folder / CARD_NAME).is_file() else f"no {CARD_NAME} card"
    raise DataError(
        folder,
        f"in {Path.cwd()}: not a dataset build ({missing}, {there if entries else 'it is empty'}); {fix}",
    )


def load_dataset_fresh(path, name: str | None = None, *, split: str | None = None, cache_root=None, **kwargs):
    """``datasets.load_dataset(path, name, split=split, **kwargs)``; a local folder gets a content-keyed
    ``cache_dir`` under ``cache_root`` (default: the ``datasets`` cache) unless ``cache_dir`` is given.

    Raises :class:`DataError` (naming the folder or id, what is wrong and the fix) for an interrupted
    build, a missing config or split, a path that does not exist, an unreachable Hub
    (:func:`check_dataset`, then what ``datasets`` itself raises for those)."""
    import datasets

    check_dataset(path, name, split)
    if Path(str(path)).is_dir() and "cache_dir" not in kwargs:
        root = Path(cache_root) if cache_root is not None else Path(datasets.config.HF_DATASETS_CACHE) / "lalm_eval"
        kwargs["cache_dir"] = str(folder_cache_dir(Path(str(path)), root))
    try:
        return datasets.load_dataset(str(path), name, split=split, **kwargs)
    except LalmEvalError:
        raise
    except datasets.data_files.EmptyDatasetError as exc:  # a local folder without data files
        raise DataError(
            path,
            "holds no data file datasets can read (no README.md card with a configs block, no Parquet, "
            "CSV, JSON or audio files); give the folder a build wrote, build into this one, or remove it",
        ) from exc
    except ValueError as exc:  # datasets: no such config / split (what check_dataset could not see)
        text = " ".join(str(exc).split()).replace(";", ",")
        if "BuilderConfig" in text or "Config name is missing" in text:
            raise DataError(path, f"config {name!r}: {text}; {CONFIG_FIX}") from exc
        if "Unknown split" in text or "Bad split" in text:
            raise DataError(path, f"split {split!r}: {text}; {SPLIT_FIX}") from exc
        raise
    except ConnectionError as exc:  # a Hub id, offline or unreachable
        text = " ".join(str(exc).split()).replace(";", ",")
        raise DataError(
            path,
            f"not a local folder, and the Hub could not be reached ({text}); check the path, or go online "
            "(a Hub dataset loaded once before also loads with HF_HUB_OFFLINE=1)",
        ) from exc


def _looks_like_hub_id(text: str) -> bool:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(text)
    except HFValidationError:
        return False
    return True


def _why_missing(folder: Path, name: str) -> str:
    """Why the build left config ``name`` out, when its ``build_info.json`` says (``empty_configs``)."""
    try:
        empty = json.loads((folder / "build_info.json").read_text(encoding="utf-8")).get("empty_configs") or []
    except (OSError, ValueError, AttributeError):
        return ""
    return ": the build planned no rows for it (build_info.json empty_configs)" if name in empty else ""
