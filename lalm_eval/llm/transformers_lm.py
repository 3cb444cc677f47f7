"""A local Hugging Face causal LM as a :class:`~lalm_eval.llm.base.TextLLM` (registered as ``hf``).

``TransformersChatLLM("/path/or/hub-id")`` formats every chat with the tokenizer's chat template,
generates greedily (``temperature=0``; sampling otherwise) in batches of ``batch_size`` chats with
left padding (chats sorted by length, so a batch wastes little padding; replies come back in the
caller's order), and decodes only the new tokens.

transformers and torch are imported, and the model loaded, on the first :meth:`complete`, so a
rescoring served entirely from a judge cache never loads the model. :attr:`settings` records the
model path and a weights fingerprint (:func:`lalm_eval.fingerprint.model_fingerprint`: every
model file by its whole content, or the Hub commit of a Hub snapshot) plus that commit, so a cache
keyed on these settings never serves replies of other weights.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lalm_eval.errors import ConfigError
from lalm_eval.llm.base import LLMError, Messages, TextLLM, check_batch

log = logging.getLogger(__name__)

_CALL_SETTINGS = {"temperature", "max_tokens", "max_new_tokens"}


def weights_fingerprint(folder: str | Path) -> str:
    """:func:`lalm_eval.fingerprint.model_fingerprint` of the model files in ``folder`` (whole
    contents, digests cached; a Hub snapshot by its commit); a folder without weights is an error."""
    from lalm_eval.fingerprint import model_fingerprint

    return model_fingerprint(folder, require_weights=True)


class TransformersChatLLM(TextLLM):
    """Batched chat generation with a local transformers causal LM (see the module docstring)."""

    def __init__(
        self,
        pretrained: str,
        device: str = "auto",
        dtype: str = "auto",
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        batch_size: int = 8,
    ):
        if not pretrained:
            raise ConfigError("TransformersChatLLM: pretrained (a folder or Hub id) must be given")
        if int(batch_size) < 1 or int(max_new_tokens) < 1 or float(temperature) < 0:
            raise ConfigError(
                f"TransformersChatLLM: need batch_size >= 1, max_new_tokens >= 1, temperature >= 0; "
                f"got {batch_size}, {max_new_tokens}, {temperature}"
            )
        self.pretrained, self.device_request, self.dtype = str(pretrained), str(device), str(dtype)
        self.max_new_tokens, self.temperature = int(max_new_tokens), float(temperature)
        self.batch_size = int(batch_size)
        self._folder: Path | None = None
        self._fingerprint: str | None = None
        self._model = self._tokenizer = self._device = None

    def __repr__(self) -> str:
        return f"TransformersChatLLM(pretrained={self.pretrained!r})"

    # ---- identity -----------------------------------------------------------------------------

    def folder(self) -> Path:
        """The local model folder (a Hub id is resolved through the Hub cache, downloading once)."""
        if self._folder is None:
            path = Path(self.pretrained).expanduser()
            if path.is_dir():
                self._folder = path.resolve()
            else:
                from huggingface_hub import snapshot_download

                try:
                    self._folder = Path(snapshot_download(self.pretrained))
                except Exception as exc:  # noqa: BLE001 - any Hub/network failure is a config error here
                    raise ConfigError(
                        f"TransformersChatLLM: {self.pretrained!r} is neither a folder nor a "
                        f"downloadable Hub model ({type(exc).__name__}: {exc})"
                    ) from None
        return self._folder

    @property
    def settings(self) -> dict:
        if self._fingerprint is None:
            self._fingerprint = weights_fingerprint(self.folder())
        out = {
            "backend": "hf",
            "model": self.pretrained,
            "weights": self._fingerprint,
            "temperature": self.temperature,
            "max_tokens": self.max_new_tokens,
            "dtype": self.dtype,
            "batch_size": self.batch_size,
        }
        folder = self.folder()
        if folder.parent.name == "snapshots":  # a Hub cache snapshot: its folder name is the commit
            out["revision"] = folder.name
        return out

    # ---- generation ---------------------------------------------------------------------------

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = self.device_request
        cuda = torch.cuda.is_available()
        # "auto" spreads a model over every visible GPU (accelerate's device_map), else the CPU
        device_map = ("auto" if cuda else "cpu") if device == "auto" else device
        dtype: Any = self.dtype
        if dtype == "auto" and device_map == "cpu":
            dtype = torch.float32  # half precision on CPU is slow and not what checkpoints expect
        elif dtype != "auto":
            dtype = getattr(torch, dtype, None)
            if not isinstance(dtype, torch.dtype):
                raise ConfigError(f"TransformersChatLLM: unknown dtype {self.dtype!r} (e.g. bfloat16, float32)")
        folder = self.folder()
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError(f"{folder}: the tokenizer has no chat template")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype, device_map=device_map).eval()
        self._model, self._tokenizer, self._device = model, tokenizer, model.device  # inputs go to the first device
        log.info("loaded %s on %s (%s)", folder, device_map, model.dtype)

    def complete(self, batch: list[Messages], **settings: Any) -> list[str]:
        check_batch(batch)
        unknown = set(settings) - _CALL_SETTINGS
        if unknown:
            raise ConfigError(
                f"TransformersChatLLM: unsupported settings {sorted(unknown)}; supported: {sorted(_CALL_SETTINGS)}"
            )
        if not batch:
            return []
        temperature = float(settings.get("temperature", self.temperature))
        max_new = int(settings.get("max_new_tokens", settings.get("max_tokens", self.max_new_tokens)))
        self._load()
        tok = self._tokenizer
        try:
            texts = [tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=False) for chat in batch]
        except Exception as exc:  # noqa: BLE001 - a template error names the model, not a stack
            raise LLMError(f"{self.pretrained}: chat template failed: {type(exc).__name__}: {exc}") from None
        lengths = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])  # stable: equal lengths keep order
        replies: list[str | None] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            for i, reply in zip(idx, self._generate([texts[i] for i in idx], temperature, max_new)):
                replies[i] = reply
        return replies  # type: ignore[return-value]

    def _generate(self, texts: list[str], temperature: float, max_new: int) -> list[str]:
        import torch

        tok, model = self._tokenizer, self._model
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self._device)
        kwargs: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": tok.pad_token_id}
        if getattr(model.generation_config, "eos_token_id", None) is None and tok.eos_token_id is not None:
            kwargs["eos_token_id"] = tok.eos_token_id
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        try:
            with torch.inference_mode():
                out = model.generate(**enc, **kwargs)
        except (RuntimeError, ValueError) as exc:
            raise LLMError(f"{self.pretrained}: generation failed: {type(exc).__name__}: {exc}") from None
        new = out[:, enc["input_ids"].shape[1] :]
        return [t.strip() for t in tok.batch_decode(new, skip_special_tokens=True)]
