#!/usr/bin/env bash
# HTTP core against nginx in the same run: GET /livez and one cached JSON route (/devices when served,
# else /version), each compared with nginx serving the same bytes as a static file, measured with wrk on loopback.
# Usage: bench/http.sh build/acceld   (DURATION=5 CONNECTIONS=64 THREADS=2 ROUNDS=3 to change the load)
# Each round measures acceld then nginx; the medians over the rounds are reported, since two servers and wrk
# sharing a small machine make single runs swing by 20 % or more.
set -euo pipefail
bin=$(realpath "${1:-build/acceld}")
duration=${DURATION:-5}
conns=${CONNECTIONS:-64}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
if [ ${#need[@]} -gt 0 ]; then
    sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

work=$(mktemp -d)
cleanup() {
    if [ -n "${acceld_pid:-}" ]; then kill "$acceld_pid" 2>/dev/null || true; fi
    if [ -f "$work/nginx.pid" ]; then kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

aport=$(free_port)
"$bin" serve --listen "127.0.0.1:$aport" --db "$work/acceld.db" 2>"$work/acceld.log" &
acceld_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$aport/readyz" >/dev/null && break; sleep 0.1; done

json_path=/devices
curl -sf "http://127.0.0.1:$aport$json_path" >/dev/null || json_path=/version
mkdir -p "$work/www"
curl -sf "http://127.0.0.1:$aport/livez" >"$work/www/livez"
curl -sf "http://127.0.0.1:$aport$json_path" >"$work/www/json"

nport=$(free_port)
cat >"$work/nginx.conf" <<CONF
worker_processes $(nproc);
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server {
        listen 127.0.0.1:$nport;
        location = /livez { default_type text/plain; alias $work/www/livez; }
        location = /json  { default_type application/json; alias $work/www/json; }
    }
}
CONF
mkdir -p "$work/tmp"
"$nginx_bin" -c "$work/nginx.conf" -p "$work"
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$nport/livez" >/dev/null && break; sleep 0.1; done

rps() { wrk -t"$threads" -c"$conns" -d"${duration}s" "$1" | awk '/^Requests\/sec/ {print $2}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf '%-22s %12s %12s %8s   %s\n' "route" "acceld rps" "nginx rps" "ratio" "per-round ratios"
for pair in "/livez:/livez" "$json_path:/json"; do
    as=(); ns=(); rs=()
    for _ in $(seq "$rounds"); do
        a=$(rps "http://127.0.0.1:$aport${pair%%:*}")
        n=$(rps "http://127.0.0.1:$nport${pair##*:}")
        as+=("$a"); ns+=("$n"); rs+=("$(printf '%.2f' "$(echo "$a / $n" | bc -l)")")
    done
    a=$(median "${as[@]}"); n=$(median "${ns[@]}")
    printf '%-22s %12.0f %12.0f %8.2f   %s\n' "GET ${pair%%:*}" "$a" "$n" "$(echo "$a / $n" | bc -l)" "${rs[*]}"
done
echo "(medians of $rounds rounds of wrk -t$threads -c$conns -d${duration}s on loopback; nginx $(nginx -v 2>&1 | sed 's/.*\///'), $(nproc) workers, access_log off; acceld access log on, to a file)"
