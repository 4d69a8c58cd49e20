"""The HTTP contract (api/openapi.yaml) and the route table (`acceld routes`) must say the same thing.

Operations marked `x-acceld-planned: true` are in the contract but not served yet: they must NOT be in the route
table, so the marker is removed in the same change that serves them."""
import os
import re
import unittest

from harness import ROOT, run_cli

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
                    ("GET", "/select"), ("POST", "/select"), ("GET", "/batch-config"), ("GET", "/cost"),
                    ("GET", "/cost/estimate"), ("GET", "/cost/prices"), ("PUT", "/cost/prices"),
                    ("GET", "/history"), ("POST", "/run"), ("GET", "/run"), ("GET", "/run/{id}"),
                    ("DELETE", "/run/{id}"), ("GET", "/metrics"), ("GET", "/")]:
            self.assertIn(key, ops)


if __name__ == "__main__":
    unittest.main()
