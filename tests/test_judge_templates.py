"""A judge's templates come from its own package: ``prompts/`` beside the module that defines the
judge class (``Judge.templates_dir``), or the folder its ``templates_folder`` names; the PALM and MSU
judges register from palm_bench / msu_bench through the ``lalm_eval.judges`` entry points."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from lalm_eval.judges import JUDGES
from lalm_eval.judges.base import JudgeItem
from lalm_eval.llm.base import TextLLM

JUDGE_MODULE = """
from lalm_eval.judges.base import Judge, number


class RoomJudge(Judge):
    name, prompt_version, template = "room", "1", "room.j2"

    def validate(self, reply, item):
        return number(reply, "score", lo=0.0, hi=1.0), {}


class ElsewhereJudge(RoomJudge):
    templates_folder = ELSEWHERE
"""


class NoLLM(TextLLM):
    @property
    def settings(self):
        return {"model": "none"}

    def complete(self, batch, **settings):
        raise AssertionError("not asked")


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    package = tmp_path / "room_judges"
    (package / "prompts").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (package / "__init__.py").write_text(JUDGE_MODULE.replace("ELSEWHERE", repr(str(elsewhere))))
    (package / "prompts" / "room.j2").write_text("Which room? {{ question }} -> {{ response }}\n")
    (elsewhere / "room.j2").write_text("Elsewhere: {{ reference }}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("room_judges")
    sys.modules.pop("room_judges", None)


def test_a_plugin_judge_renders_its_own_packages_template(plugin, tmp_path):
    item = JudgeItem("Where is Ann?", "kitchen", "the kitchen")
    judge = plugin.RoomJudge(NoLLM())
    assert plugin.RoomJudge.templates_dir() == (tmp_path / "room_judges" / "prompts").resolve()
    assert judge.render(item) == "Which room? Where is Ann? -> the kitchen"
    import hashlib

    expected = hashlib.sha256(b"Which room? {{ question }} -> {{ response }}\n").hexdigest()
    assert judge.settings["prompt_sha256"] == expected
    # a class naming another folder reads that one (same template name, other text)
    assert plugin.ElsewhereJudge(NoLLM()).render(item) == "Elsewhere: kitchen"


def test_the_benchmarks_judges_come_from_their_packages_through_entry_points():
    assert {"palm_captioning", "palm_recognition", "palm_reasoning", "msu", "msu_error_type"} <= set(JUDGES.names())
    for name in ("palm_captioning", "msu_error_type"):
        cls = JUDGES.get(name)
        bench = name.split("_")[0] + "_bench"
        assert cls.__module__ == f"{bench}.judges"
        assert cls.templates_dir().parts[-3:] == (bench, "judges", "prompts")
        assert (cls.templates_dir() / cls.template).is_file()


def test_loading_a_judged_task_imports_no_benchmark_package():
    """The task loader checks the judge's name (registered) without importing its package."""
    import subprocess

    code = textwrap.dedent(
        """
        import sys
        from lalm_eval.tasks import TaskManager
        TaskManager().load_task("palm_captioning")
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("palm_bench", "msu_bench")))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_judge_presets_come_from_the_task_folders(tmp_path, monkeypatch):
    import lalm_eval.judges as judges
    from lalm_eval.errors import ConfigError
    from lalm_eval.resources import tasks_dir

    assert [f.relative_to(tasks_dir()).as_posix() for f in judges.preset_files()] == ["palm/judge_presets.yaml"]
    assert judges.judge_presets()["palm_paper"]["backend"] == "openai"
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "judge_presets.yaml").write_text("room_judge: {backend: openai, options: {model: m}}\n")
    monkeypatch.setattr(judges, "preset_files", lambda: sorted(tmp_path.glob(judges.PRESETS_GLOB)))
    judges.judge_presets.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"b/judge_presets.yaml: preset 'room_judge' is also defined in .*a/"):
            judges.judge_presets()
    finally:
        judges.judge_presets.cache_clear()
