#!/usr/bin/env bash
# check-distro-config.sh - build the patched tree (build/src/patched) with
# Debian's own configuration for this kernel, the way a kernel developer
# applying the series to Debian's tree would, out of tree in
# build/distro/obj:
#   - the config: config.amd64_none_amd64 of the linux-config-6.12 package
#     at the version of linux-source-6.12 (make check-distro-config
#     installs it), with only what does not change the code compiled
#     changed: no debug info (no pahole here; debug info only adds
#     sections) and no trusted-keys file of Debian's build system;
#   - the build: vmlinux, and every object, built-in or module, under
#     DISTRO_DIRS (fs/ mm/ block/ io_uring/): ext4, XFS and btrfs are
#     modules in Debian's config;
#   - the verdict: fails on any error, on any compiler, objtool or modpost
#     warning located in a file the series touches (a header too), and on
#     any other warning that the pristine tree (build/src/pristine, same
#     config, only the objects concerned: build/distro/pristine-obj) does
#     not give.
# Takes an hour or more on 2 cores from an empty ccache; not part of CI.
# Results: build/results/distro/ (build.log, warnings, summary).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CONFIG_DIR=/usr/src/linux-config-6.12
CONFIG_NAME=config.amd64_none_amd64
DISTRO_DIRS=${DISTRO_DIRS:-fs/ mm/ block/ io_uring/}
OBJ=$BUILD/distro/obj
PRISTINE_OBJ=$BUILD/distro/pristine-obj
OUT=$RESULTS/distro
JOBS=$(($(nproc) + 1))
CC=gcc
command -v ccache >/dev/null && CC="ccache gcc"

# distro_config: write Debian's config, adjusted as above, to OBJ/.config.
distro_config() {
	local src=$1
	need_file "$CONFIG_DIR/$CONFIG_NAME.xz" \
		"install linux-config-6.12 ('scripts/deps.sh --linux-config')"
	mkdir -p "$OBJ"
	xz -dc "$CONFIG_DIR/$CONFIG_NAME.xz" >"$OBJ/.config"
	"$src/scripts/config" --file "$OBJ/.config" \
		--disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT --enable DEBUG_INFO_NONE \
		--disable DEBUG_INFO_BTF --disable DEBUG_INFO_BTF_MODULES \
		--set-str SYSTEM_TRUSTED_KEYS '' --set-str SYSTEM_REVOCATION_KEYS ''
	make -s -C "$src" O="$OBJ" ARCH=x86_64 olddefconfig
}

# build_distro SRC TARGETS...: make TARGETS, the whole log in OUT/build.log.
build_distro() {
	local src=$1
	shift
	log "make $* with Debian's config (-j$JOBS, CC=$CC)"
	KBUILD_BUILD_USER=uncached KBUILD_BUILD_HOST=distro-check \
		KBUILD_BUILD_TIMESTAMP='2024-12-03' \
		make -C "$src" O="$OBJ" ARCH=x86_64 CC="$CC" -j"$JOBS" \
		"$@" >>"$OUT/build.log" 2>&1
}

# series_files: every file the series changes.
series_files() {
	# shellcheck disable=SC2046 # patch names
	patch_files $(series_patches) | sort -u
}

# warnings_of LOG: the compiler, objtool and modpost warnings and errors of
# LOG, paths relative to the source tree, sorted.
warnings_of() {
	grep -iE '(warning|error):' "$1" |
		sed -e "s|^$SRC_DIR/[a-z]*/||" -e 's|^\(\.\./\)*src/[a-z]*/||' |
		sort -u || true
}

# pristine_warnings FILE...: the warnings of the pristine tree, same config,
# for the objects of FILE... (the .c files other warnings are located in).
pristine_warnings() {
	local objs
	objs=$(printf '%s\n' "$@" | sed -n 's/\.c$/.o/p' | sort -u)
	[ -n "$objs" ] || return 0
	mkdir -p "$PRISTINE_OBJ"
	cp "$OBJ/.config" "$PRISTINE_OBJ/.config"
	make -s -C "$PRISTINE_SRC" O="$PRISTINE_OBJ" ARCH=x86_64 olddefconfig
	# shellcheck disable=SC2086 # object names
	make -k -C "$PRISTINE_SRC" O="$PRISTINE_OBJ" ARCH=x86_64 CC="$CC" \
		-j"$JOBS" $objs >"$OUT/pristine.log" 2>&1 || true
	warnings_of "$OUT/pristine.log"
}

# judge: fails on warnings the series causes: those located in a file it
# touches, and those elsewhere that the pristine tree does not give.
judge() {
	local patterns ours others new
	warnings_of "$OUT/build.log" >"$OUT/warnings"
	patterns=$(series_files | sed -e 's/\.c$/.[co]/' -e 's/^/^/' -e 's/$/:/')
	ours=$(grep -f <(echo "$patterns") "$OUT/warnings" || true)
	others=$(grep -v -f <(echo "$patterns") "$OUT/warnings" || true)
	if [ -n "$others" ]; then
		# shellcheck disable=SC2046 # file names
		new=$(comm -23 <(echo "$others") \
			<(pristine_warnings $(cut -d: -f1 <<<"$others")))
		log "$(wc -l <<<"$others") warning(s) in files the series does not touch; of those the pristine tree does not give:"$'\n'"${new:-none}"
		ours+=${new:+$'\n'$new}
	fi
	[ -z "$ours" ] || {
		log "warnings or errors the series causes:"$'\n'"$ours"
		return 1
	}
}

main() {
	help_if_asked "$@"
	local src=$PATCHED_SRC start=$SECONDS status=0 dirs
	need_cmd make gcc bison flex bc xz
	need_file "$src/Makefile" "run 'make source' first"
	read -ra dirs <<<"$DISTRO_DIRS"
	mkdir -p "$OUT"
	: >"$OUT/build.log"
	distro_config "$src"
	build_distro "$src" vmlinux "${dirs[@]}" || status=$?
	if [ $status != 0 ]; then
		tail -n 30 "$OUT/build.log" >&2
		log "the build failed (exit status $status); log: ${OUT#"$PWD"/}/build.log"
	fi
	judge || status=1
	printf '%s\n' "targets: vmlinux ${dirs[*]}" \
		"time: $(duration $((SECONDS - start)))" \
		"result: $([ $status = 0 ] && echo passed || echo failed)" >"$OUT/summary"
	log "Debian's config: vmlinux ${dirs[*]}: $([ $status = 0 ] && echo "built, no warning from the series" || echo FAILED) in $(duration $((SECONDS - start))) (results: ${OUT#"$PWD"/}/)"
	return $status
}

main "$@"
