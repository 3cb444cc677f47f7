"""Seeds and random generators that are stable across processes and machines.

Python's ``hash`` of a string changes per process; these derive seeds from SHA-256 instead, so
the same (seed, key) gives the same numbers everywhere, and adding an item never reshuffles the
random choices made for another.
"""

from __future__ import annotations

import hashlib

import numpy as np


def stable_int(*parts) -> int:
    """A 63-bit integer from strings/ints, identical in every process."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def rng_for(seed: int, *parts) -> np.random.Generator:
    """A generator seeded by ``seed`` and the key ``parts``."""
    return np.random.default_rng([seed, stable_int(*parts)])
