# jobs/elastic.sh's own settings, checked before anything starts: a number
# out of range (past what bash's arithmetic holds, too) or not a number,
# and a hostfile that is a folder, missing or unreadable, each stop it with
# one line on stderr naming the setting, exit 2, and no mpirun started
# (MPIRUN here is a stand-in that records that it ran). Without a cluster:
# the probe is `true`.
. "$(dirname "$0")/lib.sh"
ELASTIC=$(cd "$(dirname "$0")/../.." && pwd)/jobs/elastic.sh
printf '#!/bin/sh\ntouch "%s/mpirun.started"\n' "$WORK" >fake-mpirun
chmod +x fake-mpirun
printf 'node1 slots=2\nnode2 slots=2\n' >hostfile
mkdir folder

# bad SETTINGS... -- WANT: elastic.sh under SETTINGS (env's NAME=VALUE)
# stops with the one line "elastic: error: WANT...", exit 2, no mpirun.
bad() {
	local settings=() want
	while [ "$1" != -- ]; do
		settings+=("$1")
		shift
	done
	want=$2
	rm -f mpirun.started
	expect_status 2 env ELASTIC_HOSTS=node1:2,node2:2 ELASTIC_PROBE=true MPIRUN="$WORK/fake-mpirun" \
		MTRAIN="$MTRAIN" "${settings[@]}" bash "$ELASTIC" --steps 1
	[ "$(wc -l <last.err)" = 1 ] && grep -q "^elastic: error: $want" last.err ||
		{ cat last.err; fail "elastic.sh with ${settings[*]}: want one line 'elastic: error: $want'"; }
	[ ! -e mpirun.started ] || fail "elastic.sh with ${settings[*]}: mpirun was started"
}
huge=99999999999999999999
bad ELASTIC_MIN_NODES=$huge -- "ELASTIC_MIN_NODES=$huge: want 1 to 2"
bad ELASTIC_MAX_RESTARTS=$huge -- "ELASTIC_MAX_RESTARTS=$huge: want 0 to 10000"
bad ELASTIC_GRACE=$huge -- "ELASTIC_GRACE=$huge: want 0 to 3600"
bad ELASTIC_MIN_NODES=9223372036854775808 -- "ELASTIC_MIN_NODES=9223372036854775808: want 1 to 2"
bad ELASTIC_MIN_NODES=0 -- "ELASTIC_MIN_NODES=0: want 1 to 2"
bad ELASTIC_MAX_RESTARTS=10001 -- "ELASTIC_MAX_RESTARTS=10001: want 0 to 10000"
bad ELASTIC_GRACE=-5 -- "ELASTIC_GRACE='-5' is not a whole number"
bad ELASTIC_GRACE=1e3 -- "ELASTIC_GRACE='1e3' is not a whole number"
bad "ELASTIC_MAX_RESTARTS= 3" -- "ELASTIC_MAX_RESTARTS=' 3' is not a whole number"
bad ELASTIC_HOSTS= ELASTIC_HOSTFILE=folder -- "ELASTIC_HOSTFILE=folder: cannot read it: a folder"
bad ELASTIC_HOSTS= ELASTIC_HOSTFILE=missing -- "ELASTIC_HOSTFILE=missing: cannot read it: no such file"
if [ "$(id -u)" != 0 ]; then # root reads any file
	cp hostfile locked && chmod 000 locked
	bad ELASTIC_HOSTS= ELASTIC_HOSTFILE=locked -- "ELASTIC_HOSTFILE=locked: cannot read it"
fi
# Leading zeros are the number (not octal), and good settings start mpirun.
rm -f mpirun.started
env ELASTIC_HOSTS= ELASTIC_HOSTFILE=hostfile ELASTIC_PROBE=true MPIRUN="$WORK/fake-mpirun" \
	MTRAIN="$MTRAIN" ELASTIC_MIN_NODES=02 ELASTIC_MAX_RESTARTS=0 ELASTIC_GRACE=09 \
	bash "$ELASTIC" --steps 1 >good.out 2>&1 || { cat good.out; fail "good settings refused"; }
[ -e mpirun.started ] || fail "good settings: mpirun was not started"
pass "elastic.sh's bad settings: one line each, exit 2, nothing started"
