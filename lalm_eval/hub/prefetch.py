"""Compute ahead in a few threads, deliver in order: audio decoding, mixing and encoding release
the GIL (libsndfile, numpy, soxr), so a build on several cores renders while the Arrow writer
writes. Results come back in input order, so the output bytes do not depend on the threads."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def prefetched(fn: Callable[[T], R], items: Iterable[T], window: int = 16) -> Iterator[tuple[T, R]]:
    """``(item, fn(item))`` for each item, in order; at most ``window`` results are computed
    ahead of the consumer (bounded memory). An exception of ``fn`` is raised at its item."""
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=workers()) as pool:
        for item in items:
            pending.append((item, pool.submit(fn, item)))
            if len(pending) >= window:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()


def map_ordered(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[fn(item) for item in items]``, computed by a few threads."""
    with ThreadPoolExecutor(max_workers=workers()) as pool:
        return list(pool.map(fn, items))
