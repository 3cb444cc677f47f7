"""Prompt formats of the ``vllm`` adapter: ``vllm_prompts.yaml`` (data, one entry per model type)
loaded and validated, the entry chosen from a model's ``config.json``, and a request's messages
rendered with it (``render: format``) or turned into chat messages for the model's own chat template
(``render: chat_template``); see :mod:`lalm_eval.models.vllm_adapter`'s docstring, "Prompt formats"."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import lru_cache
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError
from lalm_eval.models.vllm_sampling import GENERATION_CONFIG_KEYS

PROMPTS_FILE = Path(__file__).with_name("vllm_prompts.yaml")
RENDER_MODES = ("chat_template", "format")


_FORMAT_KEYS = ("system", "system_turn", "user_turn", "assistant_turn", "generation_prompt", "audio", "text")
_ENTRY_KEYS = (
    "architectures",
    "render",
    "audio_part_key",
    "flatten",
    "audio_token",
    "audio_limit_s",
    "max_audios",
    "format",
    "stop_token_ids",
    "trust_remote_code",
    "source",
    "status",
)


@dataclasses.dataclass(frozen=True)
class PromptFormat:
    """One entry of ``vllm_prompts.yaml`` (see the file's header for the fields)."""

    name: str
    render: str
    audio_token: str
    format: dict
    architectures: tuple[str, ...] = ()
    audio_part_key: str | None = None
    flatten: bool = False
    audio_limit_s: float | str | None = None  # seconds, or a rule of audio_limits.yaml read from the checkpoint
    max_audios: int | None = None
    stop_token_ids: tuple[int, ...] = ()
    trust_remote_code: bool = False
    source: str = ""
    status: str = "construction"

    @property
    def digest(self) -> str:
        data = dataclasses.asdict(self)
        data.pop("source"), data.pop("status")
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def with_render(self, render: str | None) -> PromptFormat:
        if render in (None, "", "auto"):
            return self
        if render not in RENDER_MODES:
            raise ConfigError(f"vllm: model arg render={render!r}; choose auto, {' or '.join(RENDER_MODES)}")
        return dataclasses.replace(self, render=render)


def _entry(name: str, data, where: str) -> PromptFormat:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: entry {name!r} must be a mapping")
    unknown = sorted(set(data) - set(_ENTRY_KEYS))
    if unknown:
        raise ConfigError(f"{where}: entry {name!r}: unknown field(s) {unknown}; known: {list(_ENTRY_KEYS)}")
    render = data.get("render", "chat_template")
    if render not in RENDER_MODES:
        raise ConfigError(f"{where}: entry {name!r} field 'render': {render!r}; choose {' or '.join(RENDER_MODES)}")
    fmt = data.get("format") or {}
    if not isinstance(fmt, dict) or set(fmt) - set(_FORMAT_KEYS):
        raise ConfigError(f"{where}: entry {name!r} field 'format': a mapping of {list(_FORMAT_KEYS)}")
    if render == "format":
        missing = [k for k in ("user_turn", "generation_prompt", "audio") if not fmt.get(k)]
        if missing:
            raise ConfigError(f"{where}: entry {name!r} renders by format but 'format' lacks {missing}")
    if data.get("flatten") and not fmt.get("audio"):
        raise ConfigError(f"{where}: entry {name!r}: flatten needs format.audio (the inline placeholder)")
    token = data.get("audio_token")
    if not isinstance(token, str) or not token:
        raise ConfigError(f"{where}: entry {name!r} field 'audio_token' (the audio placeholder) is required")
    limit = data.get("audio_limit_s")
    from lalm_eval.models.audio_limits import RULES

    if isinstance(limit, str) and limit not in RULES:
        raise ConfigError(
            f"{where}: entry {name!r} field 'audio_limit_s': {limit!r} is no rule of audio_limits.yaml; "
            f"give seconds > 0, null or one of {', '.join(RULES)}"
        )
    if (
        limit is not None
        and not isinstance(limit, str)
        and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0)
    ):
        raise ConfigError(
            f"{where}: entry {name!r} field 'audio_limit_s' must be seconds > 0, null or a rule ({', '.join(RULES)})"
        )
    most = data.get("max_audios")
    if most is not None and (isinstance(most, bool) or not isinstance(most, int) or most < 1):
        raise ConfigError(f"{where}: entry {name!r} field 'max_audios' must be an integer >= 1 or null")
    return PromptFormat(
        name=name,
        render=render,
        audio_token=token,
        format=dict(fmt),
        architectures=tuple(data.get("architectures") or ()),
        audio_part_key=data.get("audio_part_key"),
        flatten=bool(data.get("flatten", False)),
        audio_limit_s=limit if limit is None or isinstance(limit, str) else float(limit),
        max_audios=most,
        stop_token_ids=tuple(int(t) for t in data.get("stop_token_ids") or ()),
        trust_remote_code=bool(data.get("trust_remote_code", False)),
        source=str(data.get("source", "")),
        status=str(data.get("status", "construction")),
    )


@lru_cache(maxsize=8)
def load_prompt_formats(path: str | Path = PROMPTS_FILE) -> dict[str, PromptFormat]:
    """Every entry of a prompt-format YAML file, validated."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the prompt formats ({exc})") from exc
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: a mapping of prompt-format entries is required")
    return {str(name): _entry(str(name), entry, str(path)) for name, entry in data.items()}


def read_model_config(pretrained: str) -> dict:
    """``config.json`` of a model folder or a cached Hub model, as JSON (transformers not imported)."""
    folder = Path(pretrained).expanduser()
    if folder.is_dir():
        path = folder / "config.json"
    else:
        from huggingface_hub import hf_hub_download

        try:
            path = Path(hf_hub_download(pretrained, "config.json"))
        except Exception as exc:  # noqa: BLE001 - offline and not cached, or not a repo
            raise ConfigError(
                f"model {pretrained!r}: not a folder, and its config.json is not on the Hub or in the cache ({exc})"
            ) from exc
    if not path.is_file():
        raise ConfigError(f"{folder}: no config.json, not a model folder")
    return json.loads(path.read_text(encoding="utf-8"))


def read_generation_config(pretrained: str) -> dict:
    """``generation_config.json``'s sampling fields (:data:`GENERATION_CONFIG_KEYS`), {} when absent."""
    folder = Path(pretrained).expanduser()
    path = folder / "generation_config.json" if folder.is_dir() else None
    if path is None:
        try:
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(pretrained, "generation_config.json"))
        except Exception:  # noqa: BLE001 - a model without one
            return {}
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: data[k] for k in GENERATION_CONFIG_KEYS if data.get(k) is not None}


def resolve_prompt_format(config: dict, prompt_format: str | None = None, where: str = "vllm") -> PromptFormat:
    """The entry for a model's ``config.json`` (by ``model_type``, then ``architectures``), or the one
    ``prompt_format`` names (an entry of ``vllm_prompts.yaml`` or a YAML file with one entry)."""
    formats = load_prompt_formats(PROMPTS_FILE)
    if prompt_format not in (None, ""):
        name = str(prompt_format)
        if name in formats:
            return formats[name]
        path = Path(name).expanduser()
        if path.suffix in (".yaml", ".yml") and path.is_file():
            entries = load_prompt_formats(str(path.resolve()))
            if len(entries) != 1:
                raise ConfigError(f"{path}: a prompt_format file holds exactly one entry, found {len(entries)}")
            return next(iter(entries.values()))
        raise ConfigError(
            f"{where}: model arg prompt_format={name!r} is neither an entry of {PROMPTS_FILE.name} "
            f"({', '.join(formats)}) nor a .yaml file"
        )
    model_type = str(config.get("model_type") or "")
    if model_type in formats:
        return formats[model_type]
    archs = list(config.get("architectures") or [])
    for entry in formats.values():
        if any(a in entry.architectures for a in archs):
            return entry
    raise ConfigError(
        f"{where}: no prompt format for model_type {model_type!r} / architectures {archs} in "
        f"{PROMPTS_FILE.name} ({', '.join(formats)}); pass prompt_format=NAME or "
        "prompt_format=FILE.yaml (one entry, the same schema)"
    )


def _parts(message: dict) -> list:
    content = message.get("content")
    return list(content) if isinstance(content, (list, tuple)) else []


def count_audio_parts(messages) -> int:
    return sum(isinstance(p, dict) and p.get("type") == "audio" for m in messages for p in _parts(m))


def _text_of(message: dict, fmt: PromptFormat, counter) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    text_tpl = fmt.format.get("text") or "{text}"
    out = []
    for part in _parts(message):
        if isinstance(part, dict) and part.get("type") == "audio":
            out.append(fmt.format["audio"].replace("{n}", str(next(counter))))
        elif isinstance(part, dict) and part.get("type") == "text":
            out.append(text_tpl.replace("{text}", str(part.get("text", ""))))
    return "".join(out)


def render_format(fmt: PromptFormat, messages) -> str:
    """The prompt from the entry's ``format`` strings (no chat template)."""
    f, counter = fmt.format, iter(range(1, 1 << 30))
    turns = {
        "system": f.get("system_turn") or "{content}",
        "user": f["user_turn"],
        "assistant": f.get("assistant_turn") or f["user_turn"],
    }
    out = []
    if f.get("system") and not any(m.get("role") == "system" for m in messages):
        out.append(turns["system"].replace("{content}", str(f["system"]).strip()))
    for message in messages:
        role = message.get("role", "user")
        if role not in turns:
            raise ConfigError(f"prompt format {fmt.name!r}: message role {role!r} (system, user or assistant)")
        out.append(turns[role].replace("{content}", _text_of(message, fmt, counter)))
    return "".join(out) + f["generation_prompt"]


def chat_messages(fmt: PromptFormat, messages) -> list[dict]:
    """The request's messages as the chat template gets them: audio parts with ``audio_part_key``
    (``{key: "audio_N.wav"}``, as the HF adapters send them), or flattened to strings."""
    counter = iter(range(1, 1 << 30))
    if fmt.flatten:
        return [{**m, "content": _text_of(m, fmt, counter)} for m in messages]
    key = fmt.audio_part_key
    return [
        {
            **m,
            "content": [
                {key: f"audio_{next(counter)}.wav", **p} if key and p.get("type") == "audio" else p
                for p in m["content"]
            ],
        }
        if _parts(m)
        else dict(m)
        for m in messages
    ]
