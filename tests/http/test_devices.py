"""Black-box tests of device detection: GET /devices and /devices/{id} with ETags, POST /devices/refresh, the CPU
as hwloc and the kernel see it with PoCL merged into it, cgroup fixture trees, strings from hardware and drivers
trimmed of their padding, and `acceld report` in its forms."""
import json
import os
import re
import subprocess
import tempfile
import time
import unittest

from harness import FAKES, FIXTURES, Server, ServerTestCase, run_cli

NS = "acceld.feature.node.kubernetes.io/"
NO_NVML = {"ACCELD_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1"}


def significant(number):
    """The significant digits of a number's text (its mantissa without leading and trailing zeros)."""
    digits = re.sub(r"[^0-9]", "", re.split(r"[eE]", number)[0]).strip("0")
    return digits or "0"


def nproc():
    return int(subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout)


class Devices(ServerTestCase):
    server_env = NO_NVML

    def list(self, **kw):
        r = self.server.get("/devices", **kw)
        self.assertEqual(r.status, 200, r)
        return r, r.json()

    def test_snapshot_shape(self):
        r, doc = self.list()
        self.assertEqual(r.header("Content-Type"), "application/json")
        self.assertRegex(r.header("ETag"), r'^"\d+-[0-9a-f]{16}"$')
        self.assertGreaterEqual(doc["generation"], 1)
        self.assertRegex(doc["taken_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        # the metadata thread adds "cloud" (and "host") once it has run: a note source, never a failed probe
        names = [p["name"] for p in doc["probes"]]
        self.assertEqual([n for n in names if n != "cloud"], ["cpu", "opencl", "nvml", "sysfs-gpu", "tpu"])
        self.assertIn(names[-1], ("tpu", "cloud"))
        self.assertEqual("host" in doc, "cloud" in names)
        for p in doc["probes"]:
            self.assertEqual(set(p), {"name", "ok", "available", "found", "why", "duration_ms"})
        nvml = doc["probes"][2]
        self.assertTrue(nvml["ok"])
        self.assertFalse(nvml["available"])
        self.assertEqual(doc["devices"][0]["id"], "cpu:0")
        ids = [d["id"] for d in doc["devices"]]
        self.assertEqual(len(ids), len(set(ids)))
        for d in doc["devices"]:
            self.assertRegex(d["id"], r"^(cpu|gpu|tpu):\d+$")
            self.assertTrue(d["id"].startswith(d["type"] + ":"))
            self.assertIsInstance(d["executable"], bool)
            # unknowns are left out, never written as sentinels
            text = json.dumps(d)
            for bad in ("4294967295", "18446744073709551615", ": -1", "null", "NaN"):
                self.assertNotIn(bad, text)

    def test_numbers_in_their_shortest_form(self):
        # every real of an answer has the fewest digits that read back as the same double (Python's repr finds
        # them): 0.1, not jansson's 0.10000000000000001
        self.server.request("POST", "/run", json_body={"kernel": "saxpy", "n": 1000, "alpha": 0.3, "verify": True})
        for path in ("/devices", "/batch-config?device=cpu:0&base=32&model_bytes=1000000&sample_bytes=1000", "/run",
                     "/cost", "/history?step=1"):
            with self.subTest(path=path):
                r = self.server.get(path)
                self.assertEqual(r.status, 200, r)
                reals = []
                json.loads(r.text, parse_float=lambda t: reals.append(t) or float(t))
                self.assertTrue(reals)
                for t in reals:
                    self.assertEqual(significant(t), significant(repr(float(t))), t)
        self.assertIn('"reserve":0.1,', self.server.get("/batch-config?device=cpu:0&base=32&model_bytes=1000000"
                                                         "&sample_bytes=1000").text)

    def test_cpu_matches_kernel_and_hwloc(self):
        _, doc = self.list()
        cpu = doc["devices"][0]
        self.assertEqual(cpu["type"], "cpu")
        self.assertEqual(cpu["cpu"]["pus"], nproc())
        self.assertEqual(cpu["cpu"]["pus"], len(os.sched_getaffinity(0)))
        self.assertEqual(cpu["compute_units"], cpu["cpu"]["pus"])
        self.assertGreaterEqual(cpu["cpu"]["cores"], 1)
        self.assertLessEqual(cpu["cpu"]["cores"], cpu["cpu"]["pus"])
        self.assertGreaterEqual(cpu["cpu"]["packages"], 1)
        self.assertLessEqual(cpu["cpu"]["effective_cpus"], cpu["cpu"]["pus"])
        self.assertIn("hwloc", cpu["seen_by"])
        self.assertIn("native", cpu["backends"])
        self.assertTrue(cpu["executable"])
        with open("/proc/meminfo") as f:
            total = int(re.search(r"MemTotal:\s+(\d+) kB", f.read()).group(1)) * 1024
        self.assertLessEqual(cpu["memory"]["total_bytes"], total)
        self.assertLessEqual(cpu["memory"]["available_bytes"], cpu["memory"]["total_bytes"])
        if "peak" in cpu:
            self.assertIn("estimate", cpu["peak"]["source"])

    def test_pocl_merged_into_cpu(self):
        _, doc = self.list()
        cpus = [d for d in doc["devices"] if d["type"] == "cpu"]
        self.assertEqual(len(cpus), 1)
        cpu = cpus[0]
        self.assertIn("opencl", cpu["seen_by"])
        self.assertIn("Portable Computing Language", cpu["opencl"]["platform"])
        self.assertGreaterEqual(cpu["opencl"]["compute_units"], 1)
        pocl = [d for d in doc["devices"][1:] if "Portable" in d.get("opencl", {}).get("platform", "")]
        self.assertEqual(pocl, [])
        self.assertGreaterEqual(doc["probes"][1]["found"], 1)

    def test_one_device_and_etag(self):
        _, doc = self.list()
        r = self.server.get("/devices/cpu:0")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["id"], "cpu:0")
        tag = r.header("ETag")
        self.assertRegex(tag, r'^"d-[0-9a-f]{16}"$')
        r2 = self.server.get("/devices/cpu:0", headers={"If-None-Match": tag})
        if r2.status == 200:  # a telemetry refresh changed the device in between: its tag moved on
            self.assertNotEqual(r2.header("ETag"), tag)
            tag = r2.header("ETag")
            r2 = self.server.get("/devices/cpu:0", headers={"If-None-Match": tag})
        self.assertEqual(r2.status, 304)
        self.assertEqual(r2.body, b"")
        self.assertEqual(r2.header("ETag"), tag)
        r3 = self.server.get("/devices/cpu:0", headers={"If-None-Match": '"other", W/' + tag})
        self.assertEqual(r3.status, 304)
        r4 = self.server.get("/devices/cpu:0", headers={"If-None-Match": '"d-0000000000000000"'})
        self.assertEqual(r4.status, 200)

    def test_list_etag_304(self):
        r, _ = self.list()
        tag = r.header("ETag")
        r2 = self.server.get("/devices", headers={"If-None-Match": tag})
        self.assertIn(r2.status, (200, 304))
        if r2.status == 304:
            self.assertEqual(r2.body, b"")
        else:
            self.assertNotEqual(r2.header("ETag"), tag)
        r3 = self.server.get("/devices", headers={"If-None-Match": "*"})
        self.assertEqual(r3.status, 304)

    def test_unknown_ids(self):
        for path in ("/devices/gpu:99", "/devices/cpu:1"):
            doc = self.assertProblem(self.server.get(path), 404, "UNKNOWN_DEVICE")
            self.assertIn(path.rsplit("/", 1)[1], doc["detail"])
            self.assertEqual(doc["device"], path.rsplit("/", 1)[1])
        for path in ("/devices/tpu:0x", "/devices/nope"):
            doc = self.assertProblem(self.server.get(path), 400, "INVALID_PARAMETER")
            self.assertIn(path.rsplit("/", 1)[1], doc["detail"])
            self.assertEqual(doc["parameter"], "id")
        self.assertProblem(self.server.get("/devices?verbose=1"), 400, "UNKNOWN_PARAMETER")
        self.assertProblem(self.server.get("/devices/cpu:0?x=1"), 400, "UNKNOWN_PARAMETER")
        self.assertProblem(self.server.request("DELETE", "/devices"), 405, "METHOD_NOT_ALLOWED")

    def test_head(self):
        r = self.server.request("HEAD", "/devices")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, b"")
        self.assertTrue(r.header("ETag"))

    def test_refresh(self):
        r, before = self.list()
        rr = self.server.request("POST", "/devices/refresh")
        self.assertEqual(rr.status, 200, rr)
        after = rr.json()
        self.assertGreater(after["generation"], before["generation"])
        self.assertEqual(rr.header("ETag").split("-")[0], '"%d' % after["generation"])
        self.assertEqual([d["id"] for d in after["devices"]], [d["id"] for d in before["devices"]])
        # the old tag no longer matches
        r2 = self.server.get("/devices", headers={"If-None-Match": r.header("ETag")})
        self.assertEqual(r2.status, 200)
        self.assertGreaterEqual(r2.json()["generation"], after["generation"])

    def test_startup_logs(self):
        found = self.server.wait_for(lambda l: l.get("msg") == "devices found")
        self.assertGreaterEqual(found["devices"], 1)
        ready = self.server.wait_for(lambda l: l.get("msg") == "ready")
        self.assertIn("startup_ms", ready)
        # detection runs before the service says it is ready
        self.assertLess(self.server.logs.index(found), self.server.logs.index(ready))


class RefreshAuth(ServerTestCase):
    server_args = ("--token", "s3cret", "--telemetry-interval", "100ms")
    server_env = NO_NVML

    def test_needs_token(self):
        self.assertProblem(self.server.request("POST", "/devices/refresh"), 401, "UNAUTHORIZED")
        r = self.server.request("POST", "/devices/refresh", headers={"Authorization": "Bearer s3cret"})
        self.assertEqual(r.status, 200)
        # reads need no token
        self.assertEqual(self.server.get("/devices").status, 200)

    def test_telemetry_refreshes_in_background(self):
        g0 = self.server.get("/devices").json()["generation"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            doc = self.server.get("/devices").json()
            if doc["generation"] > g0:
                break
            time.sleep(0.05)
        self.assertGreater(doc["generation"], g0)
        cpu = doc["devices"][0]
        self.assertIn("sampled_at", cpu.get("telemetry", {}))


def fixture_env(name):
    return dict(NO_NVML, ACCELD_SYSFS_ROOT=os.path.join(FIXTURES, name, "sys"),
                ACCELD_PROC_ROOT=os.path.join(FIXTURES, name, "proc"))


class CgroupFixtures(unittest.TestCase):
    def cpu(self, name):
        with Server(env=fixture_env(name)) as s:
            return s.get("/devices/cpu:0").json()

    def test_v2(self):
        cpu = self.cpu("cgroup-v2-limited")
        self.assertEqual(cpu["cpu"]["cpuset"], "0")
        self.assertEqual(cpu["cpu"]["pus"], 1)
        self.assertEqual(cpu["cpu"]["quota_cpus"], 0.5)
        self.assertEqual(cpu["cpu"]["effective_cpus"], 0.5)
        self.assertEqual(cpu["memory"]["total_bytes"], 2 << 30)
        self.assertIn("cgroup", cpu["seen_by"])
        self.assertIn("opencl", cpu["seen_by"])

    def test_v1(self):
        cpu = self.cpu("cgroup-v1-limited")
        self.assertEqual(cpu["cpu"]["quota_cpus"], 1.5)
        self.assertEqual(cpu["cpu"]["effective_cpus"], 1.0)
        self.assertEqual(cpu["memory"]["total_bytes"], 1 << 30)
        self.assertEqual(cpu["memory"]["available_bytes"], (1 << 30) - (256 << 20))


class PeakIsACeiling(unittest.TestCase):
    def test_firmware_maximum_or_a_lower_bound(self):
        # without cpufreq, the DMI table's Max Speed makes the CPU's peak a ceiling
        with Server(env=fixture_env("dmi-max-speed")) as s:
            r = s.get("/devices/cpu:0")
            peak = r.json()["peak"]
            self.assertTrue(peak["source"].startswith("estimate, not measured: 0.50 cores x 3500 MHz (DMI processor "
                                                      "Max Speed)"), peak["source"])
            # 0.5 x 3500 MHz x 32 FLOP/cycle, written as the shortest number that reads back
            self.assertEqual(peak["fp32_gflops"], 56)
            self.assertIn('"fp32_gflops":56.0,', r.text)
        # QEMU's DMI maximum is below the clock now: no ceiling, and the estimate says it is a lower bound
        with Server(env=fixture_env("dmi-qemu")) as s:
            peak = s.get("/devices/cpu:0").json()["peak"]
            self.assertTrue(peak["source"].startswith("estimate, not measured, a lower bound: at least 0.50 cores x "
                                                      "2600 MHz (/proc/cpuinfo cpu MHz: the clock now"),
                            peak["source"])


def blank_edged(doc, path="$"):
    """The paths of every string in doc (keys included) that starts or ends with white space."""
    found = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k != k.strip():
                found.append(path + "." + repr(k))
            found += blank_edged(v, path + "." + k)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += blank_edged(v, "%s[%d]" % (path, i))
    elif isinstance(doc, str) and doc != doc.strip():
        found.append("%s = %r" % (path, doc))
    return found


class PaddedStrings(unittest.TestCase):
    """Drivers and firmware pad strings (CPUID brand strings, NVML and OpenCL names, sysfs files, the TPU
    environment); /devices shows every one without blanks around it."""

    def devices(self, env):
        with Server(env=env) as s:
            doc = s.get("/devices").json()
        self.assertEqual(blank_edged(doc), [])
        return doc["devices"]

    def test_this_host(self):
        self.devices(NO_NVML)

    def test_padded_nvml_and_sysfs(self):
        # the fake NVML pads every string it returns; GPU 1's product_name in the fixture has blanks on both sides
        env = dict(fixture_env("amd-mi300x"), ACCELD_NVML_LIBRARY=os.path.join(FAKES, "libnvml.so"),
                   FAKE_NVML_PADDED="1")
        devs = self.devices(env)
        models = sorted(d.get("model") for d in devs if d["type"] == "gpu")
        self.assertEqual(models, ["AMD Instinct MI300X", "AMD Instinct MI300X", "NVIDIA H100 80GB HBM3",
                                  "NVIDIA L4"])
        nvidia = [d for d in devs if d.get("vendor") == "NVIDIA"]
        self.assertEqual(nvidia[0]["gpu"]["driver_version"], "550.54.15")
        self.assertTrue(nvidia[0]["uuid"].startswith("GPU-"))
        # the PCIe link: NVML's for the H100 (idle at Gen1, Gen5 x16 at most), sysfs' for the MI300X
        h100 = next(d for d in nvidia if d["model"] == "NVIDIA H100 80GB HBM3")
        self.assertEqual(h100["pcie"], {"generation": 1, "width": 16, "max_generation": 5, "max_width": 16,
                                        "gbytes_per_s": 63.02})
        amd = [d for d in devs if d["type"] == "gpu" and d.get("vendor") == "AMD"]
        self.assertEqual(amd[0]["pcie"]["generation"], 5)
        self.assertEqual(amd[0]["pcie"]["gbytes_per_s"], 63.02)
        self.assertNotIn("pcie", next(d for d in devs if d["type"] == "cpu"))

    def test_padded_tpu_environment(self):
        env = dict(fixture_env("tpu-v6e-8"), ACCELD_DEV_ROOT=os.path.join(FIXTURES, "tpu-v6e-8", "dev"),
                   TPU_ACCELERATOR_TYPE=" v6e-8\t", TPU_TOPOLOGY="2x4 ", TPU_NAME="  my-tpu ", TPU_WORKER_ID=" 0")
        tpus = [d for d in self.devices(env) if d["type"] == "tpu"]
        self.assertEqual(len(tpus), 8)
        self.assertEqual(tpus[0]["tpu"]["accelerator_type"], "v6e-8")
        self.assertEqual(tpus[0]["tpu"]["topology"], "2x4")
        self.assertEqual(tpus[0]["tpu"]["name"], "my-tpu")
        self.assertEqual(tpus[0]["tpu"]["worker_id"], 0)
        self.assertIn("env", tpus[0]["seen_by"])
        self.assertEqual(tpus[0]["pcie"], {"generation": 4, "width": 16, "max_generation": 4, "max_width": 16,
                                           "gbytes_per_s": 31.51})


class Report(unittest.TestCase):
    def test_table(self):
        r = run_cli("report", env=NO_NVML)
        self.assertEqual(r.returncode, 0, r.stderr)
        for text in ("Current device:", "Recommended device: cpu:0", "cpu:0", "Detection sources:", "opencl"):
            self.assertIn(text, r.stdout)
        self.assertNotIn("took", r.stdout)
        self.assertNotIn("Settings in effect", r.stdout)  # under --verbose

    def test_the_header_says_the_time_its_sources_took(self):
        r = run_cli("report", "-v", env=NO_NVML)
        self.assertEqual(r.returncode, 0, r.stderr)
        header = re.search(r"devices found in ([0-9.]+) ms", r.stdout)
        self.assertIsNotNone(header, r.stdout[:200])
        took = [float(x) for x in re.findall(r"took ([0-9.]+) ms", r.stdout)]
        self.assertGreater(len(took), 1)
        # the header is the sum of what the sources took, each printed to 0.01 ms
        self.assertAlmostEqual(float(header.group(1)), sum(took), delta=0.05 + 0.01 * len(took))
        self.assertNotIn("Backends found", r.stdout)  # "backends" are the job backends of the table's column

    def test_json_is_the_api_document(self):
        r = run_cli("report", "--json", env=NO_NVML)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(set(doc), {"generation", "taken_at", "devices", "probes", "host"})
        with Server(env=NO_NVML) as s:
            s.wait_for(lambda l: l.get("component") == "cloud" and l.get("msg") == "host")
            api = s.get("/devices").json()
        self.assertEqual([d["id"] for d in doc["devices"]], [d["id"] for d in api["devices"]])
        self.assertEqual(doc["devices"][0]["cpu"]["pus"], api["devices"][0]["cpu"]["pus"])
        self.assertEqual([p["name"] for p in doc["probes"]], [p["name"] for p in api["probes"]])

    def test_verbose(self):
        r = run_cli("report", "--verbose", env=NO_NVML)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("cpu", "opencl", "nvml", "sysfs-gpu", "tpu"):
            self.assertRegex(r.stdout, r"\n  %s\s" % re.escape(name))
        self.assertIn("took", r.stdout)
        self.assertIn("Devices in full:", r.stdout)
        self.assertIn("Settings in effect", r.stdout)
        self.assertIn("COMPUTE_PREFER", r.stdout)
        self.assertIn("/nonexistent/libnvidia-ml.so.1", r.stdout)  # the NVML probe's reason

    def test_nfd(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "acceld.features")
            r = run_cli("report", "--nfd", path, env=NO_NVML)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(os.listdir(d), ["acceld.features"])  # no temporary file left behind
            with open(path) as f:
                lines = [l for l in f.read().splitlines() if l and not l.startswith("#")]
            labels = dict(l.split("=", 1) for l in lines)
            for k, v in labels.items():
                self.assertTrue(k.startswith(NS), k)
                self.assertRegex(k[len(NS):], r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
                self.assertRegex(v, r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
            self.assertEqual(labels[NS + "cpu-pus"], str(nproc()))
            self.assertEqual(labels[NS + "opencl"], "true")
            self.assertEqual(labels[NS + "preferred-device-type"], "cpu")
            self.assertNotIn(NS + "gpu-count", labels)
            self.assertNotIn(NS + "tpu-count", labels)
            # rewriting replaces the file whole
            r = run_cli("report", "--json", "--nfd=" + path, env=NO_NVML)
            self.assertEqual(r.returncode, 0, r.stderr)
            json.loads(r.stdout)
            self.assertEqual(sorted(os.listdir(d)), ["acceld.features"])

    def test_nfd_with_cgroup_fixture(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "f")
            r = run_cli("report", "--nfd", path, env=fixture_env("cgroup-v2-limited"))
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(path) as f:
                text = f.read()
            self.assertIn(NS + "cpu-pus=1\n", text)
            self.assertIn(NS + "cpu-effective-cpus=0.5\n", text)
            self.assertIn(NS + "cpu-isa=avx2\n", text)

    def nfd_for(self, fixture, extra=None):
        env = dict(fixture_env(fixture), ACCELD_DEV_ROOT=os.path.join(FIXTURES, fixture, "dev"), **(extra or {}))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "f")
            r = run_cli("report", "--json", "--nfd", path, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(path) as f:
                lines = [l for l in f.read().splitlines() if l and not l.startswith("#")]
        return json.loads(r.stdout), dict(l[len(NS):].split("=", 1) for l in lines)

    def test_nfd_tpu_host(self):
        doc, labels = self.nfd_for("tpu-v6e-8", {"TPU_ACCELERATOR_TYPE": "v6e-8"})
        tpus = [d for d in doc["devices"] if d["type"] == "tpu"]
        self.assertEqual([d["id"] for d in tpus], ["tpu:%d" % i for i in range(8)])
        self.assertEqual([d["pci_bus_id"] for d in tpus], sorted(d["pci_bus_id"] for d in tpus))
        self.assertEqual(tpus[0]["accelerator_type"], "TPU-V6E")
        self.assertEqual(tpus[0]["peak"]["bf16_gflops"], 918000)
        self.assertFalse(tpus[0]["executable"])
        self.assertEqual(labels["tpu-count"], "8")
        self.assertEqual(labels["tpu-generation"], "v6e")
        self.assertEqual(labels["tpu-accelerator-type"], "v6e-8")
        self.assertEqual(labels["tpu-product"], "TPU-V6E")
        self.assertEqual(labels["preferred-device-type"], "tpu")

    def test_nfd_gpu_host(self):
        doc, labels = self.nfd_for("amd-mi300x")
        gpus = [d for d in doc["devices"] if d["type"] == "gpu"]
        self.assertGreaterEqual(len(gpus), 1)
        self.assertEqual([d["pci_bus_id"] for d in gpus], sorted(d["pci_bus_id"] for d in gpus))
        self.assertEqual(labels["gpu-count"], str(len(gpus)))
        self.assertEqual(labels["gpu-vendor"], "AMD")
        self.assertEqual(labels["gpu-product"], "MI300X")
        self.assertEqual(labels["gpu-memory-gib"], str(round(gpus[0]["memory"]["total_bytes"] / 2**30)))
        self.assertEqual(labels["gpu-executable"], "false")  # no OpenCL view of it on this host
        self.assertEqual(labels["preferred-device-type"], "gpu")

    def test_errors(self):
        r = run_cli("report", "--nfd", "/nonexistent-dir/x", env=NO_NVML)
        self.assertEqual(r.returncode, 1)
        self.assertIn("/nonexistent-dir/x", r.stderr)
        r = run_cli("report", "--nfd", env=NO_NVML)
        self.assertEqual(r.returncode, 2)
        r = run_cli("report", "--bogus", env=NO_NVML)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bogus", r.stderr)
        r = run_cli("report", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--nfd PATH", r.stdout)


if __name__ == "__main__":
    unittest.main()
