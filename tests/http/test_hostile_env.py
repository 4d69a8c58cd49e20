"""The service behaves the same whatever environment it is started from. One acceld runs from a deliberately
hostile environment (a locale with a decimal comma, a time zone 14 hours off UTC, OpenBLAS and OpenMP settings,
hidden CUDA and HIP devices, garbage TPU_* and PJRT variables, a missing HOME, XDG folders and virtualenv, every
proxy variable pointing at a closed port, ACCELD_LISTEN and ACCELD_DB that the flags must beat) and one from the
harness's clean environment, both on the same GCE fixture with a stand-in metadata server each. Numbers in JSON and
in the command line's output use '.', /metrics parses, every time is UTC RFC 3339, a job runs and verifies, and the
metadata server is reached directly, not through the proxy."""
import datetime
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from fake_metadata import FakeGce
from harness import FIXTURES, ROOT, Server, clean_env, free_port, run_cli

BUILD = os.environ.get("ACCELD_BUILD", "build")
FIXTURE = "gce-no-tpu"
RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( -?\d+)?$")


def decimal_comma_locale(tmp):
    """Settings for a locale that writes 1.5 as '1,5': de_DE.UTF-8 when installed, else compiled into tmp with
    localedef (from the `locales` package's sources, no root needed; LOCPATH points there). None if neither works."""
    installed = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.split()
    if "de_DE.utf8" in installed:
        env = {"LC_ALL": "de_DE.UTF-8"}
    elif shutil.which("localedef"):
        subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", os.path.join(tmp, "de_DE.UTF-8")],
                       capture_output=True, timeout=120)
        env = {"LC_ALL": "de_DE.UTF-8", "LOCPATH": tmp}
    else:
        return None
    env.update(LANG="de_DE.UTF-8", LANGUAGE="de")
    # coreutils' printf takes its locale from the environment: the proof that this one is in force
    p = subprocess.run(["/usr/bin/printf", "%.1f", "1.5"], capture_output=True, text=True, env=clean_env(env))
    return env if p.stdout == "1,5" else None


def openblas_coretype():
    """Haswell where the CPU runs its kernels (AVX2 and FMA), else an older core, so the setting is never illegal."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        flags = ""
    return "Haswell" if " avx2" in flags and " fma" in flags else "Nehalem"


def gce_env(gce):
    return {"ACCELD_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1",
            "ACCELD_SYSFS_ROOT": os.path.join(FIXTURES, FIXTURE, "sys"),
            "ACCELD_DEV_ROOT": os.path.join(FIXTURES, FIXTURE, "dev"),
            "ACCELD_GCE_METADATA_URL": gce.url,
            "ACCELD_POCL_CACHE_DIR": os.path.join(ROOT, BUILD, "pocl-cache"),
            "ACCELD_LOG_LEVEL": "info"}


def hostile_env(locale_env, proxy):
    env = dict(locale_env)
    env.update({
        "TZ": "Pacific/Kiritimati",
        "OPENBLAS_CORETYPE": openblas_coretype(), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "3",
        "GOTO_NUM_THREADS": "5", "OPENBLAS_VERBOSE": "2",
        "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "garbage", "ROCR_VISIBLE_DEVICES": "-1",
        "CUDA_DEVICE_ORDER": "FASTEST_FIRST",
        "TPU_LIBRARY_PATH": "/nonexistent/libtpu.so", "TPU_ACCELERATOR_TYPE": "banana", "TPU_WORKER_ID": "-1",
        "TPU_NAME": "bad name!", "TPU_TOPOLOGY": "2x", "TPU_VISIBLE_CHIPS": "7,7",
        "TPU_CHIPS_PER_HOST_BOUNDS": "x,y,z", "TPU_HOST_BOUNDS": "1,,1", "TPU_WORKER_HOSTNAMES": ",,",
        "PJRT_NAMES_AND_LIBRARY_PATHS": "tpu:/nonexistent/libtpu.so,cuda:/nonexistent/pjrt.so",
        "VIRTUAL_ENV": "/nonexistent/venv", "HOME": "/nonexistent/home",
        "XDG_CACHE_HOME": "/nonexistent/cache", "XDG_CONFIG_HOME": "/nonexistent/config",
        "XDG_RUNTIME_DIR": "/nonexistent/run", "XDG_DATA_HOME": "/nonexistent/data",
        "http_proxy": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "HTTPS_PROXY": proxy,
        "all_proxy": proxy, "ALL_PROXY": proxy, "no_proxy": "", "NO_PROXY": "",
        # the flags the harness passes (--listen, --db) win over these
        "ACCELD_LISTEN": "0.0.0.0:1", "ACCELD_DB": "/nonexistent/acceld.db",
    })
    return env


def metrics_samples(text):
    """{name: [value, ...]} of a Prometheus text exposition; fails on a line that is not a sample or a comment."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        out.setdefault(m.group(1), []).append(float(m.group(3)))
    return out


def utc(text):
    assert RFC3339_UTC.match(text), f"not UTC RFC 3339: {text!r}"
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


class HostileEnvironment(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="acceld-hostile-")
        cls.locale = decimal_comma_locale(cls.tmp.name)
        cls.proxy = f"http://127.0.0.1:{free_port()}"  # nothing listens there: a proxied request fails
        cls.started = datetime.datetime.now(datetime.timezone.utc)
        cls.gce_clean = FakeGce(preemptible="TRUE")
        cls.gce_hostile = FakeGce(preemptible="TRUE")
        cls.clean = Server(env=gce_env(cls.gce_clean), isolate=False).start()
        cls.hostile = Server(env=dict(hostile_env(cls.locale or {}, cls.proxy), **gce_env(cls.gce_hostile)),
                             isolate=False).start()

    @classmethod
    def tearDownClass(cls):
        codes = [s.stop() for s in (cls.clean, cls.hostile)]
        for s in (cls.clean, cls.hostile):
            s.tmp.cleanup()
        cls.gce_clean.stop()
        cls.gce_hostile.stop()
        cls.tmp.cleanup()
        assert codes == [0, 0], f"acceld exited with {codes}"

    def test_0_locale_is_hostile(self):
        # without a decimal-comma locale the rest still runs, but the run would prove less: say so loudly
        self.assertIsNotNone(self.locale, "no locale with a decimal comma (install `locales`: make test-deps)")

    def test_flags_beat_the_environment(self):
        config = self.hostile.wait_for(lambda l: l.get("msg") == "starting")["config"]
        self.assertEqual(config["ACCELD_LISTEN"], "127.0.0.1:0")
        self.assertEqual(config["ACCELD_DB"], self.hostile.db)

    def test_devices_and_host_are_the_same(self):
        a, b = self.clean.get("/devices").json(), self.hostile.get("/devices").json()
        self.assertEqual([(d["id"], d["type"]) for d in a["devices"]], [(d["id"], d["type"]) for d in b["devices"]])
        self.assertEqual(a["host"], b["host"])

    def test_metadata_is_reached_without_the_proxy(self):
        for srv in (self.clean, self.hostile):
            log = srv.wait_for(lambda l: l.get("component") == "cloud" and l.get("msg") == "host", 20)
            self.assertEqual((log["cloud"], log["state"]), ("gce", "known"), log)
        self.assertEqual([p for _, p, _ in self.gce_hostile.seen()], [p for _, p, _ in self.gce_clean.seen()])
        self.assertTrue(self.gce_hostile.seen())

    def test_numbers_in_json_use_a_point(self):
        for path in ("/cost/prices", "/cost/estimate?seconds=1.5", "/cost/estimate?seconds=0.25&device=cpu:0"):
            with self.subTest(path):
                a, b = self.clean.get(path), self.hostile.get(path)
                self.assertEqual((a.status, b.status), (200, 200), (a, b))
                self.assertEqual(a.json(), b.json())
        est = self.hostile.get("/cost/estimate?seconds=1.5").json()
        self.assertEqual(est["seconds"], 1.5)
        self.assertIn(b'"seconds":1.5', self.hostile.get("/cost/estimate?seconds=1.5").body)
        self.assertAlmostEqual(est["estimates"][0]["usd"], est["estimates"][0]["usd_per_hour"] * 1.5 / 3600)

    def test_metrics_parse(self):
        a = metrics_samples(self.clean.get("/metrics").text)
        b = metrics_samples(self.hostile.get("/metrics").text)
        self.assertLessEqual(set(a), set(b))  # the hostile one may have run jobs already
        start = b["acceld_process_start_time_seconds"][0]
        self.assertLess(abs(start - time.time()), 600)
        self.assertNotEqual(start, int(start), "the start time keeps its fraction")

    def test_a_job_runs_and_verifies_with_utc_times(self):
        for backend in ("native", "opencl"):
            with self.subTest(backend=backend):
                r = self.hostile.request("POST", "/run", json_body={"kernel": "sgemm", "m": 256, "n": 256, "k": 256,
                                                                    "alpha": 1.5, "device": "cpu:0",
                                                                    "backend": backend, "verify": True})
                self.assertEqual(r.status, 200, r)
                doc = r.json()
                self.assertEqual(doc["state"], "succeeded", doc)
                self.assertTrue(doc["verified"], doc.get("verification"))
                self.assertEqual(doc["params"]["alpha"], 1.5)
                created, finished = utc(doc["created_at"]), utc(doc["finished_at"])
                self.assertLessEqual(created, finished)
                # a local time 14 hours off, or a wrong date, shows here
                self.assertLess(abs((created - self.started).total_seconds()), 600)
                got = self.hostile.get("/run/" + doc["id"]).json()
                self.assertEqual(got["created_at"], doc["created_at"])

    def test_log_times_are_utc(self):
        times = [utc(l["time"]) for l in list(self.hostile.logs) if "time" in l]
        self.assertTrue(times)
        self.assertLess(abs((times[0] - self.started).total_seconds()), 600)

    def test_command_line_numbers_use_a_point(self):
        env = dict(hostile_env(self.locale or {}, self.proxy), ACCELD_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1",
                   ACCELD_LOG_LEVEL="error")
        r = run_cli("run", "saxpy", "--n", "4096", "--alpha", "2.5", "--verify", "--db", ":memory:", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"succeeded, kernel \d+\.\d+ ms")
        self.assertNotRegex(r.stdout, r"\d,\d")
        r = run_cli("run", "saxpy", "--n", "64", "--alpha", "2.5", "--json", "--db", ":memory:", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"alpha":2.5', r.stdout.replace(" ", ""))


if __name__ == "__main__":
    unittest.main()
