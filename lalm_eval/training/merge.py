"""A peft adapter merged into a copy of its base model (``merge_and_unload``), for backends that
cannot apply it themselves: vLLM applies LoRA to the language model only, and not at all for some
architectures (Qwen2-Audio in vLLM 0.32); ``--model vllm --model_args pretrained=BASE,peft=DIR,
merge_peft=true`` serves the merged copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from lalm_eval.errors import ConfigError

#: weight files of a model folder, which the merged model's own ``save_pretrained`` replaces
_WEIGHTS = ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json", "*.pt", "*.pth")


def merge_peft(pretrained: str, peft_dir: str, out: str | Path) -> Path:
    """Load ``pretrained`` (its ``config.json`` ``architectures[0]``, a transformers class), apply the
    peft adapter of ``peft_dir``, merge it (``merge_and_unload``) and save the result with the base
    folder's tokenizer / processor / chat-template files in ``out``; returns ``out``."""
    import transformers

    from lalm_eval.extras import require

    PeftModel = require("peft", f"model arg peft={peft_dir}").PeftModel
    base = Path(pretrained).expanduser()
    if not (base / "config.json").is_file():
        raise ConfigError(f"merge_peft: pretrained={pretrained} must be a local model folder (config.json)")
    archs = json.loads((base / "config.json").read_text(encoding="utf-8")).get("architectures") or []
    cls = next((getattr(transformers, a) for a in archs if hasattr(transformers, a)), None)
    if cls is None:
        raise ConfigError(f"merge_peft: {base}: no transformers class for architectures {archs}")
    model = cls.from_pretrained(str(base), dtype="auto")
    try:
        peft_model = PeftModel.from_pretrained(model, str(Path(peft_dir).expanduser()))
    except (ValueError, KeyError, RuntimeError) as exc:
        raise ConfigError(f"merge_peft: the adapter {peft_dir} does not fit {base} ({cls.__name__}): {exc}") from exc
    # peft loads weights that name no module of the model without an error: the merge would drop them
    from lalm_eval.training.recipes import peft_components

    adapted = {n.removeprefix("base_model.model.") for n, m in peft_model.named_modules() if hasattr(m, "lora_A")}
    missing = sorted(n for names in peft_components(peft_dir).values() for n in names if n not in adapted)
    if missing:
        raise ConfigError(
            f"merge_peft: the adapter {peft_dir} holds weights for {len(missing)} module(s) that "
            f"{cls.__name__} ({base}) does not have, e.g. {missing[:3]}: was it trained on another "
            "model class?"
        )
    merged = peft_model.merge_and_unload()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(str(out))
    weights = {p for pat in _WEIGHTS for p in base.glob(pat)}
    for path in base.iterdir():  # tokenizer, processor, chat template, generation config
        if path.is_file() and path not in weights and not (out / path.name).exists():
            shutil.copy2(path, out / path.name)
    return out
