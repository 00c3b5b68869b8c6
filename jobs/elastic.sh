#!/usr/bin/env bash
# Elastic mtrain: runs mpirun over ELASTIC_HOSTS and, when the job ends
# because a node was lost (it stops answering ELASTIC_PROBE, or rank 0's
# watchdog named a rank of it that stalled: --comm-timeout), starts it
# again on the other nodes, from the newest checkpoint (--resume auto), as
# long as at least ELASTIC_MIN_NODES remain and at most ELASTIC_MAX_RESTARTS
# times. The restarted job is the same training run on fewer ranks: the
# global batch, its order, the schedule and the EMA go on from the
# checkpoint; the steps after it are redone (bound them with --ckpt-every
# or --ckpt-every-min). Each restart is one line here and one from mtrain
# (the nodes lost, the new world size, the step it resumes from) and a
# restart event in --metrics and --tensorboard (mtrain's --restart).
#
#   ELASTIC_HOSTS=node1:4,node2:4,node3:4 jobs/elastic.sh --ckpt-dir /scratch/run1 --epochs 90
#
# Arguments: mtrain's flags, given to every run.
# Environment:
#   ELASTIC_HOSTS         the nodes and ranks on each, as mpirun's --host takes them
#                         (node1:4,node2:4); or ELASTIC_HOSTFILE, an Open MPI
#                         hostfile ("node1 slots=4" lines)
#   ELASTIC_MIN_NODES     fewest nodes to go on with (default 1)
#   ELASTIC_MAX_RESTARTS  most restarts (default 3)
#   ELASTIC_PROBE         the command that asks a node whether it is up, the
#                         node's name appended, then `true` (default
#                         "ssh -o BatchMode=yes -o ConnectTimeout=5"); 10 s at most
#   ELASTIC_GRACE         seconds mpirun may go on after mtrain's rank 0 said it
#                         ends the job (a node cut off: mpirun waits for its
#                         daemon), before it is ended (default 10)
#   MPIRUN (default mpirun), MPIRUN_ARGS (more of its options, split on
#   blanks), MTRAIN (default build/mtrain)
# Exit status: mtrain's when it ends without a node lost (0 when it
# completes; 2, bad input, is never restarted); 1 when fewer than
# ELASTIC_MIN_NODES answer or the restarts run out (one line says which;
# the newest checkpoint is intact and resumes on any number of ranks).
set -u
MPIRUN=${MPIRUN:-mpirun}
MTRAIN=${MTRAIN:-build/mtrain}
MIN=${ELASTIC_MIN_NODES:-1}
MAX=${ELASTIC_MAX_RESTARTS:-3}
GRACE=${ELASTIC_GRACE:-10}
read -r -a PROBE <<<"${ELASTIC_PROBE:-ssh -o BatchMode=yes -o ConnectTimeout=5}"
say() { echo "elastic: $*" >&2; }
usage_error() { say "error: $*"; exit 2; }

# An Open MPI hostfile ("node1 slots=4" lines; # comments) as the list.
SRC="ELASTIC_HOSTS='${ELASTIC_HOSTS:-}'"
if [ -z "${ELASTIC_HOSTS:-}" ] && [ -n "${ELASTIC_HOSTFILE:-}" ]; then
	[ -r "$ELASTIC_HOSTFILE" ] || usage_error "ELASTIC_HOSTFILE=$ELASTIC_HOSTFILE: cannot read it"
	ELASTIC_HOSTS=$(sed 's/#.*//' "$ELASTIC_HOSTFILE" | awk 'NF {
		slots = ""
		for (i = 2; i <= NF; i++) if ($i ~ /^slots=/) slots = ":" substr($i, 7)
		printf "%s%s%s", (n++ ? "," : ""), $1, slots }')
	[ -n "$ELASTIC_HOSTS" ] || usage_error "ELASTIC_HOSTFILE=$ELASTIC_HOSTFILE: names no node"
	SRC="ELASTIC_HOSTFILE=$ELASTIC_HOSTFILE"
fi
[ -n "${ELASTIC_HOSTS:-}" ] || usage_error "ELASTIC_HOSTS is not set (the nodes, as mpirun's --host takes them: node1:4,node2:4; or ELASTIC_HOSTFILE)"
whole() { [[ $2 =~ ^[0-9]+$ ]] || usage_error "$1='$2' is not a whole number"; }
whole ELASTIC_MIN_NODES "$MIN"
whole ELASTIC_MAX_RESTARTS "$MAX"
whole ELASTIC_GRACE "$GRACE"
IFS=, read -r -a HOSTS <<<"$ELASTIC_HOSTS"
for h in "${HOSTS[@]}"; do
	[[ $h =~ ^[A-Za-z0-9._-]+(:[1-9][0-9]*)?$ ]] ||
		usage_error "$SRC: '$h' is not NODE or NODE:RANKS"
done
if [ "$MIN" -lt 1 ] || [ "$MIN" -gt ${#HOSTS[@]} ]; then
	usage_error "ELASTIC_MIN_NODES=$MIN: want 1 to ${#HOSTS[@]} (the nodes in ELASTIC_HOSTS)"
fi
read -r -a MPI_EXTRA <<<"${MPIRUN_ARGS:-}"

# A signal to the wrapper goes to mpirun (which hands it to every rank:
# USR1 and TERM checkpoint and stop); the job then ends, never restarted.
pid=
signalled=
forward() { signalled=$1; [ -z "$pid" ] || kill "-$1" "$pid" 2>/dev/null; }
trap 'forward USR1' USR1
trap 'forward TERM' TERM
trap 'forward INT' INT

ERR=$(mktemp "${TMPDIR:-/tmp}/elastic.XXXXXX")
OUT=$ERR.out
trap 'rm -f "$ERR" "$OUT"' EXIT

# run_once FLAGS...: mpirun over HOSTS; its status in rc. mtrain's output
# and errors go on as they come, and into OUT and ERR for the wrapper:
# once rank 0 says it ends the job, mpirun has ELASTIC_GRACE seconds to
# end before it is ended.
run_once() {
	local hosts
	hosts=$(IFS=,; echo "${HOSTS[*]}")
	: >"$ERR"
	: >"$OUT"
	"$MPIRUN" --host "$hosts" ${MPI_EXTRA[@]+"${MPI_EXTRA[@]}"} "$MTRAIN" "$@" \
		> >(tee -a "$OUT") 2> >(tee -a "$ERR" >&2) &
	pid=$!
	[ -z "$signalled" ] || kill "-$signalled" "$pid" # it came before mpirun did
	local ended=
	while kill -0 "$pid" 2>/dev/null; do
		if [ -z "$ended" ] && grep -q '^mtrain: error: rank 0 .*ending the job' "$ERR"; then
			ended=$(date +%s)
		fi
		if [ -n "$ended" ] && [ $(($(date +%s) - ended)) -ge "$GRACE" ]; then
			say "mpirun still runs $GRACE s after rank 0 ended the job: ending it"
			kill -TERM "$pid" 2>/dev/null
			sleep 2
			kill -KILL "$pid" 2>/dev/null
		fi
		sleep 0.5
	done
	rc=0
	wait "$pid" || rc=$?
	pid=
}

# stalled_nodes: the nodes of the ranks rank 0's watchdog named (a rank
# that stopped answering, or stalled outside the collective: its node is
# left out even when it answers the probe), from mtrain's "nodes" line.
stalled_nodes() {
	local ranks
	ranks=$(grep -m 1 '^mtrain: error: rank 0 .*ending the job' "$ERR" | sed -n 's/.*; not in it: //p' |
		grep -o 'rank [0-9]* (' | tr -dc '0-9\n' | paste -sd' ')
	[ -n "$ranks" ] || return 0
	grep -m 1 '^nodes [0-9]*: ' "$OUT" | sed 's/^nodes [0-9]*: //' | tr ';' '\n' |
		awk -v want=" $ranks " '{ for (i = 3; i <= NF; i++) if (index(want, " " $i " ")) { print $1; break } }'
}

restarts=0
flags=(--resume auto "$@")
while :; do
	run_once "${flags[@]}"
	[ "$rc" = 0 ] && exit 0
	[ -z "$signalled" ] || { say "stopped by $signalled (mpirun exited with status $rc)"; exit "$rc"; }
	[ "$rc" != 2 ] || { say "mtrain rejected its input (status 2): not restarting"; exit 2; }
	alive=() lost=()
	stalled=" $(stalled_nodes | paste -sd' ') "
	for h in "${HOSTS[@]}"; do
		if [[ $stalled != *" ${h%%:*} "* ]] &&
			timeout 10 "${PROBE[@]}" "${h%%:*}" true </dev/null >/dev/null 2>&1; then
			alive+=("$h")
		else
			lost+=("${h%%:*}")
		fi
	done
	lost_text=$(IFS=,; echo "${lost[*]-}")
	if [ ${#lost[@]} = 0 ]; then
		say "mtrain exited with status $rc and every node answers: no node lost; not restarting"
		exit "$rc"
	fi
	if [ ${#alive[@]} -lt "$MIN" ]; then
		say "error: lost $lost_text: ${#alive[@]} node(s) left, fewer than ELASTIC_MIN_NODES=$MIN; ending (the newest checkpoint is intact: it resumes on any number of ranks)"
		exit 1
	fi
	if [ "$restarts" -ge "$MAX" ]; then
		say "error: lost $lost_text after $restarts restart(s): ELASTIC_MAX_RESTARTS=$MAX reached; ending (the newest checkpoint is intact: it resumes on any number of ranks)"
		exit 1
	fi
	restarts=$((restarts + 1))
	HOSTS=("${alive[@]}")
	say "restart $restarts of at most $MAX: lost $lost_text (mpirun exited with status $rc); going on with ${#HOSTS[@]} node(s): $(IFS=,; echo "${HOSTS[*]}")"
	# Later flags win: every restart resumes, and names itself.
	flags=("$@" --resume auto --restart "$restarts" --restart-lost "$lost_text")
done
