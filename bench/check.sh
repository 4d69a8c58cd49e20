#!/usr/bin/env bash
# The health check's figures against peers in the same run, on this host. The quick check of cpu:0
# (POST /devices/cpu:0/check with wait=true) measures sgemm at the size its ramp settles on and triad over arrays four
# times the last-level cache, each the best of its runs; beside it, at the very sizes the check used:
#   sgemm  numpy's float32 matmul (numpy calls OpenBLAS through libblas.so.3), with OPENBLAS_CORETYPE=SkylakeX (the
#          core acceld loads on AVX-512 CPUs) and as installed; best of RUNS after a warm-up
#   triad  the STREAM-style OpenMP loop of bench/exec_peer_stream.c (-O3 -march=native), with ordinary and with
#          non-temporal stores (acceld's triad writes large outputs with non-temporal stores); best of RUNS
# ROUNDS rounds alternate the check and the peers, so a noisy moment does not favour one side; each side keeps its
# best. The check's thresholds are opened (its verdict is not what is measured here). Writes "## Health checks" in
# bench/REPORT.md.
# Usage: bench/check.sh build/acceld   (RUNS=5, ROUNDS=3)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-build/acceld}")
runs=${RUNS:-5}
rounds=${ROUNDS:-3}

# numpy: Debian's python3-numpy, whose BLAS is the system's libblas.so.3 (OpenBLAS here)
py=
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
    sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends python3-numpy >/dev/null || true
    py=/usr/bin/python3
    "$py" -c 'import numpy' || { echo "check.sh: numpy is missing (python3-numpy)" >&2; exit 2; }
fi
command -v gcc >/dev/null || { echo "check.sh: gcc is missing" >&2; exit 2; }

work=$(mktemp -d)
cleanup() {
    if [ -n "${acceld_pid:-}" ]; then kill "$acceld_pid" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

gcc -O3 -march=native -fopenmp -o "$work/peer_stream" "$here/exec_peer_stream.c"
cat >"$work/peer_numpy.py" <<'PY'
import sys, time
import numpy as np

n, runs = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
a = (rng.random((n, n), dtype=np.float32) - 0.5)
b = (rng.random((n, n), dtype=np.float32) - 0.5)
c = a @ b  # warm-up: threads, pages
best = 0.0
for _ in range(runs):
    t0 = time.perf_counter()
    c = a @ b
    best = max(best, 2.0 * n * n * n / (time.perf_counter() - t0) / 1e9)
print("%.2f" % best)
PY

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
"$bin" serve --listen "127.0.0.1:$port" --db "$work/acceld.db" --access-log false --log-level warn \
    --check-warn-percent 0 --check-fail-percent 0 --check-clock-percent 0 2>"$work/acceld.log" &
acceld_pid=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done

# OpenBLAS's threads spin for a while after a call: let one side's settle before the other side runs
settle() { sleep 1; }

: >"$work/rounds"
for round in $(seq "$rounds"); do
    echo "round $round/$rounds: the quick check of cpu:0 ..."
    curl -sf -o "$work/check.json" -X POST "http://127.0.0.1:$port/devices/cpu:0/check" \
        -H 'Content-Type: application/json' -d '{"wait": true}'
    read -r g b n tn secs < <(python3 - "$work/check.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tests"]}
print(t["sgemm"]["measured"], t["triad"]["measured"], t["sgemm"]["size"]["n"], t["triad"]["size"]["n"],
      d["duration_s"])
PY
)
    settle
    # the peers at the sizes this round's check used (its ramp may settle elsewhere when the host is busy)
    echo "round $round/$rounds: numpy sgemm $n, STREAM triad $tn ..."
    skx=$(OPENBLAS_CORETYPE=SkylakeX "$py" "$work/peer_numpy.py" "$n" "$runs")
    settle
    inst=$(env -u OPENBLAS_CORETYPE "$py" "$work/peer_numpy.py" "$n" "$runs")
    settle
    read -r t _ _ tnt _ < <("$work/peer_stream" "$tn" "$runs")
    echo "$n $g $skx $inst $tn $b $t $tnt $secs" >>"$work/rounds"
done

# each side's best over the rounds at the sgemm size the check chose most often (the larger on a tie)
table=$(python3 - "$work/rounds" "$runs" <<'PY'
import collections, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
sizes = collections.Counter(int(r[0]) for r in rows)
n = max(sizes, key=lambda s: (sizes[s], s))
at = [r for r in rows if int(r[0]) == n]
best = lambda rs, i: max(float(r[i]) for r in rs)
ck, skx, inst = best(at, 1), best(at, 2), best(at, 3)
tn = rows[0][4]
tb, plain, nt = best(rows, 5), best(rows, 6), best(rows, 7)
ratio = lambda a, b: "%.2f" % (a / b) if b > 0 else "n/a"
print("| measure | the check | peer | ratio | target |")
print("|---|---|---|---|---|")
print(f"| sgemm {n}^3 cpu:0, GFLOP/s ({len(at)} of {len(rows)} rounds at this size) | {ck:.2f} | numpy matmul, "
      f"OPENBLAS_CORETYPE=SkylakeX (acceld's core): {skx:.2f} | {ratio(ck, skx)} | 0.90-1.10 |")
print(f"| sgemm {n}^3 cpu:0, GFLOP/s | {ck:.2f} | numpy matmul, OpenBLAS as installed: {inst:.2f} | "
      f"{ratio(ck, inst)} | |")
print(f"| triad n={tn} cpu:0, GB/s | {tb:.2f} | STREAM-style loop, non-temporal stores: {nt:.2f} | "
      f"{ratio(tb, nt)} | 0.90-1.10 |")
print(f"| triad n={tn} cpu:0, GB/s | {tb:.2f} | STREAM-style loop, ordinary stores: {plain:.2f} | "
      f"{ratio(tb, plain)} | |")
PY
)
ck_seconds=$(awk '{printf "%s%s", (NR > 1 ? ", " : ""), $9}' "$work/rounds")
echo "$table"
echo "check durations (s): $ck_seconds"

report="$here/REPORT.md"
section=$(cat <<SECTION
## Health checks

Command: \`bench/check.sh ${1:-build/acceld}\` (RUNS=$runs, ROUNDS=$rounds), $(date -u +%Y-%m-%dT%H:%M:%SZ),
$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)). The quick check of cpu:0
(\`POST /devices/cpu:0/check\`, \`wait=true\`) against peers at the sizes the check chose, in the same run: numpy's
float32 matmul (OpenBLAS through libblas.so.3) for sgemm, the STREAM-style OpenMP loop of bench/exec_peer_stream.c
for triad (12 bytes per element on both sides). Each side keeps its best over $rounds rounds that alternate the
check and the peers; the check's own figure is the best of its runs at the final size. The target is each figure
within 10 % of its like-for-like peer: numpy with the core type acceld loads, and the non-temporal loop (acceld's
triad writes its output with non-temporal stores, which skip the read a plain store makes of each output line; the
plain loop moves 16 bytes per element and is counted 12). Quick checks took $ck_seconds s. Other work on the host
skews figures taken on a busy machine.

$table
SECTION
)
report_section "$report" "Health checks" "$section"
