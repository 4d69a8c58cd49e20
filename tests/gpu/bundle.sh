#!/bin/sh
# Packs build/acceld with every shared library it needs that a bare host may lack, for check_nvidia.sh.
#
#   tests/gpu/bundle.sh [BIN] [OUT]     (defaults: build/acceld, build/gpu-bundle)
#
# OUT gets acceld, lib/ (each library `ldd` lists, except the C library and the loader, which must come from the
# host), the check scripts, clcopy, pjrt_probe and a tar of all of it beside the folder (OUT.tar.gz). PoCL's ICD
# file and its own libraries are not copied: the OpenCL check relies on the host's vendor ICD (NVIDIA's).
set -eu

BIN=${1:-build/acceld}
OUT=${2:-build/gpu-bundle}
HERE=$(dirname "$0")
[ -x "$BIN" ] || { echo "bundle: $BIN is not built (make)" >&2; exit 2; }

rm -rf "$OUT"
mkdir -p "$OUT/lib"
cp "$BIN" "$OUT/acceld"
cp "$HERE/check_nvidia.sh" "$HERE/bench_nvidia.sh" "$HERE/check_pjrt.sh" "$HERE/check_worker.sh" "$HERE/device_run.sh" \
	"$OUT/"
# the copy-bandwidth peer of bench_nvidia.sh and the PJRT plugin prober, built here since a GPU host may have no
# compiler
cc -O2 -o "$OUT/clcopy" "$HERE/clcopy.c" -lOpenCL
cc -std=c11 -D_GNU_SOURCE -O2 -I"$HERE/../../src" -o "$OUT/pjrt_probe" "$HERE/pjrt_probe.c" -ldl
# OpenBLAS is loaded at run time (so `ldd` does not list it): carry it too when present
blas=$(ldconfig -p | awk '/libopenblas\.so\.0 / { print $NF; exit }')
[ -z "$blas" ] || cp -L "$blas" "$OUT/lib/"
# what acceld and OpenBLAS link (OpenBLAS needs libgfortran, which a host without a Fortran runtime lacks)
ldd "$BIN" ${blas:+"$blas"} | awk '/=> \// { print $3 }' | sort -u | while read -r lib; do
	case "$(basename "$lib")" in
	# the C runtime, the loader and the compiler's runtime belong to the host; mixing them is unsafe
	libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libresolv.so.*|libgcc_s.so.*) ;;
	*) cp -L "$lib" "$OUT/lib/" ;;
	esac
done
tar -C "$(dirname "$OUT")" -czf "$OUT.tar.gz" "$(basename "$OUT")"
echo "bundle: $OUT ($(find "$OUT/lib" -mindepth 1 -maxdepth 1 | wc -l) libraries), $OUT.tar.gz"
