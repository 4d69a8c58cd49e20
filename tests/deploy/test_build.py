"""The build's own targets: `make install` honours PREFIX and DESTDIR, `make clean` removes the build folder, and
the binary carries what it needs (no run-time reads of the repository)."""
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("ACCELD_BUILD", "build")


def make(*args):
    return subprocess.run(["make", "--no-print-directory", f"BUILD={BUILD}", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


class Build(unittest.TestCase):
    def test_the_readme_names_every_fuzzer(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        part = readme[readme.index("Fuzzing: "):]
        part = part[:part.index("\n\n")]
        names = sorted(n[len("fuzz_"):-2] for n in os.listdir(os.path.join(ROOT, "tests", "fuzz"))
                       if n.startswith("fuzz_") and n.endswith(".c"))
        self.assertGreater(len(names), 5)
        self.assertEqual([n for n in names if f"`{n}`" not in part], [], "fuzzers README.md's Fuzzing leaves out")

    def test_install_honours_prefix_and_destdir(self):
        with tempfile.TemporaryDirectory() as dest:
            r = make("install", f"DESTDIR={dest}", "PREFIX=/opt/acceld")
            self.assertEqual(r.returncode, 0, r.stderr)
            binary = os.path.join(dest, "opt/acceld/bin/acceld")
            self.assertTrue(os.access(binary, os.X_OK))
            self.assertTrue(os.path.isfile(os.path.join(dest, "opt/acceld/share/acceld/openapi.yaml")))
            self.assertTrue(os.path.isfile(os.path.join(dest, "opt/acceld/share/acceld/static/index.html")))
            # the installed binary runs from anywhere: the accelerator table and the page are built in
            out = subprocess.run([binary, "report", "--json"], cwd=dest, capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn('"cpu:0"', out.stdout)
            r = make("uninstall", f"DESTDIR={dest}", "PREFIX=/opt/acceld")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertFalse(os.path.exists(binary))

    def test_clean_removes_the_build_folder(self):
        r = make("-n", "clean")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rm -rf build", r.stdout)

    def test_warnings_are_errors_and_c11(self):
        r = make("-n", "-B", f"{BUILD}/obj/core/err.o")
        self.assertIn("-std=c11", r.stdout)
        self.assertIn("-Werror", r.stdout)


if __name__ == "__main__":
    unittest.main()
