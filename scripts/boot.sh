#!/usr/bin/env bash
# boot.sh TREE FLAVOR [CMD] - boot build/kernel/TREE-FLAVOR (make boot:
# patched test) with the test initramfs and fresh, mounted disks
# (/mnt/ext4, /mnt/xfs, /mnt/btrfs). Without CMD: an interactive busybox
# shell on this terminal ('reboot -f' leaves). With CMD: run it in the guest
# (from /mnt), print its output and exit with its exit status; fail if the
# guest did not have the CPUs and memory it was given (a replay on fewer
# CPUs than asked is not the run it replays).
# Environment: QEMU_TIMEOUT (with CMD), QEMU_MEM, QEMU_SMP as for qemu-test.
# Logs: build/results/boot/console.log.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

main() {
	help_if_asked "$@"
	local usage="boot.sh TREE FLAVOR [CMD]" cmd=${3:-} dir=$RESULTS/boot kernel rc resources
	[ $# -le 3 ] || die "usage: $usage"
	tree_flavor_args "$usage" "${@:1:2}"
	kernel=$(built_kernel "$TREE" "$FLAVOR")
	if [ -z "$cmd" ]; then
		[ -t 0 ] || die "an interactive shell needs a terminal; give a command with CMD='...'"
		run_guest "$kernel" "$dir" --mode shell --timeout 86400
		return
	fi
	run_guest "$kernel" "$dir" --mode cmd --cmd "$cmd" </dev/null
	rc=$(guest_cmd_exit "$dir")
	[ -n "$rc" ] || die "the guest did not report the command's exit status (see $dir/console.log)"
	resources=$(check_guest_resources "$dir") || die "$resources (see $dir/console.log)"
	exit "$rc"
}

main "$@"
