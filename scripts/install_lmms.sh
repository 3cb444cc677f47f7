#!/usr/bin/env bash
# Install lmms-eval into its own venv, .venv-lmms (gitignored), for the side-by-side comparisons
# (bench/harness.py --lmms-eval, the exported tasks' test stage). Nothing of it is imported by the
# project's own environment.
#
# Steps (each skipped when already done, so a second run installs nothing):
#   1. python -m venv .venv-lmms
#   2. pip install torch==2.13.0 (the CPU build on this machine's disk; a plain `torch` would pull a
#      CUDA build of several GB), then lmms-eval==$LMMS_VERSION (default 0.7.3, the version tested)
#      with that torch pinned
#      and filelock<4 (lmms-eval 0.7.3 imports filelock._api, gone in filelock 4)
#   3. pip uninstall torchvision: PyPI's build fails to import beside the CPU torch ("operator
#      torchvision::nms does not exist"); only audio is used here
#   4. the audio stack lmms-eval's Qwen2-Audio path needs beside the CPU torch: torchcodec==0.13.0
#      (pairs with torch 2.13), librosa, soundfile
#   5. the one-line CPU patch: lmms-eval 0.7.3's qwen2_audio model moves its inputs to "cuda"
#      unconditionally; on a machine without CUDA that line is changed to the model's device
#      (`inputs.to(self._device)`). The patch is printed; nothing else of lmms-eval is changed
#   6. pip install -e . (the project, without its extras), every package installed so far pinned,
#      so the exported tasks' utils.py can import lalm_eval's metric functions
# Environment: PYTHON (default python3), LMMS_VENV (default .venv-lmms), LMMS_VERSION (default 0.7.3).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
PY=${PYTHON:-python3}
VENV=${LMMS_VENV:-.venv-lmms}
VERSION=${LMMS_VERSION:-0.7.3}
did=()
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
  did+=("venv $VENV")
fi
VPY="$VENV/bin/python"
pip_q() {
  "$VPY" -m pip -q "$@" 2>&1 | { grep -v -E "Location 'file:|dependency resolver does not currently|requires torchvision" || true; }
}
if [ "$("$VPY" -m pip show lmms_eval 2>/dev/null | sed -n 's/^Version: //p')" != "$VERSION" ]; then
  pip_q install "torch==2.13.0"
  pip_q install "lmms_eval==$VERSION" "torch==2.13.0" "filelock<4"
  did+=("lmms_eval==$VERSION")
fi
# lmms-eval 0.7.3 imports filelock._api (its evaluator's re-entrant lock patch), which filelock 4
# no longer has ("No module named 'filelock._api'"); its own requirements do not cap it
if ! "$VPY" -c "import filelock._api" 2>/dev/null; then
  pip_q install "filelock<4" "torch==2.13.0"
  did+=("filelock<4")
fi
if "$VPY" -m pip show torchvision >/dev/null 2>&1 \
   && "$VPY" -c "import torch, sys; sys.exit(0 if '+cpu' in torch.__version__ or not torch.cuda.is_available() else 1)"; then
  pip_q uninstall -y torchvision
  did+=("uninstall torchvision")
fi
if [ "$("$VPY" -m pip show torchcodec 2>/dev/null | sed -n 's/^Version: //p')" != "0.13.0" ] \
   || ! "$VPY" -c "import librosa, soundfile" 2>/dev/null; then
  pip_q install "torchcodec==0.13.0" librosa soundfile "torch==2.13.0"
  did+=("torchcodec==0.13.0 librosa soundfile")
fi
# 5. the CPU patch of qwen2_audio's input placement (only without CUDA)
SRC=$("$VPY" - <<'PYEOF'
import importlib.util, pathlib
spec = importlib.util.find_spec("lmms_eval")
root = pathlib.Path(spec.origin).parent
hits = [p for p in root.rglob("qwen2_audio.py") if 'inputs.to("cuda")' in p.read_text() or "inputs.to(self._device)" in p.read_text()]
print(hits[0] if hits else "")
PYEOF
)
if [ -z "$SRC" ]; then
  echo "install_lmms.sh: error: lmms_eval's qwen2_audio.py: no 'inputs.to(\"cuda\")' line found; this lmms-eval version is not the one tested ($VERSION)" >&2
  exit 2
fi
if ! "$VPY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" && grep -q 'inputs.to("cuda")' "$SRC"; then
  grep -n 'inputs.to("cuda")' "$SRC" | sed 's/^/install_lmms.sh: patching (CPU): /'
  sed -i 's/inputs\.to("cuda")/inputs.to(self._device)/' "$SRC"
  did+=("CPU patch of $(basename "$SRC")")
fi
want="$(sha256sum pyproject.toml | cut -c1-16) . $(pwd)"
if [ "$(cat "$VENV/.lalm-eval-install" 2>/dev/null)" != "$want" ]; then
  cons=$(mktemp)
  "$VPY" -m pip freeze --exclude-editable | grep -v -E '^(-e |.* @ )' > "$cons"
  pip_q install -c "$cons" -e .
  rm -f "$cons"
  echo "$want" > "$VENV/.lalm-eval-install"
  did+=("-e .")
fi
"$VPY" -c "import importlib.metadata as m, torch; print(f'lmms_eval {m.version(\"lmms_eval\")}, torch {torch.__version__}, transformers {m.version(\"transformers\")}')"
elapsed=$(( $(date +%s) - start ))
if [ ${#did[@]} -eq 0 ]; then
  echo "install_lmms.sh: $VENV is complete, nothing installed (${elapsed}s)"
else
  echo "install_lmms.sh: installed ${did[*]} into $VENV in ${elapsed}s"
fi
