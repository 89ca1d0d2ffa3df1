"""The tables of one target's workloads and of its neighbour runs.

summary_table: a row per kernel and mode of a workload (MB/s, CPU, page
cache, device I/O); per_second_table: its seconds side by side;
ratio_rows: the ratios of the steady MB/s per workload;
neighbour_section: the hot reader beside a stream (--hot runs).
"""
from .compute import (KERNEL_ORDER, compared_runs, cpu_per_gib, cpu_ratio,
                      fmt, fmt_ratio, hot_ratio, ratio, sort_key, workloads)
from .load import MB
from .rounds import buffered_boots, median_ratio


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
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
                     "| %s | %s | %s |"
                     % (r["kernel"], r["mode"], fmt(r["mbps_steady"]),
                        fmt(r["mbps_first5"]), fmt(r["mbps_total"]),
                        fmt(r["kswapd_s"], 2), fmt(r["sys_s"]),
                        fmt(cpu_per_gib(r), 2),
                        fmt(r["cache_peak_mb"], 0),
                        fmt(r["cache_final_mb"], 0),
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


def no_regression_cell(records, fs, wl, every_round):
    """Patched over pristine buffered: the first boots' ratio, and in
    brackets the ratio of the medians of every boot where @wl was
    repeated (rounds.py)."""
    pb, _, _, ob = compared_runs(records, fs, wl)
    cell = fmt_ratio(ratio(pb, ob))
    if buffered_boots(every_round, fs, wl) > 1:
        cell += " (%s)" % fmt_ratio(median_ratio(every_round, fs, wl,
                                                 "buffered"))
    return cell


def ratio_rows(records, fs, every_round):
    """@every_round: the records of all rounds (the no-regression column)."""
    rows = []
    for wl in workloads(records, fs):
        pb, pu, pd, ob = compared_runs(records, fs, wl)
        rows.append("| %s | %s | %s | %s | %s |" % (
            wl, fmt_ratio(ratio(pu, pb)), fmt_ratio(ratio(pu, pd)),
            no_regression_cell(records, fs, wl, every_round),
            fmt_ratio(cpu_ratio(pu, pb))))
    return ["| workload | uncached / buffered | uncached / direct | "
            "patched buffered / pristine buffered: first boots (medians "
            "of every boot) | kernel CPU s/GiB, uncached / buffered |",
            "|---|--:|--:|--:|--:|"] + rows


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
