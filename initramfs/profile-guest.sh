#!/bin/bash
# profile-guest.sh SHARE BENCH SECONDS FILESIZE TARGET... - the guest half
# of make profile, run in the host-userland guest (initramfs/host-init,
# mode cmd: the disks mounted on /mnt/NAME, the raw ones in
# UNCACHED_<SERIAL>_DEV). For each TARGET (a filesystem mounted on
# /mnt/TARGET, or "blockdev": the raw disk blockdev-data) it writes the
# data set with uncached_bench BENCH (one file, or disk region, of
# FILESIZE per CPU), then for each op (read, write) and mode (buffered,
# uncached) drops the caches and runs uncached_bench for SECONDS under
# `perf record -a -e cpu-clock` (a software clock: TCG has no PMU). It
# writes to SHARE, per run TARGET-OP-MODE:
#   .json  uncached_bench's summary line (its MB, the bytes the run moved)
#   .txt   perf report: samples per comm and kernel symbol, every CPU
#   .err   what perf and uncached_bench said on stderr
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

# profile_run TARGET OP MODE DATA: one uncached_bench run under perf.
profile_run() {
	local name="$SHARE/$1-$2-$3" data=$4 threads
	threads=$(nproc)
	sync
	echo 3 >/proc/sys/vm/drop_caches
	echo "profile-guest: $1 $2 $3 ($SECONDS_PER_RUN s)"
	cp /proc/vmstat "$name.vmstat-before"
	perf record -q -a -e cpu-clock -F "$FREQ" -o "/tmp/perf.data" -- \
		"$BENCH" -f "$data" -m "$3" -o "$2" -b 64K -j "$threads" \
		-s "$FILESIZE" -t "$SECONDS_PER_RUN" --json --label "$1/$2/$3" \
		>"/tmp/bench.out" 2>"$name.err" ||
		die "$1 $2 $3: perf record or uncached_bench failed (see $name.err)"
	cp /proc/vmstat "$name.vmstat-after"
	grep '^uncached-bench-summary ' /tmp/bench.out >"$name.json" ||
		die "$1 $2 $3: uncached_bench printed no summary"
	perf report -i /tmp/perf.data --stdio --no-children -q \
		--sort comm,dso,sym -F sample,comm,dso,sym >"$name.txt" 2>>"$name.err" ||
		die "$1 $2 $3: perf report failed (see $name.err)"
	rm -f /tmp/perf.data
}

main() {
	local target data op mode
	[ $# -ge 5 ] || die "usage: profile-guest.sh SHARE BENCH SECONDS FILESIZE TARGET..."
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
			done
		done
	done
}

main "$@"
