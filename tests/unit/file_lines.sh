#!/usr/bin/env bash
# Every C source, header and CUDA file of mtrain is at most 500 lines (wc -l):
# the files git tracks, or, where there is no git or the tree is not its own
# checkout (an unpacked archive), every such file under the tree but .git and
# build folders (those holding a CMakeCache.txt). Each file over the limit is
# one line naming it and its length, and the exit status is 1.
#   file_lines.sh [SOURCE_DIR]   (the tree this script is in, if not given)
set -euo pipefail
max=500
root=${1:-"$(dirname "$0")/../.."}
cd "$root"

# The files to measure, NUL-separated, relative to the tree.
sources() {
	local top
	if command -v git >/dev/null && top=$(git rev-parse --show-toplevel 2>/dev/null) &&
		[ "$top" -ef . ]; then
		git ls-files -z -- '*.c' '*.h' '*.cu'
	else
		find . \( -name .git -o -type d -exec test -e '{}/CMakeCache.txt' \; \) -prune -o \
			-type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -print0
	fi
}

files=0 over=0 longest=0 longest_file=
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue # tracked, but deleted in the work tree
	n=$(wc -l <"$f")
	files=$((files + 1))
	if [ "$n" -gt "$longest" ]; then
		longest=$n longest_file=${f#./}
	fi
	if [ "$n" -gt "$max" ]; then
		echo "${f#./}: $n lines, more than $max" >&2
		over=$((over + 1))
	fi
done < <(sources)

if [ "$files" -eq 0 ]; then
	echo "file_lines: no .c, .h or .cu file found under $PWD" >&2
	exit 1
fi
if [ "$over" -gt 0 ]; then
	echo "file_lines: $over of $files files over $max lines (split them by what they do)" >&2
	exit 1
fi
echo "file_lines: $files files, none over $max lines (the longest: $longest_file, $longest)"
