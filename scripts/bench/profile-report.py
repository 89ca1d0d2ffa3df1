#!/usr/bin/env python3
"""profile-report.py [--top N] [--kernel NAME] SHARE - the report of make profile.

SHARE is what initramfs/profile-guest.sh wrote: profile.conf (freq=, cpus=,
kernel=) and per run TARGET-OP-MODE.txt (perf report: samples per comm, dso
and symbol, every CPU), TARGET-OP-MODE.json (uncached_bench's summary,
whose "mb" is what the run moved) and TARGET-OP-MODE.vmstat-before/-after
(/proc/vmstat around the run); fio's runs, TARGET-OP-MODE-fio, have
fio's JSON output (.fio.json) in place of the summary. Prints markdown on
stdout: per target and op, the kernel CPU time per GiB moved of the top N
kernel functions, buffered beside uncached, and the same per kind of task;
with fio's runs, the two tools side by side. A sample is
1000/freq ms of one CPU; idle is the idle task's samples in the idle loop
(its interrupts and softirqs count as kernel time).
"""
import argparse
import json
import os
import re
import sys

IDLE_SYMS = re.compile(r'^(default_idle|default_idle_call|do_idle|arch_cpu_idle|'
                       r'(pv_)?native_safe_halt|cpu_idle_poll|acpi_idle_\w+|'
                       r'mwait_idle\w*|intel_idle\w*|poll_idle|cpuidle_enter\w*|'
                       r'cpu_startup_entry|__cpuidle_text_start)$')
# The summary's columns: the drop of uncached folios (self time of these
# functions: the removal from the page cache, the free of the folios an
# uncached read dropped, which a buffered read enters for a few ms per GiB,
# and the series' own functions) and the copy between the page cache and
# the user's buffer (the same work in both modes).
DROP_SYMS = re.compile(r'uncached|dropbehind|^(folio_unmap_invalidate|__folio_put|folios_put_refs)$')
COPY_SYMS = re.compile(r'^(rep_movs_alternative|_copy_(to|from)_iter|copy_page_(to|from)_iter)$')
MODES = ('buffered', 'uncached')
OPS = ('read', 'write')
LINE = re.compile(r'^\s*(\d+)\s+(\S.*?)\s+(\[[^\]]+\]|\S+)\s+\[([k.])\]\s+(.*?)\s*$')


def die(msg):
    sys.exit(f'profile-report.py: error: {msg}')


def task_kind(comm):
    """A task's kind: its comm without per-instance numbers."""
    if comm.startswith('kworker'):
        return 'kworker'
    if comm.startswith('swapper'):
        return 'interrupts (idle task)'
    if comm.startswith('uncached_bench'):
        return 'uncached_bench'
    if comm == 'fio':
        return 'fio'
    return re.sub(r'([/-]\d+|\d+)$', '', comm)


def vmstat_delta(share, name):
    """/proc/vmstat after the run minus before, by counter."""
    snap = []
    for when in ('before', 'after'):
        with open(os.path.join(share, f'{name}.vmstat-{when}')) as f:
            snap.append({k: int(v) for k, v in (line.split() for line in f)})
    return {k: v - snap[0].get(k, 0) for k, v in snap[1].items()}


def fio_summary(path, name):
    """The fields of an uncached_bench summary that fio's JSON output has:
    MB moved (MiB) and MB/s over the whole run."""
    with open(path) as f:
        text = f.read()
    job = json.loads(text[text.index('{'):])['jobs'][0]
    op = 'read' if job['read']['io_bytes'] else 'write'
    return {'label': name, 'mb': job[op]['io_bytes'] / 2**20,
            'mbps_total': job[op]['bw_bytes'] / 2**20}


def read_run(share, name):
    """(samples, summary): samples is a list of (n, comm, kernel, sym);
    the summary gets the run's vmstat deltas under 'vmstat'."""
    samples = []
    path = os.path.join(share, name + '.txt')
    try:
        with open(path) as f:
            for line in f:
                if not line.strip() or line.startswith('#'):
                    continue
                m = LINE.match(line)
                if not m:
                    die(f'{path}: cannot read the line {line.rstrip()!r}')
                n, comm, _dso, level, sym = m.groups()
                samples.append((int(n), comm, level == 'k', sym))
        if name.endswith('-fio'):
            summary = fio_summary(os.path.join(share, name + '.fio.json'), name)
        else:
            with open(os.path.join(share, name + '.json')) as f:
                text = f.read().split(' ', 1)[1]
            summary = json.loads(text)
        summary['vmstat'] = vmstat_delta(share, name)
    except (OSError, IndexError, KeyError, ValueError) as e:
        die(f'{name}: {e}')
    if not samples:
        die(f'{path}: no samples')
    return samples, summary


def per_gib(samples, summary, freq):
    """Kernel ms per GiB by symbol and by task kind, plus the totals."""
    gib = summary['mb'] / 1024
    if gib <= 0:
        die(f'{summary["label"]}: the run moved no data')
    scale = 1000.0 / freq / gib
    syms, tasks = {}, {}
    total = {'kernel': 0.0, 'user': 0.0, 'idle': 0.0}
    for n, comm, kernel, sym in samples:
        ms = n * scale
        if comm.startswith('swapper') and IDLE_SYMS.match(sym):
            total['idle'] += ms
        elif not kernel:
            total['user'] += ms
        else:
            total['kernel'] += ms
            syms[sym] = syms.get(sym, 0.0) + ms
            kind = task_kind(comm)
            tasks[kind] = tasks.get(kind, 0.0) + ms
    return syms, tasks, total


def ratio(a, b):
    return f'{a / b:.2f}x' if b else '-'


def requests(summary, op):
    """The device requests per GiB moved, and their mean size."""
    key = 'rd' if op == 'read' else 'wr'
    ios, mb = summary[f'dev_{key}_ios'], summary[f'dev_{key}_mb']
    if not ios:
        return '0'
    return f'{ios / (summary["mb"] / 1024):.0f} ({mb * 1024 / ios:.0f} KiB each)'


def per_gib_count(summary, *counters):
    """The sum of vmstat @counters per GiB moved."""
    n = sum(summary['vmstat'].get(c, 0) for c in counters)
    return f'{n / (summary["mb"] / 1024):.0f}'


def pages_per_dropped_folio(summary, op):
    """The 4 KiB pages moved per folio the uncached run dropped."""
    dropped = summary['vmstat'].get(f'uncached_{op}_drop', 0)
    return f'{summary["mb"] * 256 / dropped:.1f}' if dropped else '-'


def table(rows, data, top=None):
    """Rows of 'name | buffered | uncached | difference', largest first;
    names under 0.5 ms per GiB in both runs are left out."""
    names = sorted(set().union(*(d.keys() for d in data)),
                   key=lambda k: (-max(d.get(k, 0.0) for d in data), k))
    if top:
        names = names[:top]
    for k in names:
        b, u = (round(d.get(k, 0.0)) for d in data)
        if b or u:
            rows.append(f'| `{k}` | {b} | {u} | {u - b:+d} |')


def load(share, target, op, freq, suffix=''):
    """Per mode: (summary, ms/GiB by symbol, by task, totals)."""
    runs = {}
    for mode in MODES:
        samples, summary = read_run(share, f'{target}-{op}-{mode}{suffix}')
        runs[mode] = (summary,) + per_gib(samples, summary, freq)
    return runs


def sum_syms(syms, pattern):
    return round(sum(ms for sym, ms in syms.items() if pattern.search(sym)))


def summary_table(loaded):
    """One row per target and op: the ratios, the copy, the drop beside
    the reclaim it replaces."""
    out = ['| target, op | MB/s uncached/buffered | kernel CPU per GiB uncached/buffered | '
           'copy to/from user, buffered / uncached | drop path (uncached) | '
           'kswapd (buffered) | pages moved per dropped folio |',
           '| --- | ---: | ---: | ---: | ---: | ---: | ---: |']
    for (target, op), runs in loaded:
        (sb, symb, taskb, totb), (su, symu, _, totu) = runs['buffered'], runs['uncached']
        out.append(f'| {target} {op} | {ratio(su["mbps_total"], sb["mbps_total"])} | '
                   f'{ratio(totu["kernel"], totb["kernel"])} | '
                   f'{sum_syms(symb, COPY_SYMS)} / {sum_syms(symu, COPY_SYMS)} | '
                   f'{sum_syms(symu, DROP_SYMS)} | {round(taskb.get("kswapd", 0))} | '
                   f'{pages_per_dropped_folio(su, op)} |')
    return out + ['', 'Columns 4-6 in kernel ms per GiB moved. The drop path: self time of '
                  '`folio_unmap_invalidate`, `__folio_put`, `folios_put_refs` and every function named '
                  '`*uncached*` or `*dropbehind*`; kswapd: all its kernel time.', '']


def section(target, op, runs, top):
    (sb, symb, taskb, totb), (su, symu, tasku, totu) = runs['buffered'], runs['uncached']
    out = [f'## {target} {op}', '',
           f'uncached {su["mbps_total"]:.0f} MB/s, buffered {sb["mbps_total"]:.0f} MB/s '
           f'({ratio(su["mbps_total"], sb["mbps_total"])}); '
           f'kernel CPU per GiB uncached/buffered **{ratio(totu["kernel"], totb["kernel"])}** '
           f'({totu["kernel"]:.0f} vs {totb["kernel"]:.0f} ms/GiB); '
           f'page cache peak {su["cache_peak_mb"]:.0f} vs {sb["cache_peak_mb"]:.0f} MB; '
           f'device {op} requests per GiB {requests(su, op)} vs {requests(sb, op)}; '
           f'folios per GiB: uncached dropped {per_gib_count(su, f"uncached_{op}_drop")} '
           f'({pages_per_dropped_folio(su, op)} pages moved per folio), buffered reclaimed '
           f'{per_gib_count(sb, "pgsteal_kswapd", "pgsteal_direct")} pages.', '',
           '| kernel ms per GiB | buffered | uncached | uncached - buffered |',
           '| --- | ---: | ---: | ---: |']
    for what in ('kernel', 'user', 'idle'):
        b, u = round(totb[what]), round(totu[what])
        out.append(f'| **{what}** (all CPUs) | {b} | {u} | {u - b:+d} |')
    out += ['', '| kernel ms per GiB, by task | buffered | uncached | uncached - buffered |',
            '| --- | ---: | ---: | ---: |']
    table(out, (taskb, tasku))
    out += ['', f'| kernel ms per GiB, top {top} functions (self) | buffered | uncached | '
            'uncached - buffered |', '| --- | ---: | ---: | ---: |']
    table(out, (symb, symu), top)
    return out + ['']


def rest_of(syms, tasks, total):
    """Kernel ms per GiB outside the copy, the drop path and kswapd."""
    return (total['kernel'] - sum_syms(syms, COPY_SYMS) - sum_syms(syms, DROP_SYMS) -
            tasks.get('kswapd', 0))


def tools_row(target, op, mode, bench, fio):
    """One row of the tools table: fio's run beside uncached_bench's."""
    (sb, symb, taskb, totb), (sf, symf, taskf, totf) = bench, fio
    cells = [f'{target} {op} {mode}',
             f'{sb["mbps_total"]:.0f} / {sf["mbps_total"]:.0f} '
             f'({ratio(sf["mbps_total"], sb["mbps_total"])})',
             f'{totb["kernel"]:.0f} / {totf["kernel"]:.0f}']
    for pattern in (COPY_SYMS, DROP_SYMS):
        cells.append(f'{sum_syms(symb, pattern)} / {sum_syms(symf, pattern)}')
    cells.append(f'{round(taskb.get("kswapd", 0))} / {round(taskf.get("kswapd", 0))}')
    cells.append(f'{rest_of(symb, taskb, totb):.0f} / {rest_of(symf, taskf, totf):.0f}')
    for what in ('user', 'idle'):
        cells.append(f'{totb[what]:.0f} / {totf[what]:.0f}')
    return '| ' + ' | '.join(cells) + ' |'


def tools_section(pairs, top):
    """fio beside uncached_bench: per target, op and mode the MB/s and the
    kernel ms per GiB split as the summary splits it, then per uncached
    run the functions whose time differs most between the two tools."""
    out = ['## fio beside uncached_bench', '',
           'The same runs by fio (as make bench runs it: 64 KiB pvsync2 calls, '
           'a thread per file, `--fadvise_hint=0` for reads, `--end_fsync=1` '
           'for writes, on uncached_bench\'s files), profiled the same way. '
           'Each cell: uncached_bench / fio. MB/s over the whole run (MiB; in '
           'brackets fio\'s over uncached_bench\'s); then ms of CPU per GiB moved: '
           'the kernel\'s, split into the copy to/from user, the drop path, '
           'kswapd and the rest, then user time (the tool\'s own code) and idle '
           'time, all CPUs.', '',
           '| target, op, mode | MB/s | kernel | copy | drop path | kswapd | rest | '
           'user | idle |',
           '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
    for (target, op), bench, fio in pairs:
        for mode in MODES:
            out.append(tools_row(target, op, mode, bench[mode], fio[mode]))
    for (target, op), bench, fio in pairs:
        symb, symf = bench['uncached'][1], fio['uncached'][1]
        diff = {k: symf.get(k, 0.0) - symb.get(k, 0.0) for k in set(symb) | set(symf)}
        names = sorted(diff, key=lambda k: (-abs(diff[k]), k))[:top]
        out += ['', f'{target} {op} uncached: the {top} kernel functions whose self time '
                'differs most between the tools (ms per GiB)', '',
                '| function | uncached_bench | fio | fio - uncached_bench |',
                '| --- | ---: | ---: | ---: |']
        for k in names:
            b, f = round(symb.get(k, 0.0)), round(symf.get(k, 0.0))
            out.append(f'| `{k}` | {b} | {f} | {f - b:+d} |')
    return out + ['']


def read_conf(share):
    conf = {}
    try:
        with open(os.path.join(share, 'profile.conf')) as f:
            for line in f:
                k, _, v = line.strip().partition('=')
                conf[k] = v
        conf['freq'] = int(conf['freq'])
    except (OSError, KeyError, ValueError) as e:
        die(f'{share}/profile.conf: {e}')
    return conf


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--top', type=int, default=12)
    ap.add_argument('--kernel', default='patched-perf')
    ap.add_argument('share')
    args = ap.parse_args()
    conf = read_conf(args.share)
    targets = []
    for name in sorted(os.listdir(args.share)):
        m = re.match(r'^(.+)-read-buffered\.txt$', name)
        if m:
            targets.append(m.group(1))
    if not targets:
        die(f'{args.share}: no runs')
    order = {'ext4': 0, 'xfs': 1, 'btrfs': 2, 'blockdev': 3}
    targets.sort(key=lambda t: order.get(t, 9))
    out = ['# make profile: kernel CPU per GiB, buffered and uncached', '',
           f'Kernel {args.kernel} ({conf.get("kernel", "?")}), {conf.get("cpus", "?")} CPUs, '
           f'perf record -a -e cpu-clock at {conf["freq"]} Hz per CPU, one run per row '
           '(uncached_bench, 64 KiB calls, one file or disk region per CPU, caches '
           'dropped before). Times are milliseconds of one CPU per GiB the run moved, '
           'from one run each: ratios, not absolutes (the guest runs under TCG, '
           'which makes some instructions far costlier than hardware does). '
           '"Self" time: a function\'s own samples, not its callees\'. A software '
           'clock cannot interrupt code that runs with interrupts off: time spent '
           'there (under the i_pages lock, say) is booked on the instruction that '
           'turns them back on, in the function that does (`folio_unmap_invalidate`, '
           '`__remove_mapping`), callees under the lock included.', '']
    loaded = [((t, op), load(args.share, t, op, conf['freq'])) for t in targets for op in OPS]
    out += summary_table(loaded)
    for (target, op), runs in loaded:
        out += section(target, op, runs, args.top)
    pairs = [((t, op), runs, load(args.share, t, op, conf['freq'], '-fio'))
             for (t, op), runs in loaded
             if os.path.exists(os.path.join(args.share, f'{t}-{op}-buffered-fio.txt'))]
    if pairs:
        out += tools_section(pairs, args.top)
    print('\n'.join(out))


if __name__ == '__main__':
    main()
