"""Whether an environment's install stamp already covers what scripts/install.sh is asked for.

    python scripts/install_stamp.py STAMP_TEXT PYPROJECT_DIGEST EXTRAS CHECKOUT   → prints yes / no

The stamp (``<env>/.lalm-eval-install``) is one line: ``<pyproject digest> <pip target> <checkout>``,
e.g. ``db27386b7610a3d9 .[dev] <checkout folder>``. It covers a request when the digest and the checkout
are the same and the requested extras are among the installed ones; ``dev`` stands for every extra
pyproject's ``dev`` pulls in (``[project.optional-dependencies] dev``, read from the checkout's
pyproject.toml), so the main job's ``train,asr`` needs nothing more after the tests' install.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: without tomllib, dev stands for itself alone
    tomllib = None


def extras_of(text: str) -> set[str]:
    return {e.strip() for e in text.split(",") if e.strip()}


def dev_extras(checkout: str) -> set[str]:
    """The extras pyproject's ``dev`` extra names (``lalm-eval[api,train,...]``)."""
    path = Path(checkout) / "pyproject.toml"
    if tomllib is None or not path.is_file():
        return set()
    deps = tomllib.loads(path.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return {e for d in deps.get("dev", []) for m in re.findall(r"^lalm-eval\[([^\]]*)\]", d) for e in extras_of(m)}


def covered(stamp: str, digest: str, wanted: str, checkout: str) -> bool:
    parts = stamp.strip().split(" ", 2)
    if len(parts) != 3 or parts[0] != digest or parts[2] != checkout:
        return False
    have = extras_of(re.sub(r"^\.\[?|\]$", "", parts[1]))
    if "dev" in have:
        have |= dev_extras(checkout)
    return extras_of(wanted) <= have


if __name__ == "__main__":
    print("yes" if covered(*sys.argv[1:5]) else "no")
