# Exactly once (issue 21): MTRAIN_TEST_ROWS records the global row ids each
# rank trained on, found from the staged rows' contents. On 1, 2 and 3 ranks,
# 87 rows in batches of 14 (6 steps an epoch, 3 rows left over; 14 does not
# divide by 3), 3 epochs: every epoch uses every row once but a tail of
# 87 mod 14 = 3; the global batches (the ranks' rows of a step in rank
# order) are the same on any rank count; rank r's rows are its slice
# [r*B/N, (r+1)*B/N); a run stopped and resumed, on the same or another
# rank count, or with a skipped (NaN) step retried, consumes the same batches.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_or_fail "no python3 to read the row records"
"$MKDATA" synth train.h5 87 12 3 11
ROWS=87 B=14 STEPS=18
FLAGS=(--device cpu --data train.h5 --layers 16,8 --batch $B --seed 5 --log-every 100)
# run NAME N ARGS...: N ranks recording into NAME.RANK.
run() {
	local name=$1 n=$2
	shift 2
	MTRAIN_TEST_ROWS=$WORK/$name ranks "$n" "${FLAGS[@]}" --ckpt-dir "ck-$name" "$@" >>"log-$name"
}
for n in 1 2 3; do
	run straight$n $n --steps $STEPS
done
# Stopped at step 8 (mid-epoch) and 12 (an epoch's end), resumed on the
# same and on other rank counts.
resumed=()
for case in 2:8:2 2:8:3 3:12:1 1:8:3 3:8:2; do
	IFS=: read -r first stop second <<<"$case"
	resumed+=("resumed-$first-$stop-$second")
	run "${resumed[-1]}" "$first" --steps "$stop"
	run "${resumed[-1]}" "$second" --steps $STEPS --resume auto
done
# Step 5's first attempt has NaN gradients: skipped, retried on the same rows.
MTRAIN_TEST_FAULT=nangrad:0:5 run nan2 2 --steps $STEPS
# Recording changes nothing: the same weights as a run without it.
ranks 2 "${FLAGS[@]}" --ckpt-dir ck-plain --steps $STEPS >/dev/null
same_ckpt ck-straight2/ckpt-000000$STEPS.h5 ck-plain/ckpt-000000$STEPS.h5
grep -q "step 5: gradients hold NaN" log-nan2 || fail "step 5 was not skipped"
grep -q "resumed from" "log-${resumed[0]}" || fail "${resumed[0]} did not resume"
python3 - "$ROWS" "$B" "$STEPS" straight1 straight2 straight3 "${resumed[@]}" nan2 <<'PY' ||
import collections, glob, sys

rows, batch, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
per_epoch = rows // batch
bad = []

def read(name):
    """name's records: {step: {rank: (epoch, pos, ids)}}."""
    got = collections.defaultdict(dict)
    files = glob.glob(name + ".*")
    if not files:
        bad.append(f"{name}: no record files")
    for path in files:
        for line in open(path):
            f = [int(v) for v in line.split()]
            step, epoch, pos, rank, ids = f[0], f[1], f[2], f[3], f[4:]
            if rank in got[step]:
                bad.append(f"{name}: step {step} recorded twice by rank {rank}")
            got[step][rank] = (epoch, pos, ids)
    return got

def global_batches(name):
    """name's global batch of each step, after checking each step's ranks."""
    got = read(name)
    if sorted(got) != list(range(1, steps + 1)):
        bad.append(f"{name}: steps recorded {sorted(got)}, want 1..{steps}")
    seq = []
    for step in sorted(got):
        ranks = got[step]
        n = len(ranks)
        if sorted(ranks) != list(range(n)):
            bad.append(f"{name}: step {step} has ranks {sorted(ranks)}")
            continue
        where = (step - 1) // per_epoch, (step - 1) % per_epoch
        glob_ids = []
        for r in range(n):
            epoch, pos, ids = ranks[r]
            if (epoch, pos) != where:
                bad.append(f"{name}: step {step} rank {r} says epoch {epoch} pos {pos}, want {where}")
            # (c) rank r holds its slice [r*B/N, (r+1)*B/N) of the global batch.
            lo, hi = r * batch // n, (r + 1) * batch // n
            if len(glob_ids) != lo or len(ids) != hi - lo:
                bad.append(f"{name}: step {step} rank {r} of {n} has {len(ids)} rows, "
                           f"want slice [{lo}, {hi})")
            if -1 in ids:
                bad.append(f"{name}: step {step} rank {r} trained on a row not in the set")
            glob_ids += ids
        seq.append(glob_ids)
    # (a) each epoch: every row once, but a tail of rows mod batch.
    for e in range(len(seq) // per_epoch):
        used = [i for b in seq[e * per_epoch:(e + 1) * per_epoch] for i in b]
        dup = len(used) - len(set(used))
        missing = rows - len(set(used) & set(range(rows)))
        if dup or missing != rows % batch or len(used) != per_epoch * batch:
            bad.append(f"{name}: epoch {e} uses {len(used)} rows, {dup} twice, "
                       f"leaves out {missing} (want {rows % batch})")
    return seq

ref = global_batches(sys.argv[4])
for name in sys.argv[5:]:
    seq = global_batches(name)
    # (b), (d): the same global batches as the one-rank run that never stopped.
    for k, (a, b) in enumerate(zip(ref, seq)):
        if a != b:
            bad.append(f"{name}: global batch of step {k + 1} differs from {sys.argv[4]}'s: {b} vs {a}")
            break
for line in bad[:10]:
    print("  " + line, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
	fail "the rows trained on are not each epoch's rows once, or differ with the ranks"
pass "every row once an epoch but the tail, the same global batches on 1, 2 and 3 ranks and resumed"

# Evaluation: each rank reads its own slice of the evaluation set; 31 rows
# (no rank count here divides it) are counted once each on 1, 2, 3 and 4
# ranks (the rows the ranks evaluated, summed), with the same accuracy.
"$MKDATA" synth eval31.h5 31 12 3 12
acc=
for n in 1 2 3 4; do
	timeout 120 "$MPIRUN" --oversubscribe -np $n "$MTRAIN" eval --ckpt ck-straight1/ckpt-000000$STEPS.h5 \
		--eval-data eval31.h5 --device cpu >eval$n.log 2>&1 || { cat eval$n.log; fail "mtrain eval on $n ranks"; }
	line=$(grep -E '^eval .* raw loss' eval$n.log) || { cat eval$n.log; fail "no raw eval line on $n ranks"; }
	[[ $line == *"(31 rows)" ]] || fail "$n ranks: '$line' does not count 31 rows"
	got=$(sed -n 's/.* acc \([0-9.]*\) .*/\1/p' <<<"$line")
	[ -z "$acc" ] || [ "$got" = "$acc" ] || fail "$n ranks: accuracy $got, 1 rank's $acc"
	acc=$got
done
pass "evaluation: 31 rows counted once each on 1 to 4 ranks, accuracy $acc on all"
