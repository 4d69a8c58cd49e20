#!/usr/bin/env bash
# Durable job answers against the build before them, in the same run: a tiny job's latency (saxpy n=1024, the
# median of REQUESTS sequential requests on one keep-alive connection from Python's http.client) as a ratio to
# GET /livez's measured the same way, and job throughput under wrk (saxpy and dot n=1024, 16 connections), for a
# base git ref (built in a temporary worktree) and for the given binary. Then what one durable record costs by
# itself: a journal append against a one-record SQLite commit (bench/record_cost.c, linked with libacceld.a).
# Usage: bench/durable.sh build/acceld [BASE_REF]   (BASE_REF defaults to the merge base with main;
#        DURATION=5 CONNECTIONS=16 THREADS=2 ROUNDS=3 to change the load)
# Rounds alternate the two binaries; medians over the rounds are reported.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$(realpath "${1:-build/acceld}")
base_ref=${2:-$(git -C "$root" merge-base HEAD main)}
duration=${DURATION:-5}
conns=${CONNECTIONS:-16}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}

command -v wrk >/dev/null || {
    sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends wrk >/dev/null
}

work=$(mktemp -d)
cleanup() {
    if [ -n "${pid:-}" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    git -C "$root" worktree remove --force "$work/base" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "building $base_ref in a temporary worktree" >&2
git -C "$root" worktree add --detach -q "$work/base" "$base_ref"
make -C "$work/base" -j"$(nproc)" >"$work/base-build.log" 2>&1
base_bin="$work/base/build/acceld"

# bench/record_cost.c, built before the rounds so that a failure to build stops the script early
build_on_lib "$work/record_cost" record_cost.c "$(dirname "$bin")"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
med() { local v; read -ra v <<<"$1"; median "${v[@]}"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for k in saxpy dot; do
    cat >"$work/$k.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"kernel": "$k", "n": 1024, "generate": {"seed": 1}}'
wrk.headers["Content-Type"] = "application/json"
LUA
done

# the median latency in microseconds of sequential requests on one keep-alive connection: lat_us URL [BODY]
lat_us() {
    python3 - "$@" <<'PY'
import http.client, statistics, sys, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
body = sys.argv[2] if len(sys.argv) > 2 else None
c = http.client.HTTPConnection(u.hostname, u.port)
t = []
for i in range(int(__import__("os").environ.get("REQUESTS", "3000")) + 200):
    t0 = time.perf_counter()
    c.request("POST" if body else "GET", u.path, body, {"Content-Type": "application/json"} if body else {})
    r = c.getresponse(); r.read()
    if i >= 200:  # warm-up
        t.append(time.perf_counter() - t0)
    assert r.status == 200, r.status
print(f"{statistics.median(t) * 1e6:.1f}")
PY
}
rps() { wrk -t"$threads" -c"$conns" -d"${duration}s" "$@" | awk '/^Requests\/sec/ {print $2}'; }

start() {
    port=$(free_port)
    rm -f "$work"/db*
    "$1" serve --listen "127.0.0.1:$port" --db "$work/db.sqlite" 2>"$work/acceld.log" &
    pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
    url="http://127.0.0.1:$port"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

declare -A res
for r in $(seq "$rounds"); do
    for which in before after; do
        b=$bin; [ "$which" = before ] && b=$base_bin
        start "$b"
        res[$which,livez]+=" $(lat_us "$url/livez")"
        res[$which,lat]+=" $(lat_us "$url/run" '{"kernel": "saxpy", "n": 1024, "generate": {"seed": 1}}')"
        res[$which,saxpy]+=" $(rps -s "$work/saxpy.lua" "$url/run")"
        res[$which,dot]+=" $(rps -s "$work/dot.lua" "$url/run")"
        stop
    done
    echo "round $r done" >&2
done


# what one durable record costs by itself, on the same disk
mkdir -p "$work/cost"
"$work/record_cost" "$work/cost" 2>/dev/null

printf '%-8s %14s %16s %10s %14s %14s\n' "build" "livez p50 us" "saxpy p50 us" "vs livez" "saxpy jobs/s" "dot jobs/s"
for which in before after; do
    l=$(med "${res[$which,livez]}"); s=$(med "${res[$which,lat]}")
    x=$(med "${res[$which,saxpy]}"); d=$(med "${res[$which,dot]}")
    printf '%-8s %14.1f %16.1f %10.2f %14.0f %14.0f\n' "$which" "$l" "$s" "$(echo "$s / $l" | bc -l)" "$x" "$d"
    eval "${which}_x=$x ${which}_d=$d"
done
# shellcheck disable=SC2154
printf 'throughput change: saxpy %+.1f %%, dot %+.1f %%\n' "$(echo "($after_x / $before_x - 1) * 100" | bc -l)" \
    "$(echo "($after_d / $before_d - 1) * 100" | bc -l)"
echo "(before: $base_ref; after: $bin; medians of $rounds rounds;" \
    "latency: median of ${REQUESTS:-3000} requests on one connection (http.client), throughput wrk -t$threads -c$conns -d${duration}s; $(nproc) CPUs)"
