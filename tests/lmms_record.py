"""Run lmms-eval or lalm-eval with every Qwen2-Audio processor call recorded: the chat-templated
prompt texts and the audio each harness hands the model, so that tests/test_lmms_stage.py can
compare what reached the model, not only what came back.

    python tests/lmms_record.py lmms  RECORD.json -- <lmms-eval arguments>   (in .venv-lmms)
    python tests/lmms_record.py lalm  RECORD.json -- <lalm-eval arguments>   (in .venv)

RECORD.json: one entry per processor call, ``{"text": [...], "audio": [[n_samples, sha256 of the
float32 samples], ...]}``. Nothing of either harness is changed: the processor class's
``__call__`` is wrapped, then the harness's own command line runs.
"""

from __future__ import annotations

import hashlib
import json
import sys


def _audio_id(a) -> list:
    import numpy as np

    arr = np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    return [int(arr.size), hashlib.sha256(arr.tobytes()).hexdigest()]


def record_processor(calls: list) -> None:
    from transformers import Qwen2AudioProcessor

    original = Qwen2AudioProcessor.__call__

    def recorded(self, *args, **kwargs):
        text = kwargs.get("text", args[0] if args else None)
        audio = kwargs.get("audio") or []
        calls.append(
            {"text": [text] if isinstance(text, str) else list(text or []), "audio": [_audio_id(a) for a in audio]}
        )
        return original(self, *args, **kwargs)

    Qwen2AudioProcessor.__call__ = recorded


def main(argv: list[str]) -> int:
    harness, out, sep, *rest = argv
    if sep != "--" or harness not in ("lmms", "lalm"):
        raise SystemExit("usage: lmms_record.py {lmms|lalm} RECORD.json -- ARGS")
    calls: list = []
    record_processor(calls)
    try:
        if harness == "lmms":
            from lmms_eval.__main__ import cli_evaluate

            sys.argv = ["lmms-eval", *rest]
            cli_evaluate()
            code = 0
        else:
            from lalm_eval.cli import main as lalm_main

            code = lalm_main(rest)
    finally:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(calls, f)
    return int(code or 0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
