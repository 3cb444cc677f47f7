"""Which of the paper's steps a build does the paper's way, and which it replaces.

The steps and their texts are data (``deviations.yaml``): captioning references (LLM-written in
the paper, Table 24), subject descriptions (Qwen3-Omni-Thinking, Table 23) and negative grading
(SpeechBrain ``spkrec-ecapa-voxceleb``, §4.1). :func:`resolve` runs before planning:

- a step the build *asks* for the paper's way but cannot run (``--caption-reference summary``
  without ``--llm``, ``--encoder ecapa`` without SpeechBrain) is an error naming the fix, unless
  its key is in ``allowed_deviations`` (``--allow-deviation KEY``): then the build does it this
  project's way (transcripts, resemblyzer) and records it;
- a step done this project's way (the ``small`` preset's defaults) is a deviation: under
  ``require_paper_steps: true`` (the ``paper`` preset) an error unless allowed, else recorded.

Every deviation of a build goes into its card and ``build_info.json`` (``deviations``): what the
paper does, what was done, why, and the flags that remove it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.util
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError, UnknownNameError

DEVIATIONS_FILE = Path(__file__).resolve().with_name("deviations.yaml")
FLAG = "--allow-deviation"


@functools.cache
def deviation_table() -> dict[str, dict[str, str]]:
    """``{key: {step, paper, ours, fix}}`` in the file's order."""
    data = yaml.safe_load(DEVIATIONS_FILE.read_text(encoding="utf-8"))
    return {
        str(k): {f: " ".join(str(v[f]).split()) for f in ("step", "paper", "ours", "fix")}
        for k, v in data["deviations"].items()
    }


def deviation_keys() -> list[str]:
    return list(deviation_table())


def close_key(word: str) -> str | None:
    """The deviation key closest to ``word``, matched whole or by its words (``captoin`` →
    ``caption_reference``), or None."""
    names = {k: k for k in deviation_keys()} | {part: k for k in deviation_keys() for part in k.split("_")}
    close = difflib.get_close_matches(str(word), list(names), n=1, cutoff=0.6)
    return names[close[0]] if close else None


def check_keys(keys, where: str = FLAG) -> None:
    """Every key one of :func:`deviation_keys`; a miss names ``where`` and the close key."""
    known = deviation_keys()
    for key in keys:
        if key not in known:
            close = close_key(key)
            hint = f"did you mean {close!r}? " if close else ""
            raise UnknownNameError(
                f"{where} {key}: unknown deviation key {key!r}; {hint}keys: {', '.join(known)} (palm_bench/deviations.yaml)"
            )


def encoder_problem(encoder: str, options: dict) -> str | None:
    """Why the ``ecapa`` encoder cannot be built here (its packages, a local source folder), or None."""
    if encoder != "ecapa":
        return None
    missing = [m for m in ("speechbrain", "torchaudio") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed"
    source = str(options.get("source", ""))
    if source and (source.startswith((".", "/", "~")) or Path(source).expanduser().exists()):
        folder = Path(source).expanduser()
        if not (folder / "hyperparams.yaml").is_file():
            return f"the encoder source {source} is not a SpeechBrain model folder (no hyperparams.yaml)"
    return None


def resolve(cfg, llm, where: str = "build config field 'require_paper_steps'"):
    """``(config the build runs, [deviation records], [keys done the paper's way])``; raises
    :class:`ConfigError` before any planning (module docstring)."""
    from palm_bench.caption_references import check_kind

    allowed = set(cfg.allowed_deviations)
    problems: dict[str, str] = {}  # key -> why the step is not done the paper's way
    fallback: dict[str, dict] = {}  # key -> config changes that do it this project's way
    if cfg.caption_reference == "transcript":
        problems["caption_reference"] = "the build writes transcript references (caption_reference: transcript)"
    elif cfg.caption_reference != "summary+qa" and llm is not None:
        problems["caption_reference"] = (
            f"the build uses one of Table 24's two prompts (caption_reference: {cfg.caption_reference})"
        )
    elif llm is None:
        problems["caption_reference"] = (
            f"--caption-reference {cfg.caption_reference} needs a text LLM and none is given"
        )
        fallback["caption_reference"] = {"caption_reference": "transcript"}
    if cfg.description_model is None:
        problems["descriptions"] = "no audio model is given to write them (description_model)"
    if cfg.encoder != "ecapa":
        problems["negative_encoder"] = f"the build grades with {cfg.encoder!r} (encoder)"
    else:
        why = encoder_problem(cfg.encoder, cfg.encoder_options)
        if why:
            problems["negative_encoder"] = f"--encoder ecapa cannot run here: {why}"
            fallback["negative_encoder"] = {"encoder": "resemblyzer", "encoder_options": {}}
    table = deviation_table()
    refused = [k for k in problems if k not in allowed and (cfg.require_paper_steps or k in fallback)]
    if refused and not cfg.require_paper_steps:
        if "caption_reference" in refused:
            check_kind(cfg.caption_reference, llm)  # its own message (needs --llm)
        key = refused[0]
        raise ConfigError(
            f"--encoder {cfg.encoder}: {problems[key].split(': ', 1)[-1]}; {table[key]['fix']}, "
            f"or pass {FLAG} {key} to grade with resemblyzer"
        )
    if refused:
        what = ", ".join(f"{table[k]['step']}: {problems[k]}" for k in refused)
        fixes = " | ".join(table[k]["fix"] for k in refused)
        allow = " ".join(f"{FLAG} {k}" for k in refused)
        raise ConfigError(
            f"{where}: {len(refused)} of the paper's steps cannot be done as the paper does them "
            f"({what.replace(';', ',')}); to follow the paper pass {fixes}; to build anyway with "
            f"this project's replacements pass {allow} (the card and build_info.json then list each deviation)"
        )
    for key in problems:
        if key in fallback:
            cfg = dataclasses.replace(cfg, **fallback[key])
    records = [
        {
            "key": key,
            "step": table[key]["step"],
            "paper": table[key]["paper"],
            "done": table[key]["ours"],
            "why": problems[key],
            "fix": table[key]["fix"],
            "allowed": key in allowed,
        }
        for key in table
        if key in problems
    ]
    return cfg, records, [k for k in table if k not in problems]
