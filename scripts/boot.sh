#!/usr/bin/env bash
# boot.sh BZIMAGE INITRD [CMD] - boot the kernel with fresh, mounted disks
# (/mnt/ext4, /mnt/xfs, /mnt/btrfs). Without CMD: an interactive busybox
# shell on this terminal ('reboot -f' leaves). With CMD: run it in the guest
# (from /mnt), print its output and exit with its exit status; fail if the
# guest did not have the CPUs and memory it was given (a replay on fewer
# CPUs than asked is not the run it replays).
# Logs: build/results/boot/console.log.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

main() {
	help_if_asked "$@"
	[ $# -ge 2 ] || die "usage: boot.sh BZIMAGE INITRD [CMD]"
	local kernel=$1 initrd=$2 cmd=${3:-} dir=$RESULTS/boot rc nonce resources
	if [ -z "$cmd" ]; then
		[ -t 0 ] || die "an interactive shell needs a terminal; give a command with CMD='...'"
		exec "$TOP/scripts/run-qemu.sh" --kernel "$kernel" --initrd "$initrd" \
			--results "$dir" --mode shell --timeout 86400
	fi
	"$TOP/scripts/run-qemu.sh" --kernel "$kernel" --initrd "$initrd" \
		--results "$dir" --mode cmd --cmd "$cmd" --timeout "${QEMU_TIMEOUT:-1800}" </dev/null
	nonce=$(cat "$dir/nonce")
	rc=$(sed -n "s/^uncached-cmd-exit \([0-9]*\) nonce=$nonce\$/\1/p" "$dir/channel.log")
	[ -n "$rc" ] || die "the guest did not report the command's exit status (see $dir/console.log)"
	resources=$(check_guest_resources "$dir") || die "$resources (see $dir/console.log)"
	exit "$rc"
}

main "$@"
