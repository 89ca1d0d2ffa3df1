#!/usr/bin/env bash
# lint.sh - make lint (also the first step of make qemu-test): in seconds,
#   - shellcheck, every severity, on every shell script of the harness
#     (scripts/*/*.sh, scripts/quilt, initramfs/init, initramfs/host-init,
#     initramfs/run-tests, the guest commands initramfs/*.sh, .ci/run): no
#     finding at all. A finding that must stay is disabled on
#     its line with '# shellcheck disable=SCnnnn # why';
#   - the kernel's checkpatch.pl (build/src/pristine/scripts/checkpatch.pl
#     --no-tree -f, from 'make source') on the guest C files (tests/*.c,
#     tests/*.h, tests/tools/*.c, tests/selftest/*.c), the guest test
#     modules (tests/kmod/*.c) and the modules of scripts/checks/distro-abi/:
#     no error (-v lists the warnings);
#   - the host-side tests, scripts/checks/host-tests.sh (bench-report.py,
#     verdict.sh and make-help.awk on fixtures): all pass (-v lists them).
# Exits non-zero on any finding, listing them.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

CHECKPATCH=$PRISTINE_SRC/scripts/checkpatch.pl

shell_scripts() {
	printf '%s\n' "$TOP"/scripts/*/*.sh "$TOP/scripts/quilt" \
		"$TOP/initramfs/init" "$TOP/initramfs/host-init" "$TOP/initramfs/run-tests" \
		"$TOP"/initramfs/*.sh \
		"$TOP/.ci/run"
}

c_files() {
	printf '%s\n' "$TOP"/tests/*.c "$TOP"/tests/*.h "$TOP"/tests/tools/*.c \
		"$TOP"/tests/selftest/*.c "$TOP"/tests/kmod/*.c \
		"$CHECKS_DIR"/distro-abi/*.c
}

# run_shellcheck: 0 when shellcheck finds nothing; lists the findings.
run_shellcheck() {
	local files out
	mapfile -t files < <(shell_scripts)
	out=$(cd "$TOP" && shellcheck --external-sources --source-path=SCRIPTDIR --source-path=scripts/lib \
		--format=gcc "${files[@]#"$TOP"/}" 2>&1) || true
	if [ -n "$out" ]; then
		printf '%s\n' "$out" >&2
		log "shellcheck: $(wc -l <<<"$out") finding(s) in ${#files[@]} scripts"
		return 1
	fi
	log "shellcheck: ${#files[@]} scripts, no findings"
}

# run_checkpatch: 0 when checkpatch reports no error in any C file.
run_checkpatch() {
	local files out errors warnings
	need_file "$CHECKPATCH" "run 'make source' first (lint uses the kernel's checkpatch.pl)"
	mapfile -t files < <(c_files)
	out=$(cd "$TOP" && "$CHECKPATCH" --no-tree --no-summary --terse --show-types \
		-f "${files[@]#"$TOP"/}" 2>&1) || true
	errors=$(grep -c ': ERROR:' <<<"$out" || true)
	warnings=$(grep -c ': WARNING:' <<<"$out" || true)
	[ -z "$VERBOSE" ] || grep ': WARNING:' <<<"$out" >&2 || true
	if [ "$errors" != 0 ]; then
		grep ': ERROR:' <<<"$out" >&2
		log "checkpatch: $errors error(s) in ${#files[@]} C files"
		return 1
	fi
	log "checkpatch: ${#files[@]} C files, no errors" \
		"($warnings warning(s)${VERBOSE:-; lint.sh -v lists them})"
}

# run_host_tests: 0 when every host-side test passes.
run_host_tests() {
	"$CHECKS_DIR/host-tests.sh" ${VERBOSE:+-v}
}

main() {
	help_if_asked "$@"
	VERBOSE=
	case $# in
	0) ;;
	1) [[ $1 =~ ^(-v|--verbose)$ ]] || die "usage: lint.sh [-v]"; VERBOSE=1 ;;
	*) die "usage: lint.sh [-v]" ;;
	esac
	need_cmd shellcheck perl python3
	local rc=0
	run_shellcheck || rc=1
	run_checkpatch || rc=1
	run_host_tests || rc=1
	[ $rc = 0 ] || die "lint failed"
}

main "$@"
