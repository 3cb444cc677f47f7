import json
import subprocess
import sys

from palm_bench.cli import main


def test_corpus_info_json_meets_acceptance(tmp_path):
    env_cache = {"LALM_EVAL_CACHE": str(tmp_path)}
    import os

    out = subprocess.run(
        [sys.executable, "-m", "palm_bench.cli", "corpus-info", "--json"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env_cache},
    )
    stats = json.loads(out.stdout)
    assert stats["languages"]["en"]["subjects"] >= 12
    assert stats["languages"]["zh"]["subjects"] >= 6
    assert stats["totals"]["negatives"] >= 10
    assert stats["encoder"] == "resemblyzer-ge2e"
    assert 0.0 <= stats["eer"] <= 0.05
    assert set(stats["eer_by_language"]) == {"en", "zh"}
    assert 0 < stats["size_mb"] <= 30
    # per-language minutes add up to the total
    total = sum(v["minutes"] for v in stats["languages"].values())
    assert abs(total - stats["totals"]["minutes"]) < 0.05
    # the embeddings went to the cache folder given by LALM_EVAL_CACHE
    assert list((tmp_path / "embeddings").rglob("*.npy"))


def test_corpus_info_table_without_eer(capsys):
    assert main(["corpus-info", "--no-eer"]) == 0
    out = capsys.readouterr().out
    assert "subjects" in out and "shipped size" in out and "EER" not in out


def test_corpus_info_bad_corpus_dir_is_a_clear_error(tmp_path, capsys):
    assert main(["corpus-info", "--corpus-dir", str(tmp_path), "--no-eer"]) == 2
    assert "manifest.jsonl: manifest not found" in capsys.readouterr().err
