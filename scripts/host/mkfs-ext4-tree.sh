#!/usr/bin/env bash
# mkfs-ext4-tree.sh IMG - format the image file IMG as ext4 holding a small
# tree of files (mkfs.ext4 -d; nothing is mounted on the host): the
# filesystem that the block-device tests mount read-only in the guest, so
# that its metadata is cached in the device's page cache.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

DIRS=8		# directories
FILES=16	# files per directory, of 1 to 16 times 3 KiB
TREE=		# the tree, a temporary directory

make_tree() {
	local root=$1 d f
	for d in $(seq 1 $DIRS); do
		mkdir -p "$root/dir$d"
		for f in $(seq 1 $FILES); do
			head -c $((f * 3072)) /dev/zero | tr '\0' "$(printf '\\%03o' $((65 + d)))" \
				>"$root/dir$d/file$f"
		done
	done
}

main() {
	help_if_asked "$@"
	[ $# -eq 1 ] || die "usage: mkfs-ext4-tree.sh IMAGE-FILE"
	need_cmd mkfs.ext4
	[ -f "$1" ] || die "$1: no such image file (create it with truncate -s first)"
	TREE=$(mktemp -d)
	trap 'rm -rf "$TREE"' EXIT
	make_tree "$TREE"
	mkfs.ext4 -F -q -d "$TREE" "$1"
}

main "$@"
