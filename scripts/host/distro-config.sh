#!/usr/bin/env bash
# distro-config.sh SRC OUT [FLAVOUR] - write OUT/.config for the tree SRC:
# Debian's own configuration of this kernel, config.amd64_none_FLAVOUR of
# the linux-config-6.12 package at the pinned version (FLAVOUR: amd64, the
# default, or cloud-amd64, Debian's configuration for virtual machines),
# with only what does not change the code compiled changed:
#   - no debug info (pahole is not installed here; debug info only adds
#     sections), unless DEB_DEBUG=1 (then Debian's settings stay, and
#     pahole must be installed for BTF);
#   - no trusted-keys or revocation file of Debian's build system (the
#     build makes its own module signing key).
# Then make olddefconfig. Used by check-distro-config.sh and build-deb.sh.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

CONFIG_DIR=/usr/src/linux-config-6.12

main() {
	help_if_asked "$@"
	[[ $# == [23] ]] || die "usage: distro-config.sh SRC OUT [FLAVOUR]"
	local src=$1 out=$2 flavour=${3:-amd64} config
	[[ $flavour =~ ^[a-z0-9-]+$ ]] || die "FLAVOUR takes a Debian kernel flavour like amd64 or cloud-amd64, not '$flavour'"
	[[ ${DEB_DEBUG:-0} =~ ^[01]$ ]] || die "DEB_DEBUG takes 0 or 1, not '$DEB_DEBUG'"
	need_file "$src/Makefile" "run 'make source' first"
	config=$CONFIG_DIR/config.amd64_none_$flavour.xz
	need_file "$config" "install linux-config-6.12 ('scripts/host/deps.sh --linux-config'); flavours there: $(find "$CONFIG_DIR" -maxdepth 1 -name 'config.amd64_none_*.xz' -printf '%f\n' 2>/dev/null | sed 's/config.amd64_none_//; s/\.xz$//' | paste -s -d ' ')"
	mkdir -p "$out"
	xz -dc "$config" >"$out/.config"
	"$src/scripts/config" --file "$out/.config" \
		--set-str SYSTEM_TRUSTED_KEYS '' --set-str SYSTEM_REVOCATION_KEYS ''
	if [ "${DEB_DEBUG:-0}" = 1 ]; then
		! grep -q '^CONFIG_DEBUG_INFO_BTF=y' "$out/.config" ||
			command -v pahole >/dev/null ||
			die "DEB_DEBUG=1 keeps Debian's BTF, which needs pahole: install the package dwarves"
	else
		"$src/scripts/config" --file "$out/.config" \
			--disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT \
			--disable DEBUG_INFO_DWARF4 --disable DEBUG_INFO_DWARF5 \
			--enable DEBUG_INFO_NONE \
			--disable DEBUG_INFO_BTF --disable DEBUG_INFO_BTF_MODULES
	fi
	make -s -C "$src" O="$out" ARCH=x86_64 olddefconfig
	[ "${DEB_DEBUG:-0}" = 1 ] || grep -q '^CONFIG_DEBUG_INFO_NONE=y' "$out/.config" ||
		die "debug info is still on in $out/.config (a choice symbol of Debian's config this script does not clear)"
}

main "$@"
