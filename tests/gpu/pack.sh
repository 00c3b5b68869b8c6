#!/usr/bin/env bash
# Prepares the GPU check for a bare GPU machine that has CUDA but not Open
# MPI, HDF5 or OpenBLAS (the lent H200's image). Builds here for sm_90 and
# packs into .carry.tar.xz: the programs the check runs, the shared
# libraries they load (all but glibc's, the C++ runtime and CUDA's own,
# which a CUDA machine has) and Open MPI's runtime (mpirun, orted, plugins,
# help files) laid out so OPAL_PREFIX can relocate it. The device tool
# carries at most 64 MiB; the pack is about 16. Then, on the GPU machine:
#   tests/gpu/check.sh          (it unpacks .carry.tar.xz when present)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=build-gpu
CARRY=.carry
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
	-DMTRAIN_WERROR=ON >/dev/null
cmake --build "$BUILD" -j "$(nproc)" >/dev/null
rm -rf "$CARRY" .carry.tar.xz
mkdir -p "$CARRY/build" "$CARRY/lib" "$CARRY/usr/bin" "$CARRY/usr/share" "$CARRY/usr/lib/x86_64-linux-gnu"
# Only the programs travel, in the build folder's layout (its other files
# name this machine's paths).
progs=(mtrain tests/mkdata tests/ckpt_compare tests/gpu/test_backend_ops tests/gpu/nccl_comm
	tests/gpu/gpu_probe tests/gpu/gpu_bench)
(cd "$BUILD" && cp --parents "${progs[@]}" "../$CARRY/build/")
ompi=/usr/lib/x86_64-linux-gnu/openmpi
cp -a "$ompi" "$CARRY/usr/lib/x86_64-linux-gnu/"
rm -rf "$CARRY/usr/lib/x86_64-linux-gnu/openmpi/include"
cp -a /usr/share/openmpi "$CARRY/usr/share/"
cp -a /usr/bin/orterun /usr/bin/orted "$CARRY/usr/bin/"
ln -sf orterun "$CARRY/usr/bin/mpirun"
skip='^(linux-vdso|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|ld-linux|libcuda\.so|libcudart|libcublas|libnccl|libgcc_s|libstdc)'
{
	for p in "${progs[@]}"; do echo "$BUILD/$p"; done
	echo /usr/bin/orterun /usr/bin/orted
	find "$ompi/lib" -name '*.so*' -type f
} | xargs -n1 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
	while read -r name path; do
		[[ $name =~ $skip ]] && continue
		[[ $path == "$ompi"/* ]] && continue
		cp -L "$path" "$CARRY/lib/$name"
	done
# The source this build was made from, checked by check.sh before it trusts it.
tests/gpu/source_hash.sh >"$CARRY/SOURCE"
newest=$(find "$CARRY" -type f \( -name '*.so*' -o -path "$CARRY/build/*" \) -print0 |
	xargs -0 objdump -T 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -t. -k2,2n -k3,3n -u | tail -n 1)
tar -cJf .carry.tar.xz "$CARRY"
rm -rf "$CARRY"
echo "pack: .carry.tar.xz, $(du -h .carry.tar.xz | cut -f1); the GPU machine needs glibc ${newest#GLIBC_} or newer"
echo "device run: carry .carry.tar.xz, command: tests/gpu/check.sh"
