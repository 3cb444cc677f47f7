#!/usr/bin/env bash
# Real speech for the cascade's real-speech tests and bench (tests/test_cascade_real_speech.py,
# bench/cascade_counting_real.py; bench/real_voices.py reads them). Idempotent: what is already
# there is kept.
#   - Debian: the Asterisk PBX prompts (one voice talent per folder, 8 kHz) and pocketsphinx's
#     LibriVox test utterances, under /usr/share (apt-get as root, or through sudo);
#   - PyPI: the pyannote-audio 4.0.7 wheel, whose pyannote/audio/sample/sample.wav is a real 30 s
#     two-person telephone call with its RTTM; downloaded with --no-deps into
#     $PYANNOTE_WHEEL_DIR (default ~/.cache/lalm_eval/wheels), never installed.
# LALM_PYTHON: the python whose pip downloads the wheel (default .venv/bin/python, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(asterisk-core-sounds-en-wav asterisk-core-sounds-es-wav asterisk-core-sounds-fr-wav
  asterisk-core-sounds-it-wav asterisk-core-sounds-ru-wav asterisk-prompt-it-menardi-wav pocketsphinx-testdata)
WHEEL_DIR=${PYANNOTE_WHEEL_DIR:-$HOME/.cache/lalm_eval/wheels}
PY=${LALM_PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "fetch_real_voices.sh: apt-get install ${missing[*]}"
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get update >/dev/null
    $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
  }
fi

if ! ls "$WHEEL_DIR"/pyannote_audio-4.0.7-*.whl >/dev/null 2>&1; then
  mkdir -p "$WHEEL_DIR"
  echo "fetch_real_voices.sh: pip download pyannote-audio==4.0.7 -> $WHEEL_DIR"
  "$PY" -m pip download --quiet --no-deps pyannote-audio==4.0.7 -d "$WHEEL_DIR"
fi
"$PY" - <<'PY'
import sys
sys.path.insert(0, ".")
from bench.real_voices import asterisk_voices, pyannote_call

call = pyannote_call()
voices = asterisk_voices(min_s=1.5, max_s=4.0)
print(f"fetch_real_voices.sh: call {'found' if call else 'MISSING'}; Asterisk voices {sorted(voices)}")
sys.exit(0 if call is not None and len(voices) >= 5 else 1)
PY
