# shellcheck shell=bash
# lib.sh - common helpers for the harness scripts. Source it; do not run it
# (run, it prints this). Every script calls help_if_asked "$@" first, so
# 'scripts/GROUP/NAME --help' (or -h) prints the script's header comment.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$TOP/build}

# The harness by role (scripts/README.md); the scripts name these, not paths.
# shellcheck disable=SC2034 # used by the scripts that source this file
LIB_DIR=$TOP/scripts/lib	# sourced: lib.sh, verdict.sh; make-help.awk
HOST_DIR=$TOP/scripts/host	# host steps: packages, source, kernel, initramfs, disks, QEMU
# shellcheck disable=SC2034 # likewise
RUNS_DIR=$TOP/scripts/runs	# the judged runs: qemu-test, stress, soak, fstests...
# shellcheck disable=SC2034 # likewise
CHECKS_DIR=$TOP/scripts/checks	# lint, host-side tests, series and distro-config checks
# shellcheck disable=SC2034 # likewise
BENCH_DIR=$TOP/scripts/bench	# bench, demo, profile and their report code
DATA_DIR=$TOP/scripts/data	# lists, kconfig fragments, versions, quiltrc

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }
warn_loud() {
	printf '%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
	printf '%s: WARNING: %s\n' "${0##*/}" "$*" >&2
	printf '%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
}

# script_help: the leading comment block of the running script ($0), its
# usage, without the #! line, shellcheck directives and comment marks.
script_help() {
	awk 'NR == 1 && /^#!/ { next }
		/^# shellcheck / { next }
		/^#/ { sub(/^# ?/, ""); print; next }
		{ exit }' "$0"
}

# help_if_asked ARGS...: print script_help and exit when the first argument
# is -h or --help.
help_if_asked() {
	case ${1:-} in
	-h | --help) script_help; exit 0 ;;
	esac
}

# need_cmd CMD... - fail naming the first command that is not on PATH.
need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			die "'$c' is not installed; run 'make deps' first"
	done
}

# source_tree SRC DIR VAR CHECK - DIR/tree holds the third-party source SRC
# (fio, fstests): a tarball with one top directory is unpacked afresh only
# when SRC changed; a directory is copied over the tree (times kept, so make
# rebuilds only what changed; a tree from elsewhere is replaced). DIR/source
# names where the tree came from. "CHECK DIR SRC" fails unless DIR holds
# the right source; VAR is the variable that names SRC, for the errors.
source_tree() {
	local src=$1 dir=$2 var=$3 check=$4 tree=$2/tree tmp=$2/tree.new id
	if [ -d "$src" ]; then
		"$check" "$src" "$src"
		[ "$(cat "$dir/source" 2>/dev/null)" = "dir $src" ] ||
			rm -rf "$tree" "$dir/source"
		log "copying $src"
		mkdir -p "$tree"
		rsync -a --exclude=.git "$src/" "$tree/"
		echo "dir $src" >"$dir/source"
		return
	fi
	id=$(stat -c 'file %n %s %Y' "$src")
	[ -d "$tree" ] && [ "$(cat "$dir/source" 2>/dev/null)" = "$id" ] && return 0
	rm -rf "$tmp" "$tree" "$dir/source"
	mkdir -p "$tmp"
	log "unpacking $src"
	tar -xf "$src" -C "$tmp" --strip-components=1 ||
		die "cannot unpack $src ($var: a tarball with one top directory, or a directory)"
	"$check" "$tmp" "$src"
	mv "$tmp" "$tree"
	echo "$id" >"$dir/source"
}

# need_file PATH HINT - fail unless PATH exists, saying how to make it.
need_file() {
	[ -e "$1" ] || die "$1 is missing; $2"
}

# list_entries FILE - the non-comment, non-blank lines of a list file.
list_entries() {
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$1"
}

# duration SECS: "1 min 05 s", "42 s".
duration() {
	if [ "$1" -ge 60 ]; then
		printf '%d min %02d s\n' $(($1 / 60)) $(($1 % 60))
	else
		printf '%d s\n' "$1"
	fi
}

# every SECS CMD...: run CMD every SECS seconds for as long as the shell
# that started it runs. Start it in the background and kill it when done:
#   every 30 report_progress & ticker=$!; ...; kill "$ticker"
every() {
	local secs=$1 next=$((SECONDS + $1))
	shift
	while sleep 1 && kill -0 "$$" 2>/dev/null; do
		[ "$SECONDS" -ge "$next" ] || continue
		next=$((next + secs))
		"$@" || true
	done
}

# build_status OUT STAMP START: one progress line: the time since START
# ($SECONDS), the objects built since STAMP, of the total a complete tree
# had last time (OUT/.objects-total).
build_status() {
	local out=$1 stamp=$2 start=$3 n total
	n=$(find "$out" -name '*.o' -newer "$stamp" 2>/dev/null | wc -l)
	total=$(cat "$out/.objects-total" 2>/dev/null || true)
	log "$(duration $((SECONDS - start))): $n objects built${total:+ (a complete tree has $total)}"
}

# build_ticker OUT SECS: from now on, a build_status line for OUT every
# SECS seconds, until 'kill "$BUILD_TICKER"' or the script's exit.
build_ticker() {
	touch "$1/.build-start"
	every "$2" build_status "$1" "$1/.build-start" "$SECONDS" &
	BUILD_TICKER=$!
	# shellcheck disable=SC2064 # the ticker's pid is known now
	trap "kill $BUILD_TICKER 2>/dev/null || true" EXIT
}

# qemu_disk_args IMG NAME - the QEMU arguments that attach the image IMG as
# an NVMe disk with serial NAME (the guest mounts it on /mnt/NAME).
qemu_disk_args() {
	printf -- '-drive file=%s,if=none,id=%s,format=raw,cache=unsafe -device nvme,serial=%s,drive=%s\n' \
		"$1" "$2" "$2" "$2"
}

# console_splats LOG - the first kernel splats (initramfs/splat-patterns) in
# a console log, without the runner's own marker lines.
console_splats() {
	local re
	re=$(list_entries "$TOP/initramfs/splat-patterns" | paste -s -d '|')
	grep -E "$re" "$1" 2>/dev/null | grep -v 'uncached-test:' | head -n 5 || true
}

pinned_linux_version() {
	list_entries "$DATA_DIR/linux-source.version"
}

# first_words FILE: the first column of a list file, one per line.
first_words() {
	list_entries "$1" | awk '{print $1}'
}

# check_names WHAT VALID NAME...: fail unless every NAME is one of the
# words VALID (one per line), naming the valid ones.
check_names() {
	local what=$1 valid=$2 name
	shift 2
	for name in "$@"; do
		grep -qxF -- "$name" <<<"$valid" ||
			die "unknown $what '$name'; valid: $(paste -s -d ' ' <<<"$valid")"
	done
}

# Paths and defaults shared by the scripts (the only place they are spelled).
SRC_DIR=$BUILD/src
# shellcheck disable=SC2034 # used by the scripts that source this file
PRISTINE_SRC=$SRC_DIR/pristine
# shellcheck disable=SC2034 # likewise
PATCHED_SRC=$SRC_DIR/patched
# shellcheck disable=SC2034 # likewise
RESULTS=$BUILD/results
TIMES=$BUILD/times	# KIND.list: "STEP SECONDS" of earlier runs, for estimates
INITRD=$BUILD/initramfs/initramfs.cpio	# scripts/host/build-initramfs.sh
# the host-userland guest's (ROOTFS=host): scripts/host/build-host-initramfs.sh
HOST_INITRD=$BUILD/initramfs/host-initramfs.cpio
DISKS_FILE=$DATA_DIR/disks.list	# the filesystems of make qemu-test
MATRIX_FILE=$DATA_DIR/matrix-disks.list	# and those make qemu-test-matrix adds
LEFT_OUT_FILE=$TOP/tests/left-out.list	# tests a filesystem target skips, and why
# the block-device target: its raw disks (the first one's name names the
# target) and its tests
DEVICES_FILE=$DATA_DIR/devices.list
# shellcheck disable=SC2034 # read by qemu-test.sh and qemu-baseline.sh
DEVICE_TESTS_FILE=$TOP/tests/blockdev.list
# The limits of a guest: each script may set its own before run_guest;
# QEMU_TIMEOUT, QEMU_MEM and QEMU_SMP, when set, win over all of them.
GUEST_TIMEOUT=3600	# seconds: the whole suite takes 10-30 min under TCG
GUEST_MEM=384M		# uncached_memory_pressure needs a guest with little RAM
GUEST_SMP=2
GUEST_ROOTFS=busybox	# run_guest's userland: busybox (the tests) or host

# all_filesystems: the filesystems of scripts/data/disks.list, on one line;
# matrix_filesystems: those of scripts/data/matrix-disks.list.
all_filesystems() {
	first_words "$DISKS_FILE" | paste -s -d ' '
}

matrix_filesystems() {
	first_words "$MATRIX_FILE" | paste -s -d ' '
}

# disk_lists: the list files that describe the disks a guest may get, by
# name (columns: name size type options mkfs-command): DISKS_LIST when set
# (make bench and make demo have their own), else the filesystems of both
# lists and the raw disks of the block-device target.
disk_lists() {
	if [ -n "${DISKS_LIST:-}" ]; then
		echo "$DISKS_LIST"
	else
		printf '%s\n' "$DISKS_FILE" "$MATRIX_FILE" "$DEVICES_FILE"
	fi
}

# disk_line NAME: the line of the disk NAME in the disk lists (empty when
# none has it). awk reads to the end: exiting at the first match would
# kill a list_entries still writing with SIGPIPE (status 141 under
# pipefail).
disk_line() {
	local list
	for list in $(disk_lists); do
		list_entries "$list"
	done | awk -v name="$1" '$1 == name && !found { print; found = 1 }'
}

# fs_type NAME: the filesystem type of the disk NAME ("raw": never mounted).
fs_type() {
	disk_line "$1" | awk '{print $3}'
}

# mount_specs NAME...: "NAME:TYPE:OPTIONS" of each disk that the guest
# mounts (not the raw ones), for its /init; dies on an unknown name.
mount_specs() {
	local name line type opts specs=()
	for name in "$@"; do
		line=$(disk_line "$name")
		[ -n "$line" ] || die "no disk '$name' in $(disk_lists | paste -s -d ' ')"
		read -r _ _ type opts _ <<<"$line"
		[ "$type" = raw ] || specs+=("$name:$type:$opts")
	done
	echo "${specs[*]}"
}

# left_out_tests TARGET: the tests tests/left-out.list leaves out on the
# filesystem target TARGET, one per line.
left_out_tests() {
	list_entries "$LEFT_OUT_FILE" | awk -v t="$1" '$1 == t {print $2}'
}

# target_tests TARGET: the entries of a test list (on stdin) that run on
# TARGET: all but those it leaves out.
target_tests() {
	list_entries - | awk -v skip="$(left_out_tests "$1" | paste -s -d ' ')" '
		BEGIN { n = split(skip, w, " "); for (i = 1; i <= n; i++) out[w[i]] = 1 }
		!($1 in out)'
}

# target_plans LIST TARGET...: "TARGET=N ..." with the number of tests of
# the list file LIST that each TARGET runs (verdict.sh's plans).
target_plans() {
	local tests target counts=()
	tests=$(cat "$1")	# read once: LIST may be a pipe
	shift
	for target in "$@"; do
		counts+=("$target=$(target_tests "$target" <<<"$tests" | wc -l)")
	done
	echo "${counts[*]}"
}

# plans_total PLANS: the number of test runs of "TARGET=N ..." plans.
plans_total() {
	local word n=0
	for word in $1; do
		n=$((n + ${word#*=}))
	done
	echo "$n"
}

# device_target: the name of the block-device target ("blockdev").
device_target() {
	first_words "$DEVICES_FILE" | head -n 1
}

# raw_disk_names: the serials of its disks, which /init does not mount.
raw_disk_names() {
	first_words "$DEVICES_FILE" | paste -s -d ' '
}

# kernel_tree TREE: fail unless TREE names a kernel tree.
kernel_tree() {
	case $1 in
	patched | pristine) ;;
	*) die "unknown kernel tree '$1' (patched: the series applied, pristine: 6.12 as Debian ships it)" ;;
	esac
}

# kernel_dir TREE FLAVOR: where 'scripts/host/build-kernel.sh TREE FLAVOR'
# builds; kernel_image TREE FLAVOR: the bzImage it builds.
kernel_dir() {
	kernel_tree "$1"
	echo "$BUILD/kernel/$1-$2"
}

kernel_image() {
	echo "$(kernel_dir "$1" "$2")/arch/x86/boot/bzImage"
}

# kernel_test_modules BZIMAGE: the directory of the guest test modules
# (tests/kmod/) built against the kernel of BZIMAGE (build-kernel.sh).
kernel_test_modules() {
	echo "${1%/arch/x86/boot/bzImage}/tests-kmod"
}

# make_test_modules DIR MAKE_ARGS...: the guest test modules (tests/kmod/)
# copied into DIR and built there: make -s MAKE_ARGS... M=DIR modules
# (MAKE_ARGS: -C the kernel tree or headers to build against, its options).
make_test_modules() {
	local dir=$1
	shift
	mkdir -p "$dir"
	cp "$TOP"/tests/kmod/Kbuild "$TOP"/tests/kmod/*.c "$dir/"
	make -s "$@" M="$dir" modules
}

# kernel_config BZIMAGE: the .config of the kernel of BZIMAGE (its build
# tree; make deb-test puts the package's there).
kernel_config() {
	echo "${1%/arch/x86/boot/bzImage}/.config"
}

# kernel_package_modules BZIMAGE: the directory of the modules of a
# packaged kernel (make deb-test) that the busybox guest loads at boot.
kernel_package_modules() {
	echo "${1%/arch/x86/boot/bzImage}/package-modules"
}

# built_kernel TREE FLAVOR: kernel_image, failing when it is not built.
built_kernel() {
	local image
	image=$(kernel_image "$1" "$2")
	need_file "$image" "build it first ('make kernel TREE=$1 FLAVOR=$2')"
	echo "$image"
}

# tree_flavor_args USAGE ARGS...: set TREE and FLAVOR from the arguments
# "TREE FLAVOR" of a script; any other count dies with USAGE.
tree_flavor_args() {
	[ $# -eq 3 ] || die "usage: $1"
	kernel_tree "$2"
	# shellcheck disable=SC2034 # read by the scripts that call it
	TREE=$2 FLAVOR=$3
}

# run_options USAGE 'OPTION...' ARGS...: a judged run's arguments, the
# options OPTION... allows (--tests 'NAME...', --fs 'FS...': make's TESTS=
# and FS=; --matrix) and then TREE FLAVOR. Sets OPT_TESTS, OPT_FS,
# OPT_MATRIX (0 or 1), TREE and FLAVOR; anything else dies with USAGE.
run_options() {
	local usage=$1 allowed=" $2 "
	shift 2
	# shellcheck disable=SC2034 # read by the scripts that call it
	OPT_TESTS='' OPT_FS='' OPT_MATRIX=0
	while [ $# -gt 2 ]; do
		[[ $allowed == *" $1 "* ]] || die "usage: $usage"
		# shellcheck disable=SC2034 # likewise
		case $1 in
		--matrix) OPT_MATRIX=1; shift; continue ;;
		--tests) OPT_TESTS=$2 ;;
		--fs) OPT_FS=$2 ;;
		esac
		shift 2
	done
	tree_flavor_args "$usage" "$@"
}

# tree_flavor_kernel USAGE ARGS...: tree_flavor_args, and KERNEL, the
# built kernel of that TREE and FLAVOR (built_kernel).
tree_flavor_kernel() {
	tree_flavor_args "$@"
	# shellcheck disable=SC2034 # read by the scripts that call it
	KERNEL=$(built_kernel "$TREE" "$FLAVOR")
}

# guest_rootfs NAME: fail unless NAME names a guest userland.
guest_rootfs() {
	case $1 in
	busybox | host) ;;
	*) die "unknown ROOTFS '$1' (busybox: the test initramfs; host: the host's root filesystem, read-only over virtio-9p)" ;;
	esac
}

# The host paths the host-userland guest covers with tmpfs
# (initramfs/host-init): a checkout there is out of the guest's sight.
GUEST_TMPFS_DIRS='/tmp /var/tmp /run /root /mnt /dev/shm'

# outside_guest_tmpfs PATH...: die when a PATH lies in GUEST_TMPFS_DIRS
# (ROOTFS=host guests see the host's files everywhere else).
outside_guest_tmpfs() {
	local p d
	for p in "$@"; do
		p=$(realpath -m "$p")
		for d in $GUEST_TMPFS_DIRS; do
			case $p/ in
			"$d"/*) die "ROOTFS=host: $p lies under $d, which the guest covers with tmpfs (as it does $GUEST_TMPFS_DIRS); clone the repository elsewhere (e.g. under /work or /srv)" ;;
			esac
		done
	done
}

# run_guest KERNEL DIR ARGS...: scripts/host/run-qemu.sh on KERNEL with the test
# initramfs (GUEST_ROOTFS=host: the host-userland one), results in DIR, the
# guest limits (GUEST_*, or QEMU_* from the environment) and then ARGS (a
# later option wins over an earlier one).
run_guest() {
	local kernel=$1 dir=$2 initrd=$INITRD hint="run 'make initramfs' first"
	shift 2
	guest_rootfs "$GUEST_ROOTFS"
	[ "$GUEST_ROOTFS" = busybox ] ||
		initrd=$HOST_INITRD hint="run scripts/host/build-host-initramfs.sh first"
	need_file "$initrd" "$hint"
	"$HOST_DIR/run-qemu.sh" --kernel "$kernel" --initrd "$initrd" --results "$dir" \
		--rootfs "$GUEST_ROOTFS" \
		--timeout "${QEMU_TIMEOUT:-$GUEST_TIMEOUT}" --mem "${QEMU_MEM:-$GUEST_MEM}" \
		--smp "${QEMU_SMP:-$GUEST_SMP}" "$@"
}

# watch_guest TOTAL DONE OUT KERNEL DIR ARGS...: run_guest in the
# background, its own output to the file OUT (- for stderr), with a line
# per step the guest finishes (follow_guest: steps DONE + 1.. of TOTAL);
# dies when QEMU could not run.
watch_guest() {
	local total=$1 done=$2 out=$3 dir=$5 qemu rc=0 see=
	shift 3
	rm -f "$dir/console.log"
	if [ "$out" = - ]; then
		run_guest "$@" </dev/null >&2 &
	else
		run_guest "$@" </dev/null >"$out" 2>&1 &
		see=" (see $out)"
	fi
	qemu=$!
	follow_guest "$dir/console.log" "$qemu" "$total" "$done"
	wait "$qemu" || rc=$?
	[ $rc = 0 ] || die "could not run QEMU$see"
}

# step_line N TOTAL STEP RESULT SECS: "[7/48] xfs uncached_mmap ... ok (12 s)"
step_line() {
	printf '[%*d/%d] %s ... %s (%s)\n' ${#2} "$1" "$2" "$3" "$4" "$(duration "$5")"
}

# guest_progress TOTAL DONE: read a guest's console log on stdin; print one
# line per step it finishes, numbered from DONE + 1 of TOTAL, with the
# time the step took (from the runner's kernel-log markers, else since the
# previous step), and pass /init's lines and kernel splats through. Steps:
#   run-tests: FS TEST: VERDICT        (initramfs/run-tests)
#   crash-write: /mnt/FS: synced ...   (tests/tools/uncached_crash.c)
#   crash-verify: FS: exit status N    (scripts/runs/crash-test.sh)
guest_progress() {
	local total=$1 n=$2 line last=$SECONDS step result secs
	local -A begun=() took=()
	local marker='^\[ *([0-9]+)\.([0-9]{3})[0-9]*\] uncached-test: (begin|end) ([^ ]+ [^ ]+)$' ms
	while IFS= read -r line; do
		line=${line%$'\r'}
		step=
		if [[ $line =~ $marker ]]; then
			ms=$((BASH_REMATCH[1] * 1000 + 10#${BASH_REMATCH[2]}))
			if [ "${BASH_REMATCH[3]}" = begin ]; then
				begun[${BASH_REMATCH[4]}]=$ms
			elif [ -n "${begun[${BASH_REMATCH[4]}]:-}" ]; then
				took[${BASH_REMATCH[4]}]=$(((ms - begun[${BASH_REMATCH[4]}] + 500) / 1000))
			fi
		elif [[ $line =~ ^run-tests:\ ([^ ]+\ [^ :]+):\ (.*)$ ]]; then
			step=${BASH_REMATCH[1]}
			result=${BASH_REMATCH[2]}
			# a kernel message the console printed into the line
			[[ ! $result =~ ^(.*[^ ])\[\ *[0-9]+\.[0-9]+\]\  ]] ||
				result=${BASH_REMATCH[1]}
			case $result in
			ok) result=ok ;;
			skip) result=skipped ;;
			*) result="FAILED: $result" ;;
			esac
		elif [[ $line =~ ^crash-write:\ /mnt/([^:]+):\ (synced\ [^\(]*) ]]; then
			step="${BASH_REMATCH[1]} write" result=${BASH_REMATCH[2]% }
		elif [[ $line =~ ^crash-verify:\ ([^:]+):\ exit\ status\ ([0-9]+)$ ]]; then
			step="${BASH_REMATCH[1]} verify" result=ok
			[ "${BASH_REMATCH[2]}" = 0 ] || result="FAILED: exit status ${BASH_REMATCH[2]}"
		elif [[ $line =~ ^(init:|Bail\ out!|crash-write:\ .*(cutting\ power|error:)) &&
			! $line =~ ^init:\ (running|mounted) ]] ||
			[[ $line =~ Kernel\ panic|BUG:|WARNING: ]]; then
			printf '  guest: %s\n' "$line"
		fi
		[ -n "$step" ] || continue
		n=$((n + 1))
		secs=${took[$step]:-$((SECONDS - last))}
		step_line "$n" "$total" "$step" "$result" "$secs"
		last=$SECONDS
	done
}

# follow_guest LOG PID TOTAL [DONE]: guest_progress on the console log LOG
# as it grows, on stderr, until the process PID (run-qemu.sh) exits.
follow_guest() {
	tail -n +1 -F --pid="$2" "$1" 2>/dev/null | guest_progress "$3" "${4:-0}" >&2 || true
}

# checker_ops TAP: the operations of the checker processes that passed in
# a runner TAP file (their "ok N fsx proc I seed=S ops=N" lines).
checker_ops() {
	[ -f "$1" ] || { echo 0; return; }
	awk '/^    ok [0-9]+ fsx proc / { sub(/.*ops=/, ""); n += $1 } END { print n + 0 }' "$1"
}

# record_times KIND STEP SECONDS...: keep how long steps took, for
# estimate_secs; the last value of a step wins.
record_times() {
	local file=$TIMES/$1.list
	shift
	mkdir -p "$TIMES"
	touch "$file"
	printf '%s %s\n' "$@" | awk 'FNR == NR { t[$1] = $2; next }
		!($1 in t) { print } END { for (k in t) print k, t[k] }' - "$file" |
		sort >"$file.tmp"
	mv "$file.tmp" "$file"
}

# record_test_times KIND CONSOLE: the durations of the tests of a run-tests
# run (the markers on its console, "FS/TEST SECONDS") and the time to its
# first test ("boot SECONDS").
record_test_times() {
	local times
	[ -f "$2" ] || return 0
	times=$(tr -d '\r' <"$2" | awk '
		match($0, /^\[ *[0-9]+\.[0-9]+\] uncached-test: (begin|end) /) {
			ts = substr($0, 2, index($0, "]") - 2) + 0
			key = $(NF - 1) "/" $NF
			if ($(NF - 2) == "begin") { begun[key] = ts; if (!boot) boot = int(ts) }
			else if (key in begun) printf "%s %d ", key, ts - begun[key] + 0.5
		}
		END { if (boot) printf "boot %d", boot }')
	# shellcheck disable=SC2086 # pairs of words
	[ -z "$times" ] || record_times "$1" $times
}

# estimate_secs KIND STEP:GUESS...: the seconds the steps should take, from
# the times of earlier runs of KIND, else their GUESS; prints "SECS GUESSED"
# (GUESSED: how many steps were never timed).
estimate_secs() {
	local file=$TIMES/$1.list
	shift
	[ -f "$file" ] || file=/dev/null
	printf '%s\n' "$@" | awk -F: -v times="$file" '
		BEGIN { while ((getline l < times) > 0) { split(l, w, " "); t[w[1]] = w[2] } }
		$1 in t { s += t[$1]; next }
		{ s += $2; g++ }
		END { printf "%d %d\n", s, g }'
}

# estimate_tests KIND LIST FSLIST [LIST FSLIST...]: estimate_text for running
# the tests of each list file LIST on each target of its FSLIST, from earlier
# runs of KIND; never timed, a boot counts 40 s and a test a thirtieth of
# its timeout (that makes the whole suite about 11 minutes, as measured).
estimate_tests() {
	local kind=$1 fs steps=(boot:40) tests secs guessed
	shift
	while [ $# -ge 2 ]; do
		tests=$(list_entries "$1")
		for fs in $2; do
			mapfile -t -O "${#steps[@]}" steps < <(awk -v fs="$fs" \
				'{ printf "%s/%s:%d\n", fs, $1, $3 / 30 }' <<<"$tests")
		done
		shift 2
	done
	read -r secs guessed < <(estimate_secs "$kind" "${steps[@]}")
	estimate_text "$secs" "$guessed" "${#steps[@]}"
}

# estimate_text SECS GUESSED TOTAL: "about 5 min (from earlier runs)".
estimate_text() {
	local mins=$((($1 + 59) / 60)) how="from earlier runs"
	[ "$2" = 0 ] || how="a guess: $2 of $3 steps never timed here"
	[ "$2" != "$3" ] || how="a guess: never timed here"
	echo "about $mins min ($how)"
}

# series_patches: the patch names of the series, in order.
series_patches() {
	list_entries "$TOP/series" | awk '{print $1}'
}

# patch_files PATCH...: the files the patches change (the b/ side of their
# diffs).
patch_files() {
	local p
	for p in "$@"; do
		sed -n 's|^+++ b/||p' "$TOP/patches/$p" | sed 's/[[:space:]].*//'
	done
}

# quilt_in DIR ARGS...: quilt in the tree DIR on the repository's patches/
# and series, with the series' settings (scripts/data/quiltrc).
quilt_in() {
	local dir=$1
	shift
	(cd "$dir" &&
		QUILT_PATCHES=$TOP/patches QUILT_SERIES=$TOP/series QUILT_PC=.pc \
		quilt --quiltrc "$DATA_DIR/quiltrc" "$@")
}

# guest_value DIR WORD KEY: the value of KEY=... in the guest's line
# "WORD ... nonce=<the run's nonce>" on the results port of the run-qemu.sh
# run DIR (the last such line); empty when it sent none.
guest_value() {
	local nonce
	nonce=$(cat "$1/nonce" 2>/dev/null) || return 0
	awk -v word="$2" -v key="$3=" -v tail="nonce=$nonce" '
		$1 == word && $NF == tail {
			for (i = 2; i < NF; i++)
				if (index($i, key) == 1)
					v = substr($i, length(key) + 1)
		}
		END { print v }' "$1/channel.log" 2>/dev/null || true
}

# guest_cmd_exit DIR: the exit status the guest sent for its command
# (run-qemu.sh --mode cmd), empty when it sent none.
guest_cmd_exit() {
	local nonce
	nonce=$(cat "$1/nonce" 2>/dev/null) || return 0
	sed -n "s/^uncached-cmd-exit \([0-9]*\) nonce=$nonce\$/\1/p" "$1/channel.log" 2>/dev/null || true
}

# given_value DIR KEY: what run-qemu.sh gave the guest (DIR/resources).
given_value() {
	sed -n "s/^$2=//p" "$1/resources" 2>/dev/null || true
}

# check_guest_resources DIR: whether the guest of the run-qemu.sh run DIR
# had the CPUs and memory it was given, as its /init reported them. Prints
# one line, "2 online CPUs (2 given), MemTotal 350 MiB (384 MiB given)";
# returns 1, the line saying why, when it had fewer CPUs, less memory than
# run-qemu.sh's floor, or did not report them. Every script that judges a
# guest calls this.
check_guest_resources() {
	local dir=$1 cpus kib min online total line problems=()
	cpus=$(given_value "$dir" cpus)
	kib=$(given_value "$dir" mem_kib)
	min=$(given_value "$dir" mem_min_kib)
	if [ -z "$cpus" ] || [ -z "$kib" ] || [ -z "$min" ]; then
		echo "$dir/resources does not say what the guest was given (an old run?)"
		return 1
	fi
	online=$(guest_value "$dir" uncached-cpus online)
	total=$(guest_value "$dir" uncached-mem total_kib)
	if [ -z "$online" ]; then
		problems+=("the guest never reported its online CPUs ($cpus given)")
	elif [ "$online" != "$cpus" ]; then
		problems+=("the guest had $online online CPU(s), $cpus given")
	fi
	if ! [[ $total =~ ^[0-9]+$ ]]; then
		problems+=("the guest never reported its memory ($((kib / 1024)) MiB given)")
	elif [ "$total" -lt "$min" ] || [ "$total" -gt "$kib" ]; then
		problems+=("the guest had MemTotal $((total / 1024)) MiB, $((kib / 1024)) MiB given (at least $((min / 1024)) MiB expected)")
	fi
	if [ ${#problems[@]} -gt 0 ]; then
		printf -v line '%s; ' "${problems[@]}"
		echo "CPUs/memory: ${line%; }"
		return 1
	fi
	echo "$online online CPUs ($cpus given), MemTotal $((total / 1024)) MiB ($((kib / 1024)) MiB given)"
}

[ "${BASH_SOURCE[0]}" != "$0" ] || { script_help; exit 0; }
