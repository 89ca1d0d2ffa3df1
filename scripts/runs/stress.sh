#!/usr/bin/env bash
# stress.sh TREE FLAVOR - the reliability run behind 'make stress', on
# build/kernel/TREE-FLAVOR (make stress: patched test, the debug kernel:
# KASAN, lockdep, DEBUG_VM and DEBUG_VM_PGFLAGS, so any kernel splat fails
# the run):
#   1. the tests of tests/stress.list on every filesystem: the randomized
#      operation checker uncached_fsx (STRESS_NPROC processes, each on its
#      own file, STRESS_OPS operations each) and uncached_shared_rw
#      (uncached readers of a file another thread rewrites buffered); and
#      those of tests/stress-blockdev.list (the checker, each process on a
#      region of its own) on the raw block device;
#   2. the crash-consistency test, scripts/runs/crash-test.sh TREE FLAVOR.
# Environment: STRESS_OPS (operations per checker process, default 6000),
# STRESS_NPROC (2), STRESS_SEED (default random; printed, replays a run),
# STRESS_CRASH=0 skips step 2; QEMU_TIMEOUT (5400), QEMU_MEM (1G),
# QEMU_SMP (2).
# Results: build/results/stress/ (console.log, FS.tap, summary) and
# build/results/crash/.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

OPS=${STRESS_OPS:-6000}
NPROC=${STRESS_NPROC:-2}
SEED=${STRESS_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
OUT=$RESULTS/stress
GUEST_TIMEOUT=5400
GUEST_MEM=1G
USAGE="stress.sh TREE FLAVOR"

# check_args TREE FLAVOR: check the settings and the arguments; sets TREE,
# FLAVOR and KERNEL.
check_args() {
	[[ $OPS =~ ^[1-9][0-9]*$ ]] || die "STRESS_OPS must be a positive number, not '$OPS'"
	[[ $NPROC =~ ^[1-9][0-9]?$ ]] || die "STRESS_NPROC must be 1..99, not '$NPROC'"
	[[ $SEED =~ ^[0-9]+$ ]] || die "STRESS_SEED must be a number, not '$SEED'"
	tree_flavor_kernel "$USAGE" "$@"
}

# run_checkers KERNEL: the tests of tests/stress.list, a line per test as
# they finish, then the verdict. Earlier runs with the same budget
# (build/times/stress-OPS-NPROC.list) give the estimate.
run_checkers() {
	local kernel=$1 fslist dev ntests ndev list=$TOP/tests/stress.list
	local devlist=$TOP/tests/stress-blockdev.list kind=stress-$OPS-$NPROC plans fs
	fslist=$(all_filesystems)
	dev=$(device_target)
	ntests=$(list_entries "$list" | wc -l)
	ndev=$(list_entries "$devlist" | wc -l)
	# shellcheck disable=SC2086 # the targets are words
	plans="$(target_plans "$list" $fslist) $(target_plans "$devlist" "$dev")"
	log "stress: $ntests tests on $fslist and $ndev on $dev, $OPS ops x $NPROC processes," \
		"seed $SEED, $(estimate_tests "$kind" "$list" "$fslist" "$devlist" "$dev")"
	watch_guest "$(plans_total "$plans")" 0 - "$kernel" "$OUT" \
		--tests-list "$list" --device-tests-list "$devlist" --fs "$fslist $dev" \
		--env "UNCACHED_STRESS_OPS=$OPS UNCACHED_STRESS_NPROC=$NPROC UNCACHED_STRESS_SEED=$SEED"
	record_test_times "$kind" "$OUT/console.log"
	"$LIB_DIR/verdict.sh" "$OUT" "$fslist $dev" "$plans" | tee "$OUT/summary"
}

# The checker's operations per filesystem (the processes that passed).
report_ops() {
	local tap
	for tap in "$OUT"/*.tap; do
		[ -e "$tap" ] || continue
		log "$(basename "$tap" .tap): $(checker_ops "$tap") checker operations passed"
	done
}

main() {
	help_if_asked "$@"
	local rc=0
	check_args "$@"
	run_checkers "$KERNEL" || rc=1
	report_ops
	if [ "${STRESS_CRASH:-1}" != 0 ]; then
		"$RUNS_DIR/crash-test.sh" "$TREE" "$FLAVOR" || rc=1
	fi
	if [ $rc = 0 ]; then
		log "stress: passed (seed $SEED); results: ${OUT#"$PWD"/}/ and ${RESULTS#"$PWD"/}/crash/"
	else
		log "stress: FAILED (seed $SEED; replay with STRESS_SEED=$SEED STRESS_OPS=$OPS)"
	fi
	return $rc
}

main "$@"
