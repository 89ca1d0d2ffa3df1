#!/usr/bin/env python3
"""bench-report.py - results.json, report.md and PNG plots of make bench.

Reads, for each kernel named, OUT/<kernel>/expected (the runs the guest was
asked for) and OUT/<kernel>/channel.log (what it sent on the results port),
and writes OUT/results.json, OUT/report.md and OUT/<fs>-<workload>.png.
With --side-by-side CHANNEL_LOG it prints make demo's closing summary.
Exits 1 when a run could not run (failed, or never reported); timings are
never judged. Standard library only; gnuplot draws the plots.
"""
import argparse
import json
import os
import subprocess
import sys
import textwrap
import time

MB = 1024 * 1024
SUMMARY_KEYS = ("mbps_steady", "mbps_first5", "mbps_total", "kswapd_s",
                "kswapd_steady_s", "sys_s", "sys_steady_s", "user_s",
                "cache_start_mb", "cache_peak_mb", "cache_final_mb",
                "dirty_wb_peak_mb", "fsync_s", "cache_after_fsync_mb",
                "fill_sec", "steady_from", "steady_to", "mb", "seconds",
                "dev_rd_mb", "dev_wr_mb", "dev_rd_ios", "dev_wr_ios")
# newer uncached_bench only: None when a channel log lacks them
OPTIONAL_KEYS = ("sys_incl_fsync_s", "filesize")
SECOND_KEYS = ("t", "mbps", "cache_mb", "dirty_wb_mb", "kswapd_s", "sys_s")
KERNEL_ORDER = ("pristine", "patched")
MODE_ORDER = ("buffered", "uncached", "direct")
# plots: a colour per mode; pristine dashed, patched solid
MODE_COLOURS = {"buffered": "#1f77b4", "uncached": "#d62728",
                "direct": "#2ca02c"}


def label_of(fs, workload, mode, tool):
    label = "%s/%s/%s" % (fs, workload, mode)
    return "fio:" + label if tool == "fio" else label


class Channel:
    """What one boot sent on the results port."""

    def __init__(self, path, nonce):
        self.seconds, self.summary, self.fio, self.rc = {}, {}, {}, {}
        self.cachestat, self.hot = {}, {}
        self.exit = None
        self.parse(path, nonce)

    def parse(self, path, nonce):
        fio_label, fio_text = None, []
        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if fio_label is not None:
                    if line == "bench-fio-json-end " + fio_label:
                        self.fio[fio_label] = parse_fio("\n".join(fio_text))
                        fio_label = None
                    else:
                        fio_text.append(line)
                    continue
                self.parse_line(line, nonce)
                if line.startswith("bench-fio-json-begin "):
                    fio_label, fio_text = line.split(" ", 1)[1], []

    def parse_line(self, line, nonce):
        word, _, rest = line.partition(" ")
        if word == "uncached-bench-sec":
            rec = json.loads(rest)
            self.seconds.setdefault(rec["label"], []).append(rec)
        elif word == "uncached-bench-summary":
            rec = json.loads(rest)
            self.summary[rec["label"]] = rec
        elif word == "uncached-bench-cachestat":
            rec = json.loads(rest)
            self.cachestat[rec["label"]] = rec
        elif word == "uncached-bench-hot":
            rec = json.loads(rest)
            self.hot[rec["label"]] = rec
        elif word == "bench-run-end":
            label, _, rc = rest.partition(" rc=")
            self.rc[label] = int(rc) if rc.isdigit() else 1
        elif word == "uncached-cmd-exit" and rest.endswith("nonce=" + nonce):
            self.exit = int(rest.split()[0])


def parse_fio(text):
    """fio's JSON output: MB/s and fio's own CPU use, or None."""
    start = text.find("{")
    try:
        data = json.loads(text[start:])
        job = data["jobs"][0]
    except (ValueError, KeyError, IndexError):
        return None
    side = job["read"] if job["read"]["io_bytes"] else job["write"]
    return {"mbps": side["bw_bytes"] / MB, "mb": side["io_bytes"] / MB,
            "runtime_s": side["runtime"] / 1000.0,
            "fio_version": data.get("fio version"),
            "fio_sys_cpu_pct": job.get("sys_cpu"),
            "fio_usr_cpu_pct": job.get("usr_cpu")}


def load_kernel(out, kernel):
    """The records of one kernel's boot."""
    kdir = os.path.join(out, kernel)
    nonce = ""
    if os.path.exists(os.path.join(kdir, "nonce")):
        nonce = open(os.path.join(kdir, "nonce")).read().strip()
    chan = None
    if os.path.exists(os.path.join(kdir, "channel.log")):
        chan = Channel(os.path.join(kdir, "channel.log"), nonce)
    records, problems = [], []
    with open(os.path.join(kdir, "expected")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for fs, wl, tool, op, mode, bs, threads, secs, ra, opts in rows:
        rec = {"kernel": kernel, "fs": fs, "workload": wl, "tool": tool,
               "op": op, "mode": mode, "block": bs, "threads": int(threads),
               "run_seconds": int(secs),
               "readahead_kb": int(ra) if ra != "-" else None,
               "options": opts if opts != "-" else ""}
        label = label_of(fs, wl, mode, tool)
        fill_record(rec, label, chan)
        if rec["status"] != "ok":
            problems.append("%s %s: %s" % (kernel, label, rec["status"]))
        records.append(rec)
    if chan is None:
        problems.append("%s: no channel.log (the guest did not run)" % kernel)
    elif chan.exit is None:
        problems.append("%s: the guest did not finish (see %s/console.log)"
                        % (kernel, kdir))
    if chan is not None:
        for label, rc in chan.rc.items():
            if label.endswith("/prepare") and rc:
                problems.append("%s %s: exit status %d" % (kernel, label, rc))
    return records, problems


def fill_record(rec, label, chan):
    rc = chan.rc.get(label) if chan else None
    if rec["tool"] == "fio":
        res = chan.fio.get(label) if chan else None
        if res:
            rec.update(res)
            rec["mbps_steady"] = res["mbps"]
    else:
        res = chan.summary.get(label) if chan else None
        if res:
            rec.update({k: res[k] for k in SUMMARY_KEYS})
            rec.update({k: res.get(k) for k in OPTIONAL_KEYS})
            if "--hot" in rec["options"].split():
                rec["hot"] = chan.hot.get(label)
            rec["per_second"] = [{k: s[k] for k in SECOND_KEYS}
                                 for s in chan.seconds.get(label, [])]
    if rc is None:
        rec["status"] = "not run (the guest never reported it)"
    elif rc != 0:
        rec["status"] = "failed (exit status %d)" % rc
    elif not res or ("hot" in rec and not rec["hot"]):
        rec["status"] = "failed (no result)"
    else:
        rec["status"] = "ok"


# ---- report.md ----

def find(records, **kw):
    for r in records:
        if r["status"] == "ok" and all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def pick(records, fs, workload, kernel, mode):
    """The uncached_bench run of @kernel/@fs/@workload/@mode, if it ran."""
    return find(records, kernel=kernel, fs=fs, workload=workload, mode=mode,
                tool="bench")


def compared_runs(records, fs, workload):
    """The runs of @fs/@workload that the targets and ratios compare, None
    where one did not run: (patched buffered, patched uncached, patched
    direct, pristine buffered)."""
    return (pick(records, fs, workload, "patched", "buffered"),
            pick(records, fs, workload, "patched", "uncached"),
            pick(records, fs, workload, "patched", "direct"),
            pick(records, fs, workload, "pristine", "buffered"))


def ratio(a, b, key="mbps_steady"):
    if not a or not b or not b.get(key):
        return None
    return a[key] / b[key]


def fmt(v, digits=1, suffix=""):
    if v is None:
        return "-"
    return ("%." + str(digits) + "f%s") % (v, suffix)


def fmt_ratio(v):
    return "-" if v is None else "%.2fx" % v


def is_neighbour(r):
    """A run with the hot reader beside it (--hot): its own section."""
    return "--hot" in r["options"].split()


def cpu_per_gib(r):
    """Kernel CPU seconds (all CPUs, /proc/stat: kswapd, the flusher and
    kworkers included; writes with their fsync) per GiB the calls moved."""
    if not r or not r.get("mb"):
        return None
    sys_s = r.get("sys_incl_fsync_s")
    if sys_s is None:
        sys_s = r.get("sys_s")
    return None if sys_s is None else sys_s / (r["mb"] / 1024.0)


def cpu_ratio(a, b):
    ca, cb = cpu_per_gib(a), cpu_per_gib(b)
    return ca / cb if ca is not None and cb else None


def sort_key(r):
    return (KERNEL_ORDER.index(r["kernel"]) if r["kernel"] in KERNEL_ORDER
            else 9, MODE_ORDER.index(r["mode"]) if r["mode"] in MODE_ORDER
            else 9)


def workloads(records, fs, tool="bench"):
    """The streaming workloads of @fs (the neighbour runs apart)."""
    seen = []
    for r in records:
        if (r["fs"] == fs and r["tool"] == tool and not is_neighbour(r)
                and r["workload"] not in seen):
            seen.append(r["workload"])
    return seen


def device_io(r):
    """What the disks did: MB read (reads) or written (writes), or both
    (copies), and the mean request size."""
    def one(mb, ios):
        return "%.0f (%.0f)" % (mb, mb * 1024 / ios if ios else 0)
    rd = one(r["dev_rd_mb"], r["dev_rd_ios"])
    wr = one(r["dev_wr_mb"], r["dev_wr_ios"])
    return {"read": rd, "write": wr}.get(r["op"], "read %s, written %s"
                                         % (rd, wr))


def summary_table(records, fs, wl):
    lines = ["| kernel | mode | MB/s steady | MB/s first 5 s | MB/s total | "
             "kswapd CPU s | kernel CPU s | kernel CPU s/GiB | "
             "page cache peak MB | "
             "page cache end MB | dirty+wb peak MB | fsync s | "
             "device MB (KB per request) |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in sorted((r for r in records if r["fs"] == fs and
                     r["workload"] == wl and r["tool"] == "bench"),
                    key=sort_key):
        if r["status"] != "ok":
            lines.append("| %s | %s | %s |  |  |  |  |  |  |  |  |  |  |"
                         % (r["kernel"], r["mode"], r["status"]))
            continue
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                     % (r["kernel"], r["mode"], fmt(r["mbps_steady"]),
                        fmt(r["mbps_first5"]), fmt(r["mbps_total"]),
                        fmt(r["kswapd_s"], 2), fmt(r["sys_s"]),
                        fmt(cpu_per_gib(r), 2),
                        fmt(r["cache_peak_mb"], 0), fmt(r["cache_final_mb"], 0),
                        fmt(r["dirty_wb_peak_mb"], 0),
                        fmt(r["fsync_s"], 2) if r["op"] != "read" else "-",
                        device_io(r)))
    return lines


def per_second_table(records, fs, wl):
    """The seeds' view: one row per second, one column per kernel/mode."""
    runs = sorted((r for r in records if r["fs"] == fs and r["workload"] == wl
                   and r["tool"] == "bench" and r["status"] == "ok"),
                  key=sort_key)
    if not runs:
        return []
    n = max(len(r["per_second"]) for r in runs)
    lines = ["| s | " + " | ".join("%s %s" % (r["kernel"], r["mode"])
                                   for r in runs) + " |",
             "|--:|" + "--:|" * len(runs)]
    for i in range(n):
        cells = []
        for r in runs:
            ps = r["per_second"]
            cells.append("%4.0fMB/sec, cache %.0f" % (ps[i]["mbps"],
                                                     ps[i]["cache_mb"])
                         if i < len(ps) else "")
        lines.append("| %d | %s |" % (i + 1, " | ".join(cells)))
    return lines


def ratio_rows(records, fs):
    rows = []
    for wl in workloads(records, fs):
        pb, pu, pd, ob = compared_runs(records, fs, wl)
        rows.append("| %s | %s | %s | %s | %s |" % (
            wl, fmt_ratio(ratio(pu, pb)), fmt_ratio(ratio(pu, pd)),
            fmt_ratio(ratio(pb, ob)), fmt_ratio(cpu_ratio(pu, pb))))
    return ["| workload | uncached / buffered | uncached / direct | "
            "patched buffered / pristine buffered | "
            "kernel CPU s/GiB, uncached / buffered |",
            "|---|--:|--:|--:|--:|"] + rows


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


def planned(records, fs, wl):
    """Did the matrix have workload @wl on @fs (whether it ran or not)?"""
    return any(r["fs"] == fs and r["workload"] == wl for r in records)


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


def main_workloads(records, fs):
    """The 64 KiB streams of every target, and the copy where it ran."""
    return [wl for wl in ("read", "write", "copy")
            if wl != "copy" or planned(records, fs, wl)]


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


def hot_ratio(records, fs, kernel, wl, mode):
    """The hot reader's steady reads/s beside @wl/@mode over alone."""
    solo = pick(records, fs, "neighbour-solo", kernel, "buffered")
    run = pick(records, fs, wl, kernel, mode)
    if not solo or not run or not solo["hot"]["iops_steady"]:
        return None
    return run["hot"]["iops_steady"] / solo["hot"]["iops_steady"]


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


def other_targets(records, fs):
    out = []
    for wl in main_workloads(records, fs):
        pb, _, _, ob = compared_runs(records, fs, wl)
        r = ratio(pb, ob)
        out.append(ratio_target("%s: patched buffered / pristine buffered"
                                % wl, r, "within 3% (>= 0.97x)",
                                at_least(r, 0.97)))
    for wl in main_workloads(records, fs):
        _, pu, pd, _ = compared_runs(records, fs, wl)
        out.append(ratio_target("%s: uncached / O_DIRECT" % wl,
                                ratio(pu, pd), "report", None))
    return out


def whole_run_mbps(r):
    """uncached_bench's MB/s as fio counts them: over the whole run, and
    for writes with the final fsync (fio's --end_fsync=1 counts it)."""
    if not r or not r.get("seconds"):
        return None
    secs = r["seconds"]
    if r["op"] != "read" and r.get("fsync_s"):
        secs += r["fsync_s"]
    return r["mb"] / secs


def whole_ratio(a, b):
    wa, wb = whole_run_mbps(a), whole_run_mbps(b)
    return wa / wb if wa is not None and wb else None


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


def direction(r):
    """What a ratio of uncached over buffered says: +1 faster, -1 slower,
    0 equal or unknown."""
    if r is None or r == 1.0:
        return 0
    return 1 if r > 1.0 else -1


NOISE = 0.03	# one run each: a few percent either way is noise


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


TOOLS_TEXT = """The same workloads run by both programs in the same boot: %s, built
static from the vendored source (scripts/build-fio.sh), `uncached=1`
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


NEIGHBOUR_CASES = (("neighbour-solo", "buffered", "nothing (alone)"),
                   ("neighbour-read", "buffered", "buffered read stream"),
                   ("neighbour-read", "uncached", "uncached read stream"),
                   ("neighbour-write", "buffered", "buffered write stream"),
                   ("neighbour-write", "uncached", "uncached write stream"))

NEIGHBOUR_TEXT = """\
Why people want the flag: a "hot" reader doing random 4 KiB buffered reads
of a file of 30%% of the guest's MemTotal (%s), read once fully before the
clock starts, alone and beside one stream: a sequential 64 KiB reader of a
data set file (%s, more than the RAM) or a writer of a new file, buffered or
uncached. *hit rate*: the share of its reads whose page cachestat() found
cached just before the read. Reads/s, MB/s and hit rate are those of the
stream's steady window (the seconds after the page cache filled, or the
last half); */ alone*: its reads/s over those of the same kernel's run
alone. The hot file's pages cached at the end and evicted meanwhile come
from cachestat() of the whole file. The hot reader and the stream share the
guest's CPUs, so */ alone* counts CPU time taken by the stream and by
reclaim as well as cache misses; the hit rate is the page cache's part."""


def neighbour_section(records, fs):
    kernels = sorted({r["kernel"] for r in records},
                     key=lambda k: (KERNEL_ORDER + (k,)).index(k))
    runs = [(r, what) for k in kernels for wl, mode, what in NEIGHBOUR_CASES
            for r in records if r["kernel"] == k and r["fs"] == fs and
            r["tool"] == "bench" and r["workload"] == wl and
            r["mode"] == mode]
    if not runs:
        return []
    hot = next((r["hot"] for r, _ in runs if r["status"] == "ok"), None)
    # a run that failed has no measures: describe the ones that ran
    stream = next((r for r, _ in runs if r["threads"] and
                   r["status"] == "ok"), None)
    md = ["", "### %s: neighbour, a hot reader beside a stream" % fs, "",
          NEIGHBOUR_TEXT % (
              fmt(hot["size_mb"] if hot else None, 0, " MB"),
              fmt(stream["filesize"] / MB if stream and stream.get("filesize")
                  else None, 0, " MB")), "",
          "| kernel | beside | hot reads/s | hot MB/s | hit rate | / alone | "
          "hot file cached at the end MB (pages evicted) | stream MB/s steady "
          "| page cache peak MB | kswapd CPU s |",
          "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r, what in runs:
        if r["status"] != "ok":
            md.append("| %s | %s | %s |  |  |  |  |  |  |  |" % (
                r["kernel"], what, r["status"]))
            continue
        h = r["hot"]
        cells = (r["kernel"], what, fmt(h["iops_steady"], 0),
                 fmt(h["mbps_steady"]), fmt(h["hit_pct_steady"], 1, "%"),
                 fmt_ratio(hot_ratio(records, fs, r["kernel"], r["workload"],
                                     r["mode"])),
                 "%s (%d)" % (fmt(h["cached_after_mb"], 0), h["evicted"]),
                 fmt(r["mbps_steady"]) if r["threads"] else "-",
                 fmt(r["cache_peak_mb"], 0), fmt(r["kswapd_s"], 2))
        md.append("| " + " | ".join(cells) + " |")
    return md


GAP_TEXT = """\
How uncached I/O differs from O_DIRECT: an uncached read still goes
through the page cache. The kernel allocates folios, reads into them (with
readahead, so the device sees 128 KiB requests where 64 KiB O_DIRECT reads
send 64 KiB), copies the data to the user buffer and then removes the
folios again; O_DIRECT moves the data between the device and the user
buffer with no folio and no copy, one request per call. An uncached write
copies into folios and dirties them; the flusher writes them behind in
large requests and the folios are dropped when that writeback completes;
O_DIRECT writes submit the user buffer directly, one request per call.
Which is faster depends on whether the copy (expensive under TCG) or the
request size and count matter more. What uncached I/O always buys over
O_DIRECT is the buffered semantics (no alignment rules, coherent with
cached readers and writers of the same file, readahead) without filling
the page cache."""


RAW_TEXT = """\
%s is a raw block device: the data set is the NVMe disk %s-data itself,
thread i reading or writing its bytes [i x size, (i + 1) x size) through
the device file; its page cache is the device's (Buffers in /proc/meminfo).
*copy*: one thread reads that region in 64 KiB calls and writes each block
to the same offset of a second raw disk, %s-dst, like dd, with the mode on
both sides (uncached: RWF_UNCACHED on the reads and the writes; direct:
both devices opened with O_DIRECT); its MB/s count the bytes copied."""


def fs_section(records, fs, plots, raw):
    md = ["## %s" % fs, ""]
    if raw:
        md += [RAW_TEXT % (fs, fs, fs), ""]
    md += ["### Targets (one run, measured)",
           "", "| what | measured | target | |", "|---|---|---|---|"]
    md += read_targets(records, fs) + write_targets(records, fs)
    md += copy_targets(records, fs) + cpu_targets(records, fs)
    md += neighbour_targets(records, fs) + other_targets(records, fs)
    md += ["", "### Ratios of the steady MB/s", ""] + ratio_rows(records, fs)
    for wl in workloads(records, fs):
        md += ["", "### %s: %s" % (fs, wl), ""]
        md += summary_table(records, fs, wl)
        if (fs, wl) in plots:
            md += ["", "![%s %s](%s)" % (fs, wl, plots[(fs, wl)])]
        md += ["", "<details><summary>per second (MB/s, page cache MB)"
               "</summary>", ""] + per_second_table(records, fs, wl)
        md += ["", "</details>"]
    return md + neighbour_section(records, fs) + [""]


def targets(records):
    """The filesystems and raw devices of the records, in their order."""
    fss = []
    for r in records:
        if r["fs"] not in fss:
            fss.append(r["fs"])
    return fss


def header(args, records):
    fss = [fs for fs in targets(records) if fs not in args.raw.split()]
    raw = [fs for fs in targets(records) if fs in args.raw.split()]
    return ["# make bench: buffered vs RWF_UNCACHED vs O_DIRECT", "",
            "Measured %s. Guest: %s RAM, %s vCPUs (online CPUs the guest "
            "reported: %s), TCG (QEMU, no KVM), one "
            "emulated NVMe disk per filesystem and two raw ones per block "
            "device target (host images, cache=unsafe); "
            "data set %s per target (one file, or region of the raw disk, "
            "per vCPU, one thread "
            "each). Kernels: %s (performance config: no lockdep, KASAN or "
            "DEBUG_VM). Filesystems: %s. Raw block devices: %s." % (
                time.strftime("%Y-%m-%d %H:%M"), args.mem, args.smp,
                args.online_cpus.replace(",", ", "), args.data,
                ", ".join(args.kernels), ", ".join(fss) or "none",
                ", ".join(raw) or "none"), "",
            "MB = 2^20 bytes. *steady*: mean MB/s of the seconds after the "
            "page cache first filled (the first second kswapd ran), or of the "
            "last half of the run when it never filled. *first 5 s*: mean of "
            "seconds 1-5. *kswapd CPU*: CPU time of the kswapd threads during "
            "the run; *kernel CPU*: system + irq + softirq time of all CPUs "
            "(/proc/stat). *page cache*: Cached + Buffers of /proc/meminfo "
            "(a block device's pages count in Buffers). *device MB (KB per request)*: what the NVMe disks "
            "read (reads) or wrote (writes), or both (copies), during the "
            "run, and the mean "
            "request size (/proc/diskstats): readahead and writeback "
            "batching show there. Writes: MB/s count the write calls only; "
            "the fsync "
            "at the end is timed separately. One run each: the guest shares "
            "two host cores with QEMU's own threads, so differences of a few "
            "percent are noise. No timing is judged.", ""]


def report(args, records, problems, plots):
    md = header(args, records)
    if problems:
        md += ["**Runs that could not run:**", ""]
        md += ["- " + p for p in problems] + [""]
    for fs in targets(records):
        md += fs_section(records, fs, plots, fs in args.raw.split())
    md += ["## Uncached vs O_DIRECT", "", GAP_TEXT, ""]
    md += tools_section(records)
    return "\n".join(md)


# ---- plots ----

def plot(out, records, fs, wl):
    runs = sorted((r for r in records if r["fs"] == fs and r["workload"] == wl
                   and r["tool"] == "bench" and r["status"] == "ok"
                   and r["per_second"]), key=sort_key)
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


# ---- make demo ----

def demo_conclusion(b, u):
    """The demo's closing words, from its numbers only."""
    r, c = ratio(u, b), cpu_ratio(u, b)
    if r is None:
        speed = "could not be compared with buffered ones"
    elif r >= 1.03:
        speed = "faster: %.2fx buffered steady" % r
    elif r <= 0.97:
        speed = "slower: %.2fx buffered steady" % r
    else:
        speed = "as fast: %.2fx buffered steady, within the noise" % r
    text = "Uncached reads were %s (%.0f vs %.0f MB/s)" % (
        speed, u["mbps_steady"], b["mbps_steady"])
    if c is not None:
        text += " and used %.2fx the kernel CPU per GiB read (%.2f vs %.2f " \
                "s/GiB, all CPUs)" % (c, cpu_per_gib(u), cpu_per_gib(b))
    gb = b["cache_peak_mb"] - b["cache_start_mb"]
    gu = u["cache_peak_mb"] - u["cache_start_mb"]
    kept = u["mb"] and gu <= 0.02 * u["mb"]
    quiet = u["kswapd_s"] <= max(0.01 * b["kswapd_s"], 0.01)
    text += (". While reading %.0f MB they %s the page cache by %.0f MB "
             "(buffered: grew by %.0f MB while reading %.0f MB), and kswapd "
             "used %.2f s of CPU (buffered: %.2f s)" % (
                 u["mb"], "grew" if gu >= 0 else "shrank", abs(gu), gb,
                 b["mb"], u["kswapd_s"], b["kswapd_s"]))
    if kept and quiet:
        text += ": they streamed through the file without pushing other " \
                "data out of memory."
    elif kept:
        text += ": the page cache stayed put, but kswapd was not idle."
    else:
        text += ": here they did fill memory."
    return text


def side_by_side(channel_log):
    """make demo's closing summary of the buffered and uncached reads."""
    nonce_file = os.path.join(os.path.dirname(channel_log), "nonce")
    chan = Channel(channel_log, open(nonce_file).read().strip())
    b = chan.summary.get("demo/buffered")
    u = chan.summary.get("demo/uncached")
    if not b or not u or chan.exit != 0:
        return 1
    cb = chan.cachestat.get("demo/buffered", {}).get("cached_mb")
    cu = chan.cachestat.get("demo/uncached", {}).get("cached_mb")
    rows = [("MB/s in the first 5 seconds", "mbps_first5", 1),
            ("MB/s once steady (*)", "mbps_steady", 1),
            ("kswapd CPU, seconds", "kswapd_s", 2),
            ("kernel CPU, seconds (both CPUs)", "sys_s", 1),
            ("page cache at its peak, MB", "cache_peak_mb", 0)]
    print("\n== Side by side ==\n")
    print("%-34s %10s %10s" % ("", "buffered", "uncached"))
    for name, key, d in rows:
        print("%-34s %10s %10s" % (name, fmt(b[key], d), fmt(u[key], d)))
    print("%-34s %10s %10s" % ("kernel CPU per GiB read, seconds",
                               fmt(cpu_per_gib(b), 2), fmt(cpu_per_gib(u), 2)))
    print("%-34s %10s %10s" % ("the file's pages cached after, MB",
                               fmt(cb, 0), fmt(cu, 0)))
    print("\n(*) steady: the mean of the seconds after the page cache filled "
          "(buffered: from second %d),\n    or of the last half of the run "
          "when it never filled (uncached: seconds %d-%d)." % (
              b["steady_from"], u["steady_from"], u["steady_to"]))
    print("\n" + textwrap.fill(demo_conclusion(b, u), 78))
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--side-by-side":
        return side_by_side(sys.argv[2])
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
    ap.add_argument("kernels", nargs="+")
    args = ap.parse_args()
    records, problems = [], []
    for k in args.kernels:
        recs, probs = load_kernel(args.out, k)
        records += recs
        problems += probs
    plots = {}
    for r in records:
        key = (r["fs"], r["workload"])
        if r["tool"] == "bench" and not is_neighbour(r) and key not in plots:
            png = plot(args.out, records, *key)
            if png:
                plots[key] = png
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"guest": {"mem": args.mem, "smp": args.smp,
                             "online_cpus": args.online_cpus,
                             "data_set": args.data,
                             "raw_block_devices": args.raw.split()},
                   "problems": problems, "records": records}, f, indent=1)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(report(args, records, problems, plots))
    for p in problems:
        sys.stderr.write("bench-report: %s\n" % p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
