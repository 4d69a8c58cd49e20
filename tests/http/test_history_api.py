"""GET /history against the real binary: a fast sampler fills the store, answers are series of the asked metric,
and every bad parameter is a 400 naming it."""
import datetime
import time
import unittest
import urllib.parse

from harness import ServerTestCase


def ago(seconds):
    t = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def q(**kw):
    return "/history?" + urllib.parse.urlencode(kw)


class History(ServerTestCase):
    server_args = ("--sample-interval", "100ms")

    def wait_points(self, n, **kw):
        deadline = time.monotonic() + 15
        while True:
            r = self.server.get(q(device="cpu:0", step="0.1", start_time=ago(60), **kw))
            self.assertEqual(r.status, 200, r)
            pts = r.json()["series"][0]["points"]
            if len(pts) >= n or time.monotonic() > deadline:
                return r.json(), pts
            time.sleep(0.2)

    def test_series_of_the_cpu(self):
        doc, pts = self.wait_points(5)
        self.assertGreaterEqual(len(pts), 5)
        self.assertEqual(doc["metric"], "utilization_ratio")
        self.assertEqual(doc["unit"], "ratio")
        self.assertEqual(doc["resolution"], "raw")
        self.assertEqual(doc["step_seconds"], 0.1)
        s = doc["series"][0]
        self.assertEqual(s["device"], "cpu:0")
        self.assertIn(s["sources"][0], ("proc_stat", "cgroup"))
        for p in pts:
            self.assertTrue(p["time"].endswith("Z"))
            self.assertGreaterEqual(p["value"], 0)
            self.assertLessEqual(p["value"], 1)
        times = [p["time"] for p in pts]
        self.assertEqual(times, sorted(times))

    def test_memory_metric_and_every_device(self):
        self.wait_points(2)
        r = self.server.get("/history?metric=memory_used_bytes")
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual(doc["unit"], "bytes")
        ids = [s["device"] for s in doc["series"]]
        self.assertIn("cpu:0", ids)
        cpu = [s for s in doc["series"] if s["device"] == "cpu:0"][0]
        self.assertGreater(cpu["points"][0]["value"], 0)

    def test_coarse_steps_read_rollups(self):
        self.wait_points(2)
        r = self.server.get(q(device="cpu:0", step="1h"))
        self.assertEqual(r.json()["resolution"], "hour")
        r = self.server.get(q(device="cpu:0", step="5m"))
        self.assertEqual(r.json()["resolution"], "minute")
        # the current minute is not rolled up yet: its samples come from raw rows
        self.assertEqual(len(r.json()["series"][0]["points"]), 1)

    def point_times(self, step):
        r = self.server.get(q(device="cpu:0", step=step))
        self.assertEqual(r.status, 200, r)
        return [p["time"] for p in r.json()["series"][0]["points"]]

    def test_points_fall_on_the_steps_clock_boundaries(self):
        # the same question asked 1.3 s later answers the same point times: a 10 s step starts on a multiple of
        # 10 s of the clock, a 60 s step on the minute, wherever the request time falls
        self.wait_points(2)
        for step, pattern in (("10", r":[0-5]0\.000Z$"), ("60", r":00\.000Z$")):
            with self.subTest(step=step):
                first = self.point_times(step)
                time.sleep(1.3)
                second = self.point_times(step)
                self.assertTrue(first)
                for t in first + second:
                    self.assertRegex(t, pattern)
                # the later answer may add the step that began in between, nothing else
                self.assertEqual(second[:len(first)], first)
                self.assertIn(len(second) - len(first), (0, 1))

    def test_bad_parameters(self):
        cases = [
            (q(metric="speed"), "INVALID_PARAMETER", "metric"),
            (q(start_time="yesterday"), "INVALID_TIME", "start_time"),
            (q(end_time="2026-13-01T00:00:00Z"), "INVALID_TIME", "end_time"),
            (q(start_time="2026-01-02T00:00:00Z", end_time="2026-01-01T00:00:00Z"), "INVALID_WINDOW", "end_time"),
            (q(start_time="2000-01-01T00:00:00Z"), "BEYOND_RETENTION", "start_time"),
            (q(step="0"), "INVALID_PARAMETER", "step"),
            (q(step="fast"), "INVALID_PARAMETER", "step"),
        ]
        for path, reason, param in cases:
            with self.subTest(path=path):
                doc = self.assertProblem(self.server.get(path), 400, reason)
                self.assertEqual(doc["parameter"], param)

    def test_too_many_points_names_the_limit(self):
        doc = self.assertProblem(self.server.get(q(step="1", start_time="2026-01-01T00:00:00Z",
                                                   end_time="2026-01-01T03:03:21Z")), 400, "TOO_MANY_POINTS")
        self.assertEqual(doc["limit"], 11000)
        self.assertEqual(doc["parameter"], "step")
        self.assertIn("11000", doc["detail"])

    def test_unknown_device_and_parameter(self):
        doc = self.assertProblem(self.server.get(q(device="gpu:42")), 404, "UNKNOWN_DEVICE")
        self.assertEqual(doc["device"], "gpu:42")
        doc = self.assertProblem(self.server.get(q(device="gpu42")), 400, "INVALID_PARAMETER")
        self.assertEqual(doc["parameter"], "device")
        self.assertProblem(self.server.get("/history?colour=red"), 400)


if __name__ == "__main__":
    unittest.main()
