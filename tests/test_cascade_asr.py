"""The cascade's speech recognition: a transcript depends on its audio alone, so decoding a
batch over worker processes (``asr_workers``) gives the words and counters of one decoder."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("pocketsphinx")

from lalm_eval.models import MODELS  # noqa: E402
from lalm_eval.models.cascade_parts.asr import PocketsphinxASR  # noqa: E402

SUBJECTS = {"en_s01": "Alice", "en_s02": "Bob", "en_s04": "David"}
GAP = np.zeros(8000, np.float32)


def joined(*audios) -> np.ndarray:
    return np.concatenate([p for a in audios for p in (a, GAP)][:-1]).astype(np.float32)


@pytest.fixture(scope="module")
def mixtures(corpus):
    """Four two-speaker recordings of English test clips (never enrolled: clips 3+)."""
    clips = {sid: [u.load_audio() for u in corpus.utterances_of(sid)[3:6]] for sid in SUBJECTS}
    a, b, c = (clips[s] for s in SUBJECTS)
    return [joined(a[0], b[0]), joined(b[1], c[1]), joined(c[2], a[2]), joined(a[1], c[0])]


@pytest.fixture(scope="module")
def words_alone(mixtures):
    """Each recording's words from a decoder of its own."""
    return [PocketsphinxASR().transcribe(m) for m in mixtures]


def test_a_transcript_depends_on_its_audio_only(mixtures, words_alone):
    """One decoder given the recordings in reverse order gives each the words of a fresh decoder
    (a decoder that kept its cepstral mean from the previous utterance gives different words for
    some of them, depending on what came before)."""
    one = PocketsphinxASR()
    assert [one.transcribe(m) for m in reversed(mixtures)][::-1] == words_alone
    assert all(words_alone), words_alone  # speech was recognised, not an empty string everywhere


def test_worker_processes_give_the_words_of_one_decoder(mixtures, words_alone):
    pool = PocketsphinxASR(workers=2)
    try:
        assert pool.transcribe_many(mixtures) == words_alone
        assert pool._pool is not None  # the decodes did go to worker processes
    finally:
        pool.close()


@pytest.fixture(scope="module")
def enroll_dir(tmp_path_factory, corpus):
    root = tmp_path_factory.mktemp("enroll")
    for sid, name in SUBJECTS.items():
        (root / name).mkdir()
        for utt in corpus.utterances_of(sid)[:3]:
            shutil.copy(utt.audio, root / name / utt.audio.name)
    return root


def _request(kind, question, audio, doc_id):
    from lalm_eval.api import Request

    text = "Listen to the audio, then answer the question.\nQuestion: " + question
    return Request(
        "any_name",
        doc_id,
        (audio,),
        ({"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": text}]},),
        {"max_new_tokens": 128},
        task_metadata={"version": 1.0, "answer_kind": kind},
    )


def test_asr_workers_change_no_answer_and_no_counter(enroll_dir, mixtures):
    """The same batch (captioning of each speaker, reasoning, recognition, transcription of the
    dialogue) through ``asr_workers=1`` and ``asr_workers=2``: every answer and the work
    counters equal; the second decodes ahead, over its worker processes."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    reqs = []
    for i, audio in enumerate(mixtures[:2]):
        reqs += [
            _request("captioning", "What did Alice say?", audio, 10 * i),
            _request("captioning", "What did Bob say?", audio, 10 * i + 1),
            _request("reasoning", "Based on what Bob said, what does he like?", audio, 10 * i + 2),
            _request("recognition", "Is David speaking?", audio, 10 * i + 3),
        ]
    reqs.append(_request("dialogue_transcription", "Transcribe the dialogue by speaker.", mixtures[2], 99))
    answers, counters = [], []
    try:
        for workers in (1, 2):
            adapter = MODELS.get("cascade")(enrollment=str(enroll_dir), asr_workers=workers, threads=1)
            answers.append([r.text for r in adapter.generate(reqs)])
            counters.append(dict(adapter.counters))
            assert adapter.asr.workers == workers and (adapter.asr._pool is not None) == (workers > 1)
            adapter.asr.close()
    finally:
        torch.set_num_threads(threads)
    assert None not in answers[0]
    assert any("says" in a for a in answers[0]), answers[0]  # some speech was transcribed
    assert answers[1] == answers[0]
    assert counters[1] == counters[0]
    assert counters[0]["asr_calls"] >= 5 and counters[0]["analysis_cache_hits"] > 0


def test_asr_workers_must_be_a_count(enroll_dir):
    from lalm_eval.errors import ConfigError

    with pytest.raises(ConfigError, match="asr_workers"):
        MODELS.get("cascade")(enrollment=str(enroll_dir), asr_workers="0")
