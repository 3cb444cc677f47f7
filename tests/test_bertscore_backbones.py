"""BERTScore per language (issue 21, part 2): bert-score's own defaults (roberta-large layer 17 for
en, bert-base-chinese layer 8 for zh) when they are local, a backbone per language by folder, Hub
id or ``--bertscore_model``, bert-score's shipped rescaling baselines, and reports that name the
backbone per language and say "not comparable with the PALM paper's values" unless the paper's
backbones scored the rows.

The backbones are tiny random-weight RoBERTa and BERT models saved in the real layout (config,
tokenizer files, safetensors weights; the tokenizers built offline from a small byte-level BPE and
WordPiece vocabulary), put into a Hugging Face cache of this test's own under bert-score's model
names, so bert-score's own ``get_model`` (layer truncation), ``get_tokenizer`` and ``sent_encode``
run on them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.metrics import bertscore as bs
from lalm_eval.metrics.scoring import ScoreItem, ScoringContext, make_metric

PALM = {
    "metric": "bertscore",
    "comparable_backbones": {"en": "roberta-large", "zh": "bert-base-chinese"},
    "comparable_with": "the PALM paper's values",
}
ITEMS = [
    ScoreItem("the cat sat on the mat", "a cat sat on the mat", {"language": "en"}, "q"),
    ScoreItem("我喜欢猫", "我喜欢狗", {"language": "zh"}, "q"),
    ScoreItem("it rained all day", "the sun was shining", {"language": "en"}, "q"),
]
WORDS = "the cat sat on mat a man is playing guitar it rained all day sun was shining".split()


def _tiny_roberta(folder: Path, layers: int) -> Path:
    import torch
    import transformers
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    chars = list(dict.fromkeys(bytes_to_unicode().values()))
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", *chars, "Ġt", "Ġc", "Ġth", "Ġthe", "Ġs"]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(pieces))}
    merges = [("Ġ", "t"), ("Ġ", "c"), ("Ġt", "h"), ("Ġth", "e"), ("Ġ", "s")]
    transformers.RobertaTokenizer(vocab=vocab, merges=merges, model_max_length=64).save_pretrained(folder)
    config = transformers.RobertaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=66,
    )
    torch.manual_seed(0)
    transformers.RobertaModel(config).save_pretrained(folder)
    return folder


def _tiny_bert(folder: Path, layers: int) -> Path:
    import torch
    import transformers

    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *"abcdefghijklmnopqrstuvwxyz", *"我喜欢猫狗"]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(pieces))}
    transformers.BertTokenizer(vocab=vocab, model_max_length=64).save_pretrained(folder)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(1)
    transformers.BertModel(config).save_pretrained(folder)
    return folder


def _cache_as(hub: Path, repo_id: str, model: Path, commit: str) -> Path:
    """``model`` as the Hugging Face cache holds ``repo_id``: models--org--name/snapshots/<commit>."""
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    shutil.copytree(model, snapshot)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Tiny RoBERTa (18 layers: bert-score's 17 for roberta-large fits) and BERT (9 layers: its 8
    for bert-base-chinese), as plain folders and in a Hugging Face cache under bert-score's names
    (bert-base-chinese under its current Hub id, google-bert/bert-base-chinese)."""
    root = tmp_path_factory.mktemp("bertscore")
    rob, bert = _tiny_roberta(root / "tiny-roberta", 18), _tiny_bert(root / "tiny-bert", 9)
    hub = root / "hub"
    snaps = {
        "en": _cache_as(hub, "roberta-large", rob, "a" * 40),
        "zh": _cache_as(hub, "google-bert/bert-base-chinese", bert, "b" * 40),
    }
    return {"rob": rob, "bert": bert, "hub": hub, "snapshots": snaps}


@pytest.fixture
def cached(tiny, monkeypatch):
    """The test's Hugging Face cache in place of the user's."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tiny["hub"]))
    return tiny  # scorers stay cached across tests: keyed by folder, layer, device and baseline


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))


@pytest.fixture
def loads(monkeypatch):
    """Every bert-score model load: (folder, num_layers, layers the loaded model keeps)."""
    import bert_score.scorer

    seen = []
    real = bert_score.scorer.get_model

    def spy(model_type, num_layers, all_layers=None):
        model = real(model_type, num_layers, all_layers)
        seen.append((str(model_type), num_layers, len(model.encoder.layer)))
        return model

    monkeypatch.setattr(bert_score.scorer, "get_model", spy)
    return seen


def _pair(k: int) -> tuple[str, str]:
    return ITEMS[k].prediction, ITEMS[k].reference


_DIRECT: dict = {}


def _direct(folder: Path, layers: int, cand: str, ref: str) -> float:
    """bert-score itself on one pair: what a row scored by (folder, layer) must get."""
    import bert_score

    key = (str(folder), layers)
    if key not in _DIRECT:
        _DIRECT[key] = bert_score.BERTScorer(model_type=str(folder), num_layers=layers)
    return float(_DIRECT[key].score([cand], [ref])[2][0])


def test_paper_backbones_from_the_cache_score_each_language_at_bert_scores_layer(cached, loads):
    bs.clear_cache()
    result = make_metric(PALM, ScoringContext()).compute(ITEMS)
    en, zh = str(cached["snapshots"]["en"].resolve()), str(cached["snapshots"]["zh"].resolve())
    # bert-score's get_model ran on each cached snapshot with bert-score's layer, and kept that many
    assert sorted(loads) == sorted([(en, 17, 17), (zh, 8, 8)])
    # en rows by roberta-large at 17, the zh row by bert-base-chinese at 8: as bert-score scores them
    assert result.values[0] == pytest.approx(_direct(cached["rob"], 17, *_pair(0)), abs=1e-6)
    assert result.values[1] == pytest.approx(_direct(cached["bert"], 8, *_pair(1)), abs=1e-6)
    assert result.values[2] == pytest.approx(_direct(cached["rob"], 17, *_pair(2)), abs=1e-6)
    records = result.extra["backbones"]
    assert (records["en"]["model"], records["en"]["num_layers"], records["en"]["n"]) == ("roberta-large", 17, 2)
    assert (records["zh"]["model"], records["zh"]["num_layers"], records["zh"]["n"]) == ("bert-base-chinese", 8, 1)
    assert "commit aaaaaaaaaaaa" in records["en"]["source"]
    probe = bs.backbone_data()["script_probes"]["zh"]
    assert records["zh"]["unknown_characters"] == [len(probe) - 1, len(probe)]  # of its vocabulary's 我喜欢猫狗: 我
    assert "not_comparable" not in result.extra
    assert "en: roberta-large layer 17" in result.extra["backbone"]
    assert "zh: google-bert/bert-base-chinese layer 8" in result.extra["backbone"]


def test_another_layer_is_used_when_asked_and_is_not_the_papers(cached, loads):
    result = make_metric({**PALM, "num_layers": {"en": 2}}, ScoringContext()).compute(ITEMS)
    assert (str(cached["snapshots"]["en"].resolve()), 2, 2) in loads
    assert result.values[0] == pytest.approx(_direct(cached["rob"], 2, *_pair(0)), abs=1e-6)
    assert result.values[0] != pytest.approx(_direct(cached["rob"], 17, *_pair(0)), abs=1e-6)
    assert result.extra["not_comparable"] == (
        "BERTScore with roberta-large layer 2 (en rows): not comparable with the PALM paper's values"
    )


def test_plain_folders_per_language_and_the_flag_over_the_task(cached, loads):
    # the task names folders; --bertscore_model (the context) replaces zh's only
    task = {**PALM, "backbone": {"en": str(cached["rob"]), "zh": str(cached["rob"])}}
    context = ScoringContext(bertscore_models={"zh": str(cached["bert"])})
    result = make_metric(task, context).compute(ITEMS)
    assert {(Path(p).name, n) for p, n, _ in loads} == {("tiny-roberta", 18), ("tiny-bert", 9)}
    assert result.values[1] == pytest.approx(_direct(cached["bert"], 9, *_pair(1)), abs=1e-6)
    assert result.extra["not_comparable"] == (
        "BERTScore with tiny-roberta layer 18 (en rows) and tiny-bert layer 9 (zh rows): "
        "not comparable with the PALM paper's values"
    )


def test_without_the_defaults_chinese_rows_fall_back_labelled(empty_cache):
    zh = bs.resolve_backbone(None, None, "zh")
    assert zh.name.startswith("all-MiniLM-L6-v2") and zh.missing_default == "bert-base-chinese"
    unknown, probed = bs.unknown_share(zh, "zh")
    assert unknown >= probed // 4  # an English vocabulary: many common characters are [UNK]
    record = bs.backbone_record(zh, None, 1, (unknown, probed))
    line = bs.not_comparable({"zh": record}, PALM["comparable_backbones"], PALM["comparable_with"])
    assert line.startswith("BERTScore with all-MiniLM-L6-v2") and line.endswith(
        "(zh rows): not comparable with the PALM paper's values"
    )
    described = bs.describe_backbones({"zh": record})
    assert "bert-score's bert-base-chinese is not in the Hugging Face cache" in described
    assert f"lacks {unknown} of {probed} common characters of zh" in described
    with pytest.raises(ConfigError, match="not in the Hugging Face cache"):
        bs.resolve_backbone("roberta-large", None, "en")


def test_a_folder_is_identified_by_its_config(tmp_path):
    folder = tmp_path / "my-roberta"
    folder.mkdir()
    config = {"model_type": "roberta", "hidden_size": 1024, "num_hidden_layers": 24, "vocab_size": 50265}
    (folder / "config.json").write_text(json.dumps(config))
    found = bs.resolve_backbone(str(folder), None, "en")
    assert (found.model, found.num_layers) == ("roberta-large", 17)
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": 50000}))
    other = bs.resolve_backbone(str(folder), None, "en")
    assert (other.model, other.num_layers, other.name) == (None, 24, "my-roberta")
    with pytest.raises(ConfigError, match="has only 24 layers"):
        bs.resolve_backbone(str(folder), 25, "en")


def test_rescale_uses_bert_scores_shipped_baseline(cached):
    import bert_score
    import pandas as pd

    raw = make_metric(PALM, ScoringContext()).compute(ITEMS[:2])
    scaled = make_metric({**PALM, "rescale_with_baseline": True}, ScoringContext()).compute(ITEMS[:2])
    root = Path(bert_score.__file__).parent / "rescale_baseline"
    for k, (lang, model, layer) in enumerate([("en", "roberta-large", 17), ("zh", "bert-base-chinese", 8)]):
        b = float(pd.read_csv(root / lang / f"{model}.tsv").iloc[layer]["F"])
        assert scaled.values[k] == pytest.approx((raw.values[k] - b) / (1 - b), abs=1e-5)
    assert scaled.extra["backbones"]["zh"]["baseline"] == "bert-score rescale_baseline/zh/bert-base-chinese.tsv"
    assert "rescaled with a baseline" in scaled.extra["not_comparable"]  # the paper's values are raw
    # a backbone bert-score ships no baseline for cannot be rescaled: said, not computed raw
    with pytest.raises(ConfigError, match="no shipped baseline"):
        make_metric({**PALM, "rescale_with_baseline": True, "backbone": str(cached["rob"])}, ScoringContext()).compute(
            ITEMS[:1]
        )


def test_option_kinds_checked_when_the_task_loads():
    with pytest.raises(ConfigError, match="option num_layers must be a whole number"):
        make_metric({"metric": "bertscore", "num_layers": {"en": 0}})
    with pytest.raises(ConfigError, match="option rescale_with_baseline must be true or false"):
        make_metric({"metric": "bertscore", "rescale_with_baseline": "yes"})
    with pytest.raises(ConfigError, match="comparable_with needs comparable_backbones"):
        make_metric({"metric": "bertscore", "comparable_with": "x"})


def test_bertscore_model_flag(tiny, empty_cache, tmp_path):
    from tests.bad_inputs.harness import run_cli

    assert bs.parse_backbone_flag("en=A, zh=B") == {"en": "A", "zh": "B"}
    assert bs.parse_backbone_flag("A") == {"default": "A"}
    with pytest.raises(ConfigError, match="given twice"):
        bs.parse_backbone_flag("en=A,en=B")
    result = run_cli(
        "lalm-eval",
        ["--model", "dummy", "--tasks", "palm_recognition", "--bertscore_model", f"en={tiny['rob']},zh=nope/none"],
    )
    assert result.rc == 2
    assert result.error_line.startswith("lalm-eval: error: --bertscore_model: zh=nope/none: ")
    assert "not in the Hugging Face cache" in result.error_line


# ---------------------------------------------------------------- the report


def _palm_run(folder: Path, info: dict, report: bool = True) -> None:
    """A PALM recognition run folder whose BERTScore metric_info is ``info`` (what the metric
    recorded); ``report=False``: its task declares no report layout."""
    from tests.bad_inputs.test_new_user_report import edit_results, write_run

    path = write_run(folder, [0.5, 0.7], report=report)

    def add(doc):
        doc["metric_info"]["palm_recognition"]["bertscore"] = info

    edit_results(path, add)


def test_report_tables5_6_names_backbones_and_says_when_not_comparable(cached, tmp_path):
    from tests.bad_inputs.harness import run_cli

    paper = make_metric(PALM, ScoringContext()).compute(ITEMS).extra
    ours = make_metric({**PALM, "backbone": str(cached["rob"])}, ScoringContext()).compute(ITEMS).extra
    _palm_run(tmp_path / "paper", paper)
    _palm_run(tmp_path / "ours", ours)
    texts = {}
    for name in ("paper", "ours"):
        result = run_cli("lalm-eval", ["report", tmp_path / name, "--layout", "palm_tables5_6"])
        assert result.rc == 0, result.err
        texts[name] = result.out
    assert "BERTScore F1: backbone en: roberta-large layer 17" in texts["paper"]
    assert "zh: google-bert/bert-base-chinese layer 8" in texts["paper"]
    assert "not comparable with the PALM paper's values" not in texts["paper"]
    assert "BERTScore F1: backbone en: tiny-roberta layer 18" in texts["ours"]
    assert (
        "**BERTScore with tiny-roberta layer 18 (en, zh rows): not comparable with the PALM paper's values**"
        in texts["ours"]
    )
    assert "en: roberta-large layer 17, zh: bert-base-chinese layer 8 (raw scores, no IDF)" in texts["ours"]
    assert "give --bertscore_model en=FOLDER,zh=FOLDER" in texts["ours"]
    # both runs in one report: each run's backbones, the not comparable line with the run it is of
    both = run_cli("lalm-eval", ["report", tmp_path / "paper", tmp_path / "ours", "--layout", "palm_tables5_6"])
    assert both.rc == 0, both.err
    assert "not comparable with the PALM paper's values" in both.out and "roberta-large layer 17" in both.out
    # a task without a layout: its task-level table names the backbones and says it too
    _palm_run(tmp_path / "plain", ours, report=False)
    plain = run_cli("lalm-eval", ["report", tmp_path / "plain"])
    assert plain.rc == 0, plain.err
    assert "palm_recognition · bertscore: backbone en: tiny-roberta layer 18" in plain.out
    assert "not comparable with the PALM paper's values**" in plain.out


@pytest.mark.slow  # a real run: tiny Qwen2-Audio on the embedded PALM build (about 5 min on 2 shared cores)
def test_run_with_bertscore_model_then_report(tiny, empty_cache, tmp_path):
    """The README's flag end to end: ``lalm-eval ... --bertscore_model en=DIR,zh=DIR`` scores the
    run's rows by those backbones, and ``lalm-eval report --layout palm_tables5_6`` names them and
    says they are not the paper's (the fast tests above check each piece)."""
    from tests.bad_inputs.harness import run_cli

    model = tmp_path / "qwen2_audio"
    assert run_cli("lalm-eval", ["make-tiny-model", "qwen2_audio", model]).rc == 0
    flag = f"en={tiny['rob']},zh={tiny['bert']}"
    run = run_cli(
        "lalm-eval",
        ["--model", "qwen2_audio", "--model_args", f"pretrained={model}", "--tasks", "palm_captioning",
         "--limit", "6", "--gen_kwargs", "max_new_tokens=8", "--bertscore_model", flag,
         "--output_path", tmp_path / "out", "--log_samples", "--cache_dir", tmp_path / "cache"],
        cwd=tmp_path,
    )  # fmt: skip
    assert run.rc == 0, run.err
    (results,) = (tmp_path / "out").glob("results_*.json")
    info = json.loads(results.read_text(encoding="utf-8"))["metric_info"]["palm_captioning"]["bertscore"]
    assert {r["name"] for r in info["backbones"].values()} <= {"tiny-roberta", "tiny-bert"}
    assert json.loads(results.read_text(encoding="utf-8"))["config"]["bertscore_model"] == flag
    report = run_cli("lalm-eval", ["report", tmp_path / "out", "--layout", "palm_tables5_6"])
    assert report.rc == 0, report.err
    assert "not comparable with the PALM paper's values**" in report.out
