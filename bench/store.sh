#!/usr/bin/env bash
# History and cost: builds a database with a month of 1 s samples for 8 devices (bench/store_fill.c, linked with
# libacceld.a), then times GET /cost (30 days, 8 devices, by day) and GET /history (1,000 points) against acceld,
# beside the sqlite3 CLI running the same aggregations on the same file. Medians of 50 requests / 20 queries.
# Usage: bench/store.sh [build/acceld]     (DAYS=30 DEVICES=8 override the data set)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/acceld}")
build=$(dirname "$bin")
days=${DAYS:-30}
devices=${DEVICES:-8}
work=$(mktemp -d /tmp/acceld-bench-store-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

build_on_lib "$work/store_fill" store_fill.c "$build"
t0=$(date +%s.%N)
"$work/store_fill" "$work/month.db" "$days" "$devices"
t1=$(date +%s.%N)
size=$(stat -c %s "$work/month.db")
echo "fill: $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s, file $(echo "scale=1; $size / 1048576" | bc) MiB"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --db "$work/month.db" --sample-interval 1h --access-log false \
    --log-level warn 2>"$work/log" &
pid=$!
python3 - "$port" "$days" "$work/month.db" <<'PY'
import datetime, http.client, json, sqlite3, statistics, subprocess, sys, time
port, days, db = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
deadline = time.time() + 30
while True:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30); c.request("GET", "/readyz"); r = c.getresponse(); r.read()
        if r.status == 200: break
    except OSError:
        pass
    if time.time() > deadline: sys.exit("acceld did not become ready")
    time.sleep(0.1)
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
def rfc(t): return t.strftime("%Y-%m-%dT%H:%M:%SZ")
start30 = now - datetime.timedelta(days=days) + datetime.timedelta(hours=1)
queries = {
    "cost_30d_by_day": f"/cost?start_time={rfc(start30)}&end_time={rfc(now)}&group_by=day",
    "history_1000_raw": f"/history?device=gpu:0&start_time={rfc(now - datetime.timedelta(seconds=1000))}&end_time={rfc(now)}&step=1",
    "history_1000_hour": f"/history?device=gpu:0&start_time={rfc(now - datetime.timedelta(seconds=1000*3600))}&end_time={rfc(now)}&step=1h",
}
res = {}
for name, path in queries.items():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    ts = []
    for i in range(55):
        t = time.perf_counter(); c.request("GET", path); r = c.getresponse(); body = r.read(); ts.append(time.perf_counter() - t)
        assert r.status == 200, (path, r.status, body[:300])
    doc = json.loads(body)
    if name.startswith("history"):
        info = f"{len(doc['series'][0]['points'])} points, {doc['resolution']}"
    else:
        info = f"{len(doc['devices'])} devices, {len(doc['totals']['groups'])} groups"
    res[name] = (statistics.median(ts[5:]) * 1000, info)
ms = lambda t: int(t.timestamp() * 1000)
key = sqlite3.connect(db).execute("SELECT key FROM devices WHERE id = 'gpu:0'").fetchone()[0]
s30, n = ms(start30), ms(now)
sql = {
    "cost_30d_by_day": f"SELECT device, (ts - {s30}) / 86400000, total(present_ms), total(busy_ms) FROM rollup_hour WHERE device IN (SELECT key FROM devices) AND ts >= {s30} AND ts < {n} GROUP BY 1, 2;",
    "history_1000_raw": f"SELECT (ts - {n - 1000000}) / 1000, total(util * dt), total(dt), max(util) FROM samples WHERE device = {key} AND ts >= {n - 1000000} AND ts < {n} GROUP BY 1;",
    "history_1000_hour": f"SELECT (ts - {n - 3600000000}) / 3600000, total(busy_ms), total(util_ms), max(util_max) FROM rollup_hour WHERE device = {key} AND ts >= {n - 3600000000} AND ts < {n} GROUP BY 1;",
}
def cli(script):
    t = time.perf_counter()
    subprocess.run(["sqlite3", db], input=script, stdout=subprocess.DEVNULL, check=True, text=True)
    return time.perf_counter() - t
for name, q in sql.items():
    # the CLI's own timer has a 1 ms resolution: time 101 runs against 1 run in one process and take the difference
    per = [(cli(q * 101) - cli(q)) / 100 * 1000 for _ in range(5)]
    print(f"{name:18s} acceld median {res[name][0]:6.2f} ms ({res[name][1]}); sqlite3 CLI, same aggregation: {statistics.median(per):6.2f} ms")
PY
