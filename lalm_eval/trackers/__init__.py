"""Experiment trackers as lm-eval users know them: ``--wandb_args`` (Weights & Biases) and
``--hf_hub_log_args`` (a Hub dataset). Both read the run's written files, after
``write_outputs``; ``wandb`` and ``huggingface_hub`` are imported only when their flag is given.

Their flags are checked before the evaluation starts (a bad ``k=v``, an unknown key, a missing
package, no ``--output_path``: exit 2, nothing run). A tracker that fails after the run (network,
login, quota) loses nothing: the results are already on disk; the failure is one ``lalm-eval:
warning:`` line on stderr and the exit status stays the evaluation's (0, 3 or 4), so a scheduler
does not rerun a finished evaluation for a dashboard."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from lalm_eval.errors import ConfigError
from lalm_eval.trackers.args import parse_tracker_args

EXTRA = "pip install 'lalm-eval[track]'"


def add_tracker_flags(ap) -> None:
    ap.add_argument("--wandb_args", default=None, help="k=v,... passed to wandb.init (project=P,name=N,...)")
    ap.add_argument("--wandb_config_args", default=None, help="k=v,... added to the W&B run's config")
    ap.add_argument("--wandb_log_audio", action="store_true", help="add each clip as wandb.Audio to the samples table")
    ap.add_argument(
        "--hf_hub_log_args",
        default=None,
        help="hub_results_org=ORG,push_results_to_hub=True,push_samples_to_hub=True,public_repo=False,dry_run=True,...",
    )


def _require(module: str, flag: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"{flag}: needs the package {module!r}; {EXTRA}")


@dataclass
class Trackers:
    wandb_args: dict | None = None
    wandb_config: dict = field(default_factory=dict)
    log_audio: bool = False
    hub: object | None = None  # HubOptions
    failures: list[str] = field(default_factory=list)

    def run(self, files: dict, opened=None) -> bool:
        """Log the written run; every failure reported on stderr. True when all of them worked."""
        from lalm_eval.trackers.run_files import read_run_files

        try:
            run_files = read_run_files(files)
        except Exception as exc:  # noqa: BLE001 - reported like a tracker failure: the run is on disk
            self._warn("--wandb_args" if self.wandb_args is not None else "--hf_hub_log_args", exc)
            return False
        if self.wandb_args is not None:
            self._attempt("--wandb_args", lambda: self._wandb(run_files, opened))
        if self.hub is not None:
            self._attempt("--hf_hub_log_args", lambda: self._hub(run_files))
        return not self.failures

    def _wandb(self, run_files, opened) -> None:
        from lalm_eval.trackers.wandb_log import log_to_wandb

        audio_of = audio_lookup(opened) if self.log_audio else None
        where = log_to_wandb(run_files, self.wandb_args, audio_of, self.wandb_config)
        print(
            f"wandb: logged {run_files.results_file.name} and {len(run_files.samples_files)} samples table(s) ({where})"
        )

    def _hub(self, run_files) -> None:
        from lalm_eval.trackers.hub_log import describe, push_to_hub

        uploads = push_to_hub(run_files, self.hub)
        verb = "would push (dry_run=True)" if self.hub.dry_run else "pushed"
        print(f"hub: {verb} {len(uploads)} file(s):\n{describe(uploads)}")

    def _attempt(self, flag: str, fn) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a tracker never loses the run; reported, not raised
            self._warn(flag, exc)

    def _warn(self, flag: str, exc: BaseException) -> None:
        from lalm_eval.redaction import redact

        self.failures.append(flag)
        print(
            f"lalm-eval: warning: {flag}: logging failed ({type(exc).__name__}: {redact(str(exc))}); "
            "the results and samples are in --output_path, the exit status is the evaluation's",
            file=sys.stderr,
        )


def prepare_trackers(args) -> Trackers | None:
    """The tracker flags checked (keys, values, packages, ``--output_path``); None when none is given."""
    wandb_text = getattr(args, "wandb_args", None)
    hub_text = getattr(args, "hf_hub_log_args", None)
    for flag, given in (
        ("--wandb_log_audio", args_get(args, "wandb_log_audio")),
        ("--wandb_config_args", args_get(args, "wandb_config_args")),
    ):
        if given and wandb_text is None:
            raise ConfigError(f"{flag}: logs to W&B only with --wandb_args; add --wandb_args project=P")
    if wandb_text is None and hub_text is None:
        return None
    flag = "--wandb_args" if wandb_text is not None else "--hf_hub_log_args"
    if not getattr(args, "output_path", None):
        raise ConfigError(f"{flag}: logs the written results; add --output_path DIR (and --log_samples for samples)")
    trackers = Trackers(log_audio=bool(getattr(args, "wandb_log_audio", False)))
    if wandb_text is not None:
        trackers.wandb_args = parse_tracker_args(wandb_text, "--wandb_args")
        trackers.wandb_config = parse_tracker_args(args_get(args, "wandb_config_args"), "--wandb_config_args")
        _require("wandb", "--wandb_args")
    if hub_text is not None:
        from lalm_eval.trackers.hub_log import FLAG, HUB_KEYS, hub_options

        trackers.hub = hub_options(parse_tracker_args(hub_text, FLAG, HUB_KEYS))
        if trackers.hub.push_samples and not getattr(args, "log_samples", False):
            raise ConfigError(f"{FLAG}: push_samples_to_hub=True needs the samples; add --log_samples")
        if not trackers.hub.dry_run:
            _require("huggingface_hub", FLAG)
            from huggingface_hub import get_token

            if not (trackers.hub.token or get_token()):
                raise ConfigError(
                    f"{FLAG}: pushing needs a Hugging Face token with write access; set HF_TOKEN, run "
                    "'hf auth login' or give token=..., or add dry_run=True to list the files only"
                )
    return trackers


def args_get(args, name: str):
    return getattr(args, name, None)


def audio_lookup(opened):
    """``(task, doc_id)`` → (16 kHz float32 samples, 16000) of the doc's first clip, or None."""
    from lalm_eval.evaluation.docs import decode_audio

    by_task = {o.task.name: o for o in (opened.opened if opened is not None else [])}

    def audio_of(task: str, doc_id):
        o = by_task.get(task)
        if o is None or not isinstance(doc_id, int) or not 0 <= doc_id < len(o):
            return None
        clips = o.task.audio_of(o.docs[doc_id])
        return (decode_audio(clips[0]), 16_000) if clips else None

    return audio_of


__all__ = ["Trackers", "add_tracker_flags", "audio_lookup", "prepare_trackers"]
