"""Fine-tuning recipes as data (``recipes/*.yaml``, PALM §5.2 / Appendix A) and where they go.

A recipe says the method (``full``, ``lora``, ``prompt_tuning``), the LoRA placement and its
hyperparameters, and the paper's learning rate and epochs (``training``, with per-setting
overrides under ``settings``, e.g. ``multi_speaker``). A placement (``placements.yaml``) resolves
to the names of the ``nn.Linear`` layers of the *loaded* model it covers; one that matches
nothing is a :class:`~lalm_eval.errors.ConfigError` listing the linear layers that exist.
"""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError

RECIPE_DIR = Path(__file__).parent / "recipes"
PLACEMENTS_FILE = Path(__file__).parent / "placements.yaml"
METHODS = ("full", "lora", "prompt_tuning")


@dataclasses.dataclass(frozen=True)
class Recipe:
    name: str
    method: str
    citation: str
    training: dict
    placement: str | None = None
    lora: dict | None = None
    tokens: int | None = None
    allowed_tokens: list | None = None
    init_scale: float = 1.0
    settings: dict | None = None
    file: str = ""

    def training_args(self, setting: str | None = None) -> dict:
        """``training`` with the named setting's overrides (``multi_speaker``) applied."""
        over = dict((self.settings or {}).get(setting) or {}) if setting else {}
        over.pop("tokens", None)
        return {**self.training, **over}


def available_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPE_DIR.glob("*.yaml"))


def load_recipe(name: str, tokens: int | None = None, setting: str | None = None) -> Recipe:
    """The recipe ``name`` (a file stem of ``recipes/`` or a path to a YAML file).

    ``tokens`` (prompt tuning only) overrides the recipe's soft tokens per speaker; it must be one
    of the recipe's ``allowed_tokens``. ``setting`` (``multi_speaker``) may set ``tokens`` too.
    """
    path = Path(name)
    if not (path.suffix in (".yaml", ".yml") and path.is_file()):
        path = RECIPE_DIR / f"{name}.yaml"
    if not path.is_file():
        close = difflib.get_close_matches(str(name), available_recipes(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(
            f"--recipe: unknown recipe {name!r}{hint}; available: {', '.join(available_recipes())} "
            "(or a path to a recipe YAML)"
        )
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    known = {f.name for f in dataclasses.fields(Recipe)} - {"file"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown recipe key(s) {unknown}; known: {sorted(known)}")
    for key in ("name", "method", "citation", "training"):
        if key not in data:
            raise ConfigError(f"{path}: missing key {key!r}")
    if data["method"] not in METHODS:
        raise ConfigError(f"{path}: method {data['method']!r} is not one of {METHODS}")
    if data["method"] == "lora" and not data.get("placement"):
        raise ConfigError(f"{path}: a lora recipe needs `placement` (one of {sorted(load_placements()[1])})")
    recipe = Recipe(**data, file=str(path))
    if recipe.method == "prompt_tuning":
        setting_tokens = ((recipe.settings or {}).get(setting) or {}).get("tokens") if setting else None
        n = tokens if tokens is not None else setting_tokens if setting_tokens is not None else recipe.tokens
        if n is None or (recipe.allowed_tokens and int(n) not in recipe.allowed_tokens):
            raise ConfigError(
                f"{path}: tokens per speaker must be one of {recipe.allowed_tokens}, got {n!r}; "
                "give --tokens one of them"
            )
        recipe = dataclasses.replace(recipe, tokens=int(n))
    elif tokens is not None:
        raise ConfigError(
            f"--tokens: applies to prompt tuning, not to recipe {recipe.name!r} ({recipe.method}); leave it out"
        )
    return recipe


def load_placements() -> tuple[dict, dict]:
    data = yaml.safe_load(PLACEMENTS_FILE.read_text(encoding="utf-8"))
    return data["components"], data["placements"]


def components(model) -> dict[str, str]:
    """Component name → qualified module name on ``model`` (``language_model``, ``audio_tower``,
    ``projector``; the ones the model has)."""
    spec, _ = load_placements()
    names = {id(m): n for n, m in model.named_modules()}
    found = {}
    try:
        decoder = model.get_decoder()
    except (AttributeError, NotImplementedError):
        decoder = None
    if decoder is not None and id(decoder) in names:
        found["language_model"] = names[id(decoder)]
    for comp, entry in spec.items():
        attrs = set(entry.get("attributes") or [])
        for qual, _module in model.named_modules():
            if qual and qual.rsplit(".", 1)[-1] in attrs:
                found[comp] = qual
                break
    return found


def _linear_names(model) -> list[str]:
    import torch

    return [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]


def _inside(name: str, prefix: str) -> bool:
    return name.startswith(prefix + ".") if prefix else True


def resolve_placement(model, placement: str) -> list[str]:
    """Qualified names of the ``nn.Linear`` layers of ``model`` that ``placement`` covers."""
    _, placements = load_placements()
    if placement not in placements:
        raise ConfigError(f"unknown LoRA placement {placement!r}; placements.yaml has {sorted(placements)}")
    entry = placements[placement]
    found = components(model)
    linear = _linear_names(model)
    missing = [c for c in entry["components"] if c not in found]
    leaves = entry["leaves"]
    picked = (
        []
        if missing
        else [
            n
            for n in linear
            if any(_inside(n, found[c]) for c in entry["components"])
            and (leaves == "all" or n.rsplit(".", 1)[-1] in leaves)
        ]
    )
    if not picked:
        leaf_sets = {
            comp: sorted({n.rsplit(".", 1)[-1] for n in linear if _inside(n, qual)}) for comp, qual in found.items()
        }
        why = f"the model has no {missing} component" if missing else f"no linear layer named {leaves} inside it"
        raise ConfigError(
            f"placement {placement!r} matches nothing on {type(model).__name__}: {why}; the model "
            f"has components {found} with linear layers {leaf_sets}"
        )
    return picked


def apply_recipe(model, recipe: Recipe, seed: int = 0):
    """``model`` ready to train under ``recipe``: all weights (full), a peft LoRA model (lora), or
    every weight frozen (prompt tuning: the soft prompts are separate parameters,
    :mod:`lalm_eval.training.soft_prompts`)."""
    if recipe.method == "full":
        for p in model.parameters():
            p.requires_grad_(True)
        return model
    if recipe.method == "prompt_tuning":
        for p in model.parameters():
            p.requires_grad_(False)
        return model
    from lalm_eval.extras import require

    peft = require("peft", f"training recipe {recipe.name!r} (LoRA)")
    LoraConfig, get_peft_model = peft.LoraConfig, peft.get_peft_model

    names = resolve_placement(model, recipe.placement)
    lora = recipe.lora or {}
    config = LoraConfig(
        r=int(lora.get("r", 8)),
        lora_alpha=int(lora.get("alpha", 32)),
        lora_dropout=float(lora.get("dropout", 0.05)),
        target_modules=names,
        bias="none",
    )
    return get_peft_model(model, config)


def freeze_components(model, names) -> dict[str, int]:
    """Freeze the named components of ``model`` (``audio_tower``, ``projector``,
    ``language_model``: :func:`components`) for a ``full`` run, as ms-swift's ``freeze_vit`` /
    ``freeze_aligner`` do for its full fine-tuning of multimodal models; returns each component's
    frozen parameter count. A component the model lacks is a ConfigError listing those it has."""
    found = components(model)
    out = {}
    for name in names:
        if name not in found:
            raise ConfigError(f"--freeze {name}: {type(model).__name__} has no such component; it has {sorted(found)}")
        params = list(model.get_submodule(found[name]).parameters())
        for p in params:
            p.requires_grad_(False)
        out[name] = sum(p.numel() for p in params)
    return out


def trainable_parameters(model) -> list[str]:
    return [n for n, p in model.named_parameters() if p.requires_grad]


#: substrings of module names by component, for adapters saved without the model at hand
_COMPONENT_MARKERS = {
    "audio_tower": ("audio_tower", "audio_encoder", "audio_model"),
    "projector": ("multi_modal_projector", "audio_projector"),
}


def _safetensors_keys(path: Path) -> list[str]:
    """The tensor names of a ``.safetensors`` file, from its JSON header (no tensor is read)."""
    import json
    import struct

    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return [k for k in header if k != "__metadata__"]


def peft_components(folder) -> dict[str, list[str]]:
    """Component → adapted modules of a saved peft adapter, for backends that apply LoRA to the
    language model only (vLLM): anything under ``audio_tower`` or ``projector`` must be refused or
    merged first. The modules are read from the weights (``adapter_model.safetensors``: the
    modules that carry adapter tensors), since ``adapter_config.json``'s ``target_modules`` may be
    bare leaf names (peft shortens long lists to suffixes such as ``q_proj``, which match the audio
    tower's layers as well as the LM's). Without a safetensors file, ``target_modules`` are
    classified by name; a bare leaf name or a regex string cannot be placed without the model and
    is returned under ``"ambiguous"``."""
    import json

    folder = Path(folder).expanduser()
    path = folder / "adapter_config.json"
    if not path.is_file():
        raise ConfigError(f"{folder}: no adapter_config.json (not a peft adapter folder)")
    weights = folder / "adapter_model.safetensors"
    if weights.is_file():
        names = sorted(
            {
                k.removeprefix("base_model.model.").split(".lora_")[0].rsplit(".modules_to_save", 1)[0]
                if ".lora_" in k or ".modules_to_save" in k
                else k.removeprefix("base_model.model.").rsplit(".", 1)[0]
                for k in _safetensors_keys(weights)
            }
        )
    else:
        targets = json.loads(path.read_text(encoding="utf-8")).get("target_modules") or []
        if isinstance(targets, str):
            return {"ambiguous": [targets]}
        names = list(targets)
    out: dict[str, list[str]] = {}
    for name in names:
        comp = next(
            (c for c, marks in _COMPONENT_MARKERS.items() if any(m in name for m in marks)),
            "language_model" if "." in name else "ambiguous",
        )
        out.setdefault(comp, []).append(name)
    return out
