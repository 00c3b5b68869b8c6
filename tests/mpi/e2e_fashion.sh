# End to end on a slice of Fashion-MNIST (Debian's dataset-fashion-mnist):
# import the IDX files, take 6,000 training and 2,000 test images, train on
# 2 ranks, and the accuracy must rise well above chance (0.1).
. "$(dirname "$0")/lib.sh"
src=/usr/share/datasets/fashion-mnist
"$MTRAIN" import --images $src/train-images-idx3-ubyte.gz --labels $src/train-labels-idx1-ubyte.gz --out train-all.h5
"$MTRAIN" import --images $src/t10k-images-idx3-ubyte.gz --labels $src/t10k-labels-idx1-ubyte.gz --out test-all.h5
"$MKDATA" slice train-all.h5 train.h5 0 6000
"$MKDATA" slice test-all.h5 test.h5 0 2000
ranks 2 --device cpu --data train.h5 --eval-data test.h5 --epochs 3 --ckpt-dir ck --metrics m.jsonl >log
tail -n 3 log
acc=$(ema_acc m.jsonl)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.70) }' || fail "EMA accuracy $acc below 0.70"
pass "Fashion-MNIST slice: EMA accuracy $acc"
