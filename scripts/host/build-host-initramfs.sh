#!/usr/bin/env bash
# build-host-initramfs.sh - build the initramfs of the host-userland guest
# (ROOTFS=host), build/initramfs/host-initramfs.cpio: busybox-static and
# initramfs/host-init (initramfs/host-initramfs.list), which mounts the
# host's root filesystem that QEMU shares over virtio-9p and runs the
# command there. Takes a second; make boot ROOTFS=host and make fstests
# run it every time. Needs the kernel's gen_init_cpio ('make initramfs'
# builds it).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

main() {
	help_if_asked "$@"
	[ $# -eq 0 ] || die "usage: build-host-initramfs.sh"
	local out=${HOST_INITRD%/*} busybox=/bin/busybox
	need_file "$out/gen_init_cpio" "run 'make initramfs' first (it builds the kernel's gen_init_cpio)"
	need_file "$busybox" "install busybox-static ('make deps')"
	BUSYBOX=$busybox INITRAMFS_DIR=$TOP/initramfs \
		"$out/gen_init_cpio" "$TOP/initramfs/host-initramfs.list" >"$HOST_INITRD.tmp"
	mv "$HOST_INITRD.tmp" "$HOST_INITRD"
}

main "$@"
