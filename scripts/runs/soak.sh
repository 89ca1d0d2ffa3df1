#!/usr/bin/env bash
# soak.sh TREE FLAVOR - the long checker run behind 'make soak', on
# build/kernel/TREE-FLAVOR (make soak: patched test, the debug kernel, so
# any kernel splat fails): the checker part of 'make stress', long and on
# every configuration. The tests of tests/stress.list (the randomized
# operation checker uncached_fsx, SOAK_NPROC processes of SOAK_OPS
# operations each, and uncached_shared_rw, SOAK_OPS / 400 rounds, 2 to
# 254) run on each filesystem target of scripts/data/disks.list and
# scripts/data/matrix-disks.list, those of tests/stress-blockdev.list on the
# block-device target; one guest boot per target, each judged like make
# stress (verdict.sh: done signal, CPUs and memory, full TAP plans, no
# failing case, no kernel splat).
# It ends with a line per target (the checker operations that passed, the
# checker's time from the runner's kernel-log markers, operations per
# second) and "N passed, N failed" over the targets, and exits non-zero
# when one failed, naming the seed and the command that replays it.
# Environment:
#   SOAK_OPS      operations per checker process (default 50000: 100,000
#                 per target with two processes)
#   SOAK_NPROC    checker processes per target (default 2, at most 64)
#   SOAK_SEED     the seed of every target (default: that of the run being
#                 continued, else random; printed; replays a run)
#   SOAK_FS       the targets (default: those of scripts/data/disks.list and
#                 scripts/data/matrix-disks.list, and blockdev)
#   SOAK_TIMEOUT  seconds per guest (default: 600 plus the time limits of
#                 its tests, which grow with the budget: they allow
#                 20 operations per second and process pair)
#   SOAK_RESTART=1  start over: forget the targets that passed
#   QEMU_TIMEOUT, QEMU_MEM (default 1G), QEMU_SMP (2): as for qemu-test
# Resumable: build/results/soak/state holds a line per finished target,
#   TARGET SEED OPS NPROC passed|failed OPS_DONE SECONDS
# (OPS_DONE: the checker operations that passed; SECONDS: the checker's
# time). A rerun with the same SOAK_OPS, SOAK_NPROC and seed continues
# that run: it skips the targets that passed, saying so, and runs the
# others (those that failed again). Without SOAK_SEED a rerun takes the
# seed of the state file while one of the targets has not passed. Another
# seed or budget, or SOAK_RESTART=1, starts over (the old state becomes
# state.old).
# Results: build/results/soak/TARGET/ (console.log, TARGET.tap, summary),
# the final report in build/results/soak/summary.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

OPS=${SOAK_OPS:-50000}
NPROC=${SOAK_NPROC:-2}
SEED=${SOAK_SEED:-}
TARGETS=${SOAK_FS:-}	# check_targets: all of them when empty
OUT=$RESULTS/soak
STATE=$OUT/state
KIND=soak-$OPS-$NPROC	# the test times of earlier runs, for estimates
# The tests' time limits allow MIN_RATE checker operations per second (per
# two processes); FS_LIST and DEV_LIST: tests/stress.list and
# tests/stress-blockdev.list with those limits (write_list).
MIN_RATE=20
FS_LIST=
DEV_LIST=
GUEST_MEM=1G
USAGE="soak.sh TREE FLAVOR"

# all_targets: every filesystem target and the block-device target.
all_targets() {
	echo "$(all_filesystems) $(matrix_filesystems) $(device_target)"
}

# check_targets: TARGETS (SOAK_FS), all of them when empty; each a target
# and named once.
check_targets() {
	local all name seen=' '
	all=" $(all_targets) "
	[ -n "$TARGETS" ] || TARGETS=$(all_targets)
	for name in $TARGETS; do
		[[ $all == *" $name "* ]] ||
			die "SOAK_FS: no target '$name'; the targets: $(all_targets)"
		[[ $seen != *" $name "* ]] || die "SOAK_FS names '$name' twice"
		seen+="$name "
	done
	TARGETS=${seen# }
}

# check_args TREE FLAVOR: check the settings and the arguments; sets TREE,
# FLAVOR and KERNEL.
check_args() {
	[[ $OPS =~ ^[1-9][0-9]{0,9}$ && $OPS -le 1000000000 ]] ||
		die "SOAK_OPS must be a number of operations, 1 to 1000000000, not '$OPS'"
	[[ $NPROC =~ ^[1-9][0-9]?$ && $NPROC -le 64 ]] ||
		die "SOAK_NPROC must be a number of processes, 1 to 64, not '$NPROC'"
	[[ $SEED =~ ^(0|[1-9][0-9]{0,18})?$ ]] ||
		die "SOAK_SEED must be a number (at most 19 digits, no leading zero), not '$SEED'"
	[[ ${SOAK_TIMEOUT:-1} =~ ^[1-9][0-9]*$ ]] ||
		die "SOAK_TIMEOUT must be a number of seconds, not '$SOAK_TIMEOUT'"
	[[ ${SOAK_RESTART:-0} =~ ^[01]$ ]] ||
		die "SOAK_RESTART must be 0 or 1, not '$SOAK_RESTART'"
	check_targets
	tree_flavor_kernel "$USAGE" "$@"
}

# state_run: "SEED OPS NPROC" of the run in the state file (empty: none).
state_run() {
	[ ! -s "$STATE" ] || awk 'NR == 1 { print $2, $3, $4 }' "$STATE"
}

# choose_seed: SOAK_SEED; else the seed of the run in the state file, when
# it has this budget, one of the targets has not passed in it and
# SOAK_RESTART is not 1; else a random one.
choose_seed() {
	local seed ops nproc
	[ -z "$SEED" ] || return 0
	read -r seed ops nproc <<<"$(state_run)" || true
	SEED=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
	[ "${SOAK_RESTART:-0}" != 1 ] && [ "${ops:-} ${nproc:-}" = "$OPS $NPROC" ] ||
		return 0
	if [ -z "$(failed_targets)" ]; then
		log "soak: the run of seed $seed passed on every target: a new run"
	else
		SEED=$seed
		log "soak: continuing the run of seed $SEED (SOAK_RESTART=1 starts a new one)"
	fi
}

# open_state: keep the state file when it is this run's (seed and budget)
# and SOAK_RESTART is not 1; otherwise start over, the old one kept as
# state.old.
open_state() {
	local run seed ops nproc
	mkdir -p "$OUT"
	run=$(state_run)
	if [ -z "$run" ] || { [ "$run" = "$SEED $OPS $NPROC" ] && [ "${SOAK_RESTART:-0}" != 1 ]; }; then
		return 0
	fi
	read -r seed ops nproc <<<"$run"
	log "soak: starting over (the state of seed $seed, $ops ops x $nproc processes, is now state.old)"
	mv "$STATE" "$STATE.old"
}

# state_line TARGET: the state file's line of TARGET (empty: none).
state_line() {
	[ ! -s "$STATE" ] || awk -v t="$1" '$1 == t' "$STATE"
}

# record_state TARGET passed|failed OPS_DONE SECONDS: TARGET's line.
record_state() {
	{
		[ ! -s "$STATE" ] || awk -v t="$1" '$1 != t' "$STATE"
		echo "$1 $SEED $OPS $NPROC $2 $3 $4"
	} >"$STATE.tmp"
	mv "$STATE.tmp" "$STATE"
}

# write_list LIST: a copy of the test list LIST under OUT whose time limits
# allow the budget at MIN_RATE; prints its path.
write_list() {
	local out=$OUT/${1##*/} need=$((OPS * ((NPROC + 1) / 2) / MIN_RATE))
	list_entries "$1" | awk -v need="$need" '$3 < need { $3 = need } { print }' >"$out"
	echo "$out"
}

# target_list TARGET: the (written) test list TARGET runs.
target_list() {
	if [ "$1" = "$(device_target)" ]; then echo "$DEV_LIST"; else echo "$FS_LIST"; fi
}

# target_runs TARGET: how many tests TARGET runs.
target_runs() {
	plans_total "$(target_plans "$(target_list "$1")" "$1")"
}

# guest_limit TARGET: SOAK_TIMEOUT, else 600 s and the time limits of the
# tests TARGET runs.
guest_limit() {
	if [ -n "${SOAK_TIMEOUT:-}" ]; then
		echo "$SOAK_TIMEOUT"
	else
		target_tests "$1" <"$(target_list "$1")" | awk '{ s += $3 } END { print s + 600 }'
	fi
}

# checker_secs DIR TARGET: the seconds uncached_fsx took on TARGET in the
# run DIR, from the runner's kernel-log markers (0: it never ended).
checker_secs() {
	local times=$1/times
	rm -rf "$times"
	TIMES=$times record_test_times run "$1/console.log"
	[ -f "$times/run.list" ] || { echo 0; return; }
	awk -v step="$2/uncached_fsx" '$1 == step { s = $2 } END { print s + 0 }' "$times/run.list"
}

# run_target KERNEL TARGET TOTAL DONE: one guest for TARGET, judged, its
# line in the state file; its steps are numbered DONE + 1.. of TOTAL.
run_target() {
	local kernel=$1 target=$2 dir=$OUT/$2 result=passed GUEST_TIMEOUT
	GUEST_TIMEOUT=$(guest_limit "$target")
	log "soak: $target: booting (guest time limit $(duration "$GUEST_TIMEOUT"))"
	watch_guest "$3" "$4" - "$kernel" "$dir" --fs "$target" \
		--tests-list "$FS_LIST" --device-tests-list "$DEV_LIST" \
		--env "UNCACHED_STRESS_OPS=$OPS UNCACHED_STRESS_NPROC=$NPROC UNCACHED_STRESS_SEED=$SEED"
	record_test_times "$KIND" "$dir/console.log"
	"$LIB_DIR/verdict.sh" "$dir" "$target" "$(target_plans "$(target_list "$target")" "$target")" |
		tee "$dir/summary" >&2 || result=failed
	record_state "$target" "$result" "$(checker_ops "$dir/$target.tap")" \
		"$(checker_secs "$dir" "$target")"
	[ "$result" = passed ]
}

# todo_targets: the targets of TARGETS that did not pass in this run yet.
todo_targets() {
	local target
	for target in $TARGETS; do
		if [[ $(state_line "$target") == *" passed "* ]]; then
			log "soak: $target passed earlier in this run (seed $SEED), skipped"
		else
			echo "$target"
		fi
	done
}

# estimate TARGET...: estimate_text of running the tests on those targets.
estimate() {
	local dev target fs=()
	dev=$(device_target)
	for target in "$@"; do
		[ "$target" = "$dev" ] || fs+=("$target")
	done
	[[ " $* " == *" $dev "* ]] || dev=
	estimate_tests "$KIND" "$FS_LIST" "${fs[*]}" "$DEV_LIST" "$dev"
}

# run_targets KERNEL: a guest per target that did not pass yet.
run_targets() {
	local kernel=$1 target todo total=0 ran=0 rc=0
	mapfile -t todo < <(todo_targets)
	[ ${#todo[@]} -gt 0 ] || return 0
	for target in "${todo[@]}"; do
		total=$((total + $(target_runs "$target")))
	done
	log "soak: ${todo[*]}: $OPS ops x $NPROC processes, seed $SEED," \
		"a boot per target, $(estimate "${todo[@]}")"
	for target in "${todo[@]}"; do
		run_target "$kernel" "$target" "$total" "$ran" || rc=1
		ran=$((ran + $(target_runs "$target")))
	done
	return $rc
}

# report: a line per target (from the state file), then "N passed, N
# failed"; returns 1 when a target failed.
report() {
	local target line result ops secs rate passed=0 failed=0
	for target in $TARGETS; do
		line=$(state_line "$target")
		read -r _ _ _ _ result ops secs <<<"${line:-- - - - missing 0 0}"
		rate=-
		[ "$secs" = 0 ] || rate=$((ops / secs))
		printf '%-16s %s: %s checker operations passed in %s (%s ops/s)\n' \
			"$target" "$result" "$ops" "$(duration "$secs")" "$rate"
		if [ "$result" = passed ]; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
		fi
	done
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
}

# failed_targets: the targets of TARGETS that did not pass (or did not
# run) in the state file's run, on one line.
failed_targets() {
	local target
	for target in $TARGETS; do
		[[ $(state_line "$target") == *" passed "* ]] || printf '%s ' "$target"
	done
}

main() {
	help_if_asked "$@"
	local rc=0
	check_args "$@"
	choose_seed
	open_state
	FS_LIST=$(write_list "$TOP/tests/stress.list")
	DEV_LIST=$(write_list "$TOP/tests/stress-blockdev.list")
	run_targets "$KERNEL" || rc=1
	report | tee "$OUT/summary" || rc=1
	if [ $rc = 0 ]; then
		log "soak: passed (seed $SEED); results: ${OUT#"$PWD"/}/"
	else
		log "soak: FAILED (seed $SEED); replay: SOAK_SEED=$SEED SOAK_OPS=$OPS" \
			"SOAK_NPROC=$NPROC SOAK_FS='$(failed_targets | xargs)' make soak" \
			"(the checker's own replay command is in ${OUT#"$PWD"/}/TARGET/TARGET.tap)"
	fi
	return $rc
}

main "$@"
