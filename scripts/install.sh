#!/usr/bin/env bash
# Install what lalm-eval needs on a fresh Debian/Ubuntu machine: FFmpeg libraries (datasets 5
# decodes Audio through torchcodec, which loads them), the CPU build of torch, and the project
# with its test tools. Idempotent: a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

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

# torch first, pinned to the CPU build that these machines keep on disk; an already installed
# torch (e.g. a CUDA build on a GPU machine) is left alone.
"$PY" -c "import torch" 2>/dev/null || "$PY" -m pip install -q "torch==2.13.0"
# torchcodec 0.13 is the release that works with the CPU torch 2.13 (newer ones are CUDA builds).
"$PY" -m pip install -q "torchcodec==0.13.0" -e ".[dev]"
