#!/usr/bin/env bash
# Executor against peers in the same run, on this host:
#   sgemm 2048^3 on cpu:0 (POST /run)      vs a C program calling cblas_sgemm, with OPENBLAS_CORETYPE=SkylakeX
#                                             (the best OpenBLAS configuration here) and as installed
#   saxpy and triad at n = 1e8 on cpu:0    vs STREAM-style OpenMP loops built with -O3 -march=native
#   sgemm 2048^3 through OpenCL on PoCL    vs CLBlast's sgemm on the same device (libclblast-dev)
#   a tiny job (saxpy n=1024) over HTTP    vs GET /livez, both with wrk
# acceld's figures are its own kernel_ms-based throughput (best of several runs, after a warm-up), as the peers
# time only their kernels. Writes the results under "## Executor" in bench/REPORT.md.
# Usage: bench/exec.sh build/acceld   (DURATION=5 for wrk; RUNS=5)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-build/acceld}")
duration=${DURATION:-5}
runs=${RUNS:-5}

need=()
command -v wrk >/dev/null || need+=(wrk)
[ -f /usr/include/clblast_c.h ] || need+=(libclblast-dev)
command -v gcc >/dev/null || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
    sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null || echo "exec.sh: could not install ${need[*]}"
fi

work=$(mktemp -d)
cleanup() {
    [ -n "${acceld_pid:-}" ] && kill "$acceld_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

blas_cflags=$(pkg-config --cflags openblas 2>/dev/null || true)
gcc -O2 $blas_cflags -o "$work/peer_sgemm" "$here/exec_peer_sgemm.c" -lopenblas
gcc -O3 -march=native -fopenmp -o "$work/peer_stream" "$here/exec_peer_stream.c"
have_clblast=0
if [ -f /usr/include/clblast_c.h ] && gcc -O2 -o "$work/peer_clblast" "$here/exec_peer_clblast.c" -lclblast -lOpenCL; then
    have_clblast=1
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
"$bin" serve --listen "127.0.0.1:$port" --db "$work/acceld.db" --exec-max-elements 400000000 \
    --access-log false --log-level warn 2>"$work/acceld.log" &
acceld_pid=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done

# best_of KEY BODY: POSTs the job RUNS+1 times (the first warms up) and prints the best throughput[KEY]
best_of() {
    local key=$1 body=$2 best=0 v
    for i in $(seq 0 "$runs"); do
        v=$(curl -sf -X POST "http://127.0.0.1:$port/run" -H 'Content-Type: application/json' -d "$body" |
            python3 -c "import json,sys; print(json.load(sys.stdin)['throughput']['$key'])")
        [ "$i" -eq 0 ] && continue
        best=$(python3 -c "print(max($best, $v))")
    done
    printf '%.2f' "$best"
}
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }

echo "sgemm 2048 on cpu:0 ..."
ours_sgemm=$(best_of gflops '{"kernel":"sgemm","m":2048,"n":2048,"k":2048,"device":"cpu:0"}')
read -r peer_skx skx_core < <(OPENBLAS_CORETYPE=SkylakeX "$work/peer_sgemm" 2048 "$runs")
read -r peer_inst inst_core < <(env -u OPENBLAS_CORETYPE "$work/peer_sgemm" 2048 "$runs")
echo "saxpy and triad at 1e8 on cpu:0 ..."
ours_saxpy=$(best_of gbytes_per_s '{"kernel":"saxpy","n":100000000,"device":"cpu:0"}')
ours_triad=$(best_of gbytes_per_s '{"kernel":"triad","n":100000000,"device":"cpu:0"}')
read -r stream_triad stream_saxpy _ < <("$work/peer_stream" 100000000 "$runs")
echo "sgemm 2048 through OpenCL (PoCL) ..."
ours_ocl=$(RUNS=3 best_of gflops '{"kernel":"sgemm","m":2048,"n":2048,"k":2048,"device":"cpu:0","backend":"opencl"}')
clblast=n/a
if [ "$have_clblast" = 1 ]; then
    clblast=$(POCL_CACHE_DIR="$work/pocl-cache" "$work/peer_clblast" 2048 3 || echo n/a)
fi
echo "tiny job over HTTP vs /livez ..."
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"kernel":"saxpy","n":1024}'
wrk.headers["Content-Type"] = "application/json"
LUA
rps() { sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p'; }
livez=$(wrk -t2 -c16 -d"${duration}s" "http://127.0.0.1:$port/livez" | rps)
tiny=$(wrk -t2 -c16 -d"${duration}s" -s "$work/post.lua" "http://127.0.0.1:$port/run" | rps)
tiny_status=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/run" \
    -H 'Content-Type: application/json' -d '{"kernel":"saxpy","n":1024}')

r_skx=$(ratio "$ours_sgemm" "$peer_skx")
r_inst=$(ratio "$ours_sgemm" "$peer_inst")
r_saxpy=$(ratio "$ours_saxpy" "$stream_saxpy")
r_triad=$(ratio "$ours_triad" "$stream_triad")
r_ocl=n/a
[ "$clblast" != n/a ] && r_ocl=$(ratio "$ours_ocl" "$clblast")
r_tiny=$(ratio "$tiny" "$livez")

table=$(cat <<TABLE
| measure | acceld | peer | ratio | target |
|---|---|---|---|---|
| sgemm 2048^3 cpu:0, GFLOP/s | $ours_sgemm | OpenBLAS $skx_core (OPENBLAS_CORETYPE=SkylakeX): $peer_skx | $r_skx | >= 0.95 |
| sgemm 2048^3 cpu:0, GFLOP/s | $ours_sgemm | OpenBLAS as installed ($inst_core): $peer_inst | $r_inst | |
| saxpy 1e8 cpu:0, GB/s | $ours_saxpy | STREAM-style loop -O3 -march=native -fopenmp: $stream_saxpy | $r_saxpy | >= 0.85 |
| triad 1e8 cpu:0, GB/s | $ours_triad | STREAM-style loop -O3 -march=native -fopenmp: $stream_triad | $r_triad | >= 0.85 |
| sgemm 2048^3 OpenCL on PoCL, GFLOP/s | $ours_ocl | CLBlast: $clblast | $r_ocl | >= 3 |
| saxpy n=1024 over HTTP (HTTP $tiny_status), req/s | $tiny | GET /livez: $livez | $r_tiny | |
TABLE
)
echo "$table"

report="$here/REPORT.md"
section=$(cat <<SECTION
## Executor

Command: \`bench/exec.sh build/acceld\` (RUNS=$runs, wrk -t2 -c16 -d${duration}s), $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs
($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)). acceld figures are its kernel_ms-based
throughput, best of $runs after a warm-up; peers time their kernels the same way. Other work on the host skews
figures taken on a busy machine.

$table
SECTION
)
python3 - "$report" "$section" <<'PY'
import re, sys
path, section = sys.argv[1], sys.argv[2].rstrip() + "\n"
try:
    text = open(path).read()
except FileNotFoundError:
    text = "# Benchmarks\n"
m = re.search(r"^## Executor\n.*?(?=^## |\Z)", text, flags=re.S | re.M)
text = text[:m.start()] + section + "\n" + text[m.end():] if m else text.rstrip() + "\n\n" + section
open(path, "w").write(text)
PY
echo "wrote $report"
