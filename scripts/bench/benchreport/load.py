"""Records from what the guests sent, and results.json.

Channel parses one boot's channel.log (the results port: uncached_bench's
per-second and summary lines, fio's JSON, the exit statuses);
load_kernel turns OUT/<kernel>/expected and that log into one record per
run, with a status and the problems to report. write_results and
read_results write and read back OUT/results.json.
"""
import json
import os

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


def boot_dir(out, kernel, round_no=1):
    """The directory of a boot's logs (bench.sh's boot_dir)."""
    if round_no == 1:
        return os.path.join(out, kernel)
    return os.path.join(out, "rounds", "%s-%d" % (kernel, round_no))


def load_kernel(out, kernel, round_no=1):
    """The records of one kernel's boot in round @round_no."""
    kdir = boot_dir(out, kernel, round_no)
    who = kernel if round_no == 1 else "%s (round %d)" % (kernel, round_no)
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
        rec = {"kernel": kernel, "round": round_no, "fs": fs,
               "workload": wl, "tool": tool,
               "op": op, "mode": mode, "block": bs, "threads": int(threads),
               "run_seconds": int(secs),
               "readahead_kb": int(ra) if ra != "-" else None,
               "options": opts if opts != "-" else ""}
        label = label_of(fs, wl, mode, tool)
        fill_record(rec, label, chan)
        if rec["status"] != "ok":
            problems.append("%s %s: %s" % (who, label, rec["status"]))
        records.append(rec)
    if chan is None:
        problems.append("%s: no channel.log (the guest did not run)" % who)
    elif chan.exit is None:
        problems.append("%s: the guest did not finish (see %s/console.log)"
                        % (who, kdir))
    if chan is not None:
        for label, rc in chan.rc.items():
            if label.endswith("/prepare") and rc:
                problems.append("%s %s: exit status %d" % (who, label, rc))
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


# ---- results.json ----

def write_results(out, args, problems, records):
    """OUT/results.json: the guest's settings, the problems, the records."""
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"guest": {"mem": args.mem, "smp": args.smp,
                             "online_cpus": args.online_cpus,
                             "data_set": args.data,
                             "raw_block_devices": args.raw.split()},
                   "problems": problems, "records": records}, f, indent=1)


def read_results(path):
    """What write_results wrote: (guest, problems, records)."""
    with open(path) as f:
        data = json.load(f)
    return data["guest"], data["problems"], data["records"]
