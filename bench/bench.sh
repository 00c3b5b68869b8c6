#!/usr/bin/env bash
# Throughput of mtrain on 1 and 2 CPU ranks (Fashion-MNIST, Adam, global
# batch 128; 2 ranks both with ZeRO-1, the default on one node, and with
# --zero 0; and 1 rank unbound, on every core's thread, against the
# PyTorch peer), each model set against baselines measured in the same run:
#   every model also against this core's peak (bench_peak: fp32 FMA on
#        registers, one large sgemm, bf16 dot products where the CPU has
#        them), its step as a fraction of it;
#   mlp: the default job (MLP 784-256-256-10) against this machine's own
#        single-thread OpenBLAS sgemm rate for the same matrix products
#        (bench_sgemm);
#   cnn: a --model CNN (BENCH_CNN_MODEL) against the sgemm rate of its
#        products and layer by layer (bench_layers);
#   resnet: jobs/fmnist-resnet.conf's ResNet-20 the same way (its model and
#        input shape; Adam and batch 128 as the others, for the peer);
#   vit: jobs/fmnist-vit.conf's ViT the same way (its model; Adam and batch
#        128 as the others), its products' baseline dense per token and
#        attention's projections and heads' products (bench_layers);
#        mlp, cnn, resnet and vit each against the same model in PyTorch on
#        this machine (bench/bench_torch.py, when a python3 here imports
#        torch; that row is skipped otherwise).
#   data: the streamed reader against the previous release's in-memory
#        loader, built side by side (bench/bench_data.sh, which says more).
# Builds nothing but data's baseline. Which OpenBLAS kernels ran
# (OPENBLAS_CORETYPE) is printed.
#
# usage: bench/bench.sh [BUILD_DIR]      (default ./build, holding mtrain,
#                                        bench/bench_sgemm and bench/bench_layers)
# environment: BENCH_MODELS ("mlp cnn resnet data" by default; any of them
#   and vit),
#   BENCH_STEPS (MLP steps a run, default 1404), BENCH_REPEATS (MLP, default 5),
#   BENCH_CNN_MODEL (default the CNN below), BENCH_CNN_INPUT_SHAPE (28,28,1),
#   BENCH_CNN_STEPS (default 60), BENCH_CNN_REPEATS (default 3),
#   BENCH_RESNET_STEPS (default 30), BENCH_RESNET_REPEATS (default 3),
#   BENCH_VIT_STEPS (default 30), BENCH_VIT_REPEATS (default 3),
#   BENCH_TORCH (0: skip PyTorch), PYTHON (the python3 that has torch),
#   BENCH_PAIRS (default 5: the CNN, ResNet-20 and ViT against PyTorch in
#   pairs taken in turn, after the separate runs; 0: none),
#   MTRAIN_DATA_DIR (mtrain's data cache, default ./data; imported on first use).
# About 8 minutes on 2 cores with the defaults (vit: about 6 more).
# Exit status 1 when a run fails, its loss is not a finite number, its timing
# line is missing, or bench_sgemm, bench_layers or bench_torch.py find a wrong
# answer.
set -euo pipefail

BUILD=${1:-build}
MTRAIN=$BUILD/mtrain
SGEMM=$BUILD/bench/bench_sgemm
PEAK_PROG=$BUILD/bench/bench_peak
LAYERS=$BUILD/bench/bench_layers
TORCH_PEER=$(dirname "$0")/bench_torch.py
MODELS=${BENCH_MODELS:-mlp cnn resnet data}
CNN_MODEL=${BENCH_CNN_MODEL:-conv2d:32:3,batchnorm,relu,maxpool2d:2,conv2d:64:3,batchnorm,relu,maxpool2d:2,flatten,dense:128,relu,dropout:0.3,dense}
CNN_SHAPE=${BENCH_CNN_INPUT_SHAPE:-28,28,1}
# 60 steps: 55 timed (the first 5 are left out), ~14 s a run on 1 rank.
CNN_STEPS=${BENCH_CNN_STEPS:-60}
CNN_REPEATS=${BENCH_CNN_REPEATS:-3}
. "$(dirname "$0")/compare_lib.sh" # preset_model
# ~8 s a run of 30 steps on 1 rank.
RESNET_MODEL=$(preset_model "$(dirname "$0")/../jobs/fmnist-resnet.conf")
RESNET_STEPS=${BENCH_RESNET_STEPS:-30}
RESNET_REPEATS=${BENCH_RESNET_REPEATS:-3}
# ~15 s a run of 30 steps on 1 rank.
VIT_MODEL=$(preset_model "$(dirname "$0")/../jobs/fmnist-vit.conf")
VIT_STEPS=${BENCH_VIT_STEPS:-30}
VIT_REPEATS=${BENCH_VIT_REPEATS:-3}
# 1404 steps = 3 epochs of 468 (60000 rows / 128). mtrain's timing line is
# steady state: it leaves out its first 5 steps and the checkpoint written at
# every epoch end. The table's "other" column (total minus the timed phases)
# is what remains: the progress lines and the loop itself.
STEPS=${BENCH_STEPS:-1404}
REPEATS=${BENCH_REPEATS:-5}
RANK_COUNTS=(1 2)
MPIRUN=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Each phase boundary waits for the backend: exact split on any backend
# (a no-op on the CPU one, which --device cpu asks for: the baseline is CPU sgemm).
export MTRAIN_PROFILE=1


fail() { echo "bench: FAIL: $*" >&2; exit 1; }

for m in $MODELS; do
	[ "$m" = mlp ] || [ "$m" = cnn ] || [ "$m" = resnet ] || [ "$m" = vit ] || [ "$m" = data ] ||
		fail "BENCH_MODELS='$MODELS': want any of mlp, cnn, resnet, vit, data"
done
has() { [[ " $MODELS " == *" $1 "* ]]; }
for p in "$MTRAIN" "$SGEMM" "$LAYERS" "$PEAK_PROG"; do
	[ -x "$p" ] || fail "$p missing: build first (cmake -S . -B $BUILD && cmake --build $BUILD)"
done
WORK=$(mktemp -d /tmp/mtrain-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)

NUM='^[0-9]+(\.[0-9]+)?$'

# train N STEPS TAG [MTRAIN_ARGS...]: the default job (or the model the
# arguments give) on N ranks; checks it and appends "N samples/s data forward
# backward allreduce optimizer ema total gflops loss rows_per_rank
# global_batch checkpoints" to $WORK/runs-TAG.
RUN=0
# train_unbound STEPS TAG ARGS...: train on 1 rank left unbound (mpirun
# --bind-to none), which then computes on every core (--threads 0).
train_unbound() { UNBOUND=1 train 1 "$@"; }
train() {
	local n=$1 steps=$2 tag=$3 rc=0
	shift 3
	local log=$WORK/train-$((++RUN)).log
	timeout 300 "$MPIRUN" ${UNBOUND:+--bind-to none} -np "$n" "$MTRAIN" --steps "$steps" --eval-data none \
		--device cpu --log-every 1000000 --resume never \
		--ckpt-dir "$WORK/ck-$RUN" "$@" >"$log" 2>&1 || rc=$?
	[ "$rc" = 0 ] || { tail -20 "$log" >&2; fail "mtrain on $n rank(s) exited with status $rc"; }
	local loss batch rows ckpts timing
	loss=$(awk -v s="$steps/$steps" '$1 == "step" && $2 == s && $5 == "loss" {print $6}' "$log")
	[[ $loss =~ $NUM ]] || { cat "$log" >&2; fail "$n rank(s): loss of step $steps is '$loss', not a finite number"; }
	read -r batch rows < <(sed -n 's/.*, batch \([0-9]*\) (\([0-9]*\) per rank).*/\1 \2/p' "$log") || true
	[[ $batch =~ $NUM && $rows =~ $NUM ]] ||
		{ cat "$log" >&2; fail "$n rank(s): no 'batch B (R per rank)' in the start line"; }
	ckpts=$(grep -c '^checkpoint ' "$log" || true)
	timing=$(awk '$1 == "timing" && $2 == "ms/step" {
		for (i = 3; i < NF; i += 2) v[$i] = $(i + 1)
		print v["samples/s"], v["data"], v["forward"], v["backward"], v["allreduce"],
		      v["optimizer"], v["ema"], v["total"], v["gflops"] }' "$log")
	[ -n "$timing" ] || { cat "$log" >&2; fail "$n rank(s): no 'timing ms/step' line"; }
	for f in $timing; do
		[[ $f =~ $NUM ]] || { cat "$log" >&2; fail "$n rank(s): timing field '$f' is not a number"; }
	done
	echo "$n $timing $loss $rows $batch $ckpts" >>"$WORK/runs-$tag"
	rm -rf "$WORK/ck-$RUN"
}

# sgemm N ROWS: bench_sgemm on N processes at once, placed as mpirun places
# the N ranks; appends the mean of their rates to $WORK/sgemm-N.
sgemm() {
	local n=$1 rows=$2 out=$WORK/sgemm.out
	timeout 120 "$MPIRUN" -np "$n" "$SGEMM" "$rows" >"$out" 2>&1 ||
		{ cat "$out" >&2; fail "bench_sgemm $rows on $n process(es) failed"; }
	awk -v n="$n" -v rows="$rows" '$1 == "sgemm" && $3 == rows && $5 ~ /^[0-9.]+$/ {s += $5; k++}
		END { if (k != n) exit 1; printf "%.2f\n", s / k }' "$out" >>"$WORK/sgemm-$n" ||
		{ cat "$out" >&2; fail "bench_sgemm $rows: want $n result lines"; }
}

# median FILE COLUMN: the middle value of a column (lower middle when even).
median() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR] = $c} END {print v[int((NR + 1) / 2)]}'; }
# median_row FILE COLUMN: the whole row holding that median, so a table row
# is one run's consistent figures.
median_row() { sort -g -k"$2","$2" "$1" | awk '{r[NR] = $0} END {print r[int((NR + 1) / 2)]}'; }

# peak N: bench_peak on N processes at once, placed as mpirun places the N
# ranks: the means of their fp32 FMA and large-sgemm rates into PEAK[N] and
# PEAK_SGEMM[N], its bf16 line into PEAK_BF16 (a rate or "none").
declare -A PEAK PEAK_SGEMM
PEAK_BF16=none
peak() {
	local n=$1 out=$WORK/peak.out
	timeout 120 "$MPIRUN" -np "$n" "$PEAK_PROG" >"$out" 2>&1 ||
		{ cat "$out" >&2; fail "bench_peak on $n process(es) failed"; }
	read -r PEAK[$n] PEAK_SGEMM[$n] < <(awk -v n="$n" '
		$2 == "fp32_fma" && $4 ~ /^[0-9.]+$/ {f += $4; kf++}
		$2 == "sgemm" && $4 ~ /^[0-9.]+$/ {s += $4; ks++}
		END { if (kf != n || ks != n) exit 1; printf "%.1f %.1f\n", f / kf, s / ks }' "$out") ||
		{ cat "$out" >&2; fail "bench_peak: want $n fp32_fma and sgemm lines"; }
	PEAK_ISA=$(awk '$2 == "fp32_fma" {print $6; exit}' "$out")
	PEAK_BF16=$(awk '$2 == "bf16_dot" {print ($3 == "gflops" ? $4 : "none"); exit}' "$out")
}

# layers_sgemm N ROWS: bench_layers' sgemm rate for the CNN's products
# (its FLOPs / the bare products' time) on N processes at once, placed as
# mpirun places the N ranks; appends the mean of their rates to
# $WORK/lsgemm-N.
layers_sgemm() {
	local n=$1 rows=$2 out=$WORK/layers.out
	timeout 300 "$MPIRUN" -np "$n" "$LAYERS" --model "$CONV_MODEL" --input-shape "$CNN_SHAPE" \
		--rows "$rows" --reps 5 >"$out" 2>&1 ||
		{ cat "$out" >&2; fail "bench_layers --rows $rows on $n process(es) failed"; }
	awk -v n="$n" -v rows="$rows" '$1 == "layers" && $3 == rows {
			for (i = 4; i < NF; i += 2) if ($i == "sgemm_gflops") { s += $(i + 1); k++ } }
		/^bench_layers: check ok/ {ok++}
		END { if (k != n || ok != n) exit 1; printf "%.2f\n", s / k }' "$out" >>"$WORK/lsgemm-$n" ||
		{ cat "$out" >&2; fail "bench_layers --rows $rows: want $n result and check lines"; }
}

# warm_up TAG STEPS [MTRAIN_ARGS...]: untimed runs that import the data on first
# use, warm caches and the page cache, and learn the rows per rank of each
# rank count (into ROWS).
declare -A ROWS
warm_up() {
	local tag=$1 steps=$2
	shift 2
	for n in "${RANK_COUNTS[@]}"; do
		train "$n" "$steps" "$tag" "$@"
		read -r rows batch < <(awk -v n="$n" '$1 == n {print $12, $13}' "$WORK/runs-$tag")
		ROWS[$n]=$rows
		[ $((ROWS[$n] * n)) = "$batch" ] ||
			fail "$n rank(s): ${ROWS[$n]} rows per rank, global batch $batch"
	done
}

# check_losses TAG: a rank count's repeats print the same loss (mtrain is
# deterministic), 2 ranks train the same model as 1 (the loss is the mean
# over the whole run; summation order differs, little else), and the same
# loss with --zero 0 as with ZeRO-1 (on 2 ranks, bitwise the same run).
# Sets LOSS[1], LOSS[2].
declare -A LOSS
check_losses() {
	local tag=$1
	for n in "${RANK_COUNTS[@]}"; do
		[ "$(awk '{print $11}' "$WORK/runs-$tag-$n" | sort -u | wc -l)" = 1 ] ||
			fail "$tag, $n rank(s): repeats disagree on the loss:" \
				"$(awk '{print $11}' "$WORK/runs-$tag-$n" | tr '\n' ' ')"
		LOSS[$n]=$(awk 'NR == 1 {print $11}' "$WORK/runs-$tag-$n")
	done
	# Batch norm with each rank's own statistics trains otherwise on 2
	# ranks (each normalises half the batch): 5% there, 1% elsewhere.
	local tol=0.01
	[[ $tag == mlp || $CONV_MODEL != *batchnorm* ]] || tol=0.05
	awk -v a="${LOSS[1]}" -v b="${LOSS[2]}" -v t=$tol 'BEGIN {exit !((a - b) ^ 2 <= (t * a) ^ 2)}' ||
		fail "$tag: 1 rank ends at mean loss ${LOSS[1]}, 2 ranks at ${LOSS[2]} (more than $tol relative apart)"
	[ "$(awk '{print $11}' "$WORK/runs-$tag-2z0" | sort -u)" = "${LOSS[2]}" ] ||
		fail "$tag: 2 ranks --zero 0 end at mean loss $(awk '{print $11}' "$WORK/runs-$tag-2z0" | sort -u | tr '\n' ' '), ZeRO-1 at ${LOSS[2]}"
}

# rank_table TAG BASE: one row per run kind (1 rank; 2 ranks; 2 ranks
# --zero 0, "2z0"), the median run of $WORK/runs-TAG-KIND set against the
# median of $WORK/BASE-N for its N ranks. Sets SPS. allreduce is all of the
# gradients' and weights' communication (ZeRO-1: reduce-scatter and
# all-gather).
declare -A SPS PHASES
rank_table() {
	local tag=$1 basefile=$2
	printf '%-5s %4s %4s %9s | %6s %7s %8s %9s %9s %6s %6s %7s | %7s %7s %9s %10s %9s\n' \
		ranks zero rows samples/s data forward backward allreduce optimizer ema other total \
		GFLOP/s sgemm ach/sgemm step/sgemm step/peak
	for kind in 1 2 2z0; do
		local n=${kind%z0} zero=1
		[ "$n" = 1 ] && zero=-
		[ "$kind" = 2z0 ] && zero=0
		read -r _ sps data fwd bwd ar opt ema total gf _ rows _ \
			<<<"$(median_row "$WORK/runs-$tag-$kind" 2)"
		base=$(median "$WORK/$basefile-$n" 1)
		SPS[$kind]=$sps
		PHASES[$kind]="$data $fwd $bwd $opt $ema $total"
		awk -v n="$n" -v z="$zero" -v rows="$rows" -v sps="$sps" -v d="$data" -v f="$fwd" -v b="$bwd" -v a="$ar" -v o="$opt" \
			-v e="$ema" -v t="$total" -v gf="$gf" -v base="$base" -v peak="${PEAK[$n]}" 'BEGIN {
			printf "%-5d %4s %4d %9.0f | %6.3f %7.3f %8.3f %9.3f %9.3f %6.3f %6.3f %7.3f | %7.2f %7.2f %9.2f %10.2f %9.2f\n",
				n, z, rows, sps, d, f, b, a, o, e, t - (d + f + b + a + o + e), t, gf, base, gf / base,
				gf * (f + b) / (t * base), gf * (f + b) / (t * peak) }'
	done
	awk -v s1="${SPS[1]}" -v s2="${SPS[2]}" -v z0="${SPS[2z0]}" 'BEGIN {
		printf "speed-up, 2 ranks / 1 rank (samples/s): %.2fx with ZeRO-1, %.2fx with --zero 0 (2 cores)\n",
			s2 / s1, z0 / s1 }'
	# The most 2 ranks could gain here with this forward and backward: 1
	# rank's step against 2 ranks' data and forward+backward (each rank's
	# half batch, both cores busy) plus half of 1 rank's optimizer and EMA,
	# as if communication were free and rank 0 had no EMA of its own to do.
	awk -v one="${PHASES[1]}" -v two="${PHASES[2]}" 'BEGIN {
		split(one, a); split(two, b)
		printf "ceiling, 2 ranks / 1 rank with free communication and the optimizer and EMA split in two: %.2fx\n",
			a[6] / (b[1] + b[2] + b[3] + (a[4] + a[5]) / 2) }'
}

# The python3 that imports torch: $PYTHON, else python3, else Debian's.
PY=
if [ "${BENCH_TORCH:-1}" != 0 ]; then
	for p in ${PYTHON:-} python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then
			PY=$p
			break
		fi
	done
fi

# torch_peer KIND: bench/bench_torch.py KIND (1 and 2 threads), checked;
# prints its figures and mtrain's 2-rank samples/s (SPS[2]) against the
# better of them. Skips, saying so, when no python3 here has torch.
torch_peer() {
	local kind=$1 out=$WORK/torch-$1.out
	if [ -z "$PY" ]; then
		if [ "${BENCH_TORCH:-1}" = 0 ]; then
			echo "PyTorch peer: skipped (BENCH_TORCH=0)"
		else
			echo "PyTorch peer: skipped: no python3 here imports torch (jobs/setup.sh --torch installs Debian's python3-torch; or set PYTHON)"
		fi
		return 0
	fi
	local extra=()
	# The CNN's peer has batch norm after each conv when the model string does.
	[ "$kind" = cnn ] && [[ ,$CNN_MODEL, == *,batchnorm,* ]] && extra=(--batchnorm)
	local what="same layers"
	[ "$kind" = resnet ] && what="bench/resnet_torch.py's ResNet-20"
	[ "$kind" = vit ] && what="bench/vit_torch.py's ViT"
	# Twice: glibc's malloc as it comes, and with its mmap threshold at the
	# most glibc allows (32 MiB) and no trimming, so that a step's large
	# tensors reuse the heap instead of faulting in fresh pages each time.
	local fast_malloc=(MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296)
	local setting t row=() best=0 ver
	PEER_EXTRA=("${extra[@]}")
	for setting in plain malloc; do
		local envs=()
		[ $setting = plain ] || envs=("${fast_malloc[@]}")
		timeout 600 env "${envs[@]}" "$PY" "$TORCH_PEER" "$kind" "${extra[@]}" >"$out" 2>&1 ||
			{ cat "$out" >&2; fail "bench_torch.py $kind ($setting malloc) failed"; }
		[ "$(grep -c ' check ok$' "$out")" = 2 ] ||
			{ cat "$out" >&2; fail "bench_torch.py $kind: no check line"; }
		for threads in 1 2; do
			t=$(awk -v n=$threads '$1 == "torch" && $5 == n {print $9}' "$out")
			[[ $t =~ $NUM ]] || { cat "$out" >&2; fail "bench_torch.py $kind: no samples/s"; }
			row+=("$t")
			if awk -v a="$best" -v b="$t" 'BEGIN { exit !(b > a) }'; then
				best=$t PEER_THREADS=$threads PEER_ENV=("${envs[@]}")
			fi
		done
		ver=$(awk '$2 == "version" {print $3; exit}' "$out")
	done
	echo "PyTorch $ver peer (bench/bench_torch.py $kind${extra:+ ${extra[*]}}: $what, Adam, batch 128, EMA each step, synthetic data, one process), samples/s:"
	printf "  glibc malloc as it comes: 1 thread %8.0f   2 threads %8.0f\n" "${row[0]}" "${row[1]}"
	printf "  %s:\n  %26s 1 thread %8.0f   2 threads %8.0f\n" "${fast_malloc[*]}" "" "${row[2]}" "${row[3]}"
	awk -v m2="${SPS[2]}" -v best="$best" 'BEGIN {
		printf "mtrain 2 ranks / best PyTorch (samples/s): %.0f / %.0f = %.2fx\n", m2, best, m2 / best }'
	local all
	all=$(median_row "$WORK/runs-$kind-1a" 2 | cut -d' ' -f2)
	awk -v m="$all" -v best="$best" -v c="$(nproc)" 'BEGIN {
		printf "mtrain 1 rank on all %d cores (mpirun --bind-to none: %d threads) / best PyTorch (samples/s): %.0f / %.0f = %.2fx\n",
			c, c, m, best, m / best }'
}

# interleave KIND STEPS MTRAIN_ARGS...: BENCH_PAIRS (default 5) pairs, each
# mtrain on 2 ranks then PyTorch in its best setting (torch_peer's), so that
# a slow spell of this machine falls on both; prints each pair's ratio and
# their median, the figure to quote (separate runs minutes apart can move
# by a fifth here).
interleave() {
	local kind=$1 steps=$2 pairs=${BENCH_PAIRS:-5} out=$WORK/pair.out k m t lo hi
	local ratios=$WORK/pairs-$kind # a line a pair: mtrain's samples/s, PyTorch's, the ratio
	shift 2
	[ -n "$PY" ] && [ "$pairs" -gt 0 ] || return 0
	: >"$ratios"
	for ((k = 1; k <= pairs; k++)); do
		train 2 "$steps" "$kind-pair" "$@"
		m=$(tail -1 "$WORK/runs-$kind-pair" | cut -d' ' -f2)
		timeout 600 env "${PEER_ENV[@]}" "$PY" "$TORCH_PEER" "$kind" "${PEER_EXTRA[@]}" \
			--threads "$PEER_THREADS" --repeats 1 --steps "$steps" >"$out" 2>&1 ||
			{ cat "$out" >&2; fail "bench_torch.py $kind (pair $k) failed"; }
		t=$(awk '$1 == "torch" {print $9}' "$out")
		[[ $t =~ $NUM ]] || { cat "$out" >&2; fail "bench_torch.py $kind (pair $k): no samples/s"; }
		awk -v a="$m" -v b="$t" 'BEGIN { printf "%s %s %.6f\n", a, b, a / b }' >>"$ratios"
	done
	read -r lo hi < <(sort -g -k3,3 "$ratios" | awk 'NR == 1 {lo = $3} {hi = $3} END {print lo, hi}')
	echo "interleaved, mtrain 2 ranks then PyTorch ($PEER_THREADS threads, its best setting above)," \
		"$pairs pairs:$(awk '{printf " %.0f/%.0f", $1, $2}' "$ratios")"
	awk -v med="$(median "$ratios" 3)" -v lo="$lo" -v hi="$hi" 'BEGIN {
		printf "mtrain 2 ranks / PyTorch, median of the pairs: %.2fx (range %.2f to %.2f)\n", med, lo, hi }'
	rm -f "$WORK/runs-$kind-pair" "$ratios"
}

CORE=$("$LAYERS" --model dense --input-shape 1,1,4 --rows 1 --reps 1 |
	sed -n 's/.*; core \([^ ]*\) (OPENBLAS_CORETYPE.*/\1/p')
# mtrain picks kernels OpenBLAS's own detection missed (backend_cpu_pick_kernels,
# which bench_sgemm and bench_layers call too); PyTorch's OpenBLAS gets the same.
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$CORE}
# Other work on the machine skews every figure: say how busy it was.
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
echo "mtrain benchmark on $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')); OpenBLAS kernels: $CORE" \
	"(OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE for every program here, PyTorch too), one BLAS thread per rank"
for n in "${RANK_COUNTS[@]}"; do peak "$n"; done
echo "peak per core (bench_peak, as many processes at once as ranks; 1 / 2): fp32 FMA on registers" \
	"${PEAK[1]} / ${PEAK[2]} GFLOP/s ($PEAK_ISA), one large sgemm ${PEAK_SGEMM[1]} / ${PEAK_SGEMM[2]};" \
	"bf16 dot products: $PEAK_BF16; step/peak = the whole step's FLOP rate / the fp32 FMA peak"

if has mlp; then
	warm_up mlp-warm 50
	# Interleaved so that a slow spell of the machine hits baseline and trainer alike.
	for ((r = 1; r <= REPEATS; r++)); do
		for n in "${RANK_COUNTS[@]}"; do
			sgemm "$n" "${ROWS[$n]}"
			train "$n" "$STEPS" "mlp-$n"
		done
		train 2 "$STEPS" mlp-2z0 --zero 0
		train_unbound "$STEPS" mlp-1a
	done
	check_losses mlp

	ckpts=$(awk '{print $14}' "$WORK/runs-mlp-1" | sort -u | tr '\n' ' ')
	echo
	echo "== MLP: default job, $STEPS steps a run (checkpoints in each: ${ckpts% }), median of $REPEATS runs per row"
	echo "rank 0's figures, ms per step, steady state (first 5 steps and checkpoints left out); other = total - phases;"
	echo "GFLOP/s = mtrain's forward+backward FLOPs / forward+backward time (bias, activation, loss included);"
	echo "zero: 1 = ZeRO-1 (the default on one node), 0 = --zero 0 (all-reduce, whole optimizer on every rank);"
	echo "sgemm = bench_sgemm's rate for the same 8 products alone, one OpenBLAS thread per process,"
	echo "as many processes at once as ranks, placed by mpirun alike; ach/sgemm = GFLOP/s / sgemm;"
	echo "step/sgemm = the whole step's FLOP rate (forward+backward FLOPs / total) / sgemm, per rank"
	echo "as for all ranks (N ranks' rate against N processes' sgemm)"
	rank_table mlp sgemm
	torch_peer mlp
	echo "checks passed: every run exited 0 with a finite loss and a timing line; each rank count's" \
		"repeats print the same loss; mean loss 1 rank ${LOSS[1]}, 2 ranks ${LOSS[2]}; sgemm products verified"
fi

# conv_bench TAG MODEL STEPS REPEATS TITLE [PRODUCTS]: a model with conv2d
# layers, as the CNN, ResNet-20 and ViT parts run it (bench_layers' sgemm
# rate of its products beside each run, its table of layer kinds, the
# PyTorch peer); PRODUCTS says which products the baseline holds.
conv_bench() {
	local tag=$1 steps=$3 repeats=$4 title=$5
	local products=${6:-"the same conv2d (im2col) and dense products"}
	CONV_MODEL=$2
	local args=(--model "$CONV_MODEL" --input-shape "$CNN_SHAPE")
	warm_up "$tag-warm" 10 "${args[@]}"
	for ((r = 1; r <= repeats; r++)); do
		for n in "${RANK_COUNTS[@]}"; do
			layers_sgemm "$n" "${ROWS[$n]}"
			train "$n" "$steps" "$tag-$n" "${args[@]}"
		done
		train 2 "$steps" "$tag-2z0" "${args[@]}" --zero 0
		train_unbound "$steps" "$tag-1a" "${args[@]}"
	done
	check_losses "$tag"
	# The per-kind table: one process alone, both per-rank batches.
	"$LAYERS" --model "$CONV_MODEL" --input-shape "$CNN_SHAPE" \
		--rows "${ROWS[2]},${ROWS[1]}" --reps 10 >"$WORK/layers-table.out" 2>&1 ||
		{ cat "$WORK/layers-table.out" >&2; fail "bench_layers failed"; }
	grep -q '^bench_layers: check ok' "$WORK/layers-table.out" ||
		{ cat "$WORK/layers-table.out" >&2; fail "bench_layers: no check line"; }

	echo
	echo "== $title"
	echo "$steps steps a run, median of $repeats runs per row; columns as for the MLP, except"
	echo "sgemm = bench_layers' rate for $products alone (its"
	echo "FLOPs / their time), as many processes at once as ranks; ach/sgemm = GFLOP/s / sgemm;"
	echo "step/sgemm = the whole step's FLOP rate / sgemm"
	rank_table "$tag" lsgemm
	torch_peer "$tag"
	interleave "$tag" "$steps" "${args[@]}"
	echo
	echo "-- where a step goes, layer kind by kind (bench_layers, one process, per-rank batches):"
	sed -n '/^rows /,$p' "$WORK/layers-table.out" | grep -v '^bench_layers: check ok'
	echo "checks passed: every run exited 0 with a finite loss and a timing line; each rank count's" \
		"repeats print the same loss; mean loss 1 rank ${LOSS[1]}, 2 ranks ${LOSS[2]};" \
		"bench_layers: loss and gradients equal to the model's, sgemm products verified"
	rm -f "$WORK"/lsgemm-*
}

has cnn && conv_bench cnn "$CNN_MODEL" "$CNN_STEPS" "$CNN_REPEATS" \
	"CNN: --model $CNN_MODEL --input-shape $CNN_SHAPE,"
has resnet && conv_bench resnet "$RESNET_MODEL" "$RESNET_STEPS" "$RESNET_REPEATS" \
	"ResNet-20 (jobs/fmnist-resnet.conf's model) --input-shape $CNN_SHAPE, Adam,"
has vit && conv_bench vit "$VIT_MODEL" "$VIT_STEPS" "$VIT_REPEATS" \
	"ViT (jobs/fmnist-vit.conf's model) --input-shape $CNN_SHAPE, Adam," \
	"the same conv2d (im2col), dense (per token) and attention products"
echo "bench: $(($(date +%s) - START)) s; load average (1 min) $LOAD0 at the start," \
	"$(cut -d' ' -f1 /proc/loadavg) at the end (this script keeps about 1 to 2 busy)"

if has data; then
	echo
	"$(dirname "$0")/bench_data.sh" "$BUILD" || fail "bench/bench_data.sh failed"
fi
