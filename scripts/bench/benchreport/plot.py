"""The PNG plots of report.md: MB/s and page cache per second.

plot writes the per-second data of a workload's runs to OUT/plot-data/
and has gnuplot draw OUT/<fs>-<workload>.png (a colour per mode; pristine
dashed, patched solid); plot_all does so for every streaming workload.
existing_plots finds the PNGs a previous run left, for --from-json.
"""
import os
import subprocess
import sys

from .compute import is_neighbour, sort_key
from .load import SECOND_KEYS


# plots: a colour per mode; pristine dashed, patched solid
MODE_COLOURS = {"buffered": "#1f77b4", "uncached": "#d62728",
                "direct": "#2ca02c"}


def plot_runs(records, fs, wl):
    """The runs of @fs/@wl a plot draws: uncached_bench's, with seconds."""
    return sorted((r for r in records if r["fs"] == fs and r["workload"] == wl
                   and r["tool"] == "bench" and r["status"] == "ok"
                   and r["per_second"]), key=sort_key)


def plot(out, records, fs, wl):
    runs = plot_runs(records, fs, wl)
    if not runs:
        return None
    ddir = os.path.join(out, "plot-data")
    os.makedirs(ddir, exist_ok=True)
    series = []
    for r in runs:
        path = os.path.join(ddir, "%s-%s-%s-%s.dat" % (r["kernel"], fs, wl,
                                                       r["mode"]))
        with open(path, "w") as f:
            f.write("# t mbps cache_mb dirty_wb_mb kswapd_s sys_s\n")
            for s in r["per_second"]:
                f.write("%.3f %.2f %.1f %.1f %.3f %.3f\n" % tuple(
                    s[k] for k in SECOND_KEYS))
        series.append((path, "%s %s" % (r["kernel"], r["mode"]),
                       "lc rgb '%s' dt %d" % (
                           MODE_COLOURS.get(r["mode"], "black"),
                           1 if r["kernel"] == "patched" else 2)))
    png = "%s-%s.png" % (fs, wl)

    def plots(col):
        return ", ".join("'%s' using 1:%d with linespoints %s lw 1.5 "
                         "title '%s'" % (p, col, style, t)
                         for p, t, style in series)
    script = "\n".join([
        "set terminal pngcairo size 900,700 font 'Sans,10'",
        "set output '%s'" % os.path.join(out, png),
        "set multiplot layout 2,1 title '%s, %s (%s, %s blocks, %d thread(s))'"
        % (fs, wl, runs[0]["op"], runs[0]["block"], runs[0]["threads"]),
        "set grid", "set key outside right", "set xlabel 'seconds'",
        "set xrange [0:*]", "set yrange [0:*]",
        "set ylabel 'MB/s'", "plot " + plots(2),
        "set ylabel 'page cache MB'", "plot " + plots(3),
        "unset multiplot", ""])
    res = subprocess.run(["gnuplot"], input=script, text=True,
                         capture_output=True)
    if res.returncode:
        sys.stderr.write("gnuplot failed for %s: %s\n" % (png, res.stderr))
        return None
    return png


def plot_all(out, records):
    """Plot every streaming workload: {(fs, workload): PNG name}."""
    plots = {}
    for r in records:
        key = (r["fs"], r["workload"])
        if r["tool"] == "bench" and not is_neighbour(r) and key not in plots:
            png = plot(out, records, *key)
            if png:
                plots[key] = png
    return plots


def existing_plots(out, records):
    """What plot_all would return, from the PNGs already in @out: those a
    run drew, without drawing any."""
    plots = {}
    for r in records:
        key = (r["fs"], r["workload"])
        png = "%s-%s.png" % key
        if (r["tool"] == "bench" and not is_neighbour(r) and key not in plots
                and plot_runs(records, *key)
                and os.path.exists(os.path.join(out, png))):
            plots[key] = png
    return plots
