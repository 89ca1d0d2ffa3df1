#!/usr/bin/env bash
# crash-test.sh TREE FLAVOR - crash consistency of RWF_UNCACHED writes on the
# filesystems of scripts/data/disks.list, on build/kernel/TREE-FLAVOR (make
# crash-test: patched test). Each round, on fresh disks:
#   boot 1  the guest tool uncached_crash (tests/tools/uncached_crash.c)
#           writes, overwrites and syncs (fsync, fdatasync, RWF_DSYNC)
#           files with uncached writes on each filesystem in turn; every
#           writer but the last leaves a process writing unsynced data
#           behind, and the last cuts power (sysrq 'b': a reboot without
#           sync, which ends QEMU) while uncached writeback is in flight.
#           Every writer must report its synced files, and the console
#           must show the cut;
#   boot 2  on the same disks: mounting replays the journals, then
#           'uncached_crash verify' on each filesystem must exit 0: every
#           synced file has exactly the size and bytes of its last synced
#           state, every other file reads to its end without an I/O error;
#   host    after boot 2 unmounted them, every image passes its read-only
#           check (scripts/data/fsck.list); and both boots pass the checks of
#           every guest (check_guest in verdict.sh: no timeout, reached
#           /init, had the CPUs and memory given, no kernel splat).
# The filesystem cut in the middle of its writes rotates from round to
# round (the last of the list in round 1). The cut loses what the guest
# had not yet sent to its disks; what it had sent, QEMU completes (the
# images use cache=unsafe on the host), so a disk losing its volatile
# write cache is not simulated.
# Environment: CRASH_SEED (0..4294967295; default random; round N uses
# SEED + N - 1), CRASH_ROUNDS (1), QEMU_TIMEOUT (seconds per boot, 900),
# QEMU_MEM (1G), QEMU_SMP (2). Results: build/results/crash/round-N/:
# boot1/, boot2/ (run-qemu.sh's logs), verify-FS.tap, fsck-FS.log, and
# disks/ (removed when the round passed). Prints a summary per filesystem;
# exits non-zero on any failure.
set -euo pipefail
. "$(dirname "$0")/../lib/verdict.sh"

OUT=$RESULTS/crash
GUEST_TIMEOUT=900
GUEST_MEM=1G
USAGE="crash-test.sh TREE FLAVOR"
declare -A WROTE VERIFIED CHECKED REPLAY

# fsck_command FS: the read-only check of the filesystem target FS (by its
# type, scripts/data/fsck.list).
fsck_command() {
	list_entries "$DATA_DIR/fsck.list" |
		awk -v type="$(fs_type "$1")" '$1 == type { $1 = ""; sub(/^ +/, ""); print }'
}

# boot DIR CMD DONE: boot on the round's disks running CMD, a line per
# writer or verifier that finishes (DONE of the run's steps before this
# boot); sets BOOT_SECS to the seconds it took.
boot() {
	local start=$SECONDS
	watch_guest "$STEPS" "$3" "$1.out" "$KERNEL" "$1" \
		--disks "$DISKS" --fs "$FSLIST" --mode cmd --cmd "$2"
	BOOT_SECS=$((SECONDS - start))
}

# console DIR: the boot's console log without carriage returns.
console() {
	tr -d '\r' <"$1/console.log"
}

# line_no DIR REGEXP: number of the first console line matching, or 0.
line_no() {
	console "$1" | grep -n -m1 -E "$2" | cut -d: -f1 | grep . || echo 0
}

# check_boot DIR WHAT: the checks of every guest (verdict.sh), the boot
# having reached /init; failures say "round N: WHAT: ...".
check_boot() {
	FAIL_CONTEXT="round $ROUND: $2"
	check_guest "$1" uncached-boot
}

# The writers of boot 1 ran and the last one cut power.
check_write() {
	local dir=$1 last=${ORDER##* } fs rc cut reset errors
	check_boot "$dir" "boot 1"
	for fs in $ORDER; do
		WROTE[$fs]=$(console "$dir" | sed -n "s|^crash-write: /mnt/$fs: synced ||p")
		[ -n "${WROTE[$fs]}" ] || fail "$fs: the writer did not finish its synced files"
	done
	errors=$(console "$dir" | grep -E '^crash-write: .*: error: |^Bail out!' | head -n 3 || true)
	[ -z "$errors" ] || fail "writer error: $errors"
	rc=$(guest_cmd_exit "$dir")
	[ -z "$rc" ] || fail "the writers ended (status $rc) instead of cutting power"
	cut=$(line_no "$dir" "^crash-write: /mnt/$last: cutting power")
	reset=$(line_no "$dir" 'sysrq: Resetting')
	if [ "$cut" = 0 ] || [ "$reset" -le "$cut" ]; then
		fail "no power cut during the writes on $last"
	fi
}

# The device of FS in boot DIR, from /init's mount message.
fs_device() {
	console "$1" | sed -n "s|^init: mounted /dev/\([a-z0-9]*\) (serial $2) .*|\1|p"
}

# verify_tap DIR FS: the console lines of FS's verify run (its TAP).
verify_tap() {
	console "$1" | awk -v end="crash-verify: $2: " '
		index($0, end) == 1 { exit }
		/^crash-verify: / { n = 0; next }
		{ lines[n++] = $0 }
		END { for (i = 0; i < n; i++) print lines[i] }'
}

check_verify() {
	local dir=$1 fs rc dev tap
	check_boot "$dir" "boot 2"
	rc=$(guest_cmd_exit "$dir")
	[ "$rc" = 0 ] || fail "verify exit status '${rc:-none reported}'"
	for fs in $FSLIST; do
		dev=$(fs_device "$dir" "$fs")
		[ -n "$dev" ] || fail "$fs: did not mount after the power cut"
		REPLAY[$fs]=$(console "$dir" | grep -E "[( ]${dev:-none}[): ].*(recover|replay)" |
			sed 's/^\[[^]]*\] //' | paste -s -d ';' || true)
		VERIFIED[$fs]=$(console "$dir" | sed -n "s/^crash-verify: $fs: //p")
		tap=${dir%/*}/verify-$fs.tap
		verify_tap "$dir" "$fs" | grep -E '^(ok|not ok|#|Bail out!|TAP|1\.\.)' >"$tap" || true
		[ "${VERIFIED[$fs]}" = "exit status 0" ] ||
			fail "$fs: verify: ${VERIFIED[$fs]:-no result}: $(grep -m2 -E '^(# |not ok|Bail)' "$tap" | paste -s -d ' ')"
	done
}

# The images after boot 2, with the read-only checks of scripts/data/fsck.list.
check_images() {
	local round_dir=$1 fs cmd rc
	FAIL_CONTEXT="round $ROUND: host"
	for fs in $FSLIST; do
		cmd=$(fsck_command "$fs")
		rc=0
		# shellcheck disable=SC2086
		$cmd "$DISKS/$fs.img" >"$round_dir/fsck-$fs.log" 2>&1 || rc=$?
		CHECKED[$fs]="$cmd: exit status $rc"
		[ "$rc" = 0 ] || fail "$fs: '$cmd' found problems (see $round_dir/fsck-$fs.log)"
	done
}

# rotated N: the filesystems rotated left N times (the last one is cut).
rotated() {
	local n=$(($1 % $(wc -w <<<"$FSLIST"))) list=$FSLIST
	while [ "$n" -gt 0 ]; do
		list="${list#* } ${list%% *}"
		n=$((n - 1))
	done
	echo "$list"
}

write_cmd() {
	local fs cmd='' last=${ORDER##* }
	for fs in $ORDER; do
		[ "$fs" = "$last" ] || cmd+="uncached_crash write /mnt/$fs $1 --no-crash && "
	done
	echo "${cmd}uncached_crash write /mnt/$last $1"
}

verify_cmd() {
	echo "rc=0; for fs in $FSLIST; do uncached_crash verify /mnt/\$fs $1; s=\$?;" \
		"echo \"crash-verify: \$fs: exit status \$s\"; [ \$s = 0 ] || rc=1; done; exit \$rc"
}

summary() {
	local fs
	for fs in $FSLIST; do
		printf '  %s:\n    write:  %s\n    mount:  %s\n    verify: %s\n    check:  %s\n' \
			"$fs" "${WROTE[$fs]:-no synced files}" "${REPLAY[$fs]:-no recovery message}" \
			"${VERIFIED[$fs]:-not run}" "${CHECKED[$fs]:-not run}"
	done
}

run_round() {
	local seed=$1 dir=$OUT/round-$ROUND t1 t2 start=$SECONDS nfail=${#FAILURES[@]}
	local nfs before
	nfs=$(wc -w <<<"$FSLIST")
	DISKS=$dir/disks
	ORDER=$(rotated $((ROUND - 1)))
	WROTE=() VERIFIED=() CHECKED=() REPLAY=()
	log "round $ROUND/$ROUNDS: seed $seed, writers on $ORDER, power cut during ${ORDER##* }"
	mkdir -p "$dir"
	# shellcheck disable=SC2086
	"$HOST_DIR/make-disks.sh" "$DISKS" $FSLIST >/dev/null
	before=$(((ROUND - 1) * 2 * nfs))
	boot "$dir/boot1" "$(write_cmd "$seed")" "$before"
	t1=$BOOT_SECS
	check_write "$dir/boot1"
	boot "$dir/boot2" "$(verify_cmd "$seed")" $((before + nfs))
	t2=$BOOT_SECS
	check_verify "$dir/boot2"
	check_images "$dir"
	record_times crash boot1 "$t1" boot2 "$t2"
	echo "round $ROUND/$ROUNDS, seed $seed: boot 1 (write, cut during ${ORDER##* }) ${t1}s, boot 2 (verify) ${t2}s, total $((SECONDS - start))s"
	summary
	if [ ${#FAILURES[@]} = "$nfail" ]; then
		rm -rf "$DISKS"
	else
		printf 'FAIL: %s\n' "${FAILURES[@]:nfail}" >&2
	fi
	FAIL_CONTEXT=
}

parse_env() {
	SEED=${CRASH_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
	ROUNDS=${CRASH_ROUNDS:-1}
	if ! [[ $SEED =~ ^[0-9]{1,10}$ ]] || [ "$SEED" -gt 4294967295 ]; then
		die "CRASH_SEED must be a number from 0 to 4294967295, not '$SEED'"
	fi
	[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "CRASH_ROUNDS must be a positive number, not '$ROUNDS'"
}

main() {
	help_if_asked "$@"
	tree_flavor_args "$USAGE" "$@"
	KERNEL=$(built_kernel "$TREE" "$FLAVOR")
	need_file "$INITRD" "run 'make initramfs' first"
	parse_env
	FSLIST=$(all_filesystems)
	local fs secs guessed
	for fs in $FSLIST; do
		[ -n "$(fsck_command "$fs")" ] || die "scripts/data/fsck.list has no check for $fs"
		need_cmd "$(fsck_command "$fs" | awk '{print $1}')"
	done
	STEPS=$((ROUNDS * 2 * $(wc -w <<<"$FSLIST")))
	read -r secs guessed < <(estimate_secs crash boot1:35 boot2:25)
	log "seed $SEED (set CRASH_SEED=$SEED to repeat), $ROUNDS round(s)," \
		"$(estimate_text $((secs * ROUNDS)) "$guessed" 2); logs: $OUT"
	rm -rf "$OUT"
	for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
		run_round $(((SEED + ROUND - 1) % 4294967296))
	done
	if ! report_failures; then
		echo "crash-test: FAILED (${#FAILURES[@]} failure(s) in $ROUNDS round(s), seed $SEED; logs: $OUT)"
		return 1
	fi
	echo "crash-test: passed ($ROUNDS round(s), seed $SEED); logs: ${OUT#"$PWD"/}/"
}

main "$@"
