#!/usr/bin/env bash
# The main job on the embedded corpus, from nothing to a report:
#   install (the train and asr extras) → build PALM-Bench and MSU-Bench (`small` presets), side by
#   side, into ./palm-bench and ./msu-bench (reused when their build config is unchanged) → start
#   the `cascade` reference system on the `palm` and `msu` groups in the background at the lowest
#   CPU priority (speaker verification against the subjects' train-split enrollment clips +
#   pocketsphinx ASR in worker processes, on the cycles the other steps leave) → corpus report → load
#   the builds back with `datasets` → evaluate a tiny random-weight Qwen2-Audio on the same groups
#   (its answers capped at 64 new tokens: a random model stops only by chance) → results, Markdown
#   tables and PNG plots under ./outputs → print the combined PALM / MSU tables → fine-tune the
#   tiny model (one LoRA placement, one prompt-tuning setting, 100 steps each) and print it beside
#   the base model.
# No LLM judge is configured here, so LLM-score columns print "—" with the reason; add
# `--judge openai:model=...,base_url=...` to the lalm-eval lines to fill them.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's whole output goes to its log under outputs/logs/; the console shows its progress lines
# (sample counters, build stages, training steps: lines starting with the program's name) and, at
# the end, every step's time.
START=$(date +%s)
SHOWN='^(lalm-eval|palm-bench|msu-bench)( [a-z-]+)?: '
step() {  # step NAME LOG COMMAND...: run COMMAND, output into LOG, progress lines on the console
  local name=$1 log=$2 t0 rc
  shift 2
  t0=$(date +%s)
  echo "main job: $name (log: $log${OMP_NUM_THREADS:+; $OMP_NUM_THREADS torch thread(s)})"
  set +e
  "$@" 2>&1 | tee "$log" | grep --line-buffered -E "$SHOWN"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -ne 0 ]; then
    tail -30 "$log"
    echo "main job: $name failed (exit $rc); whole output in $log" >&2
    exit "$rc"
  fi
  printf '%-52s %5d s\n' "$name" $(( $(date +%s) - t0 )) >>"$LOGS/step_times.txt"
}
OUT=outputs
LOGS=$OUT/logs
mkdir -p "$LOGS"
: >"$LOGS/step_times.txt"
T0=$(date +%s)
# .venv with the project and the two extras this job runs (train: the fine-tunes; asr: the
# cascade's speech recognition), not the test tools: scripts/test.sh adds those (see the README's
# Install). Bytecode is written as modules are first imported (LALM_COMPILE=lazy), so only what
# the job runs is compiled: that is Python's default, which this job keeps even where
# PYTHONDONTWRITEBYTECODE is set (scripts/install.sh would otherwise compile every module).
unset PYTHONDONTWRITEBYTECODE
BIN=$(LALM_EXTRAS=train,asr LALM_COMPILE=lazy bash scripts/install.sh | tail -1)
printf '%-52s %5d s\n' "install" $(( $(date +%s) - T0 )) >>"$LOGS/step_times.txt"
export PATH="$BIN:$PATH"
# the two builds side by side, one torch thread each (PALM-Bench's plan also measures its subjects'
# voices in a second process while it embeds the clips; MSU-Bench's build is the smaller)
OMP_NUM_THREADS=1 step "build msu-bench (small, beside palm-bench)" "$LOGS/build-msu.log" \
  msu-bench build --out msu-bench --preset small &
MSU=$!
OMP_NUM_THREADS=1 step "build palm-bench (small)" "$LOGS/build-palm.log" palm-bench build --out palm-bench --preset small
wait "$MSU" || exit 1
# The cascade runs beside every later step at the lowest CPU priority (nice 19): its torch work
# on one thread, its speech decoded by pocketsphinx worker processes (asr_workers=auto: one per
# CPU). The tiny model's steps (one torch thread each) keep a whole core, and the cascade takes
# every cycle they leave: the other core while they run, both once they are done. The cascade
# ignores the batch size but for how many requests it plans at once: 256 at --batch_size 32 (the
# response cache commits 8 batches at a time), so each task's decodes are spread over the
# workers together rather than 64 requests at a time.
OMP_NUM_THREADS=1 step "cascade on palm,msu (beside the next steps, nice 19)" "$LOGS/cascade.log" \
  nice -n 19 lalm-eval --model cascade --model_args enrollment=palm-bench,threads=1,asr_workers=auto \
  --tasks palm,msu --batch_size 32 --output_path "$OUT/cascade" --log_samples &
CASCADE=$!
trap 'kill "$CASCADE" 2>/dev/null || true' EXIT  # a step that fails stops the cascade too
# one thread per torch process while the cascade runs beside it, every CPU once it is done
threads() { if kill -0 "$CASCADE" 2>/dev/null; then echo 1; else nproc; fi; }
export OMP_NUM_THREADS=1
palm-bench corpus-info
python3 - <<'PY'
import datasets
from datasets import load_dataset

datasets.disable_progress_bars()  # the loads below print one line each

ds = load_dataset("palm-bench", "recognition", split="test")
row = ds[0]
audio = row["audio"].get_all_samples()
print(f"load_dataset('palm-bench', 'recognition'): {len(ds)} test rows; first: "
      f"{row['question']!r} -> {row['answer']!r} ({audio.data.shape[-1] / audio.sample_rate:.1f} s, "
      f"{row['n_speakers']} speaker(s))")
enroll = load_dataset("palm-bench", "enrollment", split="train")
print(f"load_dataset('palm-bench', 'enrollment'): {len(enroll)} train-split clips of "
      f"{len(set(enroll['name']))} subjects")
msu = load_dataset("msu-bench", "tier4", split="test")
print(f"load_dataset('msu-bench', 'tier4'): {len(msu)} questions; first: {msu[0]['question']!r}")
PY
# the model's folder is not its run's: make-tiny-model refuses a folder holding other files, so
# a second main job would stop here if the results were written beside the weights
MODEL=$OUT/models/tiny-qwen2-audio
step "make the tiny Qwen2-Audio" "$LOGS/make-tiny-model.log" lalm-eval make-tiny-model qwen2_audio "$MODEL"
OMP_NUM_THREADS=$(threads) step "tiny Qwen2-Audio on palm,msu (answers <= 64 tokens)" "$LOGS/tiny-qwen2-audio.log" \
  lalm-eval --model qwen2_audio \
  --model_args "pretrained=$MODEL" --tasks palm,msu --batch_size 8 \
  --gen_kwargs max_new_tokens=64 --output_path "$OUT/tiny-qwen2-audio" --log_samples
# PALM §5.2 in miniature: one LoRA placement (attention) and one prompt-tuning setting (4 soft
# tokens per speaker), each trained for 100 steps (a fixed count: the same run every time) on the
# embedded train split of palm_recognition with the paper's learning rate, then evaluated beside
# the base model (PALM Table 2's layout), with the base model's answer cap.
SFT=()
for RECIPE in lora_attn prompt_tuning; do
  EXTRA=(); ARG=peft
  if [ "$RECIPE" = prompt_tuning ]; then EXTRA=(--tokens 4); ARG=soft_prompts; fi
  rm -rf "$OUT/sft/$RECIPE"  # a rerun trains again (100 fixed steps: the same adapter) rather than mix checkpoints
  OMP_NUM_THREADS=$(threads) step "fine-tune $RECIPE (100 steps)" "$LOGS/sft-$RECIPE.log" lalm-eval train --model qwen2_audio \
    --model_args "pretrained=$MODEL" --tasks palm_recognition \
    --recipe "$RECIPE" "${EXTRA[@]}" --max_steps 100 --seed 0 --output_dir "$OUT/sft/$RECIPE"
  RUN="$OUT/tiny-qwen2-audio+$RECIPE"
  OMP_NUM_THREADS=$(threads) step "tiny Qwen2-Audio+$RECIPE on palm_recognition" "$LOGS/eval-$RECIPE.log" lalm-eval --model qwen2_audio \
    --model_args "pretrained=$MODEL,$ARG=$OUT/sft/$RECIPE" \
    --tasks palm_recognition --batch_size 8 --gen_kwargs max_new_tokens=64 --output_path "$RUN" --log_samples
  SFT+=("$RUN")
done
wait "$CASCADE" || exit 1
lalm-eval report "$OUT/cascade" "$OUT/tiny-qwen2-audio" --output_path "$OUT/report" \
  --metrics recognition_presence,token_f1,llm_judge
lalm-eval report "$OUT/tiny-qwen2-audio" "${SFT[@]}" --layout palm_table2 --output_path "$OUT/report-sft"
# the sample browser of the two palm,msu runs: a static site (open index.html from disk), each
# doc's clip beside its question, reference, both answers and their metrics
step "view of cascade + tiny Qwen2-Audio (lalm-eval view)" "$LOGS/view.log" \
  lalm-eval view "$OUT/cascade" "$OUT/tiny-qwen2-audio" --output_path "$OUT/view"
echo
echo "main job: step times (the rest: corpus report, loads, reports)"
sed 's/^/  /' "$LOGS/step_times.txt"
echo "main job: $(( $(date +%s) - START )) s in all; per-model reports: $OUT/cascade, $OUT/tiny-qwen2-audio; logs: $LOGS"
echo "main job: the samples, with their audio: open $OUT/view/index.html in a browser"
