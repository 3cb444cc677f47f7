"""One SQLite table of rows by key, shared by processes and threads: what the response cache
(:mod:`lalm_eval.cache`) and the judge cache (:mod:`lalm_eval.judges.cache`) are built on.

WAL mode and a busy timeout let several processes (data-parallel ranks, a rerun beside a
running job) read while one writes; every :meth:`SqliteStore._insert` commits at once, so a
killed run loses at most the rows in flight. Subclasses name the table and its columns and
convert rows to and from their own objects.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from lalm_eval.errors import LalmEvalError

BUSY_TIMEOUT_S = 120.0
_SQL_VARS = 500  # keys per SELECT ... IN (...)


class SqliteStore:
    #: table name, and its columns after ``key`` as ``(name, SQL type)``
    TABLE: str = ""
    COLUMNS: tuple[tuple[str, str], ...] = ()
    KIND: str = "store"  # what the file is, for error messages

    def __init__(self, path: str | Path, busy_timeout_s: float = BUSY_TIMEOUT_S):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        columns = ", ".join(f"{name} {kind}" for name, kind in self.COLUMNS)
        try:
            self._db = sqlite3.connect(
                str(self.path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute(f"CREATE TABLE IF NOT EXISTS {self.TABLE} (key TEXT PRIMARY KEY, {columns})")
            have = {row[1] for row in self._db.execute(f"PRAGMA table_info({self.TABLE})")}
            for name, kind in self.COLUMNS:  # a file written by an older version gains new columns
                if name not in have:
                    self._db.execute(f"ALTER TABLE {self.TABLE} ADD COLUMN {name} {kind}")
        except sqlite3.DatabaseError as exc:
            raise LalmEvalError(f"{self.path}: cannot open the {self.KIND} ({exc})") from exc

    def _select(self, keys: Iterable[str], columns: Sequence[str]) -> list[tuple]:
        """``(key, *columns)`` of the stored rows among ``keys`` (duplicates asked once)."""
        keys = list(dict.fromkeys(keys))
        rows: list[tuple] = []
        with self._lock:
            for i in range(0, len(keys), _SQL_VARS):
                chunk = keys[i : i + _SQL_VARS]
                rows += self._db.execute(
                    f"SELECT key, {', '.join(columns)} FROM {self.TABLE} WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
        return rows

    def _insert(self, rows: list[tuple]) -> int:
        """Insert or replace ``(key, *COLUMNS)`` rows in one transaction; returns how many."""
        if not rows:
            return 0
        names = ["key"] + [name for name, _ in self.COLUMNS]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    f"INSERT OR REPLACE INTO {self.TABLE} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                    rows,
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return len(rows)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute(f"SELECT COUNT(*) FROM {self.TABLE}").fetchone()[0]

    def __contains__(self, key: str) -> bool:
        return bool(self._select([key], ["key"]))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
