#!/usr/bin/env bash
# CPU cost of a running acceld with nothing asked of it, at the default intervals (sampler every 10 s, telemetry
# every 5 s, topology every 5 min): the process's user+system time over 60 s, as a share of one core. This bounds
# the sampler's cost from above. Usage: bench/idle_cpu.sh build/acceld   (SECONDS_IDLE=60)
set -euo pipefail
bin=$(realpath "${1:-build/acceld}")
secs=${SECONDS_IDLE:-60}
work=$(mktemp -d)
"$bin" serve --listen 127.0.0.1:0 --db "$work/acceld.db" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 3
t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
sleep "$secs"
t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
tck=$(getconf CLK_TCK)
printf 'idle acceld: %.2f CPU seconds over %d s = %.3f %% of one core\n' \
    "$(echo "($t1 - $t0) / $tck" | bc -l)" "$secs" "$(echo "($t1 - $t0) / $tck / $secs * 100" | bc -l)"
