#!/usr/bin/env bash
# make-disks.sh DIR [NAME...] - create and format fresh disk images
# DIR/NAME.img for the disks named (default: every disk of DISKS_LIST when
# set, else the filesystems of scripts/data/disks.list), as the disk lists
# describe them (scripts/data/disks.list, matrix-disks.list, devices.list; or
# DISKS_LIST: make bench has bigger disks), on image files only. Prints the QEMU arguments that attach them
# as NVMe disks with serial NAME.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

make_disk() {
	local dir=$1 name=$2 line size mkfs img
	line=$(disk_line "$name")
	[ -n "$line" ] || die "no disk '$name' in $(disk_lists | paste -s -d ' ')"
	size=$(awk '{print $2}' <<<"$line")
	mkfs=$(awk '{$1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); print}' <<<"$line")
	[ -n "$mkfs" ] || die "disk '$name' has no mkfs command (columns: name size type options mkfs)"
	# the command is a host tool or one of our scripts (devices.list)
	PATH=$HOST_DIR:$PATH need_cmd "${mkfs%% *}"
	img=$dir/$name.img
	rm -f "$img"
	truncate -s "$size" "$img"
	# shellcheck disable=SC2086
	PATH=$HOST_DIR:$PATH $mkfs "$img" >"$dir/$name.mkfs.log" 2>&1 ||
		{ cat "$dir/$name.mkfs.log" >&2; die "$mkfs $img failed"; }
	qemu_disk_args "$img" "$name"
}

main() {
	help_if_asked "$@"
	[ $# -ge 1 ] || die "usage: make-disks.sh DIR [NAME...]"
	local dir=$1 name names
	shift
	names=("$@")
	if [ $# = 0 ] && [ -n "${DISKS_LIST:-}" ]; then
		mapfile -t names < <(first_words "$DISKS_LIST")
	elif [ $# = 0 ]; then
		read -ra names <<<"$(all_filesystems)"
	fi
	mkdir -p "$dir"
	for name in "${names[@]}"; do
		make_disk "$dir" "$name"
	done
}

main "$@"
