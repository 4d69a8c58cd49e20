"""The HTTP contract (api/openapi.yaml) and the service must say the same thing, and the contract must pass a
maintained OpenAPI linter.

- The route table (`acceld routes`) and the operations: operations marked `x-acceld-planned: true` are in the
  contract but not served yet, so they must NOT be in the route table (the marker goes in the change that serves
  them). The bearer scheme is declared exactly on the routes that take the token (`auth`); the others are open.
- The reason table (`acceld reasons`, one `REASON STATUS Title` a line) and the Problem schema's x-reasons: every
  reason of each is in the other, with the same status and title.
- Redocly CLI (tests/contract, installed by `make test-deps` with npm ci) lints it with its recommended rules:
  no error and no warning. The contract is read as JSON through the same tool (`redocly bundle`)."""
import json
import os
import re
import subprocess
import unittest

from harness import FAKES, ROOT, Server, run_cli

import jsonschema  # Debian's python3-jsonschema (make test-deps)

REDOCLY = os.path.join(ROOT, "tests", "contract", "node_modules", ".bin", "redocly")
CONTRACT = os.path.join("api", "openapi.yaml")

METHODS = ("get", "put", "post", "delete", "patch")


def openapi_operations():
    """{(METHOD, path): planned} from the paths section, read line by line (the file keeps this layout)."""
    ops = {}
    path = method = None
    in_paths = False
    with open(os.path.join(ROOT, "api", "openapi.yaml")) as f:
        for line in f:
            if re.match(r"^\S", line):
                in_paths = line.startswith("paths:")
                continue
            if not in_paths:
                continue
            m = re.match(r"^  (/\S*):\s*$", line)
            if m:
                path, method = m.group(1), None
                continue
            m = re.match(r"^    (\w+):", line)
            if m:
                method = m.group(1) if m.group(1) in METHODS else None
                if method:
                    ops[(method.upper(), path)] = False
                continue
            if method and re.match(r"^      x-acceld-planned:\s*true\s*$", line):
                ops[(method.upper(), path)] = True
    return ops


class Contract(unittest.TestCase):
    def test_routes_match_openapi(self):
        r = run_cli("routes")
        self.assertEqual(r.returncode, 0, r.stderr)
        served = {tuple(l.split()[:2]) for l in r.stdout.splitlines() if l.strip()}
        ops = openapi_operations()
        self.assertTrue(ops, "no operations found in api/openapi.yaml")
        documented = {k for k, planned in ops.items() if not planned}
        planned = {k for k, p in ops.items() if p}
        self.assertEqual(sorted(served - documented), [], "served but not in api/openapi.yaml (or marked planned)")
        self.assertEqual(sorted(documented - served), [], "in api/openapi.yaml but not served (mark it planned?)")
        self.assertEqual(sorted(planned & served), [], "served but still marked x-acceld-planned")

    def test_every_design_endpoint_is_in_the_contract(self):
        ops = openapi_operations()
        for key in [("GET", "/livez"), ("GET", "/readyz"), ("GET", "/healthz"), ("GET", "/version"),
                    ("GET", "/devices"), ("GET", "/devices/{id}"), ("POST", "/devices/refresh"),
                    ("GET", "/select"), ("POST", "/select"), ("GET", "/batch-config"), ("GET", "/plan"),
                    ("POST", "/plan"), ("GET", "/cost"),
                    ("GET", "/cost/estimate"), ("GET", "/cost/prices"), ("PUT", "/cost/prices"),
                    ("GET", "/history"), ("POST", "/run"), ("GET", "/run"), ("GET", "/run/{id}"),
                    ("DELETE", "/run/{id}"), ("GET", "/metrics"), ("GET", "/")]:
            self.assertIn(key, ops)


def redocly(*args):
    """Runs Redocly CLI in the repository root, without telemetry or update checks (the tests stay offline)."""
    if not os.access(REDOCLY, os.X_OK):
        raise AssertionError(f"{REDOCLY} is missing: run `make test-deps` (npm ci in tests/contract)")
    env = dict(os.environ, REDOCLY_TELEMETRY="off", REDOCLY_SUPPRESS_UPDATE_NOTICE="true", NO_COLOR="1")
    return subprocess.run([REDOCLY] + list(args), cwd=ROOT, capture_output=True, text=True, env=env, timeout=180)


class Lint(unittest.TestCase):
    def test_contract_passes_the_recommended_rules(self):
        r = redocly("lint", "--config", os.path.join("tests", "contract", "redocly.yaml"), "--format=json", CONTRACT)
        try:
            report = json.loads(r.stdout)
        except ValueError:
            self.fail(f"redocly lint gave no JSON report (exit {r.returncode}): {r.stdout[-2000:]}{r.stderr[-2000:]}")
        found = [f"{p.get('severity')} {p.get('ruleId')}: {p.get('message')} at "
                 f"{', '.join(l.get('pointer', '?') for l in p.get('location', []))}" for p in report["problems"]]
        self.assertEqual(report["totals"]["errors"], 0, "\n".join(found))
        self.assertEqual(report["totals"]["warnings"], 0, "\n".join(found))
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])


class ServiceAgrees(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = redocly("bundle", CONTRACT, "--ext", "json")
        if r.returncode != 0:
            raise AssertionError(f"redocly bundle failed: {r.stderr[-2000:]}")
        cls.doc = json.loads(r.stdout)

    def test_reasons_match_the_service_table(self):
        r = run_cli("reasons")
        self.assertEqual(r.returncode, 0, r.stderr)
        table = {}
        for line in r.stdout.splitlines():
            name, status, title = line.split(" ", 2)
            self.assertNotIn(name, table, f"{name} is listed twice by acceld reasons")
            table[name] = (int(status), title)
        self.assertIn("INVALID_PARAMETER", table)
        documented = self.doc["components"]["schemas"]["Problem"]["properties"]["reason"]["x-reasons"]
        documented = {name: (v["status"], v["title"]) for name, v in documented.items()}
        for name in documented:
            self.assertRegex(name, r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")
        self.assertEqual(sorted(set(table) - set(documented)), [],
                         "answered by the service but not in api/openapi.yaml's x-reasons")
        self.assertEqual(sorted(set(documented) - set(table)), [],
                         "in api/openapi.yaml's x-reasons but not in the service's reason table")
        for name, (status, title) in table.items():
            self.assertEqual(documented[name], (status, title), f"{name}: status and title differ")

    def test_security_is_declared_per_operation(self):
        r = run_cli("routes")
        self.assertEqual(r.returncode, 0, r.stderr)
        auth = {tuple(l.split()[:2]): l.split()[2:] == ["auth"] for l in r.stdout.splitlines() if l.strip()}
        self.assertIn("bearer", self.doc["components"]["securitySchemes"])
        for path, item in self.doc["paths"].items():
            for method, op in item.items():
                if method not in METHODS:
                    continue
                key = (method.upper(), path)
                with self.subTest(operation=key):
                    self.assertIn("security", op, "declare security: [] for an open operation")
                    if auth.get(key, False):
                        self.assertEqual(op["security"], [{"bearer": []}])
                    else:
                        self.assertEqual(op["security"], [])
                    self.assertTrue(any(code.startswith("4") for code in op["responses"]), "no 4xx response")

    def validator(self, name):
        """A validator of components.schemas.<name>, its $refs resolved within the bundled contract."""
        schema = {"$ref": f"#/components/schemas/{name}", "components": self.doc["components"]}
        return jsonschema.Draft202012Validator(schema)

    def test_plan_answers_match_the_schema(self):
        """GET /plan's answers, fitting or not, on eight H100s with NVLink and on named shapes, are what the Plan
        schema says."""
        v = self.validator("Plan")
        env = {"ACCELD_NVML_LIBRARY": os.path.join(FAKES, "libnvml.so"), "FAKE_NVML_HGX": "8",
               "FAKE_NVML_NVLINK": "all", "JOB_COMPLETION_INDEX": "1", "HOSTNAME": "train-1", "JOBSET_NAME": "j"}
        queries = ("model=llama-2-70b&seq_len=4096", "model=llama-2-70b&mode=train",
                   "model=llama-2-70b&mode=train&hosts=2", "model=mixtral-8x7b&mode=train&optimizer=adafactor",
                   "params=7B&devices=tpu:v5p-128", "model=llama-3.1-405b&devices=L4x4", "params=1T&devices=cpu:0")
        with Server(env=env) as s:
            for q in queries:
                with self.subTest(query=q):
                    r = s.get("/plan?" + q)
                    self.assertEqual(r.status, 200, r)
                    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in v.iter_errors(r.json())]
                    self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main()
