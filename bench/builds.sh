#!/usr/bin/env bash
# Two builds of acceld side by side in one sitting: the HTTP path, the executor's tiny job and the history's reads,
# each build serving the same data and answering the same requests, the builds alternating round by round so that a
# noisy moment does not favour one. Used when a change moves code and should change no figure (a refactor).
#   HTTP      wrk -t2 -c64 -dDURATION on GET /livez and GET /devices (req/s)
#   executor  median latency of POST /run saxpy n=1024 on cpu:0, one keep-alive connection, LATENCY_N requests
#   store     median latency of GET /history (1000 raw points) and GET /cost (by day) over a history of DAYS days of
#             1 s samples for DEVICES devices, filled once by the BEFORE build's writer (the AFTER build migrates a
#             copy of it, as an upgrade does)
# Usage: bench/builds.sh BEFORE_BIN AFTER_BIN   (ROUNDS=3 DURATION=3 LATENCY_N=500 DAYS=2 DEVICES=4)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
before=$(realpath "$1")
after=$(realpath "$2")
rounds=${ROUNDS:-3}
duration=${DURATION:-3}
latency_n=${LATENCY_N:-500}
days=${DAYS:-2}
devices=${DEVICES:-4}

command -v wrk >/dev/null || {
    sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq wrk >/dev/null
}
work=$(mktemp -d /tmp/acceld-bench-builds-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

build_on_lib "$work/store_fill" store_fill.c "$(dirname "$before")"
"$work/store_fill" "$work/filled.db" "$days" "$devices" >/dev/null

# serve BIN NAME: starts BIN on a copy of the filled history; sets pid and port
serve() {
    cp "$work/filled.db" "$work/$2.db"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    ACCELD_NVML_LIBRARY=/nonexistent ACCELD_PJRT_PLUGINS=none "$1" serve --listen "127.0.0.1:$port" \
        --db "$work/$2.db" --sample-interval 1h --access-log false --log-level warn 2>>"$work/$2.log" &
    pid=$!
    for _ in $(seq 100); do
        curl -sf "localhost:$port/readyz" >/dev/null && return 0
        sleep 0.1
    done
    echo "$2 did not become ready" >&2
    exit 1
}

for _ in $(seq "$rounds"); do
    for name in before after; do
        bin=$before
        [ "$name" = after ] && bin=$after
        serve "$bin" "$name"
        for route in livez devices; do
            rps=$(wrk -t2 -c64 -d"${duration}s" "http://127.0.0.1:$port/$route" | awk '/Requests\/sec/ {print $2}')
            echo "$name $route $rps" >>"$work/http.txt"
        done
        python3 - "$port" "$latency_n" "$name" >>"$work/latency.txt" <<'PY'
import datetime, http.client, json, statistics, sys, time
port, n, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def median_ms(method, path, body, count):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    ts = []
    for i in range(count + count // 10):
        t = time.perf_counter()
        c.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        r = c.getresponse(); r.read()
        assert r.status == 200, (path, r.status)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts[count // 10:]) * 1000
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
rfc = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
job = json.dumps({"kernel": "saxpy", "n": 1024, "device": "cpu:0"})
print(name, "tiny_job", median_ms("POST", "/run", job, n))
print(name, "history_1000_raw", median_ms("GET", f"/history?device=gpu:0&start_time="
      f"{rfc(now - datetime.timedelta(seconds=1000))}&end_time={rfc(now)}&step=1", None, 50))
print(name, "cost_by_day", median_ms("GET", f"/cost?start_time={rfc(now - datetime.timedelta(days=1))}"
      f"&end_time={rfc(now)}&group_by=day", None, 50))
PY
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        pid=
    done
done

python3 - "$work/http.txt" "$work/latency.txt" "$rounds" <<'PY'
import statistics, sys
rows = {}
for path in sys.argv[1:3]:
    for line in open(path):
        name, what, value = line.split()
        rows.setdefault(what, {}).setdefault(name, []).append(float(value))
print(f"| measure ({sys.argv[3]} rounds, median) | before | after | after / before |")
print("| --- | --- | --- | --- |")
units = {"livez": "GET /livez, req/s", "devices": "GET /devices, req/s", "tiny_job": "POST /run saxpy 1024, ms",
         "history_1000_raw": "GET /history 1000 raw points, ms", "cost_by_day": "GET /cost by day, ms"}
for what in ("livez", "devices", "tiny_job", "history_1000_raw", "cost_by_day"):
    b, a = statistics.median(rows[what]["before"]), statistics.median(rows[what]["after"])
    spread = lambda v: f"{min(v):.4g}-{max(v):.4g}"
    print(f"| {units[what]} | {b:.4g} ({spread(rows[what]['before'])}) | {a:.4g} ({spread(rows[what]['after'])}) "
          f"| {a / b:.2f} |")
PY
