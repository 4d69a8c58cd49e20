#!/usr/bin/env python3
"""End to end at device speed: how close a job's total time (without queueing) comes to its kernel time.

Usage: bench/e2e.py [BINARY ...] (default build/acceld). For each binary: starts it on a free loopback port with its own
database and POCL cache, runs each job once as a warm-up, then REPS times (env, default 5), and prints per job the
medians of total_ms - queued_ms, kernel_ms, their ratio, and of the other timing members. Several binaries run in
the same sitting, one after another, per job. The jobs:
  sgemm 2048^3 and saxpy 5e7 through OpenCL on PoCL with generated inputs (goals: 1.1x and 1.5x), and a tiny
  saxpy (n=1024) through the PJRT stand-in (build/fakes/libpjrt.so on a fake NVML GPU) with its program cached.
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPS = int(os.environ.get("REPS", "5"))
JOBS = [
    ("sgemm 2048^3 opencl", {"kernel": "sgemm", "m": 2048, "n": 2048, "k": 2048, "device": "cpu:0",
                             "backend": "opencl", "generate": {"seed": 1}}),
    ("saxpy 5e7 opencl", {"kernel": "saxpy", "n": 50000000, "device": "cpu:0", "backend": "opencl",
                          "generate": {"seed": 1}}),
    ("saxpy 1024 pjrt stand-in", {"kernel": "saxpy", "n": 1024, "device": "gpu:0", "backend": "pjrt",
                                  "generate": {"seed": 1}}),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, tmp):
    port = free_port()
    # the PJRT stand-in serves one fake NVML GPU (gpu:0), as tests/http/test_pjrt.py sets it up
    fakes = os.path.join(ROOT, "build", "fakes")
    env = dict(os.environ, HOME=tmp, ACCELD_POCL_CACHE_DIR=os.path.join(ROOT, "build", "pocl-cache"),
               ACCELD_NVML_LIBRARY=os.path.join(fakes, "libnvml.so"), FAKE_NVML_COUNT="1",
               ACCELD_PJRT_PLUGINS="cuda=" + os.path.join(fakes, "libpjrt.so"), FAKE_PJRT_PLATFORM="cuda",
               FAKE_PJRT_DEVICES="1", FAKE_PJRT_KIND="NVIDIA H100 80GB HBM3", FAKE_PJRT_CC="9.0",
               FAKE_PJRT_MEMORY="85017493504")
    cmd = [binary, "serve", "--listen", f"127.0.0.1:{port}", "--db", os.path.join(tmp, "acceld.db")]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{binary} did not become ready")


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/run", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def main():
    binaries = sys.argv[1:] or [os.path.join(ROOT, "build", "acceld")]
    servers = []
    for b in binaries:
        tmp = tempfile.mkdtemp(prefix="acceld-e2e-")
        servers.append((b,) + start(b, tmp))
    try:
        for name, body in JOBS:
            for b, _, port in servers:
                doc = post(port, body)
                if doc.get("state") != "succeeded":
                    print(f"{name} [{b}]: {doc.get('state')} {doc.get('error')}")
                    continue
                rows = []
                for _ in range(REPS):
                    t = post(port, body)["timing"]
                    rows.append(t)
                total = statistics.median(t["total_ms"] - t.get("queued_ms", 0) for t in rows)
                kernel = statistics.median(t["kernel_ms"] for t in rows)
                other = {k: round(statistics.median(t.get(k, 0) for t in rows), 3)
                         for k in ("prepare_ms", "generate_ms", "transfer_ms", "transfer_bytes", "verify_ms")
                         if any(k in t for t in rows)}
                print(f"{name} [{b}]: total-queued {total:.3f} ms, kernel {kernel:.3f} ms, ratio "
                      f"{total / kernel:.3f}; medians of {REPS}: {other}")
    finally:
        for _, proc, _ in servers:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
