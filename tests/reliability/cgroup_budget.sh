# The memory budget is the limit of the cgroup mtrain runs in, as under
# Slurm's per-job cgroups (v1 or v2), not the root cgroup's (where there
# is none): a model, or an IDX file, larger than a 256 MiB cgroup's limit
# is refused with the one line that names the budget (exit 2) instead of
# the kernel killing the job. A cgroup below it without a limit of its own
# (a job step's) sees its parent's. Needs root and a memory cgroup that can
# be made (v2 under the root, or v1 under this shell's own, as
# reliability.memory makes one); skips (skip_or_fail) where there is none.
. "$(dirname "$0")/../mpi/lib.sh"
LIMIT=$((256 << 20))
[ "$(id -u)" = 0 ] || skip_or_fail "making a memory cgroup needs root"
CG= LIMIT_FILE=
if [ -f /sys/fs/cgroup/cgroup.subtree_control ] &&
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control; then
	CG=/sys/fs/cgroup/mtrain-budget-$$ LIMIT_FILE=memory.max
elif v1=$(sed -n 's/^[0-9]*:[a-z,]*memory[a-z,]*:\(.*\)$/\1/p' /proc/self/cgroup) &&
	[ -n "$v1" ] && [ -d "/sys/fs/cgroup/memory$v1" ]; then
	CG=/sys/fs/cgroup/memory${v1%/}/mtrain-budget-$$ LIMIT_FILE=memory.limit_in_bytes
fi
# Removed on exit, once the processes killed in it are gone. (return 0:
# a bare return in a trap returns the status the trap began with, a
# failure, and set -e then ends the handler before WORK is removed.)
drop_cgroup() {
	local i
	for i in $(seq 50); do
		rmdir "$CG/step" 2>/dev/null || true
		rmdir "$CG" 2>/dev/null && return 0
		[ -d "$CG" ] || return 0
		sleep 0.1
	done
	echo "could not remove $CG" >&2
}
trap 'jobs -p | xargs -r kill -9 2>/dev/null; wait 2>/dev/null; drop_cgroup; rm -rf "$WORK"' EXIT
[ -n "$CG" ] && mkdir "$CG" 2>/dev/null && mkdir "$CG/step" 2>/dev/null ||
	skip_or_fail "no memory cgroup can be made here"
echo $LIMIT >"$CG/$LIMIT_FILE"
make_data
# An IDX image file that declares 1024 images of 512x512 (256 MiB): its
# size is checked against the budget before it is read.
python3 -c 'import struct, sys; open(sys.argv[1], "wb").write(struct.pack(">IIII", 0x803, 1024, 512, 512))' \
	big.idx
printf '\0\0\10\1\0\0\4\0' >labels.idx

# in_cgroup DIR CMD...: CMD run as a process of cgroup DIR.
in_cgroup() { bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$@"; }
BUDGET="this rank may use 0\.[0-9] GiB \(the cgroup's limit \(256.00 MiB\) less its use"
for where in "$CG" "$CG/step"; do
	# A model of about 17M values: 0.4 GiB with its gradients, slots and shadows.
	expect_error "the model needs about [0-9.]+ GiB per rank; $BUDGET" in_cgroup "$where" \
		timeout 120 "$MTRAIN" "${SMALL[@]}" --layers 4096,4096 --steps 1 --ckpt-dir "ck-${where##*/}"
	expect_error "big.idx needs about 0\.3 GiB per rank; $BUDGET" in_cgroup "$where" \
		"$MTRAIN" import --images big.idx --labels labels.idx --out big.h5
done
[ ! -e big.h5 ] || fail "an import refused for its size left big.h5"
pass "a 256 MiB cgroup's limit, its own or its parent's, is the budget"
