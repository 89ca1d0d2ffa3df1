#!/usr/bin/env bash
# qemu-test.sh [--tests 'NAME...'] [--fs 'FS...'] TREE FLAVOR - boot
# build/kernel/TREE-FLAVOR (make qemu-test: patched test) with the test
# initramfs, run the guest tests on every filesystem and judge the run
# (verdict.sh).
#   --tests  only these tests of tests/tests.list (make qemu-test TESTS=...)
#   --fs     only these filesystems of scripts/disks.list (make ... FS=...)
# Empty or absent: all of them. A subset is judged like the whole suite:
# the full plan of the tests chosen on each filesystem chosen, the done
# signal, no kernel splat.
# Results and logs: build/results/qemu-test/ (console.log, FS.tap, summary;
# tests.list for a subset of the tests); the other runs keep theirs next
# to it (stress, crash, baseline, ...).
# Environment: QEMU_TIMEOUT, QEMU_MEM, QEMU_SMP (defaults: GUEST_* in
# lib.sh: 1800 s, 384M, 2).
# Sourced (by qemu-baseline.sh), it only defines run_suite and friends,
# and the checks of verdict.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/verdict.sh"

SUITE_TESTS=	# the tests chosen (--tests); empty: all of tests/tests.list
SUITE_FS=	# the filesystems chosen (--fs); empty: all of scripts/disks.list

# check_names WHAT LIST NAME...: fail unless every NAME is a first word of
# the list file LIST, naming the valid ones.
check_names() {
	local what=$1 list=$2 valid name
	shift 2
	valid=$(first_words "$list")
	for name in "$@"; do
		grep -qxF -- "$name" <<<"$valid" ||
			die "unknown $what '$name'; ${list#"$TOP"/} has: $(paste -s -d ' ' <<<"$valid")"
	done
}

# chosen LIST WORDS: the lines of the list file LIST whose first word is one
# of WORDS (all lines when WORDS is empty), in the list's order.
chosen() {
	list_entries "$1" | awk -v words="$2" '
		BEGIN { n = split(words, w, " "); for (i = 1; i <= n; i++) want[w[i]] = 1 }
		n == 0 || ($1 in want)'
}

# The filesystems under test, the tests and their number.
suite_fslist() {
	chosen "$DISKS_FILE" "$SUITE_FS" | awk '{print $1}' | paste -s -d ' '
}

suite_tests() {
	chosen "$TOP/tests/tests.list" "$SUITE_TESTS"
}

suite_ntests() {
	suite_tests | wc -l
}

# choose_subset TESTS FS: check and keep the subset of --tests and --fs.
choose_subset() {
	local tests fs
	read -ra tests <<<"$1"
	read -ra fs <<<"$2"
	check_names test "$TOP/tests/tests.list" "${tests[@]}"
	check_names filesystem "$DISKS_FILE" "${fs[@]}"
	SUITE_TESTS=${tests[*]}
	SUITE_FS=${fs[*]}
}

# run_suite KERNEL DIR: boot KERNEL, run the tests chosen (all of
# tests/tests.list by default) on the filesystems chosen, and collect the
# results in DIR (run-qemu.sh). Prints an estimate first (from the times
# of earlier runs of the same kind, build/times/) and a line per test.
run_suite() {
	local kernel=$1 dir=$2 fslist list=() sublist=$2.tests.list kind=${2##*/}
	fslist=$(suite_fslist)
	mkdir -p "$dir"
	if [ -n "$SUITE_TESTS" ]; then
		suite_tests >"$sublist"
		list=(--tests-list "$sublist")
	fi
	log "booting ${kernel#"$PWD"/}: $(suite_ntests) tests on $fslist," \
		"$(estimate_tests "$kind" <(suite_tests) "$fslist")"
	watch_guest $(($(suite_ntests) * $(wc -w <<<"$fslist"))) 0 - \
		"$kernel" "$dir" --fs "$fslist" "${list[@]}"
	record_test_times "$kind" "$dir/console.log"
	[ -z "$SUITE_TESTS" ] || mv "$sublist" "$dir/tests.list"
}

USAGE="qemu-test.sh [--tests 'NAME...'] [--fs 'FS...'] TREE FLAVOR"

main() {
	help_if_asked "$@"
	local want_tests='' want_fs='' dir=$RESULTS/qemu-test kernel
	while [ $# -gt 2 ]; do
		case $1 in
		--tests) want_tests=$2 ;;
		--fs) want_fs=$2 ;;
		*) die "usage: $USAGE" ;;
		esac
		shift 2
	done
	tree_flavor_args "$USAGE" "$@"
	choose_subset "$want_tests" "$want_fs"
	kernel=$(built_kernel "$TREE" "$FLAVOR")
	run_suite "$kernel" "$dir"
	judge_tests "$dir" "$(suite_fslist)" "$(suite_ntests)" | tee "$dir/summary"
}

[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
