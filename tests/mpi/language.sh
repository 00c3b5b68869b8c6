# Language models' data (issue 36): `mtrain import --text` stores a text's
# bytes as tokens exactly (plain or gzip), its last tenth the validation
# split; bad text is one line, exit 2, nothing left; llm.c's token shards
# and nanoGPT's uint16 files import as written, a bad header one line. Token windows: on 1, 2
# and 3 ranks every window of an epoch is trained on exactly once, the
# global batches are the same on any rank count and across stops resumed on
# other rank counts, and each epoch shifts the windows' boundaries (windows
# found from a file whose tokens count up, MTRAIN_TEST_ROWS). A small causal
# GPT on bytes: the per-token loss falls, evaluation prints perplexity and
# bits per byte, 1 and 2 ranks train the same weights within 1e-5; a model
# that pools, or a context longer than the text, is one line, exit 2.
# mtrain generate samples the same text for the same seed, and greedily
# goes on as the text does.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_or_fail "no python3 to read the row records"
need_python h5py
command -v h5dump >/dev/null || skip_or_fail "no h5dump (hdf5-tools) to read the tokens back"

# --- import: bytes round-trip exactly ---
python3 - <<'PY'
import random
r = random.Random(3)
words = ["the", "hacker", "kludge", "\u00e9t\u00e9", "\u2603", "foo\tbar", "line\n"]
open("text.txt", "w", encoding="utf-8").write(" ".join(r.choice(words) for _ in range(4000)))
PY
gzip -k -c text.txt >text.txt.gz
"$MTRAIN" import --text text.txt --out t.h5 >/dev/null
"$MTRAIN" import --text text.txt.gz --out tgz.h5 --val-fraction 0.1 >/dev/null
size=$(stat -c %s text.txt)
val=$((size / 10))
h5dump -d tokens -b LE -o tokens.bin t.h5 >/dev/null
h5dump -d val_tokens -b LE -o val.bin t.h5 >/dev/null
head -c $((size - val)) text.txt | cmp - tokens.bin || fail "the training tokens are not the text's first bytes"
tail -c $val text.txt | cmp - val.bin || fail "the validation tokens are not the text's last tenth"
h5dump -d tokens -b LE -o gz.bin tgz.h5 >/dev/null
cmp tokens.bin gz.bin || fail "a gzip text imports other tokens than the plain one"
h5dump -a vocab_size t.h5 | grep -q "(0): 256" || fail "vocab_size is not 256"
h5dump -a tokenizer t.h5 | grep -q '"bytes"' || fail "tokenizer is not bytes"
# Bad text: one line naming the file, exit 2, nothing written.
: >empty.txt
printf 'ab\0cd' >binary.txt
expect_error "empty.txt: the file is empty" "$MTRAIN" import --text empty.txt --out bad.h5
expect_error "binary.txt: byte 2 is NUL: a binary file" "$MTRAIN" import --text text.txt binary.txt --out bad.h5
expect_error "missing.txt: cannot open" "$MTRAIN" import --text missing.txt --out bad.h5
expect_error "--val-fraction '1.5' is not a number in \[0, 1\)" "$MTRAIN" import --text text.txt --out bad.h5 --val-fraction 1.5
expect_error "--out is required" "$MTRAIN" import --text text.txt
# llm.c's shards (a header of 256 int32: 20240520, 1, the count; uint16
# tokens) and nanoGPT's raw uint16 files read as written; each bad header,
# count or token one line.
python3 - <<'PY'
import random, struct
r = random.Random(4)
def shard(path, tokens, magic=20240520, version=1, count=None):
    head = [magic, version, len(tokens) if count is None else count] + [0] * 253
    open(path, "wb").write(struct.pack("<256i", *head) + struct.pack("<%dH" % len(tokens), *tokens))
a = [r.randrange(500) for _ in range(3000)]
b = [r.randrange(500) for _ in range(700)]
shard("a.bin", a); shard("b.bin", b)
open("a.u16", "wb").write(struct.pack("<%dH" % len(a), *a))
open("want.u16", "wb").write(struct.pack("<%dH" % len(a), *a))
shard("magic.bin", a, magic=7); shard("version.bin", a, version=2); shard("count.bin", a, count=2999)
shard("big.bin", a[:-1] + [600])
# a first token of 35615 is the bytes 1f 8b, gzip's magic: read raw all the same
gz = [35615] + a[1:]
open("gz.u16", "wb").write(struct.pack("<%dH" % len(gz), *gz))
PY
"$MTRAIN" import --uint16 gz.u16 --vocab 40000 --val-fraction 0 --out gz.h5 >/dev/null
h5dump -d tokens -b LE -o g.bin gz.h5 >/dev/null && cmp g.bin gz.u16 || fail "a uint16 file that begins as gzip does"
expect_error "--val-fraction 'abc' is not a number" "$MTRAIN" import --llmc a.bin --val-fraction abc --vocab 512 --out bad.h5
"$MTRAIN" import --llmc a.bin --val b.bin --vocab 512 --out shards.h5 >/dev/null
"$MTRAIN" import --uint16 a.u16 --vocab 512 --val-fraction 0 --out raw.h5 >/dev/null
h5dump -d tokens -b LE -o s.bin shards.h5 >/dev/null && cmp s.bin want.u16 || fail "llm.c's shard: not its tokens"
h5dump -d tokens -b LE -o r.bin raw.h5 >/dev/null && cmp r.bin want.u16 || fail "a uint16 file: not its tokens"
h5dump -d val_tokens -b LE -o v.bin shards.h5 >/dev/null && [ "$(stat -c %s v.bin)" = 1400 ] || fail "--val's tokens"
h5dump -a vocab_size shards.h5 | grep -q "(0): 512" || fail "vocab_size is not --vocab"
# uint16 tokens train (windows read 2 bytes a token) and evaluate on --val's,
# every 2 steps (--eval-every) and at the end.
ranks 2 --device cpu --data shards.h5 --context 16 --batch 8 --steps 5 --ckpt-dir ck-shards \
	--eval-every 2 --model 'embedding:8,posembed,[layernorm,attention:2:causal],dense' >log-shards ||
	{ cat log-shards; fail "training on llm.c's shards"; }
[ "$(grep -oE "^eval step [0-9]+ .* ema_ppl" log-shards | cut -d' ' -f3 | tr '\n' ' ')" = "2 4 5 " ] ||
	{ cat log-shards; fail "evaluations of the shards' --val not at steps 2, 4 (--eval-every 2) and 5"; }
expect_error "magic.bin: magic 7, not llm.c's 20240520" "$MTRAIN" import --llmc magic.bin --out bad.h5
expect_error "version.bin: version 2; llm.c's token shards are version 1" "$MTRAIN" import --llmc version.bin --out bad.h5
expect_error "count.bin: its header says 2999 tokens, the file holds 6000 bytes" "$MTRAIN" import --llmc count.bin --out bad.h5
expect_error "big.bin: token 2999 is 600, not below --vocab 512" "$MTRAIN" import --llmc big.bin --vocab 512 --out bad.h5
expect_error "--vocab N is required" "$MTRAIN" import --uint16 a.u16 --out bad.h5
expect_error "--text and --llmc are one import each" "$MTRAIN" import --text text.txt --llmc a.bin --out bad.h5
# BPE (SentencePiece) of 300 pieces: deterministic; the model in the file.
"$MTRAIN" import --text text.txt --tokenizer bpe:300 --out bpe.h5 >/dev/null
"$MTRAIN" import --text text.txt --tokenizer bpe:300 --out bpe2.h5 >/dev/null
for f in bpe bpe2; do h5dump -d tokens -b LE -o $f.tok $f.h5 >/dev/null; done
cmp -s bpe.tok bpe2.tok || fail "BPE: two imports of one text gave other tokens"
h5dump -a tokenizer bpe.h5 | grep -q '"sentencepiece"' || fail "BPE: tokenizer attribute"
h5dump -a vocab_size bpe.h5 | grep -q "(0): 300" || fail "BPE: vocab_size"
expect_error "bpe:20: SentencePiece cannot train it: Vocabulary size is smaller" "$MTRAIN" import --text text.txt --tokenizer bpe:20 --out bad.h5
expect_error "--tokenizer 'wordpiece' is not bytes or bpe:N" "$MTRAIN" import --text text.txt --tokenizer wordpiece --out bad.h5
# Forged files of tokens: one line each.
"$PY" - <<'PY'
import h5py, numpy as np
def make(path, **attrs):
    with h5py.File(path, "w") as f:
        f["tokens"] = np.arange(500, dtype=np.int32) % 7
        for k, v in attrs.items():
            f.attrs[k] = v
make("novocab.h5")
make("arrayvocab.h5", vocab_size=np.arange(64))
make("hugevocab.h5", vocab_size=np.int64(1) << 40)
PY
expect_job_error "novocab.h5: no attribute vocab_size" ranks 1 --device cpu --data novocab.h5 --context 8 --batch 4 --steps 1 --model embedding:4,dense --ckpt-dir bad
expect_job_error "arrayvocab.h5: no attribute vocab_size" ranks 1 --device cpu --data arrayvocab.h5 --context 8 --batch 4 --steps 1 --model embedding:4,dense --ckpt-dir bad
expect_job_error "hugevocab.h5: attribute vocab_size 1099511627776 must be 2 to" ranks 1 --device cpu --data hugevocab.h5 --context 8 --batch 4 --steps 1 --model embedding:4,dense --ckpt-dir bad
[ -z "$(ls bad.h5* 2>/dev/null)" ] || fail "a refused import left $(ls bad.h5*)"

# --- windows: exactly once an epoch, the same global batches on any rank count ---
N=400 T=8 B=7 EPOCHS=3
W=$((N / T - 1)) # 49 windows an epoch, 7 batches of 7
STEPS=$((W / B * EPOCHS))
"$MKDATA" counting count.h5 $N 0
CFLAGS=(--device cpu --data count.h5 --context $T --model 'embedding:8,posembed,[layernorm,attention:2:causal],dense'
	--batch $B --seed 5 --log-every 100 --eval-data none)
run() {
	local name=$1 n=$2
	shift 2
	MTRAIN_TEST_ROWS=$WORK/$name ranks "$n" "${CFLAGS[@]}" --ckpt-dir "ck-$name" "$@" >>"log-$name"
}
for n in 1 2 3; do
	run straight$n $n --steps $STEPS
done
resumed=()
for case in 2:10:3 3:7:1; do
	IFS=: read -r first stop second <<<"$case"
	resumed+=("resumed-$first-$stop-$second")
	run "${resumed[-1]}" "$first" --steps "$stop"
	run "${resumed[-1]}" "$second" --steps $STEPS --resume auto
	grep -q "resumed from" "log-${resumed[-1]}" || fail "${resumed[-1]} did not resume"
done
python3 - $T $W $B $STEPS straight1 straight2 straight3 "${resumed[@]}" <<'PY' ||
import collections, glob, sys
T, W, B, steps = (int(v) for v in sys.argv[1:5])
names, bad, seqs = sys.argv[5:], [], {}
for name in names:
    got = collections.defaultdict(dict)
    for path in glob.glob(name + ".*"):
        for line in open(path):
            f = [int(v) for v in line.split()]
            got[f[0]][f[3]] = (f[1], f[4:])
    if sorted(got) != list(range(1, steps + 1)):
        bad.append(f"{name}: steps {sorted(got)}")
        continue
    seq = []
    for step in sorted(got):
        n = len(got[step])
        for r in range(n):
            epoch, ids = got[step][r]
            if len(ids) != (r + 1) * B // n - r * B // n:
                bad.append(f"{name}: step {step} rank {r} has {len(ids)} windows")
            seq.append((epoch, tuple(ids)))
    seqs[name] = seq
    by_epoch = collections.defaultdict(list)
    for epoch, ids in seq:
        by_epoch[epoch] += ids
    shifts = set()
    for epoch, ids in sorted(by_epoch.items()):
        if -1 in ids:
            bad.append(f"{name}: epoch {epoch}: a window whose tokens do not count up")
            continue
        shift = min(ids) % T
        shifts.add(shift)
        if sorted(ids) != [shift + w * T for w in range(W)]:
            bad.append(f"{name}: epoch {epoch}: windows {sorted(ids)[:6]}... are not each of "
                       f"{W} windows {T} apart from {shift} once")
    if len(shifts) < 2:
        bad.append(f"{name}: every epoch's windows begin at the same shift {shifts}")
ref = seqs.get("straight1")
for name, seq in seqs.items():
    if ref and sum((list(ids) for _, ids in seq), []) != sum((list(ids) for _, ids in ref), []):
        bad.append(f"{name}: its global batches are not 1 rank's")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
	fail "token windows are not each used once an epoch in one order"
# Evaluation covers the validation split's targets once: of 300 tokens in
# windows of 8 from 0, floor(299 / 8) = 37 windows, 296 targets, on 1 and 3
# ranks (disjoint slices summed).
"$MKDATA" counting countval.h5 $N 300
ranks 1 --device cpu --data countval.h5 --context $T --batch $B --steps 1 --ckpt-dir ck-val \
	--model 'embedding:8,posembed,[layernorm,attention:2:causal],dense' >/dev/null
for n in 1 3; do
	ranks $n eval --ckpt ck-val/ckpt-00000001.h5 --device cpu >ev$n
	grep -q "ema loss .* (296 tokens)" ev$n || { cat ev$n; fail "eval on $n ranks: not 296 targets"; }
done

# --- a small GPT on bytes ---
python3 -c "open('abc.txt','w').write(''.join('the quick brown fox %d. ' % (i % 7) for i in range(600)))"
"$MTRAIN" import --text abc.txt --out abc.h5 >/dev/null
GPT='embedding:16,posembed,2*([layernorm:1e-5,attention:2:causal],[layernorm:1e-5,dense:32,gelu,dense:16]),layernorm:1e-5,dense'
GFLAGS=(--device cpu --data abc.h5 --context 16 --batch 8 --seed 3
	--optimizer adamw --lr 1e-2 --log-every 10)
for n in 1 2; do
	ranks $n "${GFLAGS[@]}" --model "$GPT" --steps 20 --zero 0 --ckpt-dir gpt$n >/dev/null
done
"$CMP" --norm gpt1/ckpt-00000020.h5 gpt2/ckpt-00000020.h5 1e-5 || fail "2 ranks: not 1 rank's GPT weights to 1e-5"
ranks 2 "${GFLAGS[@]}" --model "$GPT" --steps 200 --zero 0 --ckpt-dir gpt2 --metrics m2.jsonl >glog2
grep -q "resumed from gpt2/ckpt-00000020.h5" glog2 || { cat glog2; fail "no resume at 20"; }
python3 - m2.jsonl <<'PY' || { cat glog2; fail "the per-token loss did not fall below 1 (ln 256 = 5.5 at the start)"; }
import json, sys
loss = [json.loads(l)["loss"] for l in open(sys.argv[1]) if '"event":"train"' in l]
sys.exit(0 if loss and loss[-1] < 1.0 else 1)
PY
grep -qE "eval step 200 .* ema_ppl [0-9.]+ ema_bpb [0-9.]+" glog2 || { cat glog2; fail "no perplexity and bits per byte in the eval line"; }
# mtrain eval: the same figures on 1 and 2 ranks as the run's last eval line.
last=$(grep "^eval step 200" glog2 | sed -E 's/.*raw_loss ([0-9.]+).*ema_loss ([0-9.]+).*/\1 \2/')
for n in 1 2; do
	ranks $n eval --ckpt gpt2/ckpt-00000200.h5 --device cpu >elog$n
	[ "$(awk '/ raw loss / {r = $5} / ema loss / {e = $5} END {print r, e}' elog$n)" = "$last" ] ||
		{ cat elog$n; fail "mtrain eval on $n ranks: not the run's losses ($last)"; }
done
grep -qE "ppl [0-9.]+ \([0-9]+ tokens\)" elog1 || { cat elog1; fail "mtrain eval does not count tokens"; }
# mtrain generate: the same seed the same text; greedy (temperature 0) it
# goes on as the text does; a rate on stderr; bad options one line.
ck=gpt2/ckpt-00000200.h5
"$MTRAIN" generate --ckpt $ck --prompt "the quick" --tokens 40 --seed 5 >g1 2>g1.err
"$MTRAIN" generate --ckpt $ck --prompt "the quick" --tokens 40 --seed 5 >g2 2>/dev/null
"$MTRAIN" generate --ckpt $ck --prompt "the quick" --tokens 40 --seed 6 >g3 2>/dev/null
cmp -s g1 g2 || fail "generate: the same seed gave other text"
cmp -s g1 g3 && fail "generate: seeds 5 and 6 gave the same 40 tokens"
[ "$(head -c 9 g1)" = "the quick" ] && [ "$(wc -c <g1)" = 50 ] || { cat g1; fail "generate: not the prompt and 40 bytes"; }
grep -qE "generate: 40 tokens in [0-9.]+ s, [0-9]+ tokens/s" g1.err || { cat g1.err; fail "generate: no rate"; }
"$MTRAIN" generate --ckpt $ck --prompt "the quick " --tokens 30 --temperature 0 >greedy 2>/dev/null
grep -q "^the quick brown fox [0-6]\. the quick brown" greedy || { cat greedy; fail "generate: greedy does not go on as the text"; }
expect_error "--weights: 'best' is not one of ema|raw" "$MTRAIN" generate --ckpt $ck --weights best
expect_error "--prompt: empty" "$MTRAIN" generate --ckpt $ck --prompt ""
expect_error "--temperature: '-1' is not a number" "$MTRAIN" generate --ckpt $ck --temperature -1
expect_error "generate: --ckpt FILE is required" "$MTRAIN" generate --tokens 3
grep -qE "tokens/s [0-9]+" glog2 || fail "no tokens/s in the progress lines"
grep -q "eval abc.h5" glog2 || fail "the validation split was not evaluated by default"
# A GPT on BPE tokens: bits per byte from the split's bytes; generate
# decodes its tokens.
ranks 2 --device cpu --data bpe.h5 --context 16 --batch 8 --steps 30 --model "$GPT" --seed 3 \
	--optimizer adamw --lr 1e-2 --ckpt-dir gpt-bpe >log-bpe || { cat log-bpe; fail "a GPT on BPE tokens"; }
grep -qE "^eval step 30 .* ema_ppl [0-9.]+ ema_bpb [0-9.]+" log-bpe || { cat log-bpe; fail "BPE: no bits per byte"; }
"$MTRAIN" generate --ckpt gpt-bpe/ckpt-00000030.h5 --prompt "the hacker" --tokens 20 >gen-bpe 2>/dev/null ||
	fail "generate on BPE tokens"
[ "$(head -c 10 gen-bpe)" = "the hacker" ] && [ "$(wc -c <gen-bpe)" -gt 12 ] || { cat gen-bpe; fail "generate: BPE text"; }
# Tied embeddings (unembed): one table, no kernel or bias of the logits'
# own; the variables' names as untied but for those; safetensors holds it
# (Keras' export of it: tests/keras/gpt.sh).
ranks 2 "${GFLAGS[@]}" --model "${GPT%,dense},unembed" --steps 3 --ckpt-dir gpt-tied >log-tied ||
	{ cat log-tied; fail "a tied GPT"; }
"$MTRAIN" inspect gpt-tied/ckpt-00000003.h5 | awk '$1 ~ /^[a-z_0-9]+\/[a-z_\/]+$/ && $1 !~ /Adam|Moving/ { print $1 }' >tied-vars
"$MTRAIN" inspect gpt2/ckpt-00000200.h5 | awk '$1 ~ /^[a-z_0-9]+\/[a-z_\/]+$/ && $1 !~ /Adam|Moving/ { print $1 }' |
	grep -vE "^dense_4/(kernel|bias)$" | diff - tied-vars || fail "tied: not the untied GPT's variables less dense_4's"
grep -qx "embedding/embeddings" tied-vars || fail "tied: no embedding/embeddings"
"$MTRAIN" export gpt-tied/ckpt-00000003.h5 --format safetensors --out tied.safetensors >/dev/null ||
	fail "tied: export --format safetensors"
# An evaluation set of the other kind: one line.
"$MKDATA" synth rows.h5 40 16 5 3
expect_job_error "rows.h5: rows with one label each, but the training set abc.h5 is a file of tokens" \
	ranks 1 "${GFLAGS[@]}" --model "$GPT" --eval-data rows.h5 --steps 1 --ckpt-dir bad
expect_job_error "last layer predicts once per row, but abc.h5 holds tokens" \
	ranks 1 "${GFLAGS[@]}" --model embedding:16,globalavgpool,dense --steps 1 --ckpt-dir bad
expect_job_error "abc.h5: 'tokens' holds [0-9]+ tokens, too few for one window of --context 100000" \
	ranks 1 "${GFLAGS[@]}" --model "$GPT" --context 100000 --steps 1 --ckpt-dir bad
[ ! -e bad ] || fail "a refused run left --ckpt-dir behind"
pass "text imports as bytes exactly; windows once an epoch on 1-3 ranks and resumed; a GPT's per-token loss falls, 1 and 2 ranks within 1e-5"
