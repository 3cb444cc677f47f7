import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from palm_bench.corpus.embedded import DATA_DIR, SOURCE_DIR, load_embedded_corpus


@pytest.fixture(scope="session")
def corpus():
    return load_embedded_corpus()


@pytest.fixture(scope="session")
def tiny_qwen2_audio(tmp_path_factory) -> Path:
    """The default tiny random-weight Qwen2-Audio (``lalm-eval make-tiny-model qwen2_audio``), built
    once per session (per xdist worker) under the session's tmp folder, never in the checkout.
    An absolute path: a run's ``pretrained=`` and lm-eval's model folder name are made from it."""
    root = tmp_path_factory.mktemp("tiny-model")
    out = root / "tiny-qwen2-audio"
    cli = Path(sys.executable).with_name("lalm-eval")
    proc = subprocess.run(
        [str(cli), "make-tiny-model", "qwen2_audio", str(out), "--cache_dir", str(root / "cache")],
        env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "config.json").is_file()
    return out


@pytest.fixture
def small_corpus_dir(tmp_path, corpus):
    """A copy of a few embedded clips in the embedded layout (data/ + source/), to break."""
    data, source = tmp_path / "data", tmp_path / "source"
    shutil.copytree(SOURCE_DIR, source)
    lines = []
    for sid in ("en_s01", "en_s02", "zh_s01"):
        for utt in corpus.utterances_of(sid)[:2]:
            rel = Path("audio") / sid / utt.audio.name
            (data / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(utt.audio, data / rel)
            lines.append(
                {
                    "id": utt.id,
                    "speaker": sid,
                    "language": utt.language,
                    "text": utt.text,
                    "duration": utt.duration,
                    "audio": rel.as_posix(),
                    "sampling_rate": utt.sampling_rate,
                    "voice": utt.voice,
                }
            )
    (data / "manifest.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return tmp_path


def tone(seconds=1.0, freq=220.0, sr=16000):
    t = np.arange(int(seconds * sr)) / sr
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


# The longest test files (each 20 s to 3 min on 2 cores), started first: with two workers
# (scripts/test.sh: pytest -n 2 --dist loadfile) a long file started last would run alone at the end.
LONG_FILES_FIRST = (
    "test_cli_acceptance.py",
    "test_gemini.py",
    "test_corpus_info_cli.py",
    "test_msu_builder.py",
    "test_palm_builder.py",
    "test_openai_audio.py",
    "test_run_accounting.py",
    "test_view.py",
    "test_trackers.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_FILES_FIRST)}
    # a stable sort: the order inside a file, and of all other files, stays pytest's own
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
