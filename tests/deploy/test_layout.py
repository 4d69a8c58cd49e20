"""The source tree keeps the plan README.md's "Source layout" states: src/ grouped by subsystem, every folder named
there, no file too big to read, tests/unit mirroring src/, and no #include against the stated direction."""
import os
import re
import unittest

from harness import ROOT

SRC = os.path.join(ROOT, "src")

# What each folder may include besides itself: the arrows of README.md's "Source layout". A folder includes only
# what lies below it; "." (main.c, app.c: the wiring) may include anything.
ALLOWED = {
    "core": set(),
    "detect": {"core"},
    "http": {"core"},
    "exec": {"core", "detect"},
    "exec/backend": {"core", "detect", "exec"},
    "store": {"core", "detect"},
    "select": {"core", "detect", "exec"},
    "plan": {"core", "detect", "select"},
    "cost": {"core", "detect", "exec", "store"},
    "check": {"core", "detect", "exec", "select", "store"},
    "metrics": {"core", "detect", "http", "exec", "store", "check", "cost"},
    "cli": {"core", "detect", "exec", "exec/backend", "store", "select", "plan", "cost", "check", "metrics"},
    "api": {"core", "detect", "http", "exec", "store", "select", "plan", "cost", "check", "metrics"},
}
MAX_LINES = 1600
MAX_TOP_C = 4
INCLUDE = re.compile(r'^#include "([a-z_/]+)/[a-z_0-9]+\.h"', re.M)


def sources():
    for root, _, files in os.walk(SRC):
        for name in files:
            if name.endswith((".c", ".h")):
                yield os.path.relpath(root, SRC), os.path.join(root, name)


class Layout(unittest.TestCase):
    def test_includes_follow_the_stated_direction(self):
        wrong = []
        for folder, path in sources():
            with open(path, encoding="utf-8") as f:
                for target in INCLUDE.findall(f.read()):
                    if folder != "." and target != folder and target not in ALLOWED.get(folder, set()):
                        wrong.append(f"{os.path.relpath(path, ROOT)} includes {target}/")
        self.assertEqual(wrong, [], "includes against README.md's Source layout")

    def test_every_folder_is_in_the_plan_and_the_readme(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        section = readme[readme.index("## Source layout"):]
        end = section.find("\n## ", 1)
        section = section if end < 0 else section[:end]
        folders = {folder for folder, _ in sources() if folder != "."}
        self.assertEqual(folders, set(ALLOWED), "a folder of src/ the direction test does not know")
        for folder in folders:
            self.assertIn(f"`{folder}/`", section, f"README's Source layout does not name src/{folder}/")

    def test_no_warehouse_files(self):
        big = []
        for _, path in sources():
            with open(path, encoding="utf-8") as f:
                n = sum(1 for _ in f)
            if path.endswith(".c") and n > MAX_LINES:
                big.append(f"{os.path.relpath(path, ROOT)}: {n} lines")
        self.assertEqual(big, [], f"no .c file over {MAX_LINES} lines")
        top = [n for n in os.listdir(SRC) if n.endswith(".c")]
        self.assertLessEqual(len(top), MAX_TOP_C, top)

    def test_unit_tests_mirror_the_folders(self):
        unit = os.path.join(ROOT, "tests", "unit")
        misplaced = []
        for root, _, files in os.walk(unit):
            folder = os.path.relpath(root, unit)
            for name in files:
                if name.startswith("test_") and name.endswith(".c") and folder != ".":
                    if not os.path.isdir(os.path.join(SRC, folder)):
                        misplaced.append(os.path.join(folder, name))
        self.assertEqual(misplaced, [], "tests/unit/<folder> names a folder src/ has")


if __name__ == "__main__":
    unittest.main()
