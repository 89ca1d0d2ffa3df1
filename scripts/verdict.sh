#!/usr/bin/env bash
# verdict.sh DIR FS-LIST PLANS - judge a test run collected by run-qemu.sh.
# PLANS is the number of tests every filesystem (or target) of FS-LIST ran,
# or one TARGET=N word per target when they differ.
# The run passes only if all of these hold:
#   - the guest sent "uncached-done nonce=<this run's nonce>" on the results
#     port after all tests (a panic, a hang or an early exit never does);
#   - QEMU was not killed by the timeout;
#   - the guest reported that it had the CPUs and memory it was given
#     (check_guest_resources in lib.sh);
#   - every filesystem of FS-LIST has a TAP file with the plan 1..N and N
#     results (N from PLANS), none of them "not ok";
#   - the console log holds no kernel splat (initramfs/splat-patterns);
#   - at least one case passed.
# Prints a summary per filesystem, each failure with its reason, and last
# one line "N passed, N failed, N skipped" counting the tests' own cases
# (a test that failed without a failing case of its own counts once).
# Sourced (by qemu-baseline.sh), it only defines the checks below.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FAILURES=()
fail() { FAILURES+=("$*"); }

check_guest_verdict() {
	local dir=$1 nonce status resources
	nonce=$(cat "$dir/nonce")
	if resources=$(check_guest_resources "$dir"); then
		echo "guest: $resources" >&2
	else
		fail "$resources"
	fi
	status=$(cat "$dir/qemu.status" 2>/dev/null || echo missing)
	[ "$status" != 124 ] || fail "timeout: QEMU was killed after the run's time limit (a hang?)"
	if ! grep -qx "uncached-done nonce=$nonce" "$dir/channel.log" 2>/dev/null; then
		if grep -q 'Kernel panic' "$dir/console.log" 2>/dev/null; then
			fail "no verdict from the guest: the kernel panicked ($(grep -m1 'Kernel panic' "$dir/console.log" | sed 's/^\[[^]]*\] //'))"
		else
			fail "no verdict from the guest: it never reported that all tests ran (QEMU status $status)"
		fi
	fi
}

check_splats() {
	local lines
	lines=$(console_splats "$1")
	[ -z "$lines" ] || fail "kernel splat in the console log: $(echo "$lines" | head -n 1 | sed 's/^\[[^]]*\] //')"
}

# tap_counts FILE: "plan results notok leaf_pass leaf_fail leaf_skip extra_fail"
tap_counts() {
	awk '
		/^1\.\.[0-9]+/ { plan = substr($1, 4) + 0 }
		/^(not )?ok [0-9]+/ {
			results++
			if ($1 == "not") { notok++; if (!leaf_fail_in_test) extra++ }
			else if (/# SKIP/ && !leaves_in_test) skip++
			leaves_in_test = 0; leaf_fail_in_test = 0
		}
		/^    (not )?ok [0-9]+/ {
			leaves_in_test++
			if ($1 == "not") { lfail++; leaf_fail_in_test = 1 }
			else if (/# SKIP/) skip++
			else lpass++
		}
		END { printf "%d %d %d %d %d %d %d\n", plan, results, notok, lpass, lfail, skip, extra }
	' "$1"
}

# planned PLANS TARGET: the number of tests TARGET must have run.
planned() {
	local word
	[[ ! $1 =~ ^[0-9]+$ ]] || { echo "$1"; return; }
	for word in $1; do
		[ "${word%%=*}" != "$2" ] || { echo "${word#*=}"; return; }
	done
	die "no plan for $2 in '$1'"
}

main() {
	help_if_asked "$@"
	[ $# -eq 3 ] || die "usage: verdict.sh RESULTS-DIR 'FS...' NTESTS|'FS=NTESTS...'"
	local dir=$1 fslist=$2 plans=$3 ntests fs tap plan results notok lpass lfail skip extra
	local passed=0 failed=0 skipped=0
	need_file "$dir/nonce" "not a run-qemu.sh results directory"
	check_guest_verdict "$dir"
	check_splats "$dir/console.log"
	for fs in $fslist; do
		tap=$dir/$fs.tap
		ntests=$(planned "$plans" "$fs")
		if [ ! -s "$tap" ]; then
			fail "$fs: no TAP results"
			failed=$((failed + 1))
			continue
		fi
		read -r plan results notok lpass lfail skip extra < <(tap_counts "$tap")
		echo "$fs: $results/$ntests tests, cases: $lpass passed, $lfail failed, $skip skipped" >&2
		[ "$plan" = "$ntests" ] || fail "$fs: TAP plan is 1..$plan, expected 1..$ntests"
		[ "$results" = "$plan" ] || fail "$fs: incomplete TAP: $results of $plan results"
		[ "$notok" = 0 ] || fail "$fs: $notok test(s) failed: $(grep -E '^not ok' "$tap" | head -n 3 | paste -s -d ';' || true)"
		passed=$((passed + lpass))
		failed=$((failed + lfail + extra))
		skipped=$((skipped + skip))
	done
	[ "$passed" -gt 0 ] || fail "no test case passed"
	if [ ${#FAILURES[@]} -gt 0 ]; then
		[ "$failed" -gt 0 ] || failed=${#FAILURES[@]}
		printf 'FAIL: %s\n' "${FAILURES[@]}" >&2
		echo "see $dir/console.log and $dir/*.tap" >&2
	else
		echo "results: ${dir#"$PWD"/}/ (console.log, *.tap)" >&2
	fi
	echo "$passed passed, $failed failed, $skipped skipped"
	[ ${#FAILURES[@]} -eq 0 ]
}

[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
