#!/usr/bin/env bash
# What a dashboard refresh of the job list costs: the bytes and the time of GET /run?page_size=15 (what the dashboard
# polls every 5 s) after JOBS jobs of saxpy n=N with return=full, for a base git ref (built from `git archive` into a
# temporary folder: no worktree is registered) and for the given binary, in the same run. Time is the median of
# REQUESTS sequential requests on one keep-alive connection, after one warm-up.
# Usage: bench/joblist.sh build/acceld [BASE_REF]   (BASE_REF defaults to the merge base with main;
#        JOBS=15 N=262144 REQUESTS=20 to change the load)
# Writes the results under "## Job list" in bench/REPORT.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$(realpath "${1:-build/acceld}")
base_ref=${2:-$(git -C "$root" merge-base HEAD main)}
jobs=${JOBS:-15}
n=${N:-262144}
requests=${REQUESTS:-20}

work=$(mktemp -d)
cleanup() {
    if [ -n "${pid:-}" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "building $base_ref in $work/base" >&2
mkdir "$work/base"
git -C "$root" archive "$base_ref" | tar -x -C "$work/base"
make -C "$work/base" -j"$(nproc)" GIT_COMMIT="$(git -C "$root" rev-parse --short=12 "$base_ref")" \
    >"$work/base-build.log" 2>&1
base_bin="$work/base/build/acceld"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# measure BIN: starts it on a fresh database, runs the jobs, prints "BYTES MEDIAN_MS" of the list
measure() {
    local port
    port=$(free_port)
    rm -f "$work"/db*
    "$1" serve --listen "127.0.0.1:$port" --db "$work/db.sqlite" --access-log false --log-level warn \
        2>"$work/acceld.log" &
    pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
    for i in $(seq "$jobs"); do
        curl -sf -o /dev/null -X POST "http://127.0.0.1:$port/run" -H 'Content-Type: application/json' \
            -d "{\"kernel\": \"saxpy\", \"n\": $n, \"return\": \"full\", \"generate\": {\"seed\": $i}}"
    done
    python3 - "http://127.0.0.1:$port/run?page_size=$jobs" "$requests" "$jobs" <<'PY'
import http.client, json, statistics, sys, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
t, size = [], 0
for i in range(int(sys.argv[2]) + 1):
    t0 = time.perf_counter()
    c.request("GET", u.path + "?" + u.query)
    r = c.getresponse()
    body = r.read()
    if i > 0:  # the first warms up
        t.append(time.perf_counter() - t0)
    assert r.status == 200, r.status
    size = len(body)
assert len(json.loads(body)["jobs"]) == int(sys.argv[3])
print(size, f"{statistics.median(t) * 1e3:.1f}")
PY
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
}

read -r base_bytes base_ms <<<"$(measure "$base_bin")"
read -r ours_bytes ours_ms <<<"$(measure "$bin")"
ratio() { python3 -c "print('%.4f' % ($1 / $2))"; }
printf 'GET /run?page_size=%s after %s full saxpy jobs of n=%s: base %s bytes %s ms, this build %s bytes %s ms\n' \
    "$jobs" "$jobs" "$n" "$base_bytes" "$base_ms" "$ours_bytes" "$ours_ms"

cpus=$(nproc)
model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
ours=$("$bin" version | python3 -c 'import json, sys; print(json.load(sys.stdin)["commit"])')
report_section "$here/REPORT.md" "Job list" "## Job list

Command: \`bench/joblist.sh build/acceld $base_ref\` (JOBS=$jobs, N=$n, REQUESTS=$requests),
$(date -u +%Y-%m-%dT%H:%M:%SZ), $cpus CPUs ($model). What one refresh of the dashboard's job table costs:
\`GET /run?page_size=$jobs\`, which the dashboard polls every 5 s, after $jobs jobs of saxpy n=$n with
\`return: \"full\"\` (each answer holds its $n outputs), for the build before GET /run listed summaries
($base_ref, built from \`git archive\`) and this build ($ours), in the same run. Time is the median of $requests
sequential requests on one keep-alive connection after a warm-up. The whole record, outputs included, stays
\`GET /run/{id}\`.

| measure | before ($base_ref) | this build ($ours) | ratio |
|---|---|---|---|
| bytes of GET /run?page_size=$jobs | $base_bytes | $ours_bytes | $(ratio "$ours_bytes" "$base_bytes") |
| time of GET /run?page_size=$jobs, ms | $base_ms | $ours_ms | $(ratio "$ours_ms" "$base_ms") |
"
