"""Fault injection against the built binary, one fault per test: no OpenCL platform, broken OpenCL vendor libraries,
NVML missing or losing its GPUs under a running service, a GPU vanishing from sysfs between refreshes, SIGKILL while
a job runs, and SIGTERM with jobs in flight. In every case the service keeps answering, never with a 5xx other than
the documented 503s, and says what went wrong where the code knows it.

(Database faults are in test_store_faults.py; the plain drain and grace cases in test_foundation.py.)"""
import os
import shutil
import signal
import sqlite3
import threading
import time
import unittest

from harness import FAKES, FIXTURES, ROOT, ServersTestCase, until

BUILD = os.environ.get("ACCELD_BUILD", "build")
POCL_CACHE = os.path.join(ROOT, BUILD, "pocl-cache")
FAKE_NVML = os.path.join(FAKES, "libnvml.so")
BAD_ICD = os.path.join(FAKES, "libbadicd.so")
SYSTEM_VENDORS = "/etc/OpenCL/vendors"
SAXPY = {"kernel": "saxpy", "n": 4096, "alpha": 2, "generate": {"seed": 3}, "verify": True}


wait = until


class FaultCase(ServersTestCase):
    tmp_prefix = "acceld-faults-"

    def path(self, *names):
        return os.path.join(self.tmp.name, *names)

    def start(self, args=(), env=None, db=None):
        return super().start(args, dict({"ACCELD_POCL_CACHE_DIR": POCL_CACHE}, **(env or {})), db)

    def problem(self, r, status=None, reason=None):
        """An RFC 9457 problem (any 4xx when status is None) with every member the contract names."""
        if status is None:
            self.assertTrue(400 <= r.status < 500, r)
        else:
            self.assertEqual(r.status, status, r)
        self.assertTrue(r.header("Content-Type").startswith("application/problem+json"), r)
        doc = r.json()
        for key in ("type", "title", "status", "detail", "reason", "request_id"):
            self.assertIn(key, doc)
        self.assertEqual(doc["status"], r.status)
        if reason is not None:
            self.assertEqual(doc["reason"], reason, doc)
        return doc

    def devices(self, s):
        r = s.get("/devices")
        self.assertEqual(r.status, 200, r)
        return r.json()

    def probe(self, doc, name):
        return next(p for p in doc["probes"] if p["name"] == name)

    def assert_serving(self, s):
        """The service answers its probes and reads: ready, alive, no 5xx."""
        self.assertEqual(s.get("/livez").status, 200)
        r = s.get("/readyz?verbose")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.text.endswith("readyz check passed\n"), r.text)
        for path in ("/devices", "/devices/cpu:0", "/select", "/metrics", "/run", "/cost", "/version"):
            self.assertLess(s.get(path).status, 500, path)

    def run_job(self, s, body):
        r = s.request("POST", "/run", json_body=body)
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual(doc["state"], "succeeded", doc)
        return doc


class OpenCLFaults(FaultCase):
    """The ICD loader finds no usable platform: acceld runs on the CPU natively and says OpenCL is unavailable."""

    def vendors(self, files):
        d = self.path("vendors")
        os.mkdir(d)
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text + "\n")
        return d

    def check_no_opencl(self, s):
        self.assert_serving(s)
        doc = self.devices(s)
        ocl = self.probe(doc, "opencl")
        self.assertTrue(ocl["ok"], ocl)
        self.assertFalse(ocl["available"], ocl)
        self.assertEqual(ocl["found"], 0)
        self.assertIn("no OpenCL platform", ocl["why"])
        self.assertEqual([d["id"] for d in doc["devices"]], ["cpu:0"])
        cpu = doc["devices"][0]
        self.assertNotIn("opencl", cpu["seen_by"])
        self.assertEqual(cpu["backends"], ["native"])
        self.assertNotIn("opencl", cpu)
        self.assertIn("native", cpu["backends"])
        self.assertTrue(cpu["executable"])
        # jobs still run natively, automatic placement or on cpu:0 by name
        for body in (SAXPY, dict(SAXPY, device="cpu:0"), {"kernel": "sgemm", "m": 64, "n": 48, "k": 32,
                                                         "verify": True}):
            doc = self.run_job(s, body)
            self.assertEqual((doc["device"], doc["backend"]), ("cpu:0", "native"))
            self.assertTrue(doc["verified"], doc)
        # asking for OpenCL is refused plainly, by name or by preference, and nothing is run
        for body in (dict(SAXPY, backend="opencl"), dict(SAXPY, backend="opencl", device="cpu:0")):
            p = self.problem(s.request("POST", "/run", json_body=body), 422, "UNSUPPORTED")
            self.assertIn("requested backend is not available", p["detail"])
        p = self.problem(s.request("POST", "/run", json_body=dict(SAXPY, prefer="gpu", fallback=False)), 409,
                         "NO_MATCHING_DEVICE")
        # re-probing meets the same fault and changes nothing
        r = s.request("POST", "/devices/refresh")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([d["id"] for d in r.json()["devices"]], ["cpu:0"])
        self.assertFalse(self.probe(r.json(), "opencl")["available"])
        self.assertEqual(s.get("/select?prefer=gpu").json()["device"]["id"], "cpu:0")
        metrics = s.get("/metrics").text
        self.assertIn('acceld_probe_success{probe="opencl"} 1', metrics)

    def test_empty_vendors_folder(self):
        s = self.start(env={"OCL_ICD_VENDORS": self.vendors({})})
        self.check_no_opencl(s)

    def test_icd_naming_a_missing_library(self):
        s = self.start(env={"OCL_ICD_VENDORS": self.vendors({"gone.icd": "/nonexistent/libvendor-opencl.so.1"})})
        self.check_no_opencl(s)

    def test_icd_naming_a_library_that_is_not_a_driver(self):
        self.assertTrue(os.path.exists(FAKE_NVML), FAKE_NVML)
        s = self.start(env={"OCL_ICD_VENDORS": self.vendors({"nvml.icd": FAKE_NVML, "libm.icd": "libm.so.6"})})
        self.check_no_opencl(s)

    def test_driver_whose_platform_query_fails(self):
        mark = self.path("called")
        s = self.start(env={"OCL_ICD_VENDORS": self.vendors({"bad.icd": BAD_ICD}), "FAKE_ICD_MARK": mark})
        self.check_no_opencl(s)
        self.assertTrue(os.path.exists(mark), "the loader never reached the broken driver")

    def test_broken_driver_beside_a_working_one(self):
        """One broken vendor hides nobody else: PoCL is still found and runs jobs."""
        with open(os.path.join(SYSTEM_VENDORS, "pocl.icd")) as f:
            pocl = f.read().strip()
        mark = self.path("called")
        s = self.start(env={"OCL_ICD_VENDORS": self.vendors({"a-bad.icd": BAD_ICD, "b-gone.icd": "/nonexistent/x.so",
                                                              "pocl.icd": pocl}),
                            "FAKE_ICD_MARK": mark})
        self.assert_serving(s)
        self.assertTrue(os.path.exists(mark), "the loader never reached the broken driver")
        doc = self.devices(s)
        ocl = self.probe(doc, "opencl")
        self.assertTrue(ocl["ok"] and ocl["available"], ocl)
        self.assertGreaterEqual(ocl["found"], 1)
        cpu = doc["devices"][0]
        self.assertIn("opencl", cpu["seen_by"])
        self.assertIn("Portable Computing Language", cpu["opencl"]["platform"])
        job = self.run_job(s, dict(SAXPY, device="cpu:0", backend="opencl"))
        self.assertEqual(job["backend"], "opencl")
        self.assertTrue(job["verified"], job)


class NvmlFaults(FaultCase):
    def check_cpu_only(self, s, why):
        self.assert_serving(s)
        doc = self.devices(s)
        nvml = self.probe(doc, "nvml")
        self.assertIn(why, nvml["why"])
        self.assertEqual([d["type"] for d in doc["devices"]], ["cpu"])
        self.assertEqual(self.run_job(s, dict(SAXPY, prefer="gpu"))["device"], "cpu:0")
        return nvml

    def test_library_missing_or_unusable(self):
        # a missing library means no NVIDIA driver: not a failure of the probe
        s = self.start(args=["--nvml-library", "/nonexistent/libnvidia-ml.so.1"])
        nvml = self.check_cpu_only(s, "/nonexistent/libnvidia-ml.so.1")
        self.assertTrue(nvml["ok"])
        self.assertFalse(nvml["available"])
        # a library that is not NVML, and an NVML whose driver is not loaded, are failures and logged as such
        for env, why in (({"ACCELD_NVML_LIBRARY": BAD_ICD}, "lacks nvmlInit"),
                         ({"ACCELD_NVML_LIBRARY": FAKE_NVML, "FAKE_NVML_INIT_FAIL": "1"},
                          "nvmlInit: Driver Not Loaded")):
            with self.subTest(why=why):
                s = self.start(env=env)
                nvml = self.check_cpu_only(s, why)
                self.assertFalse(nvml["ok"], nvml)
                line = s.wait_for(lambda l: l.get("msg") == "probe failed" and l.get("probe") == "nvml")
                self.assertIn(why, line["why"])
                self.assertIn('acceld_probe_success{probe="nvml"} 0', s.get("/metrics").text)

    def test_gpus_lost_while_serving(self):
        lost = self.path("lost")
        s = self.start(args=["--telemetry-interval", "100ms"],
                       env={"ACCELD_NVML_LIBRARY": FAKE_NVML, "FAKE_NVML_LOST_FILE": lost})
        doc = self.devices(s)
        gpus = {d["id"]: d for d in doc["devices"] if d["type"] == "gpu"}
        self.assertEqual(sorted(gpus), ["gpu:0", "gpu:1"])
        sampled = gpus["gpu:0"]["telemetry"]["sampled_at"]

        open(lost, "w").close()
        # the telemetry refresh fails: the probe says so, the GPUs keep their last values and when they were read
        nvml = wait(lambda: (lambda p: p if not p["ok"] else None)(self.probe(self.devices(s), "nvml")),
                    what="nvml refresh failing")
        self.assertIn("GPU is lost", nvml["why"])
        self.assertTrue(nvml["why"].startswith("refresh: "), nvml)
        # logged once when it starts failing
        line = s.wait_for(lambda l: l.get("msg") == "telemetry refresh failed")
        self.assertEqual((line["level"], line["probe"]), ("warn", "nvml"))
        doc = self.devices(s)
        self.assertEqual(doc["devices"][1]["telemetry"]["sampled_at"], sampled)
        self.assertIn('acceld_probe_success{probe="nvml"} 0', s.get("/metrics").text)
        self.assert_serving(s)

        # a full re-probe drops the GPUs it cannot reach; every reader follows
        r = s.request("POST", "/devices/refresh")
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual([d["id"] for d in doc["devices"]], ["cpu:0"])
        nvml = self.probe(doc, "nvml")
        self.assertEqual(nvml["found"], 0)
        self.assertFalse(nvml["ok"])  # GPUs counted and none reachable is a failure, not an empty host
        self.assertIn("gpu 0 handle: GPU is lost", nvml["why"])
        self.assertIn('acceld_probe_success{probe="nvml"} 0', s.get("/metrics").text)
        gone = s.wait_for(lambda l: l.get("msg") == "device gone" and l.get("device") == "gpu:1")
        self.assertEqual(gone["level"], "warn")
        self.assertEqual(gone["uuid"], gpus["gpu:1"]["uuid"])
        self.problem(s.get("/devices/gpu:0"), 404, "UNKNOWN_DEVICE")
        self.problem(s.get("/select?device=gpu:0"), 404, "UNKNOWN_DEVICE")
        sel = s.get("/select?prefer=gpu")
        self.assertEqual(sel.status, 200, sel)
        self.assertEqual(sel.json()["device"]["id"], "cpu:0")
        self.assertNotIn('id="gpu:0"', s.get("/metrics").text)
        self.assert_serving(s)

        # the driver comes back: the next re-probe finds the same GPUs under the same ids
        os.unlink(lost)
        r = s.request("POST", "/devices/refresh")
        self.assertEqual(r.status, 200, r)
        back = {d["id"]: d for d in r.json()["devices"] if d["type"] == "gpu"}
        self.assertEqual({k: v["uuid"] for k, v in back.items()}, {k: v["uuid"] for k, v in gpus.items()})
        self.assertTrue(self.probe(r.json(), "nvml")["ok"])
        self.assertEqual(s.get("/devices/gpu:1").status, 200)
        s.wait_for(lambda l: l.get("msg") == "device found" and l.get("device") == "gpu:1")
        s.wait_for(lambda l: l.get("msg") == "telemetry refresh recovered")


class DeviceVanishes(FaultCase):
    """An AMD GPU disappears from sysfs (unplugged, driver unbound) between two probes."""

    def test_gpu_removed_between_refreshes(self):
        root = self.path("host")
        shutil.copytree(os.path.join(FIXTURES, "amd-mi300x"), root, symlinks=True)
        s = self.start(args=["--sample-interval", "100ms"],
                       env={"ACCELD_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1",
                            "ACCELD_SYSFS_ROOT": os.path.join(root, "sys"),
                            "ACCELD_DEV_ROOT": os.path.join(root, "dev")})
        doc = self.devices(s)
        gpus = {d["id"]: d for d in doc["devices"] if d["type"] == "gpu"}
        self.assertEqual(sorted(gpus), ["gpu:0", "gpu:1"])
        self.assertEqual(gpus["gpu:1"]["pci_bus_id"], "0000:22:00.0")
        keep = gpus["gpu:0"]
        # wait until gpu:1 has history, so there is something to read after it is gone
        wait(lambda: s.get("/history?device=gpu:1").json()["series"][0]["points"], what="gpu:1 history")

        shutil.rmtree(os.path.join(root, "sys/class/drm/card1"))
        os.unlink(os.path.join(root, "sys/bus/pci/devices/0000:22:00.0"))
        shutil.rmtree(os.path.join(root, "sys/devices/pci0000:00/0000:22:00.0"))

        r = s.request("POST", "/devices/refresh")
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual([d["id"] for d in doc["devices"]], ["cpu:0", "gpu:0"])
        self.assertEqual(doc["devices"][1]["pci_bus_id"], keep["pci_bus_id"])
        self.assertEqual(doc["devices"][1]["uuid"], keep["uuid"])
        self.assertTrue(self.probe(doc, "sysfs-gpu")["ok"])
        self.assertEqual(self.probe(doc, "sysfs-gpu")["found"], 1)
        gone = s.wait_for(lambda l: l.get("msg") == "device gone")
        self.assertEqual((gone["device"], gone["pci_bus_id"]), ("gpu:1", "0000:22:00.0"))

        # gone from the host: every endpoint that names it answers the same 404
        p = self.problem(s.get("/devices/gpu:1"), 404, "UNKNOWN_DEVICE")
        self.assertIn("gpu:1", p["detail"])
        p = self.problem(s.get("/select?device=gpu:1"), 404, "UNKNOWN_DEVICE")
        self.assertEqual(p["device"], "gpu:1")
        self.problem(s.request("POST", "/select", json_body={"device": "gpu:1"}), 404, "UNKNOWN_DEVICE")
        self.problem(s.get("/batch-config?device=gpu:1&base=8"), 404, "UNKNOWN_DEVICE")
        self.problem(s.get("/cost/estimate?device=gpu:1&seconds=10"), 404, "UNKNOWN_DEVICE")
        self.assertEqual(s.get("/select?prefer=gpu").json()["device"]["id"], "gpu:0")
        # a job naming it is refused and runs nowhere
        p = self.problem(s.request("POST", "/run", json_body=dict(SAXPY, device="gpu:1")), 404, "UNKNOWN_DEVICE")
        self.assertIn("gpu:1", p["detail"])
        self.assertEqual(p["device"], "gpu:1")
        # what history knows stays readable
        h = s.get("/history?device=gpu:1")
        self.assertEqual(h.status, 200, h)
        self.assertTrue(h.json()["series"][0]["points"])
        c = s.get("/cost?device=gpu:1")
        self.assertEqual(c.status, 200, c)
        self.assertFalse(c.json()["devices"][0]["present"])
        self.assertNotIn('device="gpu:1"', s.get("/metrics").text)
        self.assert_serving(s)


    def test_lower_gpu_removed_renames_the_next(self):
        """Ids follow PCI order: when gpu:0 goes, the next GPU is named gpu:0; jobs never go to the wrong one."""
        root = self.path("host")
        shutil.copytree(os.path.join(FIXTURES, "amd-mi300x"), root, symlinks=True)
        s = self.start(env={"ACCELD_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1",
                            "ACCELD_SYSFS_ROOT": os.path.join(root, "sys"),
                            "ACCELD_DEV_ROOT": os.path.join(root, "dev")})
        self.assertEqual(s.get("/devices/gpu:0").json()["pci_bus_id"], "0000:0c:00.0")
        for card in ("card0", "card0-DP-1", "card3"):
            shutil.rmtree(os.path.join(root, "sys/class/drm", card))
        os.unlink(os.path.join(root, "sys/bus/pci/devices/0000:0c:00.0"))
        shutil.rmtree(os.path.join(root, "sys/devices/pci0000:00/0000:0c:00.0"))
        self.assertEqual(s.request("POST", "/devices/refresh").status, 200)
        self.assertEqual(s.get("/devices/gpu:0").json()["pci_bus_id"], "0000:22:00.0")
        p = self.problem(s.request("POST", "/run", json_body=dict(SAXPY, device="gpu:0")), 409, "DEVICE_CHANGED")
        self.assertIn("restart", p["detail"])
        self.problem(s.request("POST", "/run", json_body=dict(SAXPY, device="gpu:1")), 404, "UNKNOWN_DEVICE")
        # placement by preference skips both and falls back to the CPU
        self.assertEqual(self.run_job(s, dict(SAXPY, prefer="gpu"))["device"], "cpu:0")
        self.assert_serving(s)


class KilledWhileRunning(FaultCase):
    def jobs_recorded(self, s):
        r = s.get("/cost?device=cpu:0")
        return r.json()["devices"][0]["jobs"]["count"] if r.status == 200 else -1

    def test_sigkill_during_a_job(self):
        db = self.path("jobs.db")
        s = self.start(db=db)
        done = [self.run_job(s, dict(SAXPY, device="cpu:0"))["id"] for _ in range(3)]
        # committed before the kill (the writer batches about once a second)
        wait(lambda: self.jobs_recorded(s) >= 3, what="finished jobs committed")
        r = s.request("POST", "/run", json_body={"kernel": "sgemm", "m": 8192, "n": 8192, "k": 8192,
                                                 "device": "cpu:0", "wait": False})
        self.assertEqual(r.status, 202, r)
        running = r.json()["id"]
        wait(lambda: s.get("/run/" + running).json()["state"] == "running", what="job running")

        def stored_state():
            con = sqlite3.connect(db)
            try:
                row = con.execute("SELECT state FROM jobs WHERE id = ?", (running,)).fetchone()
            finally:
                con.close()
            return row[0] if row else None

        # a job has its row from the moment it starts (committed with the next batch, about a second later)
        wait(lambda: stored_state() == "running", what="the running job's row committed")
        s.proc.send_signal(signal.SIGKILL)
        self.assertEqual(s.proc.wait(30), -signal.SIGKILL)

        con = sqlite3.connect(db)
        try:
            self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            rows = dict(con.execute("SELECT id, state FROM jobs").fetchall())
        finally:
            con.close()
        self.assertEqual({i: rows.get(i) for i in done}, {i: "succeeded" for i in done})
        self.assertEqual(rows[running], "running")

        s2 = self.start(db=db)
        self.assert_serving(s2)
        wait(lambda: s2.get("/run/" + running).status == 200 and
             s2.get("/run/" + running).json()["state"] == "interrupted", what="the job marked interrupted")
        job = s2.get("/run/" + running).json()
        self.assertEqual(job["source"], "history")
        self.assertEqual(job["kernel"], "sgemm")
        self.assertEqual(job["sizes"], {"m": 8192, "n": 8192, "k": 8192})
        self.assertEqual(job["error"]["reason"], "INTERRUPTED")
        self.assertIn("run time is unknown", job["error"]["detail"])
        self.assertEqual(job["timing"]["total_ms"], 0)
        self.assertIn("started_at", job)
        # the finished jobs read back from the history the same way, results aside
        for i in done:
            old = s2.get("/run/" + i).json()
            self.assertEqual((old["state"], old["source"]), ("succeeded", "history"))
        self.assertEqual(self.jobs_recorded(s2), len(rows))
        # the downtime is not counted as the interrupted job's run time
        usage = s2.get("/cost?device=cpu:0").json()["devices"][0]["jobs"]
        self.assertLess(usage["seconds"], 1.0, usage)
        self.assertEqual(self.run_job(s2, SAXPY)["device"], "cpu:0")
        self.assertEqual(s2.stop(), 0)
        con = sqlite3.connect(db)
        try:
            self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        finally:
            con.close()

    def test_unfinished_rows_marked_interrupted_at_start(self):
        """Rows a crash left 'queued' or 'running' become 'interrupted' at the next start; finished rows stay."""
        db = self.path("left.db")
        s = self.start(db=db)
        self.assertEqual(s.stop(), 0)
        now = int(time.time() * 1000)
        con = sqlite3.connect(db)
        con.executemany("INSERT INTO jobs (id, device, kernel, backend, state, submitted_at, started_at, "
                        "finished_at, n, total_ms) VALUES (?, 'cpu:0', 'saxpy', 'native', ?, ?, ?, ?, 8, ?)",
                        [("left-running", "running", now - 3000, now - 2000, None, None),
                         ("left-queued", "queued", now - 1000, None, None, None),
                         ("was-done", "succeeded", now - 5000, now - 5000, now - 4000, 1000.0)])
        con.commit()
        con.close()
        s = self.start(db=db)
        line = s.wait_for(lambda l: l.get("msg") == "jobs left unfinished by the last run marked interrupted")
        self.assertEqual(line["jobs"], 2)
        self.assertEqual(line["level"], "warn")
        self.assert_serving(s)
        con = sqlite3.connect(db)
        try:
            rows = {r[0]: r[1:] for r in con.execute("SELECT id, state, finished_at, error FROM jobs")}
        finally:
            con.close()
        for jid in ("left-running", "left-queued"):
            state, finished, error = rows[jid]
            self.assertEqual(state, "interrupted")
            self.assertGreaterEqual(finished, now)
            self.assertEqual(error, "acceld stopped before the job finished; its run time is unknown")
        self.assertEqual(rows["was-done"], ("succeeded", now - 4000, None))


class TerminatedWithJobsInFlight(FaultCase):
    def test_sigterm_answers_the_job_that_fits_the_grace(self):
        """A job running at SIGTERM that ends inside the grace period is answered 200 and recorded; the one queued
        behind it is answered 503 SHUTTING_DOWN (or 200 if it ended in time); the process exits 0 either way."""
        db = self.path("term.db")
        s = self.start(args=["--shutdown-grace", "8s"], db=db)
        answers = {}

        def submit(name, body):
            try:
                answers[name] = s.request("POST", "/run", json_body=body, conn=s.conn(timeout=120))
            except Exception as e:  # a dropped connection is one of the faults this test guards against
                answers[name] = e

        short = {"kernel": "sgemm", "m": 2048, "n": 2048, "k": 2048, "device": "cpu:0", "timeout_ms": 120000}
        long = dict(short, m=8192, n=8192, k=8192)
        threads = [threading.Thread(target=submit, args=("short", short))]
        threads[0].start()

        def listed(state, m):
            return [j for j in s.get("/run?state=" + state).json()["jobs"] if j["sizes"].get("m") == m]

        short_job = wait(lambda: listed("running", 2048), what="short job running")[0]
        threads.append(threading.Thread(target=submit, args=("long", long)))
        threads[1].start()
        wait(lambda: listed("queued", 8192) or listed("running", 8192) or "long" in answers,
             what="long job queued")
        s.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(120)
        self.assertEqual(s.proc.wait(60), 0)

        r = answers["short"]
        self.assertNotIsInstance(r, Exception)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["id"], short_job["id"])
        self.assertEqual(r.json()["state"], "succeeded")
        r = answers["long"]
        self.assertNotIsInstance(r, Exception)
        if r.status != 200:
            self.problem(r, 503, "SHUTTING_DOWN")
        self.assertTrue(any(l.get("msg") == "draining" for l in s.logs))
        # the job finished during the drain was committed before the process left
        con = sqlite3.connect(db)
        try:
            self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            self.assertEqual(con.execute("SELECT state FROM jobs WHERE id = ?", (short_job["id"],)).fetchone(),
                             ("succeeded",))
        finally:
            con.close()


if __name__ == "__main__":
    unittest.main()
