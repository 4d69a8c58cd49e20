#!/bin/sh
# The worker processes on a real NVIDIA GPU: start-up and the first GPU job from a cold and a warm compile cache,
# hands off after PJRT and OpenCL jobs (nvidia-smi lists no acceld process once the worker's idle time has passed,
# and a JAX program then takes 90 % of the GPU's memory), jobs while JAX holds the GPU, a worker killed with
# SIGSEGV in the middle of a job, the quick check from a cold and a warm cache in fresh processes, and the link's
# transfer rates beside JAX's own. Prints what it saw, step by step, with a Markdown summary at the end.
#
#   tests/gpu/check_worker.sh [DIR]      DIR holds acceld (and lib/), as bundle.sh makes it; default: the checkout
#
# Needs python3 with jax and the CUDA plugin (found the way acceld finds it) and nvidia-smi. It never changes the
# GPU's settings (compute mode, clocks, MIG): the lending rules of the machines it runs on forbid it, so the
# EXCLUSIVE_PROCESS case is reported as not tried. CHECK_WORKER_STEPS=startup,handsoff,held,crash,cache,transfers
# (the default: all) runs some. Exits 0 when every step answered as it should, 1 when one did not, 2 when it cannot
# run.
set -eu

DIR=${1:-.}
BIN=$DIR/acceld
[ -x "$BIN" ] || BIN=$DIR/build/acceld
[ -x "$BIN" ] || { echo "check_worker: no acceld in $DIR" >&2; exit 2; }
[ -d "$DIR/lib" ] && export LD_LIBRARY_PATH="$DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
command -v nvidia-smi >/dev/null || { echo "check_worker: nvidia-smi is needed" >&2; exit 2; }
python3 -c 'import jax, numpy' 2>/dev/null || { echo "check_worker: python3 lacks jax or numpy" >&2; exit 2; }
LIBDIR=$(python3 -c 'import os, sysconfig; print(os.path.dirname(os.path.dirname(sysconfig.get_paths()["purelib"])))')
TMP=$(mktemp -d)
trap 'pkill -f "acceld serve --listen 127.0.0.1" 2>/dev/null || true; rm -rf "$TMP"' EXIT INT TERM
export ACCELD_PJRT_SEARCH="$LIBDIR"
unset ACCELD_PJRT_PLUGINS
PYTHONUNBUFFERED=1 python3 - "$BIN" "$TMP" <<'EOF'
import json, os, signal, subprocess, sys, time, urllib.error, urllib.request

BIN, TMP = sys.argv[1], sys.argv[2]
failed, rows = [], []


def port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Server:
    def __init__(self, name, *extra, max_elements=1 << 30):
        self.port = port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(f"{TMP}/{name}.log", "w")
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{self.port}", "--db", f"{TMP}/acceld.db",
                                      "--log-level", "info", "--access-log", "false", "--exec-max-timeout", "10m",
                                      "--exec-max-elements", str(max_elements), *extra], stderr=self.log)
        self.ready_s = None
        while time.perf_counter() - self.t0 < 30:
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        self.ready_s = time.perf_counter() - self.t0
                        break
            except OSError:
                pass
            time.sleep(0.005)

    def call(self, method, path, body=None, timeout=900):
        req = urllib.request.Request(self.base + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def status(self, path):
        """The status of a GET whose answer need not be JSON (the probes)."""
        try:
            with urllib.request.urlopen(self.base + path, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()

    def tail(self, n=15):
        return "".join(open(self.log.name).readlines()[-n:])


def guarded(name, fn):
    print(f"===== {name}", flush=True)
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the others
        print(f"{name}: FAILED ({type(e).__name__}: {e})")
        failed.append(name)


def apps():
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv"],
                         capture_output=True, text=True).stdout
    return out.strip()


def acceld_pids():
    """The processes running the acceld binary (the service and its workers), by /proc/PID/exe."""
    exe, pids = os.path.realpath(BIN), set()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.path.realpath(f"/proc/{p}/exe") == exe:
                    pids.add(int(p))
            except OSError:
                pass
    return pids


def gpu_apps_of_acceld():
    listed = set()
    for line in apps().splitlines()[1:]:
        try:
            listed.add(int(line.split(",")[0]))
        except ValueError:
            pass
    return listed & acceld_pids()


def job(s, body, timeout=900):
    t0 = time.perf_counter()
    status, doc = s.call("POST", "/run", body, timeout)
    wall = (time.perf_counter() - t0) * 1e3
    err = doc.get("error") or {}
    print(f"  {body.get('kernel')} {body.get('backend', '')} n={body.get('n')}: {status} {doc.get('state', '')} "
          f"{err.get('reason', doc.get('reason', ''))} wall {wall:.1f} ms timing {json.dumps(doc.get('timing'))} "
          f"{(err.get('detail') or doc.get('detail') or '')[:300]}", flush=True)
    return status, doc, wall


SAXPY = {"kernel": "saxpy", "n": 1024, "device": "gpu:0", "backend": "pjrt", "generate": {"seed": 1}}


# 7. start-up: to /readyz 200, and the first GPU job, from a cold compile cache and then a warm one
def startup():
    for name in ("cold", "warm"):
        s = Server(f"start-{name}", "--pjrt-idle", "0")
        try:
            if s.ready_s is None:
                raise RuntimeError("no /readyz 200 in 30 s: " + s.tail())
            t0 = time.perf_counter()
            status, doc, wall = job(s, SAXPY)
            first = time.perf_counter() - s.t0
            setup = (doc.get("timing") or {}).get("setup_ms")
            print(f"  start-up {name}: /readyz 200 after {s.ready_s * 1e3:.0f} ms; first GPU job answered {status} "
                  f"{wall:.0f} ms after it was sent, {first:.2f} s after the start (setup_ms {setup})")
            rows.append(f"| start-up, {name} cache | /readyz 200 after {s.ready_s * 1e3:.0f} ms | first GPU job "
                        f"{first:.2f} s after start (setup {setup} ms) | goal: 1 s; 3 s + compile cold, 3 s warm |")
            if status != 200:
                failed.append(f"first job {name}")
        finally:
            s.stop()


# 1. hands off: after a PJRT and an OpenCL job and the idle time, no acceld process holds the GPU
def handsoff():
    s = Server("handsoff", "--pjrt-idle", "2s")
    try:
        for backend in ("pjrt", "opencl"):
            job(s, dict(SAXPY, n=1 << 20, backend=backend))
            print(f"  right after the {backend} job:\n{apps()}")
            held = gpu_apps_of_acceld()
            t0 = time.perf_counter()
            while held and time.perf_counter() - t0 < 20:
                time.sleep(0.25)
                held = gpu_apps_of_acceld()
            print(f"  {time.perf_counter() - t0:.1f} s later: acceld processes on the GPU {sorted(held)}\n{apps()}")
            rows.append(f"| hands off after a {backend} job | {'none' if not held else sorted(held)} listed by "
                        f"nvidia-smi {time.perf_counter() - t0:.1f} s after the job (idle 2 s) | | |")
            if held:
                failed.append(f"hands off {backend}")
        print("  workers:", json.dumps(s.call("GET", "/devices/gpu:0")[1].get("pjrt", {}).get("worker")))
        jax = subprocess.run([sys.executable, "-c", """
import os
os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = "0.9"
os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "true"
import jax, jax.numpy as jnp
d = jax.devices()[0]
x = jnp.ones((1 << 28,), jnp.float32).block_until_ready()
st = d.memory_stats()
print("jax took", st.get("bytes_limit"), "bytes of", st.get("bytes_limit", 0) / 0.9, "(limit / 0.9); in use",
      st.get("bytes_in_use"))
"""], capture_output=True, text=True, timeout=120, env=dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="true"))
        print("  JAX after the jobs:", jax.returncode, jax.stdout.strip(), jax.stderr.strip()[-600:])
        rows.append(f"| JAX right after, MEM_FRACTION 0.9 | exit {jax.returncode}: {jax.stdout.strip()} | | |")
        if jax.returncode != 0:
            failed.append("jax after acceld")
    finally:
        s.stop()


# 1b. jobs while a JAX program holds 90 % of the GPU (compute mode left as it is)
def held_by_jax():
    mode = subprocess.run(["nvidia-smi", "--query-gpu=compute_mode", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.strip()
    print(f"  compute mode: {mode} (left as it is: EXCLUSIVE_PROCESS not tried, the machine's rules forbid "
          f"changing the GPU's settings)")
    holder = subprocess.Popen([sys.executable, "-c", """
import os, sys, time
import jax, jax.numpy as jnp
x = jnp.ones((1 << 28,), jnp.float32).block_until_ready()
print("holding", flush=True)
time.sleep(60)
"""], stdout=subprocess.PIPE, text=True, env=dict(os.environ, XLA_PYTHON_CLIENT_MEM_FRACTION="0.9",
                                                  XLA_PYTHON_CLIENT_PREALLOCATE="true"))
    s = None
    try:
        print("  holder:", holder.stdout.readline().strip(), "pid", holder.pid)
        print(apps())
        s = Server("held", "--pjrt-idle", "0", max_elements=4000000000)
        dev = s.call("GET", "/devices/gpu:0")[1]
        print("  gpu:0 while held:", json.dumps({k: dev.get(k) for k in ("memory", "telemetry", "pjrt")})[:1500])
        avail = (dev.get("memory") or {}).get("available_bytes") or (8 << 30)
        big = min(int(avail / 12 * 1.25), 1333333333)  # saxpy's three buffers 25 % over what is free
        for backend in ("pjrt", "opencl"):
            st, doc, _ = job(s, dict(SAXPY, n=1 << 20, backend=backend))
            rows.append(f"| small {backend} job while JAX holds 90 % | {st} "
                        f"{(doc.get('error') or {}).get('reason', doc.get('state', ''))} | | |")
            st, doc, _ = job(s, dict(SAXPY, n=big, backend=backend, timeout_ms=120000))
            rows.append(f"| {12 * big / 2**30:.1f} GiB {backend} job while JAX holds 90 % | {st} "
                        f"{(doc.get('error') or {}).get('reason', doc.get('state', ''))}: "
                        f"{((doc.get('error') or {}).get('detail') or doc.get('detail') or '')[:160]} | | |")
        print(s.tail(8))
    finally:
        holder.kill()
        holder.wait()
        if s:
            s.stop()


# 2. a worker killed with SIGSEGV in the middle of a GPU job
def crash():
    s = Server("crash", "--pjrt-idle", "30s", max_elements=4000000000)
    try:
        job(s, dict(SAXPY, n=1 << 20))  # the worker is up and the device open
        # 4 x 30000^2 elements (inputs, output and the sample's room) under the 4e9 limit; about 1 s of kernel
        big = {"kernel": "sgemm", "m": 30000, "n": 30000, "k": 30000, "device": "gpu:0", "backend": "pjrt",
               "precision": "highest", "generate": {"seed": 2}, "timeout_ms": 300000}
        st, doc = s.call("POST", "/run", dict(big, wait=False), 30)
        print("  submitted:", st, json.dumps(doc)[:300])
        jid = doc.get("id")
        state = ""
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 60:
            state = s.call("GET", f"/run/{jid}")[1].get("state")
            if state == "running":
                break
            time.sleep(0.05)
        time.sleep(1.5)  # well inside the compile or the kernel
        workers = sorted(acceld_pids() - {s.proc.pid})
        for _ in range(50):
            if workers:
                break
            time.sleep(0.1)
            workers = sorted(acceld_pids() - {s.proc.pid})
        wline = subprocess.run(["pgrep", "-af", "acceld worker"], capture_output=True, text=True).stdout.strip()
        print(f"  state {state}; workers: {wline}")
        if not workers:
            raise RuntimeError("no worker process to kill")
        for p in workers:
            os.kill(p, signal.SIGSEGV)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 60:
            st, doc = s.call("GET", f"/run/{jid}")
            if doc.get("state") not in ("queued", "running"):
                break
            time.sleep(0.1)
        err = doc.get("error") or {}
        print(f"  after SIGSEGV: {doc.get('state')} {err.get('reason', doc.get('reason'))} "
              f"{(err.get('detail') or doc.get('detail') or '')[:400]}")
        live = s.status("/livez")
        ready = s.status("/readyz")
        st2, doc2, _ = job(s, dict(SAXPY, n=1 << 20, verify=True))
        rows.append(f"| worker SIGSEGV mid-job | job {doc.get('state')} {err.get('reason', doc.get('reason'))}; "
                    f"/livez {live}, /readyz {ready}; next GPU job {st2} verified {doc2.get('verified')} | | |")
        if doc.get("state") != "failed" or live != 200 or ready != 200 or st2 != 200:
            failed.append("crash")
        print(s.tail(10))
    finally:
        s.stop()


# 3. the quick check through PJRT in a fresh process, with a cold and then a warm compile cache
def cache():
    db = f"{TMP}/check/acceld.db"
    os.makedirs(os.path.dirname(db), exist_ok=True)
    for name in ("cold", "warm"):
        t0 = time.perf_counter()
        p = subprocess.run([BIN, "check", "--device", "gpu:0", "--level", "quick", "--backend", "pjrt", "--json",
                            "--db", db], capture_output=True, text=True, timeout=300)
        wall = time.perf_counter() - t0
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = {}
        setups = []
        for c in doc.get("checks", []):
            for t in c.get("tests", []) if isinstance(c.get("tests"), list) else []:
                if isinstance(t, dict) and "setup_ms" in t:
                    setups.append(t["setup_ms"])
        print(f"  quick check, {name} cache: exit {p.returncode} in {wall:.1f} s; verdict {doc.get('verdict')}; "
              f"setup {setups}")
        print("  " + p.stdout[:3000].replace("\n", "\n  "))
        print(p.stderr[-1500:])
        rows.append(f"| quick check pjrt, {name} cache, fresh process | {wall:.1f} s, exit {p.returncode}, "
                    f"{doc.get('verdict')} | | goal <= 10 s warm |")
    print("  cache folder:", subprocess.run(["du", "-sh", f"{TMP}/check"], capture_output=True, text=True).stdout)


# 5. the link: NVML's and sysfs's view, acceld's transfers of a returned output, and JAX's own
def transfers():
    q = "pcie.link.gen.current,pcie.link.gen.max,pcie.link.gen.gpucurrent,pcie.link.gen.gpumax,pcie.link.gen.hostmax," \
        "pcie.link.width.current,pcie.link.width.max,pci.bus_id"
    out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"], capture_output=True, text=True)
    print("  nvidia-smi:", out.stdout.strip(), out.stderr.strip())
    try:
        bus = out.stdout.strip().splitlines()[-1].split(",")[-1].strip().lower()
        bdf = bus[-12:] if len(bus) >= 12 else bus
        for f in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
            path = f"/sys/bus/pci/devices/{bdf}/{f}"
            try:
                print(f"  {path}: {open(path).read().strip()}")
            except OSError as e:
                print(f"  {path}: {e}")
    except IndexError:
        pass
    s = Server("xfer", "--pjrt-idle", "30s")
    try:
        dev = s.call("GET", "/devices/gpu:0")[1]
        print("  /devices gpu:0 pcie:", json.dumps(dev.get("pcie")))
        for backend in ("pjrt", "opencl"):
            body = {"kernel": "triad", "n": 1 << 18, "device": "gpu:0", "backend": backend, "generate": {"seed": 3},
                    "return": "full"}
            for _ in range(2):
                st, doc, _ = job(s, body)
            t = doc.get("timing") or {}
            rows.append(f"| {backend} triad 2^18, output returned (1 MiB down) | transfer "
                        f"{t.get('transfer_gbytes_per_s')} GB/s ({t.get('transfer_bytes')} bytes, "
                        f"{t.get('transfer_ms')} ms) | | |")
    finally:
        s.stop()
    jx = subprocess.run([sys.executable, "-c", """
import time, numpy as np, jax
d = jax.devices()[0]
for mib in (256, 1024):
    a = np.ones(mib << 18, np.float32)
    jax.device_put(a, d).block_until_ready()
    best_up = best_down = 1e9
    for _ in range(5):
        t0 = time.perf_counter(); x = jax.device_put(a, d); x.block_until_ready(); best_up = min(best_up, time.perf_counter() - t0)
        t0 = time.perf_counter(); b = np.asarray(x); best_down = min(best_down, time.perf_counter() - t0)
        del x
    print(f"jax {mib} MiB: device_put {a.nbytes / best_up / 1e9:.1f} GB/s, np.asarray {a.nbytes / best_down / 1e9:.1f} GB/s")
"""], capture_output=True, text=True, timeout=180)
    print("  " + jx.stdout.strip().replace("\n", "\n  "), jx.stderr.strip()[-400:])
    rows.append(f"| JAX's own transfers | {jx.stdout.strip().replace(chr(10), '; ')} | | |")


STEPS = os.environ.get("CHECK_WORKER_STEPS", "startup,handsoff,held,crash,cache,transfers").split(",")
for name, fn in (("startup", startup), ("handsoff", handsoff), ("held", held_by_jax), ("crash", crash),
                 ("cache", cache), ("transfers", transfers)):
    if name in STEPS:
        guarded(name, fn)
print("| step | seen | | goal |\n| --- | --- | --- | --- |")
print("\n".join(rows))
print("failed:", failed)
sys.exit(1 if failed else 0)
EOF
