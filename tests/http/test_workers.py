"""Black-box tests of the worker processes that run PJRT jobs (src/exec/backend/worker_proxy.h), through the stand-in
plugin on the TPU v6e-8 fixture host: the daemon never maps the plugin, a worker lets go of the TPU (and libtpu's
process lock) after --pjrt-idle, a plugin that aborts fails its job with BACKEND_CRASHED while the service answers
the rest, crashes in a row back off, a job past its deadline ends its worker, a worker on a host of a TPU slice of
several hosts runs on its local chips alone, and a client creation past --pjrt-create-timeout ends its worker."""
import fcntl
import os
import re
import unittest

from harness import BIN, FAKES, FIXTURES, ServersTestCase, run_cli, until

PLUGIN = os.path.join(FAKES, "libpjrt.so")
SGEMM = {"kernel": "sgemm", "m": 128, "n": 128, "k": 128, "verify": True}
FAKE_VARS = ("FAKE_PJRT_CRASH", "FAKE_PJRT_CRASH_FLAG", "FAKE_PJRT_SLOW_MS", "FAKE_PJRT_LOCKFILE", "FAKE_PJRT_BUSY",
             "FAKE_PJRT_VERSION", "FAKE_PJRT_ENV_LOG", "FAKE_PJRT_CREATE_SLOW_MS", "ACCELD_OPENCL_WORKER",
             "TPU_PROCESS_BOUNDS", "TPU_CHIPS_PER_PROCESS_BOUNDS", "TPU_VISIBLE_CHIPS", "TPU_ACCELERATOR_TYPE",
             "TPU_TOPOLOGY", "TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES")
for _name in FAKE_VARS:
    os.environ.pop(_name, None)


def tpu_env(**extra):
    env = {"ACCELD_SYSFS_ROOT": os.path.join(FIXTURES, "tpu-v6e-8", "sys"),
           "ACCELD_DEV_ROOT": os.path.join(FIXTURES, "tpu-v6e-8", "dev"),
           "ACCELD_PJRT_PLUGINS": "tpu=" + PLUGIN,
           "FAKE_PJRT_PLATFORM": "tpu", "FAKE_PJRT_DEVICES": "8"}
    env.update(extra)
    return env


def workers_of(pid):
    """The pids of the acceld worker processes whose parent is pid."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and len(argv) > 1 and argv[1] == b"worker":
            out.append(int(entry))
    return out


def metric(server, name, **labels):
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in server.get("/metrics").text.splitlines():
        if line.startswith(f"{name}{{{want}}} "):
            return float(line.rsplit(" ", 1)[1])
    return None


def lock_free(path):
    """Whether this process can take the lock file's lockf lock (libtpu's TryAcquireTpuLock) now."""
    with open(path, "a+") as f:
        try:
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.lockf(f, fcntl.LOCK_UN)
        return True


class WorkerTestCase(ServersTestCase):
    def assertProblem(self, r, status, reason):
        self.assertEqual(r.status, status, r)
        self.assertTrue(r.header("Content-Type").startswith("application/problem+json"))
        doc = r.json()
        self.assertEqual(doc["reason"], reason, doc)
        return doc


class LettingGo(WorkerTestCase):
    def test_the_daemon_holds_no_plugin_and_the_worker_lets_go(self):
        lockfile = os.path.join(self.tmp.name, "libtpu_lockfile")
        s = self.start(args=("--pjrt-idle", "1s"), env=tpu_env(FAKE_PJRT_LOCKFILE=lockfile))
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:0"))
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["verified"])
        with open(f"/proc/{s.proc.pid}/maps") as f:
            self.assertNotIn(PLUGIN, f.read())
        # the worker ran the job: it holds the plugin and libtpu's lock (unless it already let go)
        for pid in workers_of(s.proc.pid):
            try:
                with open(f"/proc/{pid}/maps") as f:
                    self.assertIn(PLUGIN, f.read())
            except FileNotFoundError:
                pass
        # within a few seconds of the idle time no worker is left, and another process takes the TPU's lock
        until(lambda: not workers_of(s.proc.pid), timeout=20, what="the worker's exit")
        self.assertTrue(lock_free(lockfile))
        until(lambda: metric(s, "acceld_worker_exits_total", backend="pjrt", cause="idle") >= 1,
              what="the idle exit counted")
        # while another process holds it, a job says so as libtpu does
        with open(lockfile, "a+") as f:
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:0", fallback=False))
            self.assertEqual(r.status, 409, r)
            self.assertIn(f"in use by process with pid {os.getpid()}", r.json()["detail"])
        # and once it is free, the next job runs
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:0"))
        self.assertEqual(r.status, 200, r)

    def test_idle_zero_lets_go_after_every_job(self):
        s = self.start(args=("--pjrt-idle", "0"), env=tpu_env())
        for _ in range(2):
            r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:1"))
            self.assertEqual(r.status, 200, r)
            until(lambda: not workers_of(s.proc.pid), timeout=20, what="the worker's exit")


class Crashes(WorkerTestCase):
    def crash_once(self, where):
        flag = os.path.join(self.tmp.name, "crash")
        open(flag, "w").close()
        s = self.start(env=tpu_env(FAKE_PJRT_CRASH=where, FAKE_PJRT_CRASH_FLAG=flag))
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:2", fallback=False))
        doc = self.assertProblem(r, 502, "BACKEND_CRASHED")
        self.assertIn("signal 6 (SIGABRT)", doc["detail"])
        self.assertIn(f"fake pjrt: FAKE_PJRT_CRASH={where}: aborting", doc["detail"])
        first = int(re.search(r"worker \(pid (\d+)\)", doc["detail"]).group(1))
        # the service answers the rest as before
        self.assertEqual(s.get("/livez").status, 200)
        self.assertEqual(s.get("/readyz").status, 200)
        r = s.request("POST", "/run", json_body={"kernel": "saxpy", "n": 1024, "device": "cpu:0"})
        self.assertEqual(r.status, 200, r)
        # its stderr went to the daemon's log
        until(lambda: any(f"FAKE_PJRT_CRASH={where}" in line for line in s.raw_logs), what="the logged line")
        os.unlink(flag)
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:2"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(metric(s, "acceld_worker_exits_total", backend="pjrt", cause="crash"), 1)
        self.assertNotIn(first, workers_of(s.proc.pid))
        self.assertTrue(workers_of(s.proc.pid))
        return s

    def test_execute(self):
        self.crash_once("execute")

    def test_compile(self):
        self.crash_once("compile")

    def test_client(self):
        self.crash_once("client")

    def test_crashes_in_a_row_back_off(self):
        flag = os.path.join(self.tmp.name, "crash")
        open(flag, "w").close()
        s = self.start(env=tpu_env(FAKE_PJRT_CRASH="execute", FAKE_PJRT_CRASH_FLAG=flag))
        for _ in range(2):
            r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:4", fallback=False))
            self.assertProblem(r, 502, "BACKEND_CRASHED")
        self.assertEqual(metric(s, "acceld_worker_exits_total", backend="pjrt", cause="crash"), 2)
        # the next start waits: a job now fails at once, saying how long, and no worker starts for it
        starts = metric(s, "acceld_worker_starts_total", backend="pjrt")
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:4", fallback=False))
        doc = self.assertProblem(r, 502, "BACKEND_CRASHED")
        self.assertRegex(doc["detail"], r"crashed 2 times in a row .* the next start waits \d+ ms")
        self.assertEqual(metric(s, "acceld_worker_starts_total", backend="pjrt"), starts)
        worker = until(lambda: (lambda d: d if d.get("state") == "backing_off" or d.get("last_cause") == "crash"
                                else None)(s.get("/devices/tpu:4").json()["pjrt"].get("worker", {})),
                       what="the worker's state on the device")
        self.assertIn("starts", worker)
        # a falling-back job moves on to the CPU meanwhile
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:4"))
        if r.status == 200:
            self.assertTrue(r.json()["fell_back"], r.json())
        os.unlink(flag)
        until(lambda: s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:4", fallback=False)).status == 200,
              what="a job once the backoff passed", interval=0.3)


class Deadline(WorkerTestCase):
    def test_a_job_past_its_deadline_ends_its_worker(self):
        s = self.start(env=tpu_env(FAKE_PJRT_SLOW_MS="4000"))
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:5", timeout_ms=300))
        self.assertProblem(r, 504, "TIMED_OUT")
        until(lambda: metric(s, "acceld_worker_exits_total", backend="pjrt", cause="deadline") == 1,
              what="the worker ended for the deadline")
        until(lambda: not workers_of(s.proc.pid), what="no worker left")


def read_env_log(path):
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


class SliceOfSeveralHosts(WorkerTestCase):
    """Worker 3 of a v5p-128 slice (4x4x4, 16 hosts), its own four chips the tpu-v5p fixture's: libtpu would wait
    for every host, so the worker gets the local bounds in place of the caller's."""

    def test_the_worker_runs_on_the_local_chips(self):
        log = os.path.join(self.tmp.name, "env")
        s = self.start(env={"ACCELD_SYSFS_ROOT": os.path.join(FIXTURES, "tpu-v5p", "sys"),
                            "ACCELD_DEV_ROOT": os.path.join(FIXTURES, "tpu-v5p", "dev"),
                            "ACCELD_PJRT_PLUGINS": "tpu=" + PLUGIN, "FAKE_PJRT_PLATFORM": "tpu",
                            "FAKE_PJRT_DEVICES": "4", "FAKE_PJRT_KIND": "TPU v5", "FAKE_PJRT_ENV_LOG": log,
                            "TPU_ACCELERATOR_TYPE": "v5p-128", "TPU_TOPOLOGY": "4x4x4", "TPU_WORKER_ID": "3",
                            "TPU_WORKER_HOSTNAMES": ",".join(f"t1v-n-{i}" for i in range(16)),
                            "TPU_PROCESS_BOUNDS": "4,4,1"})
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:0", fallback=False))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(read_env_log(log), {"TPU_PROCESS_BOUNDS": "1,1,1", "TPU_CHIPS_PER_PROCESS_BOUNDS": "2,2,1",
                                             "TPU_VISIBLE_CHIPS": "0,1,2,3"})

    def test_a_host_that_holds_its_slice_keeps_the_callers(self):
        log = os.path.join(self.tmp.name, "env")
        s = self.start(env=tpu_env(FAKE_PJRT_ENV_LOG=log, TPU_ACCELERATOR_TYPE="v6e-8", TPU_TOPOLOGY="2x4"))
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:0", fallback=False))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(read_env_log(log), {})


class CreateTimeout(WorkerTestCase):
    def test_a_client_creation_past_the_limit_ends_its_worker(self):
        s = self.start(args=("--pjrt-create-timeout", "1s"), env=tpu_env(FAKE_PJRT_CREATE_SLOW_MS="600000"))
        r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:3", fallback=False))
        doc = self.assertProblem(r, 502, "DEVICE_FAILURE")
        self.assertIn("within the client creation limit (--pjrt-create-timeout, 1000 ms", doc["detail"])
        pid = int(re.search(r"worker \(pid (\d+)\)", doc["detail"]).group(1))
        until(lambda: pid not in workers_of(s.proc.pid), what="the worker's end")
        until(lambda: metric(s, "acceld_worker_exits_total", backend="pjrt", cause="deadline") == 1,
              what="the worker ended for its limit")
        # the service answers the rest as before
        self.assertEqual(s.get("/livez").status, 200)
        self.assertEqual(s.get("/readyz").status, 200)
        r = s.request("POST", "/run", json_body={"kernel": "saxpy", "n": 1024, "device": "cpu:0"})
        self.assertEqual(r.status, 200, r)


class OpenclInAWorker(WorkerTestCase):
    def test_an_opencl_job_through_a_worker(self):
        # CI has no GPU: ACCELD_OPENCL_WORKER=all (for tests) sends PoCL's CPU device through a worker as a GPU's is
        s = self.start(args=("--pjrt-idle", "1s"), env={"ACCELD_OPENCL_WORKER": "all"})
        r = s.request("POST", "/run", json_body={"kernel": "saxpy", "n": 100000, "device": "cpu:0",
                                                  "backend": "opencl", "verify": True})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["backend"], "opencl")
        self.assertTrue(r.json()["verified"])
        self.assertGreaterEqual(metric(s, "acceld_worker_starts_total", backend="opencl"), 1)
        until(lambda: not workers_of(s.proc.pid), timeout=20, what="the worker's exit")
        # without the knob, PoCL's CPU device runs in the daemon: no worker starts
        plain = self.start(env={})
        r = plain.request("POST", "/run", json_body={"kernel": "saxpy", "n": 100000, "device": "cpu:0",
                                                      "backend": "opencl"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(metric(plain, "acceld_worker_starts_total", backend="opencl"), 0)


class Reasons(unittest.TestCase):
    def test_reasons_lists_backend_crashed(self):
        out = run_cli("reasons")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"BACKEND_CRASHED\s+502")

    def test_worker_is_no_command(self):
        out = run_cli("worker", "pjrt")
        self.assertEqual(out.returncode, 2)
        self.assertIn("acceld starts this itself", out.stderr)
        self.assertNotIn("worker", run_cli("help").stdout)


if __name__ == "__main__":
    unittest.main()
