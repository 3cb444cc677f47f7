"""Training examples from harness tasks, built exactly as the evaluation builds its requests.

One example per doc of a task's ``training_split``: the task's own chat messages
(``Task.messages``), audios (``Task.audio_of`` → ``decode_audio``), subjects
(``Task.subjects_of``) and target (``Task.render_target``), so training and evaluation prompts
cannot drift. :class:`Collator` turns examples into model inputs through the adapter's own
``build_inputs`` (its chat template and processor, as in evaluation: the prompt ends with the
generation prompt) and appends the target's tokens and the end-of-turn token; labels are -100
on the prompt (and padding), so the loss is on the answer tokens only. Batches are right-padded.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from lalm_eval.api import Request
from lalm_eval.errors import ConfigError, DataError

#: the doc field the speaker-count filters read (PALM-Bench rows carry it)
SPEAKER_COUNT_FIELD = "n_speakers"
FILTERS = {"single_speaker": lambda n: n == 1, "multi_speaker": lambda n: n > 1}
END_OF_TURN = "<|im_end|>"  # Qwen chat templates close the assistant turn with it


@dataclasses.dataclass(frozen=True)
class Example:
    task: str
    doc_id: int
    messages: tuple
    raw_audios: tuple  # the docs' audio values, decoded when the example is collated
    target: str
    subjects: tuple[str, ...] = ()

    def request(self) -> Request:
        from lalm_eval.evaluation.docs import decode_audio

        audios = tuple(decode_audio(a) for a in self.raw_audios)
        return Request(self.task, self.doc_id, audios, self.messages, {}, subjects=self.subjects)


def training_examples(
    task_names: list[str], cache_dir: Path, include_path=None, speakers: str | None = None, limit: int | None = None
) -> list[Example]:
    """Examples of every task's ``training_split`` (filtered by speaker count, ``limit`` per task)."""
    from lalm_eval.evaluation.docs import naming_task, open_docs
    from lalm_eval.tasks import TaskManager

    if speakers is not None and speakers not in FILTERS:
        raise ConfigError(f"--filter: must be one of {sorted(FILTERS)}, got {speakers!r}; give one of them")
    manager = TaskManager(include_paths=include_path)
    out: list[Example] = []
    for task in [manager.load_task(n) for n in manager.resolve(task_names)]:
        split = task.config.training_split
        if not split:
            raise ConfigError(
                f"{task.yaml_file}: task {task.name!r} declares no training_split; `lalm-eval train` "
                f"fine-tunes on a task's training_split (add e.g. `training_split: train`)"
            )
        with naming_task(task):  # a missing dataset, config or split: said with the task's name
            docs = open_docs(task, cache_dir, None, split=split).docs
        kept = []
        for doc_id, doc in enumerate(docs):
            if speakers is not None:
                if SPEAKER_COUNT_FIELD not in doc:
                    raise DataError(
                        task.config.dataset_path,
                        f"--filter {speakers}: the docs of task {task.name!r} have no {SPEAKER_COUNT_FIELD!r} "
                        "field; leave out --filter for this task",
                        field=SPEAKER_COUNT_FIELD,
                    )
                if not FILTERS[speakers](int(doc[SPEAKER_COUNT_FIELD])):
                    continue
            target = task.render_target(doc)
            if isinstance(target, (list, tuple)):  # several references: train on the first
                target = target[0] if target else ""
            if not isinstance(target, str) or not target:
                raise DataError(
                    task.config.dataset_path,
                    f"task {task.name!r} doc {doc_id}: doc_to_target gave {str(target)[:80]!r}, not a non-empty "
                    "string; give every training doc a target",
                    field="doc_to_target",
                )
            kept.append(
                Example(
                    task.name,
                    doc_id,
                    tuple(task.messages(doc)),
                    tuple(task.audio_of(doc)),
                    target,
                    tuple(task.subjects_of(doc)),
                )
            )
            if limit is not None and len(kept) >= limit:
                break
        if not kept:
            raise DataError(
                task.config.dataset_path,
                f"task {task.name!r}: no {split!r} docs left"
                + (f" after --filter {speakers}" if speakers else "")
                + "; check the task's training_split and dataset",
            )
        out.extend(kept)
    return out


def example_texts(examples: list[Example]) -> list[str]:
    """Every text the examples put through the tokenizer: their messages' text parts and targets
    (what ``make-tiny-model --vocab word --vocab-tasks`` builds its word-level vocabulary from)."""
    out = []
    for e in examples:
        for message in e.messages:
            content = message.get("content")
            parts = [content] if isinstance(content, str) else [p.get("text") for p in content or ()]
            out += [p for p in parts if isinstance(p, str) and p]
        out.append(e.target)
    return out


class ExampleDataset:
    """A map-style dataset of examples (what ``Trainer`` iterates; audio decoded by the collator)."""

    def __init__(self, examples: list[Example]):
        self.examples = list(examples)

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> Example:
        return self.examples[i]


class FeatureMemo:
    """A processor's feature extractor whose results are kept by audio content (up to
    ``max_bytes``): training computes the features of every clip once, though each clip is asked
    about several times and revisited every epoch (on the tiny model on a CPU the Whisper
    features of a 30 s window cost as much as a sixth of a training step). The features are the
    extractor's own, bit for bit; a copy of the cached batch is returned, so callers may pop keys."""

    def __init__(self, inner, max_bytes: int = 2 << 30):
        self.inner, self.max_bytes, self.memo, self.bytes, self.hits, self.misses = inner, max_bytes, {}, 0, 0, 0

    def __getattr__(self, name):  # fetch_audio, sampling_rate, ...: the extractor's own
        return getattr(self.inner, name)

    @staticmethod
    def _key(audio, kwargs) -> tuple | None:
        import hashlib

        import numpy as np

        arrays = list(audio) if isinstance(audio, (list, tuple)) else [audio]
        if not all(isinstance(a, np.ndarray) for a in arrays):
            return None
        digests = tuple(
            (hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=16).hexdigest(), a.shape, str(a.dtype))
            for a in arrays
        )
        return digests, repr(sorted(kwargs.items(), key=lambda kv: kv[0]))

    def __call__(self, audio, **kwargs):
        import torch

        key = self._key(audio, kwargs)
        hit = self.memo.get(key) if key is not None else None
        if hit is None:
            self.misses += 1
            hit = self.inner(audio, **kwargs)
            size = sum(v.numel() * v.element_size() for v in hit.values() if torch.is_tensor(v))
            if key is not None and self.bytes + size <= self.max_bytes:
                self.memo[key], self.bytes = hit, self.bytes + size
        else:
            self.hits += 1
        return type(hit)(dict(hit))


@contextlib.contextmanager
def memoised_features(adapter, max_bytes: int = 2 << 30):
    """While inside, ``adapter.processor``'s feature extractor is a :class:`FeatureMemo` (the
    original is put back on exit, before anything saves the processor); yields the memo (None when
    the processor has no feature extractor)."""
    processor = getattr(adapter, "processor", None)
    inner = getattr(processor, "feature_extractor", None)
    if inner is None or not callable(inner):
        yield None
        return
    memo = FeatureMemo(inner, max_bytes)
    processor.feature_extractor = memo
    try:
        yield memo
    finally:
        processor.feature_extractor = inner


class Collator:
    """Examples → right-padded model inputs with labels on the answer tokens only.

    ``prepare(requests, inputs)`` (optional) may edit a request before ``build_inputs`` and return
    extra keys for the batch (the soft-prompt wrapper inserts its placeholders and names the
    subjects this way).
    """

    def __init__(self, adapter, prepare=None):
        self.adapter, self.prepare = adapter, prepare
        tok = adapter.tokenizer
        end = END_OF_TURN if END_OF_TURN in tok.get_vocab() else tok.eos_token
        if end is None:
            raise ConfigError(
                f"{adapter.pretrained}: the tokenizer has no {END_OF_TURN} and no eos token to end the answer with"
            )
        self.end_text, self.pad_id = end, tok.pad_token_id if tok.pad_token_id is not None else 0

    def __call__(self, examples: list[Example]) -> dict:
        import torch

        adapter, tok = self.adapter, self.adapter.tokenizer
        rows, audio_parts, extra = [], {}, {}
        requests = [e.request() for e in examples]
        if self.prepare is not None:
            requests, extra = self.prepare(requests)
        for example, request in zip(examples, requests):
            inputs = adapter.build_inputs([request])
            prompt = inputs["input_ids"][0][inputs["attention_mask"][0].bool()]
            answer = torch.tensor(
                tok(example.target + self.end_text, add_special_tokens=False)["input_ids"], dtype=prompt.dtype
            )
            rows.append((prompt, answer))
            for key in adapter.AUDIO_KEYS + ("feature_attention_mask",):
                if key in inputs:
                    audio_parts.setdefault(key, []).append(inputs[key])
        width = max(len(p) + len(a) for p, a in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        labels = torch.full((len(rows), width), -100, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (p, a) in enumerate(rows):
            n = len(p) + len(a)
            ids[i, :n] = torch.cat([p, a])
            labels[i, len(p) : n] = a
            mask[i, :n] = 1
        batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
        batch.update({k: torch.cat(v) for k, v in audio_parts.items()})
        batch.update(extra)
        return batch
