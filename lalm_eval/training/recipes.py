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
import functools
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError

RECIPE_DIR = Path(__file__).parent / "recipes"
PLACEMENTS_FILE = Path(__file__).parent / "placements.yaml"
RECIPE_KEYS_FILE = Path(__file__).parent / "recipe_keys.yaml"
METHODS = ("full", "lora", "prompt_tuning")
#: recipe keys only one method reads (anything else would be silently ignored)
METHOD_KEYS = {
    "placement": "lora",
    "lora": "lora",
    "tokens": "prompt_tuning",
    "allowed_tokens": "prompt_tuning",
    "init_scale": "prompt_tuning",
}


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

    def is_grid(self, setting: str | None) -> bool:
        """Whether ``setting`` is a sweep grid (a list of overrides, one per point) in this recipe."""
        return bool(setting) and isinstance((self.settings or {}).get(setting), list)

    def grid_points(self, setting: str) -> list[dict]:
        """The overrides of each point of the sweep grid ``setting`` (a one-mapping setting: one point)."""
        value = (self.settings or {}).get(setting)
        return [dict(p) for p in value] if isinstance(value, list) else [dict(value or {})]

    def overrides(self, setting: str | None = None, point: int | None = None) -> dict:
        """The named setting's overrides (``multi_speaker``; of a sweep grid, point ``point``)."""
        if not setting:
            return {}
        if self.is_grid(setting):
            if point is None:
                raise ConfigError(
                    f"--setting {setting}: recipe {self.name!r} gives a sweep grid, which trains one point at a time; "
                    f"run every point with `lalm-eval train --setting {setting}`"
                )
            return self.grid_points(setting)[point]
        return dict((self.settings or {}).get(setting) or {})

    def training_args(self, setting: str | None = None, point: int | None = None) -> dict:
        """``training`` with the named setting's overrides (``multi_speaker``; a grid's point ``point``)."""
        over = self.overrides(setting, point)
        over.pop("tokens", None)
        return {**self.training, **over}


def available_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPE_DIR.glob("*.yaml"))


@functools.lru_cache(maxsize=1)
def recipe_keys() -> dict[str, dict]:
    """The rules of a recipe's keys (``recipe_keys.yaml``): ``{"recipe", "training", "lora"}``."""
    return yaml.safe_load(RECIPE_KEYS_FILE.read_text(encoding="utf-8"))


def _recipe_path(name: str) -> Path:
    path = Path(name)
    if path.suffix.lower() in (".yaml", ".yml") and (path.exists() or path.is_symlink()):
        if not path.is_file():
            raise ConfigError(
                f"--recipe {name}: is not a file; give a recipe YAML file or one of {', '.join(available_recipes())}"
            )
        return path
    path = RECIPE_DIR / f"{name}.yaml"
    if not path.is_file():
        close = difflib.get_close_matches(str(name), available_recipes(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(
            f"--recipe: unknown recipe {name!r}{hint}; available: {', '.join(available_recipes())} "
            "(or a path to a recipe YAML)"
        )
    return path


def _read_yaml(path: Path, where: str):
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM dropped
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot be read ({exc.strerror or exc}); give a readable recipe YAML") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split()).replace(";", ",")
        raise ConfigError(f"{where}{line}: invalid YAML ({problem}); fix the syntax there") from None


def recipe_data(name: str) -> tuple[Path, dict]:
    """The recipe file ``name`` names (a stem of ``recipes/`` or a path) and its keys, every one
    checked against ``recipe_keys.yaml`` (unknown keys with the closest known ones, missing
    required ones, values by kind and range, the LoRA placement, each setting): every error names
    the file (``--recipe <file>``) and comes before any example or model is loaded."""
    from lalm_eval.llm.options import check_options

    path = _recipe_path(name)
    where = f"--recipe {path}"
    data = _read_yaml(path, where)
    if not isinstance(data, dict):
        got = "empty" if data is None else f"a {type(data).__name__}, not a mapping"
        raise ConfigError(
            f"{where}: is {got}; a recipe is a mapping with name, method, citation and training "
            f"(as {RECIPE_DIR.name}/lora_attn.yaml)"
        )
    keys = recipe_keys()
    data = check_options(data, keys["recipe"], where, "{key}: {value}", noun="recipe key")
    data["training"] = check_options(data["training"], keys["training"], f"{where}: training", "{key}: {value}", "key")
    if "lora" in data:
        data["lora"] = check_options(data["lora"], keys["lora"], f"{where}: lora", "{key}: {value}", "key")
    for key, method in METHOD_KEYS.items():
        if key in data and data["method"] != method:
            raise ConfigError(
                f"{where}: {key} applies to method {method}, and this recipe's method is {data['method']}, "
                f"so it would be ignored; remove {key} or set method: {method}"
            )
    if data["method"] == "lora":
        placements = sorted(load_placements()[1])
        if not data.get("placement"):
            raise ConfigError(f"{where}: a lora recipe needs placement; add placement: one of {', '.join(placements)}")
        if data["placement"] not in placements:
            close = difflib.get_close_matches(data["placement"], placements, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(
                f"{where}: placement {data['placement']!r} is not a placement{hint}; give one of {', '.join(placements)}"
            )
    overrides = {
        **{k: {**rule, "required": False} for k, rule in keys["training"].items()},
        "tokens": keys["recipe"]["tokens"],
    }
    for setting, value in (data.get("settings") or {}).items():
        at = f"{where}: settings.{setting}"
        points = value if isinstance(value, list) else [value]  # a list: a sweep grid, one mapping per point
        for i, point in enumerate(points):
            point_at = f"{at}[{i}]" if isinstance(value, list) else at
            if not isinstance(point, dict):
                raise ConfigError(
                    f"{point_at}: is a {type(point).__name__}, not a mapping of training keys; "
                    "write it as e.g. {learning_rate: 1.0e-4, num_train_epochs: 5}"
                )
            check_options(point, overrides, point_at, "{key}: {value}", "key")
    return path, data


def choose_setting(recipe: Recipe, setting: str | None, speakers: str | None = None) -> str | None:
    """The setting a training runs under: ``--setting`` (one of the recipe's, else an error with
    the closest names and the list), else ``multi_speaker`` under ``--filter multi_speaker`` when the
    recipe has one, else None (the recipe's base ``training``). A sweep grid (a setting that lists
    several points, ``full``'s ``grid``) is a setting too: ``lalm-eval train`` trains each point
    (:func:`lalm_eval.training.trainer.train_grid`)."""
    settings = recipe.settings or {}
    if setting is None:
        return "multi_speaker" if speakers == "multi_speaker" and "multi_speaker" in settings else None
    if setting not in settings:
        close = difflib.get_close_matches(setting, list(settings), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listed = ", ".join(settings) or "none"
        raise ConfigError(
            f"--setting: recipe {recipe.name!r} has no setting {setting!r}{hint}; its settings: {listed} "
            "(leave out --setting to train with its base hyperparameters)"
        )
    return setting


def load_recipe(name: str, tokens: int | None = None, setting: str | None = None) -> Recipe:
    """The recipe ``name`` (a file stem of ``recipes/`` or a path to a YAML file), checked
    (:func:`recipe_data`).

    ``tokens`` (prompt tuning only) overrides the recipe's soft tokens per speaker; it must be one
    of the recipe's ``allowed_tokens``. ``setting`` (``multi_speaker``) must be one of the recipe's
    settings (:func:`choose_setting`); it may set ``tokens`` too.
    """
    path, data = recipe_data(name)
    recipe = Recipe(**data, file=str(path))
    if setting is not None:
        choose_setting(recipe, setting)
    if recipe.method == "prompt_tuning":
        points = recipe.grid_points(setting) if setting else [{}]
        setting_tokens = points[0].get("tokens") if len({str(p.get("tokens")) for p in points}) == 1 else None
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


def load_recipe_and_setting(
    name: str, tokens: int | None = None, setting: str | None = None, speakers: str | None = None
) -> tuple[Recipe, str | None]:
    """:func:`load_recipe` under the setting :func:`choose_setting` picks (``--setting`` /
    ``--filter``): what ``lalm-eval train`` checks before anything is loaded, and trains with."""
    chosen = choose_setting(load_recipe(name), setting, speakers)
    return load_recipe(name, tokens=tokens, setting=chosen), chosen


def point_label(point: dict, base: dict) -> str:
    """A grid point's name as the paper writes it (PALM Table 2: ``1e-6-epoch3``), from its learning
    rate and epochs (the recipe's base values where the point leaves them out), plus any other key it
    sets (``optim-sgd``)."""
    import re

    merged = {**base, **point}

    def number(x) -> str:
        return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), f"{x:g}")

    parts = [number(merged["learning_rate"])]
    if "num_train_epochs" in merged:
        parts.append(f"epoch{number(merged['num_train_epochs'])}")
    parts += [f"{k}-{v}" for k, v in sorted(point.items()) if k not in ("learning_rate", "num_train_epochs")]
    return "-".join(parts)


def check_optimizer(recipe: Recipe, optim: str) -> None:
    """``optim`` (the recipe's ``training.optim``) is one of transformers' ``OptimizerNames``, else
    an error naming the recipe file (transformers would raise a bare ValueError)."""
    from transformers.training_args import OptimizerNames

    names = [o.value for o in OptimizerNames]
    if optim not in names:
        close = difflib.get_close_matches(str(optim), names, n=2)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise ConfigError(
            f"--recipe {recipe.file}: training: optim {optim!r} is not an optimizer transformers knows{hint}; "
            "give e.g. optim: adamw_torch"
        )


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
    optional = set(entry.get("optional") or ())
    missing = [c for c in entry["components"] if c not in found and c not in optional]
    present = [c for c in entry["components"] if c in found]
    leaves = entry["leaves"]
    picked = (
        []
        if missing
        else [
            n
            for n in linear
            if any(_inside(n, found[c]) for c in present) and (leaves == "all" or n.rsplit(".", 1)[-1] in leaves)
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


def placement_report(model, placement: str) -> dict:
    """What ``placement`` targets on ``model``, for ``train_info.json``: the layers per component
    (counts and names), the other placements that resolve to the very same layers on this model (on
    Qwen2-Audio ``all_linear`` is ``attn_ffn``: ms-swift's ``all-linear`` under its default
    ``freeze_vit`` / ``freeze_aligner``), and the placement's ``note`` from ``placements.yaml``."""
    _, placements = load_placements()
    names = resolve_placement(model, placement)
    found = components(model)
    by_component: dict[str, list[str]] = {}
    for name in names:
        comp = next((c for c, q in found.items() if _inside(name, q)), "other")
        by_component.setdefault(comp, []).append(name)
    same = []
    for other in sorted(placements):
        if other == placement:
            continue
        try:
            if set(resolve_placement(model, other)) == set(names):
                same.append(other)
        except ConfigError:  # a placement this model's architecture lacks
            continue
    report = {
        "placement": placement,
        "modules": len(names),
        "modules_per_component": {c: len(v) for c, v in by_component.items()},
        "same_modules_as": same,
        "target_modules": names,
    }
    if placements[placement].get("note"):
        report["note"] = " ".join(str(placements[placement]["note"]).split())
    return report


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
