#!/usr/bin/env bash
# Soak: a mixed load for SECONDS with wrk and bench/soak.lua (GET /devices, /metrics, /select twice, /cost, and
# small POST /run jobs that wait: saxpy n=1024, dot n=4096), while the server's VmRSS, open fds and threads are
# sampled every SAMPLE seconds from /proc.
# The first max(10 s, 20 %) is a warm-up run of its own: caches, pools and lazily opened files (the store's pool of
# reader connections opens its SQLite files on first use) fill up, and the idle server is counted after it.
# The rest is the measured run; growth is judged from its first sample (1 s in) to its last.
# Fails (exit 1) when any answer is not 2xx or 429 (a full job queue), wrk saw a socket error, RSS grew by 5 % or
# more over the measured run, the open fds grew by more than FD_SLACK over it (under load) or from the idle count
# after warm-up to the idle count after the load, the server is not ready afterwards, or SIGTERM does not end it
# with status 0.
# Usage: bench/soak.sh build/acceld [SECONDS]   (SOAK_SECONDS=60; THREADS=2 CONNECTIONS=16 SAMPLE=5 FD_SLACK=2
#        TIMEOUT=5s for wrk's per-request timeout; ONLY="/cost /run" keeps the mix entries whose paths start so,
#        to look at endpoints one at a time)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-build/acceld}")
seconds=${2:-${SOAK_SECONDS:-60}}
threads=${THREADS:-2}
conns=${CONNECTIONS:-16}
interval=${SAMPLE:-5}
fd_slack=${FD_SLACK:-2}
timeout=${TIMEOUT:-5s}
read -ra only <<<"${ONLY:-}"
case $seconds in '' | *[!0-9]*) echo "soak.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;; esac
if [ "$seconds" -lt 30 ]; then echo "soak.sh: SECONDS must be at least 30 (10 s warm-up, 20 s measured)" >&2; exit 2; fi
warmup=$((seconds / 5 > 10 ? seconds / 5 : 10))
measured=$((seconds - warmup))

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
    sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

work=$(mktemp -d)
cleanup() {
    if [ -n "${wrk_pid:-}" ]; then kill "$wrk_pid" 2>/dev/null || true; fi
    if [ -n "${acceld_pid:-}" ]; then kill "$acceld_pid" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
url=http://127.0.0.1:$port
# the same settings as bench/http.sh: defaults, access log on, written to a file
"$bin" serve --listen "127.0.0.1:$port" --db "$work/acceld.db" 2>"$work/acceld.log" &
acceld_pid=$!
ready=0
for _ in $(seq 200); do
    if curl -sf "$url/readyz" >/dev/null; then ready=1; break; fi
    kill -0 "$acceld_pid" 2>/dev/null || break
    sleep 0.1
done
if [ "$ready" != 1 ]; then
    echo "soak.sh: acceld did not become ready; its log:" >&2
    tail -n 20 "$work/acceld.log" >&2
    exit 1
fi

# sample LABEL: appends "label elapsed_s rss_kib fds threads rss_anon_kib" for the server to $work/samples
# (seconds since the soak started), and what each fd points at (socket and pipe numbers dropped) to $work/fd-LABEL
sample() {
    local rss thr anon fds
    read -r rss thr anon < <(awk '/^VmRSS:/ {r = $2} /^Threads:/ {t = $2} /^RssAnon:/ {a = $2} END {print r, t, a}' \
        "/proc/$acceld_pid/status")
    fds=$(find "/proc/$acceld_pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
    find "/proc/$acceld_pid/fd" -mindepth 1 -maxdepth 1 -printf '%l\n' | sed 's/:\[[0-9]*\]$//' | sort >"$work/fd-$1"
    echo "$1 $(( ($(date +%s%N) - t0) / 1000000000 )) $rss $fds $thr $anon" >>"$work/samples"
}

# load LABEL SECS: wrk with soak.lua for SECS into $work/wrk-LABEL, sampled 1 s in and then every SAMPLE seconds
# from its start (strictly before its end)
load() {
    local label=$1 secs=$2 start tick wait_ns rc=0
    start=$(date +%s%N)
    wrk -t"$threads" -c"$conns" -d"${secs}s" --timeout "$timeout" -s "$here/soak.lua" "$url" "${only[@]}" \
        >"$work/wrk-$label" 2>&1 &
    wrk_pid=$!
    tick=1
    while [ "$tick" -lt "$secs" ]; do
        wait_ns=$((start + tick * 1000000000 - $(date +%s%N)))
        if [ "$wait_ns" -gt 0 ]; then
            sleep "$(printf '%d.%09d' $((wait_ns / 1000000000)) $((wait_ns % 1000000000)))"
        fi
        kill -0 "$wrk_pid" 2>/dev/null || break
        sample "$label"
        tick=$((tick / interval * interval + interval))
    done
    wait "$wrk_pid" || rc=$?
    wrk_pid=
    if [ "$rc" != 0 ]; then fail+=("wrk ($label) exited with status $rc"); fi
    # let the closed connections go before an idle count
    sleep 2
}

# http_counts FILE: "METHOD HANDLER CODE N" for each acceld_http_requests_total series and "time HANDLER SECONDS N"
# for each request duration histogram in a /metrics answer
http_counts() {
    local series='^acceld_http_requests_total{handler="\([^"]*\)",method="\([^"]*\)",code="\([0-9]*\)"} \([0-9]*\)$'
    sed -n "s/$series/\\2 \\1 \\3 \\4/p" "$1"
    awk '/^acceld_http_request_duration_seconds_(sum|count)\{/ {
             split($1, p, "\""); if ($1 ~ /_sum/) s[p[2]] = $2; else n[p[2]] = $2
         }
         END {for (h in n) print "time", h, s[h], n[h]}' "$1"
}

fail=()
curl -sf "$url/metrics" >"$work/metrics-before"
t0=$(date +%s%N)
sample idle-start
load warm-up "$warmup"
sample idle-warm
curl -sf "$url/metrics" >"$work/metrics-warm" || : >"$work/metrics-warm"
load load "$measured"
sample idle-end

# --- answers, as wrk saw them (both runs)
wrk_out=("$work/wrk-warm-up" "$work/wrk-load")
for f in "${wrk_out[@]}"; do
    if ! grep -q '^soak total ' "$f"; then
        cat "$f" >&2
        echo "soak.sh: no summary from wrk" >&2
        exit 1
    fi
done
# total FILE...: "requests seconds" summed over wrk outputs
total() {
    sed -n 's/^soak total requests=\([0-9]*\) duration_us=\([0-9]*\).*/\1 \2/p' "$@" \
        | awk '{n += $1; us += $2} END {printf "%d %.1f\n", n, us / 1e6}'
}
read -r all_n all_s < <(total "${wrk_out[@]}")
read -r warm_n warm_s < <(total "$work/wrk-warm-up")
read -r load_n load_s < <(total "$work/wrk-load")
rate() { awk -v n="$1" -v s="$2" 'BEGIN {printf "%.0f", n / s}'; }
statuses=$(awk '$1 == "soak" && $2 == "status" {n[$3] += $4} END {for (s in n) print s ":" n[s]}' "${wrk_out[@]}" \
    | sort -n | tr '\n' ' ')
bad=$(awk '$1 == "soak" && $2 == "status" && !($3 >= 200 && $3 < 300) && $3 != 429 {n[$3] += $4}
           END {for (s in n) printf "%s:%d ", s, n[s]}' "${wrk_out[@]}")
ok2xx=$(awk '$1 == "soak" && $2 == "status" && $3 >= 200 && $3 < 300 {n += $4} END {print n + 0}' "${wrk_out[@]}")
if [ -n "$bad" ]; then fail+=("answers other than 2xx/429: $bad"); fi
if [ "$ok2xx" -eq 0 ]; then fail+=("no 2xx answer at all"); fi
errors=""
for kind in connect read write timeout; do
    n=$(sed -n "s/^soak errors.*$kind=\([0-9]*\).*/\1/p" "${wrk_out[@]}" | awk '{n += $1} END {print n + 0}')
    errors+="$kind=$n "
    if [ "$n" != 0 ]; then fail+=("wrk $kind errors: $n"); fi
done

# --- server afterwards: its own count of answers by route and status over both runs, and still ready
curl -sf "$url/metrics" >"$work/metrics-after" || : >"$work/metrics-after"
awk '$1 == "time" {next}
     NR == FNR {b[$1 " " $2 " " $3] = $4; next}
     {n = $4 - b[$1 " " $2 " " $3]; if (n > 0) print $1, $2, $3, n}' \
    <(http_counts "$work/metrics-before") <(http_counts "$work/metrics-after") | sort -k2,2 -k1,1 -k3,3n >"$work/server"
# mean_ms BEFORE AFTER: "HANDLER MS" for each route's mean time between two /metrics answers
mean_ms() {
    awk 'NR == FNR {if ($1 == "time") {s[$2] = $3; n[$2] = $4}; next}
         $1 == "time" {d = $4 - n[$2]; if (d > 0) printf "%s %.3f\n", $2, ($3 - s[$2]) * 1000 / d}' \
        <(http_counts "$1") <(http_counts "$2") | sort | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}'
}
# scalar_delta NAME: the growth of a metric (summed over its series) over both runs
scalar_delta() {
    awk -v m="$1" '{k = $1; sub(/\{.*/, "", k)} k == m {if (FILENAME ~ /before$/) b += $NF; else a += $NF}
                   END {printf "%d", a - b}' "$work/metrics-before" "$work/metrics-after"
}
server_bad=$(awk '!($3 >= 200 && $3 < 300) && $3 != 429 {printf "%s %s %s:%d ", $1, $2, $3, $4}' "$work/server")
if [ -n "$server_bad" ]; then fail+=("the server counted answers other than 2xx/429: $server_bad"); fi
ready_after=$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz" || true)
if [ "$ready_after" != 200 ]; then fail+=("GET /readyz after the load answered $ready_after"); fi

# --- memory and fds
at() { awk -v l="$1" '$1 == l {print $2, $3, $4, $5}' "$work/samples"; }
read -r first_t first_rss first_fds first_thr < <(at load | head -n 1) || true
read -r last_t last_rss last_fds last_thr < <(at load | tail -n 1) || true
if [ -z "${last_rss:-}" ]; then
    echo "soak.sh: no samples under load; wrk said:" >&2
    cat "$work/wrk-load" >&2
    exit 1
fi
max_rss=$(at load | awk '{if ($2 > m) m = $2} END {print m}')
read -r _ idle0_rss idle0_fds _ < <(at idle-start)
read -r _ idlew_rss idlew_fds idlew_thr < <(at idle-warm)
read -r _ idle1_rss idle1_fds idle1_thr < <(at idle-end)
growth=$(awk -v a="$first_rss" -v b="$last_rss" 'BEGIN {printf "%.2f", (b - a) * 100 / a}')
max_growth=$(awk -v a="$first_rss" -v b="$max_rss" 'BEGIN {printf "%.2f", (b - a) * 100 / a}')
if awk -v g="$growth" 'BEGIN {exit !(g >= 5)}'; then
    fail+=("RSS grew ${growth} % over the measured run (limit < 5 %)")
fi
if [ "$last_fds" -gt $((first_fds + fd_slack)) ]; then
    fail+=("open fds under load grew from $first_fds to $last_fds over the measured run")
fi
if [ "$idle1_fds" -gt $((idlew_fds + fd_slack)) ]; then
    fail+=("open fds when idle grew from $idlew_fds after warm-up to $idle1_fds after the load")
fi

# --- SIGTERM ends it cleanly
kill -TERM "$acceld_pid"
exit_rc=0
for _ in $(seq 300); do kill -0 "$acceld_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$acceld_pid" 2>/dev/null; then
    fail+=("acceld still running 30 s after SIGTERM")
else
    wait "$acceld_pid" || exit_rc=$?
    acceld_pid=
    if [ "$exit_rc" != 0 ]; then fail+=("acceld exited with status $exit_rc after SIGTERM"); fi
fi
log_errors=$(grep -c '"level":"error"' "$work/acceld.log" || true)

# --- summary
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
gained() { comm -13 "$work/fd-$1" "$work/fd-$2" | sed "s|^$work/||" | tr '\n' ' '; }
echo "soak: $(basename "$bin"), ${seconds} s (${warmup} s warm-up run + ${measured} s measured run)," \
    "wrk -t$threads -c$conns --timeout $timeout, $(nproc) CPUs," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "request mix (rotating per connection; sent over both runs):"
sed -n 's/^soak sent \([0-9]*\) \(.*\)$/\2 \1/p' "${wrk_out[@]}" \
    | awk '{n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n; if (!($0 in o)) o[$0] = ++k}
           END {for (r in o) l[o[r]] = r; for (i = 1; i <= k; i++) printf "  %s: %d\n", l[i], s[l[i]]}'
printf '%-42s %s\n' \
    "requests answered" "$all_n in $all_s s = $(rate "$all_n" "$all_s") req/s (warm-up $warm_n in $warm_s s," \
    "" "measured $load_n in $load_s s = $(rate "$load_n" "$load_s") req/s)" \
    "status counts (wrk)" "$statuses" \
    "latency, measured run (wrk)" "$(sed -n 's/^soak latency_us //p' "$work/wrk-load") us" \
    "socket errors (wrk)" "$errors" \
    "server answers by route and status" "$(awk '{printf "%s%s %s %s:%d", (NR > 1 ? ", " : ""), $1, $2, $3, $4}' \
        "$work/server")" \
    "server mean time by route, warm-up (ms)" "$(mean_ms "$work/metrics-before" "$work/metrics-warm")" \
    "server mean time by route, measured (ms)" "$(mean_ms "$work/metrics-warm" "$work/metrics-after")" \
    "jobs run / history rows written (server)" \
    "$(scalar_delta acceld_jobs_total) / $(scalar_delta acceld_store_rows_written_total)" \
    "RSS idle: start / after warm-up / end" "$(mib "$idle0_rss") / $(mib "$idlew_rss") / $(mib "$idle1_rss") MiB" \
    "RSS measured run: first / max / last" \
    "$(mib "$first_rss") / $(mib "$max_rss") / $(mib "$last_rss") MiB (at ${first_t} s and ${last_t} s)" \
    "RSS growth over the measured run" "${growth} % (max ${max_growth} %; limit < 5 %)" \
    "open fds under load: first / last" "$first_fds / $last_fds (limit: last <= first + $fd_slack)" \
    "open fds idle: start / after warm-up / end" \
    "$idle0_fds / $idlew_fds / $idle1_fds (limit: end <= after warm-up + $fd_slack)" \
    "fds gained in warm-up (idle)" "$(gained idle-start idle-warm)" \
    "fds gained after warm-up (idle)" "$(gained idle-warm idle-end)" \
    "threads idle / load / idle" "$idlew_thr / $first_thr..$last_thr / $idle1_thr" \
    "GET /readyz afterwards" "$ready_after" \
    "exit status after SIGTERM" "$exit_rc" \
    "error lines in the server log" "$log_errors"
echo "samples (elapsed s, VmRSS KiB and its anonymous part, fds, threads):"
awk '{printf "  %-10s %4d s %8d KiB (anon %8d KiB) %4d fds %3d threads\n", $1, $2, $3, $6, $4, $5}' "$work/samples"
if [ ${#fail[@]} -gt 0 ]; then
    echo "the server log's last lines other than access lines:"
    grep -v '"msg":"request"' "$work/acceld.log" | tail -n 40 | cut -c1-400
    printf 'soak: FAIL: %s\n' "${fail[@]}"
    exit 1
fi
echo "soak: PASS"
