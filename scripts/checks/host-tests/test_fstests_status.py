"""Host-side tests of scripts/runs/fstests.sh's write_status: the status of
each test of a make fstests run, from fstests' check.log and the progress
lines the host wrote while the guest ran.

Each test sources fstests.sh (which then only defines its functions), picks
four tests of tests/fstests.list on btrfs, writes a progress file and
maybe a check.log into a temporary results directory, and reads back the
FS.status write_status makes.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FSTESTS = os.path.join(HERE, "..", "..", "runs", "fstests.sh")
TESTS = ["generic/013", "generic/075", "generic/112", "generic/499"]
PROGRESS = ("generic/075 ok 150\n"
            "generic/112 FAILED 30\n"
            "generic/499 notrun 40\n")


class WriteStatusTest(unittest.TestCase):
    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="fstests-status-test.")
        self.results = os.path.join(self.out, "btrfs", "share", "results")
        os.makedirs(self.results)
        self.write(os.path.join(self.out, "btrfs.progress"), PROGRESS)

    def tearDown(self):
        shutil.rmtree(self.out)

    @staticmethod
    def write(path, text):
        with open(path, "w") as f:
            f.write(text)

    def status(self):
        """write_status btrfs OUT: {test: (status, seconds)}."""
        script = ('set -euo pipefail; . "$1"; '
                  'run_options x "--fs --tests" --fs btrfs --tests "$2" '
                  'patched test; write_status btrfs "$3"')
        subprocess.run(["bash", "-c", script, "fstests-status-test", FSTESTS,
                        " ".join(TESTS), self.out], check=True)
        with open(os.path.join(self.out, "btrfs.status")) as f:
            rows = [line.split() for line in f]
        return {row[0]: (row[1], row[2]) for row in rows}

    def test_check_log_decides(self):
        self.write(os.path.join(self.results, "check.log"),
                   "Ran: generic/013 generic/075 generic/112 generic/499\n"
                   "Not run: generic/499\n"
                   "Failures: generic/013\n")
        self.assertEqual(self.status(), {
            "generic/013": ("failed", "-"),
            "generic/075": ("passed", "150"),
            "generic/112": ("passed", "30"),
            "generic/499": ("notrun", "40"),
        })

    def test_stopped_guest_keeps_progress(self):
        """No check.log: finished tests keep their progress status."""
        self.assertEqual(self.status(), {
            "generic/013": ("missing", "-"),
            "generic/075": ("passed", "150"),
            "generic/112": ("failed", "30"),
            "generic/499": ("notrun", "40"),
        })

    def test_nothing_finished(self):
        self.write(os.path.join(self.out, "btrfs.progress"), "")
        self.assertEqual({s for s, _ in self.status().values()}, {"missing"})


if __name__ == "__main__":
    unittest.main()
