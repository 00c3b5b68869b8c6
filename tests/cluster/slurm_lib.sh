# Slurm on the simulated cluster (tests/cluster/lib.sh), sourced by the
# cluster's Slurm tests: skips where Slurm cannot run, stops every daemon
# and the cluster on the way out, and brings both up (slurm_cluster_up).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../slurm/daemons.sh"
trap 'stop_daemons; cluster_down; jobs -p | xargs -r kill -9 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
command -v slurmctld >/dev/null && command -v munged >/dev/null ||
	skip_or_fail "no Slurm (jobs/setup.sh --tests installs slurm-wlm and munge)"
grep -q ' /sys/fs/cgroup ' /proc/mounts || skip_or_fail "no cgroup file system at /sys/fs/cgroup: slurmd cannot start here"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# slurm_cluster_up N [CONF_LINE...]: N nodes (cluster_up), slurmctld on
# node1, a slurmd with 2 CPUs on each, munged shared; returns once every
# node is idle. CONF_LINEs go into slurm.conf too. Sets SLURM_UP_MS (the
# Slurm part's start-up) and exports Open MPI's settings for the
# cluster's subnet, for the jobs' mpirun.
slurm_cluster_up() {
	local n=$1 i start lines=()
	shift
	cluster_up "$n"
	start=$(date +%s%N)
	for i in $(seq "$n"); do lines+=("NodeName=node$i NodeAddr=$CL_NET.$i CPUs=2"); done
	slurm_conf "node1($CL_NET.1)" /tmp/spool "${lines[@]}"
	local line
	for line in "$@"; do echo "$line" >>"$SLURM_CONF"; done
	start_munged
	start_daemon slurmctld "$WORK/slurmctld.pid" "$WORK/slurmctld.log" on_node 1 slurmctld -f "$SLURM_CONF"
	for i in $(seq "$n"); do
		on_node "$i" mkdir -p /tmp/spool
		start_daemon "slurmd-node$i" "$WORK/slurmd-node$i.pid" "$WORK/slurmd-node$i.log" \
			on_node "$i" slurmd -f "$SLURM_CONF"
	done
	SLURM_NODES=$n # (wait_for has a local n of its own)
	all_idle() { [ "$(on_node 1 sinfo -h -N -o %T | grep -c idle)" = "$SLURM_NODES" ]; }
	wait_for 60 all_idle || { cat slurmctld.log slurmd-*.log; fail "the $n nodes did not come up"; }
	SLURM_UP_MS=$(( ($(date +%s%N) - start) / 1000000 ))
	export OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=$CL_NET.0/24 OMPI_MCA_oob_tcp_if_include=$CL_NET.0/24
}

# slurm_logs: the daemons' last lines, for a failure's diagnosis.
slurm_logs() { for f in slurmctld.log slurmd-node*.log; do echo "== $f"; tail -n 25 "$f"; done; }
