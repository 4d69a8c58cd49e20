"""GET/POST /select and `acceld select` against the real binary: a CPU-only host (this machine), two GPUs through
the fake NVML (H100 80GB + L4), a TPU v6e-8 host from its fixture tree, and an AMD fixture whose GPU id is made
hostile to check that format=env output cannot break out of its quoting."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from urllib.parse import quote

from harness import FAKES, FIXTURES, Server, ServerTestCase, run_cli

EXPORT_LINE = re.compile(r"^export [A-Z_][A-Z0-9_]*='")
GIB = 1 << 30


def sh_eval(text):
    """Evaluates export lines in sh with an almost empty environment; returns the environment it ends with."""
    p = subprocess.run(["sh", "-c", 'eval "$(cat)"; env'], input=text.encode(), capture_output=True,
                       env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, timeout=30)
    assert p.returncode == 0, p.stderr
    env = {}
    for line in p.stdout.decode().splitlines():
        name, _, value = line.partition("=")
        env[name] = value
    return env


def tpu_env():
    root = os.path.join(FIXTURES, "tpu-v6e-8")
    return {"ACCELD_SYSFS_ROOT": os.path.join(root, "sys"), "ACCELD_DEV_ROOT": os.path.join(root, "dev")}


def nvml_env():
    return {"ACCELD_NVML_LIBRARY": os.path.join(FAKES, "libnvml.so")}


class SelectCase(ServerTestCase):
    def select(self, query=""):
        r = self.server.get("/select" + (("?" + query) if query else ""))
        self.assertEqual(r.status, 200, r)
        return r.json()

    def env_text(self, query):
        r = self.server.get("/select?format=env" + (("&" + query) if query else ""))
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("Content-Type").startswith("text/plain"), r.header("Content-Type"))
        for line in r.text.splitlines():
            self.assertRegex(line, EXPORT_LINE)
        return r.text

    def assertEnvEvaluates(self, query=""):
        """format=env, evaluated by sh, gives exactly the JSON answer's env."""
        want = self.select(query)["env"]
        got = sh_eval(self.env_text(query))
        for name, value in want.items():
            self.assertIn(name, got)
            self.assertEqual(got[name], value, name)
        return want


class CpuOnly(SelectCase):
    """This machine as it is: cpu:0 only (no NVML, no TPU)."""

    def test_default_is_cpu_and_device_matches_devices_api(self):
        doc = self.select()
        dev = self.server.get("/devices/cpu:0").json()
        self.assertEqual(doc["device"]["id"], "cpu:0")
        for key in ("id", "type", "vendor", "model", "backends", "executable", "cpu"):
            self.assertEqual(doc["device"].get(key), dev.get(key), key)
        self.assertEqual(doc["policy"], "priority")
        self.assertEqual(doc["prefer"], "auto")
        self.assertFalse(doc["fell_back"])
        self.assertIsNone(doc["fallback_from"])
        self.assertTrue(doc["reason"])
        self.assertEqual([c["id"] for c in doc["candidates"]], ["cpu:0"])
        self.assertTrue(doc["candidates"][0]["chosen"])
        env = doc["env"]
        self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "")
        self.assertEqual(env["JAX_PLATFORMS"], "cpu")
        self.assertEqual(env["XLA_PYTHON_CLIENT_PREALLOCATE"], "false")
        eff = dev["cpu"].get("effective_cpus")
        want = max(1, int(eff)) if eff else dev["cpu"]["pus"]
        self.assertEqual(env["OMP_NUM_THREADS"], str(want))

    def test_format_env_evaluates_to_the_json_env(self):
        env = self.assertEnvEvaluates()
        self.assertIn("CUDA_VISIBLE_DEVICES", env)
        self.assertEnvEvaluates("policy=fastest&kernel=triad")

    def test_prefer_gpu_falls_back(self):
        doc = self.select("prefer=gpu")
        self.assertEqual(doc["device"]["id"], "cpu:0")
        self.assertTrue(doc["fell_back"])
        self.assertEqual(doc["fallback_from"], "gpu")
        self.assertIn("no GPU detected; fell back to cpu:0", doc["reason"])

    def test_allow_tpu_false(self):
        doc = self.select("prefer=tpu&allow_tpu=false")
        self.assertEqual(doc["device"]["id"], "cpu:0")
        self.assertFalse(doc["allow_tpu"])
        self.assertEqual(doc["fallback_from"], "tpu")

    def test_policies_answer(self):
        for policy in ("priority", "fastest", "cheapest", "efficient"):
            doc = self.select(f"policy={policy}&kernel=sgemm")
            self.assertEqual(doc["policy"], policy)
            self.assertEqual(doc["kernel"], "sgemm")
            self.assertEqual(doc["device"]["id"], "cpu:0")

    def test_constraints_met(self):
        doc = self.select("executable=true&min_memory_bytes=1MiB&device=cpu:0")
        self.assertEqual(doc["device"]["id"], "cpu:0")
        self.assertEqual(doc["constraints"], {"device": "cpu:0", "min_memory_bytes": 1 << 20, "executable": True})

    def test_bad_values_name_the_parameter(self):
        """The detail repeats the value; accepted lists the names where the values form a set (an array, the one
        shape), and is absent where they do not (the detail says what is)."""
        cases = [("prefer=fpga", "prefer", ["auto", "cpu", "gpu", "tpu"]),
                 ("policy=fast", "policy", ["priority", "fastest", "cheapest", "efficient"]),
                 ("kernel=gemm", "kernel", ["saxpy", "triad", "dot", "sgemm", "softmax"]),
                 ("allow_tpu=maybe", "allow_tpu", ["true", "false", "1", "0", "yes", "no", "on", "off"]),
                 ("executable=2", "executable", ["true", "false", "1", "0", "yes", "no", "on", "off"]),
                 ("format=yaml", "format", ["json", "env"]),
                 ("tpu_scope=pod", "tpu_scope", ["chip", "host"]),
                 ("min_memory_bytes=-1", "min_memory_bytes", "9223372036854775807"),
                 ("min_memory_bytes=9223372036854775808", "min_memory_bytes", "9223372036854775807"),
                 ("min_memory_bytes=99999999999999999999999999", "min_memory_bytes", None),
                 ("device=gpu", "device", "cpu:N"),
                 ("device=" + quote("cpu:0'$(id)"), "device", None),
                 ("prefer=", "prefer", ["auto", "cpu", "gpu", "tpu"])]
        for query, param, accepted in cases:
            with self.subTest(query=query):
                doc = self.assertProblem(self.server.get("/select?" + query), 400, "INVALID_PARAMETER")
                self.assertEqual(doc["parameter"], param)
                value = query.split("=", 1)[1]
                if "%" not in value:
                    self.assertIn(f"{param}: '{value}' is not ", doc["detail"])
                if isinstance(accepted, list):
                    self.assertEqual(doc["accepted"], accepted)
                else:
                    self.assertNotIn("accepted", doc)
                    if accepted:
                        self.assertIn(accepted, doc["detail"])

    def test_unknown_and_repeated_parameters(self):
        doc = self.assertProblem(self.server.get("/select?colour=blue"), 400, "UNKNOWN_PARAMETER")
        self.assertEqual(doc["parameter"], "colour")
        doc = self.assertProblem(self.server.get("/select?prefer=cpu&prefer=gpu"), 400, "DUPLICATE_PARAMETER")
        self.assertEqual(doc["parameter"], "prefer")

    def test_unknown_pinned_device_is_404(self):
        doc = self.assertProblem(self.server.get("/select?device=gpu:7"), 404, "UNKNOWN_DEVICE")
        self.assertIn("gpu:7", doc["detail"])
        self.assertEqual(doc["device"], "gpu:7")

    def test_no_device_meets_constraints_is_409(self):
        doc = self.assertProblem(self.server.get("/select?min_memory_bytes=9223372036854775807"), 409,
                                 "NO_MATCHING_DEVICE")
        self.assertIn("min_memory_bytes", doc["detail"])
        self.assertEqual([e["id"] for e in doc["constraints"]["min_memory_bytes"]], ["cpu:0"])
        self.assertEqual(doc["candidates"][0]["excluded_by"], "min_memory_bytes")
        # format=env does not turn an error into text a shell would run
        r = self.server.get("/select?format=env&min_memory_bytes=9223372036854775807")
        self.assertProblem(r, 409)
        self.assertNotIn(b"export", r.body)

    def test_hostile_request_values_are_never_echoed_as_shell(self):
        for value in ("x'; touch /tmp/acceld-select-pwned; echo '", "a\nexport EVIL=1", "$(id)"):
            for param in ("device", "kernel", "prefer"):
                r = self.server.get(f"/select?format=env&{param}=" + quote(value))
                self.assertProblem(r, 400, "INVALID_PARAMETER")
                # the answer is one line of JSON (the value escaped inside it), never export lines
                self.assertNotIn(b"\n", r.body.rstrip(b"\n"))
                self.assertFalse(r.body.startswith(b"export"))

    def test_post_same_fields_as_json(self):
        body = {"prefer": "cpu", "policy": "cheapest", "executable": True, "min_memory_bytes": 1024,
                "allow_tpu": False, "kernel": "dot", "device": None}
        r = self.server.request("POST", "/select", json_body=body)
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual(doc["device"]["id"], "cpu:0")
        self.assertEqual(doc["policy"], "cheapest")
        self.assertEqual(doc["kernel"], "dot")
        self.assertEqual(doc["constraints"]["min_memory_bytes"], 1024)
        get = self.select("prefer=cpu&policy=cheapest&executable=true&min_memory_bytes=1024&allow_tpu=false"
                          "&kernel=dot")
        self.assertEqual(doc["env"], get["env"])
        self.assertEqual(doc["reason"], get["reason"])
        r = self.server.request("POST", "/select", json_body={"format": "env"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sh_eval(r.text)["JAX_PLATFORMS"], "cpu")

    def test_post_unknown_fields_and_wrong_types(self):
        r = self.server.request("POST", "/select", json_body={"prefer": "cpu", "colour": 1, "size": 2})
        doc = self.assertProblem(r, 400, "UNKNOWN_FIELD")
        self.assertEqual(sorted(doc["fields"]), ["colour", "size"])
        self.assertIn("colour", doc["detail"])
        for body, path in (({"allow_tpu": "yes"}, "$.allow_tpu"), ({"min_memory_bytes": 1.5}, "$.min_memory_bytes"),
                           ({"min_memory_bytes": True}, "$.min_memory_bytes"), ({"prefer": 1}, "$.prefer"),
                           ({"executable": 1}, "$.executable"), ({"device": ["cpu:0"]}, "$.device")):
            with self.subTest(body=body):
                doc = self.assertProblem(self.server.request("POST", "/select", json_body=body), 400, "INVALID_TYPE")
                self.assertEqual(doc["path"], path)
        # a bad value in the body is named by its JSONPath, as every body field is
        doc = self.assertProblem(self.server.request("POST", "/select", json_body={"min_memory_bytes": -5}), 400,
                                 "INVALID_VALUE")
        self.assertEqual(doc["path"], "$.min_memory_bytes")
        self.assertIn("'-5'", doc["detail"])
        doc = self.assertProblem(self.server.request("POST", "/select", json_body={"policy": "fast"}), 400,
                                 "INVALID_VALUE")
        self.assertEqual(doc["path"], "$.policy")
        self.assertEqual(doc["accepted"], ["priority", "fastest", "cheapest", "efficient"])
        self.assertProblem(self.server.request("POST", "/select", json_body=["prefer"]), 400, "INVALID_TYPE")
        self.assertProblem(self.server.request("POST", "/select", body=b"prefer=cpu",
                                               headers={"Content-Type": "application/x-www-form-urlencoded"}), 415)
        self.assertProblem(self.server.request("POST", "/select", body=b"{\"prefer\": ",
                                               headers={"Content-Type": "application/json"}), 400)
        doc = self.assertProblem(self.server.request("POST", "/select?prefer=cpu", json_body={}), 400,
                                 "UNKNOWN_PARAMETER")
        self.assertEqual(doc["parameter"], "prefer")
        self.assertIn("field of the JSON body", doc["detail"])
        doc = self.assertProblem(self.server.request("POST", "/select", json_body={"device": "gpu:4"}), 404,
                                 "UNKNOWN_DEVICE")
        self.assertEqual(doc["device"], "gpu:4")

    def test_cli_select(self):
        r = run_cli("select", "--format", "env", env={"ACCELD_NVML_LIBRARY": "/nonexistent/libnvml.so"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sh_eval(r.stdout)["JAX_PLATFORMS"], "cpu")
        r = run_cli("select", "--prefer", "gpu", "--policy=cheapest", "--executable",
                    env={"ACCELD_NVML_LIBRARY": "/nonexistent/libnvml.so"})
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertTrue(doc["fell_back"])
        self.assertEqual(doc["policy"], "cheapest")
        self.assertTrue(doc["constraints"]["executable"])
        r = run_cli("select", "--device", "gpu:3", env={"ACCELD_NVML_LIBRARY": "/nonexistent/libnvml.so"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("gpu:3", r.stderr)
        r = run_cli("select", "--policy", "nope")
        self.assertEqual(r.returncode, 2)
        self.assertIn("policy", r.stderr)
        self.assertIn("invalid --policy 'nope'; accepted: priority, fastest, cheapest, efficient", r.stderr)
        r = run_cli("select", "--prefer", "fpga")
        self.assertEqual(r.returncode, 2)
        r = run_cli("select", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--min-memory-bytes", r.stdout)


class TwoGpus(SelectCase):
    """The fake NVML: gpu:0 H100 80GB ($10.98/h, 60 GiB free), gpu:1 L4 24GB ($0.56/h, 18 GiB free)."""

    server_env = nvml_env()

    def test_gpus_are_listed(self):
        doc = self.select()
        self.assertEqual([c["id"] for c in doc["candidates"]], ["cpu:0", "gpu:0", "gpu:1"])
        self.assertEqual(doc["device"]["id"], "gpu:0")

    def test_fastest_cheapest_efficient(self):
        self.assertEqual(self.select("prefer=gpu&policy=fastest")["device"]["id"], "gpu:0")
        self.assertEqual(self.select("prefer=gpu&policy=fastest&kernel=saxpy")["device"]["id"], "gpu:0")
        doc = self.select("prefer=gpu&policy=cheapest")
        self.assertEqual(doc["device"]["id"], "gpu:1")
        self.assertIn("cheapest", doc["reason"])
        self.assertEqual(self.select("prefer=gpu&policy=efficient")["device"]["id"], "gpu:1")

    def test_min_memory_excludes_the_small_gpu(self):
        doc = self.select(f"prefer=gpu&policy=cheapest&min_memory_bytes={32 * GIB}")
        self.assertEqual(doc["device"]["id"], "gpu:0")
        l4 = [c for c in doc["candidates"] if c["id"] == "gpu:1"][0]
        self.assertEqual(l4["excluded_by"], "min_memory_bytes")

    def test_env_names_the_gpu_by_uuid(self):
        doc = self.select("device=gpu:1")
        self.assertEqual(doc["env"]["CUDA_VISIBLE_DEVICES"], doc["device"]["uuid"])
        self.assertTrue(doc["device"]["uuid"].startswith("GPU-"))
        self.assertEqual(doc["env"]["JAX_PLATFORMS"], "cuda")
        self.assertEnvEvaluates("device=gpu:1")

    def test_prefer_tpu_falls_back_to_gpu(self):
        doc = self.select("prefer=tpu")
        self.assertTrue(doc["fell_back"])
        self.assertIn("no TPU detected; fell back to gpu:0", doc["reason"])

    def test_executable_falls_back_to_cpu(self):
        doc = self.select("prefer=gpu&executable=true")
        if all(c["eligible"] is False for c in doc["candidates"] if c["type"] == "gpu"):
            self.assertEqual(doc["device"]["id"], "cpu:0")
            self.assertTrue(doc["fell_back"])
            self.assertIn("excluded by executable", doc["reason"])
        else:  # the GPUs have a /run backend
            self.assertEqual(doc["device"]["type"], "gpu")


class TpuV6e8(SelectCase):
    """The tpu-v6e-8 fixture: eight v6e chips behind /dev/vfio, and the CPU."""

    server_env = tpu_env()

    def test_auto_picks_the_first_tpu(self):
        doc = self.select()
        self.assertEqual(doc["device"]["id"], "tpu:0")
        self.assertEqual(len([c for c in doc["candidates"] if c["type"] == "tpu"]), 8)
        env = doc["env"]
        self.assertEqual(env["JAX_PLATFORMS"], "tpu")
        self.assertEqual(env["TPU_VISIBLE_CHIPS"], str(doc["device"]["tpu"]["chip_index"]))
        self.assertEqual(env["TPU_CHIPS_PER_HOST_BOUNDS"], "1,1,1")
        self.assertEqual(env["TPU_HOST_BOUNDS"], "1,1,1")
        self.assertEnvEvaluates()

    def test_host_scope_lists_every_chip(self):
        env = self.select("tpu_scope=host")["env"]
        self.assertEqual(sorted(env["TPU_VISIBLE_CHIPS"].split(",")), [str(i) for i in range(8)])
        self.assertNotIn("TPU_HOST_BOUNDS", env)

    def test_tpus_not_allowed_or_not_executable(self):
        doc = self.select("allow_tpu=false")
        self.assertEqual(doc["device"]["id"], "cpu:0")
        self.assertEqual({c["excluded_by"] for c in doc["candidates"] if c["type"] == "tpu"}, {"allow_tpu"})
        doc = self.select("prefer=tpu&executable=true")
        self.assertEqual(doc["device"]["id"], "cpu:0")
        self.assertIn("no TPU meets the constraints", doc["reason"])

    def test_pinned_chip(self):
        doc = self.select("device=tpu:5")
        self.assertEqual(doc["device"]["id"], "tpu:5")
        self.assertEqual(doc["env"]["TPU_VISIBLE_CHIPS"], str(doc["device"]["tpu"]["chip_index"]))


class HostileDeviceId(unittest.TestCase):
    """An AMD GPU whose unique_id holds quotes and shell syntax: format=env must keep it one inert value."""

    HOSTILE = "x'$(touch PWNED)\"`id`'\\"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="acceld-hostile-")
        root = os.path.join(cls.tmp.name, "amd")
        shutil.copytree(os.path.join(FIXTURES, "amd-mi300x"), root, symlinks=True)
        ids = []
        for dirpath, _, files in os.walk(os.path.join(root, "sys", "devices")):
            if "unique_id" in files:
                ids.append(os.path.join(dirpath, "unique_id"))
        assert ids, "the amd-mi300x fixture has no unique_id file"
        for path in ids:
            with open(path, "w") as f:
                f.write(cls.HOSTILE + "\n")
        cls.workdir = os.path.join(cls.tmp.name, "work")
        os.mkdir(cls.workdir)
        cls.server = Server(env={"ACCELD_SYSFS_ROOT": os.path.join(root, "sys"),
                                 "ACCELD_DEV_ROOT": os.path.join(root, "dev")}).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.tmp.cleanup()
        cls.tmp.cleanup()

    def test_env_value_stays_quoted(self):
        r = self.server.get("/select?prefer=gpu")
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        want = doc["env"]["ROCR_VISIBLE_DEVICES"]
        self.assertEqual(want, "GPU-" + self.HOSTILE)
        r = self.server.get("/select?prefer=gpu&format=env")
        self.assertEqual(r.status, 200, r)
        for line in r.text.splitlines():
            self.assertRegex(line, EXPORT_LINE)
        p = subprocess.run(["sh", "-c", 'eval "$(cat)"; env'], input=r.body, capture_output=True,
                           cwd=self.workdir, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = dict(l.partition("=")[::2] for l in p.stdout.decode().splitlines())
        self.assertEqual(got["ROCR_VISIBLE_DEVICES"], want)
        self.assertEqual(got["JAX_PLATFORMS"], "rocm")
        self.assertEqual(os.listdir(self.workdir), [], "evaluating the export lines ran a command")


if __name__ == "__main__":
    unittest.main()
