"""One SQLite table of rows by key, shared by processes and threads: what the response cache
(:mod:`lalm_eval.cache`), the judge cache (:mod:`lalm_eval.judges.cache`), the text-LLM reply
cache, the metric-value cache and the file-hash cache are built on.

WAL mode and a busy timeout (:data:`BUSY_TIMEOUT_S`, or ``$LALM_EVAL_BUSY_TIMEOUT`` seconds) let
several processes (data-parallel ranks, a rerun beside a running job) read while one writes;
every :meth:`SqliteStore._insert` commits at once, so a killed run loses at most the rows in
flight. Subclasses name the table, its columns and what the file is (``KIND``, used in every
message) and convert rows to and from their own objects. Every string a store writes passes
:func:`lalm_eval.redaction.redact` (no API key reaches a cache file).

What goes wrong with the file, and what happens (each a :class:`StoreError`, exit 2 from the
command lines, naming the file and its kind):

- the folder cannot be made (a file is in the way), the path is a folder, the file is not SQLite,
  its table is not this store's (no ``key`` primary key: another program's or an incompatible
  version's file; an older version's file that lacks some columns just gains them): nothing is
  touched; the message says what to move.
- the file is damaged (``PRAGMA quick_check`` at open, or an error while reading or writing): the
  damaged file (with its ``-wal``) is renamed to ``<name>.damaged-<stamp>``, never deleted, and
  every row still readable is copied into a fresh file under the old name (:func:`salvage`); the
  message says how many rows were kept. A rerun resumes from them.
- another process holds a write transaction past the busy timeout (checked at open, before any
  work, and at each write): the message says so.
- a write that fails (damage, lock, full disk) keeps its rows in ``<name>.unsaved-<pid>-<stamp>.jsonl``
  beside the file; the next open adds them to the store and removes that file. Nothing computed
  is lost.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from lalm_eval.errors import DataError
from lalm_eval.redaction import redact

BUSY_TIMEOUT_S = 120.0
BUSY_TIMEOUT_ENV = "LALM_EVAL_BUSY_TIMEOUT"
_SQL_VARS = 500  # keys per SELECT ... IN (...)
_MAX_PROBES = 1_000_000  # rowids tried one by one when salvaging a damaged table
_SQLITE_MAGIC = b"SQLite format 3\x00"
_DAMAGED = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})
_LOCKED = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED"})


class StoreError(DataError):
    """A store's file cannot be used (see the module docstring); the message names the file."""


def default_busy_timeout() -> float:
    value = os.environ.get(BUSY_TIMEOUT_ENV, "").strip()
    if not value:
        return BUSY_TIMEOUT_S
    try:
        seconds = float(value)
    except ValueError:
        raise StoreError(BUSY_TIMEOUT_ENV, f"{value!r} is not a number of seconds; set it to e.g. 120") from None
    if not seconds >= 0:
        raise StoreError(BUSY_TIMEOUT_ENV, f"{value!r} must be >= 0 seconds; set it to e.g. 120")
    return seconds


def _plain(text) -> str:
    """``text`` fit for the 'what' part of a one-line error (no ``;``, no line breaks)."""
    return " ".join(str(text).replace(";", ",").split())


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"


def _error_name(exc: sqlite3.Error) -> str:
    name = getattr(exc, "sqlite_errorname", "") or ""
    if not name:  # an error raised without a code: known by its text
        text = str(exc).lower()
        if "malformed" in text:
            name = "SQLITE_CORRUPT"
        elif "not a database" in text:
            name = "SQLITE_NOTADB"
        elif "locked" in text:
            name = "SQLITE_BUSY"
    return "_".join(name.split("_")[:2])  # SQLITE_CORRUPT_INDEX, SQLITE_BUSY_SNAPSHOT: their primary code


def _sidecar_glob(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.unsaved-*.jsonl"))


class SqliteStore:
    #: table name, and its columns after ``key`` as ``(name, SQL type)``
    TABLE: str = ""
    COLUMNS: tuple[tuple[str, str], ...] = ()
    KIND: str = "store"  # what the file is, for error messages

    def __init__(self, path: str | Path, busy_timeout_s: float | None = None):
        self.path = Path(path)
        self.busy_timeout_s = default_busy_timeout() if busy_timeout_s is None else float(busy_timeout_s)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._check_place()
        try:
            self._open()
        except StoreError:
            self._disconnect()
            raise
        except sqlite3.Error as exc:
            self._disconnect()
            self._fail(exc, "opening it")
        self._import_unsaved()

    # -- opening ---------------------------------------------------------------------------------

    def _check_place(self) -> None:
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), folder)
            raise StoreError(
                blocker,
                f"is a file, so the {self.KIND} {self.path.name} cannot be kept under it; point the cache "
                "folder (--cache_dir, LALM_EVAL_CACHE) at a folder, or move that file away",
            ) from None
        except OSError as exc:
            raise StoreError(
                folder,
                f"cannot make the folder of the {self.KIND} ({_plain(exc.strerror or exc)}); "
                "choose a cache folder you can write to (--cache_dir, LALM_EVAL_CACHE)",
            ) from None
        if self.path.is_dir():
            raise StoreError(
                self.path,
                f"is a folder, not the {self.KIND} file; move it away or choose another cache folder",
            )

    def _open(self) -> None:
        columns = ", ".join(f"{name} {kind}" for name, kind in self.COLUMNS)
        self._db = sqlite3.connect(
            str(self.path), timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        db = self._db
        db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        check = db.execute("PRAGMA quick_check(1)").fetchone()
        if not check or check[0] != "ok":
            raise sqlite3.DatabaseError(f"quick_check: {check[0] if check else 'no answer'}")
        db.execute(f"CREATE TABLE IF NOT EXISTS {self.TABLE} (key TEXT PRIMARY KEY, {columns})")
        info = list(db.execute(f"PRAGMA table_info({self.TABLE})"))
        if not any(row[1] == "key" and row[5] == 1 for row in info) or sum(row[5] > 0 for row in info) != 1:
            raise StoreError(
                self.path,
                f"its table {self.TABLE!r} has no 'key' primary key (columns {', '.join(r[1] for r in info)}), "
                f"so it is not a {self.KIND} this version can use (another program's file, or an incompatible "
                "version's); move it away or delete it, then rerun (the cache starts empty)",
            )
        have = {row[1] for row in info}
        for name, kind in self.COLUMNS:  # a file written by an older version gains new columns
            if name not in have:
                db.execute(f"ALTER TABLE {self.TABLE} ADD COLUMN {name} {kind}")
        db.execute("BEGIN IMMEDIATE")  # can this process write? (a lock held past the busy timeout, read-only)
        db.execute("ROLLBACK")
        self._inode = os.stat(self.path).st_ino

    def _follow_repair(self) -> None:
        """Reconnect when the file at :attr:`path` is no longer the one opened (another instance or
        process set a damaged file aside and salvaged it into a fresh one), so no row is written
        into, or read from, the damaged copy."""
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:  # removed while in use: rows go to a new file, not to the removed one
            inode = None
        if self._db is None or inode != self._inode:
            self._disconnect()
            self._open()

    _inode: int | None = None

    def _disconnect(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None

    # -- what went wrong -------------------------------------------------------------------------

    def _fail(self, exc: sqlite3.Error, doing: str, unsaved: Path | None = None):
        """Raise the :class:`StoreError` for ``exc`` (salvaging a damaged file first)."""
        kept = f" (the rows being written are kept in {unsaved.name} and added on the next run)" if unsaved else ""
        name = _error_name(exc)
        reason = _plain(exc)
        if name == "SQLITE_NOTADB" and not self._has_magic():
            raise StoreError(
                self.path,
                f"is not a SQLite file, so it cannot be the {self.KIND} ({reason}){kept}; move it away or "
                f"delete it, then rerun (the {self.KIND} starts empty)",
            ) from None
        if name in _DAMAGED or reason.startswith("quick_check"):
            self._disconnect()
            damaged, n_rows = self._set_aside_and_salvage()
            self._disconnect()  # the command stops here: the fresh file is used by the rerun
            raise StoreError(
                self.path,
                f"the {self.KIND} is damaged ({reason}), found while {doing}{kept}, and was repaired: the damaged "
                f"file is kept as {damaged.name} and its {n_rows} readable rows are in a fresh {self.path.name}; "
                "rerun the command to resume from them (rows that could not be read are computed again)",
            ) from None
        if name in _LOCKED:
            raise StoreError(
                self.path,
                f"another process held a write lock on the {self.KIND} for more than the busy timeout of "
                f"{self.busy_timeout_s:g} s while {doing} ({reason}){kept}; wait for it to finish (or close the "
                f"program holding it) and rerun, or use another cache folder (the timeout: {BUSY_TIMEOUT_ENV})",
            ) from None
        raise StoreError(
            self.path,
            f"the {self.KIND} failed while {doing} ({reason}){kept}; check that the disk is not full and the "
            "file and its folder are writable, then rerun",
        ) from None

    def _has_magic(self) -> bool:
        try:
            with open(self.path, "rb") as f:
                return f.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
        except OSError:
            return False

    def _set_aside_and_salvage(self) -> tuple[Path, int]:
        """Rename the damaged file (and its ``-wal`` / ``-shm``) to ``<name>.damaged-<stamp>`` and
        copy its readable rows into a fresh file at :attr:`path`; ``(damaged path, rows kept)``."""
        damaged = self.path.with_name(f"{self.path.name}.damaged-{_stamp()}")
        for suffix in ("-wal", "-shm", ""):  # the main file last: a store found at path is never half-moved
            src = Path(str(self.path) + suffix)
            if src.exists():
                os.replace(src, Path(str(damaged) + suffix))
        names = ["key"] + [name for name, _ in self.COLUMNS]
        rows = salvage(damaged, self.TABLE, names)
        try:
            self._open()
            self._insert_rows(rows)
        except sqlite3.Error as exc:  # the fresh file cannot be written either: say so, keep the rows
            self._disconnect()
            unsaved = self._write_unsaved(rows)
            raise StoreError(
                self.path,
                f"the {self.KIND} was damaged and a fresh one cannot be written ({_plain(exc)}), the damaged file "
                f"is kept as {damaged.name} and its readable rows in {unsaved.name if unsaved else 'nothing'}; "
                "check the disk, then rerun",
            ) from None
        return damaged, len(rows)

    # -- rows not written ------------------------------------------------------------------------

    def _write_unsaved(self, rows: Sequence[tuple]) -> Path | None:
        """``rows`` as JSON lines beside the store (written whole, then renamed into place)."""
        if not rows:
            return None
        target = self.path.with_name(f"{self.path.name}.unsaved-{_stamp()}-{threading.get_ident()}.jsonl")
        tmp = target.with_name(target.name + ".tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(list(row), ensure_ascii=False) + "\n")
            os.replace(tmp, target)
        except OSError:
            return None
        return target

    def _import_unsaved(self) -> None:
        """Add the rows earlier runs could not write (``<name>.unsaved-*.jsonl``), then remove those files."""
        width = 1 + len(self.COLUMNS)
        for file in _sidecar_glob(self.path):
            try:
                rows = [tuple(json.loads(line)) for line in file.read_text(encoding="utf-8").splitlines() if line]
            except (OSError, ValueError):
                continue  # being written, or not ours: left as it is
            rows = [r for r in rows if len(r) == width]
            self._insert(rows)
            try:
                file.unlink()
            except FileNotFoundError:
                pass

    # -- rows ----------------------------------------------------------------------------------------

    def _select(self, keys: Iterable[str], columns: Sequence[str]) -> list[tuple]:
        """``(key, *columns)`` of the stored rows among ``keys`` (duplicates asked once)."""
        keys = list(dict.fromkeys(keys))
        rows: list[tuple] = []
        with self._lock:
            try:
                self._follow_repair()
                for i in range(0, len(keys), _SQL_VARS):
                    chunk = keys[i : i + _SQL_VARS]
                    rows += self._db.execute(
                        f"SELECT key, {', '.join(columns)} FROM {self.TABLE} "
                        f"WHERE key IN ({','.join('?' * len(chunk))})",
                        chunk,
                    ).fetchall()
            except sqlite3.Error as exc:
                self._fail(exc, "reading it")
        return rows

    def _insert(self, rows: list[tuple]) -> int:
        """Insert or replace ``(key, *COLUMNS)`` rows in one transaction (strings redacted); returns how many."""
        if not rows:
            return 0
        rows = [(row[0], *(redact(v) if isinstance(v, str) else v for v in row[1:])) for row in rows]
        with self._lock:
            try:
                self._follow_repair()
                self._insert_rows(rows)
            except sqlite3.Error as exc:
                self._fail(exc, "writing to it", unsaved=self._write_unsaved(rows))
        return len(rows)

    def _insert_rows(self, rows: list[tuple]) -> None:
        names = ["key"] + [name for name, _ in self.COLUMNS]
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(
                f"INSERT OR REPLACE INTO {self.TABLE} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                rows,
            )
        except BaseException:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            try:
                self._follow_repair()
                return self._db.execute(f"SELECT COUNT(*) FROM {self.TABLE}").fetchone()[0]
            except sqlite3.Error as exc:
                self._fail(exc, "counting its rows")

    def __contains__(self, key: str) -> bool:
        return bool(self._select([key], ["key"]))

    def close(self) -> None:
        with self._lock:
            self._disconnect()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def salvage(path: str | Path, table: str, columns: Sequence[str]) -> list[tuple]:
    """The rows of ``table`` still readable in the damaged SQLite file ``path`` (opened read-only),
    as tuples of ``columns`` (a column the file lacks reads None).

    Python's :mod:`sqlite3` has no ``.recover``; instead the rowids are gathered from a forward and
    a backward scan of the table and from its primary-key index (each stops at the first damaged
    page, the others reach past it), the rowids in between are tried one by one (up to
    :data:`_MAX_PROBES`), and each row is read alone, so one damaged page loses only its rows."""
    try:
        db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error:
        return []
    try:
        try:
            have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        except sqlite3.Error:
            return []
        wanted = ", ".join(c if c in have else "NULL" for c in columns)
        ids: set[int] = set()
        for sql in (
            f"SELECT rowid FROM {table}",
            f"SELECT rowid FROM {table} ORDER BY rowid DESC",
            f"SELECT rowid FROM {table} INDEXED BY sqlite_autoindex_{table}_1 ORDER BY key",
        ):
            try:
                for (rowid,) in db.execute(sql):
                    ids.add(rowid)
            except sqlite3.Error:
                continue
        top = max(ids, default=0)
        probes = sorted(ids | set(range(1, min(top, _MAX_PROBES) + 1)))
        rows, seen = [], set()
        for rowid in probes:
            try:
                row = db.execute(f"SELECT {wanted} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
            except sqlite3.Error:
                continue
            if row is not None and isinstance(row[0], str) and row[0] not in seen:
                seen.add(row[0])
                rows.append(tuple(row))
        return rows
    finally:
        db.close()
