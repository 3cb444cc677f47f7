"""What a model hears of each audio, read from its checkpoint (``audio_limits.yaml``: the rules).

A model's audio limit is not a constant of its family: Qwen2.5-Omni's processor pads and cuts every
audio to its feature extractor's ``n_samples`` (``chunk_length * sampling_rate``), and the
``chunk_length`` is whatever the checkpoint's ``preprocessor_config.json`` says (the public
Qwen2.5-Omni checkpoints say 300 s; a feature extractor built with the defaults says 30 s). So:

- the HF adapters (:mod:`lalm_eval.models.hf_base`) apply their rule to the feature extractor
  they loaded (:func:`resolve`), when the processor first loads;
- the ``vllm`` adapter applies the rule of its ``vllm_prompts.yaml`` entry to the checkpoint's
  files when it is built (:func:`feature_extractor_from_files`: the same fields, read as
  ``WhisperFeatureExtractor`` reads them, with neither transformers nor vLLM imported).

:class:`AudioLimit` carries the seconds, the rule, a ``source`` sentence naming the file and field
the number comes from (for logs, errors and the README), and ``feature_kwargs``: what the processor
must also be given for the model to take the features (Qwen2-Audio: ``max_length`` of its encoder's
fixed input, when the feature extractor's window differs).
"""

from __future__ import annotations

import dataclasses
import json
import types
from functools import lru_cache
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError

RULES_FILE = Path(__file__).with_name("audio_limits.yaml")
RULES = ("feature_extractor", "encoder_input", "max_audio_len", "none")


@dataclasses.dataclass(frozen=True)
class AudioLimit:
    """``seconds`` of each audio part the model hears (None: no limit known) and where that comes from."""

    seconds: float | None
    rule: str
    source: str
    feature_kwargs: dict = dataclasses.field(default_factory=dict)


@lru_cache(maxsize=1)
def rules_data() -> dict:
    """``audio_limits.yaml``, checked: every rule and every processor's rule is one of :data:`RULES`."""
    data = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8")) or {}
    for name in data.get("rules") or {}:
        if name not in RULES:
            raise ConfigError(f"{RULES_FILE.name}: rule {name!r} is not one of {', '.join(RULES)}")
    for cls, rule in (data.get("processors") or {}).items():
        if rule not in RULES:
            raise ConfigError(f"{RULES_FILE.name}: processors.{cls}: {rule!r} is not one of {', '.join(RULES)}")
    return data


def check_rule(rule: str, where: str) -> str:
    if rule not in RULES:
        raise ConfigError(f"{where}: audio limit rule {rule!r} is not one of {', '.join(RULES)}")
    return rule


def rule_for_processor(processor) -> tuple[str, str]:
    """``(rule, why)`` for a processor ``hf-audio`` loaded: by its class name, else by whether its
    feature extractor has a Whisper-style window (``n_samples``)."""
    name = type(processor).__name__
    known = rules_data().get("processors") or {}
    if name in known:
        return known[name], f"{name} (audio_limits.yaml)"
    fe = getattr(processor, "feature_extractor", None)
    if getattr(fe, "n_samples", None):
        return "feature_extractor", f"{name} is not in audio_limits.yaml: assumed to keep its {type(fe).__name__}'s cut"
    return "none", f"{name} is not in audio_limits.yaml and its feature extractor has no n_samples: no limit known"


def _number(fe, field: str, default, where: str) -> int:
    value = getattr(fe, field, None)
    value = default if value is None else value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{where}: feature extractor field {field!r} is {value!r}, not a number > 0")
    return value


def resolve(
    rule: str, fe, config: dict | None = None, where: str = "model", file: str | None = None, processor=None
) -> AudioLimit:
    """The limit that ``rule`` gives for the feature extractor ``fe`` (an object with Whisper's fields
    ``n_samples``, ``sampling_rate``, ``chunk_length``, ``hop_length``; loaded, or from
    :func:`feature_extractor_from_files`) and the model's ``config.json`` dict (``encoder_input``);
    ``file`` names where ``fe`` was read from in the limit's ``source``; ``processor`` (rule
    ``max_audio_len``) is the loaded processor."""
    data = rules_data()
    if check_rule(rule, where) == "none":
        return AudioLimit(None, rule, f"no cut: {(data.get('rules') or {}).get('none', {}).get('source', '')}")
    defaults = data.get("whisper_defaults") or {}
    file = file or getattr(fe, "source_file", None) or "the feature extractor"
    sr = _number(fe, "sampling_rate", defaults.get("sampling_rate"), where)
    if rule == "feature_extractor":
        n = getattr(fe, "n_samples", None)
        if not n:
            raise ConfigError(
                f"{where}: its feature extractor ({type(fe).__name__}) has no n_samples, so the rule "
                "feature_extractor gives no window; name another rule for this model"
            )
        chunk = getattr(fe, "chunk_length", None)
        told = f"chunk_length {chunk:g} s, " if isinstance(chunk, (int, float)) else ""
        return AudioLimit(round(n / sr, 3), rule, f"{file}: {told}n_samples {n} at {sr} Hz (the processor cuts there)")
    if rule == "max_audio_len":  # whole windows of chunk_length up to the processor's max_audio_len
        most = getattr(processor, "max_audio_len", None)
        chunk = _number(fe, "chunk_length", defaults.get("chunk_length"), where)
        if isinstance(most, bool) or not isinstance(most, (int, float)) or most <= 0:
            raise ConfigError(
                f"{where}: its processor ({type(processor).__name__}) has no max_audio_len, so the rule "
                "max_audio_len gives no limit; name another rule for this model"
            )
        windows = max(1, int(most // chunk))
        return AudioLimit(
            float(windows * chunk),
            rule,
            f"{type(processor).__name__}.max_audio_len {most:g} s: {windows} windows of chunk_length {chunk:g} s",
        )
    hop = _number(fe, "hop_length", defaults.get("hop_length"), where)
    audio = (config or {}).get("audio_config") or (config or {}).get("thinker_config", {}).get("audio_config") or {}
    positions = audio.get("max_source_positions") or (data.get("encoder_defaults") or {}).get("max_source_positions")
    frames = 2 * int(positions)
    samples = frames * hop
    kwargs = {} if getattr(fe, "n_samples", None) == samples else {"max_length": samples}
    note = (
        f", the feature extractor's own window of {fe.n_samples} samples overridden by max_length {samples}"
        if kwargs and getattr(fe, "n_samples", None)
        else ""
    )
    return AudioLimit(
        round(samples / sr, 3),
        rule,
        f"config.json audio_config.max_source_positions {positions}: the encoder's fixed input of {frames} mel "
        f"frames of {hop} samples at {sr} Hz{note}",
        kwargs,
    )


def _read_json(pretrained: str, name: str) -> dict | None:
    folder = Path(pretrained).expanduser()
    if folder.is_dir():
        path = folder / name
        if not path.is_file():
            return None
    else:
        try:
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(pretrained, name))
        except Exception:  # noqa: BLE001 - not in this Hub model, or offline and not cached
            return None
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problem = str(exc).replace(";", ",")
        raise ConfigError(f"{pretrained}/{name}: cannot be read ({problem}); copy the model folder again") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{pretrained}/{name}: not a JSON object; copy the model's own {name} again")
    return data


def feature_extractor_from_files(pretrained: str) -> types.SimpleNamespace:
    """The checkpoint's feature-extractor fields as ``WhisperFeatureExtractor.__init__`` sets them
    (``n_samples = chunk_length * sampling_rate``, Whisper's defaults for a missing field), from
    ``preprocessor_config.json``, else ``processor_config.json``'s ``feature_extractor`` (where
    transformers 5 saves it); neither file: the defaults, said so in ``source_file``."""
    fields, source = None, None
    pre = _read_json(pretrained, "preprocessor_config.json")
    if pre is not None:
        fields, source = pre, "preprocessor_config.json"
    else:
        proc = _read_json(pretrained, "processor_config.json") or {}
        if isinstance(proc.get("feature_extractor"), dict):
            fields, source = proc["feature_extractor"], "processor_config.json feature_extractor"
    defaults = rules_data().get("whisper_defaults") or {}
    fields = dict(fields or {})
    chunk = fields.get("chunk_length", defaults.get("chunk_length"))
    sr = fields.get("sampling_rate", defaults.get("sampling_rate"))
    hop = fields.get("hop_length", defaults.get("hop_length"))
    for name, value in (("chunk_length", chunk), ("sampling_rate", sr), ("hop_length", hop)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(
                f"{pretrained}/{source}: field {name!r} is {value!r}, not a number > 0; copy the model's own file"
            )
    return types.SimpleNamespace(
        chunk_length=chunk,
        sampling_rate=sr,
        hop_length=hop,
        n_samples=int(chunk * sr),
        source_file=source or "no preprocessor_config.json (WhisperFeatureExtractor's defaults)",
    )
