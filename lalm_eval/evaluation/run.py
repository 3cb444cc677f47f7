"""A run: loaded tasks → scan → (cache) → generation, streamed → scoring → groups → :class:`EvalRun`.

:func:`evaluate` takes the tasks :func:`~lalm_eval.evaluation.docs.open_tasks` loaded and opened
(before the model was built) and returns an :class:`EvalRun`, what the report, ``lalm-eval check``
and training's validation read.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path

from tqdm.auto import tqdm

from lalm_eval.api import Request
from lalm_eval.cli_support import interrupt_note
from lalm_eval.errors import ConfigError
from lalm_eval.evaluation.docs import OpenedTasks
from lalm_eval.evaluation.generation import Generation, stream_chunk_size
from lalm_eval.evaluation.groups import aggregate_groups
from lalm_eval.evaluation.progress import Progress, counted
from lalm_eval.evaluation.requests import TaskRun, scan_all, stream_requests
from lalm_eval.evaluation.scoring import score
from lalm_eval.evaluation.usage import merge_sample_info, sample_info
from lalm_eval.metrics.scoring import ScoringContext
from lalm_eval.models.batching import resolve_batch_size
from lalm_eval.tasks import Task
from lalm_eval.tasks.gen_kwargs import check_gen_kwargs
from lalm_eval.timings import Timings


@dataclasses.dataclass
class TaskResult:
    """One task's outcome: ``summary`` (metric → value, ``<metric>_stderr``, ``<metric>_ci95``),
    ``counters`` (filter misses, metric failures), ``errors`` (docs that never reached the model or
    failed there), ``metrics`` (per metric: extras, n, failures, aggregation, missing reason),
    ``sample_info`` (:func:`~lalm_eval.evaluation.usage.sample_info`, plus what ``process_docs``
    left out), ``n`` (original / effective / scored docs) and the per-sample ``rows``."""

    task: Task
    summary: dict
    counters: dict
    errors: list[dict]
    metrics: dict
    sample_info: dict
    n: dict
    rows: list[dict]


@dataclasses.dataclass
class EvalRun:
    """Everything the results file, the report and ``lalm-eval check`` need from one run."""

    tasks: list[Task]
    results: dict[str, TaskResult]
    groups: dict[str, dict]
    cache: dict  # {hits, misses}, counted from the responses (every data-parallel rank's)
    usage: dict  # the run's totals of the tasks' sample_info
    model_identity: dict  # what the adapter is (weights hash, calibrated thresholds, long-audio policy…)
    adapter_counters: dict
    n_generated: int
    seconds: float
    budget: dict | None = None  # set by the CLI under --max_cost
    timings: dict | None = None  # set by the CLI: the results JSON's stage times (lalm_eval/timings.py)

    @property
    def samples(self) -> dict[str, list[dict]]:
        """The per-sample rows of each task."""
        return {name: r.rows for name, r in self.results.items()}


def _without_audio(request: Request) -> Request:
    return dataclasses.replace(request, audios=())


def check_batch_size(batch_size) -> None:
    try:
        resolve_batch_size(batch_size, on_cuda=False)
    except ConfigError:
        raise ConfigError(f"batch_size: must be a whole number >= 1 or auto, got {batch_size!r}; give e.g. 8") from None


def evaluate(
    adapter,
    tasks: OpenedTasks,
    *,
    batch_size="1",
    gen_kwargs: dict | None = None,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    judge_llm=None,
    seed: int = 0,
    stream_chunk: int | None = None,
    judge_samples: int = 1,
    bertscore_models: dict | None = None,
    timings=None,
) -> EvalRun:
    """Run ``adapter`` on the opened ``tasks`` (``cache_dir``: the response cache's folder, by
    default the one the tasks were opened with).

    Streamed: every task's docs are scanned first (prompts and cache keys from the encoded audio,
    nothing decoded; cached answers looked up), then the cache misses are decoded and generated
    ``stream_chunk`` at a time (:func:`~lalm_eval.evaluation.generation.stream_chunk_size`; 0: all
    at once), across tasks in task and doc order, their audio dropped once answered. So at most
    one chunk of decoded audio is alive, whatever the number of docs; cached answers never decode
    audio. Requests, their order, the batches the adapter sees and the scores do not depend on the
    chunk size.

    ``batch_size``, ``stream_chunk`` and ``gen_kwargs`` are checked first, whatever the cache holds
    (a run answered from the cache alone would otherwise accept any value).

    ``timings`` (:class:`~lalm_eval.timings.Timings`) gets the scan, model_load, generation, scoring stages."""
    t0 = time.perf_counter()
    timings = timings if timings is not None else Timings()
    loaded_before = getattr(adapter, "load_seconds", 0.0)
    check_batch_size(batch_size)
    chunk = stream_chunk_size(stream_chunk, batch_size)
    check_gen_kwargs(dict(gen_kwargs or {}), "gen_kwargs")
    cache_dir = Path(cache_dir if cache_dir is not None else tasks.cache_dir)
    generation = Generation(adapter, cache_dir, use_cache, batch_size)
    identity = adapter.identity()
    with timings.stage("scan"):
        runs = scan_all(tasks, identity, gen_kwargs or {})
        found = generation.lookup(p.key for run in runs for p in run.pending if p.key)
    n_docs = sum(len(run.pending) for run in runs)
    to_generate = sum(1 for run in runs for p in run.pending if p.key is None or p.key not in found)
    progress = Progress(
        to_generate,
        getattr(adapter, "name", type(adapter).__name__),
        note=f" ({n_docs} docs of {len(runs)} task(s), {n_docs - to_generate} answered from the response cache)",
    )
    with interrupt_note(functools.partial(what_is_kept, runs, generation.cache, adapter)):
        t_gen = time.perf_counter()
        per_run = stream_requests(runs, found, identity, chunk, counted(generation, progress), _without_audio)
        progress.close()
        loading = getattr(adapter, "load_seconds", 0.0) - loaded_before
        timings.add("model_load", loading)
        timings.add("generation", time.perf_counter() - t_gen - loading)
        t_score = time.perf_counter()
        context = ScoringContext(
            judge_llm=judge_llm,
            cache_dir=cache_dir,
            seed=seed,
            judge_samples=judge_samples,
            bertscore_models=bertscore_models,  # --bertscore_model, over the tasks' backbones
        )
        results = {
            run.task.name: task_result(run, part, context) for run, part in zip(tqdm(runs, desc="scoring"), per_run)
        }
    timings.add("scoring", time.perf_counter() - t_score)
    responses = [r for part in per_run for r in part]
    return EvalRun(
        tasks=tasks.tasks,
        results=results,
        groups=aggregate_groups(tasks.manager, tasks.names, results),
        cache={"hits": sum(r.cached for r in responses), "misses": sum(not r.cached for r in responses)},
        usage=merge_sample_info([r.sample_info for r in results.values()]),
        model_identity=adapter.identity(),
        adapter_counters=dict(getattr(adapter, "counters", None) or {}),
        n_generated=adapter.n_generated,
        seconds=time.perf_counter() - t0,
    )


def task_result(run: TaskRun, responses: list, context: ScoringContext) -> TaskResult:
    """Score one task's responses into its :class:`TaskResult`."""
    scores = score(run, responses, context)
    excluded = run.source.excluded
    return TaskResult(
        task=run.task,
        summary=scores.summary,
        counters=scores.counters,
        errors=run.errors,
        metrics=scores.metrics,
        sample_info={
            **sample_info(scores.rows, run.errors),
            **({"excluded": dict(sorted(excluded.items()))} if excluded else {}),
        },
        n={"original": run.source.n_original, "effective": len(run.docs), "scored": len(run.docs) - len(run.errors)},
        rows=scores.rows,
    )


def what_is_kept(runs: list[TaskRun], cache, adapter) -> str:
    """What an interrupted run leaves for the next one (:func:`lalm_eval.cli_support.interrupt_note`):
    how many of its docs' answers the response cache holds (counted in the file, whoever wrote
    them: this run's batches, an API adapter's single answers, earlier runs), or that
    ``--no_cache`` keeps nothing."""
    n_docs = sum(len(run.docs) for run in runs)
    if cache is None:
        return (
            f"--no_cache: the {adapter.n_generated} answers generated so far are not kept; a rerun starts over "
            "(leave out --no_cache to make a run resumable)"
        )
    keys = {r.key for run in runs for r in run.requests if r.key}
    keys |= {p.key for run in runs for p in run.pending if p.key}
    kept = len(cache.get_many(keys)) if keys else 0
    return (
        f"{kept} of the {n_docs} docs' answers are in the response cache {cache.path}; rerun the same command "
        f"to resume from there (it generates the {n_docs - kept} not cached)"
    )
