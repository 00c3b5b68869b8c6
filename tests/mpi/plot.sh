# jobs/plot.sh draws a metrics file's learning curves into a PNG of
# 1000x700; a file with no training lines is refused (exit 2).
. "$(dirname "$0")/lib.sh"
command -v gnuplot >/dev/null || skip_or_fail "no gnuplot (jobs/setup.sh --tests installs gnuplot-nox)"
PLOT=$(cd "$(dirname "$0")/../.." && pwd)/jobs/plot.sh
make_data
ranks 2 "${SMALL[@]}" --steps 24 --log-every 2 --ckpt-dir ck --metrics m.jsonl >/dev/null
"$PLOT" m.jsonl curves.png >plot.out
grep -q "(training loss; test accuracy)" plot.out || fail "a classifier's panels: $(cat plot.out)"
python3 - curves.png <<'PY' || fail "curves.png"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
length, kind = struct.unpack(">I4s", data[8:16])
assert kind == b"IHDR" and length == 13
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1000, 700), (w, h)
assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0], "IHDR CRC"
assert len(data) > 10000, len(data)  # curves, not an empty canvas
PY
# Names reach the file system, never gnuplot's script.
"$PLOT" m.jsonl "it's; system 'touch hacked'.png" >/dev/null
[ -s "it's; system 'touch hacked'.png" ] && [ ! -e hacked ] && [ ! -e it ] || fail "an odd output name: $(ls)"
# A language model's evaluations are its validation loss.
"$MKDATA" counting count.h5 600 60
ranks 1 --device cpu --data count.h5 --context 8 --batch 4 --steps 6 --eval-every 2 --ckpt-dir lm \
	--model embedding:8,posembed,[layernorm,attention:2:causal],layernorm,unembed \
	--metrics lm.jsonl >/dev/null
"$PLOT" lm.jsonl lm.png >plot.out
grep -q "(training loss; validation loss per token)" plot.out || fail "a language model's panels: $(cat plot.out)"
[ "$(head -c 4 lm.png | tail -c 3)" = PNG ] || fail "lm.png is not a PNG"
grep '"event":"start"' m.jsonl >empty.jsonl
expect_status 2 "$PLOT" empty.jsonl
grep -q "no training lines" last.err || fail "plot of a file without training lines: $(cat last.err)"
pass "plot: a 1000x700 PNG of the learning curves"
