"""The cascade's enrollment record (embeddings + calibrated thresholds) cached across constructions.

A small enrollment (two subjects, two clips each, clean calibration) keeps each construction to
seconds; the encoder's ``embed`` calls are counted to tell a cache hit from a recomputation.
"""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

from lalm_eval.audio.speaker_backends import ResemblyzerEncoder
from lalm_eval.models import MODELS
from lalm_eval.models.cascade_parts import enrollment_cache

SUBJECTS = {"en_s01": "Alice", "en_s02": "Bob"}


@pytest.fixture(autouse=True)
def one_torch_thread():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def enroll_dir(tmp_path, corpus):
    root = tmp_path / "enroll"
    for sid, name in SUBJECTS.items():
        (root / name).mkdir(parents=True)
        for utt in corpus.utterances_of(sid)[:2]:
            shutil.copy(utt.audio, root / name / utt.audio.name)
    return root


@pytest.fixture
def embed_calls(monkeypatch):
    calls = []
    original = ResemblyzerEncoder.embed

    def counting(self, audios, *args, **kwargs):
        calls.append(len(audios))
        return original(self, audios, *args, **kwargs)

    monkeypatch.setattr(ResemblyzerEncoder, "embed", counting)
    return calls


def build(enroll_dir, cache_dir):
    return MODELS.get("cascade")(
        enrollment=str(enroll_dir), cache_dir=str(cache_dir), calibration="clean", split_test="off"
    )


def records(cache_dir):
    return sorted((cache_dir / enrollment_cache.FOLDER).glob("*.npz"))


def test_second_construction_reads_the_record(tmp_path, enroll_dir, embed_calls, capsys):
    first = build(enroll_dir, tmp_path / "cache")
    assert embed_calls and not first.enrollment_cached and len(records(tmp_path / "cache")) == 1
    assert "lalm-eval: cascade: enrollment and calibration done in" in capsys.readouterr().err  # the console is told
    embed_calls.clear()
    second = build(enroll_dir, tmp_path / "cache")
    assert embed_calls == [] and second.enrollment_cached  # the encoder embedded nothing
    assert "lalm-eval: cascade: enrollment and calibration read from the cache" in capsys.readouterr().err
    assert second.identity() == first.identity()  # the response cache's key is unchanged
    assert np.array_equal(second.enrollment.centroids, first.enrollment.centroids)
    assert np.array_equal(second.enrollment.clip_embeddings, first.enrollment.clip_embeddings)


def test_changed_enrollment_content_recomputes(tmp_path, enroll_dir, embed_calls, corpus):
    build(enroll_dir, tmp_path / "cache")
    clip = sorted((enroll_dir / "Bob").iterdir())[0]
    shutil.copy(corpus.utterances_of("en_s02")[3].audio, clip)  # same file name, other content
    embed_calls.clear()
    again = build(enroll_dir, tmp_path / "cache")
    assert embed_calls and not again.enrollment_cached and len(records(tmp_path / "cache")) == 2


def test_changed_encoder_weights_recompute(tmp_path, enroll_dir, embed_calls, monkeypatch):
    build(enroll_dir, tmp_path / "cache")
    import lalm_eval.models.cascade as cascade

    original = cascade.get_speaker_encoder

    def perturbed(*args, **kwargs):
        encoder = original(*args, **kwargs)
        param = next(encoder.model.parameters())
        with __import__("torch").no_grad():
            param[0].add_(1e-3)
        return encoder

    monkeypatch.setattr(cascade, "get_speaker_encoder", perturbed)
    embed_calls.clear()
    again = build(enroll_dir, tmp_path / "cache")
    assert embed_calls and not again.enrollment_cached and len(records(tmp_path / "cache")) == 2


def test_corrupted_record_is_recomputed_with_a_warning(tmp_path, enroll_dir, embed_calls, caplog):
    first = build(enroll_dir, tmp_path / "cache")
    (path,) = records(tmp_path / "cache")
    path.write_bytes(path.read_bytes()[:1000])  # a torn file
    embed_calls.clear()
    with caplog.at_level(logging.WARNING):
        again = build(enroll_dir, tmp_path / "cache")
    assert embed_calls and not again.enrollment_cached
    assert any("unreadable" in r.getMessage() and path.name in r.getMessage() for r in caplog.records)
    assert again.identity() == first.identity()
    embed_calls.clear()
    assert build(enroll_dir, tmp_path / "cache").enrollment_cached and embed_calls == []  # rewritten whole


def test_fast_preprocess_gives_resemblyzer_samples(corpus):
    """The encoder's trimming packs PCM with numpy; its output equals resemblyzer's, sample for sample."""
    from resemblyzer import preprocess_wav

    audios = [np.zeros(100, np.float32), np.full(16000, 0.01, np.float32)]
    for utt in corpus.utterances_of("en_s01")[:2] + corpus.utterances_of("zh_s01")[:1]:
        audio = utt.load_audio()
        audios += [audio[a : a + 25600] for a in range(0, len(audio) - 12800, 12800)]
    for audio in audios:
        with np.errstate(all="ignore"):
            expected = preprocess_wav(audio)
        got = ResemblyzerEncoder._preprocess(audio)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
