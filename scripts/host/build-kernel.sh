#!/usr/bin/env bash
# build-kernel.sh TREE FLAVOR - configure and build bzImage for
#   TREE   patched (build/src/patched, the series applied) or pristine
#   FLAVOR a line of scripts/data/kconfig/flavors (test, perf)
# out of tree in build/kernel/TREE-FLAVOR, with ccache when installed.
# Every 30 s it prints the time so far and the objects built so far (a
# build from clean takes 10-15 minutes).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

# build_test_modules SRC OUT CC: the guest test modules (tests/kmod/) against
# the tree built in OUT, in their own directory (kernel_test_modules). Only
# for the patched tree: they use what the series adds.
build_test_modules() {
	local src=$1 out=$2 cc=$3 dir
	dir=$(kernel_test_modules "$out/arch/x86/boot/bzImage")
	rm -rf "$dir"
	grep -q '^CONFIG_MODULES=y' "$out/.config" || return 0
	if [ "$src" != "$PATCHED_SRC" ]; then
		log "no guest test modules for this tree: they use the series"
		return 0
	fi
	make_test_modules "$dir" -C "$src" O="$out" ARCH=x86_64 CC="$cc" ||
		die "cannot build the guest test modules (tests/kmod/)"
	log "guest test modules: $(cd "$dir" && echo *.ko)"
}

main() {
	help_if_asked "$@"
	tree_flavor_args "build-kernel.sh patched|pristine FLAVOR" "$@"
	local tree=$TREE flavor=$FLAVOR src=$SRC_DIR/$TREE out cc=gcc jobs start
	local targets=(bzImage)
	need_cmd make gcc bison flex bc
	need_file "$src/Makefile" "run 'make source' first"
	out=$(kernel_dir "$tree" "$flavor")
	mkdir -p "$out"
	"$HOST_DIR/kernel-config.sh" "$src" "$out" "$flavor"
	# Module.symvers, for the guest test modules built against this tree
	! grep -q '^CONFIG_MODULES=y' "$out/.config" || targets+=(modules)
	command -v ccache >/dev/null && cc="ccache gcc"
	jobs=$(($(nproc) + 1))
	log "building $tree-$flavor ${targets[*]} (-j$jobs, CC=$cc)"
	start=$SECONDS
	build_ticker "$out" 30
	# Fixed build identity so ccache hits survive across runs, and paths
	# relative to the checkout so they survive across clones (CI builds in
	# a fresh clone elsewhere).
	CCACHE_BASEDIR=${CCACHE_BASEDIR:-$TOP} \
		KBUILD_BUILD_USER=uncached KBUILD_BUILD_HOST=qemu-test \
		KBUILD_BUILD_TIMESTAMP='2024-12-03' \
		make -s -C "$src" O="$out" ARCH=x86_64 CC="$cc" -j"$jobs" "${targets[@]}"
	kill "$BUILD_TICKER" 2>/dev/null || true
	find "$out" -name '*.o' | wc -l >"$out/.objects-total"
	build_test_modules "$src" "$out" "$cc"
	log "kernel: $(kernel_image "$tree" "$flavor") ($(duration $((SECONDS - start))), $(cat "$out/.objects-total") objects)"
}

main "$@"
