"""No file of the repository cites a path of one machine: the team's shared folder (its notes, the
papers' text files, recipes) or a home directory. Sources are cited by title (papers), by
repository (the MSU release) or by the project's own docs (docs/*.md); tests that need the papers'
text read it through LALM_EVAL_PAPERS (tests/papers.py)."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# spelt in pieces so that this file does not match itself
MACHINE_PATHS = re.compile(
    "|".join(
        [
            "/" + "work/",  # the team's machines: a checkout and the shared folder live there
            r"\.\./" + "shared/",
            "shared/" + "(?:seeds|notes|recipes)",
            "/" + r"home/[a-z_][\w.-]*/",
            "/" + "root/",
            "/" + r"Users/[A-Za-z]",
        ]
    )
)


def tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = [ROOT / p for p in out.decode().split("\0") if p]
    return [f for f in files if f.is_file() and b"\0" not in f.read_bytes()[:4096]]


def test_no_tracked_file_names_a_path_of_one_machine():
    found = []
    for path in tracked_text_files():
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if MACHINE_PATHS.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}")
    assert not found, "paths of one machine (cite by title / repository / docs/ instead):\n" + "\n".join(found)


def test_the_pattern_catches_what_it_must():
    for bad in (
        "see /" + "work/" + "main/x.py",
        "../" + "shared/" + "seeds/000.txt",
        "/" + "home/alice/data",
        "/" + "root/.cache",
    ):
        assert MACHINE_PATHS.search(bad), bad
    for fine in ("docs/msu_release.md", "ASLP-lab/MSU-Bench", "tmp_path / 'home'", "https://example.org/x/work"):
        assert not MACHINE_PATHS.search(fine), fine
