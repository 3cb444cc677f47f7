"""The details repository's dataset card, rebuilt from the files the repository holds, as
lm-eval's ``EvaluationTracker.recreate_metadata_card`` does: a configuration
``<model>__results`` per model and ``<model>__<task>`` per model and task, each with a split of
its newest file's date (``-``, ``:`` and ``T`` made ``_``) and ``latest``, so that
``load_dataset(repo, "<model>__<task>", split="latest")`` reads the newest samples.
Unlike lm-eval's ``**/<file>`` glob, a split names the file by its folder (two models evaluated
at the same second do not mix)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from lalm_eval.templating import jinja_env

RESULTS = re.compile(r"results_(?P<date>.+)\.json")
SAMPLES = re.compile(r"samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[^_]+)\.jsonl")


def split_name(date: str) -> str:
    return re.sub(r"[^\w.]", "_", date)


def card_configs(paths: list[str]) -> list[dict]:
    """The card's ``configs`` for the repository's files, sorted by name (same files, same card)."""
    newest: dict[str, tuple[str, str]] = {}  # config → (date, path)
    for path in paths:
        model, _, name = path.rpartition("/")
        if not model or "/" in model:
            continue
        if m := RESULTS.fullmatch(name):
            config = f"{model}__results"
        elif m := SAMPLES.fullmatch(name):
            config = f"{model}__{re.sub(r'[^A-Za-z0-9_]+', '_', m['task'])}"
        else:
            continue
        if config not in newest or m["date"] > newest[config][0]:
            newest[config] = (m["date"], path)
    return [
        {
            "config_name": config,
            "data_files": [{"split": split_name(date), "path": [path]}, {"split": "latest", "path": [path]}],
        }
        for config, (date, path) in sorted(newest.items())
    ]


def render_card(repo_id: str, paths: list[str]) -> str:
    configs = card_configs(paths)
    env = jinja_env(Path(__file__).with_name("templates"), keep_trailing_newline=True)
    models = sorted({c["config_name"].rsplit("__", 1)[0] for c in configs})
    example = next((c["config_name"] for c in configs if not c["config_name"].endswith("__results")), None)
    return env.get_template("details_card.md.j2").render(
        front_matter=yaml.safe_dump({"configs": configs}, sort_keys=False, allow_unicode=True),
        repo_id=repo_id,
        models=models,
        example_config=example or (configs[0]["config_name"] if configs else "<model>__<task>"),
    )
