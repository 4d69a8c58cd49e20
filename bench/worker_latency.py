#!/usr/bin/env python3
"""Median end-to-end latency of a tiny job over HTTP, one keep-alive connection, one request at a time: saxpy n=1024
on cpu:0 (the native backend, in the daemon) and on tpu:0 through the stand-in PJRT plugin on the TPU v6e-8 fixture
host (cached program: PJRT in a worker process since the worker model, in the daemon before). Builds are measured
in alternating rounds in one sitting, so a noisy moment favours none.
Usage: bench/worker_latency.py BEFORE_BIN BEFORE_FAKE AFTER_BIN AFTER_FAKE   (N=2000 ROUNDS=3)"""
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "tpu-v6e-8")
N = int(os.environ.get("N", "2000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(binary, fake):
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="acceld-bench-")
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "LC_ALL": "C.UTF-8", "TZ": "UTC",
           "ACCELD_SYSFS_ROOT": os.path.join(FIX, "sys"), "ACCELD_DEV_ROOT": os.path.join(FIX, "dev"),
           "ACCELD_PJRT_PLUGINS": "tpu=" + fake, "ACCELD_NVML_LIBRARY": "/nonexistent.so",
           "FAKE_PJRT_PLATFORM": "tpu", "FAKE_PJRT_DEVICES": "8", "ACCELD_LOG_LEVEL": "warn"}
    p = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--db", os.path.join(tmp, "a.db")],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                c.request("GET", "/readyz")
                r = c.getresponse()
                r.read()
                if r.status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("acceld did not get ready")
            time.sleep(0.1)
        out = {}
        for dev in ("cpu:0", "tpu:0"):
            body = json.dumps({"kernel": "saxpy", "n": 1024, "device": dev})
            hdr = {"Content-Type": "application/json"}
            times = []
            for i in range(N + N // 10):
                t0 = time.perf_counter()
                c.request("POST", "/run", body=body, headers=hdr)
                r = c.getresponse()
                data = r.read()
                t1 = time.perf_counter()
                if r.status != 200:
                    raise RuntimeError(f"{dev}: {r.status} {data[:300]}")
                if i >= N // 10:
                    times.append((t1 - t0) * 1e6)
            out[dev] = statistics.median(times)
        return out
    finally:
        p.terminate()
        p.wait()


def main():
    before_bin, before_fake, after_bin, after_fake = sys.argv[1:5]
    res = {"before": [], "after": []}
    for _ in range(ROUNDS):
        res["before"].append(measure(before_bin, before_fake))
        res["after"].append(measure(after_bin, after_fake))
    for dev in ("cpu:0", "tpu:0"):
        b = statistics.median(r[dev] for r in res["before"])
        a = statistics.median(r[dev] for r in res["after"])
        print(f"{dev} before {b:.0f} us after {a:.0f} us ({a - b:+.0f} us); rounds before "
              f"{[round(r[dev]) for r in res['before']]} after {[round(r[dev]) for r in res['after']]}")


if __name__ == "__main__":
    main()
