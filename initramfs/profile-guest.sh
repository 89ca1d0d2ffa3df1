#!/bin/bash
# profile-guest.sh [--fio FIO] SHARE BENCH SECONDS FILESIZE TARGET... - the
# guest half of make profile, run in the host-userland guest
# (initramfs/host-init, mode cmd: the disks mounted on /mnt/NAME, the raw
# ones in UNCACHED_<SERIAL>_DEV). For each TARGET (a filesystem mounted on
# /mnt/TARGET, or "blockdev": the raw disk blockdev-data) it writes the
# data set with uncached_bench BENCH (one file, or disk region, of
# FILESIZE per CPU), then for each op (read, write) and mode (buffered,
# uncached) drops the caches and runs uncached_bench for SECONDS under
# `perf record -a -e cpu-clock` (a software clock: TCG has no PMU); with
# --fio, on a filesystem, then fio (a static build) the same way on the
# same files: as make bench runs it (scripts/data/bench.list: 64 KiB pvsync2
# calls, a thread per file, --fadvise_hint=0 for reads, --end_fsync=1 for
# writes). It writes to SHARE, per run TARGET-OP-MODE (fio's:
# TARGET-OP-MODE-fio):
#   .json  uncached_bench's summary line (its MB, the bytes the run moved);
#          fio's runs: fio's JSON output instead (.fio.json)
#   .txt   perf report: samples per comm and kernel symbol, every CPU
#   .err   what perf and the tool said on stderr
#   .vmstat-before, .vmstat-after   /proc/vmstat around the run
# and SHARE/profile.conf (the sampling frequency, the CPUs). Exit status:
# 0 when every run and report worked.
set -euo pipefail

FREQ=999	# samples per second and CPU (not a multiple of the 250 Hz tick)
OPS=(read write)
MODES=(buffered uncached)

die() {
	echo "profile-guest: error: $*" >&2
	exit 1
}

# data_path TARGET: uncached_bench's -f for TARGET: the file prefix on a
# filesystem, the raw disk's node for blockdev.
data_path() {
	if [ "$1" = blockdev ]; then
		[ -b "${UNCACHED_BLOCKDEV_DATA_DEV:-}" ] ||
			die "no raw disk blockdev-data (UNCACHED_BLOCKDEV_DATA_DEV)"
		echo "$UNCACHED_BLOCKDEV_DATA_DEV"
	else
		mountpoint -q "/mnt/$1" || die "/mnt/$1 is not mounted"
		echo "/mnt/$1/data"
	fi
}

# record NAME CMD...: run CMD under perf record, every CPU, after sync and
# a cache drop, /proc/vmstat saved around it; its stdout in /tmp/tool.out.
record() {
	local name=$1
	shift
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cp /proc/vmstat "$name.vmstat-before"
	perf record -q -a -e cpu-clock -F "$FREQ" -o "/tmp/perf.data" -- "$@" \
		>"/tmp/tool.out" 2>"$name.err" ||
		die "${name##*/}: perf record or $1 failed (see $name.err)"
	cp /proc/vmstat "$name.vmstat-after"
}

# report NAME: perf report of the last record: samples per comm and symbol.
report() {
	perf report -i /tmp/perf.data --stdio --no-children -q \
		--sort comm,dso,sym -F sample,comm,dso,sym >"$1.txt" 2>>"$1.err" ||
		die "${1##*/}: perf report failed (see $1.err)"
	rm -f /tmp/perf.data
}

# profile_run TARGET OP MODE DATA: one uncached_bench run under perf.
profile_run() {
	local name="$SHARE/$1-$2-$3" data=$4
	echo "profile-guest: $1 $2 $3 ($SECONDS_PER_RUN s)"
	record "$name" "$BENCH" -f "$data" -m "$3" -o "$2" -b 64K -j "$(nproc)" \
		-s "$FILESIZE" -t "$SECONDS_PER_RUN" --json --label "$1/$2/$3"
	grep '^uncached-bench-summary ' /tmp/tool.out >"$name.json" ||
		die "$1 $2 $3: uncached_bench printed no summary"
	report "$name"
}

# fio_run TARGET OP MODE DATA: the same run with fio, on the same files.
fio_run() {
	local name="$SHARE/$1-$2-$3-fio" data=$4 mode=() extra=()
	[ "$3" = uncached ] && mode=(--uncached=1)
	if [ "$2" = read ]; then extra=(--fadvise_hint=0); else extra=(--end_fsync=1); fi
	echo "profile-guest: $1 $2 $3 fio ($SECONDS_PER_RUN s)"
	record "$name" "$FIO" --name="$1-$2-$3" --filename_format="$data.\$jobnum" \
		--numjobs="$(nproc)" --size="$FILESIZE" --bs=64k --rw="$2" \
		--ioengine=pvsync2 "${mode[@]}" "${extra[@]}" --thread \
		--group_reporting --time_based --runtime="$SECONDS_PER_RUN" \
		--disk_util=0 --output-format=json
	cp /tmp/tool.out "$name.fio.json"
	report "$name"
}

main() {
	local target data op mode
	FIO=
	if [ "${1:-}" = --fio ]; then
		FIO=${2:-}
		[ -x "$FIO" ] || die "--fio: no fio at '$FIO'"
		shift 2
	fi
	[ $# -ge 5 ] || die "usage: profile-guest.sh [--fio FIO] SHARE BENCH SECONDS FILESIZE TARGET..."
	SHARE=$1 BENCH=$2 SECONDS_PER_RUN=$3 FILESIZE=$4
	shift 4
	[ -d "$SHARE" ] || die "no share directory $SHARE"
	[ -x "$BENCH" ] || die "no uncached_bench at $BENCH (make initramfs)"
	command -v perf >/dev/null || die "no perf in the host's userland (package linux-perf)"
	[[ $SECONDS_PER_RUN =~ ^[1-9][0-9]*$ ]] || die "SECONDS must be a number, not '$SECONDS_PER_RUN'"
	printf 'freq=%s\ncpus=%s\nkernel=%s\n' "$FREQ" "$(nproc)" "$(uname -r)" >"$SHARE/profile.conf"
	for target in "$@"; do
		data=$(data_path "$target")
		"$BENCH" -f "$data" -j "$(nproc)" -s "$FILESIZE" --prepare >/dev/null ||
			die "$target: cannot write the data set"
		for op in "${OPS[@]}"; do
			for mode in "${MODES[@]}"; do
				profile_run "$target" "$op" "$mode" "$data"
				[ -z "$FIO" ] || [ "$target" = blockdev ] ||
					fio_run "$target" "$op" "$mode" "$data"
			done
		done
	done
}

main "$@"
