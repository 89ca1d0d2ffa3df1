#!/usr/bin/env bash
# bench.sh - make bench: the page-cache benchmark of buffered, RWF_UNCACHED
# and O_DIRECT I/O on the pristine and the patched performance kernels.
# Builds nothing: it boots each kernel in a small guest with one big
# NVMe disk per filesystem (and two raw ones for the block-device rows),
# runs the matrix of scripts/data/bench.list there
# (tests/uncached_bench and, next to it, fio: a static build of the
# vendored fio 3.42, scripts/host/build-fio.sh), then boots the kernels
# again, alternately, BENCH_ROUNDS - 1 times each with only the rows of
# scripts/data/bench-rounds.list (buffered and O_DIRECT: the patched vs
# pristine comparison is decided on their medians) and writes
#   build/bench/results.json  one record per kernel x round x fs x workload x mode
#   build/bench/report.md     tables, ratios, the performance targets
#   build/bench/*.png         MB/s and page cache over time
# Logs per boot: build/bench/<kernel>/console.log, channel.log (the first
# round), build/bench/rounds/<kernel>-<round>/ (the others).
# No timing is judged: it fails only when something could not run, or a
# guest did not have the CPUs and memory it was given (the report states
# the online CPUs each guest had).
#
# Environment (defaults):
#   BENCH_MEM (512M) BENCH_SMP (2)   guest RAM and CPUs
#   BENCH_FS ("ext4 xfs blockdev")   targets: filesystems and raw block
#                                    devices (scripts/data/bench-disks.list)
#   BENCH_DATA (4 x BENCH_MEM)       data set per target
#   BENCH_KERNELS ("pristine patched")
#   BENCH_ROUNDS (3)                 boots of each kernel in all (1: no
#                                    repeated rows, no noise decision)
#   BENCH_PRISTINE_KERNEL, BENCH_PATCHED_KERNEL  bzImages (default: the
#       perf kernels, 'make kernel TREE=pristine|patched FLAVOR=perf')
#   BENCH_LIST (scripts/data/bench.list)
#   FIO_SRC (../shared/vendor/fio-f5344384.tar.xz)  fio's source, a tarball
#       or a directory (scripts/host/build-fio.sh)
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

BENCH_MEM=${BENCH_MEM:-512M}
BENCH_SMP=${BENCH_SMP:-2}
BENCH_FS=${BENCH_FS:-ext4 xfs blockdev}
BENCH_KERNELS=${BENCH_KERNELS:-pristine patched}
BENCH_LIST=${BENCH_LIST:-$DATA_DIR/bench.list}
BENCH_ROUNDS=${BENCH_ROUNDS:-3}
ROUNDS_LIST=$DATA_DIR/bench-rounds.list
BENCH_DISKS=$DATA_DIR/bench-disks.list
OUT=$BUILD/bench
TOOLS_DIR=$OUT/tools-root
RUN_OVERHEAD=3		# seconds per run besides its own (drop, fsync, start: 1-2 s)
BOOT_OVERHEAD=40	# seconds per boot besides the runs and the data set (KVM probe, boot)
ONLINE_CPUS=()		# "KERNEL N": the online CPUs each guest reported

kernel_path() {
	case $1 in
	pristine) echo "${BENCH_PRISTINE_KERNEL:-$(kernel_image pristine perf)}" ;;
	patched) echo "${BENCH_PATCHED_KERNEL:-$(kernel_image patched perf)}" ;;
	*) die "unknown kernel '$1' in BENCH_KERNELS (pristine, patched)" ;;
	esac
}

# mib SIZE: 512M, 2G -> MiB
mib() {
	case $1 in
	*G) echo $((${1%G} * 1024)) ;;
	*M) echo "${1%M}" ;;
	esac
}

# disk_mib DISK: the size of a disk of scripts/data/bench-disks.list in MiB,
# nothing when there is no such disk.
disk_mib() {
	local size
	size=$(list_entries "$BENCH_DISKS" | awk -v d="$1" '$1 == d {print $2}')
	[ -z "$size" ] || mib "$size"
}

# raw_target TARGET: true when TARGET of BENCH_FS is a raw block-device
# target (it has a disk TARGET-data) rather than a filesystem.
raw_target() {
	[ -n "$(disk_mib "$1-data")" ]
}

# target_disks TARGET: its disks, one per line: a filesystem's own, or the
# disks TARGET-NAME of a raw target.
target_disks() {
	if raw_target "$1"; then
		first_words "$BENCH_DISKS" | awk -v p="$1-" 'index($1, p) == 1'
	else
		echo "$1"
	fi
}

# The raw targets of BENCH_FS, on one line.
raw_targets() {
	local t
	for t in $BENCH_FS; do
		if raw_target "$t"; then echo "$t"; fi
	done | paste -s -d ' '
}

# check_disks TARGET: its disks exist and hold what the runs write there: a
# filesystem the data set, one streaming file, the hot file, copy-on-write;
# each disk of a raw target the data set.
check_disks() {
	local t=$1 disk need size
	need=$(($(mib "$BENCH_DATA") + FILE_MIB * 2 + HOT_MIB))
	raw_target "$t" && need=$(mib "$BENCH_DATA")
	for disk in $(target_disks "$t"); do
		size=$(disk_mib "$disk")
		[ -n "$size" ] || die "BENCH_FS: no disk '$t' (or '$t-data') in scripts/data/bench-disks.list"
		[ "$need" -le "$size" ] ||
			die "BENCH_DATA $BENCH_DATA does not fit the ${size}M disk $disk (scripts/data/bench-disks.list)"
	done
}

check_settings() {
	local fs k
	[[ $BENCH_MEM =~ ^[0-9]+[MG]$ ]] || die "BENCH_MEM takes a size like 512M or 1G, not '$BENCH_MEM'"
	[[ $BENCH_SMP =~ ^[1-9][0-9]*$ ]] || die "BENCH_SMP takes a number of CPUs, not '$BENCH_SMP'"
	[[ $BENCH_ROUNDS =~ ^[1-9][0-9]?$ ]] || die "BENCH_ROUNDS takes a number of boots per kernel (1-99), not '$BENCH_ROUNDS'"
	BENCH_DATA=${BENCH_DATA:-$(($(mib "$BENCH_MEM") * 4))M}
	[[ $BENCH_DATA =~ ^[0-9]+[MG]$ ]] || die "BENCH_DATA takes a size like 2G, not '$BENCH_DATA'"
	FILE_MIB=$(($(mib "$BENCH_DATA") / BENCH_SMP))
	[ "$FILE_MIB" -ge 64 ] || die "BENCH_DATA / BENCH_SMP must be 64M or more"
	HOT_MIB=$(($(mib "$BENCH_MEM") * 3 / 10))	# the --hot file (uncached_bench)
	for fs in $BENCH_FS; do
		check_disks "$fs"
	done
	for k in $BENCH_KERNELS; do
		need_file "$(kernel_path "$k")" "build the perf kernels first (make kernel TREE=$k FLAVOR=perf)"
	done
	need_file "$BENCH_LIST" "the benchmark matrix"
	need_file "$ROUNDS_LIST" "the rows repeated in every round"
	check_list
	need_file "$INITRD" "run 'make initramfs' first"
}

# check_list: every row of BENCH_LIST has its columns (see its header): a
# known tool, op and mode, a readahead of - or KiB, options (- for none).
check_list() {
	local bad
	bad=$(list_entries "$BENCH_LIST" | awk '
		NF < 11 { print "too few columns: " $0; next }
		$2 !~ /^(bench|fio)$/ { print "unknown tool " $2 ": " $0; next }
		$3 !~ /^(read|write|copy)$/ { print "unknown op " $3 ": " $0; next }
		$4 !~ /^(buffered|uncached|direct)$/ { print "unknown mode " $4 ": " $0; next }
		$8 !~ /^(-|[1-9][0-9]*)$/ { print "readahead takes - or KiB, not " $8 ": " $0 }' | head -n 3)
	[ -z "$bad" ] || die "$BENCH_LIST: $bad"
}

# rows_for KERNEL TARGET [ROUND]: the rows of the matrix for KERNEL and
# TARGET: all of them in round 1, those of ROUNDS_LIST in the others.
rows_for() {
	local raw=0
	raw_target "$2" && raw=1
	list_entries "$BENCH_LIST" | awk -v k="$1" -v fs="$2" -v raw=$raw '
		("," $9 ",") ~ ("," k ",") && ($10 == "all" || ($10 == "files" && !raw) ||
			("," $10 ",") ~ ("," fs ","))' | repeated_rows "${3:-1}"
}

# repeated_rows ROUND: the rows of stdin that run in ROUND (all in round 1).
repeated_rows() {
	if [ "$1" = 1 ]; then
		cat
		return
	fi
	awk 'NR == FNR { want[$1 " " $2 " " $3] = 1; next }
		want[$1 " " $2 " " $4]' <(list_entries "$ROUNDS_LIST") -
}

uses_fio() {
	list_entries "$BENCH_LIST" | awk '$2 == "fio" {f = 1} END {exit !f}'
}

# The tools disk's files: the static fio (scripts/host/build-fio.sh: FIO_SRC or
# the vendored tarball), the only program the guest needs besides its own.
make_tools_dir() {
	local fio
	fio=$("$HOST_DIR/build-fio.sh")
	[ "$TOOLS_DIR/bin/fio" -nt "$fio" ] && return 0
	rm -rf "$TOOLS_DIR"
	mkdir -p "$TOOLS_DIR/bin"
	cp "$fio" "$TOOLS_DIR/bin/fio"
}

# The disk list of this run: the bench disks, and fio's tools disk.
write_disks_list() {
	list_entries "$BENCH_DISKS"
	uses_fio && printf 'tools\t256M\traw\t-\tmkfs.ext4 -F -q -d %s\n' "$TOOLS_DIR"
	return 0
}

# write_guest_cmd KERNEL EXPECTED [ROUND]: the guest command of KERNEL's
# boot in ROUND (1); the runs it must report go to EXPECTED (fs id tool op
# mode block threads seconds readahead options, tab-separated).
write_guest_cmd() {
	local kernel=$1 expected=$2 round=${3:-1} fs id tool op mode bs threads secs ra opts
	printf 'BENCH_SMP=%s\nBENCH_FILESIZE=%sM\nBENCH_RAW="%s"\n' "$BENCH_SMP" \
		"$FILE_MIB" "$(raw_targets)"
	cat "$TOP/initramfs/bench-guest.sh"
	: >"$expected"
	for fs in $BENCH_FS; do
		echo "bench_prepare $fs"
		while read -r id tool op mode bs threads secs ra _ _ opts; do
			echo "bench_run $fs $id $tool $op $mode $bs $threads $secs $ra '$opts'"
			[ "$threads" = - ] && threads=$BENCH_SMP
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$fs" "$id" \
				"$tool" "$op" "$mode" "$bs" "$threads" "$secs" "$ra" "$opts" >>"$expected"
		done < <(rows_for "$kernel" "$fs" "$round")
	done
	echo "bench_done"
}

# estimate KERNEL [ROUND]: seconds the boot of KERNEL in ROUND (1) should
# take: each run's own, its overhead, fio's --ramp_time, the warm-up read
# of the --hot file (about 100 MB/s), and the data set (O_DIRECT, about
# 100 MB/s).
estimate() {
	local fs total=$BOOT_OVERHEAD
	for fs in $BENCH_FS; do
		total=$((total + $(rows_for "$1" "$fs" "${2:-1}" | awk -v o=$RUN_OVERHEAD -v hot=$((HOT_MIB / 100)) '
			{s += $7 + o}
			match($0, /--ramp_time=[0-9]+/) {s += substr($0, RSTART + 12, RLENGTH - 12)}
			/[[:space:]]--hot[[:space:]]/ {s += hot}
			END {print s + 0}')))
		total=$((total + $(mib "$BENCH_DATA") / 100))
	done
	echo "$total"
}

# The disks the guest's /init tries to mount and cannot, harmlessly: the
# tools disk (bench-guest.sh mounts it) and the raw disks: as an ERE.
unmounted_disks() {
	local t
	{
		echo tools
		for t in $(raw_targets); do
			target_disks "$t"
		done
	} | paste -s -d '|'
}

# Show the guest's progress: one line per run and its result.
progress() {
	grep --line-buffered -E '^(bench-run-begin|  steady|  total|  hot reader|uncached_bench: error|bench-guest: |fio: |init: |Kernel panic|BUG:|WARNING:)' |
		grep --line-buffered -v -E "cannot mount .* as ($(unmounted_disks))" |
		sed -u 's/^/  guest: /' >&2 || true
}

# The disks of all targets of BENCH_FS, on one line.
bench_disks() {
	local t
	for t in $BENCH_FS; do
		target_disks "$t"
	done | paste -s -d ' '
}

# boot_dir KERNEL ROUND: the directory of that boot's logs.
boot_dir() {
	if [ "$2" = 1 ]; then
		echo "$OUT/$1"
	else
		echo "$OUT/rounds/$1-$2"
	fi
}

# run_kernel KERNEL [ROUND]: boot it and run its matrix (round 1) or its
# repeated rows; fails unless the guest had the CPUs and memory it was
# given (the online CPUs go to the report).
run_kernel() {
	local k=$1 round=${2:-1} dir secs resources
	dir=$(boot_dir "$k" "$round")
	mkdir -p "$dir"
	write_guest_cmd "$k" "$dir/expected" "$round" >"$dir/guest-cmd.sh"
	secs=$(estimate "$k" "$round")
	log "$k, round $round of $BENCH_ROUNDS: booting $(kernel_path "$k") ($BENCH_MEM, $BENCH_SMP CPUs, $BENCH_FS; about $((secs / 60 + 1)) min)"
	DISKS_LIST=$OUT/disks.list run_guest "$(kernel_path "$k")" "$dir/run" \
		--mode cmd --cmd "$(cat "$dir/guest-cmd.sh")" \
		--fs "$(bench_disks)$(uses_fio && echo ' tools')" \
		--mem "$BENCH_MEM" --smp "$BENCH_SMP" --timeout $((secs * 2 + 300)) \
		</dev/null | progress
	cp "$dir/run/console.log" "$dir/run/channel.log" "$dir/run/nonce" "$dir/"
	rm -rf "$dir/run/disks"
	resources=$(check_guest_resources "$dir/run") ||
		die "$k: $resources (see $dir/console.log)"
	log "$k: guest: $resources"
	[ "$round" != 1 ] || ONLINE_CPUS+=("$k $(guest_value "$dir/run" uncached-cpus online)")
}

main() {
	help_if_asked "$@"
	local k r total=0 start=$SECONDS
	need_cmd qemu-system-x86_64 gnuplot python3 gcc mkfs.ext4
	check_settings
	rm -rf "$OUT"/*.png "$OUT/plot-data" "$OUT/results.json" "$OUT/report.md" \
		"$OUT/pristine" "$OUT/patched" "$OUT/rounds"
	mkdir -p "$OUT"
	if uses_fio; then
		make_tools_dir
	fi
	write_disks_list >"$OUT/disks.list"
	for r in $(seq 1 "$BENCH_ROUNDS"); do
		for k in $BENCH_KERNELS; do
			total=$((total + $(estimate "$k" "$r")))
		done
	done
	log "benchmark of $BENCH_KERNELS on $BENCH_FS, data set $BENCH_DATA per target, $BENCH_ROUNDS round(s): about $((total / 60 + 1)) minutes"
	for r in $(seq 1 "$BENCH_ROUNDS"); do
		for k in $BENCH_KERNELS; do
			run_kernel "$k" "$r"
		done
	done
	# shellcheck disable=SC2086
	python3 "$BENCH_DIR/bench-report.py" --out "$OUT" --mem "$BENCH_MEM" \
		--smp "$BENCH_SMP" --online-cpus "$(IFS=,; echo "${ONLINE_CPUS[*]}")" \
		--data "$BENCH_DATA" --raw "$(raw_targets)" \
		--rounds "$BENCH_ROUNDS" $BENCH_KERNELS ||
		die "some runs could not run (see $OUT/report.md)"
	log "done in $(((SECONDS - start) / 60)) min: $OUT/report.md, $OUT/results.json, $OUT/*.png"
}

main "$@"
