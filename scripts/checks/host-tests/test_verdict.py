"""Host-side tests of scripts/lib/verdict.sh: the verdict every judged guest run
gets, on fixture logs.

fixtures/verdict-run/ is a small run directory as run-qemu.sh leaves it (the
nonce, what the guest was given, QEMU's status, the results port, the
console log and one runner TAP file) of a run that passes. Each test copies
it, breaks one thing the way a real failure does, and checks that
verdict.sh fails and says why; and that the unbroken run passes.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
VERDICT = os.path.join(HERE, "..", "..", "lib", "verdict.sh")
FIXTURE = os.path.join(HERE, "fixtures", "verdict-run")
NONCE = "0123456789abcdef"


class VerdictTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="verdict-test.")
        self.run_dir = os.path.join(self.tmp, "run")
        shutil.copytree(FIXTURE, self.run_dir)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def path(self, name):
        return os.path.join(self.run_dir, name)

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)

    def replace(self, name, old, new):
        text = self.read(name)
        self.assertIn(old, text, "fixture %s lacks %r" % (name, old))
        self.write(name, text.replace(old, new))

    def verdict(self, plans="2"):
        """Run verdict.sh on the run directory: (status, stdout + stderr)."""
        p = subprocess.run(["bash", VERDICT, self.run_dir, "ext4", plans],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, check=False)
        return p.returncode, p.stdout

    def assert_fails(self, reason, plans="2"):
        status, out = self.verdict(plans)
        self.assertNotEqual(status, 0, "verdict passed:\n" + out)
        self.assertIn(reason, out)
        return out

    def test_good_run_passes(self):
        status, out = self.verdict()
        self.assertEqual(status, 0, out)
        self.assertIn("3 passed, 0 failed, 1 skipped", out)

    def test_runner_lines_are_not_splats(self):
        # the good fixture's console holds "WARNING:" in a runner line
        self.assertIn("uncached-test:", self.read("console.log"))
        self.assertEqual(self.verdict()[0], 0)

    def test_no_done_signal(self):
        self.replace("channel.log", "uncached-done nonce=%s\n" % NONCE, "")
        self.assert_fails("never sent 'uncached-done'")

    def test_done_signal_of_another_run(self):
        self.replace("channel.log", "uncached-done nonce=%s" % NONCE,
                     "uncached-done nonce=fedcba9876543210")
        self.assert_fails("never sent 'uncached-done'")

    def test_panic_is_named(self):
        self.replace("channel.log", "uncached-done nonce=%s\n" % NONCE, "")
        with open(self.path("console.log"), "a") as f:
            f.write("[   10.000000] Kernel panic - not syncing: Fatal exception\n")
        self.assert_fails("the kernel panicked")

    def test_timeout(self):
        self.write("qemu.status", "124\n")
        self.assert_fails("timeout: QEMU was killed")

    def test_fewer_cpus_than_given(self):
        self.replace("channel.log", "online=2", "online=1")
        self.assert_fails("the guest had 1 online CPU(s), 2 given")

    def test_less_memory_than_given(self):
        self.replace("channel.log", "total_kib=260576", "total_kib=131072")
        self.assert_fails("MemTotal 128 MiB")

    def test_resources_never_reported(self):
        self.replace("channel.log",
                     "uncached-cpus online=2 expected=2 nonce=%s\n" % NONCE,
                     "")
        self.assert_fails("never reported its online CPUs")

    def test_failed_case(self):
        self.replace("ext4.tap",
                     "    ok 1 the folios the read instantiated are gone\n",
                     "    not ok 1 the folios the read instantiated are gone\n"
                     "    # 3 folios left in the page cache\n")
        self.replace("ext4.tap", "ok 2 uncached_read", "not ok 2 uncached_read")
        out = self.assert_fails("1 test(s) failed")
        self.assertIn("uncached_read: # 3 folios left in the page cache", out)
        self.assertIn("1 failed", out)

    def test_short_plan(self):
        self.assert_fails("TAP plan is 1..2, expected 1..3", plans="3")

    def test_incomplete_tap(self):
        tap = self.read("ext4.tap")
        self.write("ext4.tap", tap[:tap.index("    TAP version 13\n    1..2\n"
                                              "    ok 1 the folios")])
        self.assert_fails("incomplete TAP: 1 of 2 results")

    def test_missing_tap(self):
        os.unlink(self.path("ext4.tap"))
        self.assert_fails("ext4: no TAP results")

    def test_kernel_splat(self):
        for splat in ("WARNING: CPU: 1 PID: 77 at mm/filemap.c:1 x+0x1/0x2",
                      "BUG: KASAN: use-after-free in folio_put+0x1/0x2",
                      "BUG: Bad page state in process kworker/0:1",
                      "WARNING: inconsistent lock state"):
            with self.subTest(splat=splat):
                shutil.copy(os.path.join(FIXTURE, "console.log"),
                            self.path("console.log"))
                with open(self.path("console.log"), "a") as f:
                    f.write("[    5.000000] %s\n" % splat)
                self.assert_fails("kernel splat in the console log")

    def test_no_case_passed(self):
        self.replace("ext4.tap",
                     "    ok 1 preadv2 RWF_UNCACHED on ext4 succeeds\n"
                     "    ok 2 pwritev2 RWF_UNCACHED on ext4 succeeds\n",
                     "    ok 1 # SKIP no ext4\n    ok 2 # SKIP no ext4\n")
        self.replace("ext4.tap",
                     "    ok 1 the folios the read instantiated are gone\n",
                     "    ok 1 # SKIP no ext4\n")
        self.assert_fails("no test case passed")

    def test_per_target_plans(self):
        self.assertEqual(self.verdict("ext4=2")[0], 0)
        self.assert_fails("no plan for ext4", plans="xfs=2")


if __name__ == "__main__":
    unittest.main()
