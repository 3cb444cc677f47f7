"""The cascade's speaker count on REAL speech, through the adapter's own code path.

Data (installed by ``scripts/fetch_real_voices.sh``; CI runs it): the real 30 s two-person
telephone call of the pyannote-audio 4.0.7 wheel and single-voice prompts of the Debian Asterisk
packages (``bench/real_voices.py``). Without them the tests skip and say what is missing.

Enrollment: embedded-corpus (synthetic) voices, as in ``tests/test_cascade.py``; the cascade
never sees the real voices before the test audio. The count on the call needs the gap
statistic's one-or-two test (``split_test=gap``, the default): the calibrated threshold alone
merges the call's two speakers (``bench/cascade_counting_real.py`` has the figures).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from lalm_eval.api import Request
from lalm_eval.models import MODELS
from lalm_eval.models.cascade_parts.analysis import cluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.real_voices import alternating_dialogue, asterisk_voices, pyannote_call  # noqa: E402

FETCH = "run scripts/fetch_real_voices.sh (apt packages + the pyannote-audio wheel)"
SUBJECTS = {"en_s01": "Alice", "en_s02": "Bob", "en_s04": "David", "zh_s01": "王芳"}
PAIRS = [("allison", "carlo"), ("june", "menardi"), ("ivrvoice_ru", "june")]
QUESTION = "Listen to the audio, then answer the question.\nQuestion: How many different speakers are there?"


@pytest.fixture(scope="module")
def call():
    found = pyannote_call()
    if found is None:
        pytest.skip(f"the real two-person call (pyannote-audio wheel) is absent: {FETCH}")
    return found[0]


@pytest.fixture(scope="module")
def voices():
    found = asterisk_voices(min_s=1.5, max_s=4.0)
    missing = sorted({"allison", "carlo", "june", "menardi", "ivrvoice_ru"} - set(found))
    if missing:
        pytest.skip(f"real Asterisk voices {missing} are absent: {FETCH}")
    return found


@pytest.fixture(scope="module")
def adapter(tmp_path_factory, corpus):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    root = tmp_path_factory.mktemp("enroll_real")
    for sid, name in SUBJECTS.items():
        (root / name).mkdir()
        for utt in corpus.utterances_of(sid)[:3]:
            shutil.copy(utt.audio, root / name / utt.audio.name)
    yield MODELS.get("cascade")(enrollment=str(root), threads=1)
    torch.set_num_threads(before)


def count(adapter, audio: np.ndarray) -> str:
    req = Request(
        task="t1_sr_speaker_counting",
        doc_id=0,
        audios=[audio],
        messages=[{"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": QUESTION}]}],
        gen_kwargs={},
        task_metadata={"answer_kind": "speaker_counting"},
    )
    (response,) = adapter.generate([req])
    assert response.error is None, response.error
    return response.text


def one_voice(clips: list[np.ndarray], seconds: float = 30.0) -> np.ndarray:
    gap, parts, i = np.zeros(4800, np.float32), [], 0
    while sum(len(p) for p in parts) < seconds * 16_000:
        parts += [clips[i % len(clips)], gap]
        i += 1
    return np.concatenate(parts)[: int(seconds * 16_000)]


def test_the_real_call_has_two_speakers(call, adapter):
    assert count(adapter, call) == "There are two speakers in the conversation."
    figures = adapter.clustering(call).split_test  # the threshold found one; the gap test two
    assert figures is not None and figures["two"] and figures["kept"] == 2
    assert adapter.identity()["split_test"]["dims"] == 2
    assert adapter.calibration["split_test"]["enrollment_one_speaker_tests"] == len(SUBJECTS)


@pytest.mark.parametrize("name", ["allison", "carlo", "ivrvoice_ru", "june", "menardi"])
def test_a_real_single_voice_is_one_speaker(voices, adapter, name):
    assert count(adapter, one_voice(voices[name])) == "There is one speaker in the conversation."


@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_two_real_voices_alternating_are_two_speakers(voices, adapter, pair):
    audio, _ = alternating_dialogue(voices[pair[0]], voices[pair[1]])
    assert count(adapter, audio) == "There are two speakers in the conversation."


def test_the_threshold_alone_merges_the_call(call, adapter):
    """What the gap test is for: the calibrated threshold alone counts the call as one speaker."""
    alone = cluster(adapter.analysis(call), 16_000, adapter.cluster_threshold, adapter.min_speech_s, adapter.cfg.median)
    assert alone.n_speakers == 1 and alone.split_test is None
