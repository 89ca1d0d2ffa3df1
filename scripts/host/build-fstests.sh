#!/usr/bin/env bash
# build-fstests.sh - unpack fstests (xfstests) into build/fstests/tree and
# build it on the host (Debian's -dev packages: make deps), for make
# fstests; prints the tree's path. The source is, the first that applies:
#   FSTESTS_SRC=PATH  a tarball (one top directory) or a directory of
#                     fstests (copied; the original is never built in)
#   ../shared/vendor/xfstests-SHORT.tar.xz  the pinned commit of
#                     scripts/data/fstests.version (SHORT: its first 8 digits),
#                     as CI and the development machines have it
#   a clone of the pinned commit from the URL of scripts/data/fstests.version
#                     (into build/fstests/clone)
# The tree is unpacked again only when the source changed
# (build/fstests/source names it); make is incremental. The build runs
# under nice; its log: build/fstests/build.log. Never writes to the
# repository.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

FSTESTS_BUILD=$BUILD/fstests
TREE_DIR=$FSTESTS_BUILD/tree
VENDOR_DIR=$TOP/../shared/vendor
# the programs make fstests needs: fsx and fsstress, and check itself
NEEDED=(check ltp/fsx ltp/fsstress src/feature)

# pinned COLUMN: the commit (1) or the URL (2) of scripts/data/fstests.version.
pinned() {
	list_entries "$DATA_DIR/fstests.version" | awk -v c="$1" 'NR == 1 { print $c }'
}

# source_path: FSTESTS_SRC, else the vendored tarball, else the clone
# (made when missing).
source_path() {
	local commit tarball
	if [ -n "${FSTESTS_SRC:-}" ]; then
		[ -e "$FSTESTS_SRC" ] || die "FSTESTS_SRC=$FSTESTS_SRC: no such file or directory"
		realpath "$FSTESTS_SRC"
		return
	fi
	commit=$(pinned 1)
	tarball=$VENDOR_DIR/xfstests-${commit:0:8}.tar.xz
	if [ -f "$tarball" ]; then
		realpath "$tarball"
		return
	fi
	clone_pinned "$commit" "$(pinned 2)"
	echo "$FSTESTS_BUILD/clone"
}

clone_pinned() {
	local commit=$1 url=$2 dir=$FSTESTS_BUILD/clone
	need_cmd git
	if [ "$(git -C "$dir" rev-parse HEAD 2>/dev/null)" = "$commit" ]; then
		return
	fi
	log "no FSTESTS_SRC and no $VENDOR_DIR/xfstests-${commit:0:8}.tar.xz: cloning $url at $commit"
	rm -rf "$dir"
	git clone --quiet --no-checkout "$url" "$dir" >&2 ||
		die "cannot clone $url (no network? set FSTESTS_SRC to a tarball or directory of fstests $commit)"
	git -C "$dir" checkout --quiet "$commit" >&2 ||
		die "$url has no commit $commit"
}

# check_tree DIR SRC: fail unless DIR holds fstests.
check_tree() {
	if [ ! -f "$1/check" ] || [ ! -f "$1/ltp/fsx.c" ]; then
		die "$2 does not hold fstests (no check and ltp/fsx.c at its top)"
	fi
}

build() {
	local log=$FSTESTS_BUILD/build.log prog start=$SECONDS
	log "building fstests in ${TREE_DIR#"$PWD"/} (nice make -j$(nproc); log: ${log#"$PWD"/})"
	if ! (cd "$TREE_DIR" && nice make -j"$(nproc)") >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "the fstests build failed (see $log; 'make deps' installs its -dev packages)"
	fi
	for prog in "${NEEDED[@]}"; do
		[ -x "$TREE_DIR/$prog" ] || die "the fstests build made no $prog (see $log)"
	done
	log "fstests built ($(duration $((SECONDS - start))))"
}

main() {
	help_if_asked "$@"
	[ $# -eq 0 ] || die "usage: build-fstests.sh (the source: FSTESTS_SRC, see --help)"
	local src
	need_cmd make gcc tar rsync autoconf libtoolize
	mkdir -p "$FSTESTS_BUILD"
	src=$(source_path)
	source_tree "$src" "$FSTESTS_BUILD" FSTESTS_SRC check_tree
	build
	echo "$TREE_DIR"
}

main "$@"
