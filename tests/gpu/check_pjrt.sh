#!/bin/sh
# The PJRT backend on a real NVIDIA GPU with JAX's CUDA plugin (jax-cuda13-pjrt): every kernel on gpu:0 through
# `pjrt`, checked against numpy; sgemm 8192^3 at highest and tf32 beside jax.numpy.matmul at the same precision;
# saxpy 2^28 beside the device's copy bandwidth (measured with JAX); a cached small job against the same job on
# cpu:0. Prints Markdown rows for tests/gpu/README.md ("Runs") and bench/REPORT.md.
#
#   tests/gpu/check_pjrt.sh [DIR]      DIR holds acceld (and lib/), as bundle.sh makes it; default: the checkout
#
# Needs python3 with jax and the CUDA plugin installed (the plugin is found the way acceld finds it: below the
# folder that holds the interpreter's site-packages). Exits 0 when every check passes and the goals are met, 1 when
# one is not, 2 when it cannot run.
set -eu

DIR=${1:-.}
BIN=$DIR/acceld
[ -x "$BIN" ] || BIN=$DIR/build/acceld
[ -x "$BIN" ] || { echo "check_pjrt: no acceld in $DIR" >&2; exit 2; }
[ -d "$DIR/lib" ] && export LD_LIBRARY_PATH="$DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
command -v python3 >/dev/null || { echo "check_pjrt: python3 is needed" >&2; exit 2; }
python3 -c 'import jax, numpy' 2>/dev/null || { echo "check_pjrt: python3 lacks jax or numpy" >&2; exit 2; }

# the folder whose python3.*/site-packages holds jax_plugins: acceld's search finds the plugin below it
LIBDIR=$(python3 -c 'import os, sysconfig; print(os.path.dirname(os.path.dirname(sysconfig.get_paths()["purelib"])))')
TMP=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$TMP"' EXIT INT TERM
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
env -u ACCELD_PJRT_PLUGINS ACCELD_PJRT_SEARCH="$LIBDIR" "$BIN" serve --listen "127.0.0.1:$PORT" --db "$TMP/acceld.db" \
	--log-level warn --exec-max-timeout 10m --exec-max-elements 1073741824 2>"$TMP/acceld.log" &
PID=$!

rc=0
python3 - "$PORT" "$TMP/acceld.log" <<'EOF' || rc=$?
import json, statistics, sys, time, urllib.error, urllib.request

import jax
import jax.numpy as jnp
import numpy as np

port, log = int(sys.argv[1]), sys.argv[2]
base = f"http://127.0.0.1:{port}"


def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=900) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


for _ in range(200):
    try:
        with urllib.request.urlopen(base + "/readyz", timeout=5) as r:
            if r.status == 200:
                break
    except OSError:
        pass
    time.sleep(0.1)
else:
    print("check_pjrt: acceld did not start:", open(log).read()[-2000:])
    sys.exit(2)

failed = []
gpu = call("GET", "/devices/gpu:0")[1]
print("gpu:0:", gpu.get("model"), "pjrt:", json.dumps(gpu.get("pjrt")))
if not gpu.get("pjrt", {}).get("usable") or not gpu.get("executable"):
    print("check_pjrt: gpu:0 has no usable PJRT plugin")
    sys.exit(2)

# every kernel, inline inputs, against numpy
rng = np.random.default_rng(1)
x, y = rng.standard_normal(4099, dtype=np.float32), rng.standard_normal(4099, dtype=np.float32)
a, b = rng.standard_normal((65, 33), dtype=np.float32), rng.standard_normal((33, 47), dtype=np.float32)
m = rng.standard_normal((9, 301), dtype=np.float32)
soft = np.exp(m - m.max(1, keepdims=True))
cases = {
    "saxpy": ({"inputs": {"x": x.tolist(), "y": y.tolist()}, "alpha": 1.5}, 1.5 * x + y),
    "triad": ({"inputs": {"b": x.tolist(), "c": y.tolist()}, "s": -2.0}, x - 2.0 * y),
    "dot": ({"inputs": {"x": x.tolist(), "y": y.tolist()}}, np.float32(np.dot(x.astype(np.float64), y))),
    "sgemm": ({"inputs": {"a": a.tolist(), "b": b.tolist()}}, a.astype(np.float64) @ b),
    "softmax": ({"inputs": {"x": m.tolist()}}, soft / soft.sum(1, keepdims=True)),
}
for kernel, (body, want) in cases.items():
    status, doc = call("POST", "/run", dict(body, kernel=kernel, device="gpu:0", backend="pjrt", verify=True,
                                            **{"return": "full"}))
    got = np.ravel(np.array(doc.get("result", {}).get("output", np.nan), dtype=np.float64))
    ok = status == 200 and doc.get("verified") and got.shape == np.ravel(want).shape and np.allclose(got, np.ravel(want), rtol=1e-4,
                                                                                   atol=1e-4)
    detail = (doc.get("error") or {}).get("detail", "")
    print(f"{kernel}: {'ok' if ok else 'FAILED'} (status {status}, verified {doc.get('verified')}) {detail}")
    if not ok:
        failed.append(kernel)


def best(f, reps=5):
    f()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


rows = []


def guarded(name, fn):
    """Runs one measurement; an unexpected answer fails it without stopping the others."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the script
        print(f"{name}: FAILED ({type(e).__name__}: {e})")
        failed.append(name)


def runs(body, count):
    docs = []
    for _ in range(count):
        status, doc = call("POST", "/run", body)
        if status != 200:
            raise RuntimeError(f"status {status}: {json.dumps(doc)[:600]}")
        print(f"  {body['kernel']} {doc.get('precision', '')}: timing {json.dumps(doc.get('timing'))}")
        docs.append(doc)
    return docs


def end_to_end(docs):
    """The best run's total time without queueing over its kernel time."""
    return min(d["timing"]["total_ms"] / d["timing"]["kernel_ms"] for d in docs)


# sgemm 8192^3 at highest and tf32 beside jax.numpy.matmul at the same precision
n = 8192


def sgemm(precision, jaxp):
    A = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    B = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
    mm = jax.jit(lambda p, q: jnp.matmul(p, q, precision=jaxp))
    tj = best(lambda: mm(A, B).block_until_ready())
    jax_tf = 2 * n ** 3 / tj / 1e12
    docs = runs({"kernel": "sgemm", "m": n, "n": n, "k": n, "device": "gpu:0", "backend": "pjrt",
                 "precision": precision, "timeout_ms": 600000, "generate": {"seed": 1}, "verify": True}, 3)
    k_ms = min(d["timing"]["kernel_ms"] for d in docs)
    e2e_ms = min(d["timing"]["total_ms"] for d in docs)
    ours = 2 * n ** 3 / (k_ms / 1e3) / 1e12
    ratio = ours / jax_tf
    rows.append(f"| sgemm {n}^3 {precision} | {ours:.1f} TFLOP/s kernel ({e2e_ms:.0f} ms end to end) | "
                f"jnp.matmul {jax_tf:.1f} TFLOP/s | {ratio:.2f}x (goal >= 0.9x) |")
    e2e = end_to_end(docs)
    rows.append(f"| sgemm {n}^3 {precision}, generated, end to end | {e2e:.2f}x of the kernel time | | "
                f"(goal <= 1.25x) |")
    if docs[-1].get("precision") != precision or ratio < 0.9 or not all(d.get("verified") for d in docs):
        failed.append(f"sgemm {precision}")
    if e2e > 1.25:
        failed.append(f"sgemm {precision} end to end")


guarded("sgemm highest", lambda: sgemm("highest", "highest"))
guarded("sgemm tf32", lambda: sgemm("tf32", "tensorfloat32"))


# saxpy 2^28 beside the device's copy bandwidth (read + write, as saxpy counts its traffic) and JAX's own saxpy
def saxpy():
    N = 1 << 28
    X = jnp.ones(N, jnp.float32)
    Y = jnp.ones(N, jnp.float32)
    cp = jax.jit(lambda v: v * 2.0)
    copy_gbs = 8 * N / best(lambda: cp(X).block_until_ready()) / 1e9
    sx = jax.jit(lambda p, q: 1.5 * p + q)
    jax_gbs = 12 * N / best(lambda: sx(X, Y).block_until_ready()) / 1e9
    del X, Y
    docs = runs({"kernel": "saxpy", "n": N, "device": "gpu:0", "backend": "pjrt", "generate": {"seed": 1},
                 "verify": True}, 3)
    saxpy_gbs = max(d["throughput"]["gbytes_per_s"] for d in docs)
    rows.append(f"| saxpy 2^28 | {saxpy_gbs:.0f} GB/s | copy {copy_gbs:.0f} GB/s, jax saxpy {jax_gbs:.0f} GB/s | "
                f"{saxpy_gbs / copy_gbs:.2f}x (goal >= 0.8x) |")
    e2e = end_to_end(docs)
    rows.append(f"| saxpy 2^28, generated, end to end | {e2e:.2f}x of the kernel time | | (goal <= 1.5x) |")
    if saxpy_gbs / copy_gbs < 0.8 or not all(d.get("verified") for d in docs):
        failed.append("saxpy")
    if e2e > 1.5:
        failed.append("saxpy end to end")


guarded("saxpy", saxpy)


# a cached small job on gpu:0 against the same job on cpu:0, end to end over HTTP (median of 50)
def latency(device, backend):
    body = {"kernel": "saxpy", "n": 1024, "device": device, "backend": backend, "generate": {"seed": 1}}
    call("POST", "/run", body)
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        call("POST", "/run", body)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def small():
    g, c = latency("gpu:0", "pjrt"), latency("cpu:0", "native")
    rows.append(f"| saxpy 1024, cached, end to end | gpu:0 {g:.2f} ms | cpu:0 {c:.2f} ms | {g / c:.2f}x "
                f"(goal <= 1.5x) |")
    if g / c > 1.5:
        failed.append("latency")


guarded("latency", small)
print("| check | acceld pjrt | peer | ratio |\n| --- | --- | --- | --- |")
print("\n".join(rows))
print("driver:", gpu.get("gpu", {}).get("driver_version"), "jax:", jax.__version__)
print("gpu:0 pjrt after the jobs:", json.dumps(call("GET", "/devices/gpu:0")[1].get("pjrt")))
sys.exit(1 if failed else 0)
EOF
echo "acceld log (last 30 lines):"
tail -n 30 "$TMP/acceld.log"
exit "$rc"
