"""lalm_eval.hub: Parquet export, cards, and push, all offline (the Hub is never contacted)."""

import io
import logging
import os

import datasets
import huggingface_hub
import numpy as np
import pyarrow.parquet as pq
import pytest
import soundfile as sf
from datasets import Audio, Features, Value

from lalm_eval.errors import ConfigError
from lalm_eval.hub import (
    CardError,
    check_card,
    configs_yaml_block,
    export_dataset_dict,
    feature_rows,
    file_sha256,
    front_matter,
    push_folder,
    render_card,
    validate_card,
    write_card,
    write_split,
)
from lalm_eval.resources import hub_cards_dir

SR = 16000
FEATURES = Features({"audio": Audio(sampling_rate=SR), "id": Value("string"), "n": Value("int32")})
FAKE_TOKEN = "hf_FAKEtokenNEVERprintedXYZ0123456789"


def flac(freq: float, seconds: float = 0.5, noise_seed: int | None = None) -> bytes:
    """FLAC bytes of a sine (plus deterministic noise when ``noise_seed`` is set, so FLAC can't
    squeeze it and size comparisons measure storage, not compression)."""
    t = np.arange(int(seconds * SR)) / SR
    x = 0.3 * np.sin(2 * np.pi * freq * t)
    if noise_seed is not None:
        x = x + 0.2 * np.random.default_rng(noise_seed).standard_normal(len(t))
    buf = io.BytesIO()
    sf.write(buf, x.astype(np.float32), SR, format="FLAC")
    return buf.getvalue()


def pcm(blob: bytes) -> np.ndarray:
    samples, sr = sf.read(io.BytesIO(blob), dtype="float32")
    assert sr == SR
    return samples


def make_split(prefix: str, freqs) -> datasets.Dataset:
    return datasets.Dataset.from_dict(
        {
            "audio": [{"bytes": flac(f), "path": f"{prefix}_{i}.flac"} for i, f in enumerate(freqs)],
            "id": [f"{prefix}-{i}" for i in range(len(freqs))],
            "n": list(range(len(freqs))),
        },
        features=FEATURES,
    )


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No Hub: offline flags on, caches in tmp_path."""
    for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return tmp_path / "hf_cache"


@pytest.fixture
def configs():
    return {
        "en": datasets.DatasetDict(
            {"train": make_split("en_tr", [220, 330, 440]), "test": make_split("en_te", [550, 660])}
        ),
        "zh": datasets.DatasetDict({"train": make_split("zh_tr", [250, 350]), "test": make_split("zh_te", [450])}),
    }


@pytest.fixture
def exported(tmp_path, configs):
    """configs exported to tmp_path/out with a card from generic.md.j2."""
    out = tmp_path / "out"
    files = export_dataset_dict(configs, out)
    context = {
        "configs_yaml": front_matter(files, default_config="en", license="cc-by-4.0"),
        "title": "Tiny test set",
        "description": "Sines.",
        "features": feature_rows(FEATURES),
        "statistics": [{"config": c, "split": s, "rows": len(d)} for c, dd in configs.items() for s, d in dd.items()],
        "repo_id": "org/tiny",
        "default_config": "en",
        "citation": "@misc{tiny, title={Tiny}}",
    }
    write_card(out, render_card("generic.md.j2", context, templates=hub_cards_dir()))
    return out, files


def test_export_layout_and_card(exported):
    out, files = exported
    assert files == {
        "en": {"train": ["en/train-00000-of-00001.parquet"], "test": ["en/test-00000-of-00001.parquet"]},
        "zh": {"train": ["zh/train-00000-of-00001.parquet"], "test": ["zh/test-00000-of-00001.parquet"]},
    }
    text = (out / "README.md").read_text()
    assert text.startswith("---\nlicense: cc-by-4.0\nconfigs:\n")
    assert "| `audio` | Audio (16000 Hz) |" in text and "| en | train | 3 |" in text
    assert validate_card(out) == []
    assert check_card(out) == out / "README.md"
    block = configs_yaml_block(files, default_config="zh")
    assert [c.get("default", False) for c in block] == [False, True]
    assert block[0]["data_files"][0] == {"split": "train", "path": "en/train-00000-of-00001.parquet"}
    assert len(file_sha256(out / files["en"]["train"][0])) == 64


def test_load_dataset_restores_rows_audio_and_samples(exported, configs, offline):
    out, _ = exported
    loaded = datasets.load_dataset(str(out), "zh", cache_dir=str(offline))
    assert set(loaded) == {"train", "test"}
    train, original = loaded["train"], configs["zh"]["train"]
    assert train.features["audio"] == Audio(sampling_rate=SR)
    assert train["id"] == original["id"] and train["n"] == original["n"]
    default = datasets.load_dataset(str(out), cache_dir=str(offline))  # the default config: en
    assert default["train"]["id"] == ["en_tr-0", "en_tr-1", "en_tr-2"]

    raw = original.cast_column("audio", Audio(decode=False))
    for i in range(len(train)):
        decoder = train[i]["audio"]  # datasets 5: a torchcodec AudioDecoder
        samples = decoder.get_all_samples()
        assert samples.sample_rate == SR
        np.testing.assert_allclose(samples.data.numpy()[0], pcm(raw[i]["audio"]["bytes"]), atol=1e-6)


def test_repeated_audio_stored_once_per_row_group(tmp_path):
    blob = flac(300, seconds=2.0, noise_seed=0)  # noise: FLAC can't shrink it, ~50 kB
    rows = {"audio": [{"bytes": blob, "path": None}] * 8, "id": [f"q{i}" for i in range(8)], "n": list(range(8))}
    dataset = datasets.Dataset.from_dict(rows, features=FEATURES)
    (path,) = write_split(dataset, tmp_path, "dedup", "test")
    size = os.path.getsize(path)
    assert size < 1.25 * len(blob), (size, len(blob))  # one copy + overhead, not eight

    plain = tmp_path / "plain.parquet"
    pq.write_table(pq.read_table(path), plain, use_dictionary=False)
    assert os.path.getsize(plain) > 7 * len(blob)  # the same rows without dictionary: eight copies

    # one copy per row group: 4 row groups of 2 rows hold 4 copies
    (grouped,) = write_split(dataset, tmp_path, "grouped", "test", rows_per_row_group=2)
    assert pq.ParquetFile(grouped).metadata.num_row_groups == 4
    assert 3.5 * len(blob) < os.path.getsize(grouped) < 4.5 * len(blob)
    assert pq.read_table(grouped)["audio"].to_pylist() == rows["audio"]


def test_shards_split_by_size_and_stale_shards_removed(tmp_path):
    blobs = [flac(200 + 10 * i, seconds=1.0, noise_seed=i) for i in range(6)]
    dataset = datasets.Dataset.from_dict(
        {"audio": [{"bytes": b, "path": None} for b in blobs], "id": list("abcdef"), "n": list(range(6))},
        features=FEATURES,
    )
    shards = write_split(
        dataset, tmp_path, "c", "train", max_shard_bytes=len(blobs[0]) * 2 + 1000, rows_per_row_group=1
    )
    assert [p.name for p in shards] == [f"train-0000{i}-of-00003.parquet" for i in range(3)]
    assert sum(pq.ParquetFile(p).metadata.num_rows for p in shards) == 6
    assert b"huggingface" in pq.read_schema(shards[0]).metadata
    again = write_split(dataset, tmp_path, "c", "train")
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [again[0].name]  # no stale shard
    (reordered,) = write_split(dataset.select([5, 3, 1, 0]), tmp_path, "r", "train")  # indices map
    assert pq.read_table(reordered)["id"].to_pylist() == ["f", "d", "b", "a"]
    with pytest.raises(ConfigError, match="config"):
        write_split(dataset, tmp_path, "../x", "train")


def test_validate_card_catches_missing_shard_and_bad_yaml(exported):
    out, _ = exported
    (out / "zh" / "test-00000-of-00001.parquet").unlink()
    problems = validate_card(out)
    assert len(problems) == 1
    assert "configs[1].data_files[1].path" in problems[0]
    assert "zh/test-00000-of-00001.parquet" in problems[0]
    with pytest.raises(CardError) as err:
        check_card(out)
    assert isinstance(err.value, ConfigError)
    assert err.value.field == "configs[1].data_files[1].path"
    assert str(out / "README.md") in str(err.value)

    (out / "en" / "train-00000-of-00001.parquet").write_bytes(b"")
    assert any("is empty" in p for p in validate_card(out))

    card = out / "README.md"
    card.write_text("---\nconfigs: [unclosed\n---\n# t\n")
    (problem,) = validate_card(card.parent)
    assert "not valid YAML" in problem
    card.write_text("# no front matter\n")
    assert "front matter" in validate_card(out)[0]
    card.write_text("---\nlicense: mit\n---\n")
    assert "'configs'" in validate_card(out)[0]


def test_render_card_is_strict():
    with pytest.raises(ConfigError, match="title"):
        render_card("generic.md.j2", {"configs_yaml": "configs: []"}, templates=hub_cards_dir())
    with pytest.raises(ConfigError, match="not found"):
        render_card("nope.md.j2", {}, templates=hub_cards_dir())


def test_render_card_reads_the_folder_the_benchmark_passes(tmp_path):
    (tmp_path / "own.md.j2").write_text("# {{ title }}\n{% include '_part.md.j2' %}")
    (tmp_path / "_part.md.j2").write_text("part of {{ title }}\n")
    assert render_card("own.md.j2", {"title": "Toy"}, templates=tmp_path) == "# Toy\npart of Toy\n"
    with pytest.raises(ConfigError, match=f"'palm.md.j2' not found in {tmp_path}"):
        render_card("palm.md.j2", {}, templates=tmp_path)  # the harness's folder is not searched


def _forbid_network(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("network call in a dry run")

    for name in ("create_repo", "upload_folder", "upload_file", "create_commit", "whoami", "repo_info"):
        monkeypatch.setattr(huggingface_hub.HfApi, name, boom)


def test_dry_run_lists_files_without_network(exported, monkeypatch):
    out, files = exported
    _forbid_network(monkeypatch)
    (out / ".cache").mkdir()
    (out / ".cache" / "junk").write_text("x")
    report = push_folder(out, "org/tiny", token=FAKE_TOKEN, dry_run=True)
    expected = sorted(["README.md"] + [p for splits in files.values() for ps in splits.values() for p in ps])
    assert [path for path, _ in report.files] == expected
    assert report.total_bytes == sum((out / p).stat().st_size for p in expected)
    assert report.dry_run and report.commit_url is None
    assert report.repo_url == "https://huggingface.co/datasets/org/tiny"
    assert "would upload 5 files" in report.summary()
    assert FAKE_TOKEN not in repr(report) + report.summary()

    (out / "en" / "test-00000-of-00001.parquet").unlink()
    with pytest.raises(CardError):
        push_folder(out, "org/tiny", dry_run=True)
    with pytest.raises(ConfigError, match="--repo-id"):
        push_folder(out, "a/b/c", dry_run=True)


def test_real_push_path_with_fake_client(exported, monkeypatch, capsys, caplog):
    out, _ = exported
    calls = {}

    def fake_init(self, *args, **kwargs):
        calls["init"] = kwargs

    def fake_create_repo(self, repo_id, **kwargs):
        calls["create_repo"] = {"repo_id": repo_id, **kwargs}
        return huggingface_hub.RepoUrl("https://huggingface.co/datasets/org/tiny")

    def fake_create_commit(self, **kwargs):
        calls["create_commit"] = kwargs
        return huggingface_hub.CommitInfo(
            commit_url="https://huggingface.co/datasets/org/tiny/commit/abc123",
            commit_message=kwargs["commit_message"],
            commit_description="",
            oid="abc123",
        )

    monkeypatch.setattr(huggingface_hub.HfApi, "__init__", fake_init)
    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", fake_create_repo)
    monkeypatch.setattr(huggingface_hub.HfApi, "create_commit", fake_create_commit)
    caplog.set_level(logging.DEBUG)

    report = push_folder(out, "org/tiny", token=FAKE_TOKEN, private=True, revision="main", commit_message="v1")
    assert calls["init"] == {"token": FAKE_TOKEN}
    assert calls["create_repo"] == {"repo_id": "org/tiny", "repo_type": "dataset", "exist_ok": True, "private": True}
    # the files push_folder lists, committed as listed (upload_folder would not enter linked folders)
    upload = calls["create_commit"]
    assert upload["repo_type"] == "dataset" and upload["repo_id"] == "org/tiny"
    assert [op.path_in_repo for op in upload["operations"]] == [path for path, _ in report.files]
    assert all(op.path_or_fileobj == str(out / op.path_in_repo) for op in upload["operations"])
    assert upload["revision"] == "main"
    assert upload["commit_message"] == "v1"
    assert report.commit_url.endswith("/commit/abc123") and not report.dry_run
    assert report.repo_url == "https://huggingface.co/datasets/org/tiny"
    print(report.summary())
    logging.getLogger("lalm_eval").info("%r", report)

    captured = capsys.readouterr()
    assert FAKE_TOKEN not in captured.out + captured.err + caplog.text + repr(report)

    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)  # token=None: left to huggingface_hub's resolution
    push_folder(out, "org/tiny")
    assert calls["init"] == {"token": None}
