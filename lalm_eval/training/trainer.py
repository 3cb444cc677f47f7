"""Fine-tune an HF audio adapter's model under a recipe with transformers' ``Trainer``.

What lands in ``output_dir``:

- ``lora``: the peft adapter (``adapter_config.json``, ``adapter_model.safetensors``): evaluate
  with ``--model_args pretrained=BASE,peft=OUT``;
- ``full``: a complete model folder (weights + processor files): ``pretrained=OUT``;
- ``prompt_tuning``: ``soft_prompts/<subject>.safetensors`` + ``soft_prompts/index.json``:
  ``pretrained=BASE,soft_prompts=OUT``;
- always ``train_info.json`` (recipe, tasks, examples, seed, filter, base model fingerprint,
  trainable parameters, frozen components (``--freeze``), seconds, samples/s, audio features
  computed / reused by :class:`~lalm_eval.training.data.FeatureMemo`), ``loss.json`` (step,
  loss, lr per logging step) and ``loss.png``; checkpoints under ``checkpoints/`` (``--resume_from_checkpoint``
  picks the last complete one; one a killed run left half-written, without ``trainer_state.json``,
  is renamed ``incomplete-checkpoint-N`` and listed in ``train_info.json``). Until a run finishes,
  ``train_info.json`` says ``"status": "incomplete"``; a finished run's says ``"finished"``.
- LoRA: ``train_info.json``'s ``lora_targets`` (:func:`~lalm_eval.training.recipes.placement_report`:
  the adapted modules per component, the placements that resolve to the same modules on this model,
  the placement's note, e.g. that ``all_linear`` is ``attn_ffn`` on Qwen2-Audio);
- ``--eval_split``: ``validation`` in ``train_info.json`` (the curve, the best evaluation, the
  step kept) and ``validation.png`` (:mod:`lalm_eval.training.validation`); a checkpoint is saved
  at each evaluation, and under ``--select best:<metric>`` the Trainer's ``load_best_model_at_end``
  puts the best one back before the output is written;
- ``--setting grid``: one such folder per point under ``grid/<label>/`` and a ``train_info.json``
  listing the points (:func:`train_grid`).

bf16 on CUDA (the adapter's dtype; weights as loaded, bf16 autocast), float32 on CPU; optional
gradient checkpointing; the seed goes to ``transformers.set_seed`` before LoRA / soft prompts are
initialised and to the data order.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
from pathlib import Path

from lalm_eval.errors import ConfigError

log = logging.getLogger(__name__)


@dataclasses.dataclass
class TrainOptions:
    tasks: list[str]
    recipe: str
    output_dir: Path
    cache_dir: Path
    include_path: list | None = None
    speakers: str | None = None  # single_speaker | multi_speaker
    setting: str | None = None  # the recipe's settings key (default: multi_speaker with --filter multi_speaker)
    tokens: int | None = None
    max_steps: int = -1
    epochs: float | None = None
    learning_rate: float | None = None
    batch_size: int = 1
    grad_accum: int = 1
    seed: int = 0
    limit: int | None = None
    gradient_checkpointing: bool = False
    resume: bool = False
    save_steps: int = 500
    logging_steps: int = 1
    max_minutes: float | None = None  # stop (and save) once training has run this long
    freeze: tuple[str, ...] = ()  # components kept frozen under `full` (audio_tower, projector, language_model)
    grid_point: int | None = None  # under a sweep-grid setting: which point this run trains (train_grid)
    eval_split: str | None = None  # evaluate on this split of the tasks' datasets (validation.py)
    eval_steps: int | None = None  # every N steps (None: at the end of every epoch)
    eval_limit: int | None = None  # first N docs of each task's eval split
    select: str | None = None  # the metric of --select best:<metric> (None: keep the last checkpoint)


def _time_limit(minutes: float):
    from transformers import TrainerCallback

    class TimeLimit(TrainerCallback):
        """Stop after ``minutes`` of training (checked after each step; the model is saved as usual)."""

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = time.time()

        def on_step_end(self, args, state, control, **kwargs):
            if time.time() - self.start >= minutes * 60:
                control.should_training_stop = True

    return TimeLimit()


def _progress(label: str, max_minutes: float | None):
    """Training steps on the console (:mod:`lalm_eval.evaluation.progress`: a bar on a terminal,
    else a line every 15 s and one at the end), with the last logged loss and, under
    ``--max_minutes``, when the run stops."""
    from transformers import TrainerCallback

    from lalm_eval.evaluation.progress import Progress

    class StepProgress(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            limit = f"; --max_minutes {max_minutes:g} stops it earlier" if max_minutes else ""
            self.bar = Progress(
                state.max_steps - state.global_step,
                label,
                unit="training steps",
                prog="lalm-eval train",
                note=f" (from step {state.global_step}{limit})",
            )
            self.loss = None

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.loss = logs["loss"]
                self.bar.unit = f"training steps, loss {self.loss:.4g}"

        def on_step_end(self, args, state, control, **kwargs):
            self.bar.advance(1)

        def on_train_end(self, args, state, control, **kwargs):
            self.bar.close()

    return StepProgress()


#: the batch key under which the collator names its examples (``(task, doc_id)``); popped before the forward
EXAMPLE_KEYS = "lalm_example_keys"


def _trainer_class(soft, seen: list, validate=None):
    """The Trainer subclass a run uses. ``validate(state) -> metrics`` (``--eval_split``) replaces
    ``Trainer.evaluate``: the harness evaluates the model, and the Trainer's own best-checkpoint
    tracking (``metric_for_best_model``, ``load_best_model_at_end``) reads what it returns."""
    from transformers import Trainer

    class Recording(Trainer):
        """Records the examples of each batch it trains on (not those the dataloader fetched ahead)."""

        def training_step(self, model, inputs, *args, **kwargs):
            seen.extend(inputs.pop(EXAMPLE_KEYS, ()))
            return super().training_step(model, inputs, *args, **kwargs)

        def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix="eval"):
            if validate is None:
                return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
            metrics = validate(self.state)
            self.log(metrics)
            self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
            return metrics

    if soft is None:
        return Recording

    class SoftPromptTrainer(Recording):
        """Checkpoints hold the soft prompts only (the frozen model is the base model)."""

        def _save(self, output_dir=None, state_dict=None):
            soft.save(output_dir or self.args.output_dir)

        def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
            import torch

            from lalm_eval.training.soft_prompts import SoftPrompts

            loaded = SoftPrompts.load(resume_from_checkpoint, _Tok(soft))
            with torch.no_grad():
                for name, param in soft.by_name.items():
                    param.copy_(loaded.by_name[name])

        def _load_best_model(self):  # the Trainer's own looks for model weights, which these checkpoints lack
            self._load_from_checkpoint(self.state.best_model_checkpoint)

    return SoftPromptTrainer


class _Tok:  # what SoftPrompts.load reads of a tokenizer: the placeholder
    def __init__(self, soft):
        self.pad_token, self.pad_token_id = soft.placeholder, soft.placeholder_id


def save_processor(adapter, out: Path) -> None:
    processor = adapter.processor
    if hasattr(processor, "save_pretrained"):
        processor.save_pretrained(out)
        return
    for part in ("tokenizer", "feature_extractor"):  # ManualOmniProcessor (no torchvision)
        getattr(processor, part).save_pretrained(out)


def loss_curve(log_history: list[dict], out: Path) -> list[dict]:
    """``loss.json`` and ``loss.png`` from the Trainer's log history; returns the points."""
    points = [
        {"step": e["step"], "loss": e["loss"], "learning_rate": e.get("learning_rate"), "epoch": e.get("epoch")}
        for e in log_history
        if "loss" in e
    ]
    (out / "loss.json").write_text(json.dumps(points, indent=2) + "\n", encoding="utf-8")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([p["step"] for p in points], [p["loss"] for p in points], marker="." if len(points) < 50 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (answer tokens)")
    ax.set_title(out.name)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "loss.png", dpi=120)
    plt.close(fig)
    return points


def _seen_by_rank(seen: list, world_size: int) -> dict:
    """What each process trained on: counts per rank and how many examples two ranks shared (0 when
    the data shards are disjoint); gathered to every process under a launcher."""
    parts = [list(seen)]
    if world_size > 1:
        import torch.distributed as dist

        parts = [None] * world_size
        dist.all_gather_object(parts, list(seen))
    sets = [set(map(tuple, p)) for p in parts]
    union = set().union(*sets)
    shared = sum(sum(k in s for s in sets) > 1 for k in union)
    return {
        "world_size": world_size,
        "examples_seen_per_rank": [len(p) for p in parts],
        "distinct_examples_seen": len(union),
        "examples_seen_by_several_ranks": shared,
    }


def train(adapter, opts: TrainOptions) -> dict:
    """Train ``adapter``'s model (an ``HFAudioAdapter``) under ``opts``; returns ``train_info``.

    Under ``accelerate launch --multi_gpu --num_processes N`` (or torchrun) every process runs this:
    the Trainer's distributed sampler gives each its own shard of the examples (DDP: gradients
    averaged), and only rank 0 writes the outputs (adapter / soft prompts / model, ``loss.*``,
    ``train_info.json``, checkpoints); every process returns the same ``train_info``."""
    import torch
    from transformers import TrainingArguments, set_seed

    from lalm_eval.models.hf_base import HFAudioAdapter, fingerprint
    from lalm_eval.training.data import Collator, ExampleDataset, memoised_features, training_examples
    from lalm_eval.training.recipes import (
        apply_recipe,
        check_optimizer,
        freeze_components,
        load_recipe_and_setting,
        placement_report,
        point_label,
    )
    from lalm_eval.training.soft_prompts import SoftPromptModel, SoftPrompts
    from lalm_eval.training.validation import evaluate_now, plan_subjects, plan_validation, validation_plot

    if not isinstance(adapter, HFAudioAdapter):
        raise ConfigError(
            f"--model {adapter.name}: not a Hugging Face audio adapter, so it cannot be trained; "
            "give qwen2_audio, qwen2_5_omni or hf-audio"
        )
    if getattr(adapter, "peft", None) or getattr(adapter, "soft_prompts_path", None):
        raise ConfigError(
            "--model_args: peft= / soft_prompts= give a trained output, not a model to train; "
            "start from a base or merged model (pretrained=)"
        )
    recipe, setting = load_recipe_and_setting(opts.recipe, opts.tokens, opts.setting, opts.speakers)
    if opts.freeze and recipe.method != "full":
        raise ConfigError(
            f"--freeze: applies to the full recipe, not to {recipe.name!r} ({recipe.method}), which trains only its "
            "own parameters; leave out --freeze or use --recipe full"
        )
    if (opts.select or opts.eval_steps) and not opts.eval_split:
        flag = "--select" if opts.select else "--eval_steps"
        raise ConfigError(f"{flag}: evaluates during training, which needs --eval_split; add --eval_split validation")
    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    hp = recipe.training_args(setting, opts.grid_point)
    check_optimizer(recipe, hp.get("optim", "adamw_torch"))
    cuda = adapter.device.startswith("cuda")
    plan = None
    if opts.eval_split:  # the split and the metric checked before anything trains
        plan = plan_validation(
            opts.tasks,
            opts.eval_split,
            opts.select,
            include_path=opts.include_path,
            cache_dir=opts.cache_dir,
            limit=opts.eval_limit,
        )
    eval_args = {}
    if plan is not None:  # a checkpoint at every evaluation, so that the best one can be kept
        strategy = "steps" if opts.eval_steps else "epoch"
        eval_args = dict(
            eval_strategy=strategy,
            eval_steps=opts.eval_steps,
            metric_for_best_model=plan.metric,
            greater_is_better=plan.greater_is_better if plan.metric else None,
            load_best_model_at_end=plan.metric is not None,
        )
    args = TrainingArguments(
        output_dir=str(out / "checkpoints"),
        per_device_train_batch_size=opts.batch_size,
        gradient_accumulation_steps=opts.grad_accum,
        learning_rate=float(opts.learning_rate if opts.learning_rate is not None else hp["learning_rate"]),
        num_train_epochs=float(opts.epochs if opts.epochs is not None else hp.get("num_train_epochs", 1)),
        max_steps=opts.max_steps,
        optim=hp.get("optim", "adamw_torch"),
        logging_steps=opts.logging_steps,
        save_strategy=eval_args.get("eval_strategy", "steps"),  # with --eval_split: a checkpoint per evaluation
        save_steps=opts.eval_steps or opts.save_steps,
        save_total_limit=2,
        seed=opts.seed,
        data_seed=opts.seed,
        bf16=cuda and adapter.torch_dtype == torch.bfloat16,
        use_cpu=not cuda,
        gradient_checkpointing=opts.gradient_checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False} if opts.gradient_checkpointing else None,
        # prompt tuning under DDP: the rows of subjects absent from a process's batch get no gradient
        ddp_find_unused_parameters=recipe.method == "prompt_tuning",
        remove_unused_columns=False,
        report_to=[],
        dataloader_num_workers=0,
        disable_tqdm=False,
        **eval_args,
    )
    main = args.process_index == 0
    # under a launcher rank 0 builds (or reads) the datasets first; the others then read its cache
    with args.main_process_first(desc="training examples"):
        examples = training_examples(opts.tasks, opts.cache_dir, opts.include_path, opts.speakers, opts.limit)
    set_seed(opts.seed)
    model = adapter.model
    model.train()
    base_hash = fingerprint(adapter.pretrained)
    soft, frozen = None, {}
    # what the LoRA placement covers on this model, before peft wraps its layers
    targets = placement_report(model, recipe.placement) if recipe.method == "lora" else None
    if recipe.method == "prompt_tuning":
        names = sorted({n for e in examples for n in e.subjects})
        if not names:
            raise ConfigError(
                f"--recipe {recipe.name}: the training docs name no subjects (the tasks' doc_to_subjects gives "
                "none); give tasks whose doc_to_subjects names the speakers (per-speaker prompt tuning needs them)"
            )
        if plan is not None:  # every subject the validation docs name needs its own soft prompts
            unseen = sorted(plan_subjects(plan) - set(names))
            if unseen:
                raise ConfigError(
                    f"--eval_split {plan.split}: the {plan.split} docs name subjects no training doc names "
                    f"({', '.join(unseen[:5])}{' ...' if len(unseen) > 5 else ''}), who would get no soft prompts; "
                    "validate on a split of the training subjects, or train on docs naming them (check --limit)"
                )
        apply_recipe(model, recipe)
        soft = SoftPrompts.initialise(names, recipe.tokens, model, adapter.tokenizer, opts.seed, recipe.init_scale)
        soft.params.to(model.device)
        adapter.soft_prompts = soft  # build_inputs inserts the placeholders, as in evaluation
        train_model = SoftPromptModel(model, soft)
        collator = Collator(
            adapter, prepare=lambda reqs: (reqs, {"soft_prompt_mentions": [soft.mentions(r) for r in reqs]})
        )
    else:
        train_model = apply_recipe(model, recipe, opts.seed)
        frozen = freeze_components(model, opts.freeze) if opts.freeze else {}
        collator = Collator(adapter)
    seen: list = []  # (task, doc_id) of every example this process trained on (Recording.training_step)

    def collate(batch):
        return {**collator(batch), EXAMPLE_KEYS: [(e.task, str(e.doc_id)) for e in batch]}

    trainable = [n for n, p in train_model.named_parameters() if p.requires_grad]
    n_trainable = sum(p.numel() for p in train_model.parameters() if p.requires_grad)

    def validate(state) -> dict:
        """The harness on the eval split, now; flat floats for the Trainer's log (kept in its state,
        so a resumed run's curve has the evaluations before the resume too)."""
        result = evaluate_now(adapter, plan, opts.batch_size, opts.seed)
        metrics = {f"eval_{task}/{k}": v for task, values in result["per_task"].items() for k, v in values.items()}
        if plan.metric is not None:
            worst = float("-inf") if plan.greater_is_better else float("inf")
            missing = result["value"] is None  # every item failed: never the best
            metrics[f"eval_{plan.metric}"] = worst if missing else result["value"]
            metrics["eval_selection_missing"] = float(missing)
        return metrics

    trainer = _trainer_class(soft, seen, validate if plan is not None else None)(
        model=train_model,
        args=args,
        train_dataset=ExampleDataset(examples),
        eval_dataset=ExampleDataset(examples[:1]) if plan is not None else None,  # unused: validate() evaluates
        data_collator=collate,
        callbacks=[_progress(opts.recipe, opts.max_minutes)]
        + ([_time_limit(opts.max_minutes)] if opts.max_minutes else []),
    )
    resumed_from, resume_path, set_aside = None, None, []
    if opts.resume:
        complete, incomplete = checkpoints_in(Path(args.output_dir))
        if main:  # a checkpoint a killed run left half-written is never resumed from
            set_aside = [set_aside_checkpoint(c).name for c in incomplete]
        if not complete:
            raise ConfigError(
                f"--resume_from_checkpoint: no complete checkpoint-* folder in {args.output_dir}; "
                "train without --resume_from_checkpoint first"
            )
        resume_path = complete[-1]
        resumed_from = json.loads((resume_path / "trainer_state.json").read_text())["global_step"]
    if main:  # until the run finishes, train_info.json says it has not
        started = {
            "status": "incomplete",
            "note": "training started and has not finished (or was killed); the model files here are not this "
            "run's; rerun with --resume_from_checkpoint to continue from its last complete checkpoint",
            "recipe": recipe.name,
            "tasks": opts.tasks,
            "max_steps": opts.max_steps,
            "resumed_from_step": resumed_from,
        }
        (out / "train_info.json").write_text(json.dumps(started, indent=2) + "\n", encoding="utf-8")
    start = time.time()
    from lalm_eval.cli_support import interrupt_note

    with interrupt_note(  # trainer.state is replaced when training starts: read it when interrupted
        lambda: interrupted_training(Path(args.output_dir), trainer.state.global_step, trainer.state.max_steps, opts)
    ):
        with memoised_features(adapter) as memo:  # each clip's features computed once
            result = trainer.train(resume_from_checkpoint=str(resume_path) if resume_path else None)
    seconds = time.time() - start
    shards = _seen_by_rank(seen, args.world_size)
    points = [{"step": e["step"], "loss": e["loss"]} for e in trainer.state.log_history if "loss" in e]
    validation = _validation_info(plan, trainer.state, opts) if plan is not None else None
    if main and validation is not None:
        validation_plot(validation["curve"], plan.metric, validation["kept_step"], out)
    if main:
        if soft is not None:
            soft.save(out)
        elif recipe.method == "lora":
            train_model.save_pretrained(out)
        else:
            model.save_pretrained(out)
            save_processor(adapter, out)
        points = loss_curve(trainer.state.log_history, out)
    info = {
        "status": "finished",
        "recipe": dataclasses.asdict(recipe),
        "setting": setting,
        "tasks": opts.tasks,
        "filter": opts.speakers,
        "examples": len(examples),
        "examples_per_task": {t: sum(e.task == t for e in examples) for t in dict.fromkeys(e.task for e in examples)},
        "model": adapter.name,
        "pretrained": adapter.pretrained,
        "base_config_hash": base_hash,
        "seed": opts.seed,
        "max_steps": opts.max_steps,
        "global_step": trainer.state.global_step,
        "resumed_from_step": resumed_from,
        "incomplete_checkpoints_set_aside": set_aside,
        "learning_rate": args.learning_rate,
        "epochs": args.num_train_epochs,
        "batch_size": opts.batch_size,
        "grad_accum": opts.grad_accum,
        "dtype": adapter.dtype,
        "device": adapter.device,
        **shards,
        "frozen_components": frozen,
        "trainable_parameters": n_trainable,
        "trainable_tensors": len(trainable),
        "seconds": round(seconds, 2),
        "train_samples_per_second": result.metrics.get("train_samples_per_second"),
        "audio_features_computed": memo.misses if memo is not None else None,
        "audio_features_reused": memo.hits if memo is not None else None,
        "loss_first": points[0]["loss"] if points else None,
        "loss_last": points[-1]["loss"] if points else None,
        "evaluate_with": _evaluate_with(adapter, recipe, out),
    }
    if recipe.is_grid(setting):
        point = recipe.grid_points(setting)[opts.grid_point]
        info["grid_point"] = {
            "index": opts.grid_point,
            "label": point_label(point, recipe.training),
            "overrides": point,
        }
    if targets is not None:
        info["lora_targets"] = targets
    if validation is not None:
        info["validation"] = validation
    if main:
        (out / "train_info.json").write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
    if args.world_size > 1:  # the others return once rank 0 has written everything
        import torch.distributed as dist

        dist.barrier()
    return info


def _validation_info(plan, state, opts: TrainOptions) -> dict:
    """``train_info.json``'s ``validation``: the plan, the curve (one point per evaluation, from the
    Trainer's log history), the best evaluation and the checkpoint kept (``kept_step``: the best
    under ``--select best:<metric>``, ties going to the earlier step; else the last step)."""
    curve = []
    for entry in state.log_history:
        per_task: dict = {}
        for key, value in entry.items():
            if key.startswith("eval_") and "/" in key:
                task, metric = key[len("eval_") :].split("/", 1)
                per_task.setdefault(task, {})[metric] = value
        if not per_task:
            continue
        value = None
        if plan.metric is not None and not entry.get("eval_selection_missing"):
            value = entry.get(f"eval_{plan.metric}")
        curve.append(
            {
                "step": entry["step"],
                "epoch": entry.get("epoch"),
                "value": value,
                "per_task": per_task,
                "checkpoint": f"checkpoint-{entry['step']}",
            }
        )
    best = None
    if plan.metric is not None and state.best_global_step:
        best = next((p for p in curve if p["step"] == state.best_global_step), None)
    info = {
        **plan.describe(),
        "every": f"{opts.eval_steps} steps" if opts.eval_steps else "epoch",
        "evaluations": len(curve),
        "curve": curve,
        "best": best,
        "kept_step": best["step"] if best is not None else state.global_step,
        "kept": "best" if best is not None else "last",
    }
    return info


CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def interrupted_training(checkpoint_dir: Path, step: int, max_steps: int, opts: TrainOptions) -> str:
    """What a Ctrl-C during training leaves (``lalm-eval: interrupted; ...``): the last complete
    checkpoint to resume from, or that there is none yet and the steps are lost."""
    complete, _ = checkpoints_in(checkpoint_dir)
    if complete:
        return (
            f"stopped at step {step} of {max_steps}; the last complete checkpoint is {complete[-1]} "
            "(rerun with --resume_from_checkpoint to continue from it)"
        )
    return (
        f"stopped at step {step} of {max_steps} with no checkpoint saved yet (one every --save_steps "
        f"{opts.save_steps} steps), so nothing can resume; rerun to start over (a lower --save_steps keeps more)"
    )


def checkpoints_in(checkpoint_dir: Path) -> tuple[list[Path], list[Path]]:
    """``(complete, incomplete)`` ``checkpoint-N`` folders of ``checkpoint_dir``, by step. The Trainer
    writes ``trainer_state.json`` last, so a checkpoint without it is one a killed run left half-written."""
    found = sorted(
        (p for p in Path(checkpoint_dir).glob("checkpoint-*") if p.is_dir() and CHECKPOINT.match(p.name)),
        key=lambda p: int(CHECKPOINT.match(p.name).group(1)),
    )
    complete = [p for p in found if (p / "trainer_state.json").is_file()]
    return complete, [p for p in found if p not in complete]


def set_aside_checkpoint(path: Path) -> Path:
    """Rename a half-written checkpoint to ``incomplete-checkpoint-N`` (kept, never resumed from)."""
    target, n = path.with_name(f"incomplete-{path.name}"), 1
    while target.exists():
        n += 1
        target = path.with_name(f"incomplete-{path.name}.{n}")
    path.rename(target)
    log.warning("%s: half-written checkpoint (no trainer_state.json) set aside as %s", path, target.name)
    return target


def _evaluate_with(adapter, recipe, out: Path) -> str:
    args = {
        "full": f"pretrained={out}",
        "lora": f"pretrained={adapter.pretrained},peft={out}",
        "prompt_tuning": f"pretrained={adapter.pretrained},soft_prompts={out}",
    }[recipe.method]
    return f"lalm-eval --model {adapter.name} --model_args {args} --tasks ..."


def train_grid(make_adapter, opts: TrainOptions) -> dict:
    """Train every point of the recipe's sweep-grid setting (``--setting grid``: ``full``'s
    ``1e-6-epoch3``, ``1e-5-epoch5``, ``3e-6-epoch3``), each from a fresh model (``make_adapter()``)
    into ``OUT/grid/<label>/`` with its own ``train_info.json``; ``OUT/train_info.json`` lists the
    points (hyperparameters, steps, losses, output, and under ``--eval_split`` the best validation
    value) and, under ``--select best:<metric>``, names the best point (the paper's "tuned on
    validation sets"). Under ``--resume_from_checkpoint`` a finished point is kept as it is, one with
    a checkpoint continues from it, the others train."""
    from lalm_eval.training.recipes import load_recipe_and_setting, point_label

    recipe, setting = load_recipe_and_setting(opts.recipe, opts.tokens, opts.setting, opts.speakers)
    if not recipe.is_grid(setting):
        raise ConfigError(f"--setting {setting}: not a sweep grid of recipe {recipe.name!r}; train it with train()")
    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    points = recipe.grid_points(setting)
    labels = [point_label(p, recipe.training) for p in points]
    summary = {
        "status": "incomplete",
        "note": "a sweep grid: each point trains into grid/<label>/ (its own train_info.json); this file lists "
        "them once all have finished",
        "recipe": recipe.name,
        "setting": setting,
        "tasks": opts.tasks,
        "seed": opts.seed,
        "max_steps": opts.max_steps,
        "points": [],
    }
    main = _is_main()
    if main:
        (out / "train_info.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    for i, (point, label) in enumerate(zip(points, labels)):
        folder = out / "grid" / label
        previous = folder / "train_info.json"
        done = opts.resume and previous.is_file() and json.loads(previous.read_text()).get("status") == "finished"
        if done:
            info = json.loads(previous.read_text())
        else:
            resume = opts.resume and bool(checkpoints_in(folder / "checkpoints")[0])
            info = train(make_adapter(), dataclasses.replace(opts, output_dir=folder, grid_point=i, resume=resume))
        validation = info.get("validation") or {}
        summary["points"].append(
            {
                "label": label,
                "overrides": point,
                "output_dir": str(folder),
                "learning_rate": info["learning_rate"],
                "epochs": info["epochs"],
                "global_step": info["global_step"],
                "loss_first": info["loss_first"],
                "loss_last": info["loss_last"],
                "validation_best": validation.get("best"),
                "kept_from_earlier_run": bool(done),
                "evaluate_with": info["evaluate_with"],
            }
        )
    summary["status"] = "finished"
    summary.pop("note")
    if opts.select:
        greater = (json.loads((out / "grid" / labels[0] / "train_info.json").read_text()).get("validation") or {}).get(
            "greater_is_better", True
        )
        scored = [p for p in summary["points"] if (p["validation_best"] or {}).get("value") is not None]
        if scored:  # ties: the earlier point of the grid
            pick = (max if greater else min)(scored, key=lambda p: p["validation_best"]["value"])
            summary["best_point"] = pick["label"]
        summary["select"] = f"best:{opts.select}"
    if main:
        (out / "train_info.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    return summary


def _is_main() -> bool:
    from lalm_eval.parallel import world

    return world()[0] == 0
