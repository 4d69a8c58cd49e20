"""A kernel is one row of the kernel table (src/exec/kernel.c) and one function in each backend (src/exec/backend/):
nothing else in src/ names a kernel, as an identifier or a word of one (KERNEL_..., ..._budget_ms) or in a string
literal, so that adding a kernel touches the table, the backends, their tests and the docs only."""
import os
import re
import unittest

from harness import ROOT

SRC = os.path.join(ROOT, "src")
KERNELS = ("saxpy", "triad", "dot", "sgemm", "softmax")
# where kernels are named: the table and the backends
OWNERS = (os.path.join("exec", "kernel.c"), os.path.join("exec", "kernel.h"), os.path.join("exec", "backend") + os.sep)
# C tokens: string and character literals, comments (skipped), identifiers
TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*|[A-Za-z_][A-Za-z_0-9]*', re.S)
WORD = re.compile(r"[a-z0-9]+")


def named(token):
    """The kernel a token names: an identifier part between underscores, or a word of a string literal."""
    if token.startswith(("/*", "//")):
        return None
    words = token.lower().split("_") if token[0] not in "\"'" else WORD.findall(token.lower())
    for w in words:
        if w in KERNELS:
            return w
    return None


def offenders():
    found = []
    for root, _, files in os.walk(SRC):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, SRC)
            if rel in OWNERS or rel.startswith(OWNERS[2]):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in TOKEN.finditer(text):
                kernel = named(m.group(0))
                if kernel is not None:
                    line = text.count("\n", 0, m.start()) + 1
                    found.append(f"src/{rel}:{line}: {kernel} in {m.group(0)[:60]}")
    return found


class KernelTable(unittest.TestCase):
    def test_the_scanner_sees_names(self):
        # what it must catch and what it must let through
        self.assertEqual(named("KERNEL_SGEMM"), "sgemm")
        self.assertEqual(named("run_triad"), "triad")
        self.assertEqual(named('"dot"'), "dot")
        self.assertEqual(named('"acceld_device_check_sgemm_flops"'), "sgemm")
        self.assertIsNone(named("/* a saxpy */"))
        self.assertIsNone(named("dotted"))
        self.assertIsNone(named('"a dotted name"'))

    def test_no_kernel_named_outside_the_table_and_the_backends(self):
        found = offenders()
        self.assertEqual(found, [], "kernels named outside src/exec/kernel.* and src/exec/backend/:\n" +
                         "\n".join(found))


if __name__ == "__main__":
    unittest.main()
