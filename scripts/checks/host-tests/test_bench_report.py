r"""Host-side tests of scripts/bench/bench-report.py and its package benchreport.

The golden test renders fixtures/results.json (trimmed from a real make
bench run of the patched kernel, with a pristine buffered read and a
failed uncached write made up) with --from-json and compares the report
with fixtures/bench-report.md, byte for byte. After a deliberate change
of the report, regenerate that file the same way and review its diff:
  d=$(mktemp -d); cp scripts/checks/host-tests/fixtures/results.json "$d"
  TZ=UTC touch -d '2025-12-06 10:01' "$d/results.json"
  TZ=UTC python3 scripts/bench/bench-report.py --from-json "$d/results.json" \
      --out "$d"; cp "$d/report.md" scripts/checks/host-tests/fixtures/bench-report.md
The other tests cover the branchy helpers: ratios with zero or missing
values, number formatting, target verdicts, kernel CPU per GiB, the
channel log's statuses. Standard library only, no guest, no gnuplot:
scripts/checks/host-tests.sh runs them.
"""
import argparse
import calendar
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "bench")
FIXTURES = os.path.join(HERE, "fixtures")
SCRIPT = os.path.join(BENCH, "bench-report.py")

sys.dont_write_bytecode = True
sys.path.insert(0, BENCH)

from benchreport import compute, load, plot, render  # noqa: E402
from benchreport import rounds, tables, targets_table  # noqa: E402

# the date the golden report shows: the fixture's mtime in the test
MEASURED = "2025-12-06 10:01"
PROBLEM = "patched ext4/write/uncached: failed (exit status 1)"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def run(**kw):
    """A record that ran, with @kw."""
    rec = {"kernel": "patched", "fs": "ext4", "workload": "read",
           "tool": "bench", "op": "read", "mode": "buffered", "threads": 2,
           "options": "", "status": "ok"}
    rec.update(kw)
    return rec


class GoldenTest(unittest.TestCase):
    """The fixture's report, through the command line and in-process."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-report-test.")
        self.addCleanup(shutil.rmtree, self.tmp)

    def render(self, *args):
        """bench-report.py --from-json on a copy of the fixture dated
        MEASURED (UTC), into self.tmp: (exit status, stderr, report)."""
        path = os.path.join(self.tmp, "results.json")
        shutil.copy(os.path.join(FIXTURES, "results.json"), path)
        t = calendar.timegm(time.strptime(MEASURED, "%Y-%m-%d %H:%M"))
        os.utime(path, (t, t))
        env = dict(os.environ, TZ="UTC", PYTHONDONTWRITEBYTECODE="1")
        res = subprocess.run([sys.executable, SCRIPT, "--from-json", path,
                              "--out", self.tmp] + list(args),
                             capture_output=True, text=True, env=env,
                             cwd=self.tmp)
        with open(os.path.join(self.tmp, "report.md")) as f:
            return res.returncode, res.stderr, f.read()

    def test_from_json_gives_the_golden_report(self):
        rc, err, text = self.render()
        self.assertEqual(text, fixture("bench-report.md"))
        self.assertEqual(rc, 1)  # the fixture has a run that failed
        self.assertEqual(err, "bench-report: %s\n" % PROBLEM)

    def test_kernels_given_on_the_command_line(self):
        _, _, text = self.render("patched")
        self.assertIn("Kernels: patched (performance", text)
        self.assertNotIn("Kernels: pristine", text)

    def test_existing_plot_is_linked(self):
        open(os.path.join(self.tmp, "ext4-read.png"), "w").close()
        _, _, text = self.render()
        link = "\n\n![ext4 read](ext4-read.png)"
        self.assertIn(link, text)
        self.assertEqual(text.replace(link, ""), fixture("bench-report.md"))

    def test_report_in_process(self):
        guest, problems, records = load.read_results(
            os.path.join(FIXTURES, "results.json"))
        args = argparse.Namespace(
            mem=guest["mem"], smp=guest["smp"],
            online_cpus=guest["online_cpus"], data=guest["data_set"],
            raw=" ".join(guest["raw_block_devices"]),
            kernels=compute.kernels_of(records))
        when = time.strptime(MEASURED, "%Y-%m-%d %H:%M")
        self.assertEqual(render.report(args, records, problems, {}, when),
                         fixture("bench-report.md"))

    def test_results_json_round_trip(self):
        guest, problems, records = load.read_results(
            os.path.join(FIXTURES, "results.json"))
        args = argparse.Namespace(mem="512M", smp="2", online_cpus="x 2",
                                  data="2048M", raw="a b")
        load.write_results(self.tmp, args, problems, records)
        back = load.read_results(os.path.join(self.tmp, "results.json"))
        self.assertEqual(back, ({"mem": "512M", "smp": "2",
                                 "online_cpus": "x 2", "data_set": "2048M",
                                 "raw_block_devices": ["a", "b"]},
                                problems, records))


class ComputeTest(unittest.TestCase):
    """Lookups, ratios and formatting."""

    def test_ratio(self):
        a, b = {"mbps_steady": 150.0}, {"mbps_steady": 100.0}
        self.assertEqual(compute.ratio(a, b), 1.5)
        self.assertIsNone(compute.ratio(None, b))
        self.assertIsNone(compute.ratio(a, None))
        self.assertIsNone(compute.ratio(a, {"mbps_steady": 0}))
        self.assertIsNone(compute.ratio(a, {"mbps_steady": None}))
        self.assertIsNone(compute.ratio(a, {}))
        self.assertEqual(compute.ratio({"x": 1}, {"x": 4}, key="x"), 0.25)

    def test_fmt(self):
        self.assertEqual(compute.fmt(None), "-")
        self.assertEqual(compute.fmt(2.25), "2.2")
        self.assertEqual(compute.fmt(2.5, 0), "2")
        self.assertEqual(compute.fmt(0.0123, 2, "%"), "0.01%")
        self.assertEqual(compute.fmt_ratio(None), "-")
        self.assertEqual(compute.fmt_ratio(1.234), "1.23x")

    def test_cpu_per_gib(self):
        self.assertIsNone(compute.cpu_per_gib(None))
        self.assertIsNone(compute.cpu_per_gib({"mb": 0, "sys_s": 1.0}))
        self.assertIsNone(compute.cpu_per_gib({"sys_s": 1.0}))
        self.assertIsNone(compute.cpu_per_gib({"mb": 1024}))
        self.assertEqual(compute.cpu_per_gib({"mb": 2048, "sys_s": 3.0}), 1.5)
        # the fsync's CPU counts when uncached_bench reported it
        self.assertEqual(compute.cpu_per_gib(
            {"mb": 1024, "sys_s": 3.0, "sys_incl_fsync_s": 4.0}), 4.0)
        self.assertEqual(compute.cpu_per_gib(
            {"mb": 1024, "sys_s": 3.0, "sys_incl_fsync_s": None}), 3.0)

    def test_cpu_ratio(self):
        a = {"mb": 1024, "sys_s": 3.0}
        self.assertEqual(compute.cpu_ratio(a, {"mb": 1024, "sys_s": 6.0}), 0.5)
        self.assertIsNone(compute.cpu_ratio(a, {"mb": 1024, "sys_s": 0.0}))
        self.assertIsNone(compute.cpu_ratio(None, a))

    def test_find_skips_runs_that_failed(self):
        bad = run(status="failed (no result)", mbps_steady=1.0)
        good = run(mbps_steady=2.0)
        self.assertIs(compute.find([bad, good], mode="buffered"), good)
        self.assertIsNone(compute.find([bad], mode="buffered"))
        self.assertIs(compute.pick([good], "ext4", "read", "patched",
                                   "buffered"), good)
        self.assertIsNone(compute.pick([good], "xfs", "read", "patched",
                                       "buffered"))

    def test_sort_key(self):
        rs = [run(mode="uncached"), run(kernel="other"),
              run(kernel="pristine", mode="direct"), run()]
        order = [(r["kernel"], r["mode"])
                 for r in sorted(rs, key=compute.sort_key)]
        self.assertEqual(order, [("pristine", "direct"),
                                 ("patched", "buffered"),
                                 ("patched", "uncached"),
                                 ("other", "buffered")])

    def test_whole_run_mbps(self):
        self.assertIsNone(compute.whole_run_mbps(None))
        self.assertIsNone(compute.whole_run_mbps(run(seconds=0, mb=1)))
        self.assertEqual(compute.whole_run_mbps(
            run(mb=100.0, seconds=10.0, fsync_s=10.0)), 10.0)
        self.assertEqual(compute.whole_run_mbps(
            run(op="write", mb=100.0, seconds=10.0, fsync_s=10.0)), 5.0)
        self.assertIsNone(compute.whole_ratio(
            run(mb=1.0, seconds=1.0), run(mb=0.0, seconds=1.0)))

    def test_direction(self):
        self.assertEqual(compute.direction(None), 0)
        self.assertEqual(compute.direction(1.0), 0)
        self.assertEqual(compute.direction(1.01), 1)
        self.assertEqual(compute.direction(0.99), -1)

    def test_kernels_and_targets_in_their_order(self):
        rs = [run(kernel="pristine", fs="xfs"), run(), run(fs="xfs")]
        self.assertEqual(compute.kernels_of(rs), ["pristine", "patched"])
        self.assertEqual(compute.targets(rs), ["xfs", "ext4"])

    def test_workloads_leave_out_the_neighbour_runs(self):
        rs = [run(workload="write"), run(workload="neighbour-read",
                                         options="--hot"),
              run(), run(workload="write", mode="uncached")]
        self.assertEqual(compute.workloads(rs, "ext4"), ["write", "read"])


class TargetsTest(unittest.TestCase):
    """The verdicts of the targets table."""

    def test_target_states(self):
        t = targets_table.target
        self.assertEqual(t("w", "1", ">= 1", True), "| w | 1 | >= 1 | met |")
        self.assertEqual(t("w", "1", ">= 1", False),
                         "| w | 1 | >= 1 | not met |")
        self.assertEqual(t("w", None, ">= 1", None),
                         "| w | n/a | >= 1 | n/a |")
        self.assertEqual(t("w", "1", "report", True), "| w | 1 | report | - |")
        self.assertEqual(t("w", "1", ">= 1", "met (x)"),
                         "| w | 1 | >= 1 | met (x) |")

    def test_at_least_at_most(self):
        self.assertIsNone(targets_table.at_least(None, 1.0))
        self.assertTrue(targets_table.at_least(1.0, 1.0))
        self.assertFalse(targets_table.at_least(0.99, 1.0))
        self.assertIsNone(targets_table.at_most(None, 1.0))
        self.assertTrue(targets_table.at_most(1.0, 1.0))
        self.assertFalse(targets_table.at_most(1.01, 1.0))

    def read_verdict(self, uncached_mbps):
        rs = [run(mbps_steady=100.0, kswapd_s=1.0),
              run(mode="uncached", mbps_steady=uncached_mbps, kswapd_s=0.0,
                  cache_start_mb=30.0, cache_peak_mb=31.0, mb=1000.0)]
        return targets_table.read_targets(rs, "ext4")[0]

    def test_read_target_and_stretch(self):
        self.assertEqual(self.read_verdict(125.0),
                         "| read, 2 streams: uncached steady / buffered "
                         "steady | 1.25x | >= 1.0x (stretch 1.2x) | "
                         "met (stretch met) |")
        self.assertTrue(self.read_verdict(110.0).endswith(
            "| met (stretch not met) |"))
        self.assertTrue(self.read_verdict(90.0).endswith(
            "| 0.90x | >= 1.0x (stretch 1.2x) | not met (stretch not met) |"))

    def test_read_target_without_runs(self):
        self.assertEqual(targets_table.read_targets([], "ext4")[0],
                         "| read, all streams: uncached steady / buffered "
                         "steady | n/a | >= 1.0x (stretch 1.2x) | n/a |")

    def test_growth_target(self):
        rs = [run(mode="uncached", cache_start_mb=30.0, cache_peak_mb=55.0,
                  mb=1000.0)]
        self.assertEqual(targets_table.growth_target(rs, "ext4", "read", 2),
                         "| read: page-cache growth during uncached / data "
                         "read | 25.0 MB / 1000 MB = 2.50% | <= 2% | "
                         "not met |")
        self.assertTrue(targets_table.growth_target(
            rs, "ext4", "read", None).endswith("= 2.50% | report | - |"))

    def test_cpu_target(self):
        rs = [run(mb=1024, sys_s=10.0), run(mode="uncached", mb=1024,
                                            sys_s=7.0)]
        rows = targets_table.cpu_targets(rs, "ext4")
        self.assertEqual(rows[0], "| read: kernel CPU per GiB, uncached / "
                         "buffered | 7.00 / 10.00 s/GiB = 0.70x | <= 0.8x | "
                         "met |")
        self.assertTrue(rows[1].endswith("| n/a | <= 0.8x | n/a |"))


class RoundsTest(unittest.TestCase):
    """Patched vs pristine over alternating boots."""

    def boots(self, kernel, mode, values, workload="read"):
        return [run(kernel=kernel, mode=mode, workload=workload, round=i + 1,
                    mbps_steady=v) for i, v in enumerate(values)]

    def three_rounds(self, patched_buffered):
        return (self.boots("pristine", "direct", [400.0, 440.0, 420.0]) +
                self.boots("patched", "direct", [410.0, 430.0, 420.0]) +
                self.boots("pristine", "buffered", [200.0, 210.0, 190.0]) +
                self.boots("patched", "buffered", patched_buffered))

    def test_median_and_spread(self):
        self.assertEqual(rounds.median([3.0, 1.0, 2.0]), 2.0)
        self.assertIsNone(rounds.median([]))
        self.assertEqual(rounds.spread([90.0, 100.0, 110.0]), 0.2)
        self.assertIsNone(rounds.spread([100.0]))

    def test_runs_in_round_order_without_failures(self):
        rs = self.boots("patched", "buffered", [1.0, 2.0, 3.0])
        rs.reverse()
        rs.append(run(round=4, status="failed (no result)", mbps_steady=9.0))
        self.assertEqual(rounds.steady_by_round(rs, "ext4", "read", "patched",
                                                "buffered"), [1.0, 2.0, 3.0])

    def test_noise_is_the_widest_of_o_direct(self):
        # spreads 40/420 and 20/420; the ratio of medians is 1.0
        rs = self.three_rounds([200.0, 200.0, 200.0])
        self.assertAlmostEqual(rounds.noise(rs, "ext4", "read"), 40 / 420.0)

    def test_verdicts(self):
        # noise 9.5%: 0.91x is within it, 0.90x (180/200) is not
        r, n, v = rounds.verdict(self.three_rounds([182.0, 181.0, 185.0]),
                                 "ext4", "read")
        self.assertEqual((round(r, 2), v), (0.91, "within the noise"))
        r, n, v = rounds.verdict(self.three_rounds([180.0, 179.0, 185.0]),
                                 "ext4", "read")
        self.assertEqual((r, v), (0.9, "slower beyond the noise"))

    def test_no_verdict_with_fewer_boots(self):
        rs = [r for r in self.three_rounds([200.0] * 3) if r["round"] < 3]
        self.assertIsNone(rounds.verdict(rs, "ext4", "read")[2])
        self.assertEqual(rounds.no_regression_target(rs, "ext4", "read"),
                         ("0.98x (2 boots each: no verdict)", None))
        rs = [r for r in self.three_rounds([200.0] * 3)
              if r["mode"] == "buffered"]
        self.assertEqual(rounds.verdict(rs, "ext4", "read"),
                         (1.0, None, None))

    def test_target_row(self):
        rs = self.three_rounds([200.0, 200.0, 200.0])
        self.assertEqual(rounds.no_regression_target(rs, "ext4", "read"),
                         ("1.00x (medians of 3 boots each; noise +/- 9.5%)",
                          True))
        self.assertEqual(rounds.no_regression_target([], "ext4", "read"),
                         (None, None))

    def test_section_lists_every_boot(self):
        md = "\n".join(rounds.rounds_section(
            self.three_rounds([150.0, 160.0, 170.0]), 3))
        self.assertIn("| ext4 | read | 0.80x | +/- 9.5% | slower beyond "
                      "the noise |", md)
        self.assertIn("| ext4 | read | buffered | 200, 210, 190 | 200.0 | "
                      "10.0% | 150, 160, 170 | 160.0 | 12.5% | 0.80x |", md)

    def test_ratio_column_adds_the_medians(self):
        every = self.three_rounds([150.0, 160.0, 170.0])
        first = compute.split_rounds(every)[0]
        self.assertEqual(tables.no_regression_cell(first, "ext4", "read",
                                                   every), "0.75x (0.80x)")
        self.assertEqual(tables.no_regression_cell(first, "ext4", "read",
                                                   first), "0.75x")

    def test_split_rounds(self):
        rs = [run(), run(round=1), run(round=2)]
        self.assertEqual(compute.split_rounds(rs), (rs[:2], rs[2:]))
        self.assertEqual(compute.rounds_of(rs), 2)
        self.assertEqual(compute.rounds_of([]), 1)


class LoadTest(unittest.TestCase):
    """What the channel log makes of a run."""

    def test_parse_fio(self):
        self.assertIsNone(load.parse_fio("no json here"))
        self.assertIsNone(load.parse_fio('{"jobs": []}'))
        text = "noise\n" + json.dumps({
            "fio version": "fio-3.42",
            "jobs": [{"read": {"io_bytes": 2 * load.MB,
                               "bw_bytes": load.MB, "runtime": 2000},
                      "write": {"io_bytes": 0}, "sys_cpu": 50.0,
                      "usr_cpu": 1.0}]})
        self.assertEqual(load.parse_fio(text), {
            "mbps": 1.0, "mb": 2.0, "runtime_s": 2.0,
            "fio_version": "fio-3.42", "fio_sys_cpu_pct": 50.0,
            "fio_usr_cpu_pct": 1.0})

    def channel(self, lines):
        path = os.path.join(tempfile.mkdtemp(prefix="bench-report-test."),
                            "channel.log")
        self.addCleanup(shutil.rmtree, os.path.dirname(path))
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return load.Channel(path, "N1")

    def status(self, chan, tool="fio"):
        rec = {"tool": tool, "options": ""}
        load.fill_record(rec, "fio:ext4/read/uncached", chan)
        return rec["status"]

    def test_statuses(self):
        self.assertEqual(self.status(None),
                         "not run (the guest never reported it)")
        chan = self.channel(["bench-run-end fio:ext4/read/uncached rc=3"])
        self.assertEqual(self.status(chan), "failed (exit status 3)")
        chan = self.channel(["bench-run-end fio:ext4/read/uncached rc=x"])
        self.assertEqual(self.status(chan), "failed (exit status 1)")
        chan = self.channel(["bench-run-end fio:ext4/read/uncached rc=0"])
        self.assertEqual(self.status(chan), "failed (no result)")
        self.assertEqual(self.status(chan, tool="bench"),
                         "failed (no result)")

    def test_exit_needs_the_nonce(self):
        self.assertIsNone(self.channel(["uncached-cmd-exit 0 nonce=N2"]).exit)
        self.assertEqual(self.channel(["uncached-cmd-exit 0 nonce=N1"]).exit,
                         0)


class PlotTest(unittest.TestCase):
    """Which PNGs --from-json links."""

    def test_existing_plots(self):
        tmp = tempfile.mkdtemp(prefix="bench-report-test.")
        self.addCleanup(shutil.rmtree, tmp)
        rs = [run(per_second=[{}]), run(workload="write", per_second=[{}]),
              run(workload="copy", per_second=[])]
        for png in ("ext4-read.png", "ext4-copy.png"):
            open(os.path.join(tmp, png), "w").close()
        # write: no PNG; copy: a PNG, but no seconds to draw
        self.assertEqual(plot.existing_plots(tmp, rs),
                         {("ext4", "read"): "ext4-read.png"})


if __name__ == "__main__":
    unittest.main()
