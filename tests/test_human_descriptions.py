"""The human descriptions (HD) of the embedded corpus's subjects: one per subject, in its language."""

import re

import pytest
import yaml

from palm_bench.corpus.embedded import SOURCE_DIR

HD_FILE = SOURCE_DIR / "human_descriptions.yaml"
SYNTHETIC = {"en": re.compile(r"synthe|robotic|computer-generated|speech engine"), "zh": re.compile("合成")}
# words a description may not use when the measured pitch level says otherwise
HIGH_WORDS = {"en": re.compile(r"\b(high-pitched|medium-high|high pitch)"), "zh": re.compile("音高(中等)?偏高")}
LOW_WORDS = {"en": re.compile(r"\b(low-pitched|mid-low|low pitch)"), "zh": re.compile("音高(很低|偏低)")}


@pytest.fixture(scope="module")
def hds():
    return yaml.safe_load(HD_FILE.read_text(encoding="utf-8"))


def test_every_subject_has_one_hd_in_its_language(hds, corpus):
    subjects = {s.id: s for s in corpus.subjects()}
    assert len(subjects) == 18 and set(hds) == set(subjects)
    for sid, entry in hds.items():
        sp = subjects[sid]
        assert list(entry) == [sp.language], sid
        text = entry[sp.language]
        assert isinstance(text, str) and text.strip(), sid
        assert sp.name in text, f"{sid}: the HD should name {sp.name}"
        sentences = [s for s in re.split(r"(?<=[.!?。！？])\s*", text) if s.strip()]
        assert 3 <= len(sentences) <= 5, f"{sid}: {len(sentences)} sentences"
        assert SYNTHETIC[sp.language].search(text), f"{sid}: a TTS voice should be called synthetic"
        if sp.language == "zh":
            assert " " not in text, f"{sid}: stray space in Mandarin text"


@pytest.mark.slow
def test_hd_pitch_words_agree_with_measurements(hds, corpus):
    from palm_bench.acoustic import measure_voice, qualitative

    for sp in corpus.subjects():
        utts = corpus.utterances_of(sp.id)
        meas = measure_voice([u.load_audio() for u in utts], [u.text for u in utts], sp.language)
        level = qualitative("pitch_level", meas.f0_median_hz, "en")
        text = hds[sp.id][sp.language]
        forbidden = HIGH_WORDS if level in ("low", "mid-low") else LOW_WORDS
        assert not forbidden[sp.language].search(text), f"{sp.id}: pitch {level} but HD says otherwise"
