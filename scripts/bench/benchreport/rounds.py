"""Patched vs pristine over alternating boots: medians, spreads, verdict.

make bench boots each kernel BENCH_ROUNDS times, alternately; the first
boots run the whole matrix, the others only the buffered and O_DIRECT rows
of scripts/data/bench-rounds.list. Per target and workload:
  - each mode's steady MB/s per boot, their median and their spread
    ((max - min) / median) on each kernel;
  - the noise: what O_DIRECT, which the series does not change, moved
    between the kernels' boots: the larger of its spread on either kernel
    and how far its patched/pristine ratio of medians is from 1;
  - the verdict on patched buffered / pristine buffered (ratio of the
    medians): "within the noise" when it is at least 1 - noise, "slower
    beyond the noise" when below; no verdict with fewer than MIN_ROUNDS
    boots of each kernel, or without the O_DIRECT rows.
"""
import statistics

from .compute import fmt_ratio, main_workloads, targets

MIN_ROUNDS = 3


def steady_by_round(records, fs, wl, kernel, mode):
    """The steady MB/s of the uncached_bench runs of @kernel/@fs/@wl/@mode
    that ran, in the order of their rounds."""
    runs = [r for r in records
            if r["status"] == "ok" and r["tool"] == "bench"
            and r["fs"] == fs and r["workload"] == wl
            and r["kernel"] == kernel and r["mode"] == mode
            and r.get("mbps_steady")]
    return [r["mbps_steady"]
            for r in sorted(runs, key=lambda r: r.get("round", 1))]


def median(values):
    return statistics.median(values) if values else None


def spread(values):
    """(max - min) / median, None with fewer than two values."""
    if len(values) < 2 or not median(values):
        return None
    return (max(values) - min(values)) / median(values)


def median_ratio(records, fs, wl, mode):
    """Patched over pristine, of the medians of @mode; None if missing."""
    pa = median(steady_by_round(records, fs, wl, "patched", mode))
    pr = median(steady_by_round(records, fs, wl, "pristine", mode))
    return pa / pr if pa and pr else None


def noise(records, fs, wl):
    """The noise band of @fs/@wl (see the module's text); None with fewer
    than MIN_ROUNDS O_DIRECT runs on either kernel."""
    band = []
    for k in ("pristine", "patched"):
        runs = steady_by_round(records, fs, wl, k, "direct")
        if len(runs) < MIN_ROUNDS:
            return None
        band.append(spread(runs))
    r = median_ratio(records, fs, wl, "direct")
    if r is None:
        return None
    return max(band + [abs(1.0 - r)])


def buffered_boots(records, fs, wl):
    """The boots of each kernel that have a buffered run of @fs/@wl: the
    fewer of the two kernels'."""
    return min(len(steady_by_round(records, fs, wl, k, "buffered"))
               for k in ("pristine", "patched"))


def verdict(records, fs, wl):
    """(ratio of the buffered medians, noise band, verdict or None)."""
    r = median_ratio(records, fs, wl, "buffered")
    n = noise(records, fs, wl)
    if r is None or n is None or buffered_boots(records, fs, wl) < MIN_ROUNDS:
        return r, n, None
    if r < 1.0 - n:
        return r, n, "slower beyond the noise"
    return r, n, "within the noise"


def pct(v):
    return "-" if v is None else "%.1f%%" % (v * 100)


def boots(values):
    return ", ".join("%.0f" % v for v in values) or "-"


def mode_row(records, fs, wl, mode):
    cells = [fs, wl, mode]
    for k in ("pristine", "patched"):
        runs = steady_by_round(records, fs, wl, k, mode)
        m = median(runs)
        cells += [boots(runs), "-" if m is None else "%.1f" % m,
                  pct(spread(runs))]
    cells.append(fmt_ratio(median_ratio(records, fs, wl, mode)))
    return "| %s |" % " | ".join(cells)


def verdict_row(records, fs, wl):
    r, n, v = verdict(records, fs, wl)
    return "| %s | %s | %s | %s | %s |" % (
        fs, wl, fmt_ratio(r), "-" if n is None else "+/- " + pct(n),
        v or "no verdict (fewer than %d boots of each kernel)" % MIN_ROUNDS)


def rounds_section(records, nrounds):
    """The markdown of the section; @records: every round's."""
    md = ["## Patched vs pristine: %d boot%s of each kernel"
          % (nrounds, "" if nrounds == 1 else "s"), "",
          "The kernels were booted alternately (pristine, patched, "
          "pristine, ...); the first boot of each ran the whole matrix, the "
          "others only the buffered and O_DIRECT rows of "
          "scripts/data/bench-rounds.list. MB/s are steady MB/s, one value "
          "per boot in boot order. *spread*: (max - min) / median. "
          "*noise*: what O_DIRECT, which the series does not change, moved: "
          "the larger of its spread on either kernel and the distance of "
          "its patched/pristine ratio of medians from 1. Patched buffered "
          "is *within the noise* of pristine when the ratio of the buffered "
          "medians is at least 1 - noise. At least %d boots of each kernel "
          "are needed for a verdict." % MIN_ROUNDS, "",
          "| target | workload | patched buffered / pristine buffered "
          "(medians) | noise (O_DIRECT) | verdict |",
          "|---|---|--:|--:|---|"]
    pairs = [(fs, wl) for fs in targets(records)
             for wl in main_workloads(records, fs)]
    md += [verdict_row(records, fs, wl) for fs, wl in pairs]
    md += ["", "| target | workload | mode | pristine MB/s per boot | median "
           "| spread | patched MB/s per boot | median | spread | patched / "
           "pristine (medians) |",
           "|---|---|---|---|--:|--:|---|--:|--:|--:|"]
    md += [mode_row(records, fs, wl, mode) for fs, wl in pairs
           for mode in ("buffered", "direct")]
    return md + [""]


def no_regression_target(records, fs, wl):
    """The targets table's row values: (measured text, met or None)."""
    r, n, v = verdict(records, fs, wl)
    if r is None:
        return None, None
    nboots = buffered_boots(records, fs, wl)
    if v is None:
        return "%s (%d boot%s each: no verdict)" % (
            fmt_ratio(r), nboots, "" if nboots == 1 else "s"), None
    return ("%s (medians of %d boots each; noise +/- %s)"
            % (fmt_ratio(r), nboots, pct(n)), v == "within the noise")
