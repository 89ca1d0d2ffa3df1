"""The "uncached_bench and fio side by side" section of report.md.

tools_pairs finds the workloads both programs ran uncached on the patched
kernel; side_by_side_rows compares their ratios (uncached over buffered
and over direct) and, where they disagree in direction, why_differ says
why from the numbers; fio_table lists every fio run beside uncached_bench's.
"""
from .compute import (direction, find, fmt, fmt_ratio, is_neighbour, ratio,
                      sort_key, whole_ratio, whole_run_mbps)


NOISE = 0.03  # one run each: a few percent either way is noise


def direct_run(records, kernel, fs, wl, tool, op):
    """The direct run of @wl, or else of another workload of the same
    tool, target and op: O_DIRECT ignores fadvise and readahead, so the
    matrix runs it once. Returns (run, workload it is from)."""
    r = find(records, kernel=kernel, fs=fs, workload=wl, mode="direct",
             tool=tool)
    if r:
        return r, wl
    for d in records:
        if (d["status"] == "ok" and d["kernel"] == kernel and d["fs"] == fs
                and d["tool"] == tool and d["op"] == op
                and d["mode"] == "direct" and not is_neighbour(d)
                and d["threads"] > 1):
            return d, d["workload"]
    return None, None


def tools_pairs(records):
    """(fs, workload) with a patched uncached run of both tools."""
    pairs = []
    for r in records:
        key = (r["fs"], r["workload"])
        if (r["tool"] == "fio" and r["kernel"] == "patched"
                and r["mode"] == "uncached" and key not in pairs
                and find(records, kernel="patched", fs=r["fs"],
                         workload=r["workload"], mode="uncached",
                         tool="bench")):
            pairs.append(key)
    return pairs


def asked(records, fs, wl):
    """What the runs of @fs/@wl ask for, from their options and
    readahead."""
    words = []
    for tool in ("bench", "fio"):
        r = next((r for r in records if r["fs"] == fs and r["workload"] == wl
                  and r["tool"] == tool and r["mode"] == "uncached"), None)
        if not r:
            continue
        opts = r["options"] or ("fio defaults" if tool == "fio" else "-")
        if r["readahead_kb"]:
            opts += ", read_ahead_kb %d" % r["readahead_kb"]
        words.append("%s: `%s`" % ("uncached_bench" if tool == "bench"
                                   else "fio", opts))
    return "; ".join(words)


def why_differ(records, fs, wl, rb, rf):
    """The report's reason for a disagreement, from the numbers."""
    def run(mode, tool):
        return find(records, kernel="patched", fs=fs, workload=wl, mode=mode,
                    tool=tool) or {}
    b, u = run("buffered", "bench"), run("uncached", "bench")
    rw = whole_ratio(u, b)
    read = b.get("op") == "read"
    basis = "whole run" if read else "whole run, the final fsync included"
    if direction(rw) == direction(rf) != 0:
        what = ("the seconds before the page cache filled, when buffered "
                "reads run without reclaim" if read else "the final fsync, "
                "which writes back what buffered writes left dirty")
        return ("uncached_bench's MB/s on fio's basis (%s) give %s, fio's "
                "direction: the tools disagree only in what they time; the "
                "steady figure leaves out %s." % (basis, fmt_ratio(rw), what))
    if abs(rb - 1.0) <= NOISE and abs(rf - 1.0) <= NOISE:
        return ("both within %d%% of 1.00x: the noise of one run." %
                round(NOISE * 100))
    return ("not the measuring window: uncached_bench on fio's basis (%s) "
            "gives %s, still against fio. Both programs issue the same "
            "calls on the same files; compare uncached_bench's per-second "
            "table and device requests with fio's own CPU (sys %s%% "
            "uncached, %s%% buffered) to find the cause." % (
                basis, fmt_ratio(rw),
                fmt(run("uncached", "fio").get("fio_sys_cpu_pct")),
                fmt(run("buffered", "fio").get("fio_sys_cpu_pct"))))


def side_by_side_rows(records):
    """The tools' ratios per target and workload, and the disagreements."""
    lines = ["| target | workload | rw | uncached / buffered: uncached_bench "
             "steady (whole run) | fio | uncached / direct: uncached_bench "
             "| fio | agree? |", "|---|---|---|--:|--:|--:|--:|---|"]
    notes, footnotes = [], []
    for fs, wl in tools_pairs(records):
        cells, rs = [], {}
        for tool in ("bench", "fio"):
            b = find(records, kernel="patched", fs=fs, workload=wl,
                     mode="buffered", tool=tool)
            u = find(records, kernel="patched", fs=fs, workload=wl,
                     mode="uncached", tool=tool)
            d, dwl = direct_run(records, "patched", fs, wl, tool, u["op"])
            rs[tool] = (ratio(u, b), ratio(u, d), whole_ratio(u, b), dwl)
            if dwl and dwl != wl:
                footnotes.append("%s %s %s: uncached / direct uses the "
                                 "direct run of %s (O_DIRECT ignores hints "
                                 "and readahead)." % (
                                     fs, wl, "fio" if tool == "fio"
                                     else "uncached_bench", dwl))
        rb, rf = rs["bench"][0], rs["fio"][0]
        agree = "yes"
        if rb is None or rf is None:
            agree = "-"
        elif direction(rb) * direction(rf) < 0:
            agree = "**no**"
            notes.append("- **%s %s** (%s): uncached_bench %s, fio %s: %s" % (
                fs, wl, asked(records, fs, wl), fmt_ratio(rb), fmt_ratio(rf),
                why_differ(records, fs, wl, rb, rf)))
        cells = [fs, wl, u["op"],
                 "%s (%s)" % (fmt_ratio(rb), fmt_ratio(rs["bench"][2])),
                 fmt_ratio(rf), fmt_ratio(rs["bench"][1]),
                 fmt_ratio(rs["fio"][1]), agree]
        lines.append("| " + " | ".join(cells) + " |")
    return lines, notes, footnotes


def fio_table(records):
    lines = ["| kernel | target | workload | mode | fio MB/s | uncached_bench "
             "MB/s steady | uncached_bench MB/s whole run | fio / "
             "uncached_bench whole run | fio's own CPU (sys %) |",
             "|---|---|---|---|--:|--:|--:|--:|--:|"]
    for r in sorted((r for r in records if r["tool"] == "fio"),
                    key=lambda r: (r["fs"], r["workload"]) + sort_key(r)):
        if r["status"] != "ok":
            lines.append("| %s | %s | %s | %s | %s |  |  |  |  |" % (
                r["kernel"], r["fs"], r["workload"], r["mode"], r["status"]))
            continue
        ours = find(records, kernel=r["kernel"], fs=r["fs"],
                    workload=r["workload"], mode=r["mode"], tool="bench")
        w = whole_run_mbps(ours)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["kernel"], r["fs"], r["workload"], r["mode"], fmt(r["mbps"]),
            fmt(ours["mbps_steady"] if ours else None), fmt(w),
            fmt_ratio(r["mbps"] / w if w else None),
            fmt(r.get("fio_sys_cpu_pct"))))
    return lines


TOOLS_TEXT = """\
The same workloads run by both programs in the same boot: %s, built
static from the vendored source (scripts/host/build-fio.sh), `uncached=1`
sending RWF_UNCACHED (0x80), on the same data set files (`--numjobs`
threads, `--ioengine=pvsync2`, `--thread --group_reporting --time_based`,
after `sync` and a cache drop). A workload id pairs runs that ask the
kernel for the same thing: *read* gives no hint (fio `--fadvise_hint=0`),
*read-seq* POSIX_FADV_SEQUENTIAL (fio's default for sequential jobs,
uncached_bench `--fadvise sequential`); *write* overwrites the data set
(fio with `--end_fsync=1` for buffered and uncached). fio's MB/s count the
whole run (writes: the final fsync too); uncached_bench's *steady* leaves
out the seconds before the page cache filled and its write figure the
fsync, so its ratio on fio's basis is given in brackets (*whole run*).
*agree?*: whether both ratios say uncached is faster (above 1.00x) or
both slower; a disagreement is explained below."""


def tools_section(records):
    if not any(r["tool"] == "fio" for r in records):
        return []
    version = next((r.get("fio_version") for r in records
                    if r["tool"] == "fio" and r.get("fio_version")), None)
    rows, notes, footnotes = side_by_side_rows(records)
    md = ["## uncached_bench and fio side by side", "",
          TOOLS_TEXT % (version or "fio"), "", "### Ratios (patched kernel)",
          ""] + rows + [""]
    md += ["- " + f for f in footnotes] + ([""] if footnotes else [])
    if notes:
        md += ["### Where the tools disagree", ""] + notes + [""]
    elif len(rows) > 2:
        md += ["Both tools agree in direction on every row.", ""]
    md += ["### MB/s of each fio run", ""] + fio_table(records) + [""]
    return md
