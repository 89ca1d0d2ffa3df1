#!/usr/bin/env python3
"""bench-report.py - results.json, report.md and PNG plots of make bench.

Reads, for each kernel named, OUT/<kernel>/expected (the runs the guest was
asked for) and OUT/<kernel>/channel.log (what it sent on the results port),
and with --rounds N the same of its further boots, OUT/rounds/<kernel>-<r>
for r = 2..N, and writes OUT/results.json (every record with its round),
OUT/report.md and OUT/<fs>-<workload>.png (round 1).
With --side-by-side CHANNEL_LOG it prints make demo's closing summary.
With --from-json FILE it writes OUT/report.md again from a results.json
(its guest settings, problems and records, not the options': no channel
log read, no plot drawn, the OUT/<fs>-<workload>.png that exist linked,
dated FILE's modification time); the kernels default to those of FILE.
Exits 1 when a run could not run (failed, or never reported); timings are
never judged. Standard library only; gnuplot draws the plots. The work is
done by the package benchreport/ beside this script.
"""
import argparse
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from benchreport import compute, load, plot, render  # noqa: E402
from benchreport.demo import side_by_side  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--mem", default="?")
    ap.add_argument("--smp", default="?")
    ap.add_argument("--online-cpus", default="?",
                    help="the online CPUs each guest reported, "
                    "'KERNEL N,KERNEL N'")
    ap.add_argument("--data", default="?")
    ap.add_argument("--raw", default="",
                    help="the targets that are raw block devices, "
                    "'NAME NAME'")
    ap.add_argument("--rounds", type=int, default=1,
                    help="boots of each kernel: OUT/<kernel> and "
                    "OUT/rounds/<kernel>-<r> for r = 2..ROUNDS")
    ap.add_argument("--from-json", metavar="FILE",
                    help="write OUT/report.md from FILE, a results.json "
                    "(its guest settings replace --mem, --smp, "
                    "--online-cpus, --data and --raw)")
    ap.add_argument("kernels", nargs="*")
    args = ap.parse_args()
    if not args.kernels and not args.from_json:
        ap.error("the following arguments are required: kernels")
    return args


def run_bench(args):
    """Read the kernels' logs; write results.json and the plots."""
    records, problems = [], []
    for r in range(1, args.rounds + 1):
        for k in args.kernels:
            recs, probs = load.load_kernel(args.out, k, r)
            records += recs
            problems += probs
    plots = plot.plot_all(args.out, compute.split_rounds(records)[0])
    load.write_results(args.out, args, problems, records)
    return records, problems, plots, None


def run_from_json(args):
    """Read results.json, its guest settings into @args."""
    guest, problems, records = load.read_results(args.from_json)
    args.mem, args.smp = guest["mem"], guest["smp"]
    args.online_cpus, args.data = guest["online_cpus"], guest["data_set"]
    args.raw = " ".join(guest["raw_block_devices"])
    args.kernels = args.kernels or compute.kernels_of(records)
    args.rounds = compute.rounds_of(records)
    when = time.localtime(os.path.getmtime(args.from_json))
    return records, problems, plot.existing_plots(args.out, records), when


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--side-by-side":
        return side_by_side(sys.argv[2])
    args = parse_args()
    run = run_from_json if args.from_json else run_bench
    records, problems, plots, when = run(args)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(render.report(args, records, problems, plots, when))
    for p in problems:
        sys.stderr.write("bench-report: %s\n" % p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
