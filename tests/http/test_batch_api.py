"""GET /batch-config and `acceld batch` against the real binary: the steps, the memory cap, 400/404/422 answers and
numbers near 2^63, on this CPU-only machine, with the fake NVML's two GPUs, and on the TPU v6e-8 fixture."""
import json
import os

from harness import FAKES, FIXTURES, ServerTestCase, run_cli

INT64_MAX = 9223372036854775807
GIB = 1 << 30


class BatchCase(ServerTestCase):
    def batch(self, query=""):
        r = self.server.get("/batch-config" + (("?" + query) if query else ""))
        self.assertEqual(r.status, 200, r)
        return r.json()

    def steps(self, doc):
        return {s["step"]: s for s in doc["steps"]}


class CpuOnly(BatchCase):
    def test_default_device_and_steps(self):
        doc = self.batch()
        self.assertEqual(doc["device"]["id"], self.server.get("/select").json()["device"]["id"])
        self.assertEqual(doc["device"]["id"], "cpu:0")
        self.assertEqual(doc["factor"], 1)
        self.assertEqual(doc["batch_size"], 1)
        self.assertIsNone(doc["max_batch_size"])
        self.assertEqual([s["step"] for s in doc["steps"]], ["factor", "round", "align", "memory"])
        for s in doc["steps"]:
            self.assertIsInstance(s["input"], int)
            self.assertIsInstance(s["output"], int)
            self.assertTrue(s["text"])
        self.assertNotIn("tpu", doc)

    def test_rounding_ties_up(self):
        self.assertEqual(self.batch("base=3")["batch_size"], 4)
        self.assertEqual(self.batch("base=5")["batch_size"], 4)
        self.assertEqual(self.batch("base=6")["batch_size"], 8)
        self.assertEqual(self.batch("base=1048576")["batch_size"], 1048576)

    def test_memory_cap(self):
        total = self.server.get("/devices/cpu:0").json()["memory"]["total_bytes"]
        doc = self.batch("params=1000000&sample_bytes=1000000&base=1048576")
        want = (total * 9 // 10 - 2000000) // 1000000
        self.assertEqual(doc["max_batch_size"], want)
        self.assertEqual(doc["batch_size"], min(want, 1048576))
        mem = doc["memory"]
        self.assertEqual(mem["memory_bytes"], total)
        self.assertEqual(mem["usable_bytes"], total * 9 // 10)
        self.assertEqual(mem["state_bytes"], 2000000)
        self.assertEqual(doc["model"], {"params": 1000000, "dtype": "bf16", "sample_bytes": 1000000})
        self.assertIn(str(want), self.steps(doc)["memory"]["text"])
        # train: 16 B/param; reserve 0 keeps all memory
        doc = self.batch("params=1000000&sample_bytes=1000000&mode=train&reserve=0")
        self.assertEqual(doc["memory"]["state_bytes"], 16000000)
        self.assertEqual(doc["max_batch_size"], (total - 16000000) // 1000000)
        doc = self.batch("model_bytes=1000&mode=train&sample_bytes=1&reserve=0.5")
        self.assertEqual(doc["memory"]["state_bytes"], 8000)
        self.assertEqual(doc["max_batch_size"], total * 5 // 10 - 8000)

    def test_model_larger_than_memory_is_422(self):
        doc = self.assertProblem(self.server.get(f"/batch-config?model_bytes={INT64_MAX}"), 422, "UNSATISFIABLE")
        self.assertIn(str(INT64_MAX), doc["detail"])
        self.assertIn("does not fit", doc["detail"])
        self.assertEqual(doc["memory"]["state_bytes"], INT64_MAX)
        self.assertEqual([s["step"] for s in doc["steps"]], ["factor", "round", "align"])
        self.assertEqual(doc["device"], "cpu:0")

    def test_overflow_near_2_63_is_422(self):
        doc = self.assertProblem(self.server.get(f"/batch-config?params={1 << 62}&mode=train"), 422)
        self.assertIn("2^64", doc["detail"])
        doc = self.assertProblem(self.server.get(f"/batch-config?params={INT64_MAX}&dtype=fp32"), 422)
        self.assertIn("2^64", doc["detail"])
        doc = self.assertProblem(self.server.get(f"/batch-config?model_bytes={INT64_MAX}&mode=train"), 422)
        doc = self.assertProblem(self.server.get(f"/batch-config?sample_bytes={INT64_MAX}"), 422)
        self.assertIn("not one sample fits", doc["detail"])

    def test_bad_values_name_the_parameter(self):
        cases = [("base=0", "base"), ("base=1048577", "base"), ("base=abc", "base"), ("base=-1", "base"),
                 (f"params={INT64_MAX + 1}", "params"), ("params=0", "params"),
                 ("model_bytes=18446744073709551616", "model_bytes"), ("sample_bytes=1.5", "sample_bytes"),
                 ("reserve=0.95", "reserve"), ("reserve=abc", "reserve"), ("reserve=-0.1", "reserve"),
                 ("reserve=0.1234567", "reserve"), ("mode=serve", "mode"), ("dtype=fp64", "dtype"),
                 ("device=gpu", "device"), ("model_bytes=10&params=10", "model_bytes"), ("dtype=fp16", "dtype")]
        for query, param in cases:
            with self.subTest(query=query):
                doc = self.assertProblem(self.server.get("/batch-config?" + query), 400, "INVALID_PARAMETER")
                self.assertEqual(doc["parameter"], param)
        doc = self.assertProblem(self.server.get("/batch-config?size=1"), 400, "UNKNOWN_PARAMETER")
        self.assertIn("sample_bytes", doc["detail"])

    def test_unknown_device_is_404(self):
        doc = self.assertProblem(self.server.get("/batch-config?device=gpu:3"), 404, "UNKNOWN_DEVICE")
        self.assertIn("gpu:3", doc["detail"])
        self.assertEqual(doc["device"], "gpu:3")
        self.assertEqual(self.batch("device=cpu:0")["device"]["id"], "cpu:0")

    def test_cli_batch(self):
        r = run_cli("batch", "--base", "3", "--params=1000", "--sample-bytes", "1000", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["batch_size"], 4)
        self.assertIsInstance(doc["max_batch_size"], int)
        r = run_cli("batch", "--params", str(INT64_MAX), "--mode", "train")
        self.assertEqual(r.returncode, 1)
        self.assertIn("2^64", r.stderr)
        r = run_cli("batch", "--base", "0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("base", r.stderr)
        r = run_cli("batch", "--device", "tpu:9")
        self.assertEqual(r.returncode, 1)
        r = run_cli("batch", "--model-bytes", "1", "--params", "1")
        self.assertEqual(r.returncode, 2)


class TwoGpus(BatchCase):
    server_env = {"ACCELD_NVML_LIBRARY": os.path.join(FAKES, "libnvml.so")}

    def test_gpu_factor_and_alignment(self):
        doc = self.batch()
        self.assertEqual(doc["device"]["id"], "gpu:0")
        self.assertEqual(doc["factor"], 4)
        self.assertEqual(doc["alignment"], 8)
        self.assertEqual(self.steps(doc)["round"]["output"], 4)
        self.assertEqual(doc["batch_size"], 8)

    def test_memory_cap_on_the_l4(self):
        # 24 GiB x 0.9 = 23192823398 usable; 7e9 bf16 params = 14e9; / 1e8 per sample = 91 -> 88 (multiple of 8)
        doc = self.batch("device=gpu:1&base=64&params=7000000000&sample_bytes=100000000")
        self.assertEqual(doc["memory"]["memory_bytes"], 24 * GIB)
        self.assertEqual(doc["max_batch_size"], 91)
        self.assertEqual(doc["batch_size"], 88)

    def test_training_a_7b_model_does_not_fit(self):
        doc = self.assertProblem(self.server.get("/batch-config?device=gpu:0&params=7000000000&mode=train"), 422)
        self.assertIn("112000000000", doc["detail"])


class TpuV6e8(BatchCase):
    server_env = {"ACCELD_SYSFS_ROOT": os.path.join(FIXTURES, "tpu-v6e-8", "sys"),
                  "ACCELD_DEV_ROOT": os.path.join(FIXTURES, "tpu-v6e-8", "dev")}

    def test_base_one_gives_128_split_per_chip(self):
        doc = self.batch()
        self.assertEqual(doc["device"]["id"], "tpu:0")
        self.assertEqual(doc["factor"], 128)
        self.assertEqual(doc["batch_size"], 128)
        self.assertEqual(doc["alignment"], 8)
        tpu = doc["tpu"]
        self.assertEqual(tpu["batch_per_chip"], 128)
        self.assertEqual(tpu["batch_per_core"], 128)
        self.assertEqual(tpu["chips"], 8)
        self.assertEqual(tpu["global_batch_size"], 1024)

    def test_memory_cap_per_chip(self):
        doc = self.batch("params=1000000000&sample_bytes=100000000")
        # 32 GiB per chip x 0.9 - 2e9 bytes of bf16 weights, / 1e8
        self.assertEqual(doc["max_batch_size"], (32 * GIB * 9 // 10 - 2000000000) // 100000000)
        self.assertEqual(doc["batch_size"], 128)
