#!/usr/bin/env bash
# Install lalm-eval the way the README tells users to, into a virtual environment of its own:
#   1. FFmpeg's shared libraries (Debian packages; datasets 5 encodes/decodes Audio through
#      torchcodec, which loads them) — apt-get when run as root, else the command to run
#   2. python -m venv $LALM_VENV (default .venv; LALM_VENV=none installs into $PYTHON itself)
#   3. pip install -e ".[$LALM_EXTRAS]" (default dev: the test tools and every extra the tests use;
#      LALM_EXTRAS= installs the core alone; scripts/main.sh asks for train,asr, what it runs). The
#      pins in pyproject.toml (torch 2.13 + torchcodec 0.13) make this resolve to a working CPU
#      stack with no manual step; set PIP_EXTRA_INDEX_URL to PyTorch's CPU index elsewhere to get
#      the CPU torch build. Installed with --no-compile, then the bytecode compiled on every CPU
#      (`compileall -j 0`): the same .pyc files as pip's own one-by-one compilation, in about half
#      the time. LALM_COMPILE=lazy skips that step: each module is compiled when it is first
#      imported (Python's default, unless PYTHONDONTWRITEBYTECODE is set), so only what runs is
#      compiled (scripts/main.sh imports 4,800 of the 16,400 modules of .[train,asr]).
# Idempotent: a second run with the same pyproject.toml and extras, or fewer (dev stands for the
# extras pyproject's dev names), installs nothing.
# Prints the environment's bin folder last (scripts/main.sh and test.sh put it first on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${LALM_VENV:-.venv}
EXTRAS=${LALM_EXTRAS-dev}

APT_PKGS=(libavutil57 libavcodec59 libavformat59 libavdevice59 libavfilter8 libswscale6 libswresample4)
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install.sh: please run: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

if [ "$VENV" = none ]; then
  VPY=$PY
else
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
    echo "install.sh: created $VENV" >&2
  fi
  VPY="$VENV/bin/python"
fi

target="."
[ -n "$EXTRAS" ] && target=".[$EXTRAS]"
# what was installed last: pyproject's hash, the extras and the checkout; the same again, or fewer
# extras, installs nothing (dev stands for every extra it pulls in: scripts/install_stamp.py)
stamp_dir=$("$VPY" -c "import sys; print(sys.prefix)")
stamp="$stamp_dir/.lalm-eval-install"
have=$(cat "$stamp" 2>/dev/null || true)
installed="$(sha256sum pyproject.toml | cut -c1-16) $target $(pwd)"   # the stamp this install writes
covered=$("$VPY" scripts/install_stamp.py "$have" "${installed%% *}" "$EXTRAS" "$(pwd)")
if [ "$covered" = yes ] && "$VPY" -c "import lalm_eval" 2>/dev/null; then
  echo "install.sh: $target already installed in $stamp_dir (${have#* })" >&2
else
  start=$(date +%s)
  # quiet, without this machine's local-index notices; the bytecode is compiled afterwards on
  # every CPU (pip compiles one file after another: about half of a fresh install's time)
  "$VPY" -m pip install -q --no-compile -e "$target" 2>&1 | { grep -v -E "Location 'file:" >&2 || true; }
  if [ "${LALM_COMPILE:-all}" != lazy ]; then
    "$VPY" -m compileall -q -j 0 "$("$VPY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")" >/dev/null 2>&1 || true
  fi
  echo "$installed" > "$stamp"
  echo "install.sh: installed -e $target into $stamp_dir in $(( $(date +%s) - start ))s" >&2
fi
"$VPY" -c "import sys, os; print(os.path.dirname(sys.executable))"
