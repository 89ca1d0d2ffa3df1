#!/usr/bin/env bash
# deps.sh - install the host packages the harness needs
# (scripts/data/packages.list) and the pinned linux-source-6.12
# (scripts/data/linux-source.version); with --linux-config also Debian's
# kernel configs (linux-config-6.12, same version); with --deb those and
# what make deb needs besides (scripts/data/deb-packages.list); needs root.
# Idempotent: does nothing when everything is already there. What apt-get
# and debconf print goes to build/deps-apt.log, shown only when apt-get
# fails.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

APT_UPDATED=
APT_LOG=$BUILD/deps-apt.log	# what apt-get and debconf said, shown on failure

is_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'
}

# apt_quiet ARGS...: apt-get ARGS, its output and debconf's ("debconf:
# delaying package configuration...") in APT_LOG only; on failure, the end
# of the log goes to stderr.
apt_quiet() {
	mkdir -p "${APT_LOG%/*}"
	if DEBIAN_FRONTEND=noninteractive apt-get -q -o Dpkg::Use-Pty=0 "$@" \
		</dev/null >>"$APT_LOG" 2>&1; then
		return 0
	fi
	tail -n 20 "$APT_LOG" | sed 's/^/  /' >&2
	return 1
}

apt_update_once() {
	[ -n "$APT_UPDATED" ] && return 0
	log "running apt-get update"
	apt_quiet update || die "apt-get update failed (log: $APT_LOG)"
	APT_UPDATED=1
}

# is_known PKG[=VER] - does the archive know this package (and version)?
is_known() {
	local name=${1%%=*} ver=
	[ "$name" != "$1" ] && ver=${1#*=}
	if [ -z "$ver" ]; then
		apt-cache show "$name" >/dev/null 2>&1
	else
		apt-cache madison "$name" 2>/dev/null | awk -F'|' '{gsub(/ /,"",$2); print $2}' |
			grep -qxF "$ver"
	fi
}

apt_install() {
	local p missing=()
	for p in "$@"; do
		if ! is_known "$p"; then
			apt_update_once
			is_known "$p" || missing+=("$p")
		fi
	done
	[ ${#missing[@]} -eq 0 ] ||
		die "the package archive has no package ${missing[*]}; check /etc/apt/sources.list"
	log "installing: $*"
	apt_quiet install -y --no-install-recommends --allow-downgrades "$@" ||
		die "apt-get install $* failed (log: $APT_LOG)"
}

# install_listed_packages LIST: the packages of LIST that are missing.
install_listed_packages() {
	local p missing=()
	for p in $(list_entries "$1"); do
		is_installed "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
}

installed_version() {
	dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true
}

install_linux_source() {
	local pin have newest
	pin=$(pinned_linux_version)
	have=$(installed_version linux-source-6.12)
	[ "$have" = "$pin" ] && return 0
	is_known "linux-source-6.12=$pin" || apt_update_once
	if is_known "linux-source-6.12=$pin"; then
		apt_install "linux-source-6.12=$pin"
		return 0
	fi
	newest=$(apt-cache madison linux-source-6.12 2>/dev/null | awk -F'|' 'NR==1{gsub(/ /,"",$2); print $2}')
	[ -n "$newest" ] || die "the package archive has no linux-source-6.12"
	warn_loud "linux-source-6.12 $pin (the version the series is made for) is not in the archive; using $newest. The series may not apply."
	[ "$have" = "$newest" ] || apt_install "linux-source-6.12=$newest"
}

# install_linux_config: Debian's kernel configs (linux-config-6.12) at the
# version of the installed linux-source-6.12, for make check-distro-config.
install_linux_config() {
	local ver
	ver=$(installed_version linux-source-6.12)
	[ -n "$ver" ] || die "linux-source-6.12 is not installed; run 'make deps' first"
	[ "$(installed_version linux-config-6.12)" = "$ver" ] && return 0
	is_known "linux-config-6.12=$ver" || apt_update_once
	apt_install "linux-config-6.12=$ver"
}

main() {
	help_if_asked "$@"
	[ $# -eq 0 ] || [[ $# = 1 && $1 =~ ^--(linux-config|deb)$ ]] ||
		die "usage: deps.sh [--linux-config | --deb]"
	[ "$(id -u)" = 0 ] || die "installing packages needs root (apt-get); run as root or install scripts/data/packages.list by hand"
	need_cmd apt-get dpkg-query apt-cache
	rm -f "$APT_LOG"
	install_listed_packages "$DATA_DIR/packages.list"
	install_linux_source
	[ $# -eq 0 ] || install_linux_config
	[ "${1:-}" != --deb ] || install_listed_packages "$DATA_DIR/deb-packages.list"
	log "all host packages present (linux-source-6.12 $(installed_version linux-source-6.12))"
}

main "$@"
