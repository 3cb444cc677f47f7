"""``--hf_hub_log_args``: the results and samples pushed as a Hub dataset in lm-eval's layout
(``EvaluationTracker``): the results file to ``<org>/<results_repo_name>`` at
``<model_name_sanitized>/results_<date>.json``; the samples files (and, as lm-eval's folder upload
does, the results file) to ``<org>/<details_repo_name>`` at
``<model_name_sanitized>/samples_<task>_<date>.jsonl``, with the details repository's card rebuilt
(``hub_card``). Both repositories get ``-private`` appended and are made private unless
``public_repo=True``; ``hub_repo_name`` names both (lm-eval's deprecated key), the default name is
``lm-eval-results``, an empty ``hub_results_org`` is the token's user. ``dry_run=True`` lists the
uploads and sends nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lalm_eval.errors import ConfigError
from lalm_eval.trackers.args import want_bool
from lalm_eval.trackers.run_files import RunFiles, model_name, sanitize_model_name

FLAG = "--hf_hub_log_args"
HUB_KEYS = (
    "hub_results_org",
    "hub_repo_name",
    "details_repo_name",
    "results_repo_name",
    "push_results_to_hub",
    "push_samples_to_hub",
    "public_repo",
    "token",
    "dry_run",
)
DEFAULT_REPO_NAME = "lm-eval-results"  # lm-eval's default, kept so that its readers find the files


@dataclass(frozen=True)
class Upload:
    repo_id: str
    path_in_repo: str
    local_file: Path
    kind: str  # "results" or "samples"


@dataclass(frozen=True)
class HubOptions:
    org: str
    details_repo_name: str
    results_repo_name: str
    push_results: bool
    push_samples: bool
    public: bool
    token: str | None
    dry_run: bool

    def repo_id(self, name: str) -> str:
        return f"{self.org}/{name}" + ("" if self.public else "-private")


def hub_options(options: dict) -> HubOptions:
    """The checked options (names and defaults of lm-eval's ``EvaluationTracker``)."""
    for key in ("hub_results_org", "hub_repo_name", "details_repo_name", "results_repo_name", "token"):
        if options.get(key) is not None and not isinstance(options[key], str):
            raise ConfigError(f"{FLAG}: {key}={options[key]!r} must be text; quote it, e.g. {key}='\"{options[key]}\"'")
    push_results = want_bool(options, "push_results_to_hub", FLAG)
    push_samples = want_bool(options, "push_samples_to_hub", FLAG)
    if not (push_results or push_samples):
        raise ConfigError(f"{FLAG}: nothing to push; add push_results_to_hub=True and/or push_samples_to_hub=True")
    hub_repo = options.get("hub_repo_name") or ""
    details = hub_repo or options.get("details_repo_name") or DEFAULT_REPO_NAME
    results = hub_repo or options.get("results_repo_name") or details
    return HubOptions(
        org=options.get("hub_results_org") or "",
        details_repo_name=details,
        results_repo_name=results,
        push_results=push_results,
        push_samples=push_samples,
        public=want_bool(options, "public_repo", FLAG),
        token=options.get("token") or None,
        dry_run=want_bool(options, "dry_run", FLAG),
    )


def plan_uploads(run_files: RunFiles, opts: HubOptions, org: str) -> list[Upload]:
    """Every file to send and where it goes, in order: the results file to the results repository;
    with the samples, the samples files and the results file to the details repository (lm-eval
    uploads the model's whole folder there), whose card :func:`push_to_hub` rebuilds."""
    folder = sanitize_model_name(model_name(run_files.results))
    opts = HubOptions(**{**opts.__dict__, "org": org})
    results = run_files.results_file
    uploads = []
    if opts.push_results:
        uploads.append(Upload(opts.repo_id(opts.results_repo_name), f"{folder}/{results.name}", results, "results"))
    if opts.push_samples:
        details = opts.repo_id(opts.details_repo_name)
        for task, f in run_files.samples_files.items():
            name = f"samples_{task}_{run_files.stamp}.jsonl"
            uploads.append(Upload(details, f"{folder}/{name}", f, "samples"))
        if not (opts.push_results and details == opts.repo_id(opts.results_repo_name)):
            uploads.append(Upload(details, f"{folder}/{results.name}", results, "results"))
    return uploads


def describe(uploads: list[Upload]) -> str:
    lines = [f"  {u.local_file} -> datasets/{u.repo_id}/{u.path_in_repo}" for u in uploads]
    cards = sorted({u.repo_id for u in uploads if u.kind == "samples"})
    return "\n".join(lines + [f"  (dataset card) -> datasets/{r}/README.md" for r in cards])


def push_to_hub(run_files: RunFiles, opts: HubOptions) -> list[Upload]:
    """Create the dataset repositories (``exist_ok``) and commit the files: one commit per
    repository. ``opts.dry_run``: the list only (no org given: ``<your-user>``, no token is asked)."""
    if opts.dry_run:
        return plan_uploads(run_files, opts, opts.org or "<your-user>")
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(token=opts.token)
    org = opts.org or api.whoami()["name"]
    uploads = plan_uploads(run_files, opts, org)
    model = model_name(run_files.results)
    by_repo: dict[str, list[Upload]] = {}
    for u in uploads:
        by_repo.setdefault(u.repo_id, []).append(u)
    for repo_id, items in by_repo.items():
        api.create_repo(repo_id=repo_id, repo_type="dataset", private=not opts.public, exist_ok=True)
        kinds = " and ".join(sorted({u.kind for u in items}))
        operations = [CommitOperationAdd(u.path_in_repo, str(u.local_file)) for u in items]
        if any(u.kind == "samples" for u in items):  # the details repository: its card over old and new files
            from lalm_eval.trackers.hub_card import render_card

            held = api.list_repo_files(repo_id=repo_id, repo_type="dataset")
            card = render_card(repo_id, sorted(set(held) | {u.path_in_repo for u in items}))
            operations.append(CommitOperationAdd("README.md", card.encode("utf-8")))
        api.create_commit(
            repo_id=repo_id, repo_type="dataset", operations=operations, commit_message=f"Adding {kinds} for {model}"
        )
    return uploads
