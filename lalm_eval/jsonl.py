"""JSON helpers: reading JSON-lines manifests with errors that name the file and line, and the
``default=`` hook that writes numpy values, sets, paths and dates."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from lalm_eval.errors import DataError


def json_default(value):
    """``json.dumps(default=...)``: numpy scalars/arrays, sets (sorted), paths, dates."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def iter_jsonl(path: Path, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict]]:
    """``(line number, record)`` of every non-empty line; invalid JSON or a missing required
    field raises :class:`DataError` naming ``path``, the line and the field."""
    for lineno, raw in enumerate(Path(path).read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"invalid JSON ({exc.msg})", line=lineno) from None
        if not isinstance(rec, dict):
            raise DataError(path, "each line must be a JSON object", line=lineno)
        for field in required:
            if field not in rec or rec[field] in (None, ""):
                raise DataError(path, "manifest line: missing value", field=field, line=lineno)
        yield lineno, rec
