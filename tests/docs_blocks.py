"""The fenced shell blocks of README.md and docs/*.md, with the marker on the line before each
(docs/index.md, "How the commands on these pages are tested")."""

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELL = {"bash", "sh", "console", "shell"}
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(run|help|skip)\b(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
OURS = {"lalm-eval", "palm-bench", "msu-bench"}
FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")


@dataclass
class Block:
    page: str
    line: int  # the fence's line, 1-based
    lang: str
    text: str
    mode: str | None  # run | help | skip, None: no marker
    options: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    def commands(self) -> list[str]:
        """Command lines: continuations joined, `$ ` prompts of console blocks only, comments cut."""
        lines = self.text.splitlines()
        if self.lang == "console":
            lines = [ln[2:] for ln in lines if ln.startswith("$ ")]
        joined, cur = [], ""
        for ln in lines:
            cur += ln
            if cur.endswith("\\"):
                cur = cur[:-1] + " "
                continue
            joined.append(cur)
            cur = ""
        if cur:
            joined.append(cur)
        return [c for c in (re.sub(r"(^|\s)#.*$", "", cmd).strip() for cmd in joined) if c]


def pages() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def blocks(path: Path) -> list[Block]:
    rel = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        j = i + 1
        while j < len(lines) and not re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[j]):
            j += 1
        if lang in SHELL:
            body = "\n".join(ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines[i + 1 : j])
            mode, options = None, {}
            k = i - 1
            mm = MARKER.match(lines[k]) if k >= 0 else None
            if mm:
                mode = mm.group(1)
                rest = mm.group(2).strip()
                if mode == "skip":
                    options["reason"] = rest.lstrip(":").strip()
                else:
                    for word in rest.split():
                        key, _, value = word.partition("=")
                        options[key] = value or True
            found.append(Block(rel, i + 1, lang, body, mode, options))
        i = j + 1
    return found


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def invocations(command: str) -> list[tuple[str, str | None, list[str]]]:
    """(program, subcommand or None, --flags) of each command of ours on a command line; `|`, `;`
    and `&&` split commands only outside `[...]` (the docs' notation for optional flags)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    segments, cur, depth = [], [], 0
    for w in words:
        if depth == 0 and w in {"|", "||", "&&", ";"}:
            segments.append(cur)
            cur = []
            continue
        depth += w.count("[") - w.count("]")
        cur.append(w)
    segments.append(cur)
    found = []
    for seg in segments:
        for n, w in enumerate(seg):  # python -m lalm_eval.cli / accelerate launch ... -m lalm_eval.cli
            if w == "-m" and n + 1 < len(seg) and seg[n + 1] == "lalm_eval.cli":
                seg = ["lalm-eval"] + seg[n + 2 :]
                break
        while seg and re.match(r"^[A-Za-z_]\w*=", seg[0]):  # VAR=value before the program
            seg = seg[1:]
        if not seg or Path(seg[0]).name not in OURS:
            continue
        sub = seg[1] if len(seg) > 1 and re.match(r"^[a-z][a-z-]*$", seg[1]) else None
        flags = sorted({f for w in seg[1:] if "://" not in w for f in FLAG.findall(w)})
        found.append((Path(seg[0]).name, sub, flags))
    return found
