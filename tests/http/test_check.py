"""Device health checks against the built binary: POST /devices/{id}/check, GET /devices/{id}/checks[/{check_id}],
their traces in GET /devices, /select and /metrics, SIGTERM and crash interruptions, periodic checks, and
`acceld check` with its exit codes.

A real check of cpu:0 runs the real kernels; its thresholds are opened wide here (warn below 1 %, fail below 0 %),
since how fast this shared machine is at a given moment is not what these tests check; the verdict rules are
checked deterministically in the unit tests and on the fake GPU below. The fake GPU is the fake NVML's H100 with an
OpenCL view from a fake vendor driver (tests/fakes/fakecl.c) that computes on the host: detection merges the two
into one executable gpu:0 whose expected figures are an H100's, so it is always far too slow, and it can be told
to return wrong results or to slow down while a file exists; the fake NVML can run it hot with ECC errors."""
import functools
import json
import os
import signal
import unittest

from harness import FAKES, FIXTURES, ServersTestCase, run_cli, until
from test_metrics_api import parse, promtool_check

FAKE_NVML = os.path.join(FAKES, "libnvml.so")
FAKE_CL = os.path.join(FAKES, "libfakecl.so")
OPEN = ["--check-warn-percent", "1", "--check-fail-percent", "0", "--check-clock-percent", "0",
        "--check-transfer-percent", "0"]
# the fake devices' transfers, through the host's memory, are judged by nothing either
NO_FIGURE_RULES = ["--check-warn-percent", "0", "--check-fail-percent", "0", "--check-transfer-percent", "0"]


# a check takes seconds, more under a sanitizer on a busy machine
poll = functools.partial(until, timeout=180)


def vendors_dir(tmp):
    """An OCL_ICD_VENDORS folder naming the fake OpenCL driver only."""
    d = os.path.join(tmp, "vendors")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "fakecl.icd"), "w") as f:
        f.write(FAKE_CL + "\n")
    return d


class CheckCase(ServersTestCase):
    tmp_prefix = "acceld-check-"

    def fake_gpu_env(self, **extra):
        env = {"OCL_ICD_VENDORS": vendors_dir(self.tmp.name), "ACCELD_NVML_LIBRARY": FAKE_NVML}
        env.update(extra)
        return env

    def problem(self, r, status, reason):
        self.assertEqual(r.status, status, r)
        self.assertTrue(r.header("Content-Type").startswith("application/problem+json"), r)
        doc = r.json()
        self.assertEqual(doc["reason"], reason, doc)
        return doc

    def start_check(self, s, device, body=None):
        r = s.request("POST", f"/devices/{device}/check", json_body=body)
        self.assertEqual(r.status, 202, r)
        doc = r.json()
        self.assertEqual(r.header("Location"), f"/devices/{device}/checks/{doc['id']}")
        return doc

    def finished(self, s, device, check_id):
        def done():
            r = s.get(f"/devices/{device}/checks/{check_id}")
            self.assertEqual(r.status, 200, r)
            doc = r.json()
            return doc if doc["state"] in ("succeeded", "failed", "interrupted") else None
        return poll(done, what=f"check {check_id} finished")

    def part(self, doc, name):
        return next(t for t in doc["tests"] if t["name"] == name)


class CpuCheck(CheckCase):
    def test_quick_check_passes_and_feeds_history_metrics_devices_and_select(self):
        s = self.start(OPEN)
        # the estimate is a ceiling: a clock the host gives as a maximum, or the one measured by a chain of
        # dependent adds (issue #35: a VM without cpufreq reports its base clock, which sgemm beat by 20 %)
        estimate = s.get("/devices/cpu:0").json()["peak"]
        self.assertNotIn("lower bound", estimate["source"])
        started = self.start_check(s, "cpu:0")
        self.assertIn(started["state"], ("queued", "running"))
        self.assertEqual(started["level"], "quick")
        doc = self.finished(s, "cpu:0", started["id"])
        # a check ends in a job's words; whether the device is healthy is the verdict's to say
        self.assertEqual(doc["state"], "succeeded")
        self.assertEqual(doc["verdict"], "pass", doc["rule"])
        self.assertEqual(doc["backend"], "native")
        sgemm, triad = self.part(doc, "sgemm"), self.part(doc, "triad")
        for t in (sgemm, triad):
            self.assertEqual(t["state"], "succeeded")
            self.assertTrue(t["verified"], t)
            self.assertGreater(t["measured"], 0)
            self.assertGreaterEqual(t["runs"], 1)
        self.assertGreaterEqual(sgemm["size"]["n"], 256)
        # the CPU's own computed peak is the expected figure, and says how it was computed
        self.assertIn("estimate, not measured", sgemm["expected_source"])
        self.assertGreater(sgemm["expected"], 0)
        # and sgemm stays under it on this host
        self.assertLess(sgemm["measured"], estimate["fp32_gflops"], estimate["source"])
        # arrays four times the last-level cache, at least 16 MiB each
        self.assertGreaterEqual(triad["size"]["n"], 1 << 22)
        self.assertEqual(doc["measured"]["gflops"], sgemm["measured"])
        self.assertEqual(doc["measured"]["gbytes_per_s"], triad["measured"])
        # a CPU has no link to the host: no transfer test
        self.assertNotIn("transfer", [t["name"] for t in doc["tests"]])
        self.assertNotIn("transfer_ms", doc["budget"])

        # its jobs are listed, each saying the check made it
        jobs = s.get("/run?page_size=100").json()["jobs"]
        made = [j for j in jobs if j.get("check_id") == doc["id"]]
        self.assertEqual(len(made), doc["jobs"], jobs)
        self.assertTrue(all(j["trigger"] == "check" for j in made), made)
        job = s.get("/run/" + sgemm["last_job"]).json()
        self.assertEqual((job["trigger"], job["check_id"]), ("check", doc["id"]))

        # the history lists it first, the same document
        r = s.get("/devices/cpu:0/checks")
        self.assertEqual(r.status, 200, r)
        listed = r.json()["checks"]
        self.assertEqual(listed[0]["id"], doc["id"])
        self.assertEqual(listed[0]["verdict"], "pass")

        # GET /devices: the last check, and the CPU's estimate replaced by the measurement
        cpu = s.get("/devices/cpu:0").json()
        self.assertEqual(cpu["check"]["id"], doc["id"])
        self.assertEqual(cpu["check"]["verdict"], "pass")
        self.assertIn("measured by health check " + doc["id"], cpu["peak"]["source"])
        self.assertAlmostEqual(cpu["peak"]["fp32_gflops"], sgemm["measured"], places=3)
        self.assertAlmostEqual(cpu["peak"]["memory_gbytes_per_s"], triad["measured"], places=6)

        # /select ranks by the check's figures and says so
        for kernel in ("sgemm", "triad", "saxpy"):
            sel = s.get(f"/select?policy=fastest&kernel={kernel}").json()
            cand = next(c for c in sel["candidates"] if c["id"] == "cpu:0")
            self.assertEqual(cand["source"], "check", cand)
            self.assertIn("health check", cand["figure"])

        # /metrics: the last verdict and figures, and promtool accepts the scrape
        body = s.get("/metrics").body
        samples = {(n, tuple(sorted(l.items()))): float(v) for n, l, v in parse(body.decode())}
        self.assertEqual(samples[("acceld_device_check_verdict", (("device", "cpu:0"), ("verdict", "pass")))], 1)
        self.assertEqual(samples[("acceld_device_check_verdict", (("device", "cpu:0"), ("verdict", "fail")))], 0)
        self.assertAlmostEqual(samples[("acceld_device_check_sgemm_flops_per_second", (("device", "cpu:0"),))],
                               sgemm["measured"] * 1e9, delta=sgemm["measured"] * 1e3)
        self.assertGreater(samples[("acceld_device_check_triad_bytes_per_second", (("device", "cpu:0"),))], 0)
        self.assertGreater(samples[("acceld_device_check_timestamp_seconds", (("device", "cpu:0"),))], 1.7e9)
        self.assertEqual(samples[("acceld_device_checks_total", (("device", "cpu:0"), ("verdict", "pass")))], 1)
        self.assertEqual(samples[("acceld_device_check_running", (("device", "cpu:0"),))], 0)
        promtool_check(self, body)

        # after a restart the history still knows the figures
        s.stop()
        s2 = self.start(OPEN, db=s.db)
        cpu = s2.get("/devices/cpu:0").json()
        self.assertEqual(cpu["check"]["id"], doc["id"])
        self.assertIn("measured by health check", cpu["peak"]["source"])
        r = s2.get(f"/devices/cpu:0/checks/{doc['id']}")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["verdict"], "pass")

    def test_limits_and_bad_input(self):
        s = self.start(OPEN)
        self.problem(s.request("POST", "/devices/gpu:7/check"), 404, "UNKNOWN_DEVICE")
        self.problem(s.request("POST", "/devices/cpu:0/check", json_body={"level": "thorough"}), 400, "INVALID_VALUE")
        doc = self.problem(s.request("POST", "/devices/cpu:0/check", json_body={"duration_s": 10}), 400,
                           "NOT_APPLICABLE")
        self.assertEqual(doc["path"], "$.duration_s")
        self.problem(s.request("POST", "/devices/cpu:0/check", json_body={"level": "long", "duration_s": 99999}),
                     400, "INVALID_VALUE")
        self.problem(s.request("POST", "/devices/cpu:0/check", json_body={"lvl": "long"}), 400, "UNKNOWN_FIELD")
        self.problem(s.request("POST", "/devices/cpu:0/check", body=b"{", headers={"Content-Type": "application/json"}),
                     400, "MALFORMED_JSON")
        doc = self.problem(s.request("POST", "/devices/cpu:0/check?level=long"), 400, "UNKNOWN_PARAMETER")
        self.assertIn("field of the JSON body", doc["detail"])
        self.problem(s.get("/devices/gpu:7/checks"), 404, "UNKNOWN_DEVICE")
        self.problem(s.get("/devices/cpu:0/checks/chk-nope"), 404, "CHECK_NOT_FOUND")
        self.problem(s.get("/devices/cpu:0/checks?page_size=101"), 400, "INVALID_PARAMETER")
        self.problem(s.get("/devices/cpu:0/checks?page_token=chk-nope"), 400, "INVALID_PARAMETER")
        self.problem(s.request("DELETE", "/devices/cpu:0/checks"), 405, "METHOD_NOT_ALLOWED")

    def test_busy_device_jobs_still_run_and_sigterm_interrupts(self):
        s = self.start(OPEN)
        long_check = self.start_check(s, "cpu:0", {"level": "long", "duration_s": 600})
        poll(lambda: s.get(f"/devices/cpu:0/checks/{long_check['id']}").json()["state"] == "running",
             what="the long check running")
        # one check per device at a time
        doc = self.problem(s.request("POST", "/devices/cpu:0/check"), 409, "CHECK_RUNNING")
        self.assertIn(long_check["id"], doc["detail"])
        # GET /devices marks the device as being checked; jobs are not starved: they go between the check's runs
        self.assertEqual(s.get("/devices/cpu:0").json()["check"]["running"], long_check["id"])
        r = s.request("POST", "/run", json_body={"kernel": "saxpy", "n": 100000, "device": "cpu:0", "verify": True})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["verified"])
        self.assertEqual(s.get(f"/devices/cpu:0/checks/{long_check['id']}").json()["state"], "running")
        # SIGTERM: acceld stops without waiting for the check, and records it as interrupted
        self.assertEqual(s.stop(signal.SIGTERM), 0)
        s2 = self.start(OPEN, db=s.db)
        got = s2.get(f"/devices/cpu:0/checks/{long_check['id']}").json()
        self.assertEqual(got["state"], "interrupted", got)
        self.assertEqual(got["error"]["reason"], "INTERRUPTED")
        self.assertNotIn("verdict", got)
        self.assertEqual(s2.get("/devices/cpu:0/checks").json()["checks"][0]["id"], long_check["id"])

    def test_a_crash_leaves_the_check_interrupted(self):
        s = self.start(OPEN)
        c = self.start_check(s, "cpu:0", {"level": "long", "duration_s": 600})
        poll(lambda: s.get(f"/devices/cpu:0/checks/{c['id']}").json()["state"] == "running",
             what="the long check running")
        s.stop(signal.SIGKILL)
        s2 = self.start(OPEN, db=s.db)
        got = s2.get(f"/devices/cpu:0/checks/{c['id']}").json()
        self.assertEqual(got["state"], "interrupted", got)
        self.assertEqual(got["error"]["reason"], "INTERRUPTED")
        s2.wait_for(lambda l: l.get("msg") == "checks interrupted by the last stop" and l.get("checks") == 1)

    def test_the_token_guards_post(self):
        s = self.start(OPEN + ["--token", "sekrit"])
        self.problem(s.request("POST", "/devices/cpu:0/check"), 401, "UNAUTHORIZED")
        r = s.request("POST", "/devices/cpu:0/check", json_body={"wait": True},
                      headers={"Authorization": "Bearer sekrit"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["state"], "succeeded")
        # reads stay open
        self.assertEqual(s.get("/devices/cpu:0/checks").status, 200)

    def test_periodic_checks_run_on_idle_devices(self):
        s = self.start(OPEN + ["--check-interval", "1s"])
        doc = poll(lambda: next((c for c in s.get("/devices/cpu:0/checks").json()["checks"]
                                 if c["trigger"] == "schedule" and c["state"] == "succeeded"), None),
                   what="a scheduled check ended")
        self.assertEqual(doc["level"], "quick")
        self.assertEqual(doc["verdict"], "pass", doc["rule"])


class FakeGpuCheck(CheckCase):
    """gpu:0 is the fake NVML's H100 computing through the fake OpenCL driver, on the host."""

    def check_gpu(self, env=None, args=(), body=None):
        s = self.start(list(args), env=self.fake_gpu_env(**(env or {})))
        dev = s.get("/devices/gpu:0").json()
        self.assertTrue(dev["executable"], dev)
        self.assertEqual(dev["seen_by"], ["opencl", "nvml"])
        self.assertEqual(dev["backends"], ["opencl"])
        r = s.request("POST", "/devices/gpu:0/check", json_body=dict(body or {}, wait=True))
        self.assertEqual(r.status, 200, r)
        return s, r.json()

    def test_a_slow_device_fails_against_its_spec(self):
        s, doc = self.check_gpu()
        self.assertEqual(doc["verdict"], "fail")
        self.assertEqual(doc["backend"], "opencl")
        sgemm = self.part(doc, "sgemm")
        self.assertEqual(sgemm["verdict"], "fail")
        self.assertTrue(sgemm["verified"])
        # what a healthy H100 reaches through OpenCL: 0.11 of its 67 FP32 TFLOP/s, as measured on a real one
        self.assertAlmostEqual(sgemm["expected"], 7370, places=6)
        self.assertTrue(sgemm["expected_source"].startswith("table nvidia-h100-sxm"), sgemm["expected_source"])
        self.assertIn("x 0.11, what opencl reaches (measured on an H100 80GB HBM3", sgemm["expected_source"])
        self.assertRegex(doc["rule"], r"^sgemm: measured .* GFLOP/s is .* % of the expected 7370 GFLOP/s "
                                      r"\(fail below 10 %\)$")
        self.assertEqual(self.part(doc, "triad")["verdict"], "fail")
        # healthy telemetry otherwise
        tel = self.part(doc, "telemetry")
        self.assertEqual(tel["verdict"], "pass", tel)
        self.assertEqual(doc["telemetry"]["source"], "nvml")
        self.assertEqual(doc["telemetry"]["throttle_reasons"], [])
        self.assertEqual(doc["telemetry"]["ecc_uncorrected"]["end"], 0)
        # a GPU's spec peak stays: only a CPU's estimate is replaced by a measurement
        dev = s.get("/devices/gpu:0").json()
        self.assertEqual(dev["peak"]["fp32_gflops"], 67000)
        self.assertEqual(dev["check"]["verdict"], "fail")

    def test_transfers_are_measured_against_the_link(self):
        # the fake NVML's H100: idle at Gen1, Gen5 x16 at most; its transfers through the host's memory
        s, doc = self.check_gpu()
        t = self.part(doc, "transfer")
        self.assertEqual(t["kind"], "transfer")
        self.assertEqual(t["state"], "succeeded")
        self.assertTrue(t["verified"], t)
        self.assertGreaterEqual(t["runs"], 1)
        self.assertEqual(t["size"], {"bytes": 1 << 20, "m": 64, "n": 4096})
        self.assertEqual(t["link"], {"generation": 1, "width": 16, "max_generation": 5, "max_width": 16,
                                     "gbytes_per_s": 63.02})
        for way in ("upload", "download"):
            self.assertGreater(t[way + "_gbytes_per_s"], 0)
            self.assertAlmostEqual(t[way + "_ratio"], t[way + "_gbytes_per_s"] / 63.0154, places=3)
        self.assertAlmostEqual(t["expected"], 0.1 * 63.0154, places=3)
        self.assertTrue(t["expected_source"].startswith("10 % of the PCIe link"), t)
        # it warns or passes, never fails; how fast the host copies decides which
        self.assertIn(t["verdict"], ("pass", "warn"))
        self.assertRegex(t["rule"], r"^host to device .* GB/s \(.* %\), device to host .* GB/s \(.* %\) of the link's "
                                    r"theoretical 63.02 GB/s \(warn below 10 %\)$")
        self.assertEqual(doc["budget"]["transfer_ms"], 1500)
        # its jobs moved the host's data each way, as their timing says
        job = s.get("/run/" + t["last_job"]).json()
        self.assertEqual(job["timing"]["upload_bytes"], 1 << 20, job["timing"])
        self.assertEqual(job["timing"]["download_bytes"], 1 << 20, job["timing"])
        self.assertEqual(job["inputs"], "inline")
        # through pinned staging buffers the (fake) GPU driver allocated
        self.assertEqual(job["timing"]["transfer_memory"], "pinned", job["timing"])

    def test_transfers_fall_back_to_pageable_memory(self):
        s, doc = self.check_gpu(env={"FAKE_CL_NO_PINNED": "1"}, args=NO_FIGURE_RULES)
        t = self.part(doc, "transfer")
        self.assertTrue(t["verified"], t)
        job = s.get("/run/" + t["last_job"]).json()
        self.assertEqual(job["timing"]["transfer_memory"], "pageable", job["timing"])
        # said once, by the GPU's worker
        said = "no pinned staging buffer; transfers use pageable memory"
        line = s.wait_for(lambda l: said in l.get("msg", "") + l.get("line", ""))
        self.assertIn("clCreateBuffer (CL_MEM_ALLOC_HOST_PTR)", line.get("call", "") + line.get("line", ""))
        self.assertEqual(len([l for l in s.logs if said in l.get("msg", "") + l.get("line", "")]), 1)

    def test_an_unknown_link_records_the_rates(self):
        _, doc = self.check_gpu(env={"FAKE_NVML_NOT_SUPPORTED": "pcie"})
        t = self.part(doc, "transfer")
        self.assertNotIn("link", t)
        self.assertNotIn("expected", t)
        self.assertEqual(t["verdict"], "pass", t)
        self.assertIn("the PCIe link is unknown, so they are recorded only", t["rule"])

    def test_wrong_results_fail(self):
        _, doc = self.check_gpu(env={"FAKE_CL_WRONG": "1"}, args=NO_FIGURE_RULES)
        self.assertEqual(doc["verdict"], "fail")
        sgemm = self.part(doc, "sgemm")
        self.assertFalse(sgemm["verified"])
        self.assertIn("wrong result", sgemm["rule"])
        self.assertTrue(doc["rule"].startswith("sgemm: wrong result"), doc["rule"])
        self.assertNotIn("gflops", doc["measured"])

    def test_a_hot_throttled_device_warns(self):
        _, doc = self.check_gpu(env={"FAKE_NVML_THROTTLE": "thermal"}, args=NO_FIGURE_RULES)
        self.assertEqual(doc["verdict"], "warn", doc["rule"])
        tel = self.part(doc, "telemetry")
        self.assertEqual(tel["verdict"], "warn")
        self.assertIn("clocks held down during the check by sw_thermal, hw_thermal", tel["rule"])
        self.assertIn("past its slowdown temperature of 87 C", tel["rule"])
        self.assertEqual(doc["telemetry"]["temperature_celsius"]["max"], 92)
        self.assertEqual(doc["telemetry"]["clock_mhz"]["mean"], 1188)
        # a power cap alone is no fault
        _, doc = self.check_gpu(env={"FAKE_NVML_THROTTLE": "power"}, args=NO_FIGURE_RULES)
        self.assertEqual(doc["verdict"], "pass", doc["rule"])

    def test_ecc_errors_fail(self):
        _, doc = self.check_gpu(env={"FAKE_NVML_ECC": "2"}, args=NO_FIGURE_RULES)
        self.assertEqual(doc["verdict"], "fail")
        self.assertTrue(doc["rule"].startswith("telemetry: 2 uncorrectable ECC errors"), doc["rule"])

    def test_long_check_exposes_throttling_over_time(self):
        slow = os.path.join(self.tmp.name, "throttle")
        # 300 ms more per run (about 1.5x as long on this fake device): a drop no swing of a shared host hides (a
        # 150 ms slowdown once vanished in a host that got 20 % faster during the check)
        s = self.start(NO_FIGURE_RULES, env=self.fake_gpu_env(FAKE_CL_SLOW_FILE=slow, FAKE_CL_SLOW_MS="300"))
        c = self.start_check(s, "gpu:0", {"level": "long", "duration_s": 10})

        def sustained_runs():
            doc = s.get(f"/devices/gpu:0/checks/{c['id']}").json()
            t = self.part(doc, "sustained")
            return t.get("runs", 0) >= 4 or doc["state"] in ("succeeded", "failed", "interrupted")
        poll(sustained_runs, what="four sustained runs")
        # the device slows down from here on
        open(slow, "w").close()
        doc = self.finished(s, "gpu:0", c["id"])
        sus = self.part(doc, "sustained")
        self.assertEqual(doc["state"], "succeeded")
        self.assertEqual(sus["verdict"], "warn", sus)
        self.assertIn("thermal or power throttling", sus["rule"])
        self.assertLess(sus["sustained_ratio"], 0.9)
        self.assertGreater(len(doc["series"]), 1)
        self.assertEqual(doc["verdict"], "warn", doc["rule"])

    def test_a_device_without_a_backend_cannot_be_checked(self):
        s = self.start(env=self.fake_gpu_env())
        self.assertFalse(s.get("/devices/gpu:1").json()["executable"])
        self.problem(s.request("POST", "/devices/gpu:1/check"), 422, "UNSUPPORTED")


class FakeTpuCheck(CheckCase):
    """tpu:0 of the v6e fixture host runs through the stand-in PJRT plugin (tests/fakes/pjrt.c), on the host."""

    def tpu_env(self, **extra):
        env = {"ACCELD_SYSFS_ROOT": os.path.join(FIXTURES, "tpu-v6e-8", "sys"),
               "ACCELD_DEV_ROOT": os.path.join(FIXTURES, "tpu-v6e-8", "dev"),
               "ACCELD_PJRT_PLUGINS": "tpu=" + os.path.join(FAKES, "libpjrt.so"),
               "FAKE_PJRT_PLATFORM": "tpu", "FAKE_PJRT_DEVICES": "8"}
        env.update(extra)
        return env

    def test_a_tpu_is_checked_through_its_plugin(self):
        s = self.start(env=self.tpu_env())
        r = s.request("POST", "/devices/tpu:0/check", json_body={"wait": True})
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual((doc["state"], doc["backend"]), ("succeeded", "pjrt"))
        # the table gives a v6e's bf16 peak, not float32's: the sgemm figure is recorded without a verdict on speed
        sgemm = self.part(doc, "sgemm")
        self.assertTrue(sgemm["verified"], sgemm)
        self.assertNotIn("expected", sgemm)
        self.assertIn("recorded only", sgemm["rule"])
        # the stand-in computes on the host: far below a v6e's 1638 GB/s
        triad = self.part(doc, "triad")
        self.assertEqual((triad["expected"], triad["verdict"]), (1638, "fail"), triad)
        self.assertTrue(triad["expected_source"].startswith("table tpu-v6e"), triad["expected_source"])
        # the chip's link from its PCI files: Gen4 x16
        transfer = self.part(doc, "transfer")
        self.assertTrue(transfer["verified"], transfer)
        self.assertEqual(transfer["link"]["gbytes_per_s"], 31.51)
        self.assertIn(transfer["verdict"], ("pass", "warn"))
        self.assertEqual(doc["verdict"], "fail", doc["rule"])
        self.assertEqual(s.get("/devices/tpu:0").json()["check"]["verdict"], "fail")

    def test_a_tpu_without_a_plugin_cannot_be_checked(self):
        s = self.start(env=self.tpu_env(ACCELD_PJRT_PLUGINS="none"))
        self.assertFalse(s.get("/devices/tpu:0").json()["executable"])
        self.problem(s.request("POST", "/devices/tpu:0/check"), 422, "UNSUPPORTED")


class CheckCli(CheckCase):
    def test_exit_codes(self):
        env = {"ACCELD_NVML_LIBRARY": os.path.join(self.tmp.name, "no-nvml.so")}
        r = run_cli("check", "--device", "cpu:0", *OPEN, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"^cpu:0 pass ")
        self.assertIn("sgemm", r.stdout)
        # cannot run: bad usage, an unknown device, one no backend runs jobs on
        self.assertEqual(run_cli("check", "--level", "thorough", env=env).returncode, 2)
        self.assertEqual(run_cli("check", "--duration", "10", env=env).returncode, 2)
        self.assertEqual(run_cli("check", "--device", "gpu:9", env=env).returncode, 2)
        fake = self.fake_gpu_env()
        self.assertEqual(run_cli("check", "--device", "gpu:1", env=fake).returncode, 2)
        # a warning and a failure, as JSON
        r = run_cli("check", "--device", "gpu:0", "--json", *NO_FIGURE_RULES,
                    env=dict(fake, FAKE_NVML_THROTTLE="thermal"), timeout=300)
        self.assertEqual(r.returncode, 1, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["verdict"], "warn")
        self.assertEqual(doc["exit_code"], 1)
        self.assertEqual(doc["checks"][0]["device"], "gpu:0")
        self.assertEqual(doc["checks"][0]["trigger"], "cli")
        r = run_cli("check", "--device", "gpu:0", "--json", env=dict(fake, FAKE_CL_WRONG="1"), timeout=300)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(json.loads(r.stdout)["verdict"], "fail")
        # every device: the ones no backend serves are skipped, said, and do not make the run fail to run
        r = run_cli("check", "--json", *NO_FIGURE_RULES, env=fake, timeout=600)
        doc = json.loads(r.stdout)
        self.assertEqual(sorted(c["device"] for c in doc["checks"]), ["cpu:0", "gpu:0"])
        self.assertEqual([x["device"] for x in doc["skipped"]], ["gpu:1"])
        self.assertEqual(r.returncode, 0 if doc["verdict"] == "pass" else 1)


if __name__ == "__main__":
    unittest.main()
