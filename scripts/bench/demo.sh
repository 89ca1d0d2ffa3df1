#!/usr/bin/env bash
# demo.sh [TREE FLAVOR] - make demo (patched perf): about 3 minutes.
# Boots a small guest, reads a file larger than its memory with buffered reads and then
# with RWF_UNCACHED, shows the per-second table (MB/s, page cache, kswapd
# CPU) and cachestat of the file after each, the CPUs and memory the guest
# had (it fails unless they are those it was given: check_guest_resources
# in lib.sh), and ends with a side-by-side summary. Builds nothing; runs
# build/kernel/TREE-FLAVOR; without arguments the patched perf kernel when
# it exists, else the patched debug kernel (test).
# Environment: DEMO_KERNEL (bzImage), DEMO_MEM (512M), DEMO_SMP (2),
# DEMO_SECONDS (60 per read), DEMO_FILE (3 x DEMO_MEM).
# Logs: build/demo/console.log, channel.log.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

DEMO_MEM=${DEMO_MEM:-512M}
DEMO_SMP=${DEMO_SMP:-2}
DEMO_SECONDS=${DEMO_SECONDS:-60}
OUT=$BUILD/demo

# pick_kernel [TREE FLAVOR]: set KERNEL and KIND (what it is, in words).
# Without arguments: patched perf when it is built, else patched test.
pick_kernel() {
	if [ -n "${DEMO_KERNEL:-}" ]; then
		need_file "$DEMO_KERNEL" "DEMO_KERNEL names it"
		KERNEL=$DEMO_KERNEL KIND="the kernel given by DEMO_KERNEL"
		return
	fi
	if [ $# = 0 ]; then
		set -- patched perf
		[ -e "$(kernel_image patched perf)" ] || set -- patched test
	fi
	tree_flavor_args "demo.sh [TREE FLAVOR]" "$@"
	KERNEL=$(built_kernel "$TREE" "$FLAVOR")
	case $FLAVOR in
	perf) KIND="the $TREE performance kernel (no debug options)" ;;
	test) KIND="the $TREE DEBUG kernel (KASAN, lockdep: several times slower than the performance kernel; 'make kernel FLAVOR=perf' builds that)" ;;
	*) KIND="the $TREE $FLAVOR kernel" ;;
	esac
}

check_settings() {
	local mem_mib
	[[ $DEMO_MEM =~ ^[0-9]+[MG]$ ]] || die "DEMO_MEM takes a size like 512M or 1G, not '$DEMO_MEM'"
	[[ $DEMO_SMP =~ ^[1-9][0-9]*$ ]] || die "DEMO_SMP takes a number of CPUs, not '$DEMO_SMP'"
	[[ $DEMO_SECONDS =~ ^[1-9][0-9]*$ ]] || die "DEMO_SECONDS takes a number, not '$DEMO_SECONDS'"
	mem_mib=${DEMO_MEM%[MG]}
	[[ $DEMO_MEM == *G ]] && mem_mib=$((mem_mib * 1024))
	FILE_MIB=${DEMO_FILE:-$((mem_mib * 3))M}
	[[ $FILE_MIB =~ ^[0-9]+M$ ]] || die "DEMO_FILE takes a size in MB like 1536M, not '$FILE_MIB'"
	FILE_MIB=${FILE_MIB%M}
	[ "$FILE_MIB" -gt "$mem_mib" ] || log "warning: DEMO_FILE is not larger than DEMO_MEM: the page cache will not fill"
	[ "$FILE_MIB" -le 6144 ] || die "DEMO_FILE must fit the 8G ext4 disk (6144M at most)"
	need_file "$INITRD" "run 'make initramfs' first"
}

guest_cmd() {
	printf 'DEMO_SECONDS=%s\nDEMO_FILESIZE=%sM\nDEMO_FILESIZE_MB=%s\n' \
		"$DEMO_SECONDS" "$FILE_MIB" "$FILE_MIB"
	cat "$TOP/initramfs/bench-guest.sh" "$TOP/initramfs/demo-guest.sh"
}

# show: the demo's own lines of the console (CR LF), as they come.
show() {
	awk '{sub(/\r$/, "")} $0 == "demo-start" {on = 1; next} $0 == "demo-end" {on = 0}
		on && !/^\[ *[0-9]+\.[0-9]+\]/ {print; fflush()}'
}

main() {
	help_if_asked "$@"
	local resources
	need_cmd qemu-system-x86_64 python3 mkfs.ext4
	[ $# = 0 ] || [ $# = 2 ] || die "usage: demo.sh [TREE FLAVOR]"
	pick_kernel "$@"
	check_settings
	mkdir -p "$OUT"
	echo "make demo: how RWF_UNCACHED keeps a big sequential read from filling memory."
	echo "Kernel: $KERNEL,"
	echo "  $KIND."
	echo "Booting a guest with $DEMO_MEM of memory and $DEMO_SMP CPUs (about $((DEMO_SECONDS * 2 / 60 + 1)) minutes)..."
	DISKS_LIST=$DATA_DIR/bench-disks.list run_guest "$KERNEL" "$OUT" \
		--mode cmd --cmd "$(guest_cmd)" --fs ext4 --mem "$DEMO_MEM" --smp "$DEMO_SMP" --timeout $((DEMO_SECONDS * 4 + 300)) \
		</dev/null | show
	rm -rf "$OUT/disks"
	resources=$(check_guest_resources "$OUT") ||
		die "$resources (see $OUT/console.log)"
	printf '\nGuest: %s.\n' "$resources"
	python3 "$BENCH_DIR/bench-report.py" --side-by-side "$OUT/channel.log" ||
		die "the demo did not complete (see $OUT/console.log)"
}

main "$@"
