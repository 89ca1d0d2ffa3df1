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

# bench_prepare FS: the data set, BENCH_SMP files of BENCH_FILESIZE.
bench_prepare() {
	run_logged "$1/prepare" $BENCH -f "/mnt/$1/data" -j "$BENCH_SMP" \
		-s "$BENCH_FILESIZE" --prepare
}

# The fio of the tools disk (serial "tools"), with its own libraries and a
# shim for System V shared memory, which the guest kernel lacks.
mount_tools() {
	local c
	[ -x "$TOOLS/bin/fio" ] && return 0
	for c in /sys/class/nvme/nvme*; do
		[ "$(tr -d ' ' <"$c/serial")" = tools ] || continue
		mkdir -p "$TOOLS"
		mount -t ext4 -o ro "/dev/${c##*/}n1" "$TOOLS" && return 0
	done
	echo "bench-guest: no tools disk with fio"
	return 1
}

fio_cmd() {
	"$TOOLS/lib/ld-linux-x86-64.so.2" --library-path "$TOOLS/lib" \
		--preload "$TOOLS/lib/fio-shm-shim.so" "$TOOLS/bin/fio" "$@"
}

# run_fio LABEL FS OP MODE BLOCK THREADS SECONDS OPTIONS (inside run_logged)
run_fio() {
	local label=$1 fs=$2 op=$3 direct=0 rc
	[ "$4" = direct ] && direct=1
	mount_tools || return 1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# shellcheck disable=SC2086
	fio_cmd --name="$label" --filename_format="/mnt/$fs/data.\$jobnum" \
		--numjobs="$6" --size="$BENCH_FILESIZE" --bs="$5" --rw="$op" \
		--direct="$direct" --ioengine=psync --thread --time_based \
		--runtime="$7" --group_reporting --disk_util=0 \
		--output-format=json --output=/tmp/fio.json $8
	rc=$?
	# stdout is already on its way to the port (run_logged), which
	# cannot be opened twice
	echo "bench-fio-json-begin $label"
	cat /tmp/fio.json
	echo "bench-fio-json-end $label"
	return $rc
}

# bench_run FS ID TOOL OP MODE BLOCK THREADS SECONDS OPTIONS
bench_run() {
	local fs=$1 id=$2 tool=$3 op=$4 mode=$5 bs=$6 threads=$7 secs=$8
	local opts=$9 label="$1/$2/$5" prefix="/mnt/$1/data"
	[ "$threads" = - ] && threads=$BENCH_SMP
	[ "$opts" = - ] && opts=
	case " $opts " in *" --truncate "*) prefix="/mnt/$fs/$id" ;; esac
	# --hot NAME: the hot reader's file is NAME on this filesystem
	case " $opts " in
	*" --hot "*) opts=$(echo "$opts" | sed "s|--hot |--hot /mnt/$fs/|") ;;
	esac
	if [ "$tool" = fio ]; then
		run_logged "fio:$label" run_fio "fio:$label" "$fs" "$op" "$mode" \
			"$bs" "$threads" "$secs" "$opts"
		return
	fi
	# shellcheck disable=SC2086
	run_logged "$label" $BENCH -f "$prefix" -m "$mode" -o "$op" -b "$bs" \
		-j "$threads" -s "$BENCH_FILESIZE" -t "$secs" --json \
		--label "$label" $opts
	[ "$prefix" = "/mnt/$fs/data" ] || rm -f "$prefix".*
}

bench_done() {
	send "bench-guest-done status=$status"
	return $status
}
