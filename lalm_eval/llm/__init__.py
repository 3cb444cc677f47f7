"""Text-LLM backends: one small interface (:class:`TextLLM`) and a registry of backends.

``get_text_llm("openai", model=..., base_url=...)`` builds a backend by name; backends are
registered lazily (``"module:attr"``), and plug-ins add more through the entry-point group
``lalm_eval.text_llms``. Callers record ``llm.settings`` next to whatever the LLM produced.
"""

from lalm_eval.llm.base import TEXT_LLMS, LLMError, TextLLM, parse_json_reply, strip_thinking
from lalm_eval.llm.options import get_text_llm

__all__ = ["TEXT_LLMS", "LLMError", "TextLLM", "get_text_llm", "parse_json_reply", "strip_thinking"]
