# --augment crop:4,flip on 8x8x3 images: 1 and 4 ranks reach the same
# weights (1e-5) after 20 SGD steps, while the unaugmented run does not;
# a stop and resume is bitwise the run that never stopped; evaluation sees
# the rows as they are; the key in --config is the flag; bad lists and flat
# rows are one line, exit 2; mtrain preview writes a valid PNG of the grid's
# size, the same bytes for the same (seed, epoch), others for another epoch.
. "$(dirname "$0")/lib.sh"
"$MKDATA" synth flat.h5 84 192 3 11 u8 >/dev/null
"$MKDATA" reshape flat.h5 train.h5 8 8 3
"$MKDATA" synth flateval.h5 30 192 3 12 u8 >/dev/null
"$MKDATA" reshape flateval.h5 eval.h5 8 8 3
IMG=(--device cpu --data train.h5 --eval-data eval.h5 --layers 16,8 --batch 14 --seed 5 --log-every 5)
AUG=(--augment crop:4,flip)

# Any number of ranks: the same global batch is the same pixels.
for n in 1 4; do
	ranks $n "${IMG[@]}" "${AUG[@]}" --optimizer sgd --lr 0.2 --steps 20 --ckpt-dir r$n >/dev/null
done
same_ckpt r1/ckpt-00000020.h5 r4/ckpt-00000020.h5 1e-5
ranks 1 "${IMG[@]}" --optimizer sgd --lr 0.2 --steps 20 --ckpt-dir plain >/dev/null
"$CMP" r1/ckpt-00000020.h5 plain/ckpt-00000020.h5 1e-5 >/dev/null 2>&1 &&
	fail "--augment changed nothing: the augmented run equals the plain one"
# The same pixels whether the rows are [N,8,8,3] or flat with --input-shape.
ranks 1 --device cpu --data flat.h5 --eval-data flateval.h5 --input-shape 8,8,3 --layers 16,8 \
	--batch 14 --seed 5 --log-every 5 "${AUG[@]}" --optimizer sgd --lr 0.2 --steps 20 \
	--ckpt-dir shaped >/dev/null
same_ckpt r1/ckpt-00000020.h5 shaped/ckpt-00000020.h5
# --config's key is the flag.
printf 'augment = crop:4,flip\n' >aug.conf
"$MTRAIN" "${IMG[@]}" --config aug.conf --optimizer sgd --lr 0.2 --steps 20 --ckpt-dir conf >/dev/null
same_ckpt r1/ckpt-00000020.h5 conf/ckpt-00000020.h5
pass "1 and 4 ranks agree to 1e-5 with --augment crop:4,flip"

# Stop and resume, mid-epoch (10: 6 steps an epoch) and on an epoch's end (12).
F=("${IMG[@]}" "${AUG[@]}" --optimizer adam --ema-decay 0.9 --ema-sync-every 3)
ranks 2 "${F[@]}" --steps 20 --ckpt-dir straight --metrics straight.jsonl >/dev/null
for stop in 10 12; do
	ranks 2 "${F[@]}" --steps $stop --ckpt-dir s$stop >/dev/null
	ranks 2 "${F[@]}" --steps 20 --ckpt-dir s$stop >log
	grep -q "resumed from s$stop/ckpt-000000$stop.h5 at step $stop" log || fail "no resume at $stop"
	same_ckpt straight/ckpt-00000020.h5 s$stop/ckpt-00000020.h5
done
# A resumed run may change --augment; a warning names it.
"$MTRAIN" "${IMG[@]}" --augment flip --optimizer adam --ema-decay 0.9 --ema-sync-every 3 \
	--steps 22 --ckpt-dir s12 >/dev/null 2>err
grep -q "was written with 'augment = crop:4,flip'; this run has 'augment = flip'" err ||
	{ cat err; fail "no warning for a changed --augment"; }
pass "resume with --augment is bitwise the run that never stopped"

# Evaluation is not augmented: the training run's figures at steps 12 and 20
# (epochs 2 and 4) are those of mtrain eval of the same checkpoints.
for s in 12 20; do
	want=$(grep "\"event\":\"eval\",\"step\":$s," straight.jsonl |
		sed 's/.*"raw_loss":\([0-9.]*\),"raw_acc":\([0-9.]*\),"ema_loss":\([0-9.]*\).*/\1 \2 \3/')
	[ -n "$want" ] || fail "no eval line at step $s"
	"$MTRAIN" eval --ckpt straight/ckpt-000000$s.h5 --device cpu >log
	got=$(awk '/ raw loss /{r=$5; a=$7} / ema loss /{e=$5} END{print r, a, e}' log)
	read -r wl wa we <<<"$want"
	read -r gl ga ge <<<"$got"
	awk -v a="$wl" -v b="$gl" -v c="$wa" -v d="$ga" -v e="$we" -v f="$ge" 'BEGIN{
		exit !((a - b)^2 < 1e-8 && (c - d)^2 < 1e-8 && (e - f)^2 < 1e-8)}' ||
		fail "step $s: training evaluated '$want', mtrain eval '$got'"
done
pass "evaluation sees the rows unaugmented"

# Refused, one line, exit 2.
expect_error "unknown 'flop'" "$MTRAIN" "${IMG[@]}" --augment crop:4,flop --ckpt-dir x
expect_error "crop:0' needs a pad" "$MTRAIN" "${IMG[@]}" --augment crop:0 --ckpt-dir x
expect_error "needs image rows" "$MTRAIN" --device cpu --data flat.h5 --eval-data none --batch 14 \
	--augment flip --ckpt-dir x
expect_error "needs image rows" "$MTRAIN" preview --data flat.h5 --augment flip --out x.png
[ ! -e x ] && [ ! -e x.png ] || fail "a refused run left output behind"
pass "bad --augment: one line, exit 2"

# The preview: a valid PNG (signature, CRCs, IHDR, inflated size), 10 rows
# of 8x8 as 4 columns and 3 lines with 1-pixel gaps: 35x26, RGB.
png() { python3 - "$@" <<'PY'
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
i, idat, types = 8, b"", []
while i < len(b):
    n, = struct.unpack(">I", b[i:i + 4])
    t, d = b[i + 4:i + 8], b[i + 8:i + 8 + n]
    assert zlib.crc32(t + d) & 0xffffffff == struct.unpack(">I", b[i + 8 + n:i + 12 + n])[0], t
    types.append(t)
    if t == b"IHDR":
        w, h, depth, colour = struct.unpack(">IIBB", d[:10])
    idat += d if t == b"IDAT" else b""
    i += 12 + n
assert types[0] == b"IHDR" and types[-1] == b"IEND", types
ch = {0: 1, 2: 3}[colour]
assert depth == 8 and len(zlib.decompress(idat)) == (w * ch + 1) * h
print(w, h, ch)
PY
}
command -v python3 >/dev/null || skip_or_fail "python3 is needed to read the PNG"
"$MTRAIN" preview --data train.h5 "${AUG[@]}" --rows 10 --seed 5 --out a.png >/dev/null
[ "$(png a.png)" = "35 26 3" ] || fail "preview: $(png a.png), want 35 26 3"
"$MTRAIN" preview --data flat.h5 --input-shape 8,8,3 "${AUG[@]}" --rows 10 --seed 5 --out b.png >/dev/null
cmp -s a.png b.png || fail "preview of the same rows as [N,8,8,3] and with --input-shape differ"
"$MTRAIN" preview --data train.h5 "${AUG[@]}" --rows 10 --seed 5 --epoch 1 --out c.png >/dev/null
cmp -s a.png c.png && fail "preview of epoch 1 is epoch 0's"
"$MTRAIN" preview --data train.h5 --rows 100 --out d.png >/dev/null
[ "$(png d.png)" = "89 80 3" ] || fail "preview of all 84 rows (10 columns, 9 lines): $(png d.png), want 89 80 3"
pass "preview writes a valid PNG grid"
