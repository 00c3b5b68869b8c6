#!/usr/bin/env bash
# The scaling study of docs/scaling.md, measured and predicted in one run.
#
# On the simulated cluster of the tests (tests/cluster/lib.sh: network
# namespaces joined by a bridge, Open MPI over TCP between them), with each
# node's link shaped by tc to SCALING_RATE (default 10gbit; a token bucket,
# tbf), this
#   1. times MPI's all-reduce between 2 nodes (one rank each) for messages
#      of 1 KiB to 16 MiB (jobs/bench_collectives), and fits
#      t = 2 a + n / b (the 2-rank all-reduce of n bytes: two latencies,
#      the message once over the link) for the latency a and bandwidth b;
#   2. checks that fit against 3 nodes' all-reduce (predicted 4 a +
#      (4/3) n / b: ring and recursive halving agree at 3 ranks);
#   3. measures each model's compute time on one rank at 64 rows (the
#      per-rank batch every prediction keeps: weak scaling), by phase
#      (mtrain's timing line): the default MLP, the CNN of
#      jobs/fmnist-cnn.conf, a 100M-parameter MLP (784-10000-10000-10,
#      108M), and MLPs of 1.9M and 5.8M parameters for the checks;
#   4. checks step time against model size: mtrain on 2 nodes, one rank
#      each, --zero 0, against compute + predicted all-reduce, for the
#      0.27M, 1.9M and 5.8M MLPs; and on 3 nodes for the default MLP (with
#      3 ranks on this machine's 2 cores, compute is what a 3-rank run on
#      one node measures);
#   5. predicts steps/s and scaling efficiency (one rank's step time over
#      p ranks' step time, the same rows per rank) for 8 to 1,024 ranks:
#      all-reduce t(p) = 2 ceil(log2 p) a + 2 (p-1)/p n / b (Rabenseifner:
#      recursive-halving reduce-scatter, recursive-doubling all-gather,
#      what Open MPI and NCCL's tree/ring hybrids approach), step
#        no overlap:   compute + t(p)
#        overlap:      compute + max(0, t(p) - backward)   (buckets reduced
#                      while backward runs, as NCCL does on a GPU)
#        ZeRO-1:       compute - optimizer (1 - 1/p) + t(p)   (reduce-scatter
#                      + all-gather move what one all-reduce moves)
# Prints the tables docs/scaling.md shows. Needs root (namespaces, tc) and
# a build (BUILD_DIR, default ./build). About 6 minutes on 2 cores.
#   jobs/scaling.sh [BUILD_DIR]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
export MTRAIN_BUILD=$BUILD
REPO=$(cd "$(dirname "$0")/.." && pwd)
RATE=${SCALING_RATE:-10gbit}
SIZES=(256 4096 65536 262144 1048576 4194304) # floats: 1 KiB to 16 MiB
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MTRAIN_PROFILE=1
. "$REPO/tests/cluster/lib.sh"
for p in "$MTRAIN" "$BUILD/jobs/bench_collectives"; do
	[ -x "$p" ] || fail "$p missing: build first"
done
DATA=$REPO/data
[ -f "$DATA/fashion-mnist-train.h5" ] || fail "no $DATA/fashion-mnist-train.h5: run the default job once"
START=$(date +%s)

cluster_up 3
for i in 1 2 3; do
	# The node's egress; a burst of 64 KiB (at 10 Gb/s, 52 us of line rate).
	on_node $i tc qdisc replace dev eth0 root tbf rate "$RATE" burst 64kb latency 50ms ||
		fail "tc could not shape node$i's link"
done
echo "scaling study: $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')); links shaped to $RATE (tc tbf)"

# 1, 2: all-reduce times between nodes.
collectives() {
	local hosts=$1 out=$2
	CL_TIMEOUT=600 cl_mpirun_program "$hosts" "$BUILD/jobs/bench_collectives" "${SIZES[@]}" >"$out" 2>&1 ||
		{ cat "$out" >&2; fail "bench_collectives on $hosts"; }
	[ "$(grep -c 'sums ok$' "$out")" = ${#SIZES[@]} ] || { cat "$out" >&2; fail "bench_collectives: wrong sums"; }
}
collectives node1:1,node2:1 ar2.out
collectives node1:1,node2:1,node3:1 ar3.out

# 3: compute at 64 rows on one rank (this machine alone, no link).
# model NAME ARGS...: a line "NAME params data forward backward optimizer ema total"
COMMON=(--device cpu --data "$DATA/fashion-mnist-train.h5" --eval-data none --resume never --log-every 1000000)
profile() {
	local name=$1 n=$2 steps=$3
	shift 3
	local log=prof-$name-$n.log
	timeout 900 "$MPIRUN" --oversubscribe -np "$n" "$MTRAIN" "${COMMON[@]}" --steps "$steps" \
		--ckpt-dir "ck-$name-$n" "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$name on $n rank(s)"; }
	rm -rf "ck-$name-$n"
	awk -v name="$name" '/ parameters;/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "parameters;") p = $i; gsub(",", "", p) }
		$1 == "timing" { for (i = 3; i < NF; i += 2) v[$i] = $(i + 1)
			print name, p, v["data"], v["forward"], v["backward"], v["allreduce"], v["optimizer"], v["ema"], v["total"] }' "$log"
}
CNN=$(sed -n 's/^model *= *//p' "$REPO/jobs/fmnist-cnn.conf")
{
	profile mlp 1 300 --batch 64
	profile cnn 1 30 --batch 64 --model "$CNN"
	profile mlp100m 1 6 --batch 64 --layers 10000,10000
	profile mlp2k 1 60 --batch 64 --layers 2048,2048
	profile mlp1k 1 100 --batch 64 --layers 1024,1024
	# 3 ranks on 2 cores, one node: the 3-node check's compute.
	profile mlp3 3 300 --batch 192
} >compute.txt

# 4: steps on 2 and 3 nodes, all-reduce (--zero 0), 64 rows a rank.
node_run() {
	local name=$1 hosts=$2 batch=$3 steps=$4
	shift 4
	local log=nodes-$name.log
	CL_TIMEOUT=900 cl_mpirun "$hosts" "${COMMON[@]}" --steps "$steps" --batch "$batch" --zero 0 \
		--ckpt-dir "ck-n-$name" "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$name on $hosts"; }
	awk -v name="$name" '$1 == "timing" { for (i = 3; i < NF; i += 2) v[$i] = $(i + 1)
		print name, v["allreduce"], v["total"] }' "$log"
}
{
	node_run mlp node1:1,node2:1 128 300
	node_run mlp1k node1:1,node2:1 128 100 --layers 1024,1024
	node_run mlp2k node1:1,node2:1 128 60 --layers 2048,2048
	node_run mlp3 node1:1,node2:1,node3:1 192 300
} >nodes.txt
cluster_gone

python3 - ar2.out ar3.out compute.txt nodes.txt "$RATE" <<'PY'
import math, sys
def table(path):
    rows = []
    for line in open(path):
        f = line.split()
        if f and f[0] == "collectives":
            kv = dict(zip(f[1::2], f[2::2]))
            rows.append((4 * int(kv["floats"]), float(kv["allreduce_ms"]) * 1e-3))
    return rows
two, three = table(sys.argv[1]), table(sys.argv[2])
# Least squares t = c0 + c1 n on 2 ranks: c0 = 2a, c1 = 1/b.
n = len(two); sx = sum(x for x, _ in two); sy = sum(y for _, y in two)
sxx = sum(x * x for x, _ in two); sxy = sum(x * y for x, y in two)
c1 = (n * sxy - sx * sy) / (n * sxx - sx * sx); c0 = (sy - c1 * sx) / n
a, b = c0 / 2, 1 / c1
def allreduce(p, nbytes):
    return 0.0 if p == 1 else 2 * math.ceil(math.log2(p)) * a + 2 * (p - 1) / p * nbytes / b
print(f"\nfit on 2 nodes: latency a = {a * 1e6:.1f} us, bandwidth b = {b * 8 / 1e9:.2f} Gb/s "
      f"({b / 1e9:.3f} GB/s); link shaped to {sys.argv[5]}")
print("\n| message | 2 nodes measured | fit | 3 nodes measured | predicted | predicted / measured |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
for (x, y2), (_, y3) in zip(two, three):
    print(f"| {x / 1024:.0f} KiB | {y2 * 1e3:.3f} ms | {allreduce(2, x) * 1e3:.3f} ms | "
          f"{y3 * 1e3:.3f} ms | {allreduce(3, x) * 1e3:.3f} ms | {allreduce(3, x) / y3:.2f} |")
comp = {}
for line in open(sys.argv[3]):
    f = line.split()
    comp[f[0]] = dict(params=int(f[1]), data=float(f[2]), fwd=float(f[3]), bwd=float(f[4]),
                      opt=float(f[6]), ema=float(f[7]), total=float(f[8]))
for k, c in comp.items():  # ms -> s; compute excludes the (zero) all-reduce
    for key in ("data", "fwd", "bwd", "opt", "ema", "total"):
        c[key] *= 1e-3
    c["compute"] = c["data"] + c["fwd"] + c["bwd"] + c["opt"] + c["ema"]
print("\ncompute on one rank, 64 rows (ms/step): model, parameters, forward, backward, optimizer, EMA, all")
for k in ("mlp", "cnn", "mlp100m", "mlp1k", "mlp2k"):
    c = comp[k]
    print(f"  {k:8s} {c['params']:>11,} {c['fwd']*1e3:8.3f} {c['bwd']*1e3:8.3f} {c['opt']*1e3:8.3f} "
          f"{c['ema']*1e3:7.3f} {c['compute']*1e3:9.3f}")
print("\n| emulated run | all-reduce measured | predicted | step measured | predicted | predicted / measured |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for line in open(sys.argv[4]):
    name, ar, total = line.split()
    ar, total = float(ar) * 1e-3, float(total) * 1e-3
    p = 3 if name == "mlp3" else 2
    c = comp[name] if name != "mlp3" else comp["mlp3"]
    nbytes = 4 * c["params"]
    pred_ar = allreduce(p, nbytes)
    pred = c["compute"] + pred_ar
    label = {"mlp": "MLP 0.27M, 2 nodes", "mlp1k": "MLP 1.9M, 2 nodes", "mlp2k": "MLP 5.8M, 2 nodes",
             "mlp3": "MLP 0.27M, 3 nodes"}[name]
    print(f"| {label} | {ar*1e3:.3f} ms | {pred_ar*1e3:.3f} ms | {total*1e3:.3f} ms | {pred*1e3:.3f} ms | {pred/total:.2f} |")
print("\npredicted, 64 rows per rank, one rank per node, links as fitted:")
print("\n| model | ranks | all-reduce | step, no overlap | steps/s | efficiency | step, overlap | efficiency | step, ZeRO-1 | efficiency |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for k, label in (("mlp", "MLP 784-256-256-10"), ("cnn", "CNN (fmnist-cnn.conf)"), ("mlp100m", "MLP 784-10000-10000-10")):
    c = comp[k]
    one = c["compute"]
    for p in (1, 8, 64, 256, 1024):
        t = allreduce(p, 4 * c["params"])
        plain = one + t
        over = one + max(0.0, t - c["bwd"])
        zero = one - c["opt"] * (1 - 1 / p) + t
        print(f"| {label} ({c['params'] / 1e6:.2f}M) | {p} | {t*1e3:.3f} ms | {plain*1e3:.2f} ms | {1/plain:.1f} | "
              f"{one/plain:.0%} | {over*1e3:.2f} ms | {one/over:.0%} | {zero*1e3:.2f} ms | {one/zero:.0%} |")
PY
echo "scaling: $(($(date +%s) - START)) s"
