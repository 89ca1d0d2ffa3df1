#!/usr/bin/env bash
# make-disks.sh DIR [FS...] - create and format fresh disk images DIR/FS.img
# for the filesystems of scripts/disks.list (all, or the ones named), on
# image files only. Prints the QEMU arguments that attach them as NVMe disks
# with serial FS. DISKS_LIST names another list of the same format (make
# bench uses bigger disks).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DISKS_LIST=${DISKS_LIST:-$DISKS_FILE}

disk_line() {
	list_entries "$DISKS_LIST" | awk -v fs="$1" '$1 == fs'
}

make_disk() {
	local dir=$1 fs=$2 line size mkfs img
	line=$(disk_line "$fs")
	[ -n "$line" ] || die "no disk '$fs' in $DISKS_LIST"
	size=$(echo "$line" | awk '{print $2}')
	mkfs=$(echo "$line" | awk '{$1 = $2 = ""; sub(/^ +/, ""); print}')
	# the command is a host tool or one of our scripts (devices.list)
	PATH=$TOP/scripts:$PATH need_cmd "${mkfs%% *}"
	img=$dir/$fs.img
	rm -f "$img"
	truncate -s "$size" "$img"
	# shellcheck disable=SC2086
	PATH=$TOP/scripts:$PATH $mkfs "$img" >"$dir/$fs.mkfs.log" 2>&1 ||
		{ cat "$dir/$fs.mkfs.log" >&2; die "$mkfs $img failed"; }
	qemu_disk_args "$img" "$fs"
}

main() {
	help_if_asked "$@"
	[ $# -ge 1 ] || die "usage: make-disks.sh DIR [FS...]"
	local dir=$1 fs fslist
	shift
	fslist=("$@")
	[ $# -gt 0 ] || mapfile -t fslist < <(first_words "$DISKS_LIST")
	mkdir -p "$dir"
	for fs in "${fslist[@]}"; do
		make_disk "$dir" "$fs"
	done
}

main "$@"
