"""The "Targets (one run, measured)" table of a filesystem or raw device.

target prints a row (measured, goal, met / not met / n/a, or "-" for a row
that is only reported); read_targets, write_targets, copy_targets,
cpu_targets, neighbour_targets and other_targets give the rows of each
kind, from the patched and pristine runs compute.py picks.
"""
from .compute import (KERNEL_ORDER, compared_runs, cpu_per_gib, cpu_ratio,
                      fmt, fmt_ratio, hot_ratio, main_workloads, pick,
                      planned, ratio)
from .rounds import MIN_ROUNDS, no_regression_target


def target(what, value, goal, met):
    """A row of the targets table; @value None: no data ("n/a"); @met
    None: no verdict ("n/a", or "-" for a "report" row), or a string."""
    if goal == "report":
        state = "-"
    elif met is None:
        state = "n/a"
    elif isinstance(met, str):
        state = met
    else:
        state = "met" if met else "not met"
    return "| %s | %s | %s | %s |" % (what, "n/a" if value is None else value,
                                      goal, state)


def at_least(r, goal):
    return None if r is None else r >= goal


def at_most(r, goal):
    return None if r is None else r <= goal


def ratio_target(what, r, goal, met):
    return target(what, None if r is None else fmt_ratio(r), goal, met)


def streams(r):
    if not r:
        return "all streams"
    return "%d stream%s" % (r["threads"], "" if r["threads"] == 1 else "s")


def growth_target(records, fs, wl, goal):
    """The page cache's growth during the uncached @wl run, of the data it
    moved; @goal: at most that many percent, or None (no verdict)."""
    pu = pick(records, fs, wl, "patched", "uncached")
    growth = g = None
    if pu:
        growth = pu["cache_peak_mb"] - pu["cache_start_mb"]
        g = growth / pu["mb"] * 100 if pu["mb"] else None
    return target("%s: page-cache growth during uncached / data %s"
                  % (wl, "read" if wl == "read" else "moved"),
                  None if g is None else "%.1f MB / %.0f MB = %s" % (
                      growth, pu["mb"], fmt(g, 2, "%")),
                  "report" if goal is None else "<= %d%%" % goal,
                  None if goal is None else at_most(g, goal))


def read_targets(records, fs):
    pb, pu, _, _ = compared_runs(records, fs, "read")
    r = ratio(pu, pb)
    met = None
    if r is not None:
        met = "%s (stretch %s)" % ("met" if r >= 1.0 else "not met",
                                   "met" if r >= 1.2 else "not met")
    out = [ratio_target("read, %s: uncached steady / buffered steady"
                        % streams(pu or pb), r,
                        ">= 1.0x (stretch 1.2x)", met),
           growth_target(records, fs, "read", 2)]
    k = None
    if pu and pb and pb["kswapd_s"]:
        k = pu["kswapd_s"] / pb["kswapd_s"] * 100
    out.append(target("read: kswapd CPU uncached / buffered",
                      None if k is None else "%.2f s / %.2f s = %s" % (
                          pu["kswapd_s"], pb["kswapd_s"], fmt(k, 2, "%")),
                      "<= 1% of buffered", at_most(k, 1)))
    return out


def write_targets(records, fs):
    pb, pu, _, _ = compared_runs(records, fs, "write")
    r = ratio(pu, pb)
    out = [ratio_target("write 64 KiB, %s: uncached steady / buffered steady"
                        % streams(pu or pb), r, ">= 1.0x", at_least(r, 1.0))]
    for wl, goal in (("seqwrite-4k", 0.8), ("seqwrite-64k", 0.9)):
        if not planned(records, fs, wl):
            continue
        r = ratio(pick(records, fs, wl, "patched", "uncached"),
                  pick(records, fs, wl, "patched", "buffered"))
        out.append(ratio_target("single stream %s: uncached / buffered" % wl,
                                r, ">= %.1fx" % goal, at_least(r, goal)))
    peaks = []
    for wl in ("write", "seqwrite-4k", "seqwrite-64k", "neighbour-write",
               "copy"):
        u = pick(records, fs, wl, "patched", "uncached")
        b = pick(records, fs, wl, "patched", "buffered")
        if u:
            peaks.append("%s %.0f MB (buffered %s)" % (
                wl, u["dirty_wb_peak_mb"],
                fmt(b["dirty_wb_peak_mb"], 0, " MB") if b else "n/a"))
    out.append(target("dirty+writeback peak of the uncached runs",
                      ", ".join(peaks) or None, "report", None))
    return out


def copy_targets(records, fs):
    """The dd-style copy (raw block devices): reported, not judged."""
    if not planned(records, fs, "copy"):
        return []
    pb, pu, _, _ = compared_runs(records, fs, "copy")
    return [ratio_target("copy, %s: uncached steady / buffered steady"
                         % streams(pu or pb), ratio(pu, pb), "report", None),
            growth_target(records, fs, "copy", None)]


def cpu_targets(records, fs):
    out = []
    for wl in main_workloads(records, fs):
        pb, pu, _, _ = compared_runs(records, fs, wl)
        r = cpu_ratio(pu, pb)
        out.append(target("%s: kernel CPU per GiB, uncached / buffered" % wl,
                          None if r is None else "%.2f / %.2f s/GiB = %s" % (
                              cpu_per_gib(pu), cpu_per_gib(pb),
                              fmt_ratio(r)),
                          "<= 0.8x", at_most(r, 0.8)))
    return out


def neighbour_targets(records, fs):
    out = []
    for wl, what in (("neighbour-read", "read"), ("neighbour-write", "write")):
        if not planned(records, fs, wl):
            continue
        r = hot_ratio(records, fs, "patched", wl, "uncached")
        out.append(ratio_target(
            "neighbour: hot reader beside an uncached %s stream / alone"
            % what, r, ">= 0.9x", at_least(r, 0.9)))
        rb = [(k, hot_ratio(records, fs, k, wl, "buffered"))
              for k in KERNEL_ORDER]
        rb = ["%s %s" % (k, fmt_ratio(v)) for k, v in rb if v is not None]
        out.append(target(
            "neighbour: hot reader beside a buffered %s stream / alone" % what,
            ", ".join(rb) or None, "report", None))
    return out


def other_targets(records, fs, every_round):
    """@every_round: the records of all rounds (the no-regression rows)."""
    out = []
    for wl in main_workloads(records, fs):
        value, met = no_regression_target(every_round, fs, wl)
        out.append(target("%s: patched buffered / pristine buffered" % wl,
                          value, "within the noise of O_DIRECT (medians of "
                          ">= %d alternating boots)" % MIN_ROUNDS, met))
    for wl in main_workloads(records, fs):
        _, pu, pd, _ = compared_runs(records, fs, wl)
        out.append(ratio_target("%s: uncached / O_DIRECT" % wl,
                                ratio(pu, pd), "report", None))
    return out
