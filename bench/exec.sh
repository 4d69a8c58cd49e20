#!/usr/bin/env bash
# Executor against peers in the same run, on this host:
#   sgemm 2048^3 on cpu:0 (POST /run)      vs a C program calling cblas_sgemm, with OPENBLAS_CORETYPE=SkylakeX
#                                             (the best OpenBLAS configuration here) and as installed
#   saxpy and triad at n = 1e8 on cpu:0    vs STREAM-style OpenMP loops built with -O3 -march=native, and the same
#                                             loops with non-temporal stores (AVX-512)
#   sgemm 2048^3 through OpenCL on PoCL    vs CLBlast's sgemm on the same device (libclblast-dev)
#   a tiny job (saxpy n=1024) over HTTP    vs GET /livez: throughput with wrk, and median latency on one keep-alive
#                                             connection (one request at a time)
# Fairness: the same work (sizes, out-of-place output), the same timing (acceld's kernel_ms covers only the kernel
# call, as each peer times only its kernel), the same threads (acceld uses the effective CPUs, the peers OpenMP's
# and OpenBLAS's defaults: every CPU), a warm-up on both sides, best of RUNS, and ROUNDS rounds that alternate
# acceld and the peers so a noisy moment does not favour one side. The client reads each answer to a file before
# parsing it, so no client process competes with a running kernel. Bytes are counted as STREAM does, 12 per element
# for saxpy and triad on both sides; write-allocate traffic (4 more bytes per element with ordinary stores) is
# counted on neither side. acceld writes outputs of 8 MiB and more with non-temporal stores, which skip it; the
# plain STREAM loops use ordinary stores, hence the second peer with non-temporal stores.
# Writes the results under "## Executor" in bench/REPORT.md.
# Usage: bench/exec.sh build/acceld   (DURATION=5 for wrk; RUNS=5; ROUNDS=2; LATENCY_N=2000)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-build/acceld}")
duration=${DURATION:-5}
runs=${RUNS:-5}
rounds=${ROUNDS:-2}
latency_n=${LATENCY_N:-2000}

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
    if [ -n "${acceld_pid:-}" ]; then kill "$acceld_pid" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

read -ra blas_cflags <<<"$(pkg-config --cflags openblas 2>/dev/null || true)"
gcc -O2 "${blas_cflags[@]}" -o "$work/peer_sgemm" "$here/exec_peer_sgemm.c" -lopenblas
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

# best_of KEY BODY: POSTs the job RUNS+1 times (the first warms up) and prints the best throughput[KEY]. Each
# answer is read to a file first: a parser started alongside curl would compete with the kernel for the CPUs.
best_of() {
    local key=$1 body=$2 best=0 v
    for i in $(seq 0 "$runs"); do
        curl -sf -o "$work/answer.json" -X POST "http://127.0.0.1:$port/run" -H 'Content-Type: application/json' \
            -d "$body"
        v=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['throughput']['$key'])" "$work/answer.json")
        [ "$i" -eq 0 ] && continue
        best=$(python3 -c "print(max($best, $v))")
    done
    printf '%.2f' "$best"
}
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
max() { python3 -c "import sys; print('%.2f' % max(float(v) for v in sys.argv[1:]))" "$@"; }
# OpenBLAS's threads spin for a while after a call: let one side's settle before the other side runs
settle() { sleep 1; }

ours_sgemm=0; peer_skx=0; peer_inst=0; skx_core='?'; inst_core='?'; ours_saxpy=0; ours_triad=0
stream_triad=0; stream_saxpy=0; stream_triad_nt=0; stream_saxpy_nt=0
for round in $(seq "$rounds"); do
    echo "round $round/$rounds: sgemm 2048 on cpu:0 ..."
    v=$(best_of gflops '{"kernel":"sgemm","m":2048,"n":2048,"k":2048,"device":"cpu:0"}')
    ours_sgemm=$(max "$ours_sgemm" "$v")
    settle
    read -r v skx_core < <(OPENBLAS_CORETYPE=SkylakeX "$work/peer_sgemm" 2048 "$runs")
    peer_skx=$(max "$peer_skx" "$v")
    settle
    read -r v inst_core < <(env -u OPENBLAS_CORETYPE "$work/peer_sgemm" 2048 "$runs")
    peer_inst=$(max "$peer_inst" "$v")
    settle
    echo "round $round/$rounds: saxpy and triad at 1e8 on cpu:0 ..."
    ours_saxpy=$(max "$ours_saxpy" "$(best_of gbytes_per_s '{"kernel":"saxpy","n":100000000,"device":"cpu:0"}')")
    ours_triad=$(max "$ours_triad" "$(best_of gbytes_per_s '{"kernel":"triad","n":100000000,"device":"cpu:0"}')")
    read -r t s _ tnt snt < <("$work/peer_stream" 100000000 "$runs")
    stream_triad=$(max "$stream_triad" "$t")
    stream_saxpy=$(max "$stream_saxpy" "$s")
    stream_triad_nt=$(max "$stream_triad_nt" "$tnt")
    stream_saxpy_nt=$(max "$stream_saxpy_nt" "$snt")
done
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
# latency: one keep-alive connection, one request at a time, LATENCY_N timed after LATENCY_N/10 untimed; the two
# endpoints alternate over two rounds and each keeps its better median
cat >"$work/latency.py" <<'PY'
import http.client, json, sys, time

port, n = int(sys.argv[1]), int(sys.argv[2])


def run(method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Content-Type": "application/json"} if body else {}
    lat = []
    for i in range(n + n // 10):
        t0 = time.perf_counter()
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            sys.exit("%s %s: HTTP %d" % (method, path, r.status))
        if i >= n // 10:
            lat.append((time.perf_counter() - t0) * 1e6)
    conn.close()
    lat.sort()
    return lat[len(lat) // 2], lat[int(len(lat) * 0.99)]


best = {}
for _ in range(2):
    for name, args in (("livez", ("GET", "/livez")),
                       ("tiny", ("POST", "/run", json.dumps({"kernel": "saxpy", "n": 1024})))):
        p50, p99 = run(*args)
        if name not in best or p50 < best[name][0]:
            best[name] = (p50, p99)
print("%.1f %.1f %.1f %.1f" % (best["tiny"] + best["livez"]))
PY
read -r tiny_p50 tiny_p99 livez_p50 livez_p99 < <(python3 "$work/latency.py" "$port" "$latency_n")

r_skx=$(ratio "$ours_sgemm" "$peer_skx")
r_inst=$(ratio "$ours_sgemm" "$peer_inst")
r_saxpy=$(ratio "$ours_saxpy" "$stream_saxpy")
r_triad=$(ratio "$ours_triad" "$stream_triad")
r_saxpy_nt=n/a
r_triad_nt=n/a
[ "$stream_saxpy_nt" != 0.00 ] && r_saxpy_nt=$(ratio "$ours_saxpy" "$stream_saxpy_nt")
[ "$stream_triad_nt" != 0.00 ] && r_triad_nt=$(ratio "$ours_triad" "$stream_triad_nt")
r_ocl=n/a
[ "$clblast" != n/a ] && r_ocl=$(ratio "$ours_ocl" "$clblast")
r_tiny=$(ratio "$tiny" "$livez")
r_lat=$(ratio "$tiny_p50" "$livez_p50")

table=$(cat <<TABLE
| measure | acceld | peer | ratio | target |
|---|---|---|---|---|
| sgemm 2048^3 cpu:0, GFLOP/s | $ours_sgemm | OpenBLAS $skx_core (OPENBLAS_CORETYPE=SkylakeX): $peer_skx | $r_skx | >= 0.95 |
| sgemm 2048^3 cpu:0, GFLOP/s | $ours_sgemm | OpenBLAS as installed ($inst_core): $peer_inst | $r_inst | |
| saxpy 1e8 cpu:0, GB/s | $ours_saxpy | STREAM-style loop -O3 -march=native -fopenmp: $stream_saxpy | $r_saxpy | >= 0.85 |
| saxpy 1e8 cpu:0, GB/s | $ours_saxpy | the same with non-temporal stores (AVX-512): $stream_saxpy_nt | $r_saxpy_nt | |
| triad 1e8 cpu:0, GB/s | $ours_triad | STREAM-style loop -O3 -march=native -fopenmp: $stream_triad | $r_triad | >= 0.85 |
| triad 1e8 cpu:0, GB/s | $ours_triad | the same with non-temporal stores (AVX-512): $stream_triad_nt | $r_triad_nt | |
| sgemm 2048^3 OpenCL on PoCL, GFLOP/s | $ours_ocl | CLBlast: $clblast | $r_ocl | >= 3 |
| saxpy n=1024 over HTTP (HTTP $tiny_status), req/s, wrk -t2 -c16 | $tiny | GET /livez: $livez | $r_tiny | |
| saxpy n=1024 over HTTP, median (p99) latency in us, one connection | $tiny_p50 ($tiny_p99) | GET /livez: $livez_p50 ($livez_p99) | $r_lat | <= 2 |
TABLE
)
echo "$table"

report="$here/REPORT.md"
section=$(cat <<SECTION
## Executor

Command: \`bench/exec.sh ${1:-build/acceld}\` (RUNS=$runs, ROUNDS=$rounds, wrk -t2 -c16 -d${duration}s, LATENCY_N=$latency_n),
$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)).
acceld figures are its kernel_ms-based throughput (the kernel call only), best of $runs after a warm-up, over
$rounds rounds that alternate with the peers; the peers time their kernels the same way, with every CPU. Answers
are read to a file before they are parsed, so no client process competes with a kernel. saxpy and triad count 12
bytes per element on both sides (STREAM's convention; write-allocate traffic is counted on neither side): acceld
writes outputs of 8 MiB and more with non-temporal stores, which skip the write-allocate read, while the plain
STREAM loops use ordinary stores, so a second peer uses non-temporal stores too. The latency row is the median
(p99) of one request at a time on one keep-alive connection. Other work on the host skews figures taken on a busy
machine.

$table
SECTION
)
report_section "$report" "Executor" "$section"
