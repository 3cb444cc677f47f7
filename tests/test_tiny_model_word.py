"""`make-tiny-model --vocab word`: the tiny Qwen2-Audio with a word-level tokenizer built from a
task's own training prompts and targets (short answers, so it can learn in minutes on a CPU);
and the training collator's feature memo (same features, computed once per clip)."""

import json

import numpy as np
import pytest

from lalm_eval.cli import main as cli_main
from lalm_eval.errors import ConfigError
from lalm_eval.models.tiny import make_tiny_model
from tests.test_training import setup  # noqa: F401 - the tiny model and a `who` task with a train split

TEXTS = ["Listen to the audio, then answer the question.\nQuestion: Is Alice speaking?", "No, Alice is not speaking."]


@pytest.fixture(scope="module")
def word_model(tmp_path_factory):
    return make_tiny_model("qwen2_audio", tmp_path_factory.mktemp("word") / "m", vocab="word", vocab_texts=TEXTS)


def test_word_model_tokenizer_processor_and_template(word_model):
    from transformers import AutoConfig, AutoProcessor

    processor = AutoProcessor.from_pretrained(word_model)
    tok = processor.tokenizer
    assert type(processor).__name__ == "Qwen2AudioProcessor"
    ids = tok("No, Alice is not speaking.<|im_end|>", add_special_tokens=False)["input_ids"]
    assert len(ids) == 8 and ids[-1] == tok.convert_tokens_to_ids("<|im_end|>")  # word by word
    assert tok.decode(ids, skip_special_tokens=True) == "No, Alice is not speaking."
    assert tok.decode(tok("Bob spoke")["input_ids"]) == "[UNK] [UNK]"  # words it never saw
    assert len(tok) < 100  # the texts' words, the template's, the special tokens
    messages = [
        {
            "role": "user",
            "content": [{"type": "audio", "audio_url": "x"}, {"type": "text", "text": "Is Alice speaking?"}],
        }
    ]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text.endswith(
        "Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>\nIs Alice speaking?<|im_end|>\n<|im_start|>assistant\n"
    )
    inputs = processor(text=[text], audio=[np.zeros(16000, np.float32)], sampling_rate=16000, return_tensors="pt")
    cfg = AutoConfig.from_pretrained(word_model)
    n_audio = int((inputs["input_ids"] == cfg.audio_token_index).sum())
    assert n_audio == 25 and inputs["input_features"].shape == (1, 128, 3000)  # 1 s -> 25 tokens, padded to 30 s
    assert "[UNK]" not in tok.convert_ids_to_tokens(inputs["input_ids"][0])  # the template's words are known
    assert cfg.text_config.vocab_size == len(tok) and cfg.text_config.hidden_size == 64
    from transformers import GenerationConfig

    assert GenerationConfig.from_pretrained(word_model).eos_token_id == tok.convert_tokens_to_ids("<|im_end|>")


def test_word_model_options_checked(tmp_path):
    with pytest.raises(ConfigError, match="needs the texts"):
        make_tiny_model("qwen2_audio", tmp_path / "a", vocab="word")
    with pytest.raises(ConfigError, match="only it does"):
        make_tiny_model("qwen2_audio", tmp_path / "b", vocab_texts=TEXTS)
    with pytest.raises(ConfigError, match="--vocab must be"):
        make_tiny_model("qwen2_audio", tmp_path / "c", vocab="bpe")
    with pytest.raises(ConfigError, match="not 'qwen2_5_omni'"):
        make_tiny_model("qwen2_5_omni", tmp_path / "d", vocab="word", vocab_texts=TEXTS)
    with pytest.raises(ConfigError, match="multiple of 8"):
        make_tiny_model("qwen2_audio", tmp_path / "e", hidden_size=60)
    with pytest.raises(ConfigError, match="not both"):
        make_tiny_model("qwen2_audio", tmp_path / "f", head_dim=64, hidden_size=128)
    with pytest.raises(ConfigError, match="no text"):
        make_tiny_model("qwen2_audio", tmp_path / "g", vocab="word", vocab_texts=[])


def test_hidden_size(tmp_path):
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(make_tiny_model("qwen2_audio", tmp_path / "m", hidden_size=96))
    assert (cfg.text_config.hidden_size, cfg.text_config.intermediate_size, cfg.audio_config.d_model) == (96, 192, 64)


def test_cli_vocab_tasks_builds_trains_and_stops(setup, tmp_path):  # noqa: F811
    """The CLI builds the vocabulary from the task's training docs; `full` training lowers the loss
    on the answer tokens, and the target ends with <|im_end|>, which stops generation."""
    model = tmp_path / "w"
    argv = ["make-tiny-model", "qwen2_audio", str(model), "--vocab", "word"]
    assert cli_main(argv) == 2  # --vocab-tasks missing
    argv += ["--vocab-tasks", "who", "--include_path", str(setup["tasks"]), "--cache_dir", str(setup["cache"])]
    assert cli_main(argv) == 0
    vocab = json.loads((model / "tokenizer.json").read_text())["model"]["vocab"]
    assert {"Alice", "Bob", "Carol", "speaking", "Is"} <= set(vocab)  # the train split's words
    out = tmp_path / "ft"
    train = ["train", "--model", "qwen2_audio", "--model_args", f"pretrained={model}", "--tasks", "who"]
    train += ["--include_path", str(setup["tasks"]), "--cache_dir", str(setup["cache"]), "--recipe", "full"]
    train += ["--output_dir", str(out), "--learning_rate", "1e-2", "--max_steps", "4", "--save_steps", "1000"]
    assert cli_main(train) == 0
    info = json.loads((out / "train_info.json").read_text())
    assert info["loss_last"] < info["loss_first"]
    # 4 steps over distinct clips (+ the batch the dataloader fetched ahead): computed, none reused;
    # the memo is gone afterwards
    assert info["audio_features_computed"] in (4, 5) and info["audio_features_reused"] == 0
    from transformers import AutoProcessor

    assert type(AutoProcessor.from_pretrained(out).feature_extractor).__name__ == "WhisperFeatureExtractor"


def test_feature_memo_same_features_once_per_clip(setup):  # noqa: F811
    import torch

    from lalm_eval.models.build import build_adapter
    from lalm_eval.training.data import Collator, Example, memoised_features, training_examples

    adapter = build_adapter("qwen2_audio", f"pretrained={setup['model']}", None, str(setup["cache"]))
    examples = training_examples(["who"], setup["cache"], [str(setup["tasks"])])[:2]
    # the same clip asked about twice (another question): its features are computed once
    twin = Example("who", 99, examples[1].messages, examples[0].raw_audios, "Yes.")
    plain = Collator(adapter)([*examples, twin])
    inner = adapter.processor.feature_extractor
    with memoised_features(adapter) as memo:
        memoised = Collator(adapter)([*examples, twin])
        again = Collator(adapter)([*examples, twin])
    assert adapter.processor.feature_extractor is inner
    assert (memo.misses, memo.hits) == (2, 4)
    for batch in (memoised, again):
        assert batch.keys() == plain.keys()
        for key in plain:
            assert torch.equal(batch[key], plain[key]), key
