"""``load_dataset`` for local folders without stale rows.

``datasets`` keys its cache of a local folder's files on their modification times alone, so a
folder rebuilt in place, a copy made with ``cp -p``/``copytree``, or a link re-pointed at another
build can be served the rows of an earlier one (measured: a copied folder returned the rows of a
different build with the same mtimes). :func:`load_dataset_fresh` gives each local folder a cache
directory of its own, keyed by its content (resolved path, each file's relative path, size and
mtime in ns); Hub ids load as ``datasets`` loads them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def folder_cache_dir(folder: Path, cache_root: Path) -> Path:
    """``cache_root/hf_datasets/<hash of the folder's content>``."""
    root = Path(folder).resolve()
    h = hashlib.sha256(str(root).encode())
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        st = f.stat()
        h.update(f"{f.relative_to(root).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return Path(cache_root) / "hf_datasets" / h.hexdigest()[:20]


def load_dataset_fresh(path, name: str | None = None, *, split: str | None = None, cache_root=None, **kwargs):
    """``datasets.load_dataset(path, name, split=split, **kwargs)``; a local folder gets a content-keyed
    ``cache_dir`` under ``cache_root`` (default: the ``datasets`` cache) unless ``cache_dir`` is given."""
    import datasets

    if Path(str(path)).is_dir() and "cache_dir" not in kwargs:
        root = Path(cache_root) if cache_root is not None else Path(datasets.config.HF_DATASETS_CACHE) / "lalm_eval"
        kwargs["cache_dir"] = str(folder_cache_dir(Path(str(path)), root))
    return datasets.load_dataset(str(path), name, split=split, **kwargs)
