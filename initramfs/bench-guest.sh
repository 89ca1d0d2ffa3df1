# shellcheck shell=dash
# bench-guest.sh - the guest half of make bench (busybox sh). bench.sh sends
# it as the guest command, after the settings (BENCH_* variables) and
# before the calls (bench_prepare, bench_run) for this boot. Every output
# line goes to the console and to the results port; the host reads the
# port only:
#   uncached-bench-sec/-summary {...}   uncached_bench's JSON lines
#   bench-run-begin LABEL / bench-run-end LABEL rc=N   around each run
#   bench-fio-json-begin LABEL ... bench-fio-json-end LABEL   fio's JSON
BENCH=/tests/uncached_bench
TOOLS=/mnt/tools
status=0

find_port() {
	local p
	for p in /sys/class/virtio-ports/*; do
		[ "$(cat "$p/name" 2>/dev/null)" = uncached.results ] &&
			{ echo "/dev/${p##*/}"; return 0; }
	done
	echo /dev/null
}
port=$(find_port)

send() { echo "$*" | tee -a "$port"; }

# run_logged LABEL CMD...: run CMD, its output to console and port.
run_logged() {
	local label=$1 rc
	shift
	send "bench-run-begin $label"
	{ "$@"; echo $? >/tmp/rc; } 2>&1 | tee -a "$port"
	rc=$(cat /tmp/rc)
	send "bench-run-end $label rc=$rc"
	[ "$rc" = 0 ] || status=1
}

# run_failed LABEL: a run that could not start (its disk is missing).
run_failed() {
	send "bench-guest: $1: a disk it needs is missing"
	send "bench-run-end $1 rc=1"
	status=1
}

# disk_node SERIAL: the device node of the NVMe disk with that serial.
disk_node() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(tr -d ' ' <"$c/serial")" = "$1" ] &&
			{ echo "/dev/${c##*/}n1"; return 0; }
	done
	echo "bench-guest: no disk with serial $1" >&2
	return 1
}

# raw_target FS: is FS a raw block-device target (BENCH_RAW)?
raw_target() {
	case " $BENCH_RAW " in *" $1 "*) return 0 ;; esac
	return 1
}

# target_path FS NAME: the benchmark's file NAME on target FS: the prefix
# /mnt/FS/NAME of the files NAME.N, or on a raw target the disk FS-NAME.
target_path() {
	if raw_target "$1"; then
		disk_node "$1-$2"
	else
		echo "/mnt/$1/$2"
	fi
}

# bench_prepare FS: the data set, BENCH_SMP files (or regions of the raw
# disk) of BENCH_FILESIZE.
bench_prepare() {
	local data
	data=$(target_path "$1" data) || { run_failed "$1/prepare"; return; }
	run_logged "$1/prepare" $BENCH -f "$data" -j "$BENCH_SMP" \
		-s "$BENCH_FILESIZE" --prepare
}

# The static fio of the tools disk (serial "tools"; scripts/host/build-fio.sh).
mount_tools() {
	local dev
	[ -x "$TOOLS/bin/fio" ] && return 0
	dev=$(disk_node tools) && mkdir -p "$TOOLS" &&
		mount -t ext4 -o ro "$dev" "$TOOLS" && [ -x "$TOOLS/bin/fio" ] &&
		return 0
	echo "bench-guest: no tools disk with fio"
	return 1
}

# fio_mode MODE: fio's option for a mode of scripts/data/bench.list.
fio_mode() {
	case $1 in
	buffered) ;;
	uncached) echo --uncached=1 ;;
	direct) echo --direct=1 ;;
	*) echo "bench-guest: unknown mode $1" >&2; return 1 ;;
	esac
}

# run_fio LABEL FS OP MODE BLOCK THREADS SECONDS OPTIONS (inside run_logged):
# fio on the data set, as uncached_bench runs it (one file per thread,
# BLOCK-sized preadv2/pwritev2 calls, SECONDS), after sync and a cache drop.
run_fio() {
	local label=$1 fs=$2 op=$3 mode rc
	if raw_target "$fs"; then
		echo "bench-guest: fio runs on filesystems only, not on the raw target $fs"
		return 1
	fi
	mount_tools || return 1
	mode=$(fio_mode "$4") || return 1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# shellcheck disable=SC2086 # the options are words
	"$TOOLS/bin/fio" --name="$label" --filename_format="/mnt/$fs/data.\$jobnum" \
		--numjobs="$6" --size="$BENCH_FILESIZE" --bs="$5" --rw="$op" \
		--ioengine=pvsync2 $mode --thread --group_reporting --time_based \
		--runtime="$7" --disk_util=0 \
		--output-format=json --output=/tmp/fio.json $8
	rc=$?
	# stdout is already on its way to the port (run_logged), which
	# cannot be opened twice
	echo "bench-fio-json-begin $label"
	cat /tmp/fio.json
	echo "bench-fio-json-end $label"
	return $rc
}

# target_devs FS: the block devices (nvme0n1 ...) of target FS: the disk
# FS, or the disks FS-NAME of a raw target.
target_devs() {
	local c serial
	for c in /sys/class/nvme/nvme*; do
		serial=$(tr -d ' ' <"$c/serial")
		if [ "$serial" = "$1" ] ||
			{ raw_target "$1" && [ "${serial#"$1"-}" != "$serial" ]; }; then
			echo "${c##*/}n1"
		fi
	done
}

# ra_files FS: the read_ahead_kb files of the bdis target FS reads
# through: its disks' queues and, on btrfs, the filesystem's own bdi (which
# btrfs mounts with 4096).
ra_files() {
	local dev b
	for dev in $(target_devs "$1"); do
		echo "/sys/block/$dev/queue/read_ahead_kb"
		for b in /sys/fs/btrfs/*/devices/"$dev"; do
			[ -e "$b" ] && echo "${b%/devices/*}/bdi/read_ahead_kb"
		done
	done
}

# set_readahead FS KB: read_ahead_kb KB on target FS's bdis; the values
# it replaced go to /tmp/readahead for restore_readahead.
set_readahead() {
	local f old
	: >/tmp/readahead
	for f in $(ra_files "$1"); do
		old=$(cat "$f") || return 1
		echo "$f $old" >>/tmp/readahead
		echo "$2" >"$f" || return 1
		echo "bench-guest: read_ahead_kb $(cat "$f") (was $old): $f"
	done
	[ -s /tmp/readahead ] && return 0
	echo "bench-guest: $1: no read_ahead_kb to set"
	return 1
}

restore_readahead() {
	local f kb
	while read -r f kb; do
		echo "$kb" >"$f"
	done </tmp/readahead
	: >/tmp/readahead
}

# with_readahead FS KB CMD...: run CMD with read_ahead_kb KB on target FS
# (- : as the target has it), restored afterwards; CMD's status.
with_readahead() {
	local fs=$1 kb=$2 rc=0
	shift 2
	if [ "$kb" = - ]; then
		"$@"
		return
	fi
	set_readahead "$fs" "$kb" || rc=1
	[ $rc != 0 ] || "$@" || rc=$?
	restore_readahead
	return $rc
}

# expand_opts FS OPTIONS...: the options, each NAME after --hot or --dst
# made the path of NAME on target FS (target_path).
expand_opts() {
	local fs=$1 w path=
	shift
	for w in "$@"; do
		if [ -n "$path" ]; then
			w=$(target_path "$fs" "$w") || return 1
			path=
		else
			case $w in --hot | --dst) path=1 ;; esac
		fi
		printf '%s ' "$w"
	done
}

# scratch_files FS ID OPTIONS...: the files a run makes on filesystem FS
# and leaves behind (a --truncate writer's, the --dst copy's), to remove.
scratch_files() {
	local fs=$1 id=$2 w dst=
	shift 2
	raw_target "$fs" && return 0
	for w in "$@"; do
		[ -n "$dst" ] && echo "/mnt/$fs/$w"
		dst=
		case $w in
		--dst) dst=1 ;;
		--truncate) echo "/mnt/$fs/$id" ;;
		esac
	done
}

# bench_run FS ID TOOL OP MODE BLOCK THREADS SECONDS READAHEAD OPTIONS
bench_run() {
	local fs=$1 id=$2 tool=$3 op=$4 mode=$5 bs=$6 threads=$7 secs=$8
	local ra=$9 opts=${10} label="$1/$2/$5" prefix name=data scratch p
	[ "$threads" = - ] && threads=$BENCH_SMP
	[ "$opts" = - ] && opts=
	[ "$tool" = fio ] && label="fio:$label"
	case " $opts " in *" --truncate "*) name=$id ;; esac
	# shellcheck disable=SC2086 # the options are words
	scratch=$(scratch_files "$fs" "$id" $opts)
	# shellcheck disable=SC2086 # likewise
	if ! prefix=$(target_path "$fs" "$name") ||
		! opts=$(expand_opts "$fs" $opts); then
		run_failed "$label"
		return
	fi
	if [ "$tool" = fio ]; then
		run_logged "$label" with_readahead "$fs" "$ra" run_fio "$label" \
			"$fs" "$op" "$mode" "$bs" "$threads" "$secs" "$opts"
		return
	fi
	# shellcheck disable=SC2086 # likewise
	run_logged "$label" with_readahead "$fs" "$ra" $BENCH -f "$prefix" \
		-m "$mode" -o "$op" -b "$bs" -j "$threads" -s "$BENCH_FILESIZE" \
		-t "$secs" --json --label "$label" $opts
	for p in $scratch; do
		rm -f "$p".*
	done
}

bench_done() {
	send "bench-guest-done status=$status"
	return $status
}
