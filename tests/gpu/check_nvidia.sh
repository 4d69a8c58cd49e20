#!/bin/sh
# Checks what acceld reports about NVIDIA GPUs against nvidia-smi on a host that has them.
#
#   tests/gpu/check_nvidia.sh [DIR]
#
# DIR is a bundle made by bundle.sh (DIR/acceld and DIR/lib/) or the repository root (DIR/build/acceld); it
# defaults to the current folder. Exits 0 when every GPU nvidia-smi lists is reported by `acceld report --json` and
# by GET /devices with the same name, UUID, memory and PCI bus id, and the OpenCL probe saw each of them; non-zero
# on any mismatch. Set ACCELD_CHECK_OPENCL=0 to skip the OpenCL check (hosts without the NVIDIA OpenCL ICD).
set -eu

DIR=${1:-.}
if [ -x "$DIR/acceld" ]; then
	BIN=$DIR/acceld
elif [ -x "$DIR/build/acceld" ]; then
	BIN=$DIR/build/acceld
else
	echo "check_nvidia: no acceld in $DIR or $DIR/build" >&2
	exit 2
fi
if [ -d "$DIR/lib" ]; then
	LD_LIBRARY_PATH="$DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export LD_LIBRARY_PATH
fi
command -v nvidia-smi >/dev/null 2>&1 || { echo "check_nvidia: nvidia-smi not found" >&2; exit 2; }
command -v python3 >/dev/null 2>&1 || { echo "check_nvidia: python3 not found" >&2; exit 2; }

WORK=$(mktemp -d)
PID=
cleanup() {
	if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# nvidia-smi ignores CUDA_VISIBLE_DEVICES, so acceld must see every GPU too
unset CUDA_VISIBLE_DEVICES
nvidia-smi --query-gpu=name,uuid,memory.total,pci.bus_id --format=csv,noheader,nounits >"$WORK/smi.csv"
echo "nvidia-smi:"
sed 's/^/  /' "$WORK/smi.csv"

"$BIN" report --json >"$WORK/report.json" 2>"$WORK/report.log" || {
	echo "check_nvidia: acceld report --json failed:" >&2
	cat "$WORK/report.log" >&2
	exit 1
}
"$BIN" report --verbose >"$WORK/report.txt" 2>&1 || true
echo "acceld report --verbose:"
sed 's/^/  /' "$WORK/report.txt"

# the same through HTTP on a free loopback port
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" serve --listen "127.0.0.1:$PORT" --db "$WORK/acceld.db" >"$WORK/serve.log" 2>&1 &
PID=$!

python3 - "$WORK" "$PORT" "${ACCELD_CHECK_OPENCL:-1}" <<'PY'
import json, sys, time, urllib.request

work, port, want_opencl = sys.argv[1], int(sys.argv[2]), sys.argv[3] != "0"
failures = []

def norm_bus(text):
    dom, bus, rest = text.strip().lower().split(":")
    return "%04x:%s:%s" % (int(dom, 16), bus, rest)

smi = []
for line in open(f"{work}/smi.csv"):
    if line.strip():
        name, uuid, mib, bus = [f.strip() for f in line.split(",")]
        smi.append({"name": name, "uuid": uuid, "mib": int(mib), "bus": norm_bus(bus)})

def check(label, doc):
    gpus = [d for d in doc.get("devices", []) if d.get("vendor") == "NVIDIA" and d.get("type") == "gpu"]
    if len(gpus) != len(smi):
        failures.append(f"{label}: {len(gpus)} NVIDIA GPUs, nvidia-smi lists {len(smi)}")
    for s in smi:
        d = next((g for g in gpus if g.get("uuid") == s["uuid"]), None)
        if d is None:
            failures.append(f"{label}: {s['uuid']} ({s['name']}) missing")
            continue
        if d.get("model") != s["name"]:
            failures.append(f"{label}: {s['uuid']} model {d.get('model')!r}, nvidia-smi {s['name']!r}")
        if d.get("pci_bus_id") != s["bus"]:
            failures.append(f"{label}: {s['uuid']} pci_bus_id {d.get('pci_bus_id')!r}, nvidia-smi {s['bus']!r}")
        total = d.get("memory", {}).get("total_bytes", 0) // (1024 * 1024)
        if abs(total - s["mib"]) > 1:
            failures.append(f"{label}: {s['uuid']} memory {total} MiB, nvidia-smi {s['mib']} MiB")
        if "nvml" not in d.get("seen_by", []):
            failures.append(f"{label}: {s['uuid']} not seen by NVML")
        if want_opencl and "opencl" not in d.get("seen_by", []):
            failures.append(f"{label}: {s['uuid']} not seen by the OpenCL probe (not merged by PCI bus id?)")
    for p in doc.get("probes", []):
        if p.get("name") in ("nvml", "opencl") and not p.get("ok", True):
            failures.append(f"{label}: probe {p.get('name')} failed: {p.get('why')}")
    print(f"{label}: {len(gpus)} NVIDIA GPUs")

check("report --json", json.load(open(f"{work}/report.json")))

deadline = time.monotonic() + 20
body = None
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/devices", timeout=5) as r:
            body = json.load(r)
            break
    except OSError:
        time.sleep(0.2)
if body is None:
    failures.append("GET /devices: the server did not answer (see serve.log)")
    print(open(f"{work}/serve.log").read(), file=sys.stderr)
else:
    check("GET /devices", body)

for f in failures:
    print("MISMATCH " + f)
print("check_nvidia: " + ("FAILED" if failures else "ok"))
sys.exit(1 if failures else 0)
PY
