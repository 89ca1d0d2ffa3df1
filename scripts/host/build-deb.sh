#!/usr/bin/env bash
# build-deb.sh - make deb: Debian binary packages of the patched kernel
# (build/src/patched) with Debian's own configuration for this kernel
# (distro-config.sh: config.amd64_none_DEB_FLAVOUR of linux-config-6.12 at
# the pinned version), built out of tree in build/deb/obj by the kernel's
# 'make bindeb-pkg'. The packages land in build/deb/:
#   linux-image-REL      the kernel, its modules, System.map and config
#   linux-headers-REL    what out-of-tree modules (DKMS) build against
#   linux-libc-dev       the UAPI headers (RWF_UNCACHED for user space)
#   linux-image-REL-dbg  with DEB_DEBUG=1 only: the debug info
# REL is the kernel's version and DEB_LOCALVERSION (6.12.N-uncached1).
# Then it checks them: dpkg-deb --info and --contents (the control fields,
# vmlinuz, the modules of ext4, XFS, btrfs and NVMe, Module.symvers and the
# build link of the headers) and, with DEB_LINTIAN=1, lintian; prints
# progress every minute, the package names and sizes and the time.
# Environment (defaults): DEB_FLAVOUR (amd64; cloud-amd64 is Debian's
# smaller configuration for virtual machines), DEB_LOCALVERSION
# (-uncached1), DEB_DEBUG (0), DEB_LINTIAN (0).
# From an empty ccache on 2 cores this is a long build (Debian's amd64
# configuration builds thousands of modules): README gives the times.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

DEB_FLAVOUR=${DEB_FLAVOUR:-amd64}
DEB_LOCALVERSION=${DEB_LOCALVERSION:--uncached1}
DEB_DEBUG=${DEB_DEBUG:-0}
DEB_LINTIAN=${DEB_LINTIAN:-0}
OUT=$BUILD/deb
OBJ=$OUT/obj

check_settings() {
	[[ $DEB_LOCALVERSION =~ ^-[a-z0-9.-]+$ ]] ||
		die "DEB_LOCALVERSION takes a suffix like -uncached1 (lower case, digits, '.', '-'), not '$DEB_LOCALVERSION'"
	[[ $DEB_DEBUG =~ ^[01]$ ]] || die "DEB_DEBUG takes 0 or 1, not '$DEB_DEBUG'"
	[[ $DEB_LINTIAN =~ ^[01]$ ]] || die "DEB_LINTIAN takes 0 or 1, not '$DEB_LINTIAN'"
	need_cmd make gcc bison flex bc rsync depmod cpio xz openssl dpkg-buildpackage dpkg-deb dh_testdir
	[ "$DEB_LINTIAN" = 0 ] || need_cmd lintian
	need_file "$PATCHED_SRC/Makefile" "run 'make source' first"
}

# configure: Debian's config and the local version in OBJ/.config, and
# the files generated from it (syncconfig: olddefconfig leaves an existing
# include/config/auto.conf, which kernelrelease reads, as it was).
configure() {
	DEB_DEBUG=$DEB_DEBUG "$HOST_DIR/distro-config.sh" "$PATCHED_SRC" "$OBJ" "$DEB_FLAVOUR"
	"$PATCHED_SRC/scripts/config" --file "$OBJ/.config" \
		--set-str LOCALVERSION "$DEB_LOCALVERSION" --disable LOCALVERSION_AUTO
	make -s -C "$PATCHED_SRC" O="$OBJ" ARCH=x86_64 olddefconfig
	make -s -C "$PATCHED_SRC" O="$OBJ" ARCH=x86_64 syncconfig
}

# release: the kernel release the build gives (6.12.N-uncached1).
release() {
	make -s -C "$PATCHED_SRC" O="$OBJ" ARCH=x86_64 kernelrelease
}

# build_packages: make bindeb-pkg, its log in OUT/build.log.
build_packages() {
	local cc=gcc jobs start
	command -v ccache >/dev/null && cc="ccache gcc"
	jobs=$(($(nproc) + 1))
	rm -f "$OUT"/*.deb "$OUT"/*.buildinfo "$OUT"/*.changes
	log "make bindeb-pkg, Debian's $DEB_FLAVOUR config (-j$jobs, CC=$cc; log: ${OUT#"$PWD"/}/build.log)"
	start=$SECONDS
	build_ticker "$OBJ" 60
	CCACHE_BASEDIR=${CCACHE_BASEDIR:-$TOP} \
		KBUILD_BUILD_USER=uncached KBUILD_BUILD_HOST=deb \
		KBUILD_BUILD_TIMESTAMP='2024-12-03' \
		make -C "$PATCHED_SRC" O="$OBJ" ARCH=x86_64 CC="$cc" HOSTCC="$cc" \
		-j"$jobs" bindeb-pkg >"$OUT/build.log" 2>&1 ||
		die "make bindeb-pkg failed: $(grep -m1 -E ': (fatal )?error:|\*\*\*|Error [0-9]+' "$OUT/build.log" || tail -n 1 "$OUT/build.log") (log: $OUT/build.log)"
	kill "$BUILD_TICKER" 2>/dev/null || true
	find "$OBJ" -name '*.o' | wc -l >"$OBJ/.objects-total"
	log "built in $(duration $((SECONDS - start))) ($(cat "$OBJ/.objects-total") objects)"
}

# package NAME: the .deb of package NAME in OUT (exactly one).
package() {
	local debs
	debs=$(find "$OUT" -maxdepth 1 -name "${1}_*.deb")
	[ "$(wc -w <<<"$debs")" = 1 ] || die "want one ${1}_*.deb in $OUT, found: ${debs:-none}"
	echo "$debs"
}

# contents DEB: the paths DEB holds (dpkg-deb --contents, a symlink's own
# path), listed once in OUT/NAME.contents; prints that file's name.
contents() {
	local list=$OUT/${1##*/}.contents
	dpkg-deb --contents "$1" | awk '{print $6}' >"$list"
	echo "$list"
}

# has_path DEB LIST REGEX: LIST (contents DEB) has a path matching REGEX.
has_path() {
	grep -qE "$3" "$2" || die "${1##*/} has no path matching '$3'"
}

# has_module DEB LIST REL PATH: DEB ships module PATH (fs/ext4/ext4), or has
# it built in (its modules.builtin; cloud-amd64 builds ext4 and NVMe in).
has_module() {
	local ko="kernel/$4.ko" builtin
	grep -qE "^\./(usr/)?lib/modules/$3/$ko(\.xz|\.zst|\.gz)?\$" "$2" && return 0
	builtin=$(dpkg-deb --fsys-tarfile "$1" |
		tar -xO --wildcards "./*lib/modules/$3/modules.builtin") ||
		die "${1##*/} has no module $4 and no modules.builtin"
	grep -qxF "$ko" <<<"$builtin" ||
		die "${1##*/} has $4 neither as a module nor built in"
}

# check_packages REL: the packages are what make deb promises.
check_packages() {
	local rel=$1 image headers m ilist hlist
	image=$(package "linux-image-$rel")
	headers=$(package "linux-headers-$rel")
	ilist=$(contents "$image")
	hlist=$(contents "$headers")
	package linux-libc-dev >/dev/null
	[ "$DEB_DEBUG" = 0 ] || package "linux-image-$rel-dbg" >/dev/null
	for m in Package Version Architecture Maintainer Description; do
		[ -n "$(dpkg-deb --field "$image" "$m")" ] || die "${image##*/} has no $m field"
	done
	[ "$(dpkg-deb --field "$image" Architecture)" = amd64 ] || die "${image##*/} is not for amd64"
	has_path "$image" "$ilist" "^\./boot/vmlinuz-$rel\$"
	has_path "$image" "$ilist" "^\./boot/config-$rel\$"
	for m in fs/ext4/ext4 fs/xfs/xfs fs/btrfs/btrfs drivers/nvme/host/nvme; do
		has_module "$image" "$ilist" "$rel" "$m"
	done
	has_path "$headers" "$hlist" "^\./usr/src/linux-headers-$rel/Module\.symvers\$"
	has_path "$headers" "$hlist" "^\./(usr/)?lib/modules/$rel/build\$"
	[ "$DEB_LINTIAN" = 0 ] || lintian_check "$image" "$headers"
}

# lintian_check DEB...: lintian's findings, counted; errors are listed
# (the kernel's own packaging has known ones: they are reported, not fatal).
lintian_check() {
	local out
	out=$(lintian --no-tag-display-limit "$@" 2>&1 || true)
	printf '%s\n' "$out" >"$OUT/lintian.log"
	log "lintian: $(grep -c '^E:' <<<"$out" || true) error(s), $(grep -c '^W:' <<<"$out" || true) warning(s) (${OUT#"$PWD"/}/lintian.log)"
	grep '^E:' <<<"$out" | sed 's/^/  /' >&2 || true
}

main() {
	help_if_asked "$@"
	[ $# = 0 ] || die "usage: build-deb.sh (settings in the environment: see --help)"
	local rel deb start=$SECONDS
	check_settings
	mkdir -p "$OUT"
	configure
	rel=$(release)
	[[ $rel == *"$DEB_LOCALVERSION" ]] || die "the kernel release '$rel' lacks DEB_LOCALVERSION"
	build_packages
	check_packages "$rel"
	echo "$rel" >"$OUT/release"
	log "packages of $rel ($(duration $((SECONDS - start))) in all):"
	for deb in "$OUT"/*.deb; do
		printf '  %s  %s\n' "$(du -h "$deb" | cut -f1)" "${deb##*/}" >&2
	done
}

main "$@"
