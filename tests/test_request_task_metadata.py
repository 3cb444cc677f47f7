"""A task's ``metadata`` reaches the adapter as ``Request.task_metadata`` (what the cascade routes
on), for a task renamed through an include, without entering the response-cache key."""

import io

import datasets
import numpy as np
import soundfile as sf

from lalm_eval.api import Adapter, Response
from lalm_eval.cache import encoded_audio_id, request_key
from lalm_eval.hub.card import front_matter, write_card
from lalm_eval.hub.parquet import export_dataset_dict
from tests.evaluation_helpers import evaluate_names


def _dataset(folder):
    buf = io.BytesIO()
    sf.write(buf, (0.3 * np.sin(np.arange(16000) / 16000 * 2 * np.pi * 220)).astype(np.float32), 16000, format="FLAC")
    ds = datasets.Dataset.from_dict(
        {
            "question": ["How many?", "Who?"],
            "answer": ["Two.", "Bob"],
            "audio": [{"bytes": buf.getvalue(), "path": None}] * 2,
        },
        features=datasets.Features(
            {
                "question": datasets.Value("string"),
                "answer": datasets.Value("string"),
                "audio": datasets.Audio(sampling_rate=16000),
            }
        ),
    )
    write_card(
        folder, f"---\n{front_matter(export_dataset_dict({'main': datasets.DatasetDict({'test': ds})}, folder))}\n---\n"
    )
    return buf.getvalue()


class Recorder(Adapter):
    name = "recorder"

    def __init__(self):
        super().__init__()
        self.seen = []

    def identity(self):
        return {"name": self.name}

    def generate(self, requests, batch_size=1):
        self.seen.extend(requests)
        return [Response("Two.") for _ in requests]


def test_metadata_reaches_the_request_and_stays_out_of_the_key(tmp_path):
    data, tasks = tmp_path / "ds", tmp_path / "tasks"
    data.mkdir()
    tasks.mkdir()
    flac = _dataset(data)
    (tasks / "original.yaml").write_text(f"""task: counting_original
dataset_path: {data}
dataset_name: main
test_split: test
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "{{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
metric_list: [{{metric: exact_match, aggregation: mean, higher_is_better: true}}]
metadata: {{version: 1, answer_kind: speaker_counting}}
""")
    (tasks / "renamed.yaml").write_text("include: original.yaml\ntask: my_renamed_counting\n")
    adapter = Recorder()
    run = evaluate_names(
        adapter, ["my_renamed_counting"], include_path=[tasks], cache_dir=tmp_path / "c", use_cache=False
    )
    assert [r.task_metadata for r in adapter.seen] == [{"version": 1, "answer_kind": "speaker_counting"}] * 2
    task = run.tasks[0]
    for r in adapter.seen:  # the key is the recipe without the metadata field
        assert r.key == request_key(
            adapter.identity(),
            task.task_hash,
            r.doc_id,
            (),
            list(r.messages),
            r.gen_kwargs,
            audio_ids=[encoded_audio_id(flac)],
        )
