"""Lookups in the records and the numbers the report compares.

find/pick/compared_runs: the run of a kernel, target, workload and mode
that ran ("ok"), or None; ratio, cpu_per_gib, cpu_ratio, hot_ratio,
whole_run_mbps, whole_ratio: the figures compared, None where a run or a
value is missing; fmt and fmt_ratio print them ("-" for None);
sort_key, workloads, planned, main_workloads, targets: which runs a table
shows, in what order. No markdown here.
"""

KERNEL_ORDER = ("pristine", "patched")
MODE_ORDER = ("buffered", "uncached", "direct")


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


def planned(records, fs, wl):
    """Did the matrix have workload @wl on @fs (whether it ran or not)?"""
    return any(r["fs"] == fs and r["workload"] == wl for r in records)


def main_workloads(records, fs):
    """The 64 KiB streams of every target, and the copy where it ran."""
    return [wl for wl in ("read", "write", "copy")
            if wl != "copy" or planned(records, fs, wl)]


def targets(records):
    """The filesystems and raw devices of the records, in their order."""
    fss = []
    for r in records:
        if r["fs"] not in fss:
            fss.append(r["fs"])
    return fss


def hot_ratio(records, fs, kernel, wl, mode):
    """The hot reader's steady reads/s beside @wl/@mode over alone."""
    solo = pick(records, fs, "neighbour-solo", kernel, "buffered")
    run = pick(records, fs, wl, kernel, mode)
    if not solo or not run or not solo["hot"]["iops_steady"]:
        return None
    return run["hot"]["iops_steady"] / solo["hot"]["iops_steady"]


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


def direction(r):
    """What a ratio of uncached over buffered says: +1 faster, -1 slower,
    0 equal or unknown."""
    if r is None or r == 1.0:
        return 0
    return 1 if r > 1.0 else -1


def split_rounds(records):
    """(the records of the first boot of each kernel, those of the further
    rounds); a record without a round (an older results.json) is of the
    first."""
    first = [r for r in records if r.get("round", 1) == 1]
    return first, [r for r in records if r.get("round", 1) != 1]


def rounds_of(records):
    """How many rounds the records have."""
    return max([r.get("round", 1) for r in records] or [1])


def kernels_of(records):
    """The kernels of the records, in their order."""
    return list(dict.fromkeys(r["kernel"] for r in records))
