#!/usr/bin/env bash
# The scaling study of docs/scaling.md, measured and predicted in one run.
#
# On the simulated cluster of the tests (tests/cluster/lib.sh: network
# namespaces joined by a bridge, Open MPI over TCP between them), with each
# node's link shaped by tc to SCALING_RATE (default 2gbit; a token bucket,
# tbf: this machine's TCP over veth moves about 4 Gb/s unshaped, so a 10
# Gb/s shaper would not bind, and its kernel has no netem to add delay:
# the latency is the emulated link's own), this
#   1. times MPI's ring all-reduce between 2 nodes (one rank each) for
#      messages of 1 KiB to 16 MiB (bench/bench_collectives), and fits the
#      ring's t(p) = 2 (p-1) a + 2 (p-1)/p n / b at p = 2 (n bytes: two
#      latencies, the message once over the link): the bandwidth b from the
#      two largest messages' difference, the latency a from the smallest;
#   2. checks that fit against 3 nodes' all-reduce (predicted 4 a +
#      (4/3) n / b);
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
#      p ranks' step time, the same rows per rank) for 8 to 1,024 ranks,
#      on the fitted link and, with the same model, on links of 10 Gb/s and
#      25 us and of 100 Gb/s and 5 us, all-reduce t(p) as above, step
#        no overlap:   compute + t(p)
#        overlap:      compute + max(0, t(p) - backward)   (buckets reduced
#                      while backward runs, as NCCL does on a GPU)
#        ZeRO-1:       compute - optimizer (1 - 1/p) + t(p)   (reduce-scatter
#                      + all-gather move what one all-reduce moves)
# Prints the tables docs/scaling.md shows. Needs root (namespaces, tc) and
# a build (BUILD_DIR, default ./build). About 6 minutes on 2 cores.
#   bench/scaling.sh [BUILD_DIR]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
export MTRAIN_BUILD=$BUILD
REPO=$(cd "$(dirname "$0")/.." && pwd)
RATE=${SCALING_RATE:-2gbit}
SIZES=(256 4096 65536 262144 1048576 4194304) # floats: 1 KiB to 16 MiB
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MTRAIN_PROFILE=1
# Ranks that spin while they wait starve the kernel's softirq thread that
# delivers the emulated links' packets (2 cores): every message then waits
# for a 4 ms scheduler tick (a 1 KiB all-reduce took 4 ms instead of 20 us).
export OMPI_MCA_mpi_yield_when_idle=1
# The ring all-reduce, which the model describes. Open MPI's own choice for
# 3 ranks moved twice the ring's bytes here (16 MiB: 296 ms, ring 210 ms).
export OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm=4
. "$REPO/tests/cluster/lib.sh"
for p in "$MTRAIN" "$BUILD/bench/bench_collectives"; do
	[ -x "$p" ] || fail "$p missing: build first"
done
DATA=$REPO/data
[ -f "$DATA/fashion-mnist-train.h5" ] || fail "no $DATA/fashion-mnist-train.h5: run the default job once"
START=$(date +%s)

cluster_up 3
for i in 1 2 3; do
	# The node's egress; bursts of 64 KiB at most.
	on_node $i tc qdisc replace dev eth0 root tbf rate "$RATE" burst 64kb latency 5ms ||
		fail "tc could not shape node$i's link"
done
echo "scaling study: $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')); links shaped to $RATE (tc tbf)"

# 1, 2: all-reduce times between nodes.
collectives() {
	local hosts=$1 out=$2
	CL_TIMEOUT=600 cl_mpirun_program "$hosts" "$BUILD/bench/bench_collectives" "${SIZES[@]}" >"$out" 2>&1 ||
		{ cat "$out" >&2; fail "bench_collectives on $hosts"; }
	[ "$(grep -c 'sums ok$' "$out")" = ${#SIZES[@]} ] || { cat "$out" >&2; fail "bench_collectives: wrong sums"; }
}
collectives node1:1,node2:1 ar2.out
collectives node1:1,node2:1,node3:1 ar3.out

# 3: compute at 64 rows on one rank (this machine alone, no link).
# model NAME ARGS...: a line "NAME params data forward backward optimizer ema total"
COMMON=(--device cpu --data "$DATA/fashion-mnist-train.h5" --eval-data none --resume never
	--log-every 1000000 --zero 0)
profile() {
	local name=$1 n=$2 steps=$3
	shift 3
	local log=prof-$name-$n.log
	timeout 900 "$MPIRUN" --oversubscribe -np "$n" "$MTRAIN" "${COMMON[@]}" --steps "$steps" \
		--ckpt-dir "ck-$name-$n" "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$name on $n rank(s)"; }
	rm -rf "ck-$name-$n"
	awk -v name="$name" '/ parameters, / { for (i = 1; i <= NF; i++) if ($(i + 1) == "parameters,") p = $i; gsub(",", "", p) }
		$1 == "timing" { for (i = 3; i < NF; i += 2) v[$i] = $(i + 1)
			print name, p, v["data"], v["forward"], v["backward"], v["allreduce"], v["optimizer"], v["ema"], v["total"] }' "$log"
}
CNN=$(sed -n 's/^model *= *//p' "$REPO/jobs/fmnist-cnn.conf")
{
	profile mlp 1 300 --batch 64
	profile cnn 1 30 --batch 64 --model "$CNN" --input-shape 28,28,1
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
	CL_TIMEOUT=900 cl_mpirun "$hosts" "${COMMON[@]}" --steps "$steps" --batch "$batch" \
		--ckpt-dir "ck-n-$name" "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$name on $hosts"; }
	awk -v name="$name" '$1 == "timing" { for (i = 3; i < NF; i += 2) v[$i] = $(i + 1)
		print name, v["allreduce"], v["total"] }' "$log"
}
{
	node_run mlp node1:1,node2:1 128 300
	node_run mlp1k node1:1,node2:1 128 60 --layers 1024,1024
	node_run mlp2k node1:1,node2:1 128 30 --layers 2048,2048
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
# On 2 ranks t = 2a + n/b: b from the two largest messages, a from the
# smallest (what the bandwidth term leaves of its time).
(n1, t1), (n2, t2) = two[-2], two[-1]
b = (n2 - n1) / (t2 - t1)
a = max(0.0, (two[0][1] - two[0][0] / b) / 2)
def allreduce(p, nbytes, a=a, b=b):
    return 0.0 if p == 1 else 2 * (p - 1) * a + 2 * (p - 1) / p * nbytes / b
print(f"\nfit on 2 nodes (ring): latency a = {a * 1e6:.1f} us, bandwidth b = {b * 8 / 1e9:.2f} Gb/s "
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
MODELS = (("mlp", "MLP 784-256-256-10"), ("cnn", "CNN (fmnist-cnn.conf)"),
          ("mlp100m", "MLP 784-10000-10000-10"))
def step(c, p, la, lb):
    t = allreduce(p, 4 * c["params"], la, lb)
    one = c["compute"]
    return t, one + t, one + max(0.0, t - c["bwd"]), one - c["opt"] * (1 - 1 / p) + t
print(f"\npredicted on the fitted link ({a * 1e6:.0f} us, {b * 8 / 1e9:.2f} Gb/s), 64 rows per rank, one rank per node:")
print("\n| model | ranks | all-reduce | step, no overlap | steps/s | efficiency | step, overlap | efficiency | step, ZeRO-1 | efficiency |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for k, label in MODELS:
    c = comp[k]
    one = c["compute"]
    for p in (1, 8, 64, 256, 1024):
        t, plain, over, zero = step(c, p, a, b)
        print(f"| {label} ({c['params'] / 1e6:.2f}M) | {p} | {t*1e3:.3f} ms | {plain*1e3:.2f} ms | {1/plain:.1f} | "
              f"{one/plain:.0%} | {over*1e3:.2f} ms | {one/over:.0%} | {zero*1e3:.2f} ms | {one/zero:.0%} |")
LINKS = (("10 Gb/s, 25 us", 25e-6, 10e9 / 8), ("100 Gb/s, 5 us", 5e-6, 100e9 / 8))
print("\nthe same model on other links (this machine's compute): efficiency without / with overlap")
print("\n| model | ranks | " + " | ".join(f"{n}: no overlap | overlap" for n, _, _ in LINKS) + " |")
print("| --- | ---: |" + " ---: | ---: |" * len(LINKS))
for k, label in MODELS:
    c = comp[k]
    one = c["compute"]
    for p in (8, 64, 256, 1024):
        cells = []
        for _, la, lb in LINKS:
            _, plain, over, _ = step(c, p, la, lb)
            cells += [f"{one/plain:.0%}", f"{one/over:.0%}"]
        print(f"| {label} | {p} | " + " | ".join(cells) + " |")
PY
echo "scaling: $(($(date +%s) - START)) s"
