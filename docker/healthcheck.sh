#!/bin/bash
# Container health check: GET /livez on the local listener over bash's /dev/tcp, so the image needs neither curl
# nor wget. The port comes from ACCELD_HEALTH_LISTEN when set (the health listener, which a full API connection
# table never reaches), else ACCELD_LISTEN (HOST:PORT, [V6]:PORT); exit 0 only for an HTTP 200 answer.
set -euo pipefail

name=ACCELD_LISTEN
listen="${ACCELD_LISTEN:-0.0.0.0:9470}"
if [ -n "${ACCELD_HEALTH_LISTEN:-}" ]; then
	name=ACCELD_HEALTH_LISTEN
	listen="$ACCELD_HEALTH_LISTEN"
fi
port="${listen##*:}"
case "$port" in
'' | *[!0-9]*)
	echo "healthcheck: cannot read a port from $name=$listen" >&2
	exit 1
	;;
esac

exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
status=""
IFS= read -r -t 5 status <&3 || true
exec 3<&-
case "$status" in
"HTTP/1."?" 200 "*) exit 0 ;;
*)
	echo "healthcheck: /livez answered: ${status:-nothing}" >&2
	exit 1
	;;
esac
