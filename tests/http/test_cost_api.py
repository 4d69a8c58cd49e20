"""GET /cost, /cost/estimate, GET and PUT /cost/prices against the real binary: every price names its source,
overrides need the token, persist across a restart and follow the documented precedence."""
import json
import os
import tempfile
import time
import unittest

from harness import Server, ServerTestCase, until, run_cli

TOKEN = "cost-secret"
AUTH = {"Authorization": "Bearer " + TOKEN}


class Cost(ServerTestCase):
    server_args = ("--sample-interval", "100ms", "--token", TOKEN)

    def test_report_has_every_part_in_usd(self):
        deadline = time.monotonic() + 15
        while True:
            r = self.server.get("/cost?group_by=hour")
            self.assertEqual(r.status, 200, r)
            doc = r.json()
            cpu = [d for d in doc["devices"] if d["device"] == "cpu:0"][0]
            if cpu["allocated"]["seconds"] > 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(doc["currency"], "USD")
        self.assertEqual(doc["group_by"], "hour")
        cpu = [d for d in doc["devices"] if d["device"] == "cpu:0"][0]
        self.assertTrue(cpu["present"])
        self.assertIn("source", cpu["price"])
        for key in ("allocated", "utilized", "jobs", "groups"):
            self.assertIn(key, cpu)
        self.assertGreater(cpu["allocated"]["seconds"], 0)
        self.assertLessEqual(cpu["utilized"]["seconds"], cpu["allocated"]["seconds"] + 1e-9)
        for key in ("allocated_usd", "utilized_usd", "jobs_usd", "groups"):
            self.assertIn(key, doc["totals"])

    def test_bad_windows_and_groups(self):
        doc = self.assertProblem(self.server.get("/cost?group_by=week"), 400, "INVALID_PARAMETER")
        self.assertEqual(doc["parameter"], "group_by")
        doc = self.assertProblem(self.server.get("/cost?start_time=2026-01-02T00:00:00Z&end_time=2026-01-01T00:00:00Z"),
                                 400, "INVALID_WINDOW")
        self.assertEqual(doc["parameter"], "end_time")
        doc = self.assertProblem(self.server.get("/cost?start_time=1999-01-01T00:00:00Z"), 400, "BEYOND_RETENTION")
        self.assertEqual(doc["parameter"], "start_time")
        doc = self.assertProblem(self.server.get("/cost?end_time=noon"), 400, "INVALID_TIME")
        self.assertEqual(doc["parameter"], "end_time")
        doc = self.assertProblem(self.server.get("/cost?device=tpu:77"), 404, "UNKNOWN_DEVICE")
        self.assertEqual(doc["device"], "tpu:77")

    def test_estimates(self):
        r = self.server.get("/cost/estimate?seconds=3600")
        self.assertEqual(r.status, 200, r)
        est = r.json()["estimates"]
        self.assertEqual(est[0]["device"], "cpu:0")
        self.assertEqual(est[0]["seconds"], 3600)
        self.assertEqual(est[0]["basis"], "given")
        self.assertIn("price_source", est[0])
        r = self.server.get("/cost/estimate?kernel=saxpy&n=1000000")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["flops"], 2e6)
        for path, param in [("/cost/estimate", "seconds"), ("/cost/estimate?seconds=-1", "seconds"),
                            ("/cost/estimate?kernel=fft&n=4", "kernel"), ("/cost/estimate?kernel=sgemm&m=4&n=4", "k"),
                            ("/cost/estimate?kernel=dot&n=4&m=2", "m"), ("/cost/estimate?kernel=dot&n=0", "n"),
                            ("/cost/estimate?seconds=5&kernel=dot", "kernel")]:
            with self.subTest(path=path):
                doc = self.assertProblem(self.server.get(path), 400)
                self.assertEqual(doc["parameter"], param)

    def test_put_prices(self):
        body = {"prices": [{"type": "cpu", "usd_per_hour": 0.25, "note": "rack rate"}]}
        self.assertProblem(self.server.request("PUT", "/cost/prices", json_body=body), 401)
        doc = self.assertProblem(self.server.request("PUT", "/cost/prices", headers=AUTH,
                                                     json_body={"prices": [{"type": "cpu", "usd_per_hour": 1, "x": 2}]}),
                                 400, "UNKNOWN_FIELD")
        self.assertEqual(doc["path"], "$.prices[0].x")
        doc = self.assertProblem(self.server.request("PUT", "/cost/prices", headers=AUTH,
                                                     json_body={"prices": [{"type": "cpu", "usd_per_hour": "1"}]}),
                                 400, "INVALID_TYPE")
        self.assertEqual(doc["path"], "$.prices[0].usd_per_hour")
        r = self.server.request("PUT", "/cost/prices", headers=AUTH, json_body=body)
        self.assertEqual(r.status, 200, r)
        cpu = [p for p in r.json()["prices"] if p["device"] == "cpu:0"][0]
        self.assertEqual(cpu["usd_per_hour"], 0.25)
        self.assertIn("api override", cpu["source"])
        r = self.server.get("/cost/estimate?seconds=3600&device=cpu:0")
        self.assertAlmostEqual(r.json()["estimates"][0]["usd"], 0.25)
        r = self.server.request("PUT", "/cost/prices", headers=AUTH, json_body={"prices": []})
        self.assertEqual(r.status, 200, r)


class UnknownMoney(unittest.TestCase):
    def test_unpriced_totals_are_null_not_zero(self):
        # no cloud, no prices file, no override: the CPU's price is unknown, and so is every total it makes
        with Server(args=("--sample-interval", "100ms"), env={"ACCELD_CLOUD": "none"}) as s:
            self.assertEqual(s.request("POST", "/run", json_body={"kernel": "saxpy", "n": 1000}).status, 200)

            def report():
                doc = s.get("/cost").json()
                cpu = [d for d in doc["devices"] if d["device"] == "cpu:0"][0]
                return doc if cpu["allocated"]["seconds"] > 0 and cpu["jobs"]["count"] > 0 else None
            doc = until(report, what="time and a job on cpu:0")
            cpu = [d for d in doc["devices"] if d["device"] == "cpu:0"][0]
            self.assertIsNone(cpu["usd_per_hour"])
            self.assertIsNone(cpu["allocated"]["usd"])
            tot = doc["totals"]
            self.assertIsNone(tot["allocated_usd"])
            self.assertIsNone(tot["jobs_usd"])
            self.assertFalse(tot["complete"])
            self.assertTrue(all(g["allocated_usd"] is None for g in tot["groups"]), tot["groups"])
            self.assertIn("weighted by utilization", doc["note"])
            # priced: the same totals in dollars, complete (0.36 USD/h: 0.0001 USD a second)
            r = s.request("PUT", "/cost/prices", json_body={"prices": [{"type": "cpu", "usd_per_hour": 0.36}]})
            self.assertEqual(r.status, 200, r)
            tot = s.get("/cost").json()["totals"]
            self.assertTrue(tot["complete"], tot)
            self.assertGreater(tot["allocated_usd"], 0)
            self.assertIsInstance(tot["jobs_usd"], float)
            self.assertTrue(all(g["allocated_usd"] is not None for g in tot["groups"]), tot["groups"])


    def test_queued_jobs_are_charged_their_run_time(self):
        """Issue #35: jobs.seconds was the sum of total_ms, queue wait included; a job costs the device time it ran."""
        from concurrent.futures import ThreadPoolExecutor
        with Server(args=("--sample-interval", "100ms"), env={"ACCELD_CLOUD": "none"}) as s:
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(lambda _: s.request("POST", "/run", json_body={"kernel": "sgemm", "m": 256, "n": 256, "k": 256}),
                                        range(8)))
            jobs = []
            for r in answers:
                self.assertEqual(r.status, 200, r)
                jobs.append(r.json())
            waited = sum(j["timing"]["total_ms"] for j in jobs) / 1000.0
            ran = sum(j["timing"]["total_ms"] - j["timing"]["queued_ms"] for j in jobs) / 1000.0
            self.assertGreater(waited, ran)  # eight jobs on one CPU: some waited

            def report():
                doc = s.get("/cost").json()
                cpu = [d for d in doc["devices"] if d["device"] == "cpu:0"][0]
                return cpu if cpu["jobs"]["count"] >= 8 else None
            cpu = until(report, what="eight jobs on cpu:0 in /cost")
            self.assertAlmostEqual(cpu["jobs"]["seconds"], ran, delta=1e-6)
            # unpriced, they ran: unknown money, null; the allocated time too; nothing busy costs 0, not null
            self.assertIsNone(cpu["jobs"]["usd"])
            # priced, the jobs cost their run time at the price (0.36 USD/h: 0.0001 USD a second)
            r = s.request("PUT", "/cost/prices", json_body={"prices": [{"type": "cpu", "usd_per_hour": 0.36}]})
            self.assertEqual(r.status, 200, r)
            cpu = [d for d in s.get("/cost").json()["devices"] if d["device"] == "cpu:0"][0]
            self.assertAlmostEqual(cpu["jobs"]["seconds"], ran, delta=1e-6)

    def test_money_is_null_only_when_what_cost_something_has_no_price(self):
        """Issue #35: per-device jobs.usd null beside totals.jobs_usd 0; one rule now: no jobs cost 0."""
        with Server(args=("--sample-interval", "100ms"), env={"ACCELD_CLOUD": "none"}) as s:
            def report():
                doc = s.get("/cost").json()
                cpu = [d for d in doc["devices"] if d["device"] == "cpu:0"][0]
                return doc if cpu["allocated"]["seconds"] > 0 else None
            doc = until(report, what="time on cpu:0")
            cpu = [d for d in doc["devices"] if d["device"] == "cpu:0"][0]
            self.assertEqual(cpu["jobs"]["count"], 0)
            self.assertEqual(cpu["jobs"]["usd"], 0)
            self.assertEqual(doc["totals"]["jobs_usd"], 0)
            self.assertIsNone(cpu["allocated"]["usd"])
            self.assertIsNone(doc["totals"]["allocated_usd"])


class PricesPersist(unittest.TestCase):
    def test_file_and_api_overrides_survive_a_restart(self):
        tmp = tempfile.TemporaryDirectory()
        prices = os.path.join(tmp.name, "prices.json")
        with open(prices, "w") as f:
            json.dump({"currency": "USD", "prices": [{"device": "cpu:0", "usd_per_hour": 0.5}]}, f)
        db = os.path.join(tmp.name, "p.db")
        with Server(db=db, env={"ACCELD_PRICES_FILE": prices}) as s:
            cpu = s.get("/cost/prices").json()["prices"][0]
            self.assertEqual(cpu["usd_per_hour"], 0.5)
            self.assertIn("prices file", cpu["source"])
            # an API override of the same specificity wins over the file
            r = s.request("PUT", "/cost/prices", json_body={"prices": [{"device": "cpu:0", "usd_per_hour": 0.75}]})
            self.assertEqual(r.status, 200, r)
            time.sleep(1.5)  # the writer commits about once a second
        with Server(db=db, env={"ACCELD_PRICES_FILE": prices}) as s:
            doc = s.get("/cost/prices").json()
            self.assertEqual(doc["prices"][0]["usd_per_hour"], 0.75)
            self.assertEqual(doc["overrides"], [{"device": "cpu:0", "usd_per_hour": 0.75}])
        tmp.cleanup()

    def test_a_bad_prices_file_is_reported(self):
        tmp = tempfile.TemporaryDirectory()
        prices = os.path.join(tmp.name, "prices.json")
        with open(prices, "w") as f:
            f.write('{"prices": [{"device": "cpu:0"}]}')
        # the service refuses to start rather than report ready and answer /cost with 503 until a restart
        r = run_cli("serve", "--listen", "127.0.0.1:0", env={"ACCELD_PRICES_FILE": prices}, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("prices.json", r.stderr)
        self.assertIn("usd_per_hour", r.stderr)
        tmp.cleanup()


if __name__ == "__main__":
    unittest.main()
