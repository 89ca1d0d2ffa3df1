#!/usr/bin/env bash
# qemu-test.sh TREE - boot build/kernel/TREE-test with the test initramfs,
# run the guest tests on every filesystem and judge the run (verdict.sh).
# Results and logs: build/results/ (console.log, FS.tap, summary).
# Environment: QEMU_TIMEOUT (seconds, default 1800), QEMU_MEM, QEMU_SMP.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# follow LOG PID: show the guest's progress lines until PID exits.
follow() {
	tail -n +1 -F --pid="$2" "$1" 2>/dev/null |
		grep --line-buffered -E '^(init|run-tests): |Kernel panic|BUG:|WARNING:' |
		sed -u 's/^/  guest: /' >&2 || true
}

main() {
	[ $# -eq 1 ] || die "usage: qemu-test.sh patched|pristine"
	local tree=$1 kernel fslist ntests qemu rc=0
	kernel=$BUILD/kernel/$tree-test/arch/x86/boot/bzImage
	need_file "$kernel" "run 'make kernel' first"
	need_file "$BUILD/initramfs/initramfs.cpio" "run 'make initramfs' first"
	fslist=$(list_entries "$TOP/scripts/disks.list" | awk '{print $1}' | paste -s -d ' ')
	ntests=$(list_entries "$TOP/tests/tests.list" | wc -l)
	mkdir -p "$RESULTS"
	rm -f "$RESULTS"/console.log
	log "booting $tree-test: $ntests tests on $fslist"
	"$TOP/scripts/run-qemu.sh" --kernel "$kernel" \
		--initrd "$BUILD/initramfs/initramfs.cpio" --results "$RESULTS" \
		--timeout "${QEMU_TIMEOUT:-1800}" --mem "${QEMU_MEM:-2G}" \
		--smp "${QEMU_SMP:-2}" --fs "$fslist" &
	qemu=$!
	follow "$RESULTS/console.log" "$qemu"
	wait "$qemu" || rc=$?
	[ $rc = 0 ] || die "could not run QEMU"
	"$TOP/scripts/verdict.sh" "$RESULTS" "$fslist" "$ntests" | tee "$RESULTS/summary"
}

main "$@"
