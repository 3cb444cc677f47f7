#!/usr/bin/env bash
# Does `lalm-eval train` teach the tiny model anything? The tiny random-weight Qwen2-Audio with a
# word-level vocabulary (`make-tiny-model --vocab word --vocab-tasks palm_recognition`: the words of
# the task's own training prompts and targets), trained with the `full` recipe for at most
# MINUTES of wall time on the embedded `small` build's palm_recognition train split (808 docs),
# then the base and the trained model on the first LIMIT test docs: token F1, the rule-based
# presence score (PALM Table 26 by rule) and BLEU, side by side. CPU only; the machine's load is
# printed before and after (other processes share the cores).
#
#   source .venv/bin/activate && bash bench/train_tiny_f1.sh          # WORK=/tmp/tr/bench
#   MINUTES=2 LIMIT=408 LR=5e-3 BATCH=2 FREEZE= bash bench/train_tiny_f1.sh  # knobs (defaults below)
#
# The recipe YAML's learning rate and epochs are the paper's (7B model); the tiny model gets its
# own on the command line (--learning_rate, --batch_size, --epochs), the YAML untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-/tmp/tr/bench}
CACHE=${CACHE:-$WORK/cache}
MINUTES=${MINUTES:-5}
LIMIT=${LIMIT:-100}
LR=${LR:-5e-3}
BATCH=${BATCH:-2}
EPOCHS=${EPOCHS:-5}
FREEZE=${FREEZE-audio_tower}  # "" trains the audio tower too (about half the steps in the same time)
SEED=${SEED:-0}
PY=${PYTHON:-python}
mkdir -p "$WORK"
rm -rf "$WORK/base" "$WORK/trained" "$WORK/eval_base" "$WORK/eval_trained"
echo "train_tiny_f1: $(nproc) cores; load before: $(uptime | sed 's/.*load average: //')"
$PY -m lalm_eval.cli make-tiny-model qwen2_audio "$WORK/base" --vocab word --vocab-tasks palm_recognition \
    --cache_dir "$CACHE" >/dev/null
$PY -m lalm_eval.cli train --model qwen2_audio --model_args "pretrained=$WORK/base" --tasks palm_recognition \
    --recipe full --output_dir "$WORK/trained" --cache_dir "$CACHE" --max_minutes "$MINUTES" \
    --learning_rate "$LR" --batch_size "$BATCH" --epochs "$EPOCHS" --seed "$SEED" --freeze "$FREEZE" \
    --save_steps 1000000 \
    >"$WORK/train.log" 2>&1 || { tail -20 "$WORK/train.log"; exit 1; }
echo "train_tiny_f1: load after training: $(uptime | sed 's/.*load average: //')"
for which in base trained; do
    $PY -m lalm_eval.cli --model qwen2_audio --model_args "pretrained=$WORK/$which" --tasks palm_recognition \
        --limit "$LIMIT" --batch_size 8 --cache_dir "$CACHE" --no_cache --output_path "$WORK/eval_$which" \
        --log_samples >"$WORK/eval_$which.log" 2>&1 || { tail -20 "$WORK/eval_$which.log"; exit 1; }
done
$PY - "$WORK" <<'EOF'
import glob, json, sys
from pathlib import Path

work = Path(sys.argv[1])
info = json.loads((work / "trained" / "train_info.json").read_text())
res = {w: json.loads(Path(sorted(glob.glob(str(work / f"eval_{w}" / "results_*.json")))[-1]).read_text())
       ["results"]["palm_recognition"] for w in ("base", "trained")}
samples = [json.loads(l) for l in open(sorted(glob.glob(str(work / "eval_trained" / "samples_*.jsonl")))[-1])]
print(f"\ntraining: recipe full, frozen {sorted(info['frozen_components']) or 'nothing'}, lr {info['learning_rate']}, batch {info['batch_size']}, {info['global_step']} steps "
      f"({info['global_step'] * info['batch_size'] / info['examples']:.2f} epochs of {info['examples']} docs) "
      f"in {info['seconds'] / 60:.2f} min; loss {info['loss_first']:.2f} -> {info['loss_last']:.2f}; "
      f"audio features computed {info['audio_features_computed']}, reused {info['audio_features_reused']}")
print(f"\n| palm_recognition test, first {len(samples)} docs | base | trained | change |\n|---|---|---|---|")
for key, name in (("token_f1", "token F1"), ("recognition_presence", "presence (rule)"), ("bleu", "BLEU")):
    b, t = res["base"][f"{key},none"], res["trained"][f"{key},none"]
    print(f"| {name} | {b:.3f} | {t:.3f} | {t - b:+.3f} |")
print("\ntrained answers (first 5):")
for s in samples[:5]:
    print(f"  {s['target']!r} <- {s['response']!r}")
EOF
echo "train_tiny_f1: load at the end: $(uptime | sed 's/.*load average: //')"
