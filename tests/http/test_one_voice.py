"""One voice (issue 25): the same fact is said the same way by every endpoint.

- A device id: one that is not cpu:N, gpu:N or tpu:N is a 400 naming where it came from (INVALID_PARAMETER with
  `parameter` for the path and the query, INVALID_VALUE with `path` for a body); a well-formed id of no device on this
  host is a 404 UNKNOWN_DEVICE with `device`. Every endpoint that takes an id is driven here, wherever the id comes.
- Every problem's `path` is a JSONPath from the root and starts its detail; `accepted`, where a problem has it, is an
  array of strings. Messages that refuse a value repeat it; a body field sent in the query string is said to belong
  in the body.
- GET /run lists summaries: after jobs of return=full, the list carries no output (GET /run/{id} does).
"""
import json
import re
import unittest
from urllib.parse import quote

from harness import ServerTestCase

MALFORMED = ("cpu0", "xpu:0", "GPU:0", "gpu:1234567", "gpu:")
UNKNOWN = ("gpu:999", "tpu:4242")
JSONPATH = re.compile(r"^\$(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])*$")
SAXPY = {"kernel": "saxpy", "n": 3}

# Every endpoint that takes a device id: (name, where the id goes, a function of the id giving the request).
PATH, QUERY, BODY = "path", "query", "body"
ENDPOINTS = [
    ("GET /devices/{id}", PATH, lambda i: ("GET", "/devices/" + quote(i), None)),
    ("POST /devices/{id}/check", PATH, lambda i: ("POST", f"/devices/{quote(i)}/check", None)),
    ("POST /devices/{id}/check with a body", PATH,
     lambda i: ("POST", f"/devices/{quote(i)}/check", {"level": "quick"})),
    ("GET /devices/{id}/checks", PATH, lambda i: ("GET", f"/devices/{quote(i)}/checks", None)),
    ("GET /devices/{id}/checks/{check_id}", PATH, lambda i: ("GET", f"/devices/{quote(i)}/checks/chk-1", None)),
    ("GET /select", QUERY, lambda i: ("GET", "/select?device=" + quote(i), None)),
    ("GET /batch-config", QUERY, lambda i: ("GET", "/batch-config?base=8&device=" + quote(i), None)),
    ("GET /history", QUERY, lambda i: ("GET", "/history?device=" + quote(i), None)),
    ("GET /cost", QUERY, lambda i: ("GET", "/cost?device=" + quote(i), None)),
    ("GET /cost/estimate", QUERY, lambda i: ("GET", "/cost/estimate?seconds=60&device=" + quote(i), None)),
    ("POST /select", BODY, lambda i: ("POST", "/select", {"device": i})),
    ("POST /run", BODY, lambda i: ("POST", "/run", dict(SAXPY, device=i))),
    ("POST /run, no wait", BODY, lambda i: ("POST", "/run", dict(SAXPY, device=i, wait=False))),
]


class OneVoice(ServerTestCase):
    def call(self, method, target, body=None):
        if body is None:
            return self.server.request(method, target)
        return self.server.request(method, target, json_body=body)

    def check_shape(self, doc):
        """What every problem shares: a JSONPath `path` that starts the detail, an array `accepted`."""
        if "path" in doc:
            self.assertRegex(doc["path"], JSONPATH, doc)
            self.assertTrue(doc["detail"].startswith(doc["path"] + ": "), doc)
        if "accepted" in doc:
            self.assertIsInstance(doc["accepted"], list, doc)  # [] where a route takes no query parameter
            self.assertTrue(all(isinstance(a, str) and a for a in doc["accepted"]), doc)

    def test_a_malformed_device_id_is_one_400(self):
        for name, where, make in ENDPOINTS:
            for bad in MALFORMED:
                with self.subTest(endpoint=name, id=bad):
                    method, target, body = make(bad)
                    r = self.call(method, target, body)
                    if where == BODY:
                        doc = self.assertProblem(r, 400, "INVALID_VALUE")
                        self.assertEqual(doc["path"], "$.device")
                        self.assertNotIn("parameter", doc)
                    else:
                        doc = self.assertProblem(r, 400, "INVALID_PARAMETER")
                        self.assertEqual(doc["parameter"], "id" if where == PATH else "device")
                        self.assertNotIn("path", doc)
                    self.assertIn(f"'{bad}' is not a device id (cpu:N, gpu:N or tpu:N)", doc["detail"])
                    self.check_shape(doc)

    def test_an_unknown_device_is_one_404(self):
        for name, _, make in ENDPOINTS:
            for unknown in UNKNOWN:
                with self.subTest(endpoint=name, id=unknown):
                    method, target, body = make(unknown)
                    doc = self.assertProblem(self.call(method, target, body), 404, "UNKNOWN_DEVICE")
                    self.assertEqual(doc["device"], unknown)
                    self.assertIn(f"'{unknown}'", doc["detail"])
                    self.assertEqual(set(doc) - {"type", "title", "status", "detail", "reason", "request_id"},
                                     {"device"}, doc)

    def test_a_known_device_passes_the_rule(self):
        for name, _, make in ENDPOINTS:
            with self.subTest(endpoint=name):
                method, target, body = make("cpu:0")
                if target.endswith("/check"):
                    body = {"level": "thorough"}  # past the id, refused for its level: no check runs
                r = self.call(method, target, body)
                if r.status >= 400:  # a check that is not found, a level that is not one: not about the device
                    self.assertIn(r.json()["reason"], ("CHECK_NOT_FOUND", "INVALID_VALUE"), r)

    def test_a_price_names_a_device_id_here_or_not(self):
        """PUT /cost/prices is the one body with an id that need not be here: a price outlives the device it names
        (the same document is the prices file, which may serve a fleet), but the id must be one."""
        doc = self.assertProblem(self.server.request("PUT", "/cost/prices", json_body={
            "prices": [{"type": "gpu", "usd_per_hour": 2}, {"device": "gpu0", "usd_per_hour": 1}]}),
            400, "INVALID_VALUE")
        self.assertEqual(doc["path"], "$.prices[1].device")
        self.assertIn("'gpu0' is not a device id", doc["detail"])
        r = self.server.request("PUT", "/cost/prices", json_body={"prices": [{"device": "gpu:999", "usd_per_hour": 1}]})
        self.assertEqual(r.status, 200, r)
        r = self.server.request("PUT", "/cost/prices", json_body={"prices": []})
        self.assertEqual(r.status, 200, r)

    def test_every_problem_path_is_jsonpath_and_accepted_an_array(self):
        cases = [
            # POST /run: the body, its inputs and generate
            ("POST", "/run", [1]),
            ("POST", "/run", {"n": 3}),
            ("POST", "/run", {"kernel": "sgem", "n": 3}),
            ("POST", "/run", {"kernel": 7, "n": 3}),
            ("POST", "/run", dict(SAXPY, colour=1, size=2)),
            ("POST", "/run", dict(SAXPY, k=2)),
            ("POST", "/run", {"kernel": "saxpy", "n": 0}),
            ("POST", "/run", {"kernel": "saxpy"}),
            ("POST", "/run", {"kernel": "sgemm", "n": 1024}),
            ("POST", "/run", dict(SAXPY, alpha="NaN")),
            ("POST", "/run", dict(SAXPY, backend="cuda")),
            ("POST", "/run", dict(SAXPY, precision="low")),
            ("POST", "/run", dict(SAXPY, prefer="fpga")),
            ("POST", "/run", dict(SAXPY, policy=3)),
            ("POST", "/run", dict(SAXPY, allow_tpu="yes")),
            ("POST", "/run", dict(SAXPY, device="cpu:0", prefer="cpu")),
            ("POST", "/run", dict(SAXPY, timeout_ms=0)),
            ("POST", "/run", dict(SAXPY, timeout_ms="1s")),
            ("POST", "/run", dict(SAXPY, generate={"seed": -1})),
            ("POST", "/run", dict(SAXPY, generate={"salt": 1})),
            ("POST", "/run", dict(SAXPY, generate=3)),
            ("POST", "/run", {"kernel": "saxpy", "generate": {}, "inputs": {"x": [1], "y": [1]}}),
            ("POST", "/run", {"kernel": "saxpy", "inputs": []}),
            ("POST", "/run", {"kernel": "saxpy", "inputs": {"x": [1, 2], "y": [1]}}),
            ("POST", "/run", {"kernel": "saxpy", "inputs": {"x": [1, "a"], "y": [1, 2]}}),
            ("POST", "/run", {"kernel": "saxpy", "inputs": {"x": [1], "z": [1]}}),
            ("POST", "/run", {"kernel": "softmax", "inputs": {"x": [[1, 2], [3]]}}),
            ("POST", "/run", {"kernel": "sgemm", "inputs": {"a": [[1, 2]], "b": [[1], ["Infinity"]]}}),
            ("POST", "/run", dict(SAXPY, **{"return": "all"})),
            # POST /select
            ("POST", "/select", ["prefer"]),
            ("POST", "/select", {"colour": 1}),
            ("POST", "/select", {"prefer": "fpga"}),
            ("POST", "/select", {"allow_tpu": "yes"}),
            ("POST", "/select", {"min_memory_bytes": -1}),
            ("POST", "/select", {"kernel": "fft"}),
            # POST /devices/{id}/check
            ("POST", "/devices/cpu:0/check", {"level": "thorough"}),
            ("POST", "/devices/cpu:0/check", {"level": 1}),
            ("POST", "/devices/cpu:0/check", {"lvl": "long"}),
            ("POST", "/devices/cpu:0/check", {"duration_s": 10}),
            ("POST", "/devices/cpu:0/check", {"level": "long", "duration_s": 1}),
            ("POST", "/devices/cpu:0/check", {"backend": "cuda"}),
            ("POST", "/devices/cpu:0/check", {"wait": "yes"}),
            ("POST", "/devices/cpu:0/check", [1]),
            # PUT /cost/prices
            ("PUT", "/cost/prices", []),
            ("PUT", "/cost/prices", {}),
            ("PUT", "/cost/prices", {"x": 1, "prices": []}),
            ("PUT", "/cost/prices", {"currency": "EUR", "prices": []}),
            ("PUT", "/cost/prices", {"prices": [{"type": "cpu", "usd_per_hour": -1}]}),
            ("PUT", "/cost/prices", {"prices": [{"type": "fpga", "usd_per_hour": 1}]}),
            ("PUT", "/cost/prices", {"prices": [{"type": "cpu", "usd_per_hour": 1, "x": 2}]}),
            ("PUT", "/cost/prices", {"prices": [{"usd_per_hour": 1}]}),
            # query parameters: accepted is the same array
            ("GET", "/select?prefer=fpga", None),
            ("GET", "/select?colour=blue", None),
            ("GET", "/batch-config?mode=serve", None),
            ("GET", "/batch-config?base=0", None),
            ("GET", "/history?metric=speed", None),
            ("GET", "/cost?group_by=week", None),
            ("GET", "/cost/estimate?kernel=fft&n=4", None),
            ("GET", "/run?state=sleeping", None),
            ("GET", "/run?page_size=0", None),
            ("GET", "/devices/cpu:0/checks?page_size=0", None),
        ]
        paths = accepted = 0
        for method, target, body in cases:
            with self.subTest(method=method, target=target, body=body):
                r = self.call(method, target, body)
                self.assertEqual(r.status, 400, r)
                doc = self.assertProblem(r, 400)
                self.check_shape(doc)
                # a body's fault is named by its JSONPath, a query's by its parameter
                self.assertIn("path" if body is not None else "parameter", doc, doc)
                paths += "path" in doc
                accepted += "accepted" in doc
        self.assertGreater(paths, 40)
        self.assertGreater(accepted, 20)

    def test_messages_repeat_the_value(self):
        cases = [
            ("POST", "/run", {"kernel": "sgem", "n": 3},
             "$.kernel: 'sgem' is not one of saxpy, triad, dot, sgemm, softmax"),
            ("POST", "/run", dict(SAXPY, **{"return": "all"}), "$.return: 'all' is not one of summary, full"),
            ("POST", "/run", dict(SAXPY, timeout_ms=0), "$.timeout_ms: 0 is not an integer from 1 to"),
            ("POST", "/run", {"kernel": "saxpy", "n": -4}, "$.n: -4 is not an integer from 1 to"),
            ("POST", "/run", dict(SAXPY, generate={"seed": -1}), "$.generate.seed: -1 is not a non-negative integer"),
            ("POST", "/run", dict(SAXPY, backend="cuda"), "$.backend: 'cuda' is not one of "),
            ("POST", "/select", {"prefer": "fpga"}, "$.prefer: 'fpga' is not one of auto, cpu, gpu, tpu"),
            ("POST", "/devices/cpu:0/check", {"level": "thorough"}, "$.level: 'thorough' is not one of quick, long"),
            ("PUT", "/cost/prices", {"prices": [{"type": "fpga", "usd_per_hour": 1}]},
             "$.prices[0].type: 'fpga' is not one of cpu, gpu, tpu"),
            ("GET", "/select?policy=fast", None, "policy: 'fast' is not one of priority, fastest, cheapest, efficient"),
            ("GET", "/batch-config?mode=serve", None, "mode: 'serve' is not one of infer, train"),
            ("GET", "/history?step=fast", None, "step: 'fast' is not seconds"),
            ("GET", "/run?page_size=0", None, "page_size: '0' is not an integer from 1 to 100"),
            ("GET", "/cost/estimate?seconds=-1", None, "seconds: '-1' is not a number above 0"),
        ]
        for method, target, body, detail in cases:
            with self.subTest(target=target, body=body):
                doc = self.assertProblem(self.call(method, target, body), 400)
                self.assertTrue(doc["detail"].startswith(detail), doc["detail"])

    def test_a_body_field_in_the_query_says_so(self):
        for method, target, body, field in [("POST", "/run?wait=false", SAXPY, "wait"),
                                            ("POST", "/run?kernel=saxpy", SAXPY, "kernel"),
                                            ("POST", "/select?prefer=cpu", {}, "prefer"),
                                            ("POST", "/devices/cpu:0/check?level=long", None, "level"),
                                            ("PUT", "/cost/prices?prices=x", {"prices": []}, "prices")]:
            with self.subTest(target=target):
                doc = self.assertProblem(self.call(method, target, body), 400, "UNKNOWN_PARAMETER")
                self.assertEqual(doc["parameter"], field)
                self.assertIn(f"'{field}' is not a query parameter of {method} {target.split('?')[0]}: it is a field "
                              f"of the JSON body", doc["detail"])
        # a parameter that is nobody's is still listed against what the route takes
        doc = self.assertProblem(self.server.get("/run?colour=1"), 400, "UNKNOWN_PARAMETER")
        self.assertEqual(doc["accepted"], ["state", "page_size", "page_token"])


class JobListIsSummaries(ServerTestCase):
    N = 10000

    def test_the_list_of_15_full_jobs_carries_no_outputs(self):
        ids = []
        for i in range(15):
            r = self.server.request("POST", "/run", json_body={"kernel": "saxpy", "n": self.N, "return": "full",
                                                               "generate": {"seed": i + 1}})
            self.assertEqual(r.status, 200, r)
            self.assertEqual(len(r.json()["result"]["output"]), self.N)
            ids.append(r.json()["id"])
        r = self.server.get("/run?page_size=15")
        self.assertEqual(r.status, 200, r)
        jobs = r.json()["jobs"]
        self.assertEqual([j["id"] for j in jobs], ids[::-1])
        for job in jobs:
            self.assertEqual(job["return"], "full")
            self.assertIn("checksum", job["result"])
            self.assertNotIn("output", job["result"])
            self.assertFalse(any(isinstance(v, list) and len(v) > 16 for v in job.values()), job)
        # a summary is small: well under what one output of N floats takes
        self.assertLess(len(r.body), 15 * 4096, len(r.body))
        # the whole record stays GET /run/{id}
        one = self.server.get("/run/" + ids[0]).json()
        self.assertEqual(len(one["result"]["output"]), self.N)


if __name__ == "__main__":
    unittest.main()


# One rule for sizes and counts: the same spellings wherever a size or a count is taken, query, body or flag.
SIZES = ("17179869184", "16GiB", "17179869184B")
COUNTS = ("7000000000", "7B", "7b", "7000M", "7.0B")


class OneSpelling(ServerTestCase):
    def same(self, answers, what):
        first = answers[0]
        for a in answers[1:]:
            self.assertEqual(a, first, what)

    def test_sizes_read_alike_everywhere(self):
        from harness import run_cli
        picked = []
        for size in SIZES:
            q = self.server.get("/select?min_memory_bytes=" + size).json()
            b = self.server.request("POST", "/select", json_body={"min_memory_bytes": size}).json()
            c = json.loads(run_cli("select", "--min-memory-bytes", size).stdout)
            picked.append((q["device"]["id"], b["device"]["id"], c["device"]["id"]))
            batch = self.server.get(f"/batch-config?base=8&model_bytes={size}&sample_bytes=1MiB")
            self.assertEqual(batch.status, 200, (size, batch.json()))
            cli_batch = run_cli("batch", "--base", "8", "--model-bytes", size, "--sample-bytes", "1MiB", "--json")
            self.assertEqual(cli_batch.returncode, 0, cli_batch.stderr)
            picked.append((batch.json()["batch_size"], json.loads(cli_batch.stdout)["batch_size"]))
        self.same(picked[0::2], "the device chosen for one size written three ways")
        self.same(picked[1::2], "the batch for one model size written three ways")
        # an integer in a body is a size too
        self.assertEqual(self.server.request("POST", "/select", json_body={"min_memory_bytes": 17179869184}).status,
                         self.server.request("POST", "/select", json_body={"min_memory_bytes": "16GiB"}).status)

    def test_counts_read_alike_everywhere(self):
        from harness import run_cli
        plans, batches = [], []
        for count in COUNTS:
            p = self.server.get(f"/plan?params={count}").json()
            plans.append(p["model"]["params"])
            b = self.server.get(f"/batch-config?base=8&params={count}&sample_bytes=1MiB")
            self.assertEqual(b.status, 200, (count, b.json()))
            batches.append(b.json()["batch_size"])
            c = run_cli("batch", "--base", "8", "--params", count, "--sample-bytes", "1MiB", "--json")
            self.assertEqual(c.returncode, 0, (count, c.stderr))
            batches.append(json.loads(c.stdout)["batch_size"])
        self.assertEqual(set(plans), {7000000000})
        self.same(batches, "the batch for 7B parameters written five ways")

    def test_a_score_is_the_figure_its_words_say(self):
        for policy in ("fastest", "priority"):
            doc = self.server.get("/select?policy=" + policy).json()
            for c in doc["candidates"]:
                if c.get("score") is None:
                    continue
                self.assertIn("%g" % c["score"], c["why"], c)
                self.assertEqual(float("%.6g" % c["score"]), c["score"], c)

    def test_a_value_not_utf8_is_quoted_readably(self):
        doc = self.server.get("/batch-config?base=8&dtype=f%FFx").json()
        self.assertEqual(doc["reason"], "INVALID_PARAMETER")
        self.assertIn("'f\ufffdx'", doc["detail"])
        self.assertNotIn("not representable", doc["detail"])

    def test_dtypes_read_alike(self):
        # one table of dtype names: /plan and /batch-config take the same names and aliases, and refuse alike
        for name, canonical in (("f32", "f32"), ("fp32", "f32"), ("float32", "f32"), ("bf16", "bf16"),
                                ("fp16", "f16"), ("int8", "int8"), ("int4", "int4"), ("fp8", "fp8")):
            b = self.server.get(f"/batch-config?base=8&params=1B&dtype={name}")
            self.assertEqual(b.status, 200, (name, b.json()))
            self.assertEqual(b.json()["model"]["dtype"], canonical)
            p = self.server.get(f"/plan?params=7B&layers=32&hidden=4096&heads=32&vocab=32000&dtype={name}")
            self.assertEqual(p.status, 200, (name, p.json()))
        refusals = [self.server.get("/batch-config?base=8&params=7B&dtype=fp64").json(),
                    self.server.get("/plan?params=7B&dtype=fp64").json()]
        self.assertEqual([r["accepted"] for r in refusals], [["f32", "bf16", "f16", "fp8", "int8", "int4"]] * 2)
        # and so is the reserve: a fraction, as given, in both answers
        b = self.server.get("/batch-config?base=8&params=1B&sample_bytes=1MiB&reserve=0.2").json()
        p = self.server.get("/plan?params=7B&layers=32&hidden=4096&heads=32&vocab=32000&reserve=0.2").json()
        self.assertEqual((b["memory"]["reserve"], p["devices"]["reserve"]), (0.2, 0.2))

    def test_the_cost_policies_weigh_the_prices_in_force(self):
        # a prices file's price is the one the service and the command rank by, not the built-in table's
        import os
        import tempfile
        from harness import Server, run_cli
        with tempfile.TemporaryDirectory() as d:
            prices = os.path.join(d, "prices.json")
            with open(prices, "w") as f:
                json.dump({"currency": "USD", "prices": [{"device": "cpu:0", "usd_per_hour": 0.04}]}, f)
            with Server(args=["--prices-file", prices]) as s:
                served = s.get("/select?policy=cheapest").json()
            told = json.loads(run_cli("select", "--policy", "cheapest", "--prices-file", prices).stdout)
            for doc in (served, told):
                self.assertIn("0.04 USD per hour", doc["reason"], doc["reason"])
                self.assertEqual(doc["candidates"][0]["score"], 0.04)

    def test_a_bad_query_value_is_quoted_after_its_name(self):
        # one form for a refused query value: "name: 'value' is not ..."
        for target in ("/history?step=abc", "/history?start_time=yesterday", "/cost?group_by=x", "/select?policy=fast",
                       "/plan?params=7B&seq_len=-1", "/batch-config?base=0", "/run?page_size=0",
                       "/cost/estimate?seconds=x"):
            doc = self.server.get(target).json()
            name, value = target.split("?")[1].split("&")[-1].split("=")
            self.assertTrue(doc["detail"].startswith(f"{name}: '{value}' is not "), (target, doc["detail"]))

    def test_a_bad_size_says_how_to_write_one(self):
        for target in ("/batch-config?base=8&model_bytes=lots", "/batch-config?base=8&sample_bytes=-1"):
            doc = self.server.get(target).json()
            self.assertIn("GiB, TiB count in 1024s", doc["detail"], doc)
        doc = self.server.request("POST", "/select", json_body={"min_memory_bytes": True}).json()
        self.assertEqual(doc["reason"], "INVALID_TYPE")
        self.assertIn("16GiB", doc["detail"])


class TheDocsSayWhatTheServiceDoes(unittest.TestCase):
    """Pages a newcomer reads name every reason the service answers and every route a token guards."""

    def test_every_reason_is_in_the_api_page(self):
        from harness import ROOT, run_cli
        r = run_cli("reasons")
        self.assertEqual(r.returncode, 0, r.stderr)
        reasons = [line.split()[0] for line in r.stdout.splitlines() if line.strip()]
        self.assertGreater(len(reasons), 20)
        with open(f"{ROOT}/docs/api.md", encoding="utf-8") as f:
            page = f.read()
        self.assertEqual([x for x in reasons if f"`{x}`" not in page], [], "reasons docs/api.md does not name")

    def test_every_guarded_route_is_in_the_operations_page(self):
        from harness import ROOT
        with open(f"{ROOT}/src/api/routes.c", encoding="utf-8") as f:
            table = f.read()
        guarded = [f"{m} {p}" for m, p, flags in re.findall(r'\{HTTP_([A-Z]+), "([^"]+)", \w+, ([^}]*)\}', table)
                   if "ROUTE_AUTH" in flags]
        self.assertGreaterEqual(len(guarded), 5)
        with open(f"{ROOT}/docs/operations.md", encoding="utf-8") as f:
            page = " ".join(f.read().split())
        self.assertEqual([g for g in guarded if f"`{g}`" not in page], [], "guarded routes operations.md leaves out")
