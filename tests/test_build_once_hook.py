"""``prepare_dataset_hook``: the one ``prepare_dataset`` of task folders whose benchmark builds its
embedded data on demand (PALM's and MSU's are two calls of it), here for a benchmark it never saw."""

from __future__ import annotations

import json

import pytest

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.build_once import prepare_dataset_hook


class Config:
    def __init__(self, preset):
        self.preset = preset

    def to_dict(self):
        return {"preset": self.preset, "sizes": (1, 2)}  # a tuple: recorded as JSON reads it back


@pytest.fixture
def hook():
    loaded, built = [], []

    def load_config(preset):
        loaded.append(preset)
        return Config(preset)

    def build(out, cfg, cache_dir):
        built.append((out, cfg.preset, cache_dir))
        out.mkdir(parents=True)
        (out / "build_info.json").write_text(json.dumps({"config": cfg.to_dict()}))

    fn = prepare_dataset_hook("rooms-data", "tiny", load_config=load_config, build=build, build_command="rooms build")
    return fn, loaded, built


def test_other_names_pass_through_and_load_nothing(hook, tmp_path, monkeypatch):
    fn, loaded, built = hook
    monkeypatch.chdir(tmp_path)
    assert fn("someone/rooms-data", "all", tmp_path) == "someone/rooms-data"
    assert fn(str(tmp_path / "elsewhere"), None, None) == str(tmp_path / "elsewhere")
    assert loaded == [] and built == []


def test_a_local_folder_of_the_name_must_be_a_build(hook, tmp_path, monkeypatch):
    fn, _, built = hook
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rooms-data").mkdir()
    with pytest.raises(
        DataError, match="not a dataset build.*remove or rename it .*'tiny'.*rooms build --out rooms-data"
    ):
        fn("rooms-data", "all", tmp_path / "cache")
    assert built == []


def test_the_bare_name_builds_the_preset_once_and_needs_a_cache_dir(hook, tmp_path, monkeypatch):
    fn, loaded, built = hook
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="no cache dir to build the 'tiny' preset into; run `rooms build` here"):
        fn("rooms-data", "all", None)
    expected = tmp_path / "cache" / "datasets" / "rooms-data-tiny"
    assert fn("rooms-data", "all", tmp_path / "cache") == str(expected)
    assert fn("rooms-data", "other", str(tmp_path / "cache")) == str(expected)
    assert built == [(expected.with_name(built[0][0].name), "tiny", tmp_path / "cache")]
    assert built[0][0].name.startswith("rooms-data-tiny.tmp-") and loaded == ["tiny", "tiny"]
