#!/usr/bin/env bash
# profile.sh [TREE FLAVOR] - make profile: where the kernel's CPU time goes
# in buffered and uncached reads and writes, per function, on ext4, XFS and
# the raw block device. Builds nothing; boots build/kernel/TREE-FLAVOR
# (default: the patched perf kernel) once in the host-userland guest
# (ROOTFS=host: the host's perf runs there) with the disks of make bench
# (scripts/data/bench-disks.list), and runs initramfs/profile-guest.sh: per
# target, op and mode an uncached_bench run of PROFILE_SECONDS under
# `perf record -a -e cpu-clock` (sampling on a software clock: TCG has no
# PMU), reported in the guest against its own kallsyms. Then
# scripts/bench/profile-report.py turns that into build/profile/profile.md:
# per target and op, the kernel CPU milliseconds per GiB moved of the top
# kernel functions, buffered beside uncached; on the filesystems also fio
# (scripts/host/build-fio.sh), run as make bench runs it on the same files, and
# where its kernel time differs from uncached_bench's. No timing is judged: it fails
# only when something could not run or the guest failed its checks (the
# done signal, its CPUs and memory, no kernel splat).
# Environment (defaults): PROFILE_SECONDS (20 per run), PROFILE_MEM (512M),
# PROFILE_SMP (2), PROFILE_FILESIZE (1G per CPU: the data set is
# PROFILE_SMP x PROFILE_FILESIZE, 4x the memory), PROFILE_FS
# ("ext4 xfs blockdev"), PROFILE_TOP (12 functions per table), PROFILE_FIO
# (1: fio beside uncached_bench on the filesystems; 0: uncached_bench only),
# FIO_SRC (scripts/host/build-fio.sh).
# Output: build/profile/ (profile.md, run/: console.log, share/ with each
# run's perf report and uncached_bench summary).
set -euo pipefail
. "$(dirname "$0")/../lib/verdict.sh"

PROFILE_SECONDS=${PROFILE_SECONDS:-20}
PROFILE_MEM=${PROFILE_MEM:-512M}
PROFILE_SMP=${PROFILE_SMP:-2}
PROFILE_FILESIZE=${PROFILE_FILESIZE:-1G}
PROFILE_FS=${PROFILE_FS:-ext4 xfs blockdev}
PROFILE_TOP=${PROFILE_TOP:-12}
PROFILE_FIO=${PROFILE_FIO:-1}
OUT=$BUILD/profile
BENCH_BIN=$BUILD/initramfs/tests/uncached_bench

check_settings() {
	local t
	[[ $PROFILE_SECONDS =~ ^[1-9][0-9]*$ ]] || die "PROFILE_SECONDS takes a number, not '$PROFILE_SECONDS'"
	[[ $PROFILE_MEM =~ ^[0-9]+[MG]$ ]] || die "PROFILE_MEM takes a size like 512M, not '$PROFILE_MEM'"
	[[ $PROFILE_SMP =~ ^[1-9][0-9]*$ ]] || die "PROFILE_SMP takes a number of CPUs, not '$PROFILE_SMP'"
	[[ $PROFILE_FILESIZE =~ ^[0-9]+[MG]$ ]] || die "PROFILE_FILESIZE takes a size like 1G, not '$PROFILE_FILESIZE'"
	[[ $PROFILE_TOP =~ ^[1-9][0-9]*$ ]] || die "PROFILE_TOP takes a number, not '$PROFILE_TOP'"
	[[ $PROFILE_FIO =~ ^[01]$ ]] || die "PROFILE_FIO takes 1 (fio beside uncached_bench) or 0, not '$PROFILE_FIO'"
	for t in $PROFILE_FS; do
		case $t in
		ext4 | xfs | btrfs | blockdev) ;;
		*) die "PROFILE_FS: unknown target '$t' (ext4, xfs, btrfs, blockdev)" ;;
		esac
	done
	[ -n "$PROFILE_FS" ] || die "PROFILE_FS names no target"
}

# guest_disks: the disks of scripts/data/bench-disks.list the targets need.
guest_disks() {
	local t
	for t in $PROFILE_FS; do
		case $t in
		blockdev) echo blockdev-data ;;
		*) echo "$t" ;;
		esac
	done | paste -s -d ' '
}

# runs: the number of profiled runs (4 per target, 4 more per filesystem
# with fio).
runs() {
	local t n=0
	for t in $PROFILE_FS; do
		n=$((n + 4))
		[ "$PROFILE_FIO" = 0 ] || [ "$t" = blockdev ] || n=$((n + 4))
	done
	echo "$n"
}

main() {
	help_if_asked "$@"
	local dir=$OUT/run kernel fio_args='' nruns ntargets
	[ $# = 0 ] || [ $# = 2 ] || die "usage: profile.sh [TREE FLAVOR]"
	[ $# = 2 ] || set -- patched perf
	tree_flavor_args "profile.sh [TREE FLAVOR]" "$@"
	check_settings
	need_cmd qemu-system-x86_64 python3 perf mkfs.ext4 mkfs.xfs
	kernel=$(built_kernel "$TREE" "$FLAVOR")
	need_file "$BENCH_BIN" "run 'make initramfs' first"
	outside_guest_tmpfs "$TOP" "$OUT"
	"$HOST_DIR/build-host-initramfs.sh"
	[ "$PROFILE_FIO" = 0 ] || fio_args="--fio $("$HOST_DIR/build-fio.sh")"
	mkdir -p "$OUT"
	rm -rf "$OUT/profile.md"
	nruns=$(runs)
	ntargets=$(wc -w <<<"$PROFILE_FS")
	# measured: 30 s to boot, 20 s per data set, 6 s per run besides its own
	log "booting $kernel ($PROFILE_MEM, $PROFILE_SMP CPUs; $PROFILE_FS: $nruns runs of ${PROFILE_SECONDS}s, about $(((nruns * (PROFILE_SECONDS + 6) + ntargets * 20 + 30) / 60 + 1)) min)"
	GUEST_ROOTFS=host DISKS_LIST=$DATA_DIR/bench-disks.list run_guest "$kernel" "$dir" \
		--mode cmd --fs "$(guest_disks)" --mem "$PROFILE_MEM" --smp "$PROFILE_SMP" \
		--timeout $((nruns * PROFILE_SECONDS * 3 + ntargets * 600)) \
		--cmd "bash $TOP/initramfs/profile-guest.sh $fio_args $dir/share $BENCH_BIN $PROFILE_SECONDS $PROFILE_FILESIZE $PROFILE_FS" \
		</dev/null >"$OUT/qemu.out" 2>&1 || true
	rm -rf "$dir/disks"
	check_guest "$dir" uncached-done
	[ "$(guest_cmd_exit "$dir")" = 0 ] ||
		fail "profile-guest.sh failed: $(grep -m1 'profile-guest: error' "$dir/console.log" || echo 'see the console log')"
	report_failures || die "the profile did not complete (see $dir/console.log)"
	python3 "$BENCH_DIR/profile-report.py" --top "$PROFILE_TOP" \
		--kernel "$TREE-$FLAVOR" "$dir/share" >"$OUT/profile.md"
	log "report: ${OUT#"$PWD"/}/profile.md"
}

main "$@"
