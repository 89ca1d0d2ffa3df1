"""Host-side tests of scripts/lib/make-help.awk, the parser behind 'make help':
targets and variables from a Makefile's "## NAME: text" lines, and the
Makefile itself documents every target it declares phony."""

import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..", "..")
AWK = os.path.join(TOP, "scripts", "lib", "make-help.awk")

SAMPLE = """\
## all: kernel and initramfs
all: kernel
## QEMU_MEM=SIZE: memory of a guest
## a comment line: not a help line because NAME has a space
# ## kernel: a commented-out help line is not one either
## kernel: build the kernel (TREE: colons in the text stay)
kernel:
"""

EXPECTED = """\
Targets:
  make all            kernel and initramfs
  make kernel         build the kernel (TREE: colons in the text stay)
Variables (make TARGET VAR=VALUE):
  QEMU_MEM=SIZE       memory of a guest
More in README.md.
"""


def make_help(makefile):
    return subprocess.run(["awk", "-f", AWK, makefile],
                          stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout


class MakeHelpTest(unittest.TestCase):
    def test_sample(self):
        with tempfile.NamedTemporaryFile("w", suffix=".mk") as f:
            f.write(SAMPLE)
            f.flush()
            self.assertEqual(make_help(f.name), EXPECTED)

    def test_every_phony_target_is_documented(self):
        makefile = os.path.join(TOP, "Makefile")
        with open(makefile) as f:
            text = f.read()
        phony = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", text, re.M).group(1)
        targets = phony.replace("\\\n", " ").split()
        shown = make_help(makefile)
        for target in targets:
            with self.subTest(target=target):
                self.assertRegex(shown, r"(?m)^  make %s " % re.escape(target))


if __name__ == "__main__":
    unittest.main()
