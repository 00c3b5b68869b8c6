# A simulated cluster for the `cluster` tests, sourced instead of
# tests/mpi/lib.sh (which it sources). Each node is a network namespace with
# its own address on a private /24, joined to the others by a bridge in a
# namespace of its own, plus a UTS namespace (its host name) and a private
# mount namespace (its own /tmp, /dev/shm and /etc/hosts). Everything else
# is shared, as a cluster shares its home file system: the scratch folder
# $WORK lives in /var/tmp for that reason. Commands enter a node with
# nsenter; mpirun reaches the other nodes through an agent that does the
# same in place of ssh. The root namespace gets an unreachable route for the
# subnet, so no packet for it can leave the machine. cluster_down, run on
# every way out, kills every process of every node and deletes the
# namespaces: nothing stays running or mounted (the mounts live and die with
# the nodes' mount namespaces).

# The scratch folder must be visible from every node: not under /tmp.
export TMPDIR=/var/tmp
. "$(dirname "${BASH_SOURCE[0]}")/../mpi/lib.sh"

CL_TAG=mtc$$              # namespace prefix, unique to this test
CL_NET=                   # the private subnet, e.g. 10.213.7, once claimed
CL_NODES=0

cluster_down() {
	local i pids start
	start=$(date +%s%N)
	for i in $(seq "$CL_NODES"); do
		pids=$(ip netns pids "$CL_TAG-n$i" 2>/dev/null || true)
		[ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
	done
	# A holder whose namespace was never attached by name.
	pkill -9 -f "^$CL_TAG-holder" 2>/dev/null || true
	for i in $(seq "$CL_NODES"); do
		ip netns del "$CL_TAG-n$i" 2>/dev/null || true
	done
	ip netns del "$CL_TAG-sw" 2>/dev/null || true
	# Only the route this test added: another test's subnet is not ours.
	[ -z "$CL_NET" ] || ip route del unreachable "$CL_NET.0/24" 2>/dev/null || true
	CL_NET=
	CL_DOWN_MS=$(( ($(date +%s%N) - start) / 1000000 ))
}

# cluster_gone: cluster_down now, and the test fails unless nothing of the
# cluster is left: no namespace, no process in one, no route.
cluster_gone() {
	local tags
	cluster_down
	tags=$(ip netns list | grep -c "^$CL_TAG-" || true)
	[ "$tags" = 0 ] || fail "$tags namespaces left after cluster_down"
	[ -z "$CL_ROUTE" ] || ! ip route | grep -q "^unreachable $CL_ROUTE " ||
		fail "the unreachable route $CL_ROUTE left after cluster_down"
	! pgrep -f "$WORK/node|^$CL_TAG-holder" >/dev/null || fail "a node's process left after cluster_down"
	CL_NODES=0
}
trap 'cluster_down; jobs -p | xargs -r kill -9 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT


# cl_step WHAT COMMAND...: one step of the bring-up; when it fails, the test
# fails with one line naming the step and the command's own message (the
# EXIT trap then tears down what was started). MTRAIN_CLUSTER_BREAK=WHAT
# makes that step fail, for the test of this (cluster/bringup.sh).
cl_step() {
	local what=$1
	shift
	[ "${MTRAIN_CLUSTER_BREAK:-}" != "$what" ] || set -- sh -c 'echo "broken on purpose" >&2; exit 1'
	"$@" 2>step.err ||
		fail "cluster bring-up: $what failed ($*): $(tr '\n' ' ' <step.err)"
}

# The repository and the build are shared like everything but /tmp; when
# they live in /tmp (a clone there), each node's fresh /tmp gets them back.
CL_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# cl_keep_shared OLD_TMP: the commands (for a node's set-up) that bind the
# repository and build folders under /tmp from OLD_TMP, the host's /tmp.
cl_keep_shared() {
	local path
	for path in "$CL_REPO" "$(cd "$MTRAIN_BUILD" && pwd)"; do
		case $path in /tmp/*)
			printf "mkdir -p '%s' && mount --bind '%s/%s' '%s' && " "$path" "$1" "${path#/tmp/}" "$path" ;;
		esac
	done
}

# cluster_up N: N nodes, node1 ... nodeN at $CL_NET.1 ... $CL_NET.N.
cluster_up() {
	local n=$1 i k start
	start=$(date +%s%N)
	for tool in ip unshare nsenter; do
		command -v "$tool" >/dev/null || skip_or_fail "no $tool: cannot make the cluster's nodes"
	done
	ip netns add "$CL_TAG-sw" 2>netns.err ||
		skip_or_fail "cannot create network namespaces here ($(head -n 1 netns.err))"
	# A /24 no other cluster here uses: the unreachable route claims it.
	for k in $(seq 0 49); do
		i=10.213.$((($$ + k * 5) % 250))
		ip route add unreachable "$i.0/24" 2>/dev/null && { CL_NET=$i; break; }
	done
	[ -n "$CL_NET" ] || fail "cluster bring-up: no free 10.213.x.0/24 subnet (50 tried)"
	CL_ROUTE=$CL_NET.0/24
	cl_step bridge ip -n "$CL_TAG-sw" link add br0 type bridge
	cl_step bridge ip -n "$CL_TAG-sw" link set br0 up
	printf '127.0.0.1 localhost\n' >hosts
	for i in $(seq "$n"); do
		printf '%s.%d node%d\n' "$CL_NET" "$i" "$i" >>hosts
	done
	for i in $(seq "$n"); do
		CL_NODES=$i
		rm -f "node$i.pid" # a cluster before this one's, in the same test
		# The node's holder process keeps its namespaces. Not `ip netns
		# exec`, whose fresh /sys would hide the cgroup file systems that
		# slurmd needs; its network namespace is named after it instead.
		# The holder is named $CL_TAG-holder, for cluster_down to find.
		unshare --net --uts --mount --propagation private bash -c "
			hostname node$i && mkdir -p '$WORK/tmp$i' && mount --bind /tmp '$WORK/tmp$i' &&
			mount -t tmpfs tmpfs /tmp && $(cl_keep_shared "$WORK/tmp$i")
			umount '$WORK/tmp$i' && mount -t tmpfs tmpfs /dev/shm &&
			mount --bind '$WORK/hosts' /etc/hosts && echo \$\$ >'$WORK/node$i.pid' &&
			exec -a $CL_TAG-holder sleep 100000" >"node$i.err" 2>&1 &
		disown # killed by cluster_down, without the shell's notice
		for _ in $(seq 50); do [ -s "node$i.pid" ] && break; sleep 0.1; done
		[ -s "node$i.pid" ] ||
			fail "cluster bring-up: node$i did not come up: $(tr '\n' ' ' <"node$i.err")"
		cl_step attach ip netns attach "$CL_TAG-n$i" "$(cat "node$i.pid")"
		cl_step link ip link add "s$$-$i" netns "$CL_TAG-sw" type veth peer name eth0 netns "$CL_TAG-n$i"
		cl_step link ip -n "$CL_TAG-sw" link set "s$$-$i" master br0 up
		cl_step address ip -n "$CL_TAG-n$i" addr add "$CL_NET.$i/24" dev eth0
		cl_step address ip -n "$CL_TAG-n$i" link set eth0 up
		cl_step address ip -n "$CL_TAG-n$i" link set lo up
	done
	# mpirun's agent in place of ssh: "agent [options] HOST COMMAND...".
	# Like ssh it stays on node1 while COMMAND runs on HOST and exits with
	# its status. When COMMAND is killed (its node died), ssh learns of it
	# only when its connection times out: the agent waits a few seconds
	# too, so mpirun hears of the lost daemon from its own connections
	# first, as it would on a cluster, and names the node.
	cat >agent <<SH
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1
shift
nsenter -t "\$(cat "$WORK/\$host.pid")" -n -u -m -- env TMPDIR=/tmp sh -c "\$*"
rc=\$?
[ \$rc -le 128 ] || { sleep 5; exit 255; }
exit \$rc
SH
	chmod +x agent
	CL_UP_MS=$(( ($(date +%s%N) - start) / 1000000 ))
}

# on_node I COMMAND...: runs COMMAND on node I (its host name, network,
# /tmp), in the current folder.
on_node() {
	local i=$1
	shift
	nsenter -t "$(cat "$WORK/node$i.pid")" -n -u -m --wd="$PWD" -- env TMPDIR=/tmp "$@"
}

# cl_mpirun HOSTS ARGS...: mtrain from node1 over HOSTS (mpirun's --host,
# e.g. node1:2,node2:2), TCP on the cluster's subnet only; never past 120 s.
cl_mpirun() {
	local hosts=$1
	shift
	cl_mpirun_program "$hosts" "$MTRAIN" "$@"
}

# cl_mpirun_program HOSTS PROGRAM ARGS...: the same for any MPI program
# (CL_TIMEOUT seconds at most, default 120).
cl_mpirun_program() {
	local hosts=$1
	shift
	on_node 1 timeout "${CL_TIMEOUT:-120}" "$MPIRUN" --host "$hosts" --mca plm_rsh_agent "$WORK/agent" \
		--mca btl tcp,self --mca btl_tcp_if_include "$CL_NET.0/24" \
		--mca oob_tcp_if_include "$CL_NET.0/24" "$@"
}
