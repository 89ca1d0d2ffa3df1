#!/usr/bin/env bash
# qemu-test.sh [--tests 'NAME...'] [--fs 'FS...'] TREE - boot
# build/kernel/TREE-test with the test initramfs, run the guest tests on
# every filesystem and judge the run (verdict.sh).
#   --tests  only these tests of tests/tests.list (make qemu-test TESTS=...)
#   --fs     only these filesystems of scripts/disks.list (make ... FS=...)
# Empty or absent: all of them. A subset is judged like the whole suite:
# the full plan of the tests chosen on each filesystem chosen, the done
# signal, no kernel splat.
# Results and logs: build/results/qemu-test/ (console.log, FS.tap, summary;
# tests.list for a subset of the tests); the other runs keep theirs next
# to it (stress, crash, baseline, ...).
# Environment: QEMU_TIMEOUT (seconds, default 1800), QEMU_MEM (default
# 384M: uncached_memory_pressure needs a guest with little RAM), QEMU_SMP.
# Sourced (by qemu-baseline.sh), it only defines run_suite and friends.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUITE_TESTS=	# the tests chosen (--tests); empty: all of tests/tests.list
SUITE_FS=	# the filesystems chosen (--fs); empty: all of scripts/disks.list

# first_words FILE: the first column of a list file, one per line.
first_words() {
	list_entries "$1" | awk '{print $1}'
}

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
	chosen "$TOP/scripts/disks.list" "$SUITE_FS" | awk '{print $1}' | paste -s -d ' '
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
	check_names filesystem "$TOP/scripts/disks.list" "${fs[@]}"
	SUITE_TESTS=${tests[*]}
	SUITE_FS=${fs[*]}
}

# run_suite TREE DIR: boot TREE-test, run the tests chosen (all of
# tests/tests.list by default) on the filesystems chosen, and collect the
# results in DIR (run-qemu.sh). Prints an estimate first (from the times
# of earlier runs of the same kind, build/times/) and a line per test.
run_suite() {
	local tree=$1 dir=$2 kernel fslist qemu rc=0 list=() sublist=$2.tests.list
	local kind=${2##*/}
	kernel=$BUILD/kernel/$tree-test/arch/x86/boot/bzImage
	need_file "$kernel" "build the $tree test kernel first"
	need_file "$BUILD/initramfs/initramfs.cpio" "run 'make initramfs' first"
	fslist=$(suite_fslist)
	mkdir -p "$dir"
	rm -f "$dir/console.log"
	if [ -n "$SUITE_TESTS" ]; then
		suite_tests >"$sublist"
		list=(--tests-list "$sublist")
	fi
	log "booting $tree-test: $(suite_ntests) tests on $fslist," \
		"$(estimate_tests "$kind" <(suite_tests) "$fslist")"
	"$TOP/scripts/run-qemu.sh" --kernel "$kernel" \
		--initrd "$BUILD/initramfs/initramfs.cpio" --results "$dir" \
		--timeout "${QEMU_TIMEOUT:-1800}" --mem "${QEMU_MEM:-384M}" \
		--smp "${QEMU_SMP:-2}" --fs "$fslist" "${list[@]}" &
	qemu=$!
	follow_guest "$dir/console.log" "$qemu" $(($(suite_ntests) * $(wc -w <<<"$fslist")))
	wait "$qemu" || rc=$?
	record_test_times "$kind" "$dir/console.log"
	[ -z "$SUITE_TESTS" ] || mv "$sublist" "$dir/tests.list"
	[ $rc = 0 ] || die "could not run QEMU"
}

usage() {
	die "usage: qemu-test.sh [--tests 'NAME...'] [--fs 'FS...'] patched|pristine"
}

main() {
	help_if_asked "$@"
	local want_tests='' want_fs=''
	while [ $# -gt 1 ]; do
		case $1 in
		--tests) want_tests=$2 ;;
		--fs) want_fs=$2 ;;
		*) usage ;;
		esac
		shift 2
	done
	[ $# -eq 1 ] || usage
	case $1 in patched|pristine) ;; *) usage ;; esac
	choose_subset "$want_tests" "$want_fs"
	run_suite "$1" "$RESULTS/qemu-test"
	"$TOP/scripts/verdict.sh" "$RESULTS/qemu-test" "$(suite_fslist)" "$(suite_ntests)" |
		tee "$RESULTS/qemu-test/summary"
}

[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
