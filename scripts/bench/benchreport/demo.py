"""make demo's closing summary (bench-report.py --side-by-side).

side_by_side reads the demo's channel.log and prints the buffered and
uncached reads side by side; demo_conclusion words what the numbers say.
"""
import os
import textwrap

from .compute import cpu_per_gib, cpu_ratio, fmt, ratio
from .load import Channel


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
