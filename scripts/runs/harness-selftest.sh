#!/usr/bin/env bash
# harness-selftest.sh TREE FLAVOR - prove that the verdict logic of
# 'make qemu-test' can fail: boot build/kernel/TREE-FLAVOR (make
# harness-selftest: patched test) once per case of
# scripts/data/harness-selftest.list (a failing test, an incomplete plan, a
# WARNING, a panic, a hang, a guest that never sends its verdict, a guest
# with fewer online CPUs than given, and one good run that must pass) and
# check what verdict.sh reports for each.
# Environment: SELFTEST_HANG_TIMEOUT (seconds of the hang case, 90);
# QEMU_TIMEOUT (the others, 900), QEMU_MEM as for qemu-test; always 2
# CPUs (the cpus case expects "2 given").
# Logs: build/results/selftest/CASE/.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

DIR=$RESULTS/selftest
GUEST_TIMEOUT=900
HANG_TIMEOUT=${SELFTEST_HANG_TIMEOUT:-90}
USAGE="harness-selftest.sh TREE FLAVOR"

# run_case NAME TEST FAULT EXPECT: 0 when the verdict is as expected.
run_case() {
	local name=$1 test=$2 fault=$3 expect=$4 dir=$DIR/$1 hang=() report rc=0
	[ "$fault" = none ] && fault=
	[ "$fault" != hang ] || hang=(--timeout "$HANG_TIMEOUT")
	mkdir -p "$DIR"
	printf '%s\tselftest\t120\n' "$test" >"$DIR/$name.list"
	run_guest "$KERNEL" "$dir" --fs ext4 --tests-list "$DIR/$name.list" \
		--selftest "$fault" --smp 2 "${hang[@]}" >"$DIR/$name.run.log" 2>&1 </dev/null ||
		die "$name: could not run QEMU (see $DIR/$name.run.log)"
	report=$("$LIB_DIR/verdict.sh" "$dir" ext4 1 2>&1) || rc=$?
	printf '%s\n' "$report" >"$DIR/$name.verdict"
	if [ "$expect" = pass ]; then
		[ $rc = 0 ] && { echo "ok: $name: passed"; return 0; }
		echo "FAILED: $name: a good run was judged a failure:"
	else
		if [ $rc != 0 ] && grep -qE "$expect" <<<"$report"; then
			echo "ok: $name: reported: $(grep -m1 '^FAIL:' <<<"$report")"
			return 0
		fi
		echo "FAILED: $name: expected a failure matching '$expect', got:"
	fi
	printf '%s\n' "$report" | sed 's/^/    /'
	return 1
}

main() {
	help_if_asked "$@"
	tree_flavor_args "$USAGE" "$@"
	KERNEL=$(built_kernel "$TREE" "$FLAVOR")
	local name test fault expect passed=0 failed=0
	rm -rf "$DIR"
	while read -r name test fault expect; do
		[ "$name" = case ] && continue
		if run_case "$name" "$test" "$fault" "$expect"; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
		fi
	done < <(list_entries "$DATA_DIR/harness-selftest.list")
	echo "$passed passed, $failed failed"
	[ $failed = 0 ]
}

main "$@"
