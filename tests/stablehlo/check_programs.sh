#!/usr/bin/env bash
# Every StableHLO program acceld writes (each kernel at each precision, sgemm with and without C, the generator and
# the gather), dumped at small sizes by tests/stablehlo/programs.c, checked with the tools of ../shared/tools:
# stablehlo-verify (valid StableHLO) and stablehlo-interpret (StableHLO's reference interpreter), run on the
# generator's inputs and compared with the C code (the generator bit for bit, the gather element for element, each
# kernel by kernel_verify's tolerances). Run it by hand whenever a program changes (`make test` does not: it needs
# ../shared and libmlir-22); it writes its output to tests/stablehlo/last_run.txt, which is kept in the repository.
#
# Usage: tests/stablehlo/check_programs.sh [BUILD_DIR] (default build; libacceld.a is made there when missing).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(realpath "${1:-$root/build}")
tools=${STABLEHLO_TOOLS:-$(realpath "$root/../shared/tools" 2>/dev/null || echo /work/shared/tools)}
# the wrapper looks for libLLVM under /usr/lib/llvm-22/lib; Debian's libllvm22 puts it in the multiarch folder,
# where the interpreter's binary finds it: run that binary when its libraries resolve
interpret="$tools/stablehlo-interpret"
if ! ldd "$tools/bin/stablehlo-interpret-llvm22" 2>/dev/null | grep -q "not found"; then
    interpret="$tools/bin/stablehlo-interpret-llvm22"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
build_on_lib "$work/programs" ../tests/stablehlo/programs.c "$build"
"$work/programs" dump "$work"
{
    echo "check_programs.sh at $(git -C "$root" rev-parse --short HEAD) on $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "--- stablehlo-verify"
    fail=0
    for f in "$work"/*.mlir; do
        printf '%-22s ' "$(basename "$f")"
        "$tools/stablehlo-verify" "$f" 2>&1 | tail -1 || fail=1
    done
    echo "--- stablehlo-interpret"
    while read -r name args; do
        read -ra list <<<"$args"
        argv=()
        for a in "${list[@]}"; do
            case $a in *.npy) argv+=(--arg "$work/$a") ;; *) argv+=(--arg "$a") ;; esac
        done
        printf '%-18s ' "$name"
        "$interpret" "$work/$name.mlir" "${argv[@]}" --out "$work/$name.out" 2>&1 | tail -1 || fail=1
    done <"$work/manifest.txt"
    echo "--- compared with the C code"
    "$work/programs" check "$work" || fail=1
    echo "result: $([ "$fail" = 0 ] && echo every program passed || echo FAILED)"
    exit "$fail"
} 2>&1 | sed "s#$work/##g" | tee "$root/tests/stablehlo/last_run.txt"
