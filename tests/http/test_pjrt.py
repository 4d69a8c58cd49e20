"""Black-box tests of the PJRT backend against the stand-in plugin (tests/fakes/pjrt.c): a TPU host (fixture tree)
and an NVIDIA GPU host (fake NVML) whose accelerators run jobs through it. /devices says which plugin serves which
device with its API version and platform, /select's auto order now really picks the TPU and jobs land there, a
device held by another process answers 409 DEVICE_BUSY (or falls back), a plugin of the wrong version is refused
and said, the report names the plugin, and a job over its timeout answers 504 while the device goes on working."""
import fcntl
import json
import os
import re
import tempfile
import time
import unittest

from harness import FAKES, FIXTURES, Server, ServerTestCase, run_cli

PLUGIN = os.path.join(FAKES, "libpjrt.so")
FAKE_VARS = ("FAKE_PJRT_PLATFORM", "FAKE_PJRT_DEVICES", "FAKE_PJRT_KIND", "FAKE_PJRT_CC", "FAKE_PJRT_BUSY",
             "FAKE_PJRT_BUSY_DEVICES", "FAKE_PJRT_VERSION",
             "FAKE_PJRT_SLOW_MS", "FAKE_PJRT_MEMORY", "FAKE_PJRT_COMPILE_LOG", "FAKE_NVML_PROCESSES",
             "FAKE_NVML_MEMORY_USED")


def tpu_env(**extra):
    env = {"ACCELD_SYSFS_ROOT": os.path.join(FIXTURES, "tpu-v6e-8", "sys"),
           "ACCELD_DEV_ROOT": os.path.join(FIXTURES, "tpu-v6e-8", "dev"),
           "ACCELD_PJRT_PLUGINS": "tpu=" + PLUGIN,
           "FAKE_PJRT_PLATFORM": "tpu", "FAKE_PJRT_DEVICES": "8"}
    env.update(extra)
    return env


def gpu_env(**extra):
    # two fake NVML GPUs, an H100 at 0000:65:00.0 (gpu:0, CUDA ordinal 0) and an L4 at 0000:ca:00.0 (gpu:1); the
    # plugin tells them apart as the real one does: by CUDA ordinal, with their kind, compute capability and memory
    env = {"ACCELD_NVML_LIBRARY": os.path.join(FAKES, "libnvml.so"), "FAKE_NVML_COUNT": "2",
           "ACCELD_PJRT_PLUGINS": "cuda=" + PLUGIN, "FAKE_PJRT_PLATFORM": "cuda", "FAKE_PJRT_DEVICES": "2",
           "FAKE_PJRT_KIND": "NVIDIA H100 80GB HBM3,NVIDIA L4", "FAKE_PJRT_CC": "9.0,8.9",
           "FAKE_PJRT_MEMORY": "85017493504,23g"}
    env.update(extra)
    return env


def clean(env):
    """The fake's switches come from env alone, whatever the caller's shell holds."""
    for name in FAKE_VARS:
        os.environ.pop(name, None)
    return env


# large enough not to be a tiny job (which runs natively on the CPU), small enough for the fake's plain loops
SGEMM = {"kernel": "sgemm", "m": 128, "n": 128, "k": 128, "verify": True}


class TpuHost(ServerTestCase):
    server_env = clean(tpu_env())

    def test_devices_say_which_plugin(self):
        tpu = self.server.get("/devices/tpu:3").json()
        self.assertIn("pjrt", tpu["backends"])
        self.assertTrue(tpu["executable"])
        self.assertEqual(tpu["pjrt"]["plugin"], PLUGIN)
        self.assertEqual(tpu["pjrt"]["source"], "ACCELD_PJRT_PLUGINS")
        self.assertTrue(tpu["pjrt"]["found"] and tpu["pjrt"]["usable"])
        # the API version once a worker loaded it, the platform once a job opened a client
        r = self.server.request("POST", "/run", json_body=dict(SGEMM, device="tpu:3"))
        self.assertEqual(r.status, 200, r)
        deadline = time.monotonic() + 20
        while "platform" not in self.server.get("/devices/tpu:3").json()["pjrt"]:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        pj = self.server.get("/devices/tpu:3").json()["pjrt"]
        self.assertEqual(pj["platform"], "tpu")
        self.assertRegex(pj["api_version"], r"^0\.\d+$")
        self.assertEqual(pj["memory_limit_bytes"], 16 << 30)  # the fake's default, from PJRT_Device_MemoryStats
        self.assertIn("memory_in_use_bytes", pj)

    def test_auto_runs_on_the_tpu(self):
        sel = self.server.get("/select?executable=true&kernel=sgemm").json()
        self.assertEqual(sel["device"]["id"], "tpu:0")
        r = self.server.request("POST", "/run", json_body=SGEMM)
        self.assertEqual(r.status, 200, r)
        job = r.json()
        self.assertEqual((job["device"], job["backend"]), ("tpu:0", "pjrt"))
        self.assertTrue(job["verified"], job)
        self.assertEqual(job["precision"], "highest")
        self.assertIn("compile_ms", job["timing"])
        # the second one comes from the program cache, and the history keeps it
        again = self.server.request("POST", "/run", json_body=SGEMM).json()
        self.assertTrue(again["program_cached"], again)
        metrics = self.server.get("/metrics").text
        self.assertIn('device="tpu:0"', metrics)
        self.assertIn("acceld_jobs_total", metrics)

    def test_every_kernel(self):
        for body in ({"kernel": "saxpy", "n": 70000}, {"kernel": "triad", "n": 70000},
                     {"kernel": "dot", "n": 70000}, {"kernel": "softmax", "m": 40, "n": 2000}, SGEMM):
            r = self.server.request("POST", "/run", json_body=dict(body, device="tpu:1", verify=True))
            self.assertEqual(r.status, 200, r)
            self.assertTrue(r.json()["verified"], r.json())
            self.assertEqual(r.json()["backend"], "pjrt")

    def test_async_and_cancel(self):
        r = self.server.request("POST", "/run", json_body=dict(SGEMM, device="tpu:2", wait=False))
        self.assertEqual(r.status, 202, r)
        deadline = time.monotonic() + 20
        while self.server.get(r.header("Location")).json()["state"] != "succeeded":
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)

    def test_report_names_the_plugin(self):
        r = run_cli("report", "--verbose", env=clean(tpu_env()))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pjrt", r.stdout)
        self.assertIn(PLUGIN, r.stdout)


class TpuHeldElsewhere(ServerTestCase):
    """This test process holds the lock file (lockf, as libtpu does) and the stand-in refuses as libtpu would."""

    @classmethod
    def setUpClass(cls):
        cls.lock = tempfile.NamedTemporaryFile(prefix="acceld-libtpu-lock-")
        fcntl.lockf(cls.lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        cls.server_env = clean(tpu_env(FAKE_PJRT_BUSY="1", FAKE_PJRT_BUSY_PID=str(os.getpid()),
                                       ACCELD_PJRT_TPU_LOCKFILE=cls.lock.name))
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.lock.close()

    def test_busy_is_409_or_falls_back(self):
        r = self.server.request("POST", "/run", json_body=dict(SGEMM, device="tpu:0"))
        self.assertProblem(r, 409, "DEVICE_BUSY")
        # named from the lock file's owner, as well as by the plugin's message
        self.assertIn(f"tpu:0 is held by process {os.getpid()} (", r.json()["detail"])
        self.assertIn(self.lock.name, r.json()["detail"])
        self.assertEqual(r.json()["job"]["state"], "failed")
        r = self.server.request("POST", "/run", json_body=SGEMM)
        self.assertEqual(r.status, 200, r)
        job = r.json()
        self.assertEqual(job["device"], "cpu:0")
        self.assertTrue(job["fell_back"])
        self.assertEqual(job["fallback_from"], "tpu:0")
        self.assertIn("DEVICE_BUSY", job["fallback_reason"])


class WrongVersion(ServerTestCase):
    server_env = clean(tpu_env(FAKE_PJRT_VERSION="0.20"))

    server_args = ("--telemetry-interval", "200ms")

    def test_refused_and_said(self):
        # each TPU's worker loads the plugin at start; once refused, no TPU runs jobs
        deadline = time.monotonic() + 20
        while True:
            tpus = [d for d in self.server.get("/devices").json()["devices"] if d["type"] == "tpu"]
            if not any(d["pjrt"]["usable"] or d["executable"] for d in tpus):
                break
            self.assertLess(time.monotonic(), deadline, tpus)
            time.sleep(0.2)
        self.assertIn("0.20", tpus[0]["pjrt"]["why"])
        sel = self.server.get("/select?executable=true").json()
        self.assertEqual(sel["device"]["id"], "cpu:0")
        r = self.server.request("POST", "/run", json_body=dict(SGEMM, device="tpu:0"))
        self.assertProblem(r, 422, "UNSUPPORTED")


class GpuHost(ServerTestCase):
    server_env = clean(gpu_env())

    def test_gpus_matched_by_ordinal(self):
        for gpu in ("gpu:0", "gpu:1"):
            r = self.server.request("POST", "/run", json_body=dict(SGEMM, device=gpu, precision="tf32"))
            self.assertEqual(r.status, 200, r)
            job = r.json()
            self.assertEqual((job["device"], job["backend"], job["precision"]), (gpu, "pjrt", "tf32"))
            self.assertTrue(job["verified"], job)
        gpus = [d for d in self.server.get("/devices").json()["devices"] if d["type"] == "gpu"]
        self.assertTrue(all(d["executable"] and d["pjrt"]["usable"] for d in gpus))
        self.assertProblem(self.server.request("POST", "/run", json_body={"kernel": "dot", "n": 5,
                                                                          "precision": "tf32"}),
                           400, "NOT_APPLICABLE")
        self.assertProblem(self.server.request("POST", "/run", json_body=dict(SGEMM, precision="fp8")), 400,
                           "INVALID_VALUE")


class GpuHeldElsewhere(ServerTestCase):
    """gpu:1 is held by another process (this test's, as NVML lists it): the plugin skips it as XLA does, gpu:0
    runs, and gpu:1's jobs answer 409 naming the holder, or fall back."""

    server_env = clean(gpu_env(FAKE_PJRT_BUSY_DEVICES="1", FAKE_NVML_PROCESSES=f"1:{os.getpid()}"))

    def test_only_the_held_gpu_is_busy_and_its_holder_named(self):
        r = self.server.request("POST", "/run", json_body=dict(SGEMM, device="gpu:0"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["backend"], "pjrt")
        r = self.server.request("POST", "/run", json_body=dict(SGEMM, device="gpu:1"))
        self.assertProblem(r, 409, "DEVICE_BUSY")
        self.assertIn(f"gpu:1 is held by process {os.getpid()} (", r.json()["detail"])
        # the plugin's warning reaches the service's log through the worker's stderr, a moment after the answer
        self.server.wait_for(lambda l: "unable to create StreamExecutor for CUDA:1" in json.dumps(l))
        r = self.server.request("POST", "/run", json_body=dict(SGEMM, device="gpu:1", fallback=True))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["fallback_from"], "gpu:1")
        self.assertIn("DEVICE_BUSY", r.json()["fallback_reason"])


class GpuMemoryHeldElsewhere(ServerTestCase):
    """Another process (this test's, as NVML lists it) holds 79 GB of gpu:0's 85.5: a job that fits the GPU but not
    what is free is refused up front with 409 naming the holder and what is free, rather than admitted to fail for
    memory after its client and compile (as on an H200 beside JAX: tests/gpu/runs/2026-11-28-h200-1); a job that fits
    runs."""

    server_env = clean(gpu_env(FAKE_NVML_MEMORY_USED="80000000000",
                               FAKE_NVML_PROCESSES=f"0:{os.getpid()}:79000000000",
                               ACCELD_EXEC_MAX_ELEMENTS="4000000000"))

    def test_a_job_beyond_the_free_memory_is_busy(self):
        free = self.server.get("/devices/gpu:0").json()["memory"]["available_bytes"]
        self.assertLess(free, 6 * 10**9)
        r = self.server.request("POST", "/run", json_body={"kernel": "saxpy", "n": 500000000, "device": "gpu:0",
                                                           "backend": "pjrt"})
        self.assertProblem(r, 409, "DEVICE_BUSY")
        detail = r.json()["detail"]
        self.assertIn(f"gpu:0's memory is held by process {os.getpid()} (", detail)
        self.assertIn("holding 79000000000 bytes", detail)
        self.assertIn(f"{free} of its ", detail)
        self.assertIn("the job's buffers take 6000000000 bytes", detail)
        r = self.server.request("POST", "/run", json_body=dict(SGEMM, device="gpu:0"))
        self.assertEqual(r.status, 200, r)


class Timeouts(unittest.TestCase):
    def test_overrun_answers_504_and_the_device_recovers(self):
        with Server(env=clean(tpu_env(FAKE_PJRT_SLOW_MS="1500"))) as s:
            t0 = time.monotonic()
            r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:0", timeout_ms=300))
            self.assertEqual(r.status, 504, r)
            self.assertLess(time.monotonic() - t0, 1.4)
            # the abandoned program ends, its client is closed, and the next job (slow too) is answered
            deadline = time.monotonic() + 20
            while True:
                r = s.request("POST", "/run", json_body=dict(SGEMM, device="tpu:0", timeout_ms=10000))
                if r.status == 200:
                    break
                self.assertEqual(r.status, 409, r)  # DEVICE_BUSY while the abandoned program still runs
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.2)


class CompileCacheOnDisk(unittest.TestCase):
    """Compiled programs outlive the process: a second `acceld run` loads the first one's, and an entry that is
    truncated or from another plugin version is refused and replaced (the stand-in logs every real compile)."""

    def test_second_process_loads_what_the_first_compiled(self):
        # a job of one program: inputs under 64 KiB are made on the host and an output of 4,096 elements or fewer is
        # its own sample, so neither the generator nor the gather is compiled beside the kernel
        with tempfile.TemporaryDirectory(prefix="acceld-pjrt-cache-") as tmp:
            cache, log = os.path.join(tmp, "cache"), os.path.join(tmp, "compiles.log")

            def run(**extra):
                env = clean(tpu_env(ACCELD_PJRT_CACHE_DIR=cache, FAKE_PJRT_COMPILE_LOG=log, **extra))
                r = run_cli("run", "sgemm", "--m", "32", "--n", "32", "--k", "32", "--device", "tpu:0",
                            "--backend", "pjrt", "--verify", "--json", "--db", ":memory:", env=env)
                self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
                self.assertTrue(json.loads(r.stdout)["verified"])
                with open(log, encoding="utf-8") as f:
                    return sum(line.endswith(" compile sgemm\n") for line in f), json.loads(r.stdout)

            # the job's own program counts (the inputs' generator and the sample's gather are compiled and kept too)
            compiles, job = run()
            self.assertEqual(compiles, 1)
            self.assertFalse(job["program_cached"])
            entries = sorted(os.path.join(cache, n) for n in os.listdir(cache))
            self.assertTrue(entries)
            sizes = [os.path.getsize(e) for e in entries]
            compiles, job = run()
            self.assertEqual(compiles, 1)  # loaded, not compiled
            self.assertTrue(job["program_cached"])
            # a truncated entry is refused, compiled anew and replaced
            for entry, size in zip(entries, sizes):
                with open(entry, "r+b") as f:
                    f.truncate(size - 7)
            self.assertEqual(run()[0], 2)
            self.assertEqual([os.path.getsize(e) for e in entries], sizes)
            self.assertEqual(run()[0], 2)
            # another plugin version's entry in the same place is refused and replaced, both ways
            self.assertEqual(run(FAKE_PJRT_VERSION="0.114")[0], 3)
            self.assertEqual(run(FAKE_PJRT_VERSION="0.114")[0], 3)
            self.assertEqual(run()[0], 4)
            self.assertEqual(run()[0], 4)
            self.assertEqual(len(os.listdir(cache)), len(entries))

    def test_off_when_its_bound_is_zero(self):
        with tempfile.TemporaryDirectory(prefix="acceld-pjrt-cache-") as tmp:
            cache, log = os.path.join(tmp, "cache"), os.path.join(tmp, "compiles.log")
            env = clean(tpu_env(ACCELD_PJRT_CACHE_DIR=cache, ACCELD_PJRT_CACHE_BYTES="0", FAKE_PJRT_COMPILE_LOG=log))
            for _ in range(2):
                r = run_cli("run", "sgemm", "--m", "32", "--n", "32", "--k", "32", "--device", "tpu:0",
                            "--backend", "pjrt", "--db", ":memory:", env=env)
                self.assertEqual(r.returncode, 0, r.stderr)
            with open(log, encoding="utf-8") as f:
                self.assertEqual(sum(line.endswith(" compile sgemm\n") for line in f), 2)
            self.assertFalse(os.path.exists(cache))


class ConformanceTable(unittest.TestCase):
    """tests/pjrt_conformance.md and the stand-in's conformance tests name each other, one to one."""

    def test_every_row_has_its_test(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with open(os.path.join(root, "tests", "pjrt_conformance.md"), encoding="utf-8") as f:
            rows = [line.split("|")[1].strip() for line in f if line.startswith("| ") and " | " in line]
        ids = [r for r in rows if r not in ("id", "---")]
        with open(os.path.join(root, "tests", "unit", "exec", "backend", "test_pjrt_fake.c"), encoding="utf-8") as f:
            source = f.read()
        tests = set(re.findall(r"START_TEST\(conf_(\w+)\)", source))
        registered = set(re.findall(r"tcase_add_test\(conformance, conf_(\w+)\)", source))
        self.assertTrue(ids)
        self.assertEqual(sorted(i.replace("-", "_") for i in ids), sorted(tests))
        self.assertEqual(tests, registered)


if __name__ == "__main__":
    unittest.main()
