"""Black-box harness: starts build/acceld on a free loopback port and speaks HTTP to it.

The server is started with --listen 127.0.0.1:0; its 'listening' log line names the port (and the health
listener's, when --health-listen is given: server.health_port). Every log line is kept (server.logs, parsed JSON) for
assertions. Nothing here is shared between tests except through the server.

Every process started here gets a scrubbed environment (clean_env): the caller's shell is not a clean room, and
what a test needs it sets explicitly.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, os.environ.get("ACCELD_BIN", "build/acceld"))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
FAKES = os.path.join(ROOT, os.environ.get("ACCELD_BUILD", "build"), "fakes")

# What a child may inherit from the caller: where programs, libraries and temporary files are, who the user is, and
# the sanitizers' and valgrind's settings. Everything else is dropped: every ACCELD_* and COMPUTE_* setting, the
# variables the accelerator runtimes and libraries read (CUDA_VISIBLE_DEVICES, HIP/ROCR_VISIBLE_DEVICES, TPU_*,
# PJRT_NAMES_AND_LIBRARY_PATHS, OPENBLAS_*, OMP_*, POCL_*, OCL_ICD_*, HWLOC_*), VIRTUAL_ENV, the proxies, XDG_*,
# LD_PRELOAD, the fakes' FAKE_* switches and Check's CK_*. The locale and the time zone are fixed.
INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "LD_LIBRARY_PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS",
             "LSAN_OPTIONS", "TSAN_OPTIONS", "MSAN_OPTIONS", "VALGRIND_LIB")
FIXED = {"LC_ALL": "C.UTF-8", "TZ": "UTC"}


def clean_env(env=None, keep=()):
    """A child's environment: the INHERITED variables (and those named in keep) of this process, FIXED, then env."""
    out = {k: v for k, v in os.environ.items() if k in INHERITED or k in keep}
    out.update(FIXED)
    out.update(env or {})
    return out


def isolated(env, tmp):
    """env with no real NVML and no PJRT plugin the host may have installed (JAX, libtpu), unless env names its own,
    and a health check's transfer test of 1 MiB each way: the fake accelerators move their 256 MiB through the host's
    memory, seconds of a busy CI machine per check."""
    out = {"ACCELD_NVML_LIBRARY": os.path.join(tmp, "no-nvml.so"), "ACCELD_PJRT_PLUGINS": "none",
           "ACCELD_CHECK_TRANSFER_BYTES": "1MiB"}
    out.update(env or {})
    return out


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def json(self):
        return json.loads(self.body)

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def __repr__(self):
        return f"<Response {self.status} {self.body[:300]!r}>"


class Server:
    """One acceld process. Use as a context manager or call start()/stop()."""

    def __init__(self, args=(), env=None, db=None, wait_ready=True, isolate=True, port=None):
        self.tmp = tempfile.TemporaryDirectory(prefix="acceld-test-")
        self.db = db or os.path.join(self.tmp.name, "acceld.db")
        self.args = list(args)
        # HOME is the test's own folder, so that ~ in the PJRT search finds nothing of the user's
        self.env = clean_env(dict({"HOME": self.tmp.name}, **(env or {})))
        if isolate:
            self.env = isolated(self.env, self.tmp.name)
        self.wait_ready = wait_ready
        self.fixed_port = port  # when set, listen there and find readiness by connecting (quiet log levels)
        self.proc = None
        self.port = None
        self.health_port = None
        self.logs = []
        self.raw_logs = []
        self._lines = threading.Condition()

    def start(self):
        listen = f"127.0.0.1:{self.fixed_port or 0}"
        cmd = [BIN, "serve", "--listen", listen, "--db", self.db] + self.args
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 20
        if self.fixed_port:
            while True:
                try:
                    socket.create_connection(("127.0.0.1", self.fixed_port), timeout=1).close()
                    self.port = self.fixed_port
                    return self
                except OSError:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"acceld did not start: {self.raw_logs[-5:]}")
                    time.sleep(0.05)
        with self._lines:
            while self.port is None:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"acceld exited with {self.proc.returncode}: {self.raw_logs[-5:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError("acceld did not say where it listens")
                self._lines.wait(0.1)
        if self.wait_ready:
            self.wait_for(lambda l: l.get("msg") == "ready", 20)
        return self

    def _read(self):
        with self.proc.stderr as stderr:  # closed at the process's end, however it ended
            self._read_lines(stderr)

    def _read_lines(self, stderr):
        for raw in stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._lines:
                self.raw_logs.append(line)
                try:
                    obj = json.loads(line)
                except ValueError:
                    obj = {"unparsed": line}
                self.logs.append(obj)
                if obj.get("msg") == "listening" and obj.get("listener") == "health":
                    self.health_port = obj["port"]
                elif obj.get("msg") == "listening" and self.port is None:
                    self.port = obj["port"]
                self._lines.notify_all()

    def wait_for(self, pred, timeout=10):
        deadline = time.monotonic() + timeout
        with self._lines:
            while True:
                for l in self.logs:
                    if pred(l):
                        return l
                if time.monotonic() > deadline:
                    raise AssertionError(f"no log line matched within {timeout}s; last: {self.raw_logs[-5:]}")
                self._lines.wait(0.1)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc is None:
            return None
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                    raise
            if self.proc.returncode == 1 and self._lsan_could_not_run():
                return 0
            return self.proc.returncode
        finally:
            if self.proc.returncode is not None and self.proc.stdout is not None:
                self.proc.stdout.close()

    def _lsan_could_not_run(self):
        """Whether a sanitizer build's exit status 1 is LeakSanitizer failing to run at exit ("Tracer caught signal
        11 ... LeakSanitizer has encountered a fatal error": its stop-the-world tracer crashed while threads of a
        loaded library, PoCL's, were still ending), which reports no finding; an actual leak or memory error prints
        its report and keeps its status."""
        self.proc.wait()
        time.sleep(0.2)  # the reader thread takes the last lines
        with self._lines:
            tail = self.raw_logs[-6:]
        fatal = any("LeakSanitizer has encountered a fatal error" in line for line in tail)
        found = any("ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer: detected" in line or
                    "runtime error:" in line for line in self.raw_logs)
        if fatal and not found:
            print("note: LeakSanitizer could not run at acceld's exit (its tracer crashed); no finding was reported",
                  flush=True)
        return fatal and not found

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        self.tmp.cleanup()

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None, json_body=None):
        hdrs = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        own = conn is None
        c = conn or self.conn()
        try:
            c.request(method, path, body=body, headers=hdrs)
            r = c.getresponse()
            return Response(r.status, r.getheaders(), r.read())
        finally:
            if own:
                c.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def raw(self, data, timeout=5, read=True):
        """Sends raw bytes on a new socket and returns what comes back until the server closes or times out."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        out = b""
        try:
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server may refuse early; read what it said
            if not read:
                return b""
            while True:
                try:
                    chunk = s.recv(65536)
                except (socket.timeout, ConnectionResetError):
                    break
                if not chunk:
                    break
                out += chunk
            return out
        finally:
            s.close()


def until(pred, timeout=30, what="condition", interval=0.05):
    """Asks pred() again and again until it returns something true, and returns that; the timeout only ends a hung
    test, so it is generous."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout} s")
        time.sleep(interval)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(*args, env=None, timeout=60):
    """Runs the binary with args in a scrubbed, isolated environment (env on top) and returns the CompletedProcess."""
    e = isolated(clean_env(env), "/nonexistent")
    return subprocess.run([BIN] + list(args), capture_output=True, text=True, env=e, timeout=timeout, cwd=ROOT)


class ServersTestCase(unittest.TestCase):
    """A test class whose tests start servers of their own (self.start), killed at each test's end, with a temporary
    folder self.tmp; subclasses may set tmp_prefix."""

    tmp_prefix = "acceld-test-"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix=self.tmp_prefix)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.stop(signal.SIGKILL)
            s.tmp.cleanup()
        self.tmp.cleanup()

    def start(self, args=(), env=None, db=None):
        s = Server(args=list(args), env=env, db=db)
        self.servers.append(s)
        return s.start()


class ServerTestCase(unittest.TestCase):
    """A test class sharing one server; subclasses may set server_args and server_env."""

    server_args = ()
    server_env = {}

    @classmethod
    def setUpClass(cls):
        cls.server = Server(args=cls.server_args, env=cls.server_env).start()

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.server.tmp.cleanup()
        # what it wrote last says why (a sanitizer's report, a fatal log line)
        assert code == 0, f"acceld exited with {code}; its last lines:\n" + "\n".join(cls.server.raw_logs[-40:])

    def assertProblem(self, r, status, reason=None):
        """Asserts an RFC 9457 problem+json answer with every member the contract names."""
        self.assertEqual(r.status, status, r)
        self.assertTrue(r.header("Content-Type").startswith("application/problem+json"), r.header("Content-Type"))
        doc = r.json()
        for key in ("type", "title", "status", "detail", "reason", "request_id"):
            self.assertIn(key, doc)
        self.assertEqual(doc["status"], status)
        self.assertEqual(doc["request_id"], r.header("X-Request-Id"))
        if reason:
            self.assertEqual(doc["reason"], reason, doc)
        return doc
