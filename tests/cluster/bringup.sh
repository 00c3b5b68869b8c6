# A cluster bring-up that fails at any step fails its test with one line
# naming the step, and leaves nothing behind: no namespace, no node holder
# process, no route. Each step is broken in turn (MTRAIN_CLUSTER_BREAK) in a
# child test that sources the fixture as the cluster tests do. Skips (77)
# where the fixture does (no namespaces here).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../mpi/lib.sh"
cat >child.sh <<SH
. "$HERE/lib.sh"
cluster_up 2
echo "cluster up"
SH
routes() { ip route | grep -c '^unreachable 10\.213\.' || true; }
before=$(routes)
for step in bridge attach link address; do
	rc=0
	MTRAIN_CLUSTER_BREAK=$step bash child.sh >"$step.out" 2>&1 &
	pid=$!
	wait "$pid" || rc=$?
	[ "$rc" = 77 ] && { cat "$step.out"; exit 77; }
	grep -q '^FAIL: cannot run here: ' "$step.out" && { cat "$step.out"; exit 1; }
	[ "$rc" = 1 ] || { cat "$step.out"; fail "broken $step: exit status $rc, want 1"; }
	grep -q "^FAIL: cluster bring-up: $step failed (.*): broken on purpose" "$step.out" ||
		{ cat "$step.out"; fail "broken $step: the failure does not name the step and why"; }
	[ "$(grep -c . "$step.out")" = 1 ] || { cat "$step.out"; fail "broken $step: more than one line"; }
	left=$(ip netns list | grep "^mtc$pid-" || true)
	[ -z "$left" ] || fail "broken $step: namespaces left: $left"
	held=$(pgrep -a -f "^mtc$pid-holder" || true)
	[ -z "$held" ] || { pkill -9 -f "^mtc$pid-holder"; fail "broken $step: node holders left: $held"; }
	[ "$(routes)" = "$before" ] || fail "broken $step: the subnet's unreachable route left"
done
# Where namespaces cannot be made (here: as an unprivileged user), every
# cluster test skips (77) and says why; under MTRAIN_NO_SKIP=1 (CI) it fails
# instead, saying the same.
command -v setpriv >/dev/null || skip_or_fail "no setpriv (util-linux): the unprivileged case"
for no_skip in 0 1; do
	rc=0
	MTRAIN_NO_SKIP=$no_skip setpriv --reuid 65534 --regid 65534 --clear-groups \
		bash "$HERE/two_nodes.sh" >skip.out 2>&1 || rc=$?
	want=77 says='^SKIPPED: '
	[ $no_skip = 0 ] || want=1 says='^FAIL: cannot run here: '
	[ "$rc" = $want ] || { cat skip.out; fail "without namespaces, MTRAIN_NO_SKIP=$no_skip: exit status $rc, want $want"; }
	grep -q "${says}cannot create network namespaces here (.*)" skip.out ||
		{ cat skip.out; fail "without namespaces, MTRAIN_NO_SKIP=$no_skip: it does not say why"; }
done
pass "a cluster bring-up broken at any step names it in one line and leaves nothing behind; without namespaces the tests skip, saying why"
