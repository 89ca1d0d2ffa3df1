#!/usr/bin/env bash
# prepare-source.sh - unpack the pinned linux-source-6.12 into
# build/src/pristine and keep build/src/patched = pristine + the series,
# applied with quilt (fuzz 0).
#
# Idempotent: a tree that is already right is left alone (so nothing is
# rebuilt). When a patch or the series changed, only the patches from the
# first changed one on are popped and pushed again; a tree from another
# source version is unpacked again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

TARBALL=/usr/src/linux-source-6.12.tar.xz
APPLIED_COPY=$SRC_DIR/patched.applied	# the patches as last applied

source_version() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null ||
		die "linux-source-6.12 is not installed; run 'make deps' first"
}

unpack_pristine() {
	local version=$1 stamp=$PRISTINE_SRC/.source-version
	[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ] && return 0
	need_file "$TARBALL" "run 'make deps' first"
	log "unpacking linux-source-6.12 $version into $PRISTINE_SRC"
	rm -rf "$PRISTINE_SRC" "$PRISTINE_SRC.tmp" "$PATCHED_SRC" "$APPLIED_COPY"
	mkdir -p "$PRISTINE_SRC.tmp"
	tar -C "$PRISTINE_SRC.tmp" -xf "$TARBALL" --strip-components=1
	echo "$version" >"$PRISTINE_SRC.tmp/.source-version"
	mv "$PRISTINE_SRC.tmp" "$PRISTINE_SRC"
}

pquilt() {
	quilt_in "$PATCHED_SRC" "$@"
}

copy_patched_from_pristine() {
	log "copying pristine tree to $PATCHED_SRC"
	rm -rf "$PATCHED_SRC" "$APPLIED_COPY"
	cp -a "$PRISTINE_SRC" "$PATCHED_SRC"
	mkdir -p "$APPLIED_COPY"
}

# patch_body PATCH: the patch without its header (message and diffstat):
# from the first line that starts a file's diff on.
patch_body() {
	awk '/^(diff |Index: |--- [^ ]*\/)/ { body = 1 } body' "$1"
}

# same_diff PATCH APPLIED: whether the two patches change the same lines; a
# new commit message alone does not make the tree be patched again (and so
# rebuilt).
same_diff() {
	[ -f "$2" ] && cmp -s <(patch_body "$1") <(patch_body "$2")
}

# The number of leading applied patches that are still in the series, in
# the same place, with the same content as when they were applied.
unchanged_prefix() {
	local -a applied wanted
	local i=0
	mapfile -t applied < <(pquilt applied 2>/dev/null | sed 's|.*/||' || true)
	mapfile -t wanted < <(series_patches)
	while [ $i -lt ${#applied[@]} ] && [ $i -lt ${#wanted[@]} ]; do
		[ "${applied[$i]}" = "${wanted[$i]}" ] || break
		same_diff "$TOP/patches/${wanted[$i]}" "$APPLIED_COPY/${wanted[$i]}" || break
		i=$((i + 1))
	done
	echo $i
}

# quilt_state_usable: false when patches are applied but quilt cannot list
# them, because the series changed order under them ("The series file no
# longer matches the applied patches"): then the tree is made anew, as
# popping would need the old series.
quilt_state_usable() {
	[ -s "$PATCHED_SRC/.pc/applied-patches" ] || return 0
	pquilt applied >/dev/null 2>&1 && return 0
	log "the series changed under the applied patches; starting from pristine"
	return 1
}

pop_to() {
	local keep=$1 napplied target
	napplied=$(pquilt applied 2>/dev/null | wc -l || true)
	[ "$napplied" -gt "$keep" ] || return 0
	log "popping $((napplied - keep)) patch(es) that changed or moved"
	if [ "$keep" -eq 0 ]; then
		pquilt pop -a -q >/dev/null
	else
		target=$(pquilt applied | sed -n "${keep}p")
		pquilt pop -q "$target" >/dev/null
	fi || die "quilt could not pop the changed patches in $PATCHED_SRC (unrefreshed edits? see 'scripts/quilt diff -z'); nothing was discarded"
}

push_all() {
	local p
	if [ -z "$(series_patches)" ]; then
		log "series is empty: patched tree = pristine tree"
		return 0
	fi
	for p in $(series_patches); do
		need_file "$TOP/patches/$p" "the series names it but patches/ does not have it"
	done
	if pquilt next >/dev/null 2>&1; then
		log "applying the series with quilt push -a --fuzz=0"
		pquilt push -a -q >/dev/null || {
			pquilt push -q --fuzz=0 2>&1 | tail -20 >&2 || true
			die "the series does not apply to linux-source-6.12 $(source_version) (see above)"
		}
	fi
	rm -rf "$APPLIED_COPY"
	mkdir -p "$APPLIED_COPY"
	for p in $(series_patches); do
		cp "$TOP/patches/$p" "$APPLIED_COPY/$p"
	done
}

main() {
	help_if_asked "$@"
	need_cmd tar quilt cmp
	local version
	version=$(source_version)
	[ "$version" = "$(pinned_linux_version)" ] ||
		warn_loud "building on linux-source-6.12 $version, not the pinned $(pinned_linux_version)"
	mkdir -p "$SRC_DIR"
	unpack_pristine "$version"
	[ -d "$PATCHED_SRC" ] || copy_patched_from_pristine
	quilt_state_usable || copy_patched_from_pristine
	pop_to "$(unchanged_prefix)"
	push_all
	log "patched tree ready: $(pquilt applied 2>/dev/null | wc -l) patch(es) applied"
}

main "$@"
