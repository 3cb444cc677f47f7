"""``lalm-eval train``: fine-tune an HF audio adapter's model on harness tasks under a recipe.

    lalm-eval train --model qwen2_audio --model_args pretrained=DIR \\
        --tasks palm_recognition,palm_captioning --recipe lora_attn --output_dir OUT \\
        [--max_steps N] [--seed S] [--filter single_speaker|multi_speaker] [--resume_from_checkpoint]
        [--learning_rate LR] [--batch_size B] [--grad_accum K] [--epochs E] [--freeze audio_tower]
        [--setting multi_speaker|grid] [--eval_split validation [--eval_steps N] [--eval_limit N]
        [--select best:token_f1]]

Recipes: ``lalm_eval/training/recipes/*.yaml`` (or a path); ``--tokens`` for prompt tuning.
The learning rate and epochs are the recipe's (PALM §5.2) unless ``--learning_rate`` / ``--epochs``
say otherwise; ``--max_steps`` caps the run. ``--setting grid`` trains every point of a recipe's
sweep grid (``full``), each into ``OUT/grid/<label>/``. ``--eval_split`` evaluates through the
harness during training and ``--select best:<metric>`` keeps the best checkpoint
(:mod:`lalm_eval.training.validation`). What it writes: :mod:`lalm_eval.training.trainer`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def parser() -> argparse.ArgumentParser:
    from lalm_eval.flags import DEFAULT_CACHE
    from lalm_eval.training.recipes import available_recipes

    ap = argparse.ArgumentParser(prog="lalm-eval train", description="Fine-tune on harness tasks (PALM §5.2 recipes)")
    ap.add_argument("--model", required=True, help="qwen2_audio, qwen2_5_omni or hf-audio")
    ap.add_argument("--model_args", default="", help="k=v,k=v (pretrained=..., dtype=..., device=...)")
    ap.add_argument("--tasks", required=True, help="comma-separated tasks/groups with a training_split")
    ap.add_argument("--recipe", required=True, help=f"one of {', '.join(available_recipes())} or a recipe YAML")
    ap.add_argument("--output_dir", required=True, type=Path)
    ap.add_argument("--include_path", action="append", default=None)
    ap.add_argument(
        "--filter",
        dest="speakers",
        choices=["single_speaker", "multi_speaker"],
        default=None,
        help="train on docs with one speaker (Tables 2, 3a) or several (Table 3b)",
    )
    ap.add_argument(
        "--setting",
        default=None,
        help="one of the recipe's settings (e.g. multi_speaker; grid: every point of a sweep grid, each into "
        "OUT/grid/<label>/; default: multi_speaker with --filter multi_speaker when the recipe has it, else its "
        "base hyperparameters)",
    )
    ap.add_argument(
        "--eval_split",
        default=None,
        help="evaluate on this split of the tasks' datasets during training (e.g. validation), through the harness",
    )
    ap.add_argument(
        "--eval_steps",
        default=None,
        help="with --eval_split: evaluate every N steps (default: every epoch); a checkpoint is saved at each "
        "evaluation (instead of every --save_steps)",
    )
    ap.add_argument("--eval_limit", default=None, help="with --eval_split: first N docs of each task's split")
    ap.add_argument(
        "--select",
        default=None,
        help="with --eval_split: best:<metric> keeps the checkpoint with the best validation value of a metric of "
        "the tasks (e.g. best:token_f1); last (default) keeps the last",
    )
    ap.add_argument("--tokens", default=None, help="prompt tuning: soft tokens per speaker (2..64)")
    ap.add_argument("--max_steps", default=-1, help="stop after N optimizer steps (-1: the epochs decide)")
    ap.add_argument("--epochs", default=None)
    ap.add_argument("--learning_rate", default=None)
    ap.add_argument("--batch_size", default=1)
    ap.add_argument("--grad_accum", default=1)
    ap.add_argument("--limit", default=None, help="first N training docs of each task")
    ap.add_argument("--seed", default=0)
    ap.add_argument("--gradient_checkpointing", action="store_true")
    ap.add_argument(
        "--resume_from_checkpoint", action="store_true", help="continue from the last checkpoint in OUT/checkpoints"
    )
    ap.add_argument("--save_steps", default=500)
    ap.add_argument("--max_minutes", default=None, help="stop training after this many minutes")
    ap.add_argument(
        "--freeze",
        default="",
        help="full recipe: comma-separated components kept frozen (audio_tower, projector, language_model; "
        "as ms-swift's freeze_vit / freeze_aligner)",
    )
    ap.add_argument("--device", default=None)
    ap.add_argument("--cache_dir", default=str(DEFAULT_CACHE))
    return ap


def check_args(args) -> None:
    """Every flag checked (and converted) before a dataset or the model is loaded; ``--output_dir``
    made and probed, and refused when it holds an earlier training's checkpoints that this run
    would mix with its own (``--resume_from_checkpoint`` continues them instead)."""
    from lalm_eval.errors import ConfigError
    from lalm_eval.flags import device_flag, key_values, real_number, task_names, whole_number, writable_folder

    args.task_list = task_names(args.tasks)
    steps = whole_number(args.max_steps, "--max_steps", -1, "give a number of steps >= 1, or -1 to train by epochs")
    if steps == 0:
        raise ConfigError("--max_steps: 0 steps trains nothing; give a number of steps >= 1, or -1 to train by epochs")
    args.max_steps = steps
    if args.epochs is not None:
        args.epochs = real_number(args.epochs, "--epochs", "give a number of epochs > 0, e.g. 3", 0, above=True)
    if args.learning_rate is not None:
        args.learning_rate = real_number(
            args.learning_rate,
            "--learning_rate",
            "give a rate > 0, e.g. 1e-4 (or leave it to the recipe)",
            0,
            above=True,
        )
    for flag in ("batch_size", "grad_accum", "save_steps"):
        setattr(args, flag, whole_number(getattr(args, flag), f"--{flag}", 1, "give a whole number >= 1"))
    if args.limit is not None:
        args.limit = whole_number(args.limit, "--limit", 1, "omit --limit to train on every doc")
    if args.tokens is not None:
        args.tokens = whole_number(args.tokens, "--tokens", 1, "give the soft tokens per speaker, e.g. 16")
    args.seed = whole_number(args.seed, "--seed", 0, "e.g. --seed 1234", 2**32 - 1)
    if args.max_minutes is not None:
        args.max_minutes = real_number(args.max_minutes, "--max_minutes", "give minutes > 0, e.g. 30", 0, above=True)
    key_values(args.model_args, "--model_args")
    device_flag(args.device)
    _check_freeze(args.freeze)
    from lalm_eval.training.recipes import load_recipe_and_setting

    # the recipe file read and checked, --setting / --tokens against it: before the model or any example
    recipe, setting = load_recipe_and_setting(args.recipe, args.tokens, args.setting, args.speakers)
    args.grid = recipe.is_grid(setting)
    if args.grid:
        for flag in ("learning_rate", "epochs"):
            if getattr(args, flag) is not None:
                raise ConfigError(
                    f"--{flag}: --setting {setting} sweeps the learning rate and epochs, and --{flag} would give every "
                    f"point the same; leave out --{flag} (or --setting {setting})"
                )
    _check_validation_flags(args)
    if args.freeze.strip() and recipe.method != "full":
        raise ConfigError(
            f"--freeze: applies to the full recipe, not to {recipe.name!r} ({recipe.method}), which trains only its "
            "own parameters; leave out --freeze or use --recipe full"
        )
    from lalm_eval.training.trainer import checkpoints_in

    args.cache_dir = str(writable_folder(args.cache_dir, "--cache_dir"))  # ~ expanded: what every writer uses
    if args.eval_split is not None:  # the split in every task's dataset and the metric: before the model loads
        from lalm_eval.training.validation import plan_validation

        plan_validation(
            args.task_list,
            args.eval_split,
            args.select_metric,
            include_path=args.include_path,
            cache_dir=Path(args.cache_dir),
            limit=args.eval_limit,
        )
    out = writable_folder(args.output_dir, "--output_dir")
    args.output_dir = out
    complete, incomplete = checkpoints_in(out / "checkpoints")
    if args.grid:  # the points' checkpoints: OUT/grid/<label>/checkpoints
        for folder in sorted((out / "grid").glob("*/checkpoints")):
            more, less = checkpoints_in(folder)
            complete, incomplete = complete + more, incomplete + less
    if args.resume_from_checkpoint and not complete:
        raise ConfigError(
            f"--resume_from_checkpoint: no complete checkpoint-* folder in {out / 'checkpoints'}; "
            "train without --resume_from_checkpoint first (checkpoints are saved every --save_steps)"
        )
    checkpoints = sorted(complete + incomplete, key=lambda p: int(p.name.rsplit("-", 1)[1]))
    if checkpoints and not args.resume_from_checkpoint:
        raise ConfigError(
            f"--output_dir {args.output_dir}: holds checkpoints of an earlier training ({checkpoints[-1].name}) "
            "that this one would mix with its own; continue it with --resume_from_checkpoint, or give an empty "
            "--output_dir"
        )


def _check_validation_flags(args) -> None:
    """``--eval_split`` / ``--eval_steps`` / ``--eval_limit`` / ``--select``: converted, and the ones
    that only mean something with ``--eval_split`` refused without it (the split itself and the
    metric are then checked against the tasks by :func:`~lalm_eval.training.validation.plan_validation`,
    before the model loads)."""
    from lalm_eval.errors import ConfigError
    from lalm_eval.flags import whole_number
    from lalm_eval.training.validation import parse_select

    if args.eval_split is not None and not str(args.eval_split).strip():
        raise ConfigError("--eval_split: is empty; give a split of the tasks' datasets, e.g. validation")
    for flag in ("eval_steps", "eval_limit"):
        if getattr(args, flag) is not None:
            setattr(args, flag, whole_number(getattr(args, flag), f"--{flag}", 1, "give a whole number >= 1"))
    args.select_metric = parse_select(args.select)
    if args.eval_split is None:
        for flag, given in (
            ("--select", args.select),
            ("--eval_steps", args.eval_steps),
            ("--eval_limit", args.eval_limit),
        ):
            if given is not None:
                raise ConfigError(f"{flag}: applies to evaluation during training; add --eval_split validation")


def _check_freeze(text: str) -> None:
    from lalm_eval.errors import ConfigError
    from lalm_eval.training.recipes import load_placements

    known = sorted({"language_model", *load_placements()[0]})  # the decoder, found by get_decoder()
    for name in (c.strip() for c in (text or "").split(",") if c.strip()):
        if name not in known:
            raise ConfigError(f"--freeze: unknown component {name!r}; give some of {', '.join(known)}")


def main(argv=None) -> int:
    from lalm_eval.models.build import build_adapter
    from lalm_eval.training.trainer import TrainOptions, train, train_grid

    args = parser().parse_args(argv)
    check_args(args)
    # a LalmEvalError reaches lalm-eval's main, which prints it as one line (exit 2)
    adapter = build_adapter(args.model, args.model_args, args.device, args.cache_dir)
    opts = TrainOptions(
        tasks=args.task_list,
        recipe=args.recipe,
        output_dir=args.output_dir,
        cache_dir=Path(args.cache_dir),
        include_path=args.include_path,
        speakers=args.speakers,
        setting=args.setting,
        tokens=args.tokens,
        max_steps=args.max_steps,
        epochs=args.epochs,
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        seed=args.seed,
        limit=args.limit,
        gradient_checkpointing=args.gradient_checkpointing,
        resume=args.resume_from_checkpoint,
        save_steps=args.save_steps,
        max_minutes=args.max_minutes,
        freeze=tuple(c.strip() for c in args.freeze.split(",") if c.strip()),
        eval_split=args.eval_split,
        eval_steps=args.eval_steps,
        eval_limit=args.eval_limit,
        select=args.select_metric,
    )
    from lalm_eval.parallel import world

    if args.grid:  # every point from a fresh model: the first is the one built above
        fresh = [adapter]
        info = train_grid(
            lambda: fresh.pop() if fresh else build_adapter(args.model, args.model_args, args.device, args.cache_dir),
            opts,
        )
        if world()[0] == 0:
            keys = ("label", "learning_rate", "epochs", "global_step", "loss_first", "loss_last", "validation_best")
            shown = {k: info[k] for k in ("recipe", "setting", "best_point") if k in info}
            print(json.dumps({**shown, "points": [{k: p[k] for k in keys} for p in info["points"]]}, indent=2))
            print(f"wrote {args.output_dir} (train_info.json; each point in grid/<label>/)")
        return 0
    info = train(adapter, opts)
    if world()[0] == 0:  # under a launcher rank 0 wrote the outputs
        print(
            json.dumps(
                {
                    k: info[k]
                    for k in (
                        "examples",
                        "global_step",
                        "loss_first",
                        "loss_last",
                        "seconds",
                        "trainable_parameters",
                        "world_size",
                        "evaluate_with",
                    )
                },
                indent=2,
            )
        )
        if "validation" in info:
            v = info["validation"]
            print(
                json.dumps({k: v[k] for k in ("split", "select", "evaluations", "kept", "kept_step", "best")}, indent=2)
            )
        print(
            f"wrote {args.output_dir} (train_info.json, loss.json, loss.png"
            + (", validation.png" if "validation" in info else "")
            + ")"
        )
    return 0
