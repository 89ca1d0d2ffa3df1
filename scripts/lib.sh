# shellcheck shell=bash
# Common helpers for the harness scripts. Source it; do not run it.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }
warn_loud() {
	printf '%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
	printf '%s: WARNING: %s\n' "${0##*/}" "$*" >&2
	printf '%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
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
