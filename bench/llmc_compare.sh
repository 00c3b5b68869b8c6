#!/usr/bin/env bash
# mtrain against llm.c's CPU trainer (train_gpt2.c, built here with
# OpenMP and run unchanged) at one shape and batch: the GPT of
# jobs/text-gpt.conf with llm.c's tanh gelu (4 blocks, 4 heads, width 128,
# tied embeddings, biases), llm.c's batch of 4 windows of 64 tokens, AdamW
# at llm.c's 1e-4 without weight decay, on the Jargon File's bytes. llm.c
# starts from a random checkpoint of that shape in its format and reads the
# same tokens as its shards (bench/llmc_files.py); it runs its 41 steps with
# OMP_NUM_THREADS threads, and its rate is the batch's tokens over the mean
# of its steps 1 to 40 (each step's own time, its evaluations and samples
# aside). mtrain trains 600 steps on 2 ranks and on 1; its rate is the mean
# of its progress lines'. Prints both rates and the ratios.
#
# usage: bench/llmc_compare.sh   (the build in ./build)
# environment: LLMC (a checkout of karpathy/llm.c; required), PYTHON (a
#   python3 with numpy and h5py; default python3), THREADS (llm.c's, default
#   2), MTRAIN_DATA_DIR.
# Exit status 1 when a run fails, 0 otherwise.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
THREADS=${THREADS:-2}
fail() { echo "llmc_compare: FAIL: $*" >&2; exit 1; }
[ -n "${LLMC:-}" ] && [ -f "$LLMC/train_gpt2.c" ] || fail "set LLMC to a checkout of karpathy/llm.c"
[ -x "$ROOT/build/mtrain" ] || fail "$ROOT/build/mtrain missing: jobs/setup.sh builds it"
"$PY" -c 'import numpy, h5py' 2>/dev/null || fail "$PY cannot import numpy and h5py"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
WORK=$(mktemp -d /tmp/mtrain-llmc_compare.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
GPT="embedding:128,posembed,4*([layernorm:1e-5,attention:4:causal],
	[layernorm:1e-5,dense:512,gelu_tanh,dense:128]),layernorm:1e-5,unembed"
rate=()
for n in 2 1; do
	mpirun -np $n "$ROOT/build/mtrain" --dataset jargon --model "$GPT" --context 64 --batch 4 \
		--steps 600 --optimizer adamw --lr 1e-4 --weight-decay 0 --eval-data none \
		--log-every 50 --ckpt-dir "$WORK/ck$n" --resume never >"$WORK/mtrain$n.log" 2>&1 ||
		{ tail -20 "$WORK/mtrain$n.log" >&2; fail "mtrain on $n ranks failed"; }
	rate[$n]=$(awk '$1 == "step" { for (i = 2; i < NF; i++) if ($i == "tokens/s") { r += $(i + 1); k++ } }
		END { if (k) printf "%.0f", r / k }' "$WORK/mtrain$n.log")
done
data=$(awk '$1 == "data" { print $2; exit }' "$WORK/mtrain2.log")
mkdir -p "$WORK/llmc"
"$PY" "$ROOT/bench/llmc_files.py" --data "$data" --out "$WORK/llmc" --layers 4 --heads 4 \
	--width 128 --context 64 || fail "llm.c's files"
cc -Ofast -march=native -fopenmp -DOMP -Wno-unused-result "$LLMC/train_gpt2.c" -lm \
	-o "$WORK/llmc/train_gpt2" || fail "building llm.c's train_gpt2.c"
(cd "$WORK/llmc" && OMP_NUM_THREADS=$THREADS ./train_gpt2 >run.log 2>&1) ||
	{ tail -20 "$WORK/llmc/run.log" >&2; fail "llm.c's train_gpt2 failed"; }
llmc=$(awk '$1 == "step" && $2 + 0 > 0 { ms += $(NF - 1); k++ }
	END { if (k) printf "%.0f", 4 * 64 / (ms / k / 1000) }' FS='[ :(]+' "$WORK/llmc/run.log")
[ -n "$llmc" ] && [ -n "${rate[1]}" ] && [ -n "${rate[2]}" ] || fail "no figures in a log"
loss=$(awk '$1 == "step" { l = $5 } END { print l }' FS='[ :(]+' "$WORK/llmc/run.log")
echo "jobs/text-gpt.conf's GPT with gelu_tanh, batch 4 x 64 tokens, AdamW 1e-4; tokens/s:"
printf "  %-34s %6d  (%.2fx llm.c)\n" "mtrain, 2 ranks" "${rate[2]}" "$(awk -v a="${rate[2]}" -v b="$llmc" 'BEGIN { print a / b }')"
printf "  %-34s %6d  (%.2fx llm.c)\n" "mtrain, 1 rank" "${rate[1]}" "$(awk -v a="${rate[1]}" -v b="$llmc" 'BEGIN { print a / b }')"
printf "  %-34s %6d  (its last train loss %s)\n" "llm.c train_gpt2.c, $THREADS threads" "$llmc" "$loss"
