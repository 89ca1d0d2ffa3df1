#!/usr/bin/env bash
# build-kernel.sh TREE FLAVOR - configure and build bzImage for
#   TREE   patched (build/src/patched, the series applied) or pristine
#   FLAVOR a line of scripts/kconfig/flavors (test, perf)
# out of tree in build/kernel/TREE-FLAVOR, with ccache when installed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

main() {
	help_if_asked "$@"
	[ $# -eq 2 ] || die "usage: build-kernel.sh patched|pristine FLAVOR"
	local tree=$1 flavor=$2 src out cc=gcc jobs
	case $tree in
	patched) src=$PATCHED_SRC ;;
	pristine) src=$PRISTINE_SRC ;;
	*) die "unknown tree '$tree' (patched or pristine)" ;;
	esac
	need_cmd make gcc bison flex bc
	need_file "$src/Makefile" "run 'make source' first"
	out=$BUILD/kernel/$tree-$flavor
	mkdir -p "$out"
	"$TOP/scripts/kernel-config.sh" "$src" "$out" "$flavor"
	command -v ccache >/dev/null && cc="ccache gcc"
	jobs=$(($(nproc) + 1))
	log "building $tree-$flavor bzImage (-j$jobs, CC=$cc)"
	# Fixed build identity so ccache hits survive across runs.
	KBUILD_BUILD_USER=uncached KBUILD_BUILD_HOST=qemu-test \
		KBUILD_BUILD_TIMESTAMP='2024-12-03' \
		make -s -C "$src" O="$out" ARCH=x86_64 CC="$cc" -j"$jobs" bzImage
	log "kernel: $out/arch/x86/boot/bzImage"
}

main "$@"
