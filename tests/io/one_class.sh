# mtrain import --image-dir of a folder with one class folder: the file is
# written (exit 0), and one warning line says at once what training on it
# would say later: a classifier needs two classes or more. Training on it
# is refused, as the warning says; two class folders give no warning.
. "$(dirname "$0")/../mpi/lib.sh"
png_folder one 4 8 cat
png_folder two 4 8 cat dog
"$MTRAIN" import --image-dir one --out one.h5 >one.out 2>one.err || { cat one.err; fail "import of one/"; }
[ -s one.h5 ] || fail "import of one/ wrote no one.h5"
want="mtrain: warning: one has one class folder ('cat'): a classifier needs two or more; training on one.h5 will be refused"
[ "$(cat one.err)" = "$want" ] || { cat one.err; fail "want the one line '$want'"; }
expect_error "one.h5: labels hold 1 class; need at least 2" \
	"$MTRAIN" --device cpu --data one.h5 --eval-data none --layers 8 --batch 2 --steps 1
"$MTRAIN" import --image-dir two --out two.h5 >two.out 2>two.err || { cat two.err; fail "import of two/"; }
[ ! -s two.err ] || { cat two.err; fail "two class folders: a line on stderr"; }
pass "one class folder: a warning at import, as training refuses it"
