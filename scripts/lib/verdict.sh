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
# Prints a summary per filesystem, each failure with its reason (a failed
# test with its failing cases and first diagnostics), and last
# one line "N passed, N failed, N skipped" counting the tests' own cases
# (a test that failed without a failing case of its own counts once).
# Sourced, it only defines its checks: the one library of them that every
# script judging a guest uses (qemu-test.sh, qemu-baseline.sh,
# crash-test.sh; stress.sh and harness-selftest.sh run this command):
#   check_guest DIR SIGNAL    what every guest must pass (below)
#   check_tap FS FILE NTESTS  a runner TAP file is complete
#   judge_tests DIR FS-LIST NTESTS   the whole verdict above
#   fail MESSAGE, report_failures    record and print the failures
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FAILURES=()
FAIL_CONTEXT=	# prefix of the failures recorded next (e.g. "round 2: boot 1")
TAP=()		# check_tap: the tap_counts of the file it checked

fail() { FAILURES+=("${FAIL_CONTEXT:+$FAIL_CONTEXT: }$*"); }

# report_failures: print every failure recorded ("FAIL: ..."), on stderr;
# returns 1 when there is one.
report_failures() {
	[ ${#FAILURES[@]} -gt 0 ] || return 0
	printf 'FAIL: %s\n' "${FAILURES[@]}" >&2
	return 1
}

# guest_sent DIR WORD: whether the guest of the run DIR sent the line
# "WORD nonce=<the run's nonce>" on its results port.
guest_sent() {
	grep -qx "$2 nonce=$(cat "$1/nonce")" "$1/channel.log" 2>/dev/null
}

# check_guest DIR SIGNAL: the checks every judged guest must pass: QEMU
# was not killed by the timeout, the guest sent SIGNAL with the run's nonce
# (uncached-done: all tests ran; uncached-boot: it reached /init), had the
# CPUs and memory it was given, and its console holds no kernel splat.
check_guest() {
	local dir=$1 signal=$2 status resources splats
	need_file "$dir/nonce" "not a run-qemu.sh results directory"
	if resources=$(check_guest_resources "$dir"); then
		echo "guest: $resources" >&2
	else
		fail "$resources"
	fi
	status=$(cat "$dir/qemu.status" 2>/dev/null || echo missing)
	[ "$status" != 124 ] || fail "timeout: QEMU was killed after the run's time limit (a hang?)"
	if ! guest_sent "$dir" "$signal"; then
		if grep -q 'Kernel panic' "$dir/console.log" 2>/dev/null; then
			fail "no verdict from the guest: the kernel panicked ($(grep -m1 'Kernel panic' "$dir/console.log" | sed 's/^\[[^]]*\] //'))"
		else
			fail "no verdict from the guest: it never sent '$signal' (QEMU status $status)"
		fi
	fi
	splats=$(console_splats "$dir/console.log")
	[ -z "$splats" ] || fail "kernel splat in the console log: $(head -n 1 <<<"$splats" | sed 's/^\[[^]]*\] //')"
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

# check_tap FS FILE NTESTS: FILE, the runner's TAP of FS, exists with the
# plan 1..NTESTS and all its results (whether they passed is the caller's
# to judge); sets TAP to its tap_counts. Returns 1 when it is missing.
check_tap() {
	TAP=()
	[ -s "$2" ] || { fail "$1: no TAP results"; return 1; }
	read -ra TAP < <(tap_counts "$2")
	[ "${TAP[0]}" = "$3" ] || fail "$1: TAP plan is 1..${TAP[0]}, expected 1..$3"
	[ "${TAP[1]}" = "${TAP[0]}" ] || fail "$1: incomplete TAP: ${TAP[1]} of ${TAP[0]} results"
}

# failed_cases FILE: for each test that failed in the runner TAP FILE, its
# failing cases (at most 5) and then its diagnostics (at most 8), indented,
# so the last lines of a log say what failed.
failed_cases() {
	awk '
		function show(re, max,   i, shown) {
			for (i = 0; i < n && shown < max; i++)
				if (block[i] ~ re) {
					print "    " name ": " block[i]
					shown++
				}
		}
		/^    / { block[n++] = substr($0, 5); next }
		/^not ok [0-9]+/ {
			name = $4
			show("^not ok [0-9]+", 5)
			show("^#", 8)
		}
		/^(not )?ok [0-9]+/ { n = 0 }
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

# judge_tests DIR FS-LIST PLANS: the verdict of a run-tests run (above).
judge_tests() {
	local dir=$1 fslist=$2 plans=$3 ntests fs tap passed=0 failed=0 skipped=0
	check_guest "$dir" uncached-done
	for fs in $fslist; do
		tap=$dir/$fs.tap
		ntests=$(planned "$plans" "$fs")
		if ! check_tap "$fs" "$tap" "$ntests"; then
			failed=$((failed + 1))
			continue
		fi
		echo "$fs: ${TAP[1]}/$ntests tests, cases: ${TAP[3]} passed, ${TAP[4]} failed, ${TAP[5]} skipped" >&2
		[ "${TAP[2]}" = 0 ] ||
			fail "$fs: ${TAP[2]} test(s) failed: $(grep -E '^not ok' "$tap" | head -n 3 | paste -s -d ';' || true)
$(failed_cases "$tap")"
		passed=$((passed + TAP[3]))
		failed=$((failed + TAP[4] + TAP[6]))
		skipped=$((skipped + TAP[5]))
	done
	[ "$passed" -gt 0 ] || fail "no test case passed"
	if report_failures; then
		echo "results: ${dir#"$PWD"/}/ (console.log, *.tap)" >&2
	else
		[ "$failed" -gt 0 ] || failed=${#FAILURES[@]}
		echo "see $dir/console.log and $dir/*.tap" >&2
	fi
	echo "$passed passed, $failed failed, $skipped skipped"
	[ ${#FAILURES[@]} -eq 0 ]
}

main() {
	help_if_asked "$@"
	[ $# -eq 3 ] || die "usage: verdict.sh RESULTS-DIR 'FS...' NTESTS|'FS=NTESTS...'"
	judge_tests "$@"
}

[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
