# A checkpoint written by 4 ranks resumes on 2 and on 1 rank, and the result
# matches the 4-rank run that never stopped (to 1e-5 of each variable's
# largest value: the sums' order differs).
. "$(dirname "$0")/lib.sh"
make_data
FLAGS=("${SMALL[@]}" --optimizer momentum --lr 0.05)
ranks 4 "${FLAGS[@]}" --steps 20 --ckpt-dir straight >/dev/null
ranks 4 "${FLAGS[@]}" --steps 10 --ckpt-dir four >/dev/null
for n in 2 1; do
	cp -r four on$n
	ranks $n "${FLAGS[@]}" --steps 20 --ckpt-dir on$n >log
	grep -q "resumed from on$n/ckpt-00000010.h5" log || fail "$n ranks did not resume"
	# Into a file: grep -q stops reading at its match, and the model summary
	# written after it would end inspect on SIGPIPE (pipefail).
	"$MTRAIN" inspect on$n/ckpt-00000020.h5 >inspect$n.txt
	grep -Eq "^world_size +$n\$" inspect$n.txt || fail "checkpoint does not record $n ranks"
	same_ckpt --norm straight/ckpt-00000020.h5 on$n/ckpt-00000020.h5 1e-5
done
# The comparison has teeth: a learning rate 1e-4 larger is not the same run.
ranks 4 "${FLAGS[@]}" --lr 0.050005 --steps 20 --ckpt-dir nudged >/dev/null
"$CMP" --norm straight/ckpt-00000020.h5 nudged/ckpt-00000020.h5 1e-5 >/dev/null 2>&1 &&
	fail "a run with another learning rate compared equal"
pass "a 4-rank checkpoint resumes on 2 and on 1"
