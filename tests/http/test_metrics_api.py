"""GET /metrics against the running binary: content type, promtool's verdict, device and request series."""
import calendar
import csv
import os
import re
import shutil
import subprocess
import time
import unittest

from harness import FAKES, ROOT, Server, ServerTestCase

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """[(name, {label: value}, value_text)] for every sample line."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = dict(LABEL.findall(m.group(3) or ""))
        out.append((m.group(1), labels, m.group(4)))
    return out


def value(samples, name, **labels):
    for n, l, v in samples:
        if n == name and all(l.get(k) == want for k, want in labels.items()):
            return float(v)
    return None


class MetricsApi(ServerTestCase):
    def scrape(self):
        r = self.server.get("/metrics")
        self.assertEqual(r.status, 200, r)
        return r

    def test_content_type_and_headers(self):
        r = self.scrape()
        self.assertEqual(r.header("Content-Type"), CONTENT_TYPE)
        self.assertEqual(r.header("Cache-Control"), "no-store")
        self.assertTrue(r.text.endswith("\n"))

    def test_promtool_accepts_a_live_scrape(self):
        self.server.get("/livez")
        self.server.get("/no/such/path")
        promtool_check(self, self.scrape().body)

    def test_every_family_has_help_and_type(self):
        text = self.scrape().text
        helps = set(re.findall(r"^# HELP (\S+) ", text, re.M))
        types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
        self.assertEqual(helps, set(types))
        for name, kind in types.items():
            self.assertTrue(name.startswith("acceld_"), name)
            if kind == "counter":
                self.assertTrue(name.endswith("_total"), name)
        for name, _, _ in parse(text):
            family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
            self.assertIn(family, types, name)

    def test_device_info_for_the_cpu(self):
        samples = parse(self.scrape().text)
        info = [l for n, l, v in samples if n == "acceld_device_info" and l.get("id") == "cpu:0"]
        self.assertEqual(len(info), 1, samples)
        self.assertEqual(info[0]["type"], "cpu")
        self.assertEqual(info[0]["device"], "cpu:0")
        self.assertEqual(value(samples, "acceld_device_info", id="cpu:0"), 1)
        self.assertGreater(value(samples, "acceld_device_memory_total_bytes", device="cpu:0"), 0)
        self.assertGreaterEqual(value(samples, "acceld_devices", type="cpu"), 1)
        self.assertIsNotNone(value(samples, "acceld_build_info"))
        probes = {l["probe"] for n, l, _ in samples if n == "acceld_probe_success"}
        self.assertIn("cpu", probes)
        self.assertEqual(value(samples, "acceld_probe_success", probe="cpu"), 1)

    def test_price_table_ages(self):
        """acceld_price_table_age_seconds{source}: one series per source of db/prices/sources.csv, from its date."""
        with open(os.path.join(ROOT, "db", "prices", "sources.csv"), newline="") as f:
            sources = {r["source"]: r["as_of"] for r in csv.DictReader(f)}
        ages = {labels["source"]: float(v) for name, labels, v in parse(self.scrape().text)
                if name == "acceld_price_table_age_seconds"}
        self.assertEqual(set(ages), set(sources))
        for source, as_of in sources.items():
            midnight = calendar.timegm(time.strptime(as_of, "%Y-%m-%d"))
            self.assertAlmostEqual(ages[source], time.time() - midnight, delta=120)

    def test_no_nan_or_sentinels(self):
        for name, labels, v in parse(self.scrape().text):
            self.assertNotIn(v.lower(), ("nan", "-1", "4294967295", "18446744073709551615"), (name, labels))
            if name.endswith("_bucket"):
                continue
            self.assertFalse(v.lower().endswith("inf"), (name, labels, v))

    def scrape_on(self, conn):
        r = self.server.get("/metrics", conn=conn)
        self.assertEqual(r.status, 200, r)
        return parse(r.text)

    def test_request_counters_grow(self):
        key = dict(handler="/livez", method="GET", code="200")
        # a request is counted when it completes; on one keep-alive connection that is before the next is read
        conn = self.server.conn()
        self.addCleanup(conn.close)
        before = value(self.scrape_on(conn), "acceld_http_requests_total", **key) or 0
        for _ in range(3):
            self.assertEqual(self.server.get("/livez", conn=conn).status, 200)
        samples = self.scrape_on(conn)
        self.assertGreaterEqual(value(samples, "acceld_http_requests_total", **key), before + 3)
        count = value(samples, "acceld_http_request_duration_seconds_count", handler="/livez")
        inf = value(samples, "acceld_http_request_duration_seconds_bucket", handler="/livez", le="+Inf")
        self.assertEqual(count, inf)

    def test_handler_is_the_pattern_not_the_path(self):
        conn = self.server.conn()
        self.addCleanup(conn.close)
        self.server.get("/no/such/path/12345", conn=conn)
        self.server.request("DELETE", "/livez", conn=conn)
        samples = self.scrape_on(conn)
        handlers = {l["handler"] for n, l, _ in samples if n == "acceld_http_requests_total"}
        self.assertNotIn("/no/such/path/12345", handlers)
        self.assertGreaterEqual(value(samples, "acceld_http_requests_total", handler="unmatched", code="404"), 1)
        self.assertGreaterEqual(
            value(samples, "acceld_http_requests_total", handler="/livez", method="DELETE", code="405"), 1)
        if any(p.startswith("/devices/") for p in handlers):
            self.assertTrue(all("{" in p for p in handlers if p.startswith("/devices/")), handlers)

    def test_store_and_process_series(self):
        samples = parse(self.scrape().text)
        self.assertEqual(value(samples, "acceld_store_up"), 1)
        self.assertGreater(value(samples, "acceld_process_start_time_seconds"), 1.6e9)
        self.assertGreater(value(samples, "acceld_process_open_fds"), 0)
        self.assertGreater(value(samples, "acceld_process_resident_memory_bytes"), 0)

    def test_query_parameters_are_refused(self):
        self.assertProblem(self.server.get("/metrics?x=1"), 400, "UNKNOWN_PARAMETER")


def promtool_check(test, body):
    promtool = shutil.which("promtool")
    test.assertIsNotNone(promtool, "promtool is missing (Debian package prometheus, in the Makefile's DEB_PKGS)")
    p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=60)
    test.assertEqual(p.returncode, 0, (p.stdout + p.stderr).decode())
    test.assertEqual((p.stdout + p.stderr).strip(), b"", "promtool printed lint findings")


class MetricsWithGpus(unittest.TestCase):
    """Two GPUs from the fake NVML library: device series carry names and telemetry; unknown values stay out."""

    def scrape(self, **env):
        env = dict({"ACCELD_NVML_LIBRARY": os.path.join(FAKES, "libnvml.so")}, **env)
        with Server(env=env) as srv:
            r = srv.get("/metrics")
        self.assertEqual(r.status, 200, r)
        promtool_check(self, r.body)
        return parse(r.text)

    def test_gpu_series(self):
        samples = self.scrape()
        info = {l["id"]: l for n, l, _ in samples if n == "acceld_device_info"}
        self.assertIn("gpu:0", info, info)
        self.assertIn("gpu:1", info, info)
        gpu0 = info["gpu:0"]
        self.assertEqual(gpu0["type"], "gpu")
        self.assertEqual(gpu0["vendor"], "NVIDIA")
        self.assertEqual(gpu0["accelerator_type"], "H100")
        self.assertTrue(gpu0["uuid"].startswith("GPU-"), gpu0)
        self.assertRegex(gpu0["pci_bus_id"], r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
        self.assertEqual(value(samples, "acceld_devices", type="gpu"), 2)
        for name in ("acceld_device_memory_total_bytes", "acceld_device_memory_used_bytes",
                     "acceld_device_utilization_ratio", "acceld_device_temperature_celsius",
                     "acceld_device_power_watts", "acceld_device_power_limit_watts"):
            v = value(samples, name, device="gpu:0")
            self.assertIsNotNone(v, name)
            self.assertGreaterEqual(v, 0, name)
        self.assertLessEqual(value(samples, "acceld_device_utilization_ratio", device="gpu:0"), 1)
        self.assertEqual(value(samples, "acceld_probe_success", probe="nvml"), 1)
        self.assertEqual(value(samples, "acceld_probe_devices", probe="nvml"), 2)

    def test_unsupported_telemetry_is_left_out(self):
        samples = self.scrape(FAKE_NVML_NOT_SUPPORTED="temperature")
        self.assertIsNotNone(value(samples, "acceld_device_info", id="gpu:0"))
        self.assertIsNone(value(samples, "acceld_device_temperature_celsius", device="gpu:0"))
        self.assertIsNone(value(samples, "acceld_device_temperature_celsius", device="gpu:1"))
        self.assertIsNotNone(value(samples, "acceld_device_power_watts", device="gpu:0"))


if __name__ == "__main__":
    unittest.main()
