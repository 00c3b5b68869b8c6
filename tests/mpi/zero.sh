# --zero 1 (ZeRO-1: gradients reduce-scattered, each rank updating its
# shard with its shard of the Adam slots, weights all-gathered) trains the
# run --zero 0 trains: bitwise on 2 ranks (a sum of two is the same either
# way round), within 1e-6 on 3 and 5 ranks (three or more terms summed in
# another order: Open MPI's all-reduce against rank order). Checkpoints
# hold the whole slots under their names; a sharded run resumes bitwise on
# its own world size and resumes on any other; each rank holds 1/N of the
# optimizer state. Without shared memory MPI's collectives serve, with the
# same sums (bitwise on 3 and 5 ranks too), and no named object is left in
# /dev/shm.
. "$(dirname "$0")/lib.sh"
make_data
shm_before=$(ls /dev/shm | grep -c '^mtrain' || true)
FLAGS=("${SMALL[@]}" --optimizer adam --ema-decay 0.9 --ema-sync-every 3 --metrics m.jsonl)
for z in 0 1; do
	ranks 2 "${FLAGS[@]}" --steps 12 --zero $z --ckpt-dir two$z >log$z
	grep -q "^zero $z: optimizer state" log$z || { cat log$z; fail "no optimizer state line"; }
done
same_ckpt two0/ckpt-00000012.h5 two1/ckpt-00000012.h5
# Without shared memory (a full /dev/shm; here rank 1 fails to map it, the
# test switch): every rank warns once and MPI's reduce-scatter and
# all-gather serve, the same run.
MTRAIN_TEST_FAULT=shm:1 ranks 2 "${FLAGS[@]}" --steps 12 --zero 1 --ckpt-dir noshm >log 2>&1
[ "$(grep -c "warning: ZeRO-1: no shared memory" log)" = 1 ] || { cat log; fail "want one warning"; }
same_ckpt two1/ckpt-00000012.h5 noshm/ckpt-00000012.h5
for z in 0 1; do
	ranks 3 "${FLAGS[@]}" --steps 12 --zero $z --ckpt-dir three$z >/dev/null
done
"$CMP" --norm three0/ckpt-00000012.h5 three1/ckpt-00000012.h5 1e-6 ||
	fail "3 ranks: --zero 1 is not --zero 0 to 1e-6"
# MPI's plane sums each shard in rank order too: bitwise the shared memory's.
MTRAIN_TEST_FAULT=shm:2 ranks 3 "${FLAGS[@]}" --steps 12 --zero 1 --ckpt-dir noshm3 >log 2>&1
grep -q "warning: ZeRO-1: no shared memory .*rank 2: " log || { cat log; fail "the warning names no rank"; }
same_ckpt three1/ckpt-00000012.h5 noshm3/ckpt-00000012.h5
# The comparison has teeth: a learning rate 1e-4 larger is not the same run.
ranks 3 "${FLAGS[@]}" --lr 0.0010001 --steps 12 --zero 1 --ckpt-dir nudged >/dev/null
"$CMP" --norm three0/ckpt-00000012.h5 nudged/ckpt-00000012.h5 1e-6 >/dev/null 2>&1 &&
	fail "a run with another learning rate compared equal"
# 5 ranks of a model of 51 values (16 a shard): the last rank's shard is
# empty, the fourth's 3 values long.
for z in 0 1; do
	ranks 5 "${FLAGS[@]}" --layers 1 --steps 6 --zero $z --ckpt-dir five$z >/dev/null
done
"$CMP" --norm five0/ckpt-00000006.h5 five1/ckpt-00000006.h5 1e-6 ||
	fail "5 ranks, an empty shard: --zero 1 is not --zero 0 to 1e-6"
MTRAIN_TEST_FAULT=shm:0 ranks 5 "${FLAGS[@]}" --layers 1 --steps 6 --zero 1 --ckpt-dir noshm5 >/dev/null 2>&1
same_ckpt five1/ckpt-00000006.h5 noshm5/ckpt-00000006.h5

# Resumed on the same 3 ranks: bitwise the run that never stopped, from a
# stop inside an epoch (the slots scattered back to their shards).
ranks 3 "${FLAGS[@]}" --steps 8 --zero 1 --ckpt-dir resumed >/dev/null
ranks 3 "${FLAGS[@]}" --steps 12 --zero 1 --ckpt-dir resumed >log
grep -q "resumed from resumed/ckpt-00000008.h5 at step 8" log || { cat log; fail "no resume"; }
same_ckpt three1/ckpt-00000012.h5 resumed/ckpt-00000012.h5
# Any world size, sharded or not, from the sharded checkpoint: to 1e-5 of
# the 3-rank run that never stopped (the sums' order differs).
for run in "1 0" "2 1" "2 0" "4 1"; do
	set -- $run
	dir=on$1-$2
	mkdir $dir
	cp resumed/ckpt-00000008.h5 $dir/
	ranks $1 "${FLAGS[@]}" --steps 12 --zero $2 --ckpt-dir $dir >log
	grep -q "resumed from $dir/ckpt-00000008.h5 at step 8" log || { cat log; fail "$dir did not resume"; }
	"$CMP" --norm three1/ckpt-00000012.h5 $dir/ckpt-00000012.h5 1e-5 ||
		fail "$1 ranks --zero $2 from a 3-rank sharded checkpoint"
done
# And a 1-rank checkpoint resumed sharded on 3 ranks.
ranks 1 "${FLAGS[@]}" --steps 8 --ckpt-dir single >/dev/null
ranks 3 "${FLAGS[@]}" --steps 12 --zero 1 --ckpt-dir single >/dev/null
"$CMP" --norm three1/ckpt-00000012.h5 single/ckpt-00000012.h5 1e-5 ||
	fail "3 ranks --zero 1 from a 1-rank checkpoint"

# Optimizer state per rank: what each rank's optimizer allocated (optim.c
# says so under MTRAIN_TEST_OPTIM_BYTES), not the figure the start line
# computes from the plan: on 4 ranks each holds at most 1/4 of the 1-rank
# whole (up to a shard's rounding to 16 values of 2 Adam slots), together
# exactly the whole; the start event's figure is rank 0's allocation.
: >m.jsonl
MTRAIN_TEST_OPTIM_BYTES=1 ranks 1 "${FLAGS[@]}" --steps 1 --ckpt-dir mem1 >alloc1
MTRAIN_TEST_OPTIM_BYTES=1 ranks 4 "${FLAGS[@]}" --steps 1 --zero 1 --ckpt-dir mem4 >alloc4
python3 - alloc1 alloc4 m.jsonl <<'PY' || fail "optimizer state per rank"
import json, re, sys
def allocated(path):
    lines = re.findall(r"^optimizer slots: rank (\d+) allocated (\d+) bytes$", open(path).read(), re.M)
    return {int(r): int(b) for r, b in lines}
one, four = allocated(sys.argv[1]), allocated(sys.argv[2])
assert list(one) == [0] and sorted(four) == [0, 1, 2, 3], (one, four)
whole = one[0]
assert sum(four.values()) == whole, ("the shards do not add up to the whole", whole, four)
assert max(four.values()) <= whole / 4 + 8 * 16, ("a rank holds more than 1/4", whole, four)
starts = [e for e in map(json.loads, open(sys.argv[3])) if e["event"] == "start"]
assert [e["zero"] for e in starts] == [0, 1], starts
assert [e["optimizer_bytes_per_rank"] for e in starts] == [whole, four[0]], (starts, one, four)
print("optimizer state allocated per rank", whole, "->", four)
PY
# --zero 1 on one rank is the whole (nothing to split).
ranks 1 "${FLAGS[@]}" --steps 1 --zero 1 --ckpt-dir solo >log
grep -q "^zero 0: optimizer state" log || { cat log; fail "one rank claimed a shard"; }
expect_error "--zero: '2' is not one of 0\|1\|auto" "$MTRAIN" "${SMALL[@]}" --zero 2 --ckpt-dir bad
[ ! -e bad ] || fail "a refused --zero left --ckpt-dir behind"
[ "$(ls /dev/shm | grep -c '^mtrain' || true)" = "$shm_before" ] || fail "a named object left in /dev/shm"
pass "--zero 1 trains as --zero 0 on 2, 3 and 5 ranks, with or without shared memory; resumes on any world size; 1/N state"
