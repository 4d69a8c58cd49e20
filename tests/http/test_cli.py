"""Black-box tests of the command line. Its exit codes, the same for every command: 0 done (--help included), 1 the
command failed or found what it reports, 2 bad usage or a bad configuration (flag, environment or config file),
with a message on stderr that names the command and what is wrong. Its voice: every command answers --help and
`help COMMAND` on a screen (serve's lists every setting, as `help settings` does), whatever the environment holds;
stdout holds the answer and never a log line, which goes to stderr at warn unless asked; batch and report speak to a
person first and to scripts with --json; sizes take the units a person types; errors name flags and commands, not
endpoints; run's n is the kernel's own n, as POST /run takes it."""
import json
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
    "plan": ("--params", "100M", "--layers", "12", "--hidden", "768", "--heads", "12"),
    "run": ("saxpy", "--n", "64", "--db", ":memory:"),
}

# every command
COMMANDS = ("serve", "report", "select", "batch", "plan", "run", "check", "version", "routes", "reasons", "help")

# thresholds no CPU can miss, so a quick check passes wherever the tests run
PASSING_CHECK = ("--level", "quick", "--check-warn-percent", "0", "--check-fail-percent", "0")

# every command a person runs, as a person would, with what makes it quick here
HUMAN = {
    "report": ("report",),
    "report --verbose": ("report", "--verbose"),
    "select": ("select",),
    "select --format env": ("select", "--format", "env"),
    "batch": ("batch", "--params", "1000", "--sample-bytes", "1KB"),
    "plan": ("plan", "--params", "100M", "--layers", "12", "--hidden", "768", "--heads", "12"),
    "run --verify": ("run", "saxpy", "--n", "4096", "--verify", "--db", ":memory:"),
    "run sgemm --verify": ("run", "sgemm", "--m", "16", "--n", "8", "--k", "4", "--verify", "--db", ":memory:"),
    "check": ("check",) + PASSING_CHECK,
    "version": ("version",),
    "routes": ("routes",),
    "reasons": ("reasons",),
}

# the quiet environment without its log level: what a person's shell holds
LOUD = {k: v for k, v in QUIET.items() if k != "ACCELD_LOG_LEVEL"}

ENDPOINTS = ("GET /", "POST /", "PUT /", "DELETE /")


def log_lines(text):
    """The lines of text that are acceld's JSON log lines (an object with time, level and msg)."""
    out = []
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and {"time", "level", "msg"} <= set(doc):
            out.append(doc)
    return out


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
                # a prices file the command cannot read: serve would report ready and answer 503 on /cost; the
                # other commands would rank without its prices: each refuses, naming the file and its fault
                with self.subTest(name, source="missing prices file"):
                    self.assertExit(cli(name, *args, "--prices-file", os.path.join(d, "nope.json")), 2,
                                    "acceld %s:" % name, "nope.json", "No such file")
                with self.subTest(name, source="malformed prices file"):
                    broken = os.path.join(d, "broken.json")
                    with open(broken, "w") as f:
                        f.write('{"currency": "USD", "prices": [\n')
                    self.assertExit(cli(name, *args, env={"ACCELD_PRICES_FILE": broken}), 2,
                                    "acceld %s:" % name, "broken.json", "line 2")

    def test_help_is_0(self):
        for name in COMMANDS:
            with self.subTest(name):
                r = cli(name, "--help")
                self.assertExit(r, 0)
                self.assertEqual(r.stderr, "")
                self.assertTrue(r.stdout.startswith("usage: acceld "), r.stdout[:200])
                lines = r.stdout.count("\n")
                # every help fits 100 columns
                self.assertEqual([l for l in r.stdout.splitlines() if len(l) > 100], [], name)
                if name == "serve":
                    # serve's settings in groups, the rest a pointer away
                    self.assertIn("ACCELD_LISTEN", r.stdout)
                    self.assertIn("\nWhat it keeps:\n", r.stdout)
                    self.assertIn("acceld help settings, or docs/configuration.md", r.stdout)
                    self.assertLessEqual(lines, 80, r.stdout)
                else:
                    self.assertLessEqual(lines, 40, r.stdout)  # a screen
                    self.assertNotIn("ACCELD_LISTEN", r.stdout)
                # help COMMAND is the same text
                h = cli("help", name)
                self.assertExit(h, 0)
                self.assertEqual(h.stdout, r.stdout)
                # and so is -h anywhere, even before arguments a command would refuse
                self.assertExit(cli(name, "--no-such-option", "-h"), 0)
        for args in (("--help",), ("-h",), ("help",), ("help", "help"), ("help", "--help")):
            r = cli(*args)
            self.assertExit(r, 0)
            self.assertIn("Exit status: 0", r.stdout)
            self.assertIn("acceld help settings", r.stdout)
            self.assertLessEqual(r.stdout.count("\n"), 40, r.stdout)
        r = cli("help", "settings")
        self.assertExit(r, 0)
        for text in ("ACCELD_LISTEN", "COMPUTE_PREFER", "ACCELD_CHECK_CLOCK_PERCENT", "Sizes take KiB"):
            self.assertIn(text, r.stdout)
        self.assertEqual([l for l in r.stdout.splitlines() if len(l) > 100], [])
        self.assertExit(cli("help", "frobnicate"), 2, "acceld help:", "frobnicate")
        self.assertExit(cli("help", "run", "sgemm"), 2, "acceld help:")

    def test_help_before_the_environment(self):
        """A bad value in the environment or a config file is the command's to refuse, not its help's."""
        bad = {"ACCELD_CLOUD": "ibm", "COMPUTE_PREFER": "fpga", "ACCELD_CONFIG": "/nonexistent/acceld.conf"}
        for name in COMMANDS:
            with self.subTest(name):
                for args in ((name, "--help"), ("help", name)):
                    r = cli(*args, env=bad)
                    self.assertExit(r, 0)
                    self.assertTrue(r.stdout.startswith("usage: acceld "), r.stdout[:200])
        self.assertExit(cli("report", env={"ACCELD_CLOUD": "ibm"}), 2, "ACCELD_CLOUD")

    def test_run_help_without_a_kernel(self):
        r = cli("run", "--help")
        self.assertExit(r, 0)
        for text in ("saxpy, triad, dot   --n N", "sgemm               --m M --n N --k K", "--square N",
                     "ACCELD_EXEC_MAX_ELEMENTS", "acceld help settings"):
            self.assertIn(text, r.stdout)

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


class Output(unittest.TestCase):
    """stdout holds the answer; the log is JSON lines on stderr, at warn unless the command line asks."""

    def test_no_log_line_on_stdout(self):
        for name, args in HUMAN.items():
            with self.subTest(name):
                r = run_cli(*args, env=LOUD, timeout=300)
                self.assertEqual(r.returncode, 0, (args, r.stderr))
                self.assertEqual(log_lines(r.stdout), [], name)
                # the service's info lines (jobs finished, checks started) are not a person's to read
                self.assertEqual([l for l in log_lines(r.stderr) if l["level"] in ("debug", "info")], [], name)
                # a person's output names commands and flags, not endpoints
                for endpoint in ENDPOINTS:
                    self.assertNotIn(endpoint, r.stderr, name)
                    if name not in ("routes", "reasons", "report --verbose"):
                        self.assertNotIn(endpoint, r.stdout, name)

    def test_every_command_with_a_document_takes_json(self):
        # what the API answers, every command prints with --json (select's default --format json included)
        for name, args in (("report", ()), ("select", ()), ("batch", ("--params", "1000")),
                           ("plan", CONFIGURED["plan"]), ("run", ("saxpy", "--n", "64", "--db", ":memory:")),
                           ("check",) + (PASSING_CHECK,)):
            with self.subTest(name):
                r = run_cli(name, *args, "--json", env=QUIET, timeout=300)
                self.assertEqual(r.returncode, 0, (name, r.stderr))
                self.assertIsInstance(json.loads(r.stdout), (dict, list), name)
        r = run_cli("select", "--json", "--format", "env", env=QUIET)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--format env", r.stderr)

    def test_asked_for_the_log(self):
        for args in (("run", "saxpy", "--n", "64", "--db", ":memory:", "-v"),
                     ("run", "saxpy", "--n", "64", "--db", ":memory:", "--log-level", "debug"),
                     ("check", "-v") + PASSING_CHECK):
            with self.subTest(args=args):
                r = run_cli(*args, env=LOUD, timeout=300)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(log_lines(r.stdout), [])
                self.assertTrue(any(l["level"] == "info" for l in log_lines(r.stderr)), r.stderr)
        # the service's ACCELD_LOG_LEVEL is not a command line asking
        r = run_cli("run", "saxpy", "--n", "64", "--db", ":memory:", env=dict(LOUD, ACCELD_LOG_LEVEL="debug"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(log_lines(r.stderr), [])

    def test_batch(self):
        args = ("batch", "--device", "cpu:0", "--base", "3", "--params", "1000", "--sample-bytes", "1KB")
        r = run_cli(*args, env=LOUD)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        # the answer first, for a person, then the steps
        self.assertRegex(lines[0], r"^batch size 4 on cpu:0 \(.+\), for inference$")
        self.assertRegex(lines[1], r"^at most \d+ fit in memory \(model state 2KB, 1KB a sample\)$")
        self.assertIn("steps:", lines)
        self.assertIn("\n  factor  base 3 x cpu factor 1 = 3\n  round   3 rounded to", r.stdout)
        self.assertLess(len(lines), 15)
        self.assertNotIn("{", r.stdout)
        r = run_cli(*args, "--json", env=LOUD)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["batch_size"], 4)
        self.assertEqual(doc["model"]["sample_bytes"], 1000)
        self.assertEqual(doc["device"]["id"], "cpu:0")

    def test_report(self):
        r = run_cli("report", env=LOUD)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("acceld report - "), r.stdout[:200])
        self.assertIn("Recommended device: cpu:0", r.stdout)
        self.assertNotIn("Settings in effect", r.stdout)
        self.assertNotIn("ACCELD_IDLE_TIMEOUT", r.stdout)
        self.assertLess(r.stdout.count("\n"), 40)
        r = run_cli("report", "--json", env=LOUD)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([d["id"] for d in json.loads(r.stdout)["devices"]], ["cpu:0"])
        # the settings in effect under --verbose, in the units a config file takes
        r = run_cli("report", "--verbose", "--shutdown-grace", "2m", env=LOUD)
        self.assertEqual(r.returncode, 0, r.stderr)
        for line in ("  ACCELD_SHUTDOWN_GRACE          2m", "  ACCELD_IDLE_TIMEOUT            30s",
                     "  ACCELD_RETENTION_RAW           24h", "  ACCELD_MAX_BODY                1MiB"):
            self.assertIn("\n" + line + "\n", r.stdout)
        self.assertNotIn("86400000", r.stdout)


class Sizes(unittest.TestCase):
    """Sizes take KiB..TiB (1024s) and KB..TB (1000s), in any case, the B optional; ranges read in units."""

    def test_units(self):
        r = cli("report", "--json", "--max-body", "2mb", "--conn-memory", "64Ki")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = cli("report", "--json", "--max-body", "1k")  # 1000 bytes, below the least (1KiB)
        self.assertEqual(r.returncode, 2)
        self.assertIn("'1k' given; expected a size from 1KiB to 256MiB", r.stderr)
        self.assertIn("KiB, MiB, GiB, TiB count in 1024s; KB, MB, GB, TB in 1000s", r.stderr)
        r = cli("report", "--json", "--idle-timeout", "2h")
        self.assertEqual(r.returncode, 2)
        self.assertIn("expected a duration from 1s to 1h", r.stderr)
        r = cli("batch", "--device", "cpu:0", "--model-bytes", "1GB", "--sample-bytes", "1MiB", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        model = json.loads(r.stdout)["model"]
        self.assertEqual((model["model_bytes"], model["sample_bytes"]), (1000000000, 1048576))
        r = cli("select", "--min-memory-bytes", "1tb", "--device", "cpu:0")
        self.assertEqual(r.returncode, 1)  # no CPU here has a terabyte
        r = cli("select", "--min-memory-bytes", "1KiB", "--device", "cpu:0")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = cli("select", "--min-memory-bytes", "lots")
        self.assertEqual(r.returncode, 2)
        self.assertIn("invalid --min-memory-bytes 'lots'; accepted: a size such as 16GiB", r.stderr)


class Words(unittest.TestCase):
    """Errors name the command line's flags and commands, not the API's fields and endpoints."""

    def test_errors(self):
        cases = [
            (("run", "saxpy", "--n", "4", "--device", "gpu:9", "--db", ":memory:"), 1, "acceld report"),
            (("run", "sgemm", "--square", "2048", "--timeout-ms", "1", "--db", ":memory:"), 1, "--timeout-ms"),
            (("batch", "--device", "tpu:9"), 1, "acceld report"),
            (("batch", "--params", "1", "--model-bytes", "1"), 2, "--model-bytes or --params"),
            (("select", "--device", "gpu:7"), 1, "gpu:7"),
            (("check", "--device", "gpu:9"), 2, "acceld report"),
        ]
        for args, code, text in cases:
            with self.subTest(args=args):
                r = cli(*args)
                self.assertEqual(r.returncode, code, r.stderr)
                self.assertIn(text, r.stderr)
                for endpoint in ENDPOINTS:
                    self.assertNotIn(endpoint, r.stderr)
                for field in ("min_memory_bytes", "model_bytes", "sample_bytes", "timeout_ms"):
                    self.assertNotIn(field, r.stderr)


class RunSizes(unittest.TestCase):
    """n is the kernel's own n, as POST /run takes it; sgemm also needs m and k (or --square for a cube)."""

    def run_json(self, *args):
        r = cli("run", *args, "--json", "--db", ":memory:")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["sizes"]

    def test_sizes(self):
        r = cli("run", "sgemm", "--n", "64", "--db", ":memory:")
        self.assertEqual(r.returncode, 2)
        self.assertIn("give --m, --n and --k (--m, --k missing), or --square N", r.stderr)
        self.assertEqual(self.run_json("sgemm", "--m", "3", "--n", "8", "--k", "5"), {"m": 3, "n": 8, "k": 5})
        self.assertEqual(self.run_json("sgemm", "--square", "8"), {"m": 8, "n": 8, "k": 8})
        self.assertEqual(self.run_json("softmax", "--m", "2", "--n", "16")["n"], 16)
        self.assertEqual(self.run_json("saxpy", "--n", "1000")["n"], 1000)
        r = cli("run", "saxpy", "--square", "4", "--db", ":memory:")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--square does not apply to saxpy", r.stderr)


if __name__ == "__main__":
    unittest.main()
