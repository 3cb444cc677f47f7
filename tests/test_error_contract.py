"""One error contract: what a user can get wrong is a LalmEvalError (ConfigError / DataError) whose
message names the value and the fix, and the CLIs print those in one line (exit 2); anything else
is a bug and keeps its traceback."""

import argparse
import dataclasses

import pytest

from lalm_eval.cli_support import run
from lalm_eval.errors import ConfigError, DataError, LalmEvalError, UnknownNameError
from lalm_eval.registry import Registry


def _parser(fn):
    parser = argparse.ArgumentParser(prog="bench")
    parser.set_defaults(func=fn)
    return parser


def test_benchmark_clis_print_project_errors_and_show_bugs(capsys):
    def config_error(args):
        raise ConfigError("palm.yaml: seed: must be an integer")

    assert run(_parser(config_error), []) == 2
    assert capsys.readouterr().err == "bench: error: palm.yaml: seed: must be an integer\n"

    def data_error(args):
        raise DataError("manifest.jsonl", "missing", field="speaker", line=3)

    assert run(_parser(data_error), []) == 2
    assert "manifest.jsonl:3: field 'speaker': missing" in capsys.readouterr().err
    for bug in (KeyError("k"), ValueError("v"), FileNotFoundError("f")):

        def raises(args, bug=bug):
            raise bug

        with pytest.raises(type(bug)):
            run(_parser(raises), [])


def test_registry_misses_and_duplicates():
    reg = Registry("widget")
    reg.register("alpha", "json:dumps")
    with pytest.raises(UnknownNameError, match=r"^unknown widget 'alpah'. Did you mean 'alpha'\? Available: alpha$"):
        reg.get("alpah")
    assert issubclass(UnknownNameError, ConfigError) and issubclass(UnknownNameError, KeyError)
    assert issubclass(ConfigError, LalmEvalError) and issubclass(DataError, LalmEvalError)
    with pytest.raises(ConfigError, match="widget 'alpha' is already registered"):
        reg.register("alpha", "json:loads")


def test_benchmark_lookups_are_config_errors():
    from msu_bench.taxonomy import load_taxonomy
    from palm_bench.corpus.embedded import load_embedded_corpus

    with pytest.raises(UnknownNameError, match="did you mean t1_sr_speaker_counting"):
        load_taxonomy().task("t1_sr_speaker_count")
    with pytest.raises(UnknownNameError, match="unknown speaker id 'nobody'; known: "):
        load_embedded_corpus().utterances_of("nobody")


def test_corpus_info_eer_needs_two_subjects():
    from palm_bench.corpus.embedded import load_embedded_corpus
    from palm_bench.corpus_info import subject_eer

    corpus = load_embedded_corpus()
    first = corpus.subjects()[0].id
    one = dataclasses.replace(corpus, speakers={first: corpus.speakers[first]})
    with pytest.raises(ConfigError, match=r"at least two subjects, the corpus has 1; run corpus-info with --no-eer"):
        subject_eer(one)
