#!/usr/bin/env bash
# prepare-source.sh - unpack the pinned linux-source-6.12 into
# build/src/pristine and keep build/src/patched = pristine + the series,
# applied with quilt (fuzz 0).
#
# Idempotent: a tree that is already right is left alone (so nothing is
# rebuilt). When a patch or the series changed, only the patches from the
# first changed one on are popped and pushed again, and the files that
# come out of that with the content they had keep their modification time,
# so that only what really changed is rebuilt; a tree from another source
# version is unpacked again.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

TARBALL=/usr/src/linux-source-6.12.tar.xz
APPLIED_COPY=$SRC_DIR/patched.applied	# the patches as last applied
TOUCHED_COPY=$SRC_DIR/patched.touched	# the files the patches change, as before a pop

source_version() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null ||
		die "linux-source-6.12 is not installed; run 'make deps' first"
}

unpack_pristine() {
	local version=$1 stamp=$PRISTINE_SRC/.source-version
	[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ] && return 0
	need_file "$TARBALL" "run 'make deps' first"
	log "unpacking linux-source-6.12 $version into $PRISTINE_SRC"
	rm -rf "$PRISTINE_SRC" "$PRISTINE_SRC.tmp" "$PATCHED_SRC" "$APPLIED_COPY" \
		"$TOUCHED_COPY"
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
	rm -rf "$PATCHED_SRC" "$APPLIED_COPY" "$TOUCHED_COPY"
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

# pop_top_as_applied: quilt pop of the top patch with its copy as it was
# applied rather than as patches/ has it now (quilt takes its patch
# directory from .pc/.quilt_patches).
pop_top_as_applied() {
	local record=$PATCHED_SRC/.pc/.quilt_patches top status=0
	top=$(pquilt top 2>/dev/null | sed 's|.*/||')
	[ -f "$APPLIED_COPY/$top" ] || return 1
	echo "$APPLIED_COPY" >"$record"
	pquilt pop -q >/dev/null 2>&1 || status=$?
	echo "$TOP/patches" >"$record"
	return $status
}

# pop_to N: pop patches until N are applied, one at a time. quilt pops a
# patch only if the tree holds exactly what the patch applied: patches/
# has it after a 'scripts/quilt refresh', the applied copy after patches/
# changed (a pull, an edited patch). If neither matches, the tree has
# edits nobody refreshed: stop and lose nothing.
pop_to() {
	local keep=$1 napplied
	napplied=$(pquilt applied 2>/dev/null | wc -l || true)
	[ "$napplied" -gt "$keep" ] || return 0
	log "popping $((napplied - keep)) patch(es) that changed or moved"
	while [ "$napplied" -gt "$keep" ]; do
		pquilt pop -q >/dev/null 2>&1 || pop_top_as_applied ||
			die "quilt could not pop $(pquilt top 2>/dev/null) in $PATCHED_SRC (unrefreshed edits? see 'scripts/quilt diff -z'); nothing was discarded"
		napplied=$((napplied - 1))
	done
}

# touched_files: the files the applied patches and the series' patches
# change, relative to the tree.
touched_files() {
	local p
	for p in "$APPLIED_COPY"/*.patch "$TOP"/patches/*.patch; do
		[ -f "$p" ] && sed -n 's|^+++ b/||p' "$p"
	done | sed 's/[[:space:]].*//' | sort -u
}

# save_touched: copy the files the patches change, with their times, to
# TOUCHED_COPY, before patches are popped.
save_touched() {
	local f
	rm -rf "$TOUCHED_COPY"
	mkdir -p "$TOUCHED_COPY"
	for f in $(touched_files); do
		[ -f "$PATCHED_SRC/$f" ] || continue
		mkdir -p "$TOUCHED_COPY/$(dirname "$f")"
		cp -p "$PATCHED_SRC/$f" "$TOUCHED_COPY/$f"
	done
}

# restore_unchanged_times: the files that were popped and pushed again and
# have their old content get their old modification time back (so make
# does not rebuild what includes them); the others keep the new one.
restore_unchanged_times() {
	local f n=0
	[ -d "$TOUCHED_COPY" ] || return 0
	while IFS= read -r f; do
		f=${f#./}
		if cmp -s "$TOUCHED_COPY/$f" "$PATCHED_SRC/$f"; then
			touch -r "$TOUCHED_COPY/$f" "$PATCHED_SRC/$f"
		else
			n=$((n + 1))
		fi
	done < <(cd "$TOUCHED_COPY" && find . -type f)
	rm -rf "$TOUCHED_COPY"
	log "$n file(s) changed content"
}

# push_all: push the rest of the series, one patch at a time, keeping a
# copy of each patch as it was applied in APPLIED_COPY.
push_all() {
	local p out
	if [ -z "$(series_patches)" ]; then
		log "series is empty: patched tree = pristine tree"
		return 0
	fi
	for p in $(series_patches); do
		need_file "$TOP/patches/$p" "the series names it but patches/ does not have it"
	done
	mkdir -p "$APPLIED_COPY"
	pquilt next >/dev/null 2>&1 &&
		log "applying the series with quilt push --fuzz=0"
	while p=$(pquilt next 2>/dev/null | sed 's|.*/||') && [ -n "$p" ]; do
		out=$(pquilt push -q 2>&1) || {
			tail -n 20 <<<"$out" >&2
			die "the series does not apply to linux-source-6.12 $(source_version) (see above)"
		}
		cp "$TOP/patches/$p" "$APPLIED_COPY/$p"
	done
}

main() {
	help_if_asked "$@"
	need_cmd tar quilt cmp
	local version keep
	version=$(source_version)
	[ "$version" = "$(pinned_linux_version)" ] ||
		warn_loud "building on linux-source-6.12 $version, not the pinned $(pinned_linux_version)"
	mkdir -p "$SRC_DIR"
	unpack_pristine "$version"
	[ -d "$PATCHED_SRC" ] || copy_patched_from_pristine
	quilt_state_usable || copy_patched_from_pristine
	keep=$(unchanged_prefix)
	if [ "$keep" -lt "$(pquilt applied 2>/dev/null | wc -l || true)" ]; then
		[ -d "$TOUCHED_COPY" ] || save_touched	# kept if a pop failed
		pop_to "$keep"
	fi
	push_all
	restore_unchanged_times
	log "patched tree ready: $(pquilt applied 2>/dev/null | wc -l) patch(es) applied"
}

main "$@"
