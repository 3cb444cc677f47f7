"""Model adapters: ``MODELS`` maps a name to an :class:`lalm_eval.api.Adapter` class.

Entries are lazy (``"module:attr"``): naming a model imports only its module. Plug-ins register
through the ``lalm_eval.models`` entry-point group. ``qwen3_omni`` is listed only when the
installed transformers has ``Qwen3OmniMoeThinkerForConditionalGeneration``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from lalm_eval.registry import Registry

MODELS = Registry("model", entry_point_group="lalm_eval.models")
MODELS.register("hf-audio", "lalm_eval.models.hf_base:HFAudioAdapter")
MODELS.register("qwen2_audio", "lalm_eval.models.qwen2_audio:Qwen2AudioAdapter")
MODELS.register("qwen2_5_omni", "lalm_eval.models.qwen_omni:Qwen25OmniThinkerAdapter")
MODELS.register("cascade", "lalm_eval.models.cascade:CascadeAdapter")
MODELS.register("openai_audio", "lalm_eval.models.openai_audio:OpenAIAudioAdapter")
MODELS.register("gemini", "lalm_eval.models.gemini:GeminiAdapter")
MODELS.register("vllm", "lalm_eval.models.vllm_adapter:VLLMAdapter")


def _has_qwen3_omni() -> bool:
    """Whether transformers ships the Qwen3-Omni thinker (its module file; transformers not imported)."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.origin:
        return False
    module = Path(spec.origin).parent / "models" / "qwen3_omni_moe" / "modeling_qwen3_omni_moe.py"
    return module.is_file() and "class Qwen3OmniMoeThinkerForConditionalGeneration(" in module.read_text("utf-8")


if _has_qwen3_omni():
    MODELS.register("qwen3_omni", "lalm_eval.models.qwen_omni:Qwen3OmniThinkerAdapter")

#: the Hugging Face adapters of one architecture each, asked (by ``config.json`` ``model_type``)
#: which ``--model`` loads a folder given to another one
HF_ADAPTERS = ("qwen2_audio", "qwen2_5_omni", "qwen3_omni")

__all__ = ["HF_ADAPTERS", "MODELS"]
