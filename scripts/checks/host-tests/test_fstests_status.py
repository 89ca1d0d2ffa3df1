"""Host-side tests of scripts/runs/fstests.sh's statuses: the status of
each test of a make fstests run, from fstests' check.log and the progress
lines the host wrote while the guest ran.

Each test sources fstests.sh (which then only defines its functions), picks
four tests of tests/fstests.list on btrfs, feeds check's output for three
of them through fstests_progress (the progress lines), maybe writes a
check.log, and reads back the FS.status write_status makes.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FSTESTS = os.path.join(HERE, "..", "..", "runs", "fstests.sh")
TESTS = ["generic/013", "generic/075", "generic/112", "generic/499"]
# check's output as the guest's results port carries it
CHECK_OUTPUT = ("generic/075 148s ...  150s\n"
                "generic/112 - output mismatch (see generic/112.out.bad)\n"
                "    --- tests/generic/112.out\n"
                "generic/499 [not run] xfs_io fcollapse failed\n")


class WriteStatusTest(unittest.TestCase):
    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="fstests-status-test.")
        self.results = os.path.join(self.out, "btrfs", "share", "results")
        os.makedirs(self.results)
        self.write(os.path.join(self.out, "btrfs.tests"),
                   "".join(t + "\n" for t in TESTS))
        self.progress(CHECK_OUTPUT)

    def tearDown(self):
        shutil.rmtree(self.out)

    @staticmethod
    def write(path, text):
        with open(path, "w") as f:
            f.write(text)

    def progress(self, check_output):
        """fstests_progress on CHECK_OUTPUT: OUT/btrfs.progress."""
        script = ('set -euo pipefail; . "$1"; '
                  'fstests_progress btrfs 4 0 "$2" >/dev/null')
        subprocess.run(["bash", "-c", script, "fstests-status-test", FSTESTS,
                        self.out], input=check_output,
                       universal_newlines=True, check=True)

    def status(self):
        """write_status btrfs OUT: {test: status}; checks that generic/075
        has check's own time (the others' are the host's, since the previous
        line)."""
        script = ('set -euo pipefail; . "$1"; '
                  'run_options x "--fs --tests" --fs btrfs --tests "$2" '
                  'patched test; write_status btrfs "$3"')
        subprocess.run(["bash", "-c", script, "fstests-status-test", FSTESTS,
                        " ".join(TESTS), self.out], check=True)
        with open(os.path.join(self.out, "btrfs.status")) as f:
            rows = [line.split() for line in f]
        times = {row[0]: row[2] for row in rows}
        if times["generic/075"] != "-":
            self.assertEqual(times["generic/075"], "150")
        return {row[0]: row[1] for row in rows}

    def test_check_log_decides(self):
        self.write(os.path.join(self.results, "check.log"),
                   "Ran: generic/013 generic/075 generic/112 generic/499\n"
                   "Not run: generic/499\n"
                   "Failures: generic/013\n")
        self.assertEqual(self.status(), {
            "generic/013": "failed",
            "generic/075": "passed",
            "generic/112": "passed",
            "generic/499": "notrun",
        })

    def test_stopped_guest_keeps_progress(self):
        """No check.log: finished tests keep their progress status."""
        self.assertEqual(self.status(), {
            "generic/013": "missing",
            "generic/075": "passed",
            "generic/112": "failed",
            "generic/499": "notrun",
        })

    def test_nothing_finished(self):
        # run_fs leaves an empty progress file when no test finished
        self.write(os.path.join(self.out, "btrfs.progress"), "")
        self.assertEqual(set(self.status().values()), {"missing"})


if __name__ == "__main__":
    unittest.main()
