"""Black-box tests of /run against the built binary: every kernel natively and through OpenCL (PoCL's CPU device,
merged into cpu:0), verification against the double-precision reference, inline-input validation (named 400s with
the JSON path), wait=false with Location, tiny jobs alike whether run inline or queued, listing and cancelling,
limits (413), estimates refused up front (422), queue full (429), overruns (504), many jobs at once, what a job
shows of its request (the params its kernel takes, who made it), its figures read back after a restart as they were
when it finished, and the command-line twin `acceld run`.

Sizes stay small: CI has two cores, and PoCL's programs are cached in $ACCELD_BUILD/pocl-cache between runs."""
import json
import os
import tempfile
import threading
import time
import unittest

from harness import FIXTURES, ROOT, Server, ServerTestCase, run_cli

BUILD = os.environ.get("ACCELD_BUILD", "build")
POCL_CACHE = os.path.join(ROOT, BUILD, "pocl-cache")
KERNELS = {
    "saxpy": {"n": 1009, "alpha": -1},
    "triad": {"n": 7, "s": 0},
    "dot": {"n": 65537},
    "sgemm": {"m": 67, "n": 65, "k": 31, "alpha": 1, "beta": -1},
    "softmax": {"m": 5, "n": 1031},
}


def post(server, body, **kw):
    return server.request("POST", "/run", json_body=body, **kw)


class RunKernels(ServerTestCase):
    server_env = {"ACCELD_POCL_CACHE_DIR": POCL_CACHE}

    def run_ok(self, body):
        r = post(self.server, body)
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual(doc["state"], "succeeded", doc)
        return doc

    def test_every_kernel_natively(self):
        for kernel, sizes in KERNELS.items():
            with self.subTest(kernel=kernel):
                doc = self.run_ok(dict(kernel=kernel, device="cpu:0", verify=True, **sizes))
                self.assertEqual(doc["backend"], "native")
                self.assertTrue(doc["verified"], doc.get("verification"))
                for key in ("queued_ms", "transfer_ms", "kernel_ms", "total_ms"):
                    self.assertIn(key, doc["timing"])
                self.assertIn("gflops", doc["throughput"])
                self.assertIn("checksum", doc["result"])
                self.assertEqual(set(doc["result"]["summary"]), {"min", "max", "mean", "first", "count", "of"})

    def test_every_kernel_through_opencl(self):
        for kernel, sizes in KERNELS.items():
            with self.subTest(kernel=kernel):
                doc = self.run_ok(dict(kernel=kernel, device="cpu:0", backend="opencl", verify=True, **sizes))
                self.assertEqual(doc["backend"], "opencl")
                self.assertTrue(doc["verified"], doc.get("verification"))

    def test_alpha_beta_edges(self):
        for alpha, beta in ((0, 0), (1, 0), (-1, 1), (0, -1)):
            for backend in ("native", "opencl"):
                doc = self.run_ok({"kernel": "sgemm", "m": 13, "n": 17, "k": 11, "alpha": alpha, "beta": beta,
                                   "backend": backend, "device": "cpu:0", "verify": True})
                self.assertTrue(doc["verified"], (alpha, beta, backend))

    def test_inline_matrices_as_rows_and_flat(self):
        doc = self.run_ok({"kernel": "sgemm", "inputs": {"a": [[1, 2], [3, 4]], "b": [[5, 6], [7, 8]],
                                                         "c": [[1, 1], [1, 1]]}, "beta": 2, "return": "full"})
        self.assertEqual(doc["result"]["output"], [21.0, 24.0, 45.0, 52.0])
        self.assertEqual(doc["sizes"], {"m": 2, "n": 2, "k": 2})
        doc = self.run_ok({"kernel": "sgemm", "m": 1, "n": 2, "k": 3, "return": "full",
                           "inputs": {"a": [1, 2, 3], "b": [1, 0, 0, 1, 1, 1]}})
        self.assertEqual(doc["result"]["output"], [4.0, 5.0])
        doc = self.run_ok({"kernel": "dot", "inputs": {"x": [1, 2, 3], "y": [4, 5, 6]}})
        self.assertEqual(doc["result"]["value"], 32.0)
        doc = self.run_ok({"kernel": "softmax", "inputs": {"x": [[0, 0], [1000, 1000]]}, "return": "full"})
        self.assertEqual(doc["result"]["output"], [0.5, 0.5, 0.5, 0.5])

    def bad(self, body, reason, path=None, status=400):
        doc = self.assertProblem(post(self.server, body), status, reason)
        if path is not None:
            self.assertEqual(doc.get("path"), path, doc)
        return doc

    def test_inline_validation(self):
        self.bad({"kernel": "saxpy", "inputs": {"x": [1, 2, 3], "y": [1, 2]}}, "LENGTH_MISMATCH", "$.inputs.y")
        self.bad({"kernel": "saxpy", "n": 2, "inputs": {"x": [1, 2, 3], "y": [1, 2]}}, "TOO_MANY_ELEMENTS",
                 "$.inputs.x")
        self.bad({"kernel": "saxpy", "inputs": {"x": [1, True], "y": [1, 2]}}, "INVALID_TYPE", "$.inputs.x[1]")
        self.bad({"kernel": "saxpy", "inputs": {"x": [1, "2"], "y": [1, 2]}}, "INVALID_TYPE", "$.inputs.x[1]")
        self.bad({"kernel": "dot", "inputs": {"x": ["NaN"], "y": [1]}}, "NOT_A_NUMBER", "$.inputs.x[0]")
        self.bad({"kernel": "dot", "inputs": {"x": [1], "y": ["-Infinity"]}}, "NOT_A_NUMBER", "$.inputs.y[0]")
        self.bad({"kernel": "dot", "inputs": {"x": [1e39], "y": [1]}}, "INVALID_VALUE", "$.inputs.x[0]")
        self.bad({"kernel": "saxpy", "alpha": "NaN", "n": 4}, "NOT_A_NUMBER", "$.alpha")
        # a literal beyond double's range is refused by the JSON parser, naming line and column
        r = self.server.request("POST", "/run", body=b'{"kernel":"dot","inputs":{"x":[1e999],"y":[1]}}',
                                headers={"Content-Type": "application/json"})
        doc = self.assertProblem(r, 400, "MALFORMED_JSON")
        self.assertIn("column", doc)
        self.bad({"kernel": "sgemm", "inputs": {"a": [[1, 2], [3]], "b": [[1], [2]]}}, "ROW_LENGTH_MISMATCH",
                 "$.inputs.a[1]")
        self.bad({"kernel": "sgemm", "inputs": {"a": [[1, 2]], "b": [[1], [2], [3]]}}, "TOO_MANY_ELEMENTS",
                 "$.inputs.b")
        self.bad({"kernel": "sgemm", "inputs": {"a": [1, 2], "b": [1, 2]}}, "MISSING_FIELD", "$.inputs.a")
        self.bad({"kernel": "saxpy", "inputs": {"x": [1], "z": [1]}}, "UNKNOWN_FIELD", "$.inputs.z")
        self.bad({"kernel": "saxpy", "inputs": {"x": [1]}}, "MISSING_FIELD", "$.inputs.y")
        self.bad({"kernel": "saxpy", "inputs": {"x": [1], "y": [1]}, "generate": {"seed": 1}}, "CONFLICTING_FIELDS",
                 "$.generate")
        self.bad({"n": 3}, "MISSING_FIELD", "$.kernel")
        self.bad({"kernel": "gemm", "n": 3}, "INVALID_VALUE", "$.kernel")
        self.bad({"kernel": "saxpy", "n": 3, "k": 2}, "NOT_APPLICABLE", "$.k")
        self.bad({"kernel": "saxpy", "n": 3, "speed": 2}, "UNKNOWN_FIELD", "$.speed")
        self.bad({"kernel": "saxpy", "n": 0}, "INVALID_VALUE", "$.n")
        self.bad({"kernel": "saxpy", "n": 2.5}, "INVALID_TYPE", "$.n")
        self.bad({"kernel": "saxpy"}, "MISSING_FIELD", "$.n")
        self.bad({"kernel": "sgemm", "n": 3, "m": 3}, "MISSING_FIELD", "$.k")
        self.bad({"kernel": "saxpy", "n": 3, "device": "cpu:0", "prefer": "gpu"}, "CONFLICTING_FIELDS", "$.prefer")
        self.bad({"kernel": "saxpy", "n": 3, "backend": "cuda"}, "INVALID_VALUE", "$.backend")
        self.bad({"kernel": "saxpy", "n": 3, "timeout_ms": 0}, "INVALID_VALUE", "$.timeout_ms")
        self.bad([1, 2], "INVALID_TYPE", "$")

    def test_limits(self):
        doc = self.bad({"kernel": "triad", "n": 1000000000}, "JOB_TOO_LARGE", status=413)
        self.assertEqual(doc["limit"], 268435456)
        self.bad({"kernel": "saxpy", "n": 300000, "return": "full"}, "OUTPUT_TOO_LARGE", status=413)
        doc = self.bad({"kernel": "sgemm", "m": 8192, "n": 8192, "k": 8192, "timeout_ms": 1}, "WOULD_TIME_OUT",
                       status=422)
        self.assertGreater(doc["estimated_ms"], 1)
        self.bad({"kernel": "saxpy", "n": 3, "device": "gpu:7"}, "UNKNOWN_DEVICE", status=404)
        self.bad({"kernel": "saxpy", "n": 3, "prefer": "gpu", "fallback": False}, "NO_MATCHING_DEVICE", status=409)

    def test_prefer_gpu_falls_back_to_cpu(self):
        doc = self.run_ok({"kernel": "saxpy", "n": 100, "prefer": "gpu"})
        self.assertEqual(doc["device"], "cpu:0")
        self.assertTrue(doc["fell_back"])
        self.assertIn("no GPU", doc["fallback_reason"])

    def test_placement_is_the_selection_of_select(self):
        # a job sent with the constraints of a /select call lands on the device that call names
        for extra in ({"policy": "cheapest"}, {"policy": "fastest", "prefer": "cpu"}, {"allow_tpu": False},
                      {"min_memory_bytes": 1024, "policy": "efficient"}):
            query = "&".join(f"{k}={json.dumps(v).strip(chr(34))}" for k, v in extra.items())
            chosen = self.server.get("/select?executable=true&kernel=sgemm&" + query).json()["device"]["id"]
            doc = self.run_ok(dict({"kernel": "sgemm", "m": 64, "n": 64, "k": 64}, **extra))
            self.assertEqual(doc["device"], chosen, (extra, doc))
            self.assertTrue(doc["placement"], doc)
        # what /select refuses, /run refuses alike, naming the constraint
        doc = self.bad({"kernel": "saxpy", "n": 3, "min_memory_bytes": 2 ** 62}, "NO_MATCHING_DEVICE", status=409)
        self.assertIn("min_memory_bytes", doc["detail"])
        self.bad({"kernel": "saxpy", "n": 3, "policy": "fast"}, "INVALID_VALUE", "$.policy")
        self.bad({"kernel": "saxpy", "n": 3, "allow_tpu": "yes"}, "INVALID_TYPE", "$.allow_tpu")
        self.bad({"kernel": "saxpy", "n": 3, "min_memory_bytes": -1}, "INVALID_VALUE", "$.min_memory_bytes")

    def test_async_get_list_delete(self):
        r = post(self.server, {"kernel": "saxpy", "n": 1000, "wait": False})
        self.assertEqual(r.status, 202, r)
        job = r.json()
        self.assertEqual(r.header("Location"), "/run/" + job["id"])
        self.assertIn(job["state"], ("queued", "running", "succeeded"))
        deadline = time.monotonic() + 30
        while True:
            g = self.server.get("/run/" + job["id"])
            self.assertEqual(g.status, 200)
            if g.json()["state"] == "succeeded":
                break
            self.assertLess(time.monotonic(), deadline, g.json())
            time.sleep(0.01)
        lst = self.server.get("/run?state=succeeded&page_size=1")
        self.assertEqual(lst.status, 200)
        page = lst.json()
        self.assertEqual(len(page["jobs"]), 1)
        self.assertEqual(page["jobs"][0]["state"], "succeeded")
        if "next_page_token" in page:
            nxt = self.server.get("/run?page_size=100&page_token=" + page["next_page_token"])
            self.assertEqual(nxt.status, 200)
            self.assertNotIn(page["jobs"][0]["id"], [j["id"] for j in nxt.json()["jobs"]])
        self.assertProblem(self.server.get("/run?state=sleeping"), 400, "INVALID_PARAMETER")
        self.assertProblem(self.server.get("/run?page_size=0"), 400, "INVALID_PARAMETER")
        self.assertProblem(self.server.get("/run?page_token=x"), 400, "INVALID_PARAMETER")
        self.assertProblem(self.server.get("/run?bogus=1"), 400, "UNKNOWN_PARAMETER")
        self.assertProblem(self.server.get("/run/nope"), 404, "JOB_NOT_FOUND")
        self.assertProblem(self.server.request("DELETE", "/run/nope"), 404, "JOB_NOT_FOUND")
        doc = self.assertProblem(self.server.request("DELETE", "/run/" + job["id"]), 409, "NOT_CANCELLABLE")
        self.assertEqual(doc["job"]["state"], "succeeded")

    def test_tiny_jobs_answer_alike_inline_or_queued(self):
        # a tiny job on an idle CPU runs on the HTTP thread; behind a bigger job it queues: same answer either way
        body = {"kernel": "saxpy", "n": 1024, "alpha": 3, "generate": {"seed": 7}, "verify": True, "device": "cpu:0"}
        conn = self.server.conn(timeout=60)
        try:
            answers = [self.server.request("POST", "/run", conn=conn, json_body=body) for _ in range(20)]
        finally:
            conn.close()
        for r in answers:
            self.assertEqual(r.status, 200, r)
            self.assertTrue(r.json()["verified"], r.json())
            self.assertEqual(r.json()["result"], answers[0].json()["result"])
        big = post(self.server, {"kernel": "sgemm", "m": 512, "n": 512, "k": 512, "device": "cpu:0", "wait": False})
        self.assertEqual(big.status, 202, big)
        behind = post(self.server, body)
        self.assertEqual(behind.status, 200, behind)
        self.assertEqual(behind.json()["result"], answers[0].json()["result"])
        later = post(self.server, dict(body, wait=False))
        self.assertEqual(later.status, 202, later)
        self.assertEqual(later.header("Location"), "/run/" + later.json()["id"])
        self.assertIn(later.json()["state"], ("queued", "running", "succeeded"))

    def test_a_job_shows_what_it_took(self):
        # the scalars its kernel takes, and a seed only for generated inputs (POST /run refuses the others)
        took = {"saxpy": {"alpha"}, "triad": {"s"}, "dot": set(), "sgemm": {"alpha", "beta"}, "softmax": set()}
        for kernel, sizes in KERNELS.items():
            with self.subTest(kernel=kernel):
                doc = self.run_ok(dict(kernel=kernel, device="cpu:0", **sizes))
                self.assertEqual(set(doc["params"]), took[kernel] | {"seed"})
                self.assertEqual(doc["trigger"], "api")
                self.assertNotIn("check_id", doc)
        doc = self.run_ok({"kernel": "dot", "inputs": {"x": [1, 2], "y": [3, 4]}})
        self.assertEqual(doc["params"], {})
        self.assertEqual(doc["inputs"], "inline")
        doc = self.run_ok({"kernel": "saxpy", "inputs": {"x": [1, 2], "y": [3, 4]}, "alpha": 0.1})
        self.assertEqual(doc["params"], {"alpha": 0.1})
        # numbers in their shortest form: alpha 0.1 as it was sent, not the float32's 0.10000000149011612
        r = post(self.server, {"kernel": "triad", "n": 10, "s": 0.1, "generate": {"seed": 3}})
        self.assertIn('"params":{"s":0.1,"seed":3}', r.text)
        # the list shows who made each job
        listed = self.server.get("/run?page_size=5").json()["jobs"]
        self.assertTrue(all(j["trigger"] == "api" for j in listed), listed)

    def test_many_jobs_at_once(self):
        results = []
        lock = threading.Lock()

        def worker(i):
            for j in range(4):
                body = dict(kernel=list(KERNELS)[(i + j) % 5], verify=True, device="cpu:0",
                            **list(KERNELS.values())[(i + j) % 5])
                if i % 2:
                    body["backend"] = "opencl"
                r = post(self.server, body)
                with lock:
                    results.append((r.status, r.json().get("verified")))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(results), 48)
        self.assertTrue(all(s == 200 and v for s, v in results), results)


class RunQueueAndTimeouts(ServerTestCase):
    server_args = ("--exec-queue-depth", "1")
    server_env = {"ACCELD_POCL_CACHE_DIR": POCL_CACHE}

    def test_1_overrun_answers_504(self):
        # 4 Mi elements: an optimistic estimate is far under 2 ms, but allocating and generating them is not
        r = post(self.server, {"kernel": "softmax", "m": 2048, "n": 2048, "timeout_ms": 2})
        doc = self.assertProblem(r, 504, "TIMED_OUT")
        self.assertEqual(doc["job"]["state"], "timed_out")
        deadline = time.monotonic() + 120
        while self.server.get("/run/" + doc["job"]["id"]).json().get("timing", {}).get("kernel_ms") is None:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.assertEqual(self.server.get("/run/" + doc["job"]["id"]).json()["state"], "timed_out")

    def test_2_queue_full_answers_429(self):
        conn = self.server.conn(timeout=60)
        statuses = []
        ids = []
        try:
            for i in range(6):
                # the first runs for a good while (~60 GFLOP), so the one queued behind it is still queued below
                size = 3072 if i == 0 else 512
                r = self.server.request("POST", "/run", conn=conn,
                                        json_body={"kernel": "sgemm", "m": size, "n": size, "k": size,
                                                   "wait": False})
                statuses.append(r.status)
                if r.status == 429:
                    self.assertEqual(r.header("Retry-After"), "1")
                    self.assertEqual(r.json()["reason"], "QUEUE_FULL")
                else:
                    ids.append(r.json()["id"])
        finally:
            conn.close()
        self.assertIn(429, statuses)
        self.assertEqual(statuses[0], 202)
        # a queued job can be cancelled; the running one cannot
        cancelled = 0
        for i in ids:
            r = self.server.request("DELETE", "/run/" + i)
            self.assertIn(r.status, (200, 409), r)
            cancelled += r.status == 200
            if r.status == 200:
                self.assertEqual(r.json()["state"], "cancelled")
                self.assertEqual(r.json()["error"]["reason"], "CANCELLED")
                self.assertEqual(self.server.get("/run/" + i).json()["state"], "cancelled")
        self.assertEqual(cancelled, 1)


def fixture_env(name):
    return {"ACCELD_SYSFS_ROOT": os.path.join(FIXTURES, name, "sys"),
            "ACCELD_PROC_ROOT": os.path.join(FIXTURES, name, "proc"), "ACCELD_POCL_CACHE_DIR": POCL_CACHE}


class RunHistory(unittest.TestCase):
    def test_a_finished_jobs_figures_are_kept(self):
        # a job read back after a restart shows the fraction of peak it had when it finished, though the device's
        # peak is another by then (the DMI fixture's 3500 MHz CPU, then the same CPU with only its clock now)
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "h.db")
            with Server(db=db, env=fixture_env("dmi-max-speed")) as s:
                before = s.get("/devices/cpu:0").json()["peak"]["fp32_gflops"]
                r = post(s, {"kernel": "sgemm", "m": 96, "n": 96, "k": 96, "device": "cpu:0"})
                self.assertEqual(r.status, 200, r)
                job = r.json()
                self.assertTrue(job["recorded"])
                fraction = job["throughput"]["fraction_of_peak"]
                self.assertAlmostEqual(fraction, job["throughput"]["gflops"] / before, places=9)
            with Server(db=db, env=fixture_env("cgroup-v2-limited")) as s:
                self.assertNotEqual(s.get("/devices/cpu:0").json()["peak"]["fp32_gflops"], before)
                got = s.get("/run/" + job["id"]).json()
                self.assertEqual(got["source"], "history")
                self.assertEqual(got["throughput"]["fraction_of_peak"], fraction)
                self.assertEqual(got["throughput"]["gflops"], job["throughput"]["gflops"])
                self.assertEqual(got["trigger"], "api")


    def test_a_job_of_acceld_run_is_in_the_history_it_names(self):
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "cli.db")
            r = run_cli("run", "saxpy", "--n", "64", "--db", db, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            job = json.loads(r.stdout)
            self.assertEqual(job["trigger"], "cli")
            with Server(db=db) as s:
                listed = s.get("/run").json()["jobs"]
                self.assertEqual([(j["id"], j["trigger"]) for j in listed], [(job["id"], "cli")])
                self.assertEqual(s.get("/run/" + job["id"]).json()["state"], "succeeded")
            # a database it cannot open is said, and the job still runs
            r = run_cli("run", "saxpy", "--n", "64", "--db", "/proc/acceld-none/x.db")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("not recorded", r.stderr)

    def test_the_list_goes_on_in_the_history_after_a_restart(self):
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "h.db")
            with Server(db=db) as s:
                first = []
                for i in range(5):  # a millisecond apart: the list orders by submission time, then id
                    first.append(post(s, {"kernel": "saxpy", "n": 8 + i}).json()["id"])
                    time.sleep(0.003)
            with Server(db=db) as s:
                # nothing in memory: GET /run lists the history's jobs, newest first, as summaries
                doc = s.get("/run").json()
                self.assertEqual([j["id"] for j in doc["jobs"]], first[::-1])
                self.assertTrue(all(j["source"] == "history" for j in doc["jobs"]))
                self.assertNotIn("next_page_token", doc)
                # a new job comes first, the history after it; pages go on through the history
                time.sleep(0.003)
                new = post(s, {"kernel": "saxpy", "n": 4}).json()["id"]
                page = s.get("/run?page_size=2").json()
                self.assertEqual([j["id"] for j in page["jobs"]], [new, first[4]])
                seen = [j["id"] for j in page["jobs"]]
                while "next_page_token" in page:
                    page = s.get("/run?page_size=2&page_token=" + page["next_page_token"]).json()
                    seen += [j["id"] for j in page["jobs"]]
                self.assertEqual(seen, [new] + first[::-1])
                # a state filter holds in the history too
                self.assertEqual(len(s.get("/run?state=succeeded").json()["jobs"]), 6)
                self.assertEqual(s.get("/run?state=failed").json()["jobs"], [])
                self.assertEqual(s.get("/run?page_token=hxyz").json()["reason"], "INVALID_PARAMETER")
                # a job it has nowhere is named, as an unknown device is
                doc = s.get("/run/01a2nosuchjob").json()
                self.assertEqual((doc["reason"], doc["job"]), ("JOB_NOT_FOUND", "01a2nosuchjob"))


class RunAuthAndCli(unittest.TestCase):
    def test_post_and_delete_need_the_token(self):
        with Server(args=["--token", "s3cret"], env={}) as s:
            r = post(s, {"kernel": "saxpy", "n": 4})
            self.assertEqual(r.status, 401)
            self.assertEqual(s.request("DELETE", "/run/x").status, 401)
            r = post(s, {"kernel": "saxpy", "n": 4}, headers={"Authorization": "Bearer s3cret"})
            self.assertEqual(r.status, 200, r)
            self.assertEqual(s.get("/run").status, 200)

    def test_cli_run(self):
        env = {"ACCELD_POCL_CACHE_DIR": POCL_CACHE, "ACCELD_LOG_LEVEL": "error",
               "ACCELD_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so"}
        r = run_cli("run", "sgemm", "--m", "37", "--n", "37", "--k", "5", "--verify", "--json", "--db", ":memory:",
                    env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["sizes"], {"m": 37, "n": 37, "k": 5})
        self.assertEqual(doc["trigger"], "cli")
        self.assertTrue(doc["verified"])
        r = run_cli("run", "triad", "--n", "1001", "--backend", "opencl", "--verify", "--db", ":memory:", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("succeeded", r.stdout)
        self.assertIn("verified yes", r.stdout)
        r = run_cli("run", "triad", "--n", "1000000000", "--db", ":memory:", env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("JOB_TOO_LARGE", r.stderr)
        self.assertEqual(run_cli("run", "gemm", "--n", "3", env=env).returncode, 2)
        self.assertEqual(run_cli("run", "saxpy", env=env).returncode, 2)


if __name__ == "__main__":
    unittest.main()
