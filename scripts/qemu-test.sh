#!/usr/bin/env bash
# qemu-test.sh [--tests 'NAME...'] [--fs 'FS...'] TREE - boot
# build/kernel/TREE-test with the test initramfs, run the guest tests on
# every filesystem and on the block-device target, and judge the run
# (verdict.sh).
#   --tests  only these tests of tests/tests.list and tests/blockdev.list
#            (make qemu-test TESTS=...)
#   --fs     only these filesystems of scripts/disks.list and/or the
#            block-device target 'blockdev' (make ... FS=...)
# Empty or absent: all of them. A subset is judged like the whole suite:
# the full plan of the tests chosen on each target chosen, the done
# signal, no kernel splat.
# Results and logs: build/results/qemu-test/ (console.log, FS.tap, summary;
# tests.list/blockdev.list for a subset of the tests); the other runs keep
# theirs next to it (stress, crash, baseline, ...).
# Environment: QEMU_TIMEOUT (seconds, default 1800), QEMU_MEM (default
# 384M: uncached_memory_pressure needs a guest with little RAM), QEMU_SMP.
# Sourced (by qemu-baseline.sh), it only defines run_suite and friends.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUITE_TESTS=	# the tests chosen (--tests); empty: all of both lists
SUITE_FS=	# the targets chosen (--fs); empty: all filesystems and blockdev
DEVICE_TESTS=$TOP/tests/blockdev.list

# first_words FILE: the first column of a list file, one per line.
first_words() {
	list_entries "$1" | awk '{print $1}'
}

# check_names WHAT VALID NAME...: fail unless every NAME is one of the
# words VALID (one per line), naming the valid ones.
check_names() {
	local what=$1 valid=$2 name
	shift 2
	for name in "$@"; do
		grep -qxF -- "$name" <<<"$valid" ||
			die "unknown $what '$name'; valid: $(paste -s -d ' ' <<<"$valid")"
	done
}

# chosen LIST WORDS: the lines of the list file LIST whose first word is one
# of WORDS (all lines when WORDS is empty), in the list's order.
chosen() {
	list_entries "$1" | awk -v words="$2" '
		BEGIN { n = split(words, w, " "); for (i = 1; i <= n; i++) want[w[i]] = 1 }
		n == 0 || ($1 in want)'
}

# chosen_any LIST WORDS: like chosen, but nothing when WORDS name none of
# the list's entries (while other lists have them).
chosen_any() {
	[ -z "$2" ] || first_words "$1" | grep -qxF -f <(tr ' ' '\n' <<<"$2") || return 0
	chosen "$1" "$2"
}

# The tests chosen for the filesystems and for the block-device target.
suite_tests() {
	chosen_any "$TOP/tests/tests.list" "$SUITE_TESTS"
}

suite_device_tests() {
	chosen_any "$DEVICE_TESTS" "$SUITE_TESTS"
}

# The filesystems under test (none when no file test is chosen) and the
# block-device target (when chosen and one of its tests is).
suite_fslist() {
	[ -n "$(suite_tests)" ] || return 0
	chosen "$TOP/scripts/disks.list" "$SUITE_FS" | awk '{print $1}' | paste -s -d ' '
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

# suite_plans: the plan each target must have, "TARGET=N ..." (verdict.sh).
suite_plans() {
	local fs dev plans=()
	for fs in $(suite_fslist); do
		plans+=("$fs=$(suite_tests | wc -l)")
	done
	dev=$(suite_device)
	[ -z "$dev" ] || plans+=("$dev=$(suite_device_tests | wc -l)")
	echo "${plans[*]}"
}

# suite_nruns: the number of test runs (tests x targets).
suite_nruns() {
	echo $(($(suite_tests | wc -l) * $(wc -w <<<"$(suite_fslist)") +
		$( [ -z "$(suite_device)" ] || suite_device_tests | wc -l)))
}

# choose_subset TESTS FS: check and keep the subset of --tests and --fs.
choose_subset() {
	local tests fs
	read -ra tests <<<"$1"
	read -ra fs <<<"$2"
	check_names test "$(first_words "$TOP/tests/tests.list"; first_words "$DEVICE_TESTS")" \
		"${tests[@]}"
	check_names filesystem "$(first_words "$TOP/scripts/disks.list"; device_target)" "${fs[@]}"
	SUITE_TESTS=${tests[*]}
	SUITE_FS=${fs[*]}
	[ -n "$(suite_targets)" ] ||
		die "the tests chosen ('$SUITE_TESTS') run on none of the targets chosen ('$SUITE_FS')"
}

# run_suite TREE DIR: boot TREE-test, run the tests chosen (all of
# tests/tests.list by default) on the filesystems chosen, and collect the
# results in DIR (run-qemu.sh). Prints an estimate first (from the times
# of earlier runs of the same kind, build/times/) and a line per test.
run_suite() {
	local tree=$1 dir=$2 kernel targets qemu rc=0 list=() sublist=$2.tests.list
	local kind=${2##*/} devsublist=$2.blockdev.list
	kernel=$BUILD/kernel/$tree-test/arch/x86/boot/bzImage
	need_file "$kernel" "build the $tree test kernel first"
	need_file "$BUILD/initramfs/initramfs.cpio" "run 'make initramfs' first"
	targets=$(suite_targets)
	mkdir -p "$dir"
	rm -f "$dir/console.log"
	if [ -n "$SUITE_TESTS" ]; then
		suite_tests >"$sublist"
		suite_device_tests >"$devsublist"
		list=(--tests-list "$sublist" --device-tests-list "$devsublist")
	fi
	log "booting $tree-test: $(suite_nruns) test runs on $targets," \
		"$(estimate_tests "$kind" <(suite_tests) "$(suite_fslist)" \
			<(suite_device_tests) "$(suite_device)")"
	"$TOP/scripts/run-qemu.sh" --kernel "$kernel" \
		--initrd "$BUILD/initramfs/initramfs.cpio" --results "$dir" \
		--timeout "${QEMU_TIMEOUT:-1800}" --mem "${QEMU_MEM:-384M}" \
		--smp "${QEMU_SMP:-2}" --fs "${targets:-none}" "${list[@]}" &
	qemu=$!
	follow_guest "$dir/console.log" "$qemu" "$(suite_nruns)"
	wait "$qemu" || rc=$?
	record_test_times "$kind" "$dir/console.log"
	if [ -n "$SUITE_TESTS" ]; then
		mv "$sublist" "$dir/tests.list"
		mv "$devsublist" "$dir/blockdev.list"
	fi
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
	"$TOP/scripts/verdict.sh" "$RESULTS/qemu-test" "$(suite_targets)" "$(suite_plans)" |
		tee "$RESULTS/qemu-test/summary"
}

[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
