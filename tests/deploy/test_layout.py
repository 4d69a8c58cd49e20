"""The source tree keeps the plan README.md's "Source layout" states: src/ grouped by subsystem, every folder named
there with exactly the folders it includes, no include against the direction, no circle between modules, no file
too big to read, and tests/unit mirroring src/ file by file.

A module is a .c with its own .h (app.c and app.h, store/journal.c and store/journal.h); a .c without one (main.c,
store/store_db.c) is a node of its own. An edge is an #include of another module's header, from the module's .c or
.h, whether it names the folder (#include "exec/backend.h") or not (#include "app.h"). Headers without a .c (types
and the parts' shared internals, such as store/store_int.h) belong to no module: including one adds no edge.
"""
import os
import re
import unittest

from harness import ROOT

SRC = os.path.join(ROOT, "src")
UNIT = os.path.join(ROOT, "tests", "unit")
MAX_LINES = 1600
MAX_TOP_C = 4
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# the entry point: what it does is starting the commands and the service, which the black-box tests drive
NO_UNIT_TEST = {"main.c"}


def sources():
    """(path relative to src/, text) of every .c and .h."""
    for root, _, files in os.walk(SRC):
        for name in sorted(files):
            if name.endswith((".c", ".h")):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, SRC), f.read()


def resolve(rel, target):
    """The file under src/ an #include "target" in src/rel reaches: beside it first, then from src/ (-Isrc)."""
    for candidate in (os.path.join(os.path.dirname(rel), target), target):
        candidate = os.path.normpath(candidate)
        if os.path.isfile(os.path.join(SRC, candidate)):
            return candidate
    return None


def place(rel):
    """The row of README's table a file belongs to: its folder, or the top-level file's name without extension."""
    folder = os.path.dirname(rel)
    return folder if folder else os.path.splitext(rel)[0]


def includes():
    """[(file, included file)] for every #include of a file under src/."""
    found = []
    for rel, text in sources():
        for target in INCLUDE.findall(text):
            hit = resolve(rel, target)
            if hit is not None:
                found.append((rel, hit))
    return found


def module_graph():
    """{node: {node it includes}}: modules (a .c with its .h) and lone .c files, by path without extension."""
    files = {rel for rel, _ in sources()}
    modules = {f[:-2] for f in files if f.endswith(".c") and f[:-2] + ".h" in files}

    def node(rel):
        stem = rel[:-2]
        if stem in modules:
            return stem
        return stem if rel.endswith(".c") else None

    graph = {node(f): set() for f in files if node(f)}
    for rel, hit in includes():
        a, b = node(rel), hit[:-2] if hit[:-2] in modules else None
        if a is not None and b is not None and a != b:
            graph[a].add(b)
    return graph


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def readme_table():
    """{row: {what it includes}} from README.md's "Source layout" table: `folder/` or `file.c` in the first column,
    the folders and files it includes in the third ("nothing of ours" for none)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    section = readme[readme.index("## Source layout"):]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        targets = {t.rstrip("/").removesuffix(".h").removesuffix(".c") for t in re.findall(r"`([^`]+)`", cells[2])}
        for name in names:
            table[name.rstrip("/").removesuffix(".c")] = targets
    return table


class Layout(unittest.TestCase):
    def test_the_readme_says_what_each_folder_includes(self):
        table = readme_table()
        actual = {}
        for rel, hit in includes():
            a, b = place(rel), place(hit)
            if a != b:
                actual.setdefault(a, set()).add(b)
        rows = {place(rel) for rel, _ in sources()}
        self.assertEqual(set(table), rows, "README.md's Source layout names every folder and top-level file")
        wrong = {row: f"README says {sorted(table[row])}, the code includes {sorted(actual.get(row, set()))}"
                 for row in rows if table[row] != actual.get(row, set())}
        self.assertEqual(wrong, {}, "README.md's Source layout says what each folder includes")

    def test_folders_include_downward_only(self):
        # the folder graph of README's table has no circle: every arrow points down
        self.assertEqual(cycles(readme_table()), [], "folders that include each other")

    def test_no_module_circle(self):
        self.assertEqual(cycles(module_graph()), [], "modules that include each other, directly or round a circle")

    def test_the_cycle_finder_finds_cycles(self):
        self.assertEqual(cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}), [["a", "b", "c"]])
        self.assertEqual(cycles({"a": {"b"}, "b": set()}), [])

    def test_no_warehouse_files(self):
        big = [f"src/{rel}: {text.count(chr(10))} lines" for rel, text in sources()
               if rel.endswith(".c") and text.count("\n") > MAX_LINES]
        self.assertEqual(big, [], f"no .c file over {MAX_LINES} lines")
        top = [n for n in os.listdir(SRC) if n.endswith(".c")]
        self.assertLessEqual(len(top), MAX_TOP_C, top)

    def test_unit_tests_mirror_the_folders(self):
        misplaced = []
        for root, _, files in os.walk(UNIT):
            folder = os.path.relpath(root, UNIT)
            for name in files:
                if name.startswith("test_") and name.endswith(".c") and folder != ".":
                    if not os.path.isdir(os.path.join(SRC, folder)):
                        misplaced.append(os.path.join(folder, name))
        self.assertEqual(misplaced, [], "tests/unit/<folder> names a folder src/ has")

    def test_every_source_file_has_its_unit_test(self):
        missing = []
        for rel, _ in sources():
            if rel.endswith(".c") and rel not in NO_UNIT_TEST:
                test = os.path.join(os.path.dirname(rel), "test_" + os.path.basename(rel))
                if not os.path.isfile(os.path.join(UNIT, test)):
                    missing.append(f"src/{rel}: no tests/unit/{test}")
        self.assertEqual(missing, [], "tests/unit mirrors src/ file by file")


if __name__ == "__main__":
    unittest.main()
