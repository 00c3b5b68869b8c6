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
#   ELASTIC_MIN_NODES     fewest nodes to go on with (default 1; 1 to the nodes given)
#   ELASTIC_MAX_RESTARTS  most restarts (default 3; 0 to 10000)
#   ELASTIC_PROBE         the command that asks a node whether it is up, the
#                         node's name appended, then `true` (default
#                         "ssh -o BatchMode=yes -o ConnectTimeout=5"); 10 s at most
#   ELASTIC_GRACE         seconds mpirun may go on after mtrain's rank 0 said it
#                         ends the job (a node cut off: mpirun waits for its
#                         daemon), before it is ended (default 10; 0 to 3600)
#   MPIRUN (default mpirun), MPIRUN_ARGS (more of its options, split on
#   blanks), MTRAIN (default build/mtrain)
# Exit status: 2 with one line for a bad setting above, before anything
# starts; mtrain's when it ends without a node lost (0 when it
# completes; 2, bad input, is never restarted); 1 when fewer than
# ELASTIC_MIN_NODES answer or the restarts run out (one line says which;
# the newest checkpoint is intact and resumes on any number of ranks).
set -u
MPIRUN=${MPIRUN:-mpirun}
MTRAIN=${MTRAIN:-build/mtrain}
read -r -a PROBE <<<"${ELASTIC_PROBE:-ssh -o BatchMode=yes -o ConnectTimeout=5}"
say() { echo "elastic: $*" >&2; }
usage_error() { say "error: $*"; exit 2; }

# An Open MPI hostfile ("node1 slots=4" lines; # comments) as the list.
SRC="ELASTIC_HOSTS='${ELASTIC_HOSTS:-}'"
if [ -z "${ELASTIC_HOSTS:-}" ] && [ -n "${ELASTIC_HOSTFILE:-}" ]; then
	# Read once, here: the reason a file cannot be read is this line's,
	# never a second one from sed.
	why=
	if [ -d "$ELASTIC_HOSTFILE" ]; then
		why="a folder"
	elif [ ! -e "$ELASTIC_HOSTFILE" ]; then
		why="no such file"
	elif [ ! -f "$ELASTIC_HOSTFILE" ]; then
		why="not a regular file"
	elif ! text=$(cat -- "$ELASTIC_HOSTFILE" 2>/dev/null); then
		why="permission denied or a read error"
	fi
	[ -z "$why" ] || usage_error "ELASTIC_HOSTFILE=$ELASTIC_HOSTFILE: cannot read it: $why"
	ELASTIC_HOSTS=$(sed 's/#.*//' <<<"$text" | awk 'NF {
		slots = ""
		for (i = 2; i <= NF; i++) if ($i ~ /^slots=/) slots = ":" substr($i, 7)
		printf "%s%s%s", (n++ ? "," : ""), $1, slots }')
	[ -n "$ELASTIC_HOSTS" ] || usage_error "ELASTIC_HOSTFILE=$ELASTIC_HOSTFILE: names no node"
	SRC="ELASTIC_HOSTFILE=$ELASTIC_HOSTFILE"
fi
[ -n "${ELASTIC_HOSTS:-}" ] || usage_error "ELASTIC_HOSTS is not set (the nodes, as mpirun's --host takes them: node1:4,node2:4; or ELASTIC_HOSTFILE)"
IFS=, read -r -a HOSTS <<<"$ELASTIC_HOSTS"
for h in "${HOSTS[@]}"; do
	[[ $h =~ ^[A-Za-z0-9._-]+(:[1-9][0-9]*)?$ ]] ||
		usage_error "$SRC: '$h' is not NODE or NODE:RANKS"
done
# setting VAR NAME DEFAULT LOW HIGH [WHY]: VAR = $NAME (DEFAULT when unset
# or empty), a whole number (decimal: leading zeros are not octal) from
# LOW to HIGH; else one line naming NAME, exit 2. Its digits are counted
# before bash compares them: past 2^63, `[` fails and reads as false.
setting() {
	local value=${!2:-$3} digits
	[[ $value =~ ^[0-9]+$ ]] || usage_error "$2='$value' is not a whole number"
	digits=${value#"${value%%[!0]*}"}
	if [ ${#digits} -gt 18 ] || [ "${digits:-0}" -lt "$4" ] || [ "${digits:-0}" -gt "$5" ]; then
		usage_error "$2=$value: want $4 to $5${6:+ ($6)}"
	fi
	printf -v "$1" %s "${digits:-0}"
}
setting MIN ELASTIC_MIN_NODES 1 1 ${#HOSTS[@]} "the nodes in ELASTIC_HOSTS"
setting MAX ELASTIC_MAX_RESTARTS 3 0 10000
setting GRACE ELASTIC_GRACE 10 0 3600
read -r -a MPI_EXTRA <<<"${MPIRUN_ARGS:-}"

# A signal to the wrapper goes to mpirun (which hands it to every rank:
# USR1 and TERM checkpoint and stop); the job then ends, never restarted.
pid=
signalled=
forward() { signalled=$1; [ -z "$pid" ] || kill "-$1" "$pid" 2>/dev/null; }
trap 'forward USR1' USR1
trap 'forward TERM' TERM
trap 'forward INT' INT

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/elastic.XXXXXX") || usage_error "cannot make a scratch folder in ${TMPDIR:-/tmp}"
ERR=$SCRATCH/err
OUT=$SCRATCH/out
trap 'rm -rf "$SCRATCH"' EXIT
# A watchdog's last words (any rank's: whichever speaks first ends the job).
DOG='^mtrain: error: rank [0-9][0-9]* .*(ending|aborting) the job'

# probe NODE: whether NODE answers ELASTIC_PROBE within 10 s.
probe() { timeout 10 "${PROBE[@]}" "$1" true </dev/null >/dev/null 2>&1; }
# Every node must answer before the job starts: a probe that cannot work
# would otherwise take a crash for the loss of every node.
for h in "${HOSTS[@]}"; do
	probe "${h%%:*}" || usage_error "node ${h%%:*} does not answer ELASTIC_PROBE (${PROBE[*]} ${h%%:*} true) before the job starts"
done

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
	local ended='' killed='' polls=0
	while kill -0 "$pid" 2>/dev/null; do
		# A signal that came before mpirun had started, or in the instant
		# before it replaced the forked shell, is sent again (a second
		# USR1 or TERM does what the first does).
		[ -z "$signalled" ] || [ "$polls" != 2 ] || kill "-$signalled" "$pid" 2>/dev/null
		if [ -z "$ended" ] && grep -Eq "$DOG" "$ERR"; then
			ended=$(date +%s)
		fi
		if [ -n "$ended" ] && [ -z "$killed" ] && [ $(($(date +%s) - ended)) -ge "$GRACE" ]; then
			say "mpirun still runs $GRACE s after a rank ended the job: ending it"
			kill -TERM "$pid" 2>/dev/null
			killed=$(date +%s)
		fi
		[ -z "$killed" ] || [ $(($(date +%s) - killed)) -lt 2 ] || kill -KILL "$pid" 2>/dev/null
		polls=$((polls + 1))
		sleep 0.5
	done
	rc=0
	wait "$pid" || rc=$?
	pid=
}

# stalled_nodes: the nodes (short names) of the ranks the watchdogs named
# (a rank that stopped answering, or stalled outside the collective: its
# node is left out even when it answers the probe): by mtrain's "nodes"
# line, or where it lists no ranks (more than 16 nodes), by mpirun's
# placement by slot over HOSTS.
stalled_nodes() {
	local ranks line
	ranks=$(grep -E "$DOG" "$ERR" | sed -n 's/.*; not in it: //p' |
		grep -o 'rank [0-9]* (' | tr -dc '0-9\n' | sort -un | paste -sd' ' -)
	[ -n "$ranks" ] || return 0
	line=$(grep -m 1 '^nodes [0-9]*: .* ranks ' "$OUT" | sed 's/^nodes [0-9]*: //')
	if [ -n "$line" ]; then
		tr ';' '\n' <<<"$line" |
			awk -v want=" $ranks " '{ for (i = 3; i <= NF; i++) if (index(want, " " $i " ")) { sub(/\..*/, "", $1); print $1; break } }'
	else
		printf '%s\n' "${HOSTS[@]}" |
			awk -v want=" $ranks " -F: '{ n = $2 == "" ? 1 : $2; for (i = 0; i < n; i++) if (index(want, " " r + i " ")) { print $1; break } r += n }'
	fi
}
# newest_ckpt: the newest checkpoint this job wrote, from mtrain's
# "checkpoint PATH step N" lines, or "" (none yet).
newest_ckpt() { sed -n 's/^checkpoint \(.*\) step [0-9][0-9]*$/\1/p' "$OUT" | tail -n 1; }

restarts=0
ckpt=
flags=(--resume auto "$@")
while :; do
	run_once "${flags[@]}"
	[ "$rc" = 0 ] && exit 0
	[ -z "$signalled" ] || { say "stopped by $signalled (mpirun exited with status $rc)"; exit "$rc"; }
	[ "$rc" != 2 ] || { say "mtrain rejected its input (status 2): not restarting"; exit 2; }
	c=$(newest_ckpt)
	[ -z "$c" ] || ckpt=$c
	alive=() lost=()
	stalled=" $(stalled_nodes | paste -sd' ' -) "
	for h in "${HOSTS[@]}"; do
		if [[ $stalled != *" ${h%%:*} "* ]] && probe "${h%%:*}"; then
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
	# A signal during the probes: the checkpoint is intact, nothing runs.
	[ -z "$signalled" ] || { say "stopped by $signalled before restarting"; exit 0; }
	restarts=$((restarts + 1))
	HOSTS=("${alive[@]}")
	say "restart $restarts of at most $MAX: lost $lost_text (mpirun exited with status $rc); going on with ${#HOSTS[@]} node(s): $(IFS=,; echo "${HOSTS[*]}"); from ${ckpt:-the start (no checkpoint yet)}"
	# Later flags win: a restart resumes from the newest checkpoint this
	# job wrote (not whatever else --ckpt-dir holds), or as the first run
	# began when it wrote none; and names itself.
	flags=("$@" ${ckpt:+--resume "$ckpt"} --restart "$restarts" --restart-lost "$lost_text")
done
