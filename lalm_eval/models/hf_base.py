"""``HFAudioAdapter``: what the Hugging Face audio-LM adapters share, and the generic ``hf-audio``.

One batch = one ``model.generate`` call: each request's messages → chat template (``tokenize=False,
add_generation_prompt=True``); the texts and *all* audios of the batch, in order (resampled from
16 kHz to the feature extractor's rate) → ``processor(text=, audio=, sampling_rate=, padding=True)``,
left-padded; the prompt tokens are cut off the output, decoded with ``skip_special_tokens``. A
failing batch is retried sample by sample; a sample that still fails gets ``Response(None, error)``.
Model and processor load lazily (``identity()`` needs neither). Batching, ``batch_size="auto"``
and gen kwargs (``max_gen_toks``, ``until``): see ``batching.py``.

``hf-audio`` (this class as is) loads ``transformers.<config.architectures[0]>`` + ``AutoProcessor``;
a remote-code model (``auto_map`` in its config: MiDashengLM, Kimi-Audio's Hub folder) loads through
the Auto class its ``auto_map`` names, only with ``trust_remote_code=true``.
Limits: the processor must take ``text=, audio=, sampling_rate=`` and have a chat template that
understands ``{"type": "audio"}`` parts; models with another prompt format, placeholder scheme or
generate call (multi-stage pipelines, talkers, bespoke remote code) need a subclass; audio longer
than the feature extractor's window: see ``long_audio`` below.

Long audio (:mod:`lalm_eval.models.long_audio`): ``AUDIO_LIMIT_S`` is what the model hears of each
audio part (Qwen2-Audio and Qwen2.5-Omni: 30 s, their feature extractors cut the rest; the generic
``hf-audio``: none known). Model arg ``long_audio=truncate`` (default) cuts explicitly at the limit,
``refuse`` fails such requests as ``audio_over_limit``, ``chunk`` sends consecutive ≤ limit parts;
every response records ``audio_s``, ``seen_s`` and ``truncated``.

Training outputs (``lalm-eval train``, :mod:`lalm_eval.training`): model arg ``peft=DIR`` loads a
peft adapter (any LoRA placement, the audio tower's included) onto ``pretrained``;
``soft_prompts=DIR`` the per-speaker soft prompts (each request's ``subjects`` get their tokens
after each mention of their name, :mod:`lalm_eval.training.soft_prompts`; a subject without tokens
in the folder is an error); a merged or fully fine-tuned checkpoint is just ``pretrained=``. The
adapter's and soft prompts' file hashes enter ``identity()`` (the cache key).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from lalm_eval.api import AUDIO_SR, Adapter, Request, Response
from lalm_eval.audio.io import resample
from lalm_eval.errors import AudioError, ConfigError, LalmEvalError
from lalm_eval.models.batching import (
    plan_batches,
    replan,
    resolve_batch_size,
    resolve_device,
    resolve_dtype,
    split_gen_kwargs,
    truncate_at,
)
from lalm_eval.models.long_audio import LongAudioError, fit_request, resolve_policy

log = logging.getLogger(__name__)
#: small files fetched to resolve a Hub id's commit (the identity of a Hub model is its commit)
HASHED_FILES = (
    "config.json",
    "generation_config.json",
    "preprocessor_config.json",
    "processor_config.json",
    "chat_template.jinja",
    "chat_template.json",
    "tokenizer_config.json",
    "tokenizer.json",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)


def fingerprint(pretrained: str) -> str:
    """The model's :func:`lalm_eval.fingerprint.model_fingerprint`: a folder's weights, configs,
    tokenizer/processor files and remote code by their whole content (digests cached by path, size,
    mtime and ctime, so a big folder is read once); a Hub id by its resolved commit."""
    from lalm_eval.fingerprint import model_fingerprint, resolve_hub

    folder = Path(pretrained).expanduser()
    if not folder.is_dir():
        folder = resolve_hub(str(pretrained), HASHED_FILES)
    if not (folder / "config.json").is_file():
        raise ConfigError(f"{folder}: no config.json, not a transformers model folder")
    return model_fingerprint(folder)


def _folder_hash(folder: Path, patterns: tuple[str, ...]) -> str:
    """The :func:`lalm_eval.fingerprint.folder_fingerprint` of the files of ``folder`` matching
    ``patterns`` (a peft adapter's config and weights)."""
    from lalm_eval.fingerprint import folder_fingerprint

    return folder_fingerprint(folder, sorted({p for pat in patterns for p in folder.glob(pat) if p.is_file()}))


def _config_dict(pretrained: str) -> dict:
    """The model's ``config.json`` as a dict (local folder or cached Hub file), without building a config."""
    import json

    from transformers.utils import cached_file

    path = cached_file(pretrained, "config.json", _raise_exceptions_for_missing_entries=False)
    if not path:
        raise ConfigError(f"model {pretrained!r}: no config.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _parts(message: dict) -> list:
    return list(c) if isinstance(c := message.get("content"), (list, tuple)) else []


def _transformers_version() -> str:
    """The installed version without importing transformers (seconds of start-up on a cache hit)."""
    from importlib.metadata import version

    return version("transformers")


class HFAudioAdapter(Adapter):
    name = "hf-audio"
    model_class_name: str | None = None  # transformers class; None → config.architectures[0]
    #: processor outputs that carry audio features (one must be present when audio is sent)
    AUDIO_KEYS = ("input_features", "input_values", "audio_values", "audio_input_features")
    ONE_ROW_PER_AUDIO = False  # check that the features have exactly one row per audio
    AUDIO_PART_KEY: str | None = "audio"  # key added to {"type": "audio"} parts, for templates testing it

    def __init__(
        self,
        pretrained: str,
        device: str = "auto",
        dtype: str = "auto",
        max_audio_seconds_per_batch: float | str | None = None,
        trust_remote_code: bool | str = False,
        long_audio: str | None = None,
        peft: str | None = None,
        soft_prompts: str | None = None,
    ):
        super().__init__()
        if not pretrained:
            raise ConfigError(f"{self.name}: model argument 'pretrained' (a folder or Hub id) is required")
        self.pretrained = str(pretrained)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)  # a name: torch is imported only to run the model
        cap = max_audio_seconds_per_batch  # CLI model_args arrive as strings
        self.max_audio_seconds = None if cap in (None, "", "none", "None") else float(cap)
        self.trust_remote_code = str(trust_remote_code).lower() in ("1", "true", "yes")
        self.long_audio = resolve_policy(long_audio, self.LONG_AUDIO_DEFAULT, self.AUDIO_LIMIT_SCOPE, self.name)
        self.n_failed = 0  # requests that got Response(None, error)
        self._model = self._processor = self._identity = None
        self.peft = str(peft) if peft else None  # a peft adapter folder (lalm-eval train, LoRA recipes)
        self.soft_prompts_path = str(soft_prompts) if soft_prompts else None
        self.soft_prompts = None  # lalm_eval.training.soft_prompts.SoftPrompts, loaded on first use
        if self.peft and not (Path(self.peft).expanduser() / "adapter_config.json").is_file():
            raise ConfigError(
                f"{self.name}: peft={self.peft}: no adapter_config.json there (a peft adapter folder, "
                f"e.g. the output_dir of `lalm-eval train --recipe lora_*`)"
            )

    def identity(self) -> dict:
        """Computed once per adapter (it hashes files); loads no weights."""
        self._identity = self._identity or {
            "name": self.name,
            "pretrained": self.pretrained,
            "config_hash": fingerprint(self.pretrained),
            "dtype": self.dtype,
            "transformers": _transformers_version(),
            "long_audio": self.long_audio,
        }
        if self.peft and "peft_hash" not in self._identity:
            self._identity.update(
                peft=self.peft,
                peft_hash=_folder_hash(Path(self.peft).expanduser(), ("adapter_config.json", "adapter_model.*")),
            )
        if self.soft_prompts_path and "soft_prompts_hash" not in self._identity:
            from lalm_eval.training.soft_prompts import fingerprint_folder

            self._identity.update(
                soft_prompts=self.soft_prompts_path, soft_prompts_hash=fingerprint_folder(self.soft_prompts_path)
            )
        return dict(self._identity)

    @property
    def model(self):
        self.load()
        return self._model

    @property
    def processor(self):
        if self._processor is None:
            self._processor = self.load_processor()
            tok = getattr(self._processor, "tokenizer", self._processor)
            tok.padding_side = "left"
            if tok.pad_token is None and tok.eos_token is not None:
                tok.pad_token = tok.eos_token
        return self._processor

    tokenizer = property(lambda self: getattr(self.processor, "tokenizer", self.processor))
    sampling_rate = property(
        lambda self: int(getattr(getattr(self.processor, "feature_extractor", None), "sampling_rate", None) or AUDIO_SR)
    )

    #: ``auto_map`` entries of a remote-code model, in the order tried (``from_pretrained`` of that
    #: Auto class then imports the model's own code from its folder)
    REMOTE_AUTO_CLASSES = ("AutoModelForCausalLM", "AutoModelForSpeechSeq2Seq", "AutoModelForSeq2SeqLM", "AutoModel")

    def resolve_model_class(self):
        """The transformers class of ``config.architectures[0]``; for a remote-code model (its
        config has an ``auto_map``), the Auto class that loads the model's own code — only with
        ``trust_remote_code=true``, since that runs Python shipped with the weights."""
        import transformers

        if self.model_class_name:
            return getattr(transformers, self.model_class_name)
        raw = _config_dict(self.pretrained)
        name = (raw.get("architectures") or [""])[0]
        if getattr(transformers, name, None):
            return getattr(transformers, name)
        auto_map = raw.get("auto_map") or {}
        if auto_map:
            if not self.trust_remote_code:
                raise ConfigError(
                    f"{self.pretrained}/config.json: {name or 'the model'} is remote code (auto_map: "
                    f"{sorted(auto_map)}); pass trust_remote_code=true to run the model's own code"
                )
            for key in self.REMOTE_AUTO_CLASSES:
                if key in auto_map:
                    return getattr(transformers, key)
            raise ConfigError(
                f"{self.pretrained}/config.json: auto_map has no model class among "
                f"{list(self.REMOTE_AUTO_CLASSES)} (has {sorted(auto_map)})"
            )
        raise ConfigError(
            f"{self.pretrained}/config.json: field 'architectures': {name!r} is not a class "
            f"of transformers {transformers.__version__}"
        )

    def load_processor(self):
        import transformers

        return transformers.AutoProcessor.from_pretrained(self.pretrained, trust_remote_code=self.trust_remote_code)

    @property
    def torch_dtype(self):
        import torch

        return getattr(torch, self.dtype)

    def load(self) -> None:
        if self._model is not None:
            return
        cls, tok = self.resolve_model_class(), self.tokenizer
        model = cls.from_pretrained(
            self.pretrained, dtype=self.torch_dtype, device_map=self.device, trust_remote_code=self.trust_remote_code
        )
        if model.generation_config.pad_token_id is None:
            model.generation_config.pad_token_id = tok.pad_token_id
        if self.peft:
            from lalm_eval.extras import require

            PeftModel = require("peft", f"model arg peft={self.peft}").PeftModel
            model = PeftModel.from_pretrained(model, str(Path(self.peft).expanduser()))
        self._model = model.eval()

    def convert_messages(self, messages) -> list[dict]:
        """Our messages → what the chat template expects (audio parts get ``AUDIO_PART_KEY``)."""
        key, count = self.AUDIO_PART_KEY, iter(range(1, 1 << 30))
        return [
            {
                **m,
                "content": [
                    {key: f"audio_{next(count)}.wav", **p} if key and p.get("type") == "audio" else p
                    for p in m["content"]
                ],
            }
            if _parts(m)
            else m
            for m in messages
        ]

    def render_prompt(self, request: Request) -> str:
        return self.processor.apply_chat_template(
            self.convert_messages(request.messages), tokenize=False, add_generation_prompt=True
        )

    def prepare_audio(self, audio, request: Request) -> np.ndarray:
        where = f"task {request.task!r} doc {request.doc_id}"
        audio = np.asarray(audio, dtype=np.float32)
        if audio.ndim != 1 or audio.size == 0:
            raise AudioError(f"{where}: audio must be non-empty mono 1-D, got shape {audio.shape}")
        if not np.all(np.isfinite(audio)):
            raise AudioError(f"{where}: audio contains NaN or infinite samples")
        return resample(audio, AUDIO_SR, self.sampling_rate)

    def load_soft_prompts(self):
        """The per-speaker soft prompts of ``soft_prompts=`` (None without), loaded once."""
        if self.soft_prompts is None and self.soft_prompts_path:
            from lalm_eval.training.soft_prompts import SoftPrompts

            self.soft_prompts = SoftPrompts.load(self.soft_prompts_path, self.tokenizer)
        return self.soft_prompts

    def build_inputs(self, requests: list[Request]):
        if self.load_soft_prompts() is not None:  # placeholders after each subject's name
            requests = [self.soft_prompts.mark(r) for r in requests]
        for r in requests:
            n_parts = sum(p.get("type") == "audio" for m in r.messages for p in _parts(m))
            if n_parts != len(r.audios):
                raise ConfigError(
                    f"task {r.task!r} doc {r.doc_id}: {n_parts} audio parts in the messages, {len(r.audios)} audios"
                )
        texts = [self.render_prompt(r) for r in requests]
        audios = [self.prepare_audio(a, r) for r in requests for a in r.audios]
        kwargs = dict(text=texts, return_tensors="pt", padding=True)
        if audios:
            kwargs.update(audio=audios, sampling_rate=self.sampling_rate)
        return self.check_inputs(self.processor(**kwargs), len(audios))

    def check_inputs(self, inputs, n_audios: int):
        """Fail loudly when audio was sent but no audio features came back (the ``audios=`` trap)."""
        keys = [k for k in self.AUDIO_KEYS if k in inputs]
        if n_audios and not keys:
            raise LalmEvalError(
                f"{type(self.processor).__name__} returned no audio features "
                f"({sorted(inputs)}) for {n_audios} audios: it ignored the audio"
            )
        if n_audios and self.ONE_ROW_PER_AUDIO and inputs[keys[0]].shape[0] != n_audios:
            raise LalmEvalError(f"{keys[0]} has {inputs[keys[0]].shape[0]} rows for {n_audios} audios")
        return inputs

    def generate_batch(self, requests: list[Request]) -> list[str]:
        """One ``model.generate`` call; all requests share their gen kwargs (``plan_batches``)."""
        import torch

        gen_kwargs, stops = split_gen_kwargs(requests[0].gen_kwargs)
        inputs, model = self.build_inputs(requests), self.model
        inputs = {
            k: (v.to(self.device, self.torch_dtype) if v.is_floating_point() else v.to(self.device))
            if torch.is_tensor(v)
            else v
            for k, v in inputs.items()
        }
        soft, splice = self.load_soft_prompts(), None
        if soft is not None:
            soft.attach(model)
            splice = soft.applied(inputs["input_ids"], inputs["attention_mask"], [soft.mentions(r) for r in requests])
        with torch.inference_mode(), splice or contextlib.nullcontext():
            out = model.generate(**inputs, **gen_kwargs)
        out = getattr(out, "sequences", out)
        if not getattr(model.config, "is_encoder_decoder", False):
            out = out[:, inputs["input_ids"].shape[1] :]
        return [truncate_at(t, stops) for t in self.tokenizer.batch_decode(out, skip_special_tokens=True)]

    def _alone(self, request: Request, exc: Exception | None = None) -> Response:
        try:
            if exc is None:
                return Response(self.generate_batch([request])[0])
        except Exception as err:  # noqa: BLE001 - recorded per sample, never scored as ""
            exc = err
        log.warning("%s: task %r doc %s failed: %r", self.name, request.task, request.doc_id, exc)
        return Response(None, error=repr(exc))

    def fit(self, requests: list[Request]) -> tuple[list[int], list[Request], list[dict], dict[int, Response]]:
        """Each request under the long-audio policy: ``(indices kept, fitted requests, their meta,
        refused responses by index)``."""
        kept, fitted, metas, refused = [], [], [], {}
        for i, req in enumerate(requests):
            try:
                req, meta = fit_request(req, self.AUDIO_LIMIT_S, self.AUDIO_LIMIT_SCOPE, self.long_audio)
            except LongAudioError as exc:
                refused[i] = Response.failed("audio_over_limit", str(exc))
                continue
            if meta["truncated"]:
                log.info(
                    "%s: task %r doc %s: %.1f s of audio, %.1f s heard (long_audio=truncate)",
                    self.name,
                    req.task,
                    req.doc_id,
                    meta["audio_s"],
                    meta["seen_s"],
                )
            kept.append(i)
            fitted.append(req)
            metas.append(meta)
        return kept, fitted, metas, refused

    def generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        requests = list(requests)
        if self.load_soft_prompts() is not None:  # a subject without tokens fails the run, not a sample
            self.soft_prompts.check(requests)
        kept, fitted, metas, refused = self.fit(requests)
        self.n_failed += len(refused)
        done = self._generate(fitted, batch_size) if fitted else []
        out: list[Response | None] = [refused.get(i) for i in range(len(requests))]
        for i, resp, meta in zip(kept, done, metas):
            out[i] = dataclasses.replace(resp, meta={**meta, **resp.meta})
        return out

    def _generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        import torch

        max_batch, adaptive = resolve_batch_size(batch_size, self.device.startswith("cuda"))
        results: list[Response | None] = [None] * len(requests)
        queue = plan_batches(requests, max_batch, self.max_audio_seconds)
        with tqdm(total=len(requests), desc=self.name, unit="sample", disable=None) as bar:
            while queue:
                batch = queue.pop(0)
                reqs = [requests[i] for i in batch]
                try:
                    done = [Response(t) for t in self.generate_batch(reqs)]
                except Exception as exc:  # noqa: BLE001 - halved (auto OOM) or retried alone
                    if adaptive and len(batch) > 1 and isinstance(exc, torch.cuda.OutOfMemoryError):
                        torch.cuda.empty_cache()
                        max_batch = max(1, min(max_batch, len(batch)) // 2)
                        log.warning("%s: CUDA OOM at %d samples; cap now %d", self.name, len(batch), max_batch)
                        queue = replan(requests, [batch] + queue, max_batch, self.max_audio_seconds)
                        continue
                    if len(batch) > 1:
                        log.warning("%s: batch of %d failed (%r); one by one", self.name, len(batch), exc)
                    done = [self._alone(r, None if len(batch) > 1 else exc) for r in reqs]
                for i, resp in zip(batch, done):
                    results[i] = resp
                ok = sum(r.text is not None for r in done)
                self.n_generated += ok
                self.n_failed += len(done) - ok
                bar.update(len(batch))
        return results
