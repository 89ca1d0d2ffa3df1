#!/usr/bin/env bash
# qemu-test.sh TREE - boot build/kernel/TREE-test with the test initramfs,
# run the guest tests on every filesystem and judge the run (verdict.sh).
# Results and logs: build/results/qemu-test/ (console.log, FS.tap, summary);
# the other runs keep theirs next to it (stress, crash, baseline, ...).
# Environment: QEMU_TIMEOUT (seconds, default 1800), QEMU_MEM (default
# 384M: uncached_memory_pressure needs a guest with little RAM), QEMU_SMP.
# Sourced (by qemu-baseline.sh), it only defines run_suite and friends.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# follow LOG PID: show the guest's progress lines until PID exits.
follow() {
	tail -n +1 -F --pid="$2" "$1" 2>/dev/null |
		grep --line-buffered -E '^(init|run-tests): |Kernel panic|BUG:|WARNING:' |
		sed -u 's/^/  guest: /' >&2 || true
}

# The filesystems under test and the number of tests, from the lists.
suite_fslist() {
	list_entries "$TOP/scripts/disks.list" | awk '{print $1}' | paste -s -d ' '
}

suite_ntests() {
	list_entries "$TOP/tests/tests.list" | wc -l
}

# run_suite TREE DIR: boot TREE-test, run every test of tests/tests.list on
# every filesystem, and collect the results in DIR (run-qemu.sh).
run_suite() {
	local tree=$1 dir=$2 kernel fslist qemu rc=0
	kernel=$BUILD/kernel/$tree-test/arch/x86/boot/bzImage
	need_file "$kernel" "build the $tree test kernel first"
	need_file "$BUILD/initramfs/initramfs.cpio" "run 'make initramfs' first"
	fslist=$(suite_fslist)
	mkdir -p "$dir"
	rm -f "$dir/console.log"
	log "booting $tree-test: $(suite_ntests) tests on $fslist"
	"$TOP/scripts/run-qemu.sh" --kernel "$kernel" \
		--initrd "$BUILD/initramfs/initramfs.cpio" --results "$dir" \
		--timeout "${QEMU_TIMEOUT:-1800}" --mem "${QEMU_MEM:-384M}" \
		--smp "${QEMU_SMP:-2}" --fs "$fslist" &
	qemu=$!
	follow "$dir/console.log" "$qemu"
	wait "$qemu" || rc=$?
	[ $rc = 0 ] || die "could not run QEMU"
}

main() {
	help_if_asked "$@"
	[ $# -eq 1 ] || die "usage: qemu-test.sh patched|pristine"
	run_suite "$1" "$RESULTS/qemu-test"
	"$TOP/scripts/verdict.sh" "$RESULTS/qemu-test" "$(suite_fslist)" "$(suite_ntests)" |
		tee "$RESULTS/qemu-test/summary"
}

[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
