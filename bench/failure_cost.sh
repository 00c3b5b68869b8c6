#!/usr/bin/env bash
# What node failures cost an elastic job (jobs/elastic.sh), to first order
# (Young 1974, Daly 2006): with N nodes of mean time between failures M
# each, the job loses a node every M / N on average; each loss costs the
# restart R (detection, start-up, checkpoint read) and the steps redone
# since the last checkpoint, on average half the interval T; checkpoints
# themselves cost C every T. Expected fraction of the time lost:
#   C / T + (N / M) * (R + T / 2)
# and the interval that minimises it, T* = sqrt(2 C M / N).
# Prints a table of that fraction over MTBFs and intervals.
#
# usage: bench/failure_cost.sh
# environment: NODES (default 128: 1,024 ranks at 8 a node), RESTART_S
#   (default 5.9: cluster.elastic's kill to the restarted job's tenth step,
#   docs/clusters.md), CKPT_S (seconds a checkpoint costs the
#   step, default 10), MTBF_YEARS (a node's, default "0.5 1 3"),
#   INTERVALS_MIN (default "5 15 30 60")
set -euo pipefail
NODES=${NODES:-128}
RESTART_S=${RESTART_S:-5.9}
CKPT_S=${CKPT_S:-10}
MTBF_YEARS=${MTBF_YEARS:-0.5 1 3}
INTERVALS_MIN=${INTERVALS_MIN:-5 15 30 60}
NUM='^[0-9]+([.][0-9]+)?$'
for v in NODES RESTART_S CKPT_S; do
	[[ ${!v} =~ $NUM ]] || { echo "failure_cost: $v='${!v}' is not a number" >&2; exit 2; }
done
for v in $MTBF_YEARS $INTERVALS_MIN; do
	[[ $v =~ $NUM ]] && [ "$v" != 0 ] ||
		{ echo "failure_cost: '$v' in MTBF_YEARS or INTERVALS_MIN is not a number above 0" >&2; exit 2; }
done
awk -v n="$NODES" -v r="$RESTART_S" -v c="$CKPT_S" -v mtbfs="$MTBF_YEARS" -v ints="$INTERVALS_MIN" 'BEGIN {
	nm = split(mtbfs, m, " "); ni = split(ints, t, " ")
	printf "%d nodes, restart %.1f s, checkpoint %.1f s; time lost (checkpoints + restarts + steps redone):\n", n, r, c
	printf "| node MTBF | job MTBF |"
	for (j = 1; j <= ni; j++) printf " every %s min |", t[j]
	printf " best interval |\n| ---: | ---: |"
	for (j = 1; j <= ni; j++) printf " ---: |"
	printf " ---: |\n"
	for (i = 1; i <= nm; i++) {
		M = m[i] * 365.25 * 86400 # a node s, in seconds
		J = M / n                 # the job s
		printf "| %s y | %.1f h |", m[i], J / 3600
		for (j = 1; j <= ni; j++) {
			T = t[j] * 60
			printf " %.2f%% |", 100 * (c / T + (r + T / 2) / J)
		}
		T = sqrt(2 * c * J)
		printf " %.0f min: %.2f%% |\n", T / 60, 100 * (c / T + (r + T / 2) / J)
	}
}'
