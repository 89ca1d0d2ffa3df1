#!/usr/bin/env bash
# fstests.sh [--fs 'FS...'] [--tests 'TEST...'] TREE FLAVOR - make fstests:
# upstream fstests (xfstests, built on the host by build-fstests.sh) on
# build/kernel/TREE-FLAVOR, one guest per filesystem (ext4, XFS, btrfs:
# scripts/data/fstests-disks.list), each booted with the host's userland
# (ROOTFS=host, initramfs/host-init) and two fresh NVMe disks of its own,
# TEST_DEV and SCRATCH_DEV. The guest runs scripts/runs/fstests-guest.sh: the
# tests of tests/fstests.list less those tests/fstests-exclude.list leaves
# out there (fstests' -E file), with fstests' results directory on the
# run's writable share. Prints an estimate, then a line per finished test.
# Results: build/results/fstests/TREE-FLAVOR/: per filesystem FS/ (the
# run-qemu.sh directory: console.log, channel.log, share/results/ = fstests'
# RESULT_BASE with check.log, result.xml, per-test files), FS.status
# ("TEST STATUS SECONDS"), and report.md: passed/failed/not run per
# filesystem, per-test times, the difference to the pristine run, the
# uncached_* counters of /proc/vmstat (the 0x80 I/O fsx and fsstress did).
# Verdict (exit status): every guest passes verdict.sh's check_guest (the
# done signal with the nonce, CPUs and memory, no kernel splat), every test
# ran to its end, and no test failed that passed on the pristine kernel
# (build/results/fstests/pristine-FLAVOR/FS.status; without a pristine run
# every failure counts). TREE=pristine: the same run, which records the
# baseline; its failures are listed, not fatal.
# Environment: FSTESTS_SRC (build-fstests.sh), QEMU_TIMEOUT (per
# filesystem; default: three times its estimate and half an hour),
# QEMU_MEM (1G), QEMU_SMP (2).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/verdict.sh"

FSTESTS_DISKS=$DATA_DIR/fstests-disks.list
FSTESTS_LIST=$TOP/tests/fstests.list
FSTESTS_EXCLUDE=$TOP/tests/fstests-exclude.list
GUEST_ROOTFS=host
GUEST_MEM=1G
DISKS_LIST=$FSTESTS_DISKS	# the disks run-qemu.sh makes (lib.sh's disk_lists)
export DISKS_LIST
BOOT_GUESS=120	# seconds from QEMU's start to the first test, never timed

# all_fs: the filesystems of the disk list (its FS-test disks).
all_fs() {
	first_words "$FSTESTS_DISKS" | sed -n 's/-test$//p'
}

all_tests() {
	first_words "$FSTESTS_LIST"
}

# pick CHOSEN KIND: the words of CHOSEN (all of stdin when empty) that
# stdin lists; dies naming an unknown one.
pick() {
	local valid words
	valid=$(cat)
	[ -n "$1" ] || { echo "$valid"; return; }
	read -ra words <<<"$1"
	check_names "$2" "$valid" "${words[@]}"
	printf '%s\n' "${words[@]}"
}

chosen_fs() { all_fs | pick "$OPT_FS" filesystem; }
chosen_tests() { all_tests | pick "$OPT_TESTS" test; }

# excluded FS: "TEST REASON" of the tests left out on FS.
excluded() {
	list_entries "$FSTESTS_EXCLUDE" | awk -v fs="$1" '$1 == fs || $1 == "all" {
		t = $2; $1 = $2 = ""; sub(/^ +/, ""); print t, $0 }'
}

# fs_tests FS: the chosen tests that run on FS (not excluded there).
fs_tests() {
	chosen_tests | grep -vxF -f <(excluded "$1" | awk '{print $1}'; echo /) || true
}

# fs_to_run: the chosen filesystems where at least one chosen test runs.
fs_to_run() {
	local fs
	for fs in $(chosen_fs); do
		[ -z "$(fs_tests "$fs")" ] || echo "$fs"
	done
}

# check_fs_to_run: say which chosen filesystems run no test; fail if none does.
check_fs_to_run() {
	local fs
	for fs in $(chosen_fs); do
		[ -n "$(fs_tests "$fs")" ] ||
			log "$fs: no guest: tests/fstests-exclude.list leaves out every test chosen there"
	done
	[ -n "$(fs_to_run)" ] || die "no test chosen runs on the filesystems chosen"
}

# guess TEST: its guess column (seconds).
guess() {
	list_entries "$FSTESTS_LIST" | awk -v t="$1" '$1 == t {print $2}'
}

# fs_steps FS: the steps of FS's guest for estimate_secs, "FS/STEP:GUESS".
fs_steps() {
	local test
	echo "$1/boot:$BOOT_GUESS"
	for test in $(fs_tests "$1"); do
		echo "$1/$test:$(guess "$test")"
	done
}

# estimate: estimate_text for the whole run, from earlier runs' times.
estimate() {
	local fs steps=() secs guessed
	for fs in $(fs_to_run); do
		mapfile -t -O "${#steps[@]}" steps < <(fs_steps "$fs")
	done
	read -r secs guessed < <(estimate_secs fstests "${steps[@]}")
	estimate_text "$secs" "$guessed" "${#steps[@]}"
}

# fs_timeout FS: the time limit of FS's guest, a hang guard, not a test
# budget: three times its estimate and half an hour.
fs_timeout() {
	local secs steps
	mapfile -t steps < <(fs_steps "$1")
	read -r secs _ < <(estimate_secs fstests "${steps[@]}")
	echo $((3 * secs + 1800))
}

# write_inputs FS OUT: the guest's CONF, test list and -E file for FS.
write_inputs() {
	local fs=$1 out=$2 tree=$3
	fs_tests "$fs" >"$out/$fs.tests"
	excluded "$fs" | awk '{t = $1; $1 = ""; print t " #" $0}' >"$out/$fs.exclude"
	cat >"$out/$fs.conf" <<-CONF
	FSTYP=$(fs_type "$fs-test")
	FSTESTS_DIR=$tree
	TEST_SERIAL=$fs-test
	SCRATCH_SERIAL=$fs-scratch
	TESTS_FILE=$out/$fs.tests
	EXCLUDE_FILE=$out/$fs.exclude
	OUT_DIR=$out/$fs/share
	CONF
}

# test_result REST: the result of a test from the rest of its line in
# check's output ("13s ...  14s", "[not run] why", "- output mismatch").
test_result() {
	case $1 in
	*'[not run]'*) echo "not run: ${1#*\[not run\] }" ;;
	*'[expunged]'*) echo "excluded" ;;
	*) if [[ $1 =~ (^|\ )[0-9]+s$ ]]; then echo ok; else echo "FAILED: $1"; fi ;;
	esac
}

# result_status RESULT: test_result's RESULT in FS.status's words.
result_status() {
	case $1 in
	ok) echo passed ;;
	'not run'*) echo notrun ;;
	excluded) echo excluded ;;
	*) echo failed ;;
	esac
}

# fstests_progress FS TOTAL DONE OUT: read check's output (the guest's
# results port) on stdin; a line per finished test of OUT/FS.tests,
# numbered from DONE + 1 of TOTAL, with its time (check's, else since the
# previous line); "TEST STATUS SECONDS" (result_status) to OUT/FS.progress.
fstests_progress() {
	local fs=$1 total=$2 n=$3 line test rest result secs last=$SECONDS
	local tests=$4/$1.tests progress=$4/$1.progress
	while IFS= read -r line; do
		line=${line%$'\r'}
		if [[ $line =~ ^fstests:\  ]]; then
			printf '  guest: %s\n' "$line"
			continue
		fi
		[[ $line =~ ^([a-z0-9]+/[0-9]+)\ +(.*)$ ]] || continue
		test=${BASH_REMATCH[1]} rest=${BASH_REMATCH[2]}
		grep -qxF "$test" "$tests" || continue
		result=$(test_result "$rest")
		secs=$((SECONDS - last))
		[[ ! $result = ok || ! $rest =~ ([0-9]+)s$ ]] || secs=${BASH_REMATCH[1]}
		n=$((n + 1))
		step_line "$n" "$total" "$fs $test" "$result" "$secs"
		printf '%s %s %s\n' "$test" "$(result_status "$result")" "$secs" >>"$progress"
		last=$SECONDS
	done
}

# run_fs KERNEL FS OUT TOTAL DONE: boot a guest for FS, results in OUT/FS.
run_fs() {
	local kernel=$1 fs=$2 out=$3 dir=$3/$2 guest rc=0
	# run-qemu.sh empties it too, but tail must not see the last run's log
	rm -rf "$dir" "$out/$fs.progress" "$out/$fs.status"
	GUEST_TIMEOUT=$(fs_timeout "$fs")
	run_guest "$kernel" "$dir" --mode test --fs "$fs-test $fs-scratch" \
		--cmd "bash $RUNS_DIR/fstests-guest.sh $out/$fs.conf" \
		</dev/null >"$out/$fs.qemu.log" 2>&1 &
	guest=$!
	tail -n +1 -F --pid="$guest" "$dir/channel.log" 2>/dev/null |
		fstests_progress "$fs" "$4" "$5" "$out" >&2 || true
	wait "$guest" || rc=$?
	[ $rc = 0 ] || die "could not run QEMU for $fs (see $out/$fs.qemu.log)"
	touch "$out/$fs.progress"
}

# check_log_list DIR WORD: the tests of check.log's last "WORD: ..." line.
check_log_list() {
	sed -n "s/^$2: //p" "$1/share/results/check.log" 2>/dev/null | tail -n 1 | tr ' ' '\n'
}

# write_status FS OUT: OUT/FS.status, "TEST STATUS SECONDS" for each test
# of the list (STATUS: passed, failed, notrun, excluded, missing: the run
# ended before it did), from check.log, check.time and the progress lines.
# check writes check.log only when it ends: for a guest that was stopped,
# timed out or hung, the tests it finished have their progress line's
# status (check's own output, test by test) and the rest stay missing.
write_status() {
	local fs=$1 out=$2 dir=$2/$1 test status secs
	local -A state=() took=() left_out=()
	while read -r test _; do left_out[$test]=1; done < <(excluded "$fs")
	while read -r test; do state[$test]=passed; done < <(check_log_list "$dir" Ran)
	while read -r test; do state[$test]=notrun; done < <(check_log_list "$dir" 'Not run')
	while read -r test; do state[$test]=failed; done < <(check_log_list "$dir" Failures)
	while read -r test status secs; do
		took[$test]=$secs
		[ -n "${state[$test]:-}" ] || state[$test]=$status
	done <"$out/$fs.progress"
	while read -r test secs; do took[$test]=$secs; done \
		< <(cat "$dir/share/results/check.time" 2>/dev/null || true)
	while read -r test; do
		status=${state[$test]:-missing}
		[ -z "${left_out[$test]:-}" ] || status=excluded
		echo "$test $status ${took[$test]:--}"
	done < <(chosen_tests) >"$out/$fs.status"
}

# judge_fs FS OUT: the verdict of one filesystem's guest (failures recorded).
judge_fs() {
	local fs=$1 out=$2 dir=$2/$1 missing
	FAIL_CONTEXT=$fs
	check_guest "$dir" uncached-done
	if [ ! -s "$dir/share/results/check.log" ]; then
		fail "fstests wrote no check.log (see $dir/console.log)"
	fi
	missing=$(awk '$2 == "missing" {print $1}' "$out/$fs.status" | paste -s -d ' ')
	[ -z "$missing" ] || fail "did not run to the end: $missing"
	FAIL_CONTEXT=
}

# compare FS OUT BASE: "TEST STATUS BASE-STATUS" of the tests whose status
# differs from the run in BASE (empty when BASE has no FS.status).
compare() {
	[ -f "$3/$1.status" ] || return 0
	awk 'FNR == NR { base[$1] = $2; next }
		($1 in base) && base[$1] != $2 { print $1, $2, base[$1] }' \
		"$3/$1.status" "$2/$1.status"
}

# judge_failures FS OUT BASE: record the failures that count: on the
# patched kernel a test that passed on pristine and does not now (every
# failure without a pristine run); on pristine none.
judge_failures() {
	local fs=$1 out=$2 base=$3 bad
	[ "$TREE" = patched ] || return 0
	if [ -f "$base/$fs.status" ]; then
		bad=$(compare "$fs" "$out" "$base" | awk '$3 == "passed" {print $1 " (" $2 ")"}' |
			paste -s -d ' ')
		[ -z "$bad" ] || fail "$fs: regressions against ${base##*/}: $bad"
	else
		bad=$(awk '$2 == "failed" {print $1}' "$out/$fs.status" | paste -s -d ' ')
		[ -z "$bad" ] || fail "$fs: failed (no pristine run to compare with: make fstests TREE=pristine): $bad"
	fi
}

# counter_delta FS OUT NAME: the change of a /proc/vmstat counter over the
# run of FS ("-" without uncached_* counters: the pristine kernel).
counter_delta() {
	local share=$2/$1/share
	[ -s "$share/vmstat.after" ] || { echo -; return; }
	awk -v c="$3" 'FNR == NR { if ($1 == c) b = $2; next } $1 == c { print $2 - b }' \
		"$share/vmstat.before" "$share/vmstat.after"
}

count_status() {
	awk -v s="$2" '$2 == s { n++ } END { print n + 0 }' "$1"
}

# report OUT BASE: report.md of the run in OUT.
report() {
	local out=$1 base=$2 fs test line diff
	echo "# make fstests: $TREE-$FLAVOR"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), fstests $(cat "$BUILD/fstests/source" 2>/dev/null)"
	echo
	echo "| filesystem | passed | failed | not run | excluded | missing | guest time | uncached_read_drop | uncached_write_drop |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for fs in $(fs_to_run); do
		line="| $fs"
		for test in passed failed notrun excluded missing; do
			line+=" | $(count_status "$out/$fs.status" "$test")"
		done
		line+=" | $(duration "$(cat "$out/$fs.secs")")"
		line+=" | $(counter_delta "$fs" "$out" uncached_read_drop)"
		line+=" | $(counter_delta "$fs" "$out" uncached_write_drop) |"
		echo "$line"
	done
	echo
	for fs in $(fs_to_run); do
		[ ! -s "$out/$fs/share/results/check.log" ] || continue
		echo "$fs: fstests wrote no check.log (the guest stopped before check"
		echo "ended): its statuses are those of the progress lines ($fs.progress)."
		echo
	done
	echo "Per test (status, seconds):"
	echo
	echo "| test | $(fs_to_run | paste -s -d '|' | sed 's/|/ | /g') |"
	echo "| --- $(fs_to_run | sed 's/.*/| ---/' | paste -s -d ' ') |"
	for test in $(chosen_tests); do
		line="| $test"
		for fs in $(fs_to_run); do
			line+=" | $(awk -v t="$test" '$1 == t {print $2 " (" $3 ")"}' "$out/$fs.status")"
		done
		echo "$line |"
	done
	echo
	echo "All uncached_* counters of /proc/vmstat, change over each guest's run"
	echo "(folios; '-': the kernel has none, RWF_DONTCACHE is EOPNOTSUPP and fsx"
	echo "and fsstress do not issue it):"
	echo
	for fs in $(fs_to_run); do
		echo "- $fs: $(awk '{print $1}' "$out/$fs/share/vmstat.after" 2>/dev/null |
			while read -r test; do printf '%s %s, ' "$test" "$(counter_delta "$fs" "$out" "$test")"; done |
			sed 's/, $//')"
	done
	echo
	[ "$TREE" = patched ] || return 0
	if [ ! -d "$base" ]; then
		echo "No pristine run to compare with (make fstests TREE=pristine)."
		return
	fi
	echo "Difference to ${base##*/} (test: here, there):"
	echo
	for fs in $(fs_to_run); do
		diff=$(compare "$fs" "$out" "$base" | awk '{print $1 ": " $2 ", " $3}' | paste -s -d ';')
		echo "- $fs: ${diff:-none}$([ -f "$base/$fs.status" ] || echo ' (not run there)')"
	done
}

main() {
	help_if_asked "$@"
	local usage="fstests.sh [--fs 'FS...'] [--tests 'TEST...'] TREE FLAVOR"
	local tree out base fs total=0 done=0 start passed=0 failed=0 notrun=0
	run_options "$usage" "--fs --tests" "$@"
	KERNEL=$(built_kernel "$TREE" "$FLAVOR")
	chosen_fs >/dev/null
	chosen_tests >/dev/null
	check_fs_to_run
	"$HOST_DIR/build-host-initramfs.sh"
	tree=$("$HOST_DIR/build-fstests.sh")
	out=$RESULTS/fstests/$TREE-$FLAVOR
	base=$RESULTS/fstests/pristine-$FLAVOR
	mkdir -p "$out"
	for fs in $(fs_to_run); do
		total=$((total + $(fs_tests "$fs" | wc -l)))
	done
	log "booting ${KERNEL#"$PWD"/}: $total fstests runs on $(fs_to_run | paste -s -d ' '), $(estimate)"
	for fs in $(fs_to_run); do
		write_inputs "$fs" "$out" "$tree"
		start=$SECONDS
		run_fs "$KERNEL" "$fs" "$out" "$total" "$done"
		echo $((SECONDS - start)) >"$out/$fs.secs"
		write_status "$fs" "$out"
		done=$((done + $(fs_tests "$fs" | wc -l)))
		log "$fs: $(count_status "$out/$fs.status" passed) passed, $(count_status "$out/$fs.status" failed) failed," \
			"$(count_status "$out/$fs.status" notrun) not run in $(duration "$(cat "$out/$fs.secs")")"
		# shellcheck disable=SC2046 # "FS/TEST SECONDS" pairs
		record_times fstests $(first_test_secs "$out/$fs" | awk -v fs="$fs" '$1 > 0 {print fs "/boot", $1}') \
			$(awk -v fs="$fs" '$3 != "-" {print fs "/" $1, $3}' "$out/$fs.status")
	done
	for fs in $(fs_to_run); do
		judge_fs "$fs" "$out"
		judge_failures "$fs" "$out" "$base"
		passed=$((passed + $(count_status "$out/$fs.status" passed)))
		failed=$((failed + $(count_status "$out/$fs.status" failed)))
		notrun=$((notrun + $(count_status "$out/$fs.status" notrun)))
	done
	report "$out" "$base" >"$out/report.md"
	log "report: ${out#"$PWD"/}/report.md"
	if report_failures; then
		echo "results: ${out#"$PWD"/}/ (report.md, FS/share/results/)" >&2
	else
		echo "see ${out#"$PWD"/}/report.md and FS/console.log" >&2
	fi
	echo "$passed passed, $failed failed, $notrun not run" | tee "$out/summary"
	[ ${#FAILURES[@]} -eq 0 ]
}

# first_test_secs DIR: the guest's uptime at the first "run fstests"
# kernel message (boot and fstests' setup), 0 when there is none.
first_test_secs() {
	tr -d '\r' <"$1/console.log" 2>/dev/null |
		awk 'match($0, /\[ *[0-9]+\.[0-9]+\] run fstests /) && !found {
				ts = substr($0, RSTART + 1); sub(/^ */, "", ts); print int(ts); found = 1 }
			END { if (!found) print 0 }'
}

# sourced (by the host tests), it only defines its functions
[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
