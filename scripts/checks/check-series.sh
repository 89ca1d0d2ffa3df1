#!/usr/bin/env bash
# check-series.sh - check that the series is bisectable and clean, one patch
# at a time, on a scratch copy of the pristine tree (build/check/):
#   - quilt push --fuzz=0 applies it;
#   - scripts/checkpatch.pl reports no errors;
#   - the objects it touches compile with the test configuration; a patch
#     that touches a header also recompiles every object the series
#     touches, since those are the users the series cares about.
# Then a full bzImage build of the whole series (make kernel). One line per
# patch; exits non-zero on the first patch that fails.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

CHECK=$BUILD/check
SCRATCH=$CHECK/src
OBJ=$CHECK/obj

squilt() {
	quilt_in "$SCRATCH" "$@"
}

objects_of() {
	grep -E '\.c$' | sed 's/\.c$/.o/' | sort -u
}

series_objects() {
	# shellcheck disable=SC2046 # patch names
	patch_files $(series_patches) | objects_of
}

prepare_scratch() {
	log "scratch tree: $SCRATCH (copy of the pristine tree)"
	# A fresh object tree too: objects left from an earlier run are newer
	# than the pristine sources and would count as built.
	rm -rf "$SCRATCH" "$OBJ"
	mkdir -p "$CHECK" "$OBJ"
	cp -a "$PRISTINE_SRC" "$SCRATCH"
	"$HOST_DIR/kernel-config.sh" "$SCRATCH" "$OBJ" test
	make -s -C "$SCRATCH" O="$OBJ" ARCH=x86_64 CC="$CC" -j"$JOBS" prepare >/dev/null
}

# check_patch N TOTAL PATCH: push, checkpatch, compile; prints one line.
check_patch() {
	local n=$1 total=$2 p=$3 start objs errors warnings
	start=$(date +%s)
	squilt push -q >"$CHECK/push.log" 2>&1 ||
		{ cat "$CHECK/push.log" >&2; die "[$n/$total] $p does not apply with --fuzz=0"; }
	"$SCRATCH/scripts/checkpatch.pl" --no-tree --no-color --show-types \
		"$TOP/patches/$p" >"$CHECK/$p.checkpatch" 2>&1 || true
	errors=$(grep -c '^ERROR:' "$CHECK/$p.checkpatch" || true)
	warnings=$(grep -c '^WARNING:' "$CHECK/$p.checkpatch" || true)
	if patch_files "$p" | grep -qE '\.h$'; then
		objs=$(series_objects)
	else
		objs=$(patch_files "$p" | objects_of)
	fi
	# shellcheck disable=SC2086
	[ -z "$objs" ] || make -s -C "$SCRATCH" O="$OBJ" ARCH=x86_64 CC="$CC" \
		-j"$JOBS" $objs >"$CHECK/$p.build" 2>&1 ||
		{ cat "$CHECK/$p.build" >&2; die "[$n/$total] $p: build failed"; }
	printf '[%2d/%d] %-58s checkpatch: %d errors, %d warnings; %d objects built; %ds\n' \
		"$n" "$total" "$p" "$errors" "$warnings" "$(echo "$objs" | grep -c . || true)" \
		"$(($(date +%s) - start))"
	[ "$errors" = 0 ] || { cat "$CHECK/$p.checkpatch" >&2; die "$p: checkpatch errors"; }
}

main() {
	help_if_asked "$@"
	need_cmd quilt make gcc perl
	need_file "$PRISTINE_SRC/Makefile" "run 'make source' first"
	local patches p n=0 start
	start=$(date +%s)
	CC=gcc
	command -v ccache >/dev/null && CC="ccache gcc"
	JOBS=$(($(nproc) + 1))
	mapfile -t patches < <(series_patches)
	[ ${#patches[@]} -gt 0 ] || die "the series is empty"
	prepare_scratch
	for p in "${patches[@]}"; do
		n=$((n + 1))
		check_patch "$n" "${#patches[@]}" "$p"
	done
	log "full build of the whole series (make kernel)"
	"$HOST_DIR/prepare-source.sh"
	"$HOST_DIR/build-kernel.sh" patched test
	log "series OK: ${#patches[@]} patches in $(($(date +%s) - start))s"
}

main "$@"
