#!/usr/bin/env bash
# build-initramfs.sh - build the guest's initramfs, build/initramfs/initramfs.cpio:
# busybox-static, /init and the runner (initramfs/), and the guest tests
# (tests/tests.list), the guest tools (tests/tools/tools.list: programs
# that are not tests, such as the benchmark) and the harness self-tests
# (tests/selftest/*.c), compiled statically with -Werror against
# the UAPI headers of the patched tree (build/headers), so the tests see
# RWF_UNCACHED exactly as the kernel under test exports it.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

OUT=$BUILD/initramfs
HEADERS=$BUILD/headers
CFLAGS="-static -O2 -g0 -Wall -Wextra -Werror"
BUSYBOX=/bin/busybox

install_headers() {
	need_file "$PATCHED_SRC/Makefile" "run 'make source' first"
	make -s -C "$PATCHED_SRC" O="$HEADERS/obj" ARCH=x86_64 \
		INSTALL_HDR_PATH="$HEADERS" headers_install
}

build_gen_init_cpio() {
	local src=$PATCHED_SRC/usr/gen_init_cpio.c
	need_file "$src" "run 'make source' first"
	[ "$OUT/gen_init_cpio" -nt "$src" ] ||
		gcc -O2 -o "$OUT/gen_init_cpio" "$src"
}

# compile NAME SOURCE: tests/... -> build/initramfs/tests/NAME
compile() {
	local libs=
	grep -q 'liburing.h' "$2" && libs=-luring
	# shellcheck disable=SC2086
	gcc $CFLAGS -I"$HEADERS/include" -I"$TOP/tests" -o "$OUT/tests/$1" "$2" $libs -lpthread ||
		die "cannot compile $2"
}

# compile_list DIR LIST: compile DIR/NAME.c for every NAME of the list
# file LIST.
compile_list() {
	local name
	for name in $(first_words "$2"); do
		need_file "$1/$name.c" "${2#"$TOP"/} names '$name'"
		compile "$name" "$1/$name.c"
	done
}

compile_tests() {
	local src
	rm -rf "$OUT/tests"
	mkdir -p "$OUT/tests"
	compile_list "$TOP/tests" "$TOP/tests/tests.list"
	compile_list "$TOP/tests" "$TOP/tests/blockdev.list"
	compile_list "$TOP/tests/tools" "$TOP/tests/tools/tools.list"
	for src in "$TOP"/tests/selftest/*.c; do
		compile "selftest_$(basename "$src" .c)" "$src"
	done
}

write_list() {
	local f
	cat "$TOP/initramfs/initramfs.list"
	for f in "$OUT"/tests/*; do
		echo "file /tests/${f##*/} $f 755 0 0"
	done
}

main() {
	help_if_asked "$@"
	need_cmd gcc make
	need_file "$BUSYBOX" "install busybox-static ('make deps')"
	file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' ||
		[ ! -x /usr/bin/file ] || die "$BUSYBOX is not static; install busybox-static"
	mkdir -p "$OUT"
	install_headers
	build_gen_init_cpio
	compile_tests
	write_list >"$OUT/initramfs.list"
	BUSYBOX=$BUSYBOX INITRAMFS_DIR=$TOP/initramfs TESTS_DIR=$TOP/tests \
		"$OUT/gen_init_cpio" "$OUT/initramfs.list" >"$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
	log "initramfs: $INITRD ($(find "$OUT/tests" -type f | wc -l) test programs)"
}

main "$@"
