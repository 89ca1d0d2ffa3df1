#!/usr/bin/env bash
# fstests-guest.sh CONF - the guest side of make fstests: runs in the
# host-userland guest (ROOTFS=host, initramfs/host-init runs it with
# bash), never on the host. CONF (written by scripts/runs/fstests.sh, read over
# the read-only root share) sets:
#   FSTYP         the filesystem
#   FSTESTS_DIR   the fstests tree the host built (read-only here)
#   TEST_SERIAL, SCRATCH_SERIAL   the NVMe serials of TEST_DEV, SCRATCH_DEV
#                 (their nodes: UNCACHED_<SERIAL>_DEV, from host-init)
#   TESTS_FILE, EXCLUDE_FILE   the tests to run, fstests' -E file
#   OUT_DIR       the writable share: local.config, results/ (RESULT_BASE),
#                 vmstat.before, vmstat.after
# Prints fstests' own output (one line per test) and "fstests: ..." lines;
# exits with check's status.
set -euo pipefail

say() { echo "fstests: $*"; }
die() { say "error: $*" >&2; exit 1; }

# serial_dev SERIAL: the device node host-init found for the disk SERIAL.
serial_dev() {
	local var
	var=UNCACHED_$(tr 'a-z-' 'A-Z_' <<<"$1")_DEV
	[ -n "${!var:-}" ] || die "no NVMe disk with serial $1 ($var is unset)"
	echo "${!var}"
}

write_config() {
	local test_dev scratch_dev
	test_dev=$(serial_dev "$TEST_SERIAL")
	scratch_dev=$(serial_dev "$SCRATCH_SERIAL")
	mkdir -p /mnt/test /mnt/scratch "$OUT_DIR/results"
	cat >"$OUT_DIR/local.config" <<-EOF
	export FSTYP=$FSTYP
	export TEST_DEV=$test_dev
	export TEST_DIR=/mnt/test
	export SCRATCH_DEV=$scratch_dev
	export SCRATCH_MNT=/mnt/scratch
	export RESULT_BASE=$OUT_DIR/results
	EOF
}

# vmstat_uncached FILE: the uncached_* counters (none on pristine 6.12).
vmstat_uncached() {
	grep '^uncached_' /proc/vmstat >"$1" || true
}

main() {
	[ $# -eq 1 ] || die "usage: fstests-guest.sh CONF"
	local tests rc=0
	# shellcheck source=/dev/null # written by scripts/runs/fstests.sh
	. "$1"
	write_config
	mapfile -t tests <"$TESTS_FILE"
	# ./check without a test name runs the whole suite
	[ ${#tests[@]} -gt 0 ] || die "$TESTS_FILE names no test"
	say "$FSTYP: ${#tests[@]} tests; $(paste -s -d ' ' "$OUT_DIR/local.config" | sed 's/export //g')"
	vmstat_uncached "$OUT_DIR/vmstat.before"
	cd "$FSTESTS_DIR"
	HOST_OPTIONS=$OUT_DIR/local.config ./check -R xunit -E "$EXCLUDE_FILE" "${tests[@]}" || rc=$?
	vmstat_uncached "$OUT_DIR/vmstat.after"
	say "$FSTYP: check exit status $rc"
	return "$rc"
}

main "$@"
