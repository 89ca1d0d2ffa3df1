#!/usr/bin/env bash
# build-fio.sh - the fio of make bench: a static build (it runs in the
# busybox guest as it is) of a fio recent enough that uncached=1 sends
# RWF_DONTCACHE = RWF_UNCACHED = 0x80 (fio 3.40 or later; Debian's 3.33
# sends 0x40, RWF_ATOMIC on 6.11+). Prints the path of the binary. The
# source is, the first that applies:
#   FIO_SRC=PATH  a tarball (one top directory) or a directory of fio
#                 (copied; the original is never built in)
#   ../shared/vendor/fio-f5344384.tar.xz  the pinned snapshot (fio 3.42-135,
#                 commit f5344384f7c7b6e9e6aa9336e476e8f6eb54dd3a of
#                 github.com/axboe/fio), as CI and the development machines
#                 have it
# It unpacks into build/fio/tree (again only when the source changed:
# build/fio/source names it), runs
#   ./configure --build-static --disable-native && make fio
# under nice, about 2 minutes on 2 cores; make is incremental. The guest
# kernels have System V IPC (CONFIG_SYSVIPC), so fio keeps its shared
# memory (no --disable-shm). Log: build/fio/build.log. Never writes to the
# repository.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

FIO_BUILD=$BUILD/fio
TREE_DIR=$FIO_BUILD/tree
VENDORED=$(dirname "$TOP")/shared/vendor/fio-f5344384.tar.xz
CONFIGURE_ARGS=(--build-static --disable-native)
MIN_VERSION=3.40	# the first fio whose uncached=1 sends 0x80

# source_path: FIO_SRC, else the vendored tarball.
source_path() {
	if [ -n "${FIO_SRC:-}" ]; then
		[ -e "$FIO_SRC" ] || die "FIO_SRC=$FIO_SRC: no such file or directory"
		realpath "$FIO_SRC"
		return
	fi
	[ -f "$VENDORED" ] ||
		die "no fio source: $VENDORED is missing; set FIO_SRC=... to a tarball or directory of fio $MIN_VERSION or later"
	realpath "$VENDORED"
}

# check_tree DIR SRC: fail unless DIR holds fio's source.
check_tree() {
	if [ ! -x "$1/configure" ] || [ ! -f "$1/fio.c" ]; then
		die "$2 does not hold fio's source (no configure and fio.c at its top; set FIO_SRC=...)"
	fi
}

# configure: ./configure when it has not run with these arguments.
configure() {
	local args=${CONFIGURE_ARGS[*]}
	[ -f "$TREE_DIR/config-host.mak" ] &&
		[ "$(cat "$FIO_BUILD/configured" 2>/dev/null)" = "$args" ] && return 0
	rm -f "$FIO_BUILD/configured"
	(cd "$TREE_DIR" && nice -n 19 ./configure "${CONFIGURE_ARGS[@]}") ||
		return 1
	echo "$args" >"$FIO_BUILD/configured"
}

build() {
	local log=$FIO_BUILD/build.log start=$SECONDS
	[ -x "$TREE_DIR/fio" ] && [ -f "$FIO_BUILD/configured" ] &&
		[ -z "$(find "$TREE_DIR" -newer "$TREE_DIR/fio" -name '*.[ch]' -print -quit)" ] &&
		return 0
	log "building a static fio in ${TREE_DIR#"$PWD"/} (nice make -j$(nproc) fio; log: ${log#"$PWD"/})"
	if ! { configure && (cd "$TREE_DIR" && nice -n 19 make -j"$(nproc)" fio); } >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "the fio build failed (see $log)"
	fi
	log "fio built ($(duration $((SECONDS - start))))"
}

# check_fio: a static binary of MIN_VERSION or later.
check_fio() {
	local fio=$TREE_DIR/fio version
	[ -x "$fio" ] || die "the fio build made no $fio (see $FIO_BUILD/build.log)"
	if readelf -l "$fio" | grep -q 'INTERP'; then
		die "$fio is not static (it would need the host's libraries in the guest)"
	fi
	version=$("$fio" --version) || die "$fio --version failed"
	printf '%s\n%s\n' "$MIN_VERSION" "${version#fio-}" | sort -V -C ||
		die "$version is older than fio-$MIN_VERSION: its uncached=1 does not send RWF_UNCACHED (0x80); set FIO_SRC=... to a newer fio"
}

main() {
	help_if_asked "$@"
	[ $# -eq 0 ] || die "usage: build-fio.sh (the source: FIO_SRC, see --help)"
	local src
	need_cmd make gcc tar rsync readelf
	mkdir -p "$FIO_BUILD"
	src=$(source_path)
	source_tree "$src" "$FIO_BUILD" FIO_SRC check_tree
	build
	check_fio
	echo "$TREE_DIR/fio"
}

main "$@"
