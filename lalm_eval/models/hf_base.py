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
audio part, read from the checkpoint when the processor loads (:attr:`HFAudioAdapter.audio_limit`,
:mod:`lalm_eval.models.audio_limits`): the adapter's ``AUDIO_LIMIT_RULE`` applied to the loaded
feature extractor (Qwen2.5-Omni: its ``n_samples / sampling_rate``, the checkpoint's
``chunk_length``; Qwen2-Audio: its encoder's fixed 3000-frame input, 30 s; Qwen3-Omni: none), for
``hf-audio`` the rule of the loaded processor's class (``audio_limits.yaml``). Model arg
``long_audio=truncate`` (default) cuts explicitly at the limit, ``refuse`` fails such requests as
``audio_over_limit``, ``chunk`` sends consecutive ≤ limit parts; every response records
``audio_s``, ``seen_s`` and ``truncated``.

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
import json
import logging
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from lalm_eval.api import AUDIO_SR, LONG_AUDIO_POLICIES, Adapter, Request, Response
from lalm_eval.audio.io import resample
from lalm_eval.errors import AudioError, ConfigError, LalmEvalError
from lalm_eval.models.audio_limits import AudioLimit, resolve, rule_for_processor
from lalm_eval.models.batching import (
    cuda_available,
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


def _feature_extractor_file(pretrained: str) -> str:
    """The file a model folder's feature extractor loads from (transformers 5 saves it inside
    ``processor_config.json`` when a processor is saved), for the audio limit's source."""
    folder = Path(pretrained).expanduser()
    if folder.is_dir() and not (folder / "preprocessor_config.json").is_file():
        if (folder / "processor_config.json").is_file():
            return "processor_config.json feature_extractor"
    return "preprocessor_config.json"


def _parts(message: dict) -> list:
    return list(c) if isinstance(c := message.get("content"), (list, tuple)) else []


def _transformers_version() -> str:
    """The installed version without importing transformers (seconds of start-up on a cache hit)."""
    from importlib.metadata import version

    return version("transformers")


def user_path(value: str) -> str:
    """``value`` with a leading ``~`` expanded (``pretrained=~/models/x``: the shell leaves a ``~``
    after ``=`` alone, and transformers would take it for a Hub id); anything else unchanged."""
    return os.path.expanduser(value) if value.startswith("~") else value


def arg_error(arg: str, value, what: str, fix: str) -> ConfigError:
    """A model arg's error in the one shape: ``--model_args ARG=VALUE: what; fix``."""
    shown = " ".join(str(value).replace(";", ",").split())
    return ConfigError(f"--model_args {arg}={shown}: {what}; {fix}")


def _mps_available() -> bool:
    """Whether torch has an MPS device: Apple silicon under macOS only (no torch import elsewhere)."""
    if sys.platform != "darwin":
        return False
    import torch

    return bool(torch.backends.mps.is_available())


def checked_device(device) -> str:
    """``device`` resolved (:func:`~lalm_eval.models.batching.resolve_device`), or an error naming
    ``--model_args device=`` when it does not exist here (an MPS device off macOS, CUDA without
    a GPU, ``cuda:N`` past the last GPU)."""
    d = str(device or "auto").strip().lower()
    fix = "use cpu, or cuda where torch sees a GPU (auto picks what there is)"
    if d == "mps" and not _mps_available():
        where = "this is not macOS on Apple silicon" if sys.platform != "darwin" else "torch has no MPS support here"
        raise arg_error("device", device, f"no MPS device ({where})", fix)
    if d.startswith("cuda") and not cuda_available():
        raise arg_error("device", device, "torch sees no CUDA device here", fix)
    if d.startswith("cuda:"):
        import torch

        n = torch.cuda.device_count()
        if d[5:].isdigit() and int(d[5:]) >= n:
            raise arg_error("device", device, f"torch sees {n} CUDA device(s), numbered from 0", fix)
    try:
        return resolve_device(device)
    except ConfigError:
        raise arg_error("device", device, "not a device", "give auto, cpu, cuda, cuda:N or mps") from None


def _positive_seconds(value) -> float | None:
    if value is None or str(value).strip() in ("", "none", "None"):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        raise arg_error(
            "max_audio_seconds_per_batch",
            value,
            "not a number of seconds > 0",
            "give e.g. max_audio_seconds_per_batch=300 (or leave it out: no cap)",
        )
    return number


def _flag(arg: str, value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", "", "none"):
        return False
    raise arg_error(arg, value, "not true or false", f"give {arg}=true or {arg}=false")


def adapter_for(model_type) -> str | None:
    """The registered Hugging Face adapter that loads ``model_type`` (its ``MODEL_TYPES``), else
    ``hf-audio`` when a type is named; only the built-in ``HF_ADAPTERS`` are imported."""
    from lalm_eval.models import HF_ADAPTERS, MODELS

    for name in HF_ADAPTERS:
        if name in MODELS and model_type in getattr(MODELS.get(name), "MODEL_TYPES", ()):
            return name
    return "hf-audio" if model_type else None


class ModelLoadError(ConfigError):
    """The processor or the model of ``pretrained=`` does not load (:meth:`HFAudioAdapter.loading`)."""


#: weight files transformers loads from a folder
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


class HFAudioAdapter(Adapter):
    name = "hf-audio"
    model_class_name: str | None = None  # transformers class; None → config.architectures[0]
    #: processor outputs that carry audio features (one must be present when audio is sent)
    AUDIO_KEYS = ("input_features", "input_values", "audio_values", "audio_input_features")
    ONE_ROW_PER_AUDIO = False  # check that the features have exactly one row per audio
    AUDIO_PART_KEY: str | None = "audio"  # key added to {"type": "audio"} parts, for templates testing it
    #: ``config.json`` ``model_type`` values this adapter loads (empty: any, the class its
    #: ``architectures`` names); a folder of another type is an error naming the ``--model`` for it
    MODEL_TYPES: tuple[str, ...] = ()
    #: the shortest audio part the model can hear, in samples at 16 kHz (0: no minimum known);
    #: shorter parts fail as ``audio_too_short`` before the model runs (see the subclasses)
    MIN_AUDIO_SAMPLES = 0
    #: how the audio limit follows from the checkpoint (a rule of ``audio_limits.yaml``); None: by
    #: the class of the processor that loads (``hf-audio``). See :attr:`audio_limit`.
    AUDIO_LIMIT_RULE: str | None = None
    #: building it loads nothing (its args, device and model folder's files are checked, no more),
    #: so ``lalm-eval`` builds it before the tasks load: a bad model arg shows first
    BUILT_BEFORE_TASKS = True

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
        if not pretrained or not str(pretrained).strip():
            raise ConfigError(
                f"--model_args pretrained: missing; {self.name} needs pretrained=DIR (a model folder) or a Hub id"
            )
        self.pretrained = user_path(str(pretrained).strip())
        self.device = checked_device(device)
        try:
            self.dtype = resolve_dtype(dtype, self.device)  # a name: torch is imported only to run the model
        except ConfigError:
            raise arg_error("dtype", dtype, "not a dtype", "give auto, float32, bfloat16 or float16") from None
        self.max_audio_seconds = _positive_seconds(max_audio_seconds_per_batch)  # CLI model_args arrive as YAML
        self.trust_remote_code = _flag("trust_remote_code", trust_remote_code)
        policy = str(long_audio).strip().lower() if long_audio not in (None, "") else None
        if policy is not None and policy not in LONG_AUDIO_POLICIES:
            raise arg_error(
                "long_audio", long_audio, "not a long-audio policy", f"give one of {', '.join(LONG_AUDIO_POLICIES)}"
            )
        self.long_audio = resolve_policy(long_audio, self.LONG_AUDIO_DEFAULT, self.AUDIO_LIMIT_SCOPE, self.name)
        self.n_failed = 0  # requests that got Response(None, error)
        self._model = self._processor = self._identity = None
        self.load_seconds = 0.0  # processor and weights loading (imports included), see loading()
        self._audio_limit: AudioLimit | None = None
        self.peft = user_path(str(peft)) if peft else None  # a peft adapter folder (lalm-eval train, LoRA recipes)
        self.soft_prompts_path = user_path(str(soft_prompts)) if soft_prompts else None
        self.soft_prompts = None  # lalm_eval.training.soft_prompts.SoftPrompts, loaded on first use
        #: ``on_answers(pairs)``, when set (the response cache, :class:`lalm_eval.cache.CachedAdapter`):
        #: called with ``[(request, response)]`` after each finished batch, so that answers are kept
        #: batch by batch, not only when :meth:`generate` returns (a Ctrl-C loses one batch at most)
        self.on_answers = None
        if self.peft and not (Path(self.peft) / "adapter_config.json").is_file():
            raise arg_error(
                "peft",
                self.peft,
                "no adapter_config.json there, so it is not a peft adapter folder",
                "give the output_dir of `lalm-eval train --recipe lora_*`",
            )
        if Path(self.pretrained).is_dir():
            self.check_folder(Path(self.pretrained))

    def check_folder(self, folder: Path) -> None:
        """A local model folder checked from its files alone (nothing imported or loaded): a
        ``config.json`` that is JSON and names a model this adapter loads, and weights (every shard
        an index lists). Each problem is an error naming ``--model_args pretrained=`` (or ``--model``)
        and the fix, before any task or doc is read."""
        where = f"--model_args pretrained={self.pretrained}"
        config = folder / "config.json"
        if not config.is_file():
            raise ConfigError(
                f"{where}: no config.json there, so it is not a transformers model folder; point pretrained= "
                "at the folder that holds config.json and the weights (or give a Hub id)"
            )
        try:
            raw = json.loads(config.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            problem = str(exc).replace(";", ",")
            raise ConfigError(f"{where}: config.json cannot be read ({problem}); copy the model folder again") from None
        if not isinstance(raw, dict) or not (raw.get("model_type") or raw.get("architectures")):
            raise ConfigError(
                f"{where}: config.json names no model_type or architectures, so it is no model's config; "
                "copy the model's own config.json (or the whole folder) again"
            )
        model_type = raw.get("model_type")
        if self.MODEL_TYPES and model_type not in self.MODEL_TYPES:
            other = adapter_for(model_type)
            fix = f"give --model {other}" if other else f"give a {self.name} model ({', '.join(self.MODEL_TYPES)})"
            raise ConfigError(
                f"--model {self.name}: pretrained={self.pretrained} holds a {model_type!r} model (config.json "
                f"model_type), which {self.name} does not load; {fix}"
            )
        for index in WEIGHT_INDEXES:
            if (folder / index).is_file():
                try:
                    shards = sorted(
                        set(json.loads((folder / index).read_text(encoding="utf-8"))["weight_map"].values())
                    )
                except (OSError, ValueError, KeyError, TypeError, AttributeError):
                    raise ConfigError(
                        f"{where}: {index} cannot be read (no weight_map); copy the model folder again"
                    ) from None
                missing = [name for name in shards if not (folder / name).is_file()]
                if missing:
                    raise ConfigError(
                        f"{where}: {len(missing)} of the {len(shards)} weight files {index} lists are missing "
                        f"(first: {missing[0]}); copy the whole model folder"
                    )
                return
        if not any(next(folder.glob(pattern), None) for pattern in WEIGHT_PATTERNS):
            raise ConfigError(
                f"{where}: no model weights there (no *.safetensors or pytorch_model*.bin); copy the weights "
                "into the folder, or point pretrained= at a complete model folder"
            )

    @contextlib.contextmanager
    def loading(self, what: str):
        """A processor or model that fails to load, told once as a :class:`ModelLoadError` naming
        ``pretrained=`` (it stops the run at the first batch, before any doc is answered, instead of
        failing every doc alone); project errors pass unchanged. Its seconds are added to
        :attr:`load_seconds` (the results JSON's ``model_load`` stage)."""
        t0 = time.perf_counter()
        try:
            yield
        except LalmEvalError:
            raise
        except Exception as exc:
            first = " ".join((str(exc).strip().splitlines() or [""])[0].replace(";", ",").split())[:300]
            raise ModelLoadError(
                f"--model_args pretrained={self.pretrained}: its {what} does not load with {self.name} "
                f"({type(exc).__name__}: {first}); check that it is a complete model folder (config.json, "
                "tokenizer, weights) or Hub id of this architecture, or give the --model of its architecture"
            ) from exc
        finally:
            self.load_seconds += time.perf_counter() - t0

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
            with self.loading("processor"):
                processor = self.load_processor()
            self._processor = processor
            tok = getattr(self._processor, "tokenizer", self._processor)
            tok.padding_side = "left"
            if tok.pad_token is None and tok.eos_token is not None:
                tok.pad_token = tok.eos_token
        return self._processor

    @property
    def audio_limit(self) -> AudioLimit:
        """What the model hears of each audio part, from the loaded feature extractor (the
        processor loads on first use): :attr:`AUDIO_LIMIT_RULE` (else the processor class's rule)
        resolved by :func:`lalm_eval.models.audio_limits.resolve`, logged once with its source."""
        if self._audio_limit is None:
            processor = self.processor
            rule, why = self.AUDIO_LIMIT_RULE, f"{self.name}'s rule"
            if rule is None:
                rule, why = rule_for_processor(processor)
            fe = getattr(processor, "feature_extractor", None)
            where = f"--model_args pretrained={self.pretrained}"
            config = _config_dict(self.pretrained) if rule == "encoder_input" else None
            if fe is None and rule != "none":
                limit = AudioLimit(None, "none", f"{type(processor).__name__} has no feature extractor: no limit known")
            else:
                limit = resolve(
                    rule, fe, config, where=where, file=_feature_extractor_file(self.pretrained), processor=processor
                )
            self._audio_limit = limit
            log.info("%s: hears %s of each audio (%s; %s)", self.name, self._limit_text(), why, limit.source)
        return self._audio_limit

    @property
    def counters(self) -> dict:
        """Recorded in the results (``adapter_counters``): the audio limit the run used and its
        source, once the processor has loaded (the report names it beside the cut-audio line)."""
        limit = self._audio_limit
        if limit is None:
            return {}
        return {"audio_limit_s": limit.seconds, "audio_limit_rule": limit.rule, "audio_limit_source": limit.source}

    def _limit_text(self) -> str:
        s = self._audio_limit.seconds if self._audio_limit else None
        return "all" if s is None else f"{s:g} s"

    @property
    def AUDIO_LIMIT_S(self) -> float | None:  # noqa: N802 - the Adapter contract's name
        """:attr:`audio_limit`'s seconds (loads the processor)."""
        return self.audio_limit.seconds

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
        with self.loading("model"):
            model = cls.from_pretrained(
                self.pretrained,
                dtype=self.torch_dtype,
                device_map=self.device,
                trust_remote_code=self.trust_remote_code,
            )
        if model.generation_config.pad_token_id is None:
            model.generation_config.pad_token_id = tok.pad_token_id
        if self.peft:
            from lalm_eval.extras import require

            PeftModel = require("peft", f"model arg peft={self.peft}").PeftModel
            try:
                model = PeftModel.from_pretrained(model, str(Path(self.peft).expanduser()))
            except LalmEvalError:
                raise
            except Exception as exc:
                first = " ".join((str(exc).strip().splitlines() or [""])[0].replace(";", ",").split())[:300]
                raise arg_error(
                    "peft",
                    self.peft,
                    f"the adapter does not load onto pretrained={self.pretrained} ({type(exc).__name__}: {first})",
                    "give the peft adapter trained on this base model",
                ) from exc
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
            if self.audio_limit.feature_kwargs:  # e.g. Qwen2-Audio: its encoder's fixed input length
                kwargs["audio_kwargs"] = dict(self.audio_limit.feature_kwargs)
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
        except ModelLoadError:
            raise
        except Exception as err:  # noqa: BLE001 - recorded per sample, never scored as ""
            exc = err
        log.warning("%s: task %r doc %s failed: %r", self.name, request.task, request.doc_id, exc)
        return Response(None, error=repr(exc))

    def fit(self, requests: list[Request]) -> tuple[list[int], list[Request], list[dict], dict[int, Response]]:
        """Each request under the long-audio policy: ``(indices kept, fitted requests, their meta,
        refused responses by index)``."""
        kept, fitted, metas, refused = [], [], [], {}
        for i, req in enumerate(requests):
            short = self.too_short(req)
            if short is not None:
                refused[i] = short
                continue
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

    def too_short(self, request: Request) -> Response | None:
        """An ``audio_too_short`` failure when an audio part of ``request`` is shorter than
        :attr:`MIN_AUDIO_SAMPLES` (the model's encoder would give it too few audio tokens: an
        internal error in transformers, or audio silently not heard); None when every part is long enough."""
        for k, audio in enumerate(request.audios):
            n = len(audio)
            if 0 < n < self.MIN_AUDIO_SAMPLES:
                return Response.failed(
                    "audio_too_short",
                    f"task {request.task!r} doc {request.doc_id}: audio {k + 1} is {n / AUDIO_SR:.3f} s, shorter "
                    f"than {self.name}'s minimum of {self.MIN_AUDIO_SAMPLES / AUDIO_SR:.3f} s (its audio encoder "
                    "gives it too few audio tokens); drop such clips from the dataset or pad them with silence",
                    audio_s=round(request.audio_seconds, 3),
                    seen_s=0.0,
                    truncated=False,
                )
        return None

    def generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        requests = list(requests)
        if self.load_soft_prompts() is not None:  # a subject without tokens fails the run, not a sample
            self.soft_prompts.check(requests)
        kept, fitted, metas, refused = self.fit(requests)
        self.n_failed += len(refused)
        out: list[Response | None] = [refused.get(i) for i in range(len(requests))]

        def finished(indices: list[int], responses: list[Response]) -> None:
            pairs = []
            for j, resp in zip(indices, responses):
                out[kept[j]] = dataclasses.replace(resp, meta={**metas[j], **resp.meta})
                pairs.append((requests[kept[j]], out[kept[j]]))
            if self.on_answers is not None:
                self.on_answers(pairs)

        if fitted:
            self._generate(fitted, batch_size, finished)
        return out

    def _generate(self, requests: list[Request], batch_size: int | str = 1, finished=None) -> list[Response]:
        """``requests`` in batches; ``finished(indices, responses)`` is called after each batch."""
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
                except ModelLoadError:  # the model itself: no doc can be answered, none is tried alone
                    raise
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
                if finished is not None:
                    finished(batch, done)
        return results
