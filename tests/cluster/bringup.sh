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
# cluster test skips (77) and says why.
if command -v setpriv >/dev/null; then
	rc=0
	setpriv --reuid 65534 --regid 65534 --clear-groups bash "$HERE/two_nodes.sh" >skip.out 2>&1 || rc=$?
	[ "$rc" = 77 ] || { cat skip.out; fail "without namespaces: exit status $rc, want 77 (skipped)"; }
	grep -q "^SKIP: cannot create network namespaces here (.*)" skip.out ||
		{ cat skip.out; fail "without namespaces: the skip does not say why"; }
fi
pass "a cluster bring-up broken at any step names it in one line and leaves nothing behind; without namespaces the tests skip, saying why"
