#!/usr/bin/env bash
# check-distro-config.sh - build the patched tree (build/src/patched) with
# Debian's own configuration for this kernel, the way a kernel developer
# applying the series to Debian's tree would, out of tree in
# build/distro/obj:
#   - the config (scripts/host/distro-config.sh, which make deb uses too):
#     config.amd64_none_amd64 of the linux-config-6.12 package
#     at the version of linux-source-6.12 (make check-distro-config
#     installs it), with only what does not change the code compiled
#     changed: no debug info (no pahole here; debug info only adds
#     sections) and no trusted-keys file of Debian's build system;
#   - the build: vmlinux, and every object, built-in or module, under
#     DISTRO_DIRS (fs/ mm/ block/ io_uring/): ext4, XFS and btrfs are
#     modules in Debian's config;
#   - the verdict: fails on any error, on any compiler or objtool
#     warning located in a file the series touches (a header too), and on
#     any other warning that the pristine tree (build/src/pristine, same
#     config, only the objects concerned: build/distro/pristine-obj) does
#     not give;
#   - the modules: every module under DISTRO_DIRS is linked (modpost with
#     vmlinux); fails on any modpost warning other than an unresolved
#     symbol (modules outside DISTRO_DIRS, not built here, export those:
#     lib/, crypto/, net/), and on an unresolved symbol that the series
#     names and no EXPORT_SYMBOL*() of the tree exports;
#   - the module ABI: out-of-tree modules of scripts/checks/distro-abi/ under a
#     licence other than the GPL: abi_write_sync (generic_write_sync(), an
#     inline the series extends) must link, and its control
#     abi_gpl_only_control (a GPL-only export of the series) must be
#     refused, or the check proves nothing.
# Takes an hour or more on 2 cores from an empty ccache; not part of CI.
# Results: build/results/distro/ (build.log, warnings, modules.log,
# abi-*.log, summary).
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

DISTRO_DIRS=${DISTRO_DIRS:-fs/ mm/ block/ io_uring/}
OBJ=$BUILD/distro/obj
PRISTINE_OBJ=$BUILD/distro/pristine-obj
ABI_SRC=$CHECKS_DIR/distro-abi
ABI_OBJ=$BUILD/distro/abi
OUT=$RESULTS/distro
JOBS=$(($(nproc) + 1))
CC=gcc
command -v ccache >/dev/null && CC="ccache gcc"

# distro_config SRC: Debian's config, adjusted as above, in OBJ/.config.
distro_config() {
	DEB_DEBUG=0 "$HOST_DIR/distro-config.sh" "$1" "$OBJ" amd64
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

# module_targets DIR...: the .ko of every module the build of DIR... made
# (their modules.order).
module_targets() {
	local dir
	for dir in "$@"; do
		dir=${dir%/}
		[ ! -f "$OBJ/$dir/modules.order" ] ||
			sed 's/\.o$/.ko/' "$OBJ/$dir/modules.order"
	done
}

# exported_anywhere SYMBOL...: the symbols of SYMBOL... that some
# EXPORT_SYMBOL*() of the source tree exports.
exported_anywhere() {
	local alternation
	alternation=$(printf '%s|' "$@")
	grep -rhoE --include='*.c' --include='*.S' \
		"EXPORT_SYMBOL[A-Z_]*\((${alternation%|})[,)]" "$PATCHED_SRC" |
		sed -E 's/.*\(([^,)]*).*/\1/' | sort -u || true
}

# unresolved_symbols DIR...: the symbols the modules of DIR... use that
# neither vmlinux nor those modules export (OBJ/Module.symvers).
unresolved_symbols() {
	local target
	for target in $(module_targets "$@"); do
		nm -u "$OBJ/${target%.ko}.o" | awk '{ print $2 }'
	done | grep -v '^__this_module$' | sort -u |
		comm -23 - <(cut -f2 "$OBJ/Module.symvers" | sort -u)
}

# series_added_lines: the lines the series adds.
series_added_lines() {
	local p
	for p in $(series_patches); do
		grep '^+[^+]' "$TOP/patches/$p" || true
	done
}

# link_modules SRC DIR...: link every module of DIR... (modpost against
# vmlinux); false on a modpost warning other than an unresolved symbol,
# and on an unresolved symbol that no EXPORT_SYMBOL*() of the tree exports
# and the series names (the others come from modules not built here, or
# are exported through macros, as before the series).
link_modules() {
	local src=$1 log=$OUT/modules.log unresolved missing ours='' others
	shift
	# shellcheck disable=SC2046 # module names
	make -C "$src" O="$OBJ" ARCH=x86_64 CC="$CC" -j"$JOBS" \
		KBUILD_MODPOST_WARN=1 $(module_targets "$@") >"$log" 2>&1 || {
		tail -n 30 "$log" >&2
		log "linking the modules failed; log: ${log#"$PWD"/}"
		return 1
	}
	unresolved=$(unresolved_symbols "$@")
	# shellcheck disable=SC2086 # symbol names
	missing=$(comm -23 <(echo "$unresolved") <(exported_anywhere $unresolved) |
		sed '/^$/d')
	[ -z "$missing" ] ||
		ours=$(grep -owFf <(echo "$missing") <(series_added_lines) |
			sort -u || true)
	others=$(grep -iE '^(warning|error)' "$log" |
		grep -vE ' undefined!$|unresolved symbol warnings' || true)
	log "linked $(module_targets "$@" | wc -l) modules of $*; $(echo "$unresolved" | sed '/^$/d' | wc -l) symbol(s) they use come from modules not built here (lib/, crypto/, net/...)${missing:+, of which not found in an EXPORT_SYMBOL*() line but not named by the series either: $(tr '\n' ' ' <<<"$missing")}"
	[ -z "$ours$others" ] || {
		log "modpost: ${ours:+symbols of the series nothing exports: $(tr '\n' ' ' <<<"$ours")}${others}"
		return 1
	}
}

# abi_module SRC NAME: build the out-of-tree module NAME of ABI_SRC against
# OBJ (with the Module.symvers link_modules wrote); its output in
# OUT/abi-NAME.log; the status of make.
abi_module() {
	local src=$1 name=$2
	rm -rf "$ABI_OBJ"
	mkdir -p "$ABI_OBJ"
	cp "$ABI_SRC"/Kbuild "$ABI_SRC/$name.c" "$ABI_OBJ/"
	make -C "$src" O="$OBJ" ARCH=x86_64 CC="$CC" M="$ABI_OBJ" \
		ABI_MODULE="$name" modules >"$OUT/abi-$name.log" 2>&1
}

# check_module_abi SRC: a non-GPL module using generic_write_sync() links;
# one using a GPL-only export of the series does not.
check_module_abi() {
	local src=$1 status=0
	need_file "$OBJ/Module.symvers" "the modules were not linked"
	if abi_module "$src" abi_write_sync &&
		! grep -q 'GPL-only' "$OUT/abi-abi_write_sync.log"; then
		log "module ABI: a non-GPL module calling generic_write_sync() links"
	else
		tail -n 20 "$OUT/abi-abi_write_sync.log" >&2
		log "module ABI: a non-GPL module calling generic_write_sync() does not link"
		status=1
	fi
	if ! abi_module "$src" abi_gpl_only_control &&
		grep -q "GPL-only symbol 'folio_end_uncached_write'" \
			"$OUT/abi-abi_gpl_only_control.log"; then
		log "module ABI: the control (a GPL-only export in a non-GPL module) is refused, as it must be"
	else
		tail -n 20 "$OUT/abi-abi_gpl_only_control.log" >&2
		log "module ABI: the control was not refused for the GPL-only symbol: the check proves nothing"
		status=1
	fi
	rm -rf "$ABI_OBJ"
	return $status
}

main() {
	help_if_asked "$@"
	local src=$PATCHED_SRC start=$SECONDS status=0 dirs
	need_cmd make gcc bison flex bc xz nm
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
	if [ $status = 0 ]; then
		link_modules "$src" "${dirs[@]}" || status=1
	fi
	if [ $status = 0 ]; then
		check_module_abi "$src" || status=1
	fi
	printf '%s\n' "targets: vmlinux ${dirs[*]}" \
		"time: $(duration $((SECONDS - start)))" \
		"result: $([ $status = 0 ] && echo passed || echo failed)" >"$OUT/summary"
	log "Debian's config: vmlinux ${dirs[*]}: $([ $status = 0 ] && echo "built, no warning from the series" || echo FAILED) in $(duration $((SECONDS - start))) (results: ${OUT#"$PWD"/}/)"
	return $status
}

main "$@"
