# shellcheck shell=bash
# lib.sh - common helpers for the harness scripts. Source it; do not run it
# (run, it prints this). Every script calls help_if_asked "$@" first, so
# 'scripts/NAME --help' (or -h) prints the script's header comment.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}

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
	list_entries "$TOP/scripts/linux-source.version"
}

# Paths shared by several scripts.
SRC_DIR=$BUILD/src
PRISTINE_SRC=$SRC_DIR/pristine
PATCHED_SRC=$SRC_DIR/patched
RESULTS=$BUILD/results

# series_patches: the patch names of the series, in order.
series_patches() {
	list_entries "$TOP/series" | awk '{print $1}'
}

# quilt_in DIR ARGS...: quilt in the tree DIR on the repository's patches/
# and series, with the series' settings (scripts/quiltrc).
quilt_in() {
	local dir=$1
	shift
	(cd "$dir" &&
		QUILT_PATCHES=$TOP/patches QUILT_SERIES=$TOP/series QUILT_PC=.pc \
		quilt --quiltrc "$TOP/scripts/quiltrc" "$@")
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
