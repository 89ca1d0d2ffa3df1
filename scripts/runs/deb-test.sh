#!/usr/bin/env bash
# deb-test.sh - make deb-test: boot the kernel of the packages make deb
# built (build/deb/, build-deb.sh) as a machine that installed them would
# start it, and run the behavioural suite on ext4, XFS and btrfs:
#   - the kernel: /boot/vmlinuz-REL of linux-image-REL, unpacked with
#     dpkg-deb into build/deb/root (with linux-headers-REL); its
#     /boot/config-REL decides the command line (run-qemu.sh);
#   - its modules: those of scripts/data/deb-modules.list (virtio, NVMe,
#     ext4, XFS, btrfs, ...) and what the package's modules.dep (depmod
#     -b on the unpacked tree) says they need, from the package's
#     /lib/modules/REL, uncompressed, loaded by the busybox guest's /init
#     with insmod in that order before it mounts the disks; a name the
#     package has built in (modules.builtin) is left to the kernel;
#   - the guest test modules (tests/kmod/) are built against
#     linux-headers-REL, as DKMS would build a module on that machine;
#   - the suite: qemu-test.sh's run and verdict (the done signal, the full
#     TAP plans, no kernel splat, the CPUs and memory) on ext4, xfs and
#     btrfs; and the guest must say it runs REL and that every module
#     of the list came from the package.
# Results: build/results/deb-test/ (as make qemu-test's, and modules.log:
# what the guest loaded).
set -euo pipefail
. "$(dirname "$0")/qemu-test.sh"

DEB=$BUILD/deb
ROOT=$DEB/root
KDIR=$DEB/kernel	# arch/x86/boot/bzImage, package-modules/, tests-kmod/
DEB_MODULES=$DATA_DIR/deb-modules.list
DEB_FS="ext4 xfs btrfs"

# release: the kernel release of the packages (build-deb.sh wrote it).
release() {
	need_file "$DEB/release" "build the packages first ('make deb')"
	cat "$DEB/release"
}

# unpack REL: the image and headers packages into ROOT, the kernel where
# run-qemu.sh takes it, and depmod's files for the package's modules.
unpack() {
	local rel=$1 name debs
	rm -rf "$ROOT" "$KDIR"
	mkdir -p "$ROOT" "$KDIR/arch/x86/boot"
	for name in "linux-image-$rel" "linux-headers-$rel"; do
		debs=$(find "$DEB" -maxdepth 1 -name "${name}_*.deb")
		[ "$(wc -w <<<"$debs")" = 1 ] || die "want one ${name}_*.deb in $DEB, found: ${debs:-none} (run 'make deb')"
		dpkg-deb -x "$debs" "$ROOT"
		log "unpacked ${debs##*/}"
	done
	need_file "$ROOT/boot/vmlinuz-$rel" "linux-image-$rel has no /boot/vmlinuz-$rel"
	cp "$ROOT/boot/vmlinuz-$rel" "$KDIR/arch/x86/boot/bzImage"
	need_file "$ROOT/boot/config-$rel" "linux-image-$rel has no /boot/config-$rel"
	cp "$ROOT/boot/config-$rel" "$KDIR/.config"	# run-qemu.sh reads it
	MODDIR=$ROOT/lib/modules/$rel
	[ -d "$MODDIR" ] || MODDIR=$ROOT/usr/lib/modules/$rel
	need_file "$MODDIR/modules.order" "linux-image-$rel has no modules"
	depmod -b "${MODDIR%/lib/modules/*}" "$rel"
}

# module_path NAME: the path (relative to MODDIR) of module NAME in
# modules.dep ('-' and '_' alike); nothing when the package has none.
module_path() {
	awk -F: -v n="${1//-/_}" '{
		m = $1; sub(/.*\//, "", m); sub(/\.ko(\.(xz|zst|gz))?$/, "", m)
		gsub(/-/, "_", m)
		if (m == n) { print $1; exit }
	}' "$MODDIR/modules.dep"
}

# load_order: the paths of the modules to load, dependencies first, each
# once; a name that is built in is said and left out.
load_order() {
	local name path
	for name in $(list_entries "$DEB_MODULES"); do
		path=$(module_path "$name")
		if [ -z "$path" ]; then
			grep -qE "/${name//[-_]/[-_]}\.ko\$" "$MODDIR/modules.builtin" ||
				die "$name (scripts/data/deb-modules.list) is neither a module nor built in in the package"
			log "$name: built into the package's kernel"
			continue
		fi
		# modules.dep lists what a module needs, the deepest last
		awk -F': *' -v p="$path" '$1 == p { n = split($2, d, " ");
			for (i = n; i >= 1; i--) print d[i]; print p }' "$MODDIR/modules.dep"
	done | awk '!seen[$0]++'
}

# package_modules: the modules of load_order, uncompressed, in KDIR's
# package-modules/ with their order in load.list.
package_modules() {
	local dir=$KDIR/package-modules path ko order
	order=$(load_order) || die "no module list for the guest (above)"
	mkdir -p "$dir"
	: >"$dir/load.list"
	for path in $order; do
		ko=${path##*/}
		ko=${ko%.xz} ko=${ko%.zst} ko=${ko%.gz}
		case $path in
		*.xz) need_cmd xz; xz -dc "$MODDIR/$path" >"$dir/$ko" ;;
		*.zst) need_cmd zstd; zstd -q -dc "$MODDIR/$path" >"$dir/$ko" ;;
		*.gz) need_cmd gzip; gzip -dc "$MODDIR/$path" >"$dir/$ko" ;;
		*) cp "$MODDIR/$path" "$dir/$ko" ;;
		esac
		echo "$ko" >>"$dir/load.list"
	done
	log "$(wc -l <"$dir/load.list") package modules for the guest: $(paste -s -d ' ' "$dir/load.list")"
}

# test_modules REL: tests/kmod/ built against linux-headers-REL, where
# run-qemu.sh takes them (kernel_test_modules).
test_modules() {
	local rel=$1 headers=$ROOT/usr/src/linux-headers-$1 dir log=$KDIR/tests-kmod.log
	dir=$(kernel_test_modules "$KDIR/arch/x86/boot/bzImage")
	need_file "$headers/Makefile" "linux-headers-$rel has no /usr/src/linux-headers-$rel"
	make_test_modules "$dir" -C "$headers" >"$log" 2>&1 ||
		die "the guest test modules do not build against linux-headers-$rel (log: $log)"
	log "guest test modules built against linux-headers-$rel: $(cd "$dir" && echo *.ko)"
}

# check_package_kernel REL DIR: the guest ran REL and loaded every module
# of the package it was given.
check_package_kernel() {
	local rel=$1 ko bad=0 console
	console=$(tr -d '\r' <"$2/console.log")
	grep -qxF "init: kernel $rel" <<<"$console" ||
		{ log "the guest did not say it runs $rel"; bad=1; }
	grep '^init: package module ' <<<"$console" >"$2/modules.log" || true
	while read -r ko; do
		grep -qxF "init: package module $ko loaded" "$2/modules.log" ||
			{ log "the guest did not load $ko"; bad=1; }
	done <"$KDIR/package-modules/load.list"
	[ "$bad" = 0 ] && log "the guest ran $rel with the package's $(wc -l <"$2/modules.log") modules"
}

main() {
	help_if_asked "$@"
	[ $# = 0 ] || die "usage: deb-test.sh"
	local rel dir=$RESULTS/deb-test rc=0
	need_cmd dpkg-deb depmod make gcc qemu-system-x86_64
	need_file "$INITRD" "run 'make initramfs' first"
	rel=$(release)
	unpack "$rel"
	package_modules
	test_modules "$rel"
	choose_subset "" "$DEB_FS"
	run_suite "$KDIR/arch/x86/boot/bzImage" "$dir"
	judge_tests "$dir" "$(suite_targets)" "$(suite_plans)" | tee "$dir/summary" || rc=1
	check_package_kernel "$rel" "$dir" || rc=1
	return "$rc"
}

main "$@"
