"""`lalm-eval doctor`, the torchcodec probe in front of datasets' audio, and the extras' import errors."""

import importlib.abc
import sys

import numpy as np
import pytest

from lalm_eval import doctor
from lalm_eval.audio import io as audio_io
from lalm_eval.errors import AudioError, ConfigError

CUDA_ERROR = "libnvrtc.so.13: cannot open shared object file: No such file or directory"


class _BrokenTorchcodec(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes ``import torchcodec`` fail as PyPI's CUDA build fails beside a CPU torch."""

    def __init__(self, message: str):
        self.message = message

    def find_spec(self, name, path=None, target=None):
        if name == "torchcodec" or name.startswith("torchcodec."):
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        try:
            raise OSError(self.message)
        except OSError as inner:
            raise OSError("Could not load this library: .../torchcodec/libtorchcodec_image.so") from inner


@pytest.fixture
def fresh_probe(monkeypatch):
    """An empty probe cache, restored afterwards (the real probe result is cached per process)."""
    saved = dict(audio_io._CODEC_STATE)
    audio_io._CODEC_STATE.clear()
    yield
    audio_io._CODEC_STATE.clear()
    audio_io._CODEC_STATE.update(saved)


@pytest.fixture
def broken_torchcodec(monkeypatch, fresh_probe):
    for name in [m for m in sys.modules if m == "torchcodec" or m.startswith("torchcodec.")]:
        monkeypatch.delitem(sys.modules, name)
    finder = _BrokenTorchcodec(CUDA_ERROR)
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    monkeypatch.setattr(audio_io, "_installed_version", lambda dist: "0.17.0")
    monkeypatch.setattr(audio_io, "_torch_info", lambda: ("2.13.0+cpu", True))
    return finder


def test_probe_round_trip_works_here(fresh_probe):
    ok, message = audio_io.codec_status()
    assert ok, message
    assert "round trip ok" in message


def test_cuda_torchcodec_beside_cpu_torch_names_cause_and_fix(broken_torchcodec):
    ok, message = audio_io.codec_status()
    assert not ok
    assert "torchcodec 0.17.0 is a CUDA build" in message and "CPU torch 2.13.0+cpu" in message
    assert "pip install 'torchcodec==0.13.0'" in message
    assert "libnvrtc.so.13" in message  # the underlying cause is kept
    with pytest.raises(AudioError, match=r"Fix: pip install 'torchcodec==0\.13\.0'"):
        audio_io.require_codec()


def test_probe_runs_once_per_process(monkeypatch, fresh_probe):
    calls = []

    def failing():
        calls.append(1)
        raise RuntimeError("Could not load libtorchcodec. FFmpeg version 7: libavutil.so.59: cannot open")

    monkeypatch.setattr(audio_io, "_round_trip", failing)
    for _ in range(3):
        with pytest.raises(AudioError):
            audio_io.require_codec()
    assert len(calls) == 1
    assert not audio_io.codec_status(refresh=True)[0] and len(calls) == 2


def test_missing_ffmpeg_names_the_debian_packages():
    exc = RuntimeError(
        "Could not load libtorchcodec. Likely causes: FFmpeg is not properly installed. "
        "FFmpeg version 5: libavutil.so.57: cannot open shared object file"
    )
    message = audio_io.diagnose_codec_failure(exc, "2.13.0+cpu", True, "0.13.0", ffmpeg_found=False)
    assert "cannot load FFmpeg's shared libraries" in message
    assert "apt-get install --no-install-recommends libavutil57 libavcodec59" in message
    assert "torchcodec==" not in message.split("Underlying error")[0]


def test_not_installed_and_abi_mismatch_diagnoses():
    missing = audio_io.diagnose_codec_failure(
        ModuleNotFoundError("No module named 'torchcodec'"), "2.13.0+cpu", True, None
    )
    assert "torchcodec is not installed" in missing and "pip install 'torchcodec==0.13.0'" in missing
    abi = audio_io.diagnose_codec_failure(
        OSError("libtorchcodec_core5.so: undefined symbol: _ZN3c10"), "2.13.0+cpu", True, "0.12.0", ffmpeg_found=True
    )
    assert "built for another torch" in abi and "torchcodec==0.13.0" in abi
    other = audio_io.torchcodec_pin("2.15.1+cu130")
    assert "2.15" in other and "==" not in other  # no guessed pin for an untested torch


def test_export_builders_stops_before_building_when_torchcodec_is_broken(broken_torchcodec, tmp_path):
    from lalm_eval.hub.export import export_builders

    made = []
    with pytest.raises(AudioError, match="CUDA build"):
        export_builders(lambda config, cache: made.append(config), ["recognition"], tmp_path / "out")
    assert made == []  # no builder ran: the error comes before datasets touches audio


def _run_doctor(capsys, *argv):
    rc = doctor.main(list(argv))
    return rc, capsys.readouterr().out


def _line(out: str, name: str) -> str:
    (line,) = [x for x in out.splitlines() if x[9:31].rstrip() == name]
    return line


@pytest.fixture
def no_vllm_no_keys(monkeypatch, tmp_path):
    real_spec = doctor._spec
    monkeypatch.setattr(doctor, "_spec", lambda m: False if m == "vllm" else real_spec(m))
    monkeypatch.setattr(doctor, "_vllm_venv", lambda: None)
    for var in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LALM_EVAL_CACHE", str(tmp_path / "cache"))


def test_doctor_core_path_exits_zero_and_says_what_is_missing(capsys, no_vllm_no_keys, tmp_path):
    (tmp_path / "cache" / "sub").mkdir(parents=True)
    (tmp_path / "cache" / "sub" / "blob").write_bytes(b"x" * 2_000_000)
    rc, out = _run_doctor(capsys)
    assert rc == 0, out
    for name in (
        "python",
        "torch",
        "ffmpeg libraries",
        "torchcodec (decoding)",
        "datasets",
        "transformers",
        "core dependencies",
        "cache directory",
        "task folders",
    ):
        assert _line(out, name).startswith("ok "), _line(out, name)
    assert "round trip ok" in _line(out, "torchcodec (decoding)")
    assert "2.0 MB in 1 files" in _line(out, "cache directory")
    assert "palm (" in _line(out, "task folders") and "msu (" in _line(out, "task folders")
    vllm = _line(out, "vllm")
    assert vllm.startswith("missing ") and "bash scripts/install_vllm.sh" in vllm
    assert _line(out, "key for openai_audio").startswith("missing ")
    assert _line(out, "key for gemini").startswith("missing ")
    assert out.strip().splitlines()[-1] == "doctor: everything the core path needs is here"


def test_doctor_model_vllm_without_vllm_exits_nonzero(capsys, no_vllm_no_keys):
    rc, out = _run_doctor(capsys, "--model", "vllm")
    assert rc == 1
    assert _line(out, "vllm").startswith("FAIL ")
    assert "problem(s) for --model vllm: vllm" in out.strip().splitlines()[-1]


def test_doctor_never_prints_a_key_and_needs_one_for_remote_api(capsys, no_vllm_no_keys, monkeypatch):
    pytest.importorskip("openai")
    rc, out = _run_doctor(capsys, "--model", "openai_audio")
    assert rc == 1 and _line(out, "key for openai_audio").startswith("FAIL ")
    rc, out = _run_doctor(capsys, "--model", "openai_audio", "--model_args", "base_url=http://127.0.0.1:8000/v1")
    assert rc == 0, out  # a local server needs no key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-very-secret-4242")
    rc, out = _run_doctor(capsys, "--model", "openai_audio")
    assert rc == 0, out
    assert "OPENAI_API_KEY is set" in _line(out, "key for openai_audio")
    assert "very-secret" not in out and "4242" not in out


def test_doctor_unknown_model_and_task_fail(capsys, no_vllm_no_keys):
    rc, out = _run_doctor(capsys, "--model", "qwen2_audoi")
    assert rc == 1 and "qwen2_audio" in _line(out, "--model qwen2_audoi")  # suggests the close name
    rc, out = _run_doctor(capsys, "--tasks", "palm_recognition,no_such_task")
    assert rc == 1 and _line(out, "--tasks").startswith("FAIL ")
    rc, out = _run_doctor(capsys, "--tasks", "palm_recognition")
    assert rc == 0 and _line(out, "--tasks").startswith("ok ")


def test_doctor_with_broken_torchcodec_fails_the_core_path(capsys, no_vllm_no_keys, broken_torchcodec):
    rc, out = _run_doctor(capsys)
    assert rc == 1
    line = _line(out, "torchcodec (decoding)")
    assert line.startswith("FAIL ") and "pip install 'torchcodec==0.13.0'" in line


def test_doctor_is_a_lalm_eval_subcommand(capsys, no_vllm_no_keys):
    from lalm_eval.cli import main

    assert main(["doctor", "--model", "vllm"]) == 1
    assert "vllm" in capsys.readouterr().out


def test_missing_extra_is_a_config_error_naming_it(monkeypatch):
    from lalm_eval.extras import require

    monkeypatch.setitem(sys.modules, "lhotse", None)  # import lhotse → ImportError
    with pytest.raises(ConfigError, match=r"Corpus\.to_lhotse\(\) needs lhotse.*lalm-eval\[lhotse\]"):
        require("lhotse", "Corpus.to_lhotse()")
    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(ConfigError, match=r"lalm-eval\[train\]"):
        require("peft", "model arg peft=x")
    assert require("numpy", "anything") is np  # an installed module is simply imported


@pytest.mark.parametrize("bench", ["palm_bench", "msu_bench"])
def test_benchmark_build_stops_before_planning_when_torchcodec_is_broken(
    bench, broken_torchcodec, monkeypatch, tmp_path
):
    import importlib

    export = importlib.import_module(f"{bench}.export")
    planned = []
    monkeypatch.setattr(export, "make_plan", lambda *a, **k: planned.append(1))
    cfg = None
    if bench == "palm_bench":  # a real config: the paper-steps check (palm_bench.deviations) reads it first
        from palm_bench.config import load_preset

        cfg = load_preset("small")
    with pytest.raises(AudioError, match=r"pip install 'torchcodec==0\.13\.0'"):
        export.build(tmp_path / "out", cfg)
    assert planned == []  # the error comes first, not after minutes of planning
