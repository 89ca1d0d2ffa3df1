#!/usr/bin/env bash
# qemu-baseline.sh TREE FLAVOR | --judge DIR - prove that the tests test
# the series: boot build/kernel/TREE-FLAVOR (make qemu-baseline: pristine
# test, the 6.12 kernel without the series, built by 'make kernel
# TREE=pristine') with the normal test initramfs (built against the
# patched headers) and tests/tests.list (tests/blockdev.list on the
# block-device target), and check on every filesystem and that target
# that
#   - every test of kind "feature" fails, and its output up to its first
#     failing case (or bail-out) names EOPNOTSUPP ("Operation not
#     supported"), the kernel's answer to an unknown RWF_ flag; a test
#     killed by its timeout or failed by a kernel splat does not count;
#   - every test of kind "integrity" passes;
# and, with the checks of verdict.sh that 'make qemu-test' passes too
# (check_guest, check_tap), that the guest sent its done signal with this
# run's nonce, had the CPUs and memory it was given, QEMU was not killed by
# the timeout, every TAP file has its full plan and the console holds no
# kernel splat.
# Prints a table (test x filesystem) and exits 0 only if the baseline
# behaves exactly like that (on the patched kernel it must fail). Results:
# build/results/baseline/ (table in baseline.txt). --judge DIR judges an
# earlier run's results instead.
set -euo pipefail
. "$(dirname "$0")/qemu-test.sh"

EOP_RE='EOPNOTSUPP|Operation not supported'
USAGE="qemu-baseline.sh TREE FLAVOR | --judge RESULTS-DIR"

# tap_tests FILE: one line per test of a runner TAP file,
# "NAME STATUS EOP REASON": STATUS ok, skip or notok; EOP yes when the
# test's output up to its first failing case or bail-out names EOPNOTSUPP;
# REASON the runner's comment (why it failed).
tap_tests() {
	awk -v re="$EOP_RE" '
		/^    / {
			if (!failed && $0 ~ re) eop = 1
			if ($0 ~ /^    (not ok [0-9]+|Bail out!)/) failed = 1
			next
		}
		/^(not )?ok [0-9]+ / {
			st = $1 == "not" ? "notok" : "ok"
			name = st == "ok" ? $3 : $4
			if (st == "ok" && / # SKIP/) st = "skip"
			i = index($0, " # ")
			print name, st, eop ? "yes" : "no", i ? substr($0, i + 3) : "-"
			eop = 0; failed = 0
		}' "$1"
}

# judge KIND STATUS EOP REASON...: the table cell of one test on one
# filesystem; returns 1 unless it is what the baseline must show.
judge() {
	local kind=$1 st=$2 eop=$3
	shift 3
	case $kind/$st in
	integrity/ok) echo ok ;;
	feature/notok)
		case "$*" in
		"kernel splat"*) echo SPLAT; return 1 ;;
		killed*) echo KILLED; return 1 ;;
		esac
		[ "$eop" = yes ] || { echo NO-EOPNOTSUPP; return 1; }
		echo EOPNOTSUPP ;;
	feature/ok) echo PASSED; return 1 ;;
	*/skip) echo SKIPPED; return 1 ;;
	integrity/notok) echo FAILED; return 1 ;;
	*) echo MISSING; return 1 ;;
	esac
}

# table DIR FS-LIST LIST: one row per test of the list file LIST, one column
# per target of FS-LIST; records a failure for every cell that is not as
# expected.
table() {
	local dir=$1 fs name kind cell row st eop reason
	local -A got=()
	for fs in $2; do
		check_tap "$fs" "$dir/$fs.tap" "$(target_tests "$fs" <"$3" | wc -l)" || continue
		while read -r name st eop reason; do
			got[$fs/$name]="$st $eop $reason"
		done < <(tap_tests "$dir/$fs.tap")
	done
	printf '%-28s %-10s' test kind
	# shellcheck disable=SC2086
	printf ' %-14s' $2
	printf '\n'
	while read -r name kind _; do
		row=$(printf '%-28s %-10s' "$name" "$kind")
		for fs in $2; do
			if left_out_tests "$fs" | grep -qxF -- "$name"; then
				row+=$(printf ' %-14s' 'left out')
				continue
			fi
			# shellcheck disable=SC2086
			cell=$(judge "$kind" ${got[$fs/$name]:-missing no -}) ||
				fail "$fs: $name ($kind): $cell (${got[$fs/$name]:-no result})"
			row+=$(printf ' %-14s' "$cell")
		done
		echo "$row"
	done < <(list_entries "$3")
}

main() {
	help_if_asked "$@"
	local dir=$RESULTS/baseline fslist dev kernel
	if [ "${1:-}" = --judge ]; then
		[ $# -eq 2 ] || die "usage: $USAGE"
		dir=$2
	else
		tree_flavor_args "$USAGE" "$@"
		kernel=$(built_kernel "$TREE" "$FLAVOR")
		run_suite "$kernel" "$dir"
	fi
	fslist=$(suite_fslist)
	dev=$(suite_device)
	check_guest "$dir" uncached-done
	{
		table "$dir" "$fslist" "$TOP/tests/tests.list"
		echo
		table "$dir" "$dev" "$DEVICE_TESTS_FILE"
	} >"$dir/baseline.txt"
	sed -i "s/ *\$//" "$dir/baseline.txt"
	cat "$dir/baseline.txt"
	if ! report_failures; then
		echo "baseline: NOT as expected; see $dir/console.log and $dir/*.tap"
		return 1
	fi
	echo "baseline: as expected: every feature test fails with EOPNOTSUPP, every integrity test passes"
}

main "$@"
