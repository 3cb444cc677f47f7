import numpy as np
import pytest

from lalm_eval.audio.speaker import SPEAKER_ENCODERS, cosine_matrix, get_speaker_encoder


@pytest.fixture(scope="module")
def encoder():
    return get_speaker_encoder("resemblyzer")


@pytest.fixture(scope="module")
def subject_clips(corpus):
    ids = [s.id for s in corpus.subjects()]
    clips = [(sid, u.load_audio()) for sid in ids for u in corpus.utterances_of(sid)[:4]]
    return [c[0] for c in clips], [c[1] for c in clips]


def test_encoder_separates_the_shipped_subjects(encoder, subject_clips):
    labels, audios = subject_clips
    emb = encoder.embed(audios)
    assert emb.shape == (len(audios), 256)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    sims = cosine_matrix(emb)
    labels = np.array(labels)
    same = labels[:, None] == labels[None, :]
    off_diag = ~np.eye(len(labels), dtype=bool)
    assert sims[same & off_diag].mean() > sims[~same].mean() + 0.2
    # every clip's nearest other clip belongs to the same subject
    np.fill_diagonal(sims, -1)
    assert (labels[sims.argmax(axis=1)] == labels).mean() >= 0.95


def test_batched_embedding_equals_one_at_a_time(subject_clips):
    _, audios = subject_clips
    batched = get_speaker_encoder("resemblyzer", batch_size=8).embed(audios[:6])
    single = np.stack([get_speaker_encoder("resemblyzer").embed_one(a) for a in audios[:6]])
    assert np.allclose(batched, single, atol=1e-5)


def test_cache_serves_repeats_and_persists(tmp_path, subject_clips):
    _, audios = subject_clips
    enc = get_speaker_encoder("resemblyzer", cache_dir=tmp_path)
    first = enc.embed(audios[:3])
    again = enc.embed(audios[:3])
    assert enc.n_computed == 3 and np.array_equal(first, again)
    other_process = get_speaker_encoder("resemblyzer", cache_dir=tmp_path)
    assert np.array_equal(other_process.embed(audios[:3]), first) and other_process.n_computed == 0
    assert len(list(tmp_path.rglob("*.npy"))) == 3


def test_resampled_input_is_accepted(encoder, subject_clips):
    from lalm_eval.audio.io import resample

    _, audios = subject_clips
    at8k = resample(audios[0], 16000, 8000)
    sim = float(encoder.embed([at8k], sr=8000)[0] @ encoder.embed_one(audios[0]))
    assert sim > 0.9


def test_unknown_encoder_suggests_names():
    with pytest.raises(KeyError, match="Did you mean 'resemblyzer'"):
        get_speaker_encoder("resemblizer")
    assert {"resemblyzer", "ecapa"} <= set(SPEAKER_ENCODERS.names())


def test_ecapa_without_speechbrain_names_the_extra():
    pytest.importorskip("torch")
    try:
        import speechbrain  # noqa: F401

        pytest.skip("speechbrain is installed; the missing-extra message cannot be shown")
    except ImportError:
        pass
    with pytest.raises(ImportError, match=r"lalm-eval\[ecapa\]"):
        get_speaker_encoder("ecapa", source="/nonexistent")
