#!/usr/bin/env bash
# host-tests.sh [-v] - the host-side tests (also a step of make lint): in
# seconds, python3 -m unittest discover on scripts/checks/host-tests/ (its
# test_*.py: standard library only, no guest, no build). They test the
# host-side logic with branches on committed fixtures
# (scripts/checks/host-tests/fixtures/): scripts/bench/bench-report.py and its package
# scripts/bench/benchreport/ (the report of a results.json against a golden
# report.md, and the helpers' branches), scripts/lib/verdict.sh (a run
# directory that passes, and each way a run fails: no done signal, a
# panic, a timeout, fewer CPUs or less memory, a failed case, a short or
# missing TAP file, a kernel splat), scripts/runs/fstests.sh's statuses
# (check.log, or the progress lines of a guest that stopped) and
# scripts/lib/make-help.awk. -v lists every test.
# Exits non-zero when a test fails, showing unittest's report, or when
# python3 is missing.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

TESTS=$CHECKS_DIR/host-tests

main() {
	help_if_asked "$@"
	local verbose='' out ran
	case $# in
	0) ;;
	1) [[ $1 =~ ^(-v|--verbose)$ ]] || die "usage: host-tests.sh [-v]"; verbose=-v ;;
	*) die "usage: host-tests.sh [-v]" ;;
	esac
	command -v python3 >/dev/null 2>&1 ||
		die "python3 is not installed: the host tests need it (run 'make deps')"
	# no __pycache__ left in the source tree
	if ! out=$(cd "$TESTS" && PYTHONDONTWRITEBYTECODE=1 \
		python3 -m unittest discover -s . -t . ${verbose:+"$verbose"} 2>&1); then
		printf '%s\n' "$out" >&2
		die "host tests failed"
	fi
	[ -z "$verbose" ] || printf '%s\n' "$out" >&2
	ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' <<<"$out")
	log "host tests: ${ran:-?} tests, all passed"
}

main "$@"
