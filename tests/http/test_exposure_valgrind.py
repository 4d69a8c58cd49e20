"""A whole start-serve-stop cycle checked for memory errors and leaks: the built binary runs under valgrind memcheck,
answers every main endpoint (a 404 and a 400 too), runs a small saxpy job and stops on SIGTERM. Exit status 0
means no memcheck error and no definite or indirect leak (tests/valgrind.supp holds the only exceptions, all inside
system libraries).

A sanitizer build (ASan, TSan or MSan instrumented binary) cannot run under valgrind: then the same cycle runs
natively with LeakSanitizer on, and must exit 0 with no sanitizer report. Under valgrind the OpenCL platform is
probed (PoCL is loaded) but the job runs on the native backend: a PoCL kernel build under memcheck takes more than
a minute. The sanitizer cycle runs an OpenCL saxpy as well.
"""
import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from harness import BIN, ROOT, Server

STARTUP_S = 180     # hang guard: PoCL and hwloc under memcheck start in about 10 s on 2 cores
STOP_S = 180        # hang guard: the leak check at exit reads every reachable block
REQUEST_S = 60


def sanitizer_instrumented(path):
    """True when the binary carries a sanitizer runtime that valgrind cannot run alongside."""
    with open(path, "rb") as f:
        data = f.read()
    return any(sym in data for sym in (b"__asan_init", b"__tsan_init", b"__msan_init"))


class WrappedServer(Server):
    """A Server whose binary runs behind a command prefix (valgrind), with longer start-up waits."""

    def __init__(self, prefix, **kw):
        super().__init__(**kw)
        self.prefix = list(prefix)
        self.eof = threading.Event()

    def _read(self):
        try:
            super()._read()
        finally:
            self.eof.set()  # every line the process wrote is in raw_logs

    def start(self):
        cmd = self.prefix + [BIN, "serve", "--listen", "127.0.0.1:0", "--db", self.db] + self.args
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     cwd=ROOT)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + STARTUP_S
        with self._lines:
            while self.port is None:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"acceld exited with {self.proc.returncode}: {self.raw_logs[-10:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError("acceld did not say where it listens")
                self._lines.wait(0.2)
        self.wait_for(lambda l: l.get("msg") == "ready", max(1, deadline - time.monotonic()))
        return self


class MemoryCycle(unittest.TestCase):
    def exercise(self, srv, opencl):
        """Every main endpoint twice on one keep-alive connection and once on a fresh one; returns nothing."""
        gets = {"/livez": 200, "/readyz": 200, "/devices": 200, "/select": 200, "/batch-config": 200,
                "/cost": 200, "/history": 200, "/metrics": 200, "/": 200, "/no-such-resource": 404,
                "/select?no_such_parameter=1": 400}
        conn = srv.conn(timeout=REQUEST_S)
        try:
            for path, status in gets.items():
                for c in (conn, conn, None):
                    fresh = c or srv.conn(timeout=REQUEST_S)
                    try:
                        r = srv.request("GET", path, conn=fresh)
                    finally:
                        if c is None:
                            fresh.close()
                    self.assertEqual(r.status, status, f"GET {path}: {r}")
            cpu = srv.request("GET", "/devices/cpu:0", conn=conn).json()
            self.assertIn("opencl", cpu["seen_by"], "the cycle is meant to load the OpenCL platform (PoCL)")
            backends = ["native"] + (["opencl"] if opencl else [])
            for backend in backends:
                job = {"kernel": "saxpy", "n": 1000, "alpha": 2, "generate": {"seed": 7}, "wait": True,
                       "device": "cpu:0", "backend": backend, "verify": True}
                r = srv.request("POST", "/run", json_body=job, conn=conn)
                self.assertEqual(r.status, 200, r)
                doc = r.json()
                self.assertEqual((doc["state"], doc["backend"]), ("succeeded", backend), doc)
                r = srv.request("GET", f"/run/{doc['id']}", conn=conn)
                self.assertEqual(r.status, 200, r)
        finally:
            conn.close()

    def stop(self, srv):
        srv.proc.send_signal(signal.SIGTERM)
        try:
            return srv.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            srv.proc.kill()
            srv.proc.wait()
            raise AssertionError(f"acceld did not stop within {STOP_S} s of SIGTERM: {srv.raw_logs[-10:]}")

    def cycle(self, srv, opencl):
        """Starts srv, exercises it, stops it with SIGTERM and returns its exit status; it never outlives the call."""
        try:
            srv.start()
            self.exercise(srv, opencl=opencl)
            return self.stop(srv)
        finally:
            if srv.proc and srv.proc.poll() is None:
                srv.proc.kill()
                srv.proc.wait()
            srv.tmp.cleanup()

    def valgrind_cycle(self):
        with tempfile.TemporaryDirectory(prefix="acceld-memcheck-") as tmp:
            log = os.path.join(tmp, "memcheck.log")
            prefix = ["valgrind", "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                      "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99", "--track-fds=no",
                      "--num-callers=30", f"--suppressions={os.path.join(ROOT, 'tests', 'valgrind.supp')}",
                      f"--log-file={log}"]
            srv = WrappedServer(prefix)
            t0 = time.monotonic()
            code = self.cycle(srv, opencl=False)
            elapsed = time.monotonic() - t0
            with open(log, errors="replace") as f:
                report = f.read()
        tail = "\n".join(report.splitlines()[-150:])
        self.assertEqual(code, 0, f"memcheck exit {code} after {elapsed:.0f} s; its log ends:\n{tail}")
        self.assertIn("ERROR SUMMARY: 0 errors", report, tail)
        self.assertIn("definitely lost: 0 bytes", report, tail)

    def sanitizer_cycle(self):
        env = {"ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "print_stacktrace=1"}
        srv = WrappedServer([], env=env)
        code = self.cycle(srv, opencl=True)
        self.assertTrue(srv.eof.wait(30), "stderr stayed open after exit")
        text = "\n".join(srv.raw_logs)
        tail = "\n".join(srv.raw_logs[-80:])
        self.assertEqual(code, 0, f"exit {code}; stderr ends:\n{tail}")
        for marker in ("LeakSanitizer", "AddressSanitizer", "ThreadSanitizer", "MemorySanitizer", "runtime error"):
            self.assertNotIn(marker, text, tail)

    def test_start_serve_stop_is_clean(self):
        if sanitizer_instrumented(BIN):
            self.sanitizer_cycle()
        else:
            self.valgrind_cycle()


if __name__ == "__main__":
    unittest.main()
