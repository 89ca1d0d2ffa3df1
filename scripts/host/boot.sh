#!/usr/bin/env bash
# boot.sh TREE FLAVOR [CMD] - boot build/kernel/TREE-FLAVOR (make boot:
# patched test) with the test initramfs and fresh, mounted disks
# (/mnt/ext4, /mnt/xfs, /mnt/btrfs). Without CMD: an interactive busybox
# shell on this terminal ('reboot -f' leaves). With CMD: run it in the guest
# (from /mnt), print its output and exit with its exit status; fail if the
# guest did not have the CPUs and memory it was given (a replay on fewer
# CPUs than asked is not the run it replays).
# Environment: QEMU_TIMEOUT (with CMD), QEMU_MEM, QEMU_SMP as for qemu-test.
# ROOTFS=host: the host's userland instead of busybox (bash, fio, xfs_io,
# rsync...: the host's / read-only over virtio-9p, tmpfs where programs
# write; initramfs/host-init), 1G of memory by default; 'exit' leaves.
# With CMD it is judged as every test guest is (verdict.sh's check_guest:
# the done signal with the run's nonce, CPUs and memory, no kernel splat
# in the console log) and fails on any of them whatever the command's
# status.
# Logs: build/results/boot/console.log.
set -euo pipefail
. "$(dirname "$0")/../lib/verdict.sh"

main() {
	help_if_asked "$@"
	local usage="boot.sh TREE FLAVOR [CMD]" cmd=${3:-} dir=$RESULTS/boot kernel rc resources
	[ $# -le 3 ] || die "usage: $usage"
	tree_flavor_args "$usage" "${@:1:2}"
	GUEST_ROOTFS=${ROOTFS:-busybox}
	guest_rootfs "$GUEST_ROOTFS"
	if [ "$GUEST_ROOTFS" = host ]; then
		GUEST_MEM=1G
		"$HOST_DIR/build-host-initramfs.sh"
	fi
	kernel=$(built_kernel "$TREE" "$FLAVOR")
	if [ -z "$cmd" ]; then
		[ -t 0 ] || die "an interactive shell needs a terminal; give a command with CMD='...'"
		run_guest "$kernel" "$dir" --mode shell --timeout 86400
		return
	fi
	run_guest "$kernel" "$dir" --mode cmd --cmd "$cmd" </dev/null
	rc=$(guest_cmd_exit "$dir")
	[ -n "$rc" ] || die "the guest did not report the command's exit status (see $dir/console.log)"
	if [ "$GUEST_ROOTFS" = host ]; then
		check_guest "$dir" uncached-done
		report_failures || die "the guest failed its checks (see $dir/console.log)"
	else
		resources=$(check_guest_resources "$dir") || die "$resources (see $dir/console.log)"
	fi
	exit "$rc"
}

main "$@"
