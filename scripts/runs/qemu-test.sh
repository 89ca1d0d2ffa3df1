#!/usr/bin/env bash
# qemu-test.sh [--matrix] [--tests 'NAME...'] [--fs 'FS...'] TREE FLAVOR -
# boot build/kernel/TREE-FLAVOR (make qemu-test: patched test) with the
# test initramfs, run the guest tests on every filesystem target of
# scripts/data/disks.list and on the block-device target, and judge the run
# (verdict.sh). A target skips the tests tests/left-out.list names for it.
#   --matrix also the filesystem configurations of
#            scripts/data/matrix-disks.list (make qemu-test-matrix); results in
#            build/results/qemu-test-matrix/
#   --tests  only these tests of tests/tests.list and tests/blockdev.list
#            (make qemu-test TESTS=...)
#   --fs     only these filesystem targets of scripts/data/disks.list or
#            matrix-disks.list and/or the block-device target 'blockdev'
#            (make ... FS=...)
# Empty or absent: all of them. A subset is judged like the whole suite:
# the full plan of the tests chosen on each target chosen, the done
# signal, no kernel splat.
# Results and logs: build/results/qemu-test/ (console.log, FS.tap, summary;
# tests.list and blockdev.list for a subset of the tests); the other runs
# keep theirs next to it (stress, crash, baseline, ...).
# Environment: QEMU_TIMEOUT, QEMU_MEM, QEMU_SMP (defaults: GUEST_* in
# lib.sh: 3600 s, 384M, 2).
# Sourced (by qemu-baseline.sh), it only defines run_suite and friends,
# and the checks of verdict.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/verdict.sh"

SUITE_TESTS=	# the tests chosen (--tests); empty: all of both lists
SUITE_FS=	# the targets chosen (--fs); empty: all filesystems and blockdev
SUITE_MATRIX=0	# --matrix: all filesystems means those of matrix-disks.list too

# chosen LIST WORDS: the lines of the list file LIST whose first word is one
# of WORDS (all lines when WORDS is empty), in the list's order.
chosen() {
	list_entries "$1" | awk -v words="$2" '
		BEGIN { n = split(words, w, " "); for (i = 1; i <= n; i++) want[w[i]] = 1 }
		n == 0 || ($1 in want)'
}

# chosen_any LIST WORDS: like chosen, but nothing when WORDS name none of
# the list's entries (while the other list has them).
chosen_any() {
	[ -z "$2" ] || first_words "$1" | grep -qxF -f <(tr ' ' '\n' <<<"$2") || return 0
	chosen "$1" "$2"
}

# The tests chosen for the filesystems and for the block-device target.
suite_tests() {
	chosen_any "$TOP/tests/tests.list" "$SUITE_TESTS"
}

suite_device_tests() {
	chosen_any "$DEVICE_TESTS_FILE" "$SUITE_TESTS"
}

# The filesystems under test (none when no file test is chosen) and the
# block-device target (when chosen and one of its tests is).
suite_fslist() {
	local lists=("$DISKS_FILE")
	[ -n "$(suite_tests)" ] || return 0
	[ "$SUITE_MATRIX" = 0 ] && [ -z "$SUITE_FS" ] || lists+=("$MATRIX_FILE")
	cat "${lists[@]}" | chosen - "$SUITE_FS" | awk '{print $1}' | paste -s -d ' '
}

suite_device() {
	local dev
	dev=$(device_target)
	[ -n "$(suite_device_tests)" ] || return 0
	[ -z "$SUITE_FS" ] || grep -qw -- "$dev" <<<"$SUITE_FS" || return 0
	echo "$dev"
}

suite_targets() {
	echo "$(suite_fslist) $(suite_device)" | xargs
}

# suite_plans: the plan each target must have, "TARGET=N ..." (verdict.sh):
# the tests chosen less those tests/left-out.list leaves out there.
suite_plans() {
	local dev
	dev=$(suite_device)
	# shellcheck disable=SC2046 # the targets are words
	echo "$(target_plans <(suite_tests) $(suite_fslist))" \
		"${dev:+$(target_plans <(suite_device_tests) "$dev")}" | xargs
}

# suite_nruns: the number of test runs (tests x targets).
suite_nruns() {
	plans_total "$(suite_plans)"
}

# choose_subset TESTS FS: check and keep the subset of --tests and --fs.
choose_subset() {
	local tests fs
	read -ra tests <<<"$1"
	read -ra fs <<<"$2"
	check_names test "$(first_words "$TOP/tests/tests.list"; first_words "$DEVICE_TESTS_FILE")" \
		"${tests[@]}"
	check_names filesystem "$(first_words "$DISKS_FILE"; first_words "$MATRIX_FILE"
		device_target)" "${fs[@]}"
	SUITE_TESTS=${tests[*]}
	SUITE_FS=${fs[*]}
	[ -n "$(suite_targets)" ] ||
		die "the tests chosen ('$SUITE_TESTS') run on none of the targets chosen ('$SUITE_FS')"
}

# run_suite KERNEL DIR: boot KERNEL, run the tests chosen (all of
# tests/tests.list and tests/blockdev.list by default) on the targets
# chosen, and collect the results in DIR (run-qemu.sh). Prints an estimate
# first (from the times of earlier runs of the same kind, build/times/) and
# a line per test.
run_suite() {
	local kernel=$1 dir=$2 targets list=() kind=${2##*/}
	local sublist=$2.tests.list devsublist=$2.blockdev.list
	targets=$(suite_targets)
	mkdir -p "$dir"
	if [ -n "$SUITE_TESTS" ]; then
		suite_tests >"$sublist"
		suite_device_tests >"$devsublist"
		list=(--tests-list "$sublist" --device-tests-list "$devsublist")
	fi
	log "booting ${kernel#"$PWD"/}: $(suite_nruns) test runs on $targets," \
		"$(estimate_tests "$kind" <(suite_tests) "$(suite_fslist)" \
			<(suite_device_tests) "$(suite_device)")"
	watch_guest "$(suite_nruns)" 0 - "$kernel" "$dir" --fs "$targets" "${list[@]}"
	record_test_times "$kind" "$dir/console.log"
	if [ -n "$SUITE_TESTS" ]; then
		mv "$sublist" "$dir/tests.list"
		mv "$devsublist" "$dir/blockdev.list"
	fi
}

USAGE="qemu-test.sh [--matrix] [--tests 'NAME...'] [--fs 'FS...'] TREE FLAVOR"

main() {
	help_if_asked "$@"
	local dir=$RESULTS/qemu-test kernel
	run_options "$USAGE" "--matrix --tests --fs" "$@"
	[ "$OPT_MATRIX" = 0 ] || SUITE_MATRIX=1 dir=$RESULTS/qemu-test-matrix
	choose_subset "$OPT_TESTS" "$OPT_FS"
	kernel=$(built_kernel "$TREE" "$FLAVOR")
	run_suite "$kernel" "$dir"
	judge_tests "$dir" "$(suite_targets)" "$(suite_plans)" | tee "$dir/summary"
}

[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
