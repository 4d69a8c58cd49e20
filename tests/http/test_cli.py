"""Black-box tests of the command line's exit codes, the same for every command: 0 done (--help included), 1 the
command failed or found what it reports, 2 bad usage or a bad configuration (flag, environment or config file),
with a message on stderr that names the command and what is wrong."""
import os
import tempfile
import unittest

from harness import ROOT, run_cli

QUIET = {"ACCELD_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1", "ACCELD_LOG_LEVEL": "error",
         "ACCELD_POCL_CACHE_DIR": os.path.join(ROOT, os.environ.get("ACCELD_BUILD", "build"), "pocl-cache")}

# every command that reads the settings, with arguments that make it succeed
CONFIGURED = {
    "serve": (),
    "report": ("--json",),
    "select": (),
    "batch": (),
    "run": ("saxpy", "--n", "64", "--db", ":memory:"),
}


def cli(*args, env=None):
    return run_cli(*args, env=dict(QUIET, **(env or {})))


class ExitCodes(unittest.TestCase):
    def assertExit(self, r, code, *in_stderr):
        self.assertEqual(r.returncode, code, (r.args, r.stderr))
        for text in in_stderr:
            self.assertIn(text, r.stderr, r.args)

    def test_bad_usage_is_2(self):
        for name, args in CONFIGURED.items():
            with self.subTest(name):
                r = cli(name, *args, "--no-such-option")
                self.assertExit(r, 2, "acceld %s:" % name, "no-such-option")
                self.assertEqual(r.stdout, "")
        self.assertExit(cli("report", "--nfd"), 2, "--nfd")
        self.assertExit(cli("select", "--policy"), 2, "acceld select:", "--policy")
        self.assertExit(cli("batch", "--base", "0"), 2, "acceld batch:", "base")
        self.assertExit(cli("run"), 2, "acceld run:")
        self.assertExit(cli("run", "nokernel", "--n", "4"), 2, "nokernel")
        self.assertExit(cli("version", "--json"), 2, "acceld version:")
        self.assertExit(cli("routes", "x"), 2, "acceld routes:")
        self.assertExit(cli("frobnicate"), 2, "unknown command")
        self.assertExit(run_cli(), 2)

    def test_bad_configuration_is_2(self):
        with tempfile.TemporaryDirectory() as d:
            bad_file = os.path.join(d, "acceld.conf")
            with open(bad_file, "w") as f:
                f.write("ACCELD_MAX_BODY=lots\n")
            for name, args in CONFIGURED.items():
                with self.subTest(name, source="environment"):
                    self.assertExit(cli(name, *args, env={"COMPUTE_PREFER": "fpga"}), 2,
                                    "acceld %s:" % name, "COMPUTE_PREFER", "auto|cpu|gpu|tpu", "'fpga'")
                with self.subTest(name, source="flag"):
                    self.assertExit(cli(name, *args, "--idle-timeout", "soon"), 2, "--idle-timeout", "'soon'")
                with self.subTest(name, source="config file"):
                    self.assertExit(cli(name, *args, "--config", bad_file), 2, "ACCELD_MAX_BODY", "'lots'")
                with self.subTest(name, source="missing config file"):
                    self.assertExit(cli(name, *args, env={"ACCELD_CONFIG": os.path.join(d, "missing")}), 2,
                                    "acceld %s:" % name, "missing")

    def test_help_is_0(self):
        for name, args in CONFIGURED.items():
            with self.subTest(name):
                r = cli(name, *args, "--help")
                self.assertExit(r, 0)
                self.assertIn("ACCELD_LISTEN", r.stdout)  # the settings are listed
                self.assertEqual(r.stderr, "")
        for args in (("--help",), ("-h",), ("help",)):
            r = cli(*args)
            self.assertExit(r, 0)
            self.assertIn("Exit status: 0", r.stdout)

    def test_failure_or_finding_is_1(self):
        self.assertExit(cli("report", "--nfd", "/nonexistent-dir/labels"), 1, "acceld report:", "/nonexistent-dir")
        self.assertExit(cli("select", "--device", "gpu:7"), 1, "acceld select:", "gpu:7")
        self.assertExit(cli("batch", "--device", "tpu:9"), 1, "acceld batch:", "tpu:9")
        self.assertExit(cli("run", "triad", "--n", "1000000000", "--db", ":memory:"), 1, "JOB_TOO_LARGE")
        # serve cannot listen on an address that is not this host's
        self.assertExit(cli("serve", "--listen", "192.0.2.1:1", "--db", ":memory:"), 1)

    def test_success_is_0(self):
        for name, args in CONFIGURED.items():
            if name == "serve":
                continue  # runs until signalled; test_foundation covers its exit 0
            with self.subTest(name):
                self.assertExit(cli(name, *args), 0)
        self.assertExit(cli("version"), 0)
        self.assertExit(cli("routes"), 0)


if __name__ == "__main__":
    unittest.main()
