"""The papers' text is found through LALM_EVAL_PAPERS by title, never by a path of one machine."""

import pytest

from tests.papers import MSU_TITLE, PALM_TITLE, find_paper, paper_text


def test_a_paper_is_found_by_its_title_line_and_nothing_else(tmp_path):
    (tmp_path / "a.txt").write_text("\ufeff" + PALM_TITLE + "\n\nAbstract\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Some other paper\n" + MSU_TITLE + "\n", encoding="utf-8")
    assert find_paper(PALM_TITLE, tmp_path) == tmp_path / "a.txt"
    assert find_paper(MSU_TITLE, tmp_path) is None  # the title must be the first line
    assert find_paper(PALM_TITLE, tmp_path / "missing") is None


def test_unset_variable_skips_with_the_variable_named(monkeypatch, tmp_path):
    monkeypatch.delenv("LALM_EVAL_PAPERS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="LALM_EVAL_PAPERS is unset"):
        paper_text(PALM_TITLE)
    monkeypatch.setenv("LALM_EVAL_PAPERS", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match="has no .txt file whose first line is"):
        paper_text(PALM_TITLE)
    (tmp_path / "p.txt").write_text(PALM_TITLE + "\nbody\n", encoding="utf-8")
    assert paper_text(PALM_TITLE).endswith("body\n")
