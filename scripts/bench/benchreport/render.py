"""report.md: the header, a section per target, the closing sections.

header describes the guest and the measures; fs_section puts together a
target's targets table, ratios, per-workload tables (with the plot of
each when there is one) and neighbour section; report adds the runs that
could not run, the patched-vs-pristine section over the rounds of boots,
the uncached-vs-O_DIRECT text and the tools section.
"""
import time

from .compute import rounds_of, split_rounds, targets, workloads
from .rounds import rounds_section
from .tables import (neighbour_section, per_second_table, ratio_rows,
                     summary_table)
from .targets_table import (copy_targets, cpu_targets, neighbour_targets,
                            other_targets, read_targets, write_targets)
from .tools import tools_section


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


def fs_section(records, fs, plots, raw, every_round):
    md = ["## %s" % fs, ""]
    if raw:
        md += [RAW_TEXT % (fs, fs, fs), ""]
    md += ["### Targets (one run, measured)",
           "", "| what | measured | target | |", "|---|---|---|---|"]
    md += read_targets(records, fs) + write_targets(records, fs)
    md += copy_targets(records, fs) + cpu_targets(records, fs)
    md += neighbour_targets(records, fs)
    md += other_targets(records, fs, every_round)
    md += ["", "### Ratios of the steady MB/s", ""]
    md += ratio_rows(records, fs, every_round)
    for wl in workloads(records, fs):
        md += ["", "### %s: %s" % (fs, wl), ""]
        md += summary_table(records, fs, wl)
        if (fs, wl) in plots:
            md += ["", "![%s %s](%s)" % (fs, wl, plots[(fs, wl)])]
        md += ["", "<details><summary>per second (MB/s, page cache MB)"
               "</summary>", ""] + per_second_table(records, fs, wl)
        md += ["", "</details>"]
    return md + neighbour_section(records, fs) + [""]


def header(args, records, when=None):
    """The title and what was measured how; @when: the date given
    (a time.struct_time), now when None."""
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
                time.strftime("%Y-%m-%d %H:%M", when or time.localtime()),
                args.mem, args.smp,
                args.online_cpus.replace(",", ", "), args.data,
                ", ".join(args.kernels), ", ".join(fss) or "none",
                ", ".join(raw) or "none"), "",
            "MB = 2^20 bytes. *steady*: mean MB/s of the seconds after the "
            "page cache first filled (the first second kswapd ran), or of the "
            "last half of the run when it never filled. *first 5 s*: mean of "
            "seconds 1-5. *kswapd CPU*: CPU time of the kswapd threads during "
            "the run; *kernel CPU*: system + irq + softirq time of all CPUs "
            "(/proc/stat). *page cache*: Cached + Buffers of /proc/meminfo "
            "(a block device's pages count in Buffers). *device MB (KB per "
            "request)*: what the NVMe disks "
            "read (reads) or wrote (writes), or both (copies), during the "
            "run, and the mean "
            "request size (/proc/diskstats): readahead and writeback "
            "batching show there. Writes: MB/s count the write calls only; "
            "the fsync "
            "at the end is timed separately. One run each (the tables show the "
            "first boot of each kernel; \"Patched vs pristine\" has the "
            "buffered and O_DIRECT runs of every boot): the guest shares "
            "two host cores with QEMU's own threads, so differences of a few "
            "percent are noise. No timing is judged.", ""]


def report(args, every_round, problems, plots, when=None):
    """report.md's text from the records of every round; @when: as for
    header."""
    records = split_rounds(every_round)[0]
    md = header(args, records, when)
    if problems:
        md += ["**Runs that could not run:**", ""]
        md += ["- " + p for p in problems] + [""]
    for fs in targets(records):
        md += fs_section(records, fs, plots, fs in args.raw.split(),
                         every_round)
    md += rounds_section(every_round, rounds_of(every_round))
    md += ["## Uncached vs O_DIRECT", "", GAP_TEXT, ""]
    md += tools_section(records)
    return "\n".join(md)
