"""Black-box tests of where a job's data lives: inputs generated on the device (OpenCL on PoCL's CPU device, and PJRT
through the stand-in plugin, whose FAKE_PJRT_COUNTS file says what crossed the link) move no
bytes across the link, the output stays on the device unless the request returns it or a full verification needs
it, sampled verification compares 4,096 elements (or all of a smaller output) and catches a single wrong element (the
OpenCL backend's fault knob ACCELD_FAULT_WRONG_ELEMENT), and verify "full" still compares every element.

Sizes stay small: CI has two cores, and PoCL's programs are cached in $ACCELD_BUILD/pocl-cache between runs."""
import os
import tempfile
import unittest

from harness import FAKES, ROOT, Server, ServerTestCase

BUILD = os.environ.get("ACCELD_BUILD", "build")
POCL_CACHE = os.path.join(ROOT, BUILD, "pocl-cache")
SAMPLE = 4096


def run_ok(test, body):
    r = test.server.request("POST", "/run", json_body=body)
    test.assertEqual(r.status, 200, r)
    doc = r.json()
    test.assertEqual(doc["state"], "succeeded", doc)
    return doc


class DeviceData(ServerTestCase):
    server_env = {"ACCELD_POCL_CACHE_DIR": POCL_CACHE}

    def test_generated_job_moves_only_its_sample(self):
        n = 100000
        doc = run_ok(self, {"kernel": "saxpy", "n": n, "device": "cpu:0", "backend": "opencl",
                            "generate": {"seed": 5}, "verify": True})
        self.assertEqual(doc["inputs"], "generated")
        timing = doc["timing"]
        # no input crossed the link, and of the output only its sample came back
        self.assertEqual(timing["transfer_bytes"], SAMPLE * 4, timing)
        for key in ("generate_ms", "transfer_ms", "kernel_ms", "verify_ms", "total_ms"):
            self.assertIn(key, timing)
        self.assertEqual(doc["result"]["summary"]["of"], "sample")
        self.assertEqual(doc["result"]["summary"]["count"], SAMPLE)
        self.assertNotIn("output", doc["result"])
        self.assertTrue(doc["verified"], doc["verification"])
        self.assertEqual(doc["verification"]["mode"], "sample")
        self.assertEqual(doc["verification"]["checked"], SAMPLE)

    def test_output_comes_back_when_asked(self):
        n = 20000
        doc = run_ok(self, {"kernel": "saxpy", "n": n, "device": "cpu:0", "backend": "opencl",
                            "return": "full"})
        self.assertEqual(doc["timing"]["transfer_bytes"], n * 4)
        self.assertEqual(doc["result"]["summary"]["of"], "output")
        r = self.server.request("GET", "/run/" + doc["id"])
        self.assertEqual(len(r.json()["result"]["output"]), n)

    def test_inline_inputs_up_and_the_output_down(self):
        # the inputs the host gave go up, the output asked for comes down, each counted in its direction
        n = 5000
        doc = run_ok(self, {"kernel": "saxpy", "device": "cpu:0", "backend": "opencl", "return": "full",
                            "inputs": {"x": [0.5] * n, "y": [0.25] * n}})
        timing = doc["timing"]
        self.assertEqual(timing["upload_bytes"], 2 * n * 4, timing)
        self.assertEqual(timing["download_bytes"], n * 4, timing)
        self.assertEqual(timing["transfer_bytes"], 3 * n * 4, timing)
        self.assertAlmostEqual(timing["upload_ms"] + timing["download_ms"], timing["transfer_ms"], places=3)
        self.assertIn(timing["transfer_memory"], ("pinned", "pageable"))
        # a generated job that keeps its output on the device moves nothing up
        doc = run_ok(self, {"kernel": "saxpy", "n": 100000, "device": "cpu:0", "backend": "opencl",
                            "generate": {"seed": 3}})
        self.assertEqual(doc["timing"]["upload_bytes"], 0, doc["timing"])
        self.assertNotIn("upload_gbytes_per_s", doc["timing"])
        self.assertNotIn("transfer_memory", doc["timing"])

    def test_full_verification_compares_every_element(self):
        doc = run_ok(self, {"kernel": "softmax", "m": 3, "n": 8000, "device": "cpu:0", "backend": "opencl",
                            "verify": "full"})
        self.assertEqual(doc["verification"]["mode"], "full")
        self.assertEqual(doc["verification"]["checked"], 24000)
        self.assertTrue(doc["verified"])
        # the whole output came back for it, though the request did not return it
        self.assertEqual(doc["timing"]["transfer_bytes"], 24000 * 4)
        self.assertEqual(doc["result"]["summary"]["of"], "output")

    def test_sampled_and_full_agree_natively(self):
        for verify in (True, "full"):
            doc = run_ok(self, {"kernel": "sgemm", "m": 70, "n": 90, "k": 20, "beta": 0.5, "device": "cpu:0",
                                "backend": "native", "verify": verify})
            self.assertTrue(doc["verified"], doc["verification"])
            self.assertEqual(doc["verification"]["checked"], SAMPLE if verify is True else 6300)

    def test_small_inputs_are_copied(self):
        # below 64 KiB of inputs a launch of the generator costs more than the copy
        doc = run_ok(self, {"kernel": "saxpy", "n": 1000, "device": "cpu:0", "backend": "opencl", "verify": True})
        self.assertEqual(doc["timing"]["transfer_bytes"], 3 * 1000 * 4)
        self.assertTrue(doc["verified"])

    def test_verify_refuses_other_values(self):
        r = self.server.request("POST", "/run", json_body={"kernel": "saxpy", "n": 8, "verify": "some"})
        self.assertProblem(r, 400, "INVALID_VALUE")
        r = self.server.request("POST", "/run", json_body={"kernel": "saxpy", "n": 8, "verify": 1})
        self.assertProblem(r, 400, "INVALID_TYPE")


class KernelClock(ServerTestCase):
    """OpenCL times the kernel by the device's clock (event profiling), which PoCL keeps; the native backend by the
    host's."""

    server_env = {"ACCELD_POCL_CACHE_DIR": POCL_CACHE}

    def test_opencl_kernel_time_is_the_devices(self):
        for body in ({"kernel": "saxpy", "n": 200000}, {"kernel": "dot", "n": 200000},
                     {"kernel": "sgemm", "m": 64, "n": 64, "k": 64}, {"kernel": "softmax", "m": 8, "n": 400}):
            doc = run_ok(self, dict(body, device="cpu:0", backend="opencl", verify=True))
            t = doc["timing"]
            self.assertEqual(t["kernel_clock"], "device", doc)
            self.assertLessEqual(t["kernel_ms"], t["total_ms"], doc)
            self.assertTrue(doc["verified"], doc)

    def test_native_kernel_time_is_the_hosts(self):
        doc = run_ok(self, {"kernel": "saxpy", "n": 200000, "device": "cpu:0", "backend": "native"})
        self.assertEqual(doc["timing"]["kernel_clock"], "host", doc)


class DeviceMemoryExhausted(ServerTestCase):
    """A job whose buffers the OpenCL device cannot allocate (the fault knob ACCELD_FAULT_DEVICE_MEMORY fails the
    kernel's launch with CL_MEM_OBJECT_ALLOCATION_FAILURE, as NVIDIA's driver does) answers 413, not a 5xx."""

    server_env = {"ACCELD_POCL_CACHE_DIR": POCL_CACHE, "ACCELD_FAULT_DEVICE_MEMORY": "1000000"}

    def test_too_large_for_the_device_is_413(self):
        r = self.server.request("POST", "/run", json_body={"kernel": "saxpy", "n": 300000, "device": "cpu:0",
                                                           "backend": "opencl"})
        self.assertProblem(r, 413, "EXCEEDS_DEVICE_MEMORY")
        self.assertIn("the job's buffers take 3600000 bytes", r.json()["detail"])
        self.assertIn("CL_MEM_OBJECT_ALLOCATION_FAILURE", r.json()["detail"])
        run_ok(self, {"kernel": "saxpy", "n": 3000, "device": "cpu:0", "backend": "opencl"})


class WrongElement(ServerTestCase):
    """The OpenCL backend's fault knob overwrites output element 777 after each run."""

    server_env = {"ACCELD_POCL_CACHE_DIR": POCL_CACHE, "ACCELD_FAULT_WRONG_ELEMENT": "777"}

    def test_sampled_verification_catches_one_wrong_element(self):
        doc = run_ok(self, {"kernel": "saxpy", "n": 1000, "device": "cpu:0", "backend": "opencl", "verify": True})
        self.assertFalse(doc["verified"], doc["verification"])
        self.assertEqual(doc["verification"]["checked"], 1000)
        self.assertGreater(doc["verification"]["max_error_to_tolerance"], 1)

    def test_full_verification_catches_it(self):
        doc = run_ok(self, {"kernel": "sgemm", "m": 30, "n": 30, "k": 8, "device": "cpu:0", "backend": "opencl",
                            "verify": "full"})
        self.assertFalse(doc["verified"], doc["verification"])
        self.assertEqual(doc["verification"]["mode"], "full")


def read_counts(path):
    with open(path) as f:
        return {k: int(v) for k, v in (line.split() for line in f)}


class PjrtDeviceData(unittest.TestCase):
    """A fake NVML GPU whose jobs run through the PJRT stand-in."""

    def env(self, tmp, **extra):
        env = {"ACCELD_NVML_LIBRARY": os.path.join(FAKES, "libnvml.so"), "FAKE_NVML_COUNT": "1",
               "ACCELD_PJRT_PLUGINS": "cuda=" + os.path.join(FAKES, "libpjrt.so"), "FAKE_PJRT_PLATFORM": "cuda",
               "FAKE_PJRT_DEVICES": "1", "FAKE_PJRT_KIND": "NVIDIA H100 80GB HBM3", "FAKE_PJRT_CC": "9.0",
               "FAKE_PJRT_MEMORY": "85017493504", "FAKE_PJRT_COUNTS": os.path.join(tmp, "counts")}
        env.update(extra)
        return env

    def test_generated_job_uploads_no_inputs(self):
        with tempfile.TemporaryDirectory() as tmp, Server(env=self.env(tmp)) as s:
            n = 200000
            r = s.request("POST", "/run", json_body={"kernel": "triad", "n": n, "device": "gpu:0", "backend": "pjrt",
                                                     "verify": True})
            self.assertEqual(r.status, 200, r)
            doc = r.json()
            self.assertTrue(doc["verified"], doc)
            counts = read_counts(os.path.join(tmp, "counts"))
            # up: s, the two inputs' keys, the sample's r0, rs, c0 and cs; down: the sample alone
            self.assertEqual(counts["upload_bytes"], 4 + 2 * 4 + 4 * 8, counts)
            self.assertEqual(counts["download_bytes"], SAMPLE * 4, counts)
            self.assertEqual(doc["timing"]["transfer_bytes"], 4 + 2 * 4 + 4 * 8 + SAMPLE * 4)
            self.assertEqual(doc["result"]["summary"]["of"], "sample")

    def test_inline_inputs_up_and_the_output_down(self):
        with tempfile.TemporaryDirectory() as tmp, Server(env=self.env(tmp)) as s:
            # an output of 1 MiB: enough of the host's data for the worker to register its memory (DMA_MIN_BYTES)
            m, n, k = 512, 512, 8
            a = [[0.5] * k for _ in range(m)]
            b = [[0.25] * n for _ in range(k)]
            r = s.request("POST", "/run", json_body={"kernel": "sgemm", "m": m, "n": n, "k": k, "device": "gpu:0",
                                                     "backend": "pjrt", "return": "full",
                                                     "inputs": {"a": a, "b": b}})
            self.assertEqual(r.status, 200, r)
            timing = r.json()["timing"]
            counts = read_counts(os.path.join(tmp, "counts"))
            # the stand-in saw what the answer says; of it the inputs are m x k and k x n floats, the output m x n
            self.assertEqual(timing["upload_bytes"], counts["upload_bytes"], (timing, counts))
            self.assertEqual(timing["download_bytes"], counts["download_bytes"], (timing, counts))
            self.assertEqual(timing["download_bytes"], m * n * 4, timing)
            self.assertEqual(timing["upload_bytes"], (m * k + k * n) * 4 + 4, timing)  # and alpha
            # the worker registered the job's shared memory for DMA, moved both inputs and the output through it,
            # and took it back
            self.assertEqual(timing["transfer_memory"], "pinned", timing)
            self.assertEqual((counts["dma_maps"], counts["dma_unmaps"]), (1, 1), counts)
            self.assertEqual((counts["pinned_uploads"], counts["pinned_downloads"]), (2, 1), counts)

    def inline_sgemm(self, s, n=512):
        r = s.request("POST", "/run", json_body={"kernel": "sgemm", "m": n, "n": n, "k": 8, "device": "gpu:0",
                                                 "backend": "pjrt", "return": "full",
                                                 "inputs": {"a": [[0.5] * 8] * n, "b": [[0.25] * n] * 8}})
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual(doc["state"], "succeeded", doc)
        return doc["timing"]

    def test_pageable_when_the_plugin_cannot_register_memory(self):
        # a refusal is said once and not asked again; a table without the call is not asked at all
        with tempfile.TemporaryDirectory() as tmp, Server(env=self.env(tmp, FAKE_PJRT_DMA="fail")) as s:
            self.assertEqual(self.inline_sgemm(s)["transfer_memory"], "pageable")
            self.assertEqual(self.inline_sgemm(s)["transfer_memory"], "pageable")
            # said once, by the GPU's worker
            text = "would not register a job's memory for DMA"
            s.wait_for(lambda l: text in l.get("msg", "") + l.get("line", ""))
            said = [l for l in s.logs if text in l.get("msg", "") + l.get("line", "")]
            self.assertEqual(len(said), 1, said)
            counts = read_counts(os.path.join(tmp, "counts"))
            self.assertEqual((counts["dma_maps"], counts["pinned_uploads"]), (0, 0), counts)
        with tempfile.TemporaryDirectory() as tmp, Server(env=self.env(tmp, FAKE_PJRT_DMA="none")) as s:
            self.assertEqual(self.inline_sgemm(s)["transfer_memory"], "pageable")
            counts = read_counts(os.path.join(tmp, "counts"))
            self.assertEqual(counts["dma_maps"], 0, counts)

    def test_a_small_job_registers_nothing(self):
        # registering the host's memory costs more than a few KiB of copies: under 1 MiB they stay pageable
        with tempfile.TemporaryDirectory() as tmp, Server(env=self.env(tmp)) as s:
            self.assertEqual(self.inline_sgemm(s, n=64)["transfer_memory"], "pageable")
            self.assertEqual(read_counts(os.path.join(tmp, "counts"))["dma_maps"], 0)

    def test_a_generated_job_registers_nothing(self):
        with tempfile.TemporaryDirectory() as tmp, Server(env=self.env(tmp)) as s:
            r = s.request("POST", "/run", json_body={"kernel": "triad", "n": 200000, "device": "gpu:0",
                                                     "backend": "pjrt"})
            self.assertEqual(r.status, 200, r)
            self.assertNotIn("transfer_memory", r.json()["timing"])
            self.assertEqual(read_counts(os.path.join(tmp, "counts"))["dma_maps"], 0)

    def test_sampled_verification_catches_the_wrong_result(self):
        with tempfile.TemporaryDirectory() as tmp, Server(env=self.env(tmp, FAKE_PJRT_WRONG_RESULT="1")) as s:
            r = s.request("POST", "/run", json_body={"kernel": "softmax", "m": 8, "n": 400, "device": "gpu:0",
                                                     "backend": "pjrt", "verify": True})
            self.assertEqual(r.status, 200, r)
            doc = r.json()
            self.assertFalse(doc["verified"], doc["verification"])
            self.assertEqual(doc["verification"]["checked"], 3200)


class TimingKept(unittest.TestCase):
    def test_the_history_keeps_where_the_time_went(self):
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "h.db")
            env = {"ACCELD_POCL_CACHE_DIR": POCL_CACHE}
            with Server(db=db, env=env) as s:
                r = s.request("POST", "/run", json_body={"kernel": "saxpy", "n": 20000, "device": "cpu:0",
                                                         "backend": "opencl", "verify": True})
                self.assertEqual(r.status, 200, r)
                job = r.json()
                r = s.request("POST", "/run", json_body={"kernel": "saxpy", "device": "cpu:0", "backend": "opencl",
                                                         "return": "full", "inputs": {"x": [1.0] * 64, "y": [2.0] * 64}})
                self.assertEqual(r.status, 200, r)
                inline = r.json()
            with Server(db=db, env=env) as s:
                got = s.get("/run/" + inline["id"]).json()
                self.assertEqual(got["source"], "history")
                for key in ("upload_bytes", "download_bytes", "transfer_memory"):
                    self.assertEqual(got["timing"][key], inline["timing"][key], key)
                got = s.get("/run/" + job["id"]).json()
                self.assertEqual(got["source"], "history")
                for key in ("generate_ms", "transfer_ms", "transfer_bytes", "transfer_gbytes_per_s", "upload_ms",
                            "upload_bytes", "download_ms", "download_bytes", "download_gbytes_per_s", "kernel_ms",
                            "verify_ms", "total_ms"):
                    self.assertEqual(got["timing"][key], job["timing"][key], key)


if __name__ == "__main__":
    unittest.main()
