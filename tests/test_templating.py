"""lalm_eval.templating.jinja_env: the one environment of the judge, builder-prompt and description
templates, with the options each of its four former copies had (so every text renders as before)."""

from pathlib import Path

import jinja2
import pytest

from lalm_eval.templating import jinja_env

ROOT = Path(__file__).resolve().parents[1]
#: the folders whose templates were rendered by their own copies of the environment
FOLDERS = [
    "lalm_eval/judges/prompts",
    "palm_bench/judges/prompts",
    "msu_bench/judges/prompts",
    "msu_bench/qa/prompts",
    "palm_bench/prompts",
    "palm_bench/templates",
]


def _former_environment(folder: Path) -> jinja2.Environment:
    """The options every former copy spelled out (judges/base.py, msu_bench/qa/llm_pipeline.py,
    palm_bench/acoustic.py, palm_bench/profiles.py)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        keep_trailing_newline=False,
    )


OPTIONS = ("undefined", "trim_blocks", "lstrip_blocks", "keep_trailing_newline", "autoescape", "newline_sequence")


@pytest.mark.parametrize("folder", [f for f in FOLDERS if (ROOT / f).is_dir()])
def test_each_folder_gets_the_options_its_copy_had(folder):
    path = ROOT / folder
    old, new = _former_environment(path), jinja_env(path)
    assert {o: getattr(new, o) for o in OPTIONS} == {o: getattr(old, o) for o in OPTIONS}
    assert new.loader.searchpath == old.loader.searchpath
    names = sorted(p.name for p in path.glob("*.j2"))
    assert names and all(new.get_template(n).filename == old.get_template(n).filename for n in names)


def test_options_strict_and_block_lines(tmp_path):
    (tmp_path / "t.j2").write_text("{% if x %}\n    <{{ x }}>\n  {% endif %}\nend\n", encoding="utf-8")
    env = jinja_env(tmp_path)
    assert env.get_template("t.j2").render(x="a&b") == "    <a&b>\nend"  # no escaping, no trailing newline
    with pytest.raises(jinja2.UndefinedError):
        env.get_template("t.j2").render()
    kept = jinja_env(tmp_path, keep_trailing_newline=True, block_lines=False)
    assert kept.get_template("t.j2").render(x="a") == "\n    <a>\n  \nend\n"


def test_one_environment_per_folder_and_options(tmp_path):
    assert jinja_env(tmp_path) is jinja_env(str(tmp_path))
    assert jinja_env(tmp_path) is not jinja_env(tmp_path / "other")
    assert jinja_env(tmp_path) is not jinja_env(tmp_path, keep_trailing_newline=True)
