#!/usr/bin/env bash
# run-qemu.sh - boot a kernel with the test initramfs and fresh NVMe disks
# (or, with --disks, existing ones), and collect what the guest says, under
# --results DIR (emptied first):
#   console.log  the full serial console (kernel log and /init output)
#   channel.log  what the guest wrote on purpose to the results port
#   FS.tap       each filesystem's TAP, cut out of channel.log
#   qemu.status  QEMU's exit status (124: killed by the timeout)
#   nonce        the token the guest must echo for its lines to count
#   resources    the CPUs and memory given (cpus=, mem_kib=, mem_min_kib=),
#                also in the guest's run.conf: /init checks it has them and
#                reports what it has (check_guest_resources in lib.sh)
# The guest test modules built against the kernel (build-kernel.sh, from
# tests/kmod/) go into the busybox guest's /lib/modules/uncached/; the
# modules of a packaged kernel (make deb-test) into /lib/modules/package/.
# It reaches no verdict itself: see verdict.sh.
#
# Options: --kernel BZIMAGE --initrd CPIO --results DIR (required)
#   --mode test|shell|cmd|probe   (test)     --cmd 'SHELL COMMAND' (mode cmd)
#   --fs 'ext4 xfs btrfs blockdev'|none  disks: filesystem targets
#                 (disks.list, matrix-disks.list; the guest mounts each as
#                 its line says, and skips the tests tests/left-out.list
#                 names for it) and the block-device target (its raw disks:
#                 devices.list)
#   --tests-list FILE  tests to run on the filesystems
#   --device-tests-list FILE  tests to run on the block-device target
#   --disks DIR   attach the images DIR/FS.img as they are (nothing is
#                 formatted; the guest's writes stay in them) instead of
#                 fresh ones in the results directory; DIR must lie outside
#                 it. For several boots on the same disks (crash-test.sh).
#   --selftest CASE   harness self-test fault (panic, hang, noverdict; cpus:
#                 the kernel brings up one CPU only, maxcpus=1)
#   --env 'VAR=VALUE ...'  environment of the guest tests (e.g. the stress
#                 budget UNCACHED_STRESS_OPS); values are plain words
#   --timeout SECS  --mem SIZE  --smp N   (defaults: GUEST_* in lib.sh:
#                 3600, 384M, 2)            --accel auto|tcg|kvm
#   --rootfs busybox|host   (busybox) host: --initrd is the host-userland
#                 one (build-host-initramfs.sh); QEMU shares the host's / read-only
#                 over virtio-9p (tag hostroot) and DIR/share read-write
#                 (tag results, mounted on the same path in the guest);
#                 --mode test runs --cmd there (initramfs/host-init)
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

KERNEL='' INITRD='' RESULTS_DIR='' MODE=test CMD='' SELFTEST='' TESTS_LIST=''
DEVICE_TESTS_LIST='' DEVICES=''
TEST_ENV='' FILESYSTEMS='' DISKS_DIR='' TIMEOUT=$GUEST_TIMEOUT MEM=$GUEST_MEM SMP=$GUEST_SMP
ACCEL=${ACCEL:-auto}
ROOTFS=busybox
KVM_PROBE=$BUILD/kvm-probe

usage() { die "usage: run-qemu.sh --kernel BZIMAGE --initrd CPIO --results DIR [options] (see the header of scripts/host/run-qemu.sh)"; }

parse_args() {
	while [ $# -gt 0 ]; do
		[ $# -ge 2 ] || usage
		case $1 in
		--kernel) KERNEL=$2 ;;
		--initrd) INITRD=$2 ;;
		--results) RESULTS_DIR=$2 ;;
		--mode) MODE=$2 ;;
		--cmd) CMD=$2 ;;
		--fs) FILESYSTEMS=$2 ;;
		--disks) DISKS_DIR=$2 ;;
		--tests-list) TESTS_LIST=$2 ;;
		--device-tests-list) DEVICE_TESTS_LIST=$2 ;;
		--selftest) SELFTEST=$2 ;;
		--env) TEST_ENV=$2 ;;
		--timeout) TIMEOUT=$2 ;;
		--mem) MEM=$2 ;;
		--smp) SMP=$2 ;;
		--accel) ACCEL=$2 ;;
		--rootfs) ROOTFS=$2 ;;
		*) usage ;;
		esac
		shift 2
	done
	if [ -z "$KERNEL" ] || [ -z "$INITRD" ] || [ -z "$RESULTS_DIR" ]; then
		usage
	fi
	need_file "$KERNEL" "build the kernel first ('make kernel')"
	need_file "$INITRD" "build the initramfs first ('make initramfs')"
	case $MODE in test|shell|probe) ;; cmd) [ -n "$CMD" ] || die "--mode cmd needs --cmd" ;;
	*) die "unknown --mode '$MODE' (test, shell, cmd or probe)" ;; esac
	case $ACCEL in auto|tcg|kvm) ;; *) die "unknown --accel '$ACCEL' (auto, tcg or kvm)" ;; esac
	guest_rootfs "$ROOTFS"
	[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout takes seconds, not '$TIMEOUT'"
	[[ $SMP =~ ^[1-9][0-9]*$ ]] || die "--smp takes a number of CPUs, not '$SMP'"
	[[ $MEM =~ ^[0-9]+[MG]$ ]] || die "--mem takes a size like 512M or 2G, not '$MEM'"
	check_test_env
	[ -z "$TESTS_LIST" ] || need_file "$TESTS_LIST" "--tests-list names it"
	[ -z "$DEVICE_TESTS_LIST" ] || need_file "$DEVICE_TESTS_LIST" "--device-tests-list names it"
	[ -z "$DISKS_DIR" ] || check_disks_dir
	case $FILESYSTEMS in
	'') FILESYSTEMS=$(all_filesystems) ;;
	none) FILESYSTEMS= ;;
	esac
	split_targets
}

# split_targets: the block-device target of --fs goes from FILESYSTEMS to
# DEVICES (its disks are the raw ones of devices.list, which /init leaves
# unmounted).
split_targets() {
	local target dev filesystems=
	dev=$(device_target)
	for target in $FILESYSTEMS; do
		if [ "$target" = "$dev" ]; then
			DEVICES=$dev
		else
			filesystems+="${filesystems:+ }$target"
		fi
	done
	FILESYSTEMS=$filesystems
	[ -z "$DEVICES" ] || [ -z "$DISKS_DIR" ] ||
		die "--disks cannot be combined with the block-device target $DEVICES"
}

check_test_env() {
	local word
	for word in $TEST_ENV; do
		[[ $word =~ ^[A-Z_][A-Z0-9_]*=[A-Za-z0-9._,:-]*$ ]] ||
			die "--env takes VAR=VALUE words (plain values), not '$word'"
	done
}

# --disks DIR: an existing directory, not inside the results directory
# (which is emptied before the boot).
check_disks_dir() {
	local disks results
	[ -d "$DISKS_DIR" ] || die "--disks $DISKS_DIR: no such directory"
	disks=$(realpath "$DISKS_DIR")
	results=$(realpath -m "$RESULTS_DIR")
	case $disks/ in
	"$results"/*) die "--disks $DISKS_DIR lies inside --results $RESULTS_DIR, which is emptied first" ;;
	esac
}

# disk_args: the QEMU arguments of the disks of $FILESYSTEMS, fresh ones
# (make-disks.sh) or with --disks the images as they are.
disk_args() {
	local fs
	[ -z "$DEVICES" ] ||
		DISKS_LIST=$DEVICES_FILE "$HOST_DIR/make-disks.sh" "$RESULTS_DIR/devices"
	[ -n "$FILESYSTEMS" ] || return 0
	if [ -z "$DISKS_DIR" ]; then
		# shellcheck disable=SC2086
		"$HOST_DIR/make-disks.sh" "$RESULTS_DIR/disks" $FILESYSTEMS
		return
	fi
	for fs in $FILESYSTEMS; do
		need_file "$DISKS_DIR/$fs.img" "--disks $DISKS_DIR has no image for $fs"
		qemu_disk_args "$(realpath "$DISKS_DIR/$fs.img")" "$fs"
	done
}

# write_resources: what the guest is given, for /init and the host's check.
# MemTotal is less than -m: the kernel's image, struct pages, firmware
# areas and, on the debug kernel, KASAN's shadow (an eighth of the memory)
# never reach it (a 384M perf guest has 363M, 95%). The floor is 60% of -m:
# well clear of that, but a guest on QEMU's default 128M, or one cut down
# by mem=, fails.
write_resources() {
	local kib=${MEM%[MG]}
	case $MEM in
	*G) kib=$((kib * 1024 * 1024)) ;;
	*M) kib=$((kib * 1024)) ;;
	esac
	printf 'cpus=%s\nmem_kib=%s\nmem_min_kib=%s\n' "$SMP" "$kib" $((kib * 60 / 100)) \
		>"$RESULTS_DIR/resources"
}

# The kernel command line; the cpus self-test brings up one CPU only.
# acpi=noirq: PCI interrupts are routed from the BIOS's PIRQ table, not by
# ACPI's interrupt-link methods. On the debug kernel under TCG each link's
# setup took 12-65 s (initcall_debug: the virtio-pci and nvme probes, each
# ending with "ACPI: \_SB_.LNKx: Enabled at IRQ"), and their teardown a
# minute at reboot: /init at 85 s and the reboot at 147 s, against 6.4 s
# and 9.3 s with it; those boot-time stalls also drew RCU grace-period
# warnings. The devices use MSI-X; ACPI still gives the CPUs and power-off.
# Only with the MP table parser, though: without it (Debian's cloud-amd64
# config) acpi=noirq makes the kernel disable the local APIC ("MPS support
# code is not built-in") and boot one CPU; such a kernel routes by ACPI.
kernel_cmdline() {
	local cmdline="console=ttyS0 panic=-1 printk.devkmsg=on no_timer_check"
	if kernel_parses_mptable; then cmdline+=" acpi=noirq"; fi
	[ "$SELFTEST" != cpus ] || cmdline+=" maxcpus=1"
	echo "$cmdline"
}

# kernel_parses_mptable: KERNEL's config (next to it) has the MP table
# parser, or says nothing about it.
kernel_parses_mptable() {
	local config
	config=$(kernel_config "$KERNEL")
	[ ! -f "$config" ] || grep -qx 'CONFIG_X86_MPPARSE=y' "$config"
}

# test_modules_list: gen_init_cpio lines for the guest test modules built
# against KERNEL, under /lib/modules/uncached/ (the busybox /init loads
# them).
test_modules_list() {
	local dir ko
	dir=$(kernel_test_modules "$KERNEL")
	[ "$ROOTFS" = busybox ] && [ -d "$dir" ] || return 0
	echo "dir /lib/modules/uncached 755 0 0"
	for ko in "$dir"/*.ko; do
		[ ! -f "$ko" ] || echo "file /lib/modules/uncached/${ko##*/} $ko 644 0 0"
	done
}

# package_modules_list: gen_init_cpio lines for the modules of a packaged
# kernel that make deb-test put next to KERNEL (deb-test.sh: the directory
# package-modules/ with load.list, their load order), under
# /lib/modules/package/ (the busybox /init loads them first).
package_modules_list() {
	local dir ko
	dir=$(kernel_package_modules "$KERNEL")
	[ "$ROOTFS" = busybox ] && [ -f "$dir/load.list" ] || return 0
	echo "dir /lib/modules/package 755 0 0"
	echo "file /etc/uncached/package-modules.list $dir/load.list 644 0 0"
	while read -r ko; do
		echo "file /lib/modules/package/$ko $dir/$ko 644 0 0"
	done <"$dir/load.list"
}

# modules_list: gen_init_cpio lines for both kinds of modules, after the
# directories they go in.
modules_list() {
	local lines
	lines=$(test_modules_list; package_modules_list)
	[ -n "$lines" ] || return 0
	printf 'dir /lib 755 0 0\ndir /lib/modules 755 0 0\n%s\n' "$lines"
}

# The per-run part of the initramfs: run.conf (and the command), appended to
# the base archive; the kernel unpacks both.
make_run_initrd() {
	local dir=$RESULTS_DIR/run-cpio supported mounts fs test left_out=()
	supported=$(list_entries "$TOP/tests/supported-fs.list" | paste -s -d ' ')
	# shellcheck disable=SC2086 # names
	mounts=$(mount_specs $FILESYSTEMS)
	for fs in $FILESYSTEMS; do
		for test in $(left_out_tests "$fs"); do
			left_out+=("$fs:$test")
		done
	done
	mkdir -p "$dir"
	cat >"$dir/run.conf" <<-CONF
	mode=$MODE
	nonce=$NONCE
	selftest=$SELFTEST
	filesystems="$FILESYSTEMS"
	devices="$DEVICES"
	raw_disks="$(raw_disk_names)"
	mounts="$mounts"
	left_out="${left_out[*]}"
	supported_fs="$supported"
	test_env="$TEST_ENV"
	CONF
	cat "$RESULTS_DIR/resources" >>"$dir/run.conf"
	[ "$ROOTFS" = busybox ] || echo "share_dir=$(realpath "$RESULTS_DIR/share")" >>"$dir/run.conf"
	printf '%s\n' "$CMD" >"$dir/cmd"
	{
		echo "file /etc/uncached/run.conf $dir/run.conf 644 0 0"
		echo "file /etc/uncached/cmd $dir/cmd 644 0 0"
		[ -z "$TESTS_LIST" ] || echo "file /etc/uncached/tests.list $TESTS_LIST 644 0 0"
		[ -z "$DEVICE_TESTS_LIST" ] ||
			echo "file /etc/uncached/blockdev.list $DEVICE_TESTS_LIST 644 0 0"
		modules_list
	} >"$dir/list"
	"$BUILD/initramfs/gen_init_cpio" "$dir/list" >"$dir/run.cpio"
	cat "$INITRD" "$dir/run.cpio" >"$RESULTS_DIR/initrd.cpio"
}

kvm_usable() {
	[ -r /dev/kvm ] && [ -w /dev/kvm ]
}

# KVM only when a quick boot proved it works on this host (nested KVM
# here aborts or hangs); the answer is cached per host kernel and QEMU.
pick_accel() {
	local key
	[ "$ACCEL" = auto ] || { echo "$ACCEL"; return; }
	kvm_usable || { echo tcg; return; }
	key="$(uname -r) $(qemu-system-x86_64 --version | head -n 1)"
	if [ ! -f "$KVM_PROBE" ] || [ "$(sed -n 2p "$KVM_PROBE")" != "$key" ]; then
		log "probing whether KVM boots this guest (20 s at most)"
		if "$0" --kernel "$KERNEL" --initrd "$INITRD" --results "$BUILD/kvm-probe.d" \
			--mode probe --fs none --accel kvm --timeout 20 --rootfs "$ROOTFS" >/dev/null 2>&1 &&
			grep -q "^uncached-done nonce=$(cat "$BUILD/kvm-probe.d/nonce")" \
				"$BUILD/kvm-probe.d/channel.log" 2>/dev/null; then
			printf 'kvm\n%s\n' "$key" >"$KVM_PROBE"
		else
			printf 'tcg\n%s\n' "$key" >"$KVM_PROBE"
			log "KVM does not boot the guest here; using TCG"
		fi
	fi
	head -n 1 "$KVM_PROBE"
}

accel_args() {
	case $1 in
	kvm) echo "-accel kvm -cpu host" ;;
	*) echo "-accel tcg -cpu max" ;;
	esac
}

# timeout_args: an interactive shell's QEMU stays in the terminal's
# foreground process group (a background one is stopped, SIGTTIN, when it
# reads the terminal); a timeout then spares the command's children, which
# QEMU has none of.
timeout_args() {
	case $MODE in
	shell) echo "--foreground" ;;
	esac
}

console_args() {
	case $MODE in
	shell|cmd) echo "-chardev stdio,id=con,signal=off,logfile=$RESULTS_DIR/console.log -serial chardev:con" ;;
	*) echo "-chardev file,id=con,path=$RESULTS_DIR/console.log -serial chardev:con" ;;
	esac
}

# rootfs_args: the host-userland guest's 9p shares (none for busybox).
rootfs_args() {
	local share
	[ "$ROOTFS" = host ] || return 0
	share=$(realpath "$RESULTS_DIR/share")
	[[ $share =~ ^[^,[:space:]]+$ ]] || die "the results directory $share must not hold commas or spaces (a QEMU -virtfs path)"
	outside_guest_tmpfs "$TOP" "$share"
	echo "-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	echo "-virtfs local,path=$share,mount_tag=results,security_model=none,multidevs=remap"
}

split_tap() {
	awk -v dir="$RESULTS_DIR" '
		/^uncached-tap-begin / { out = dir "/" $2 ".tap"; printf "" > out; next }
		/^uncached-tap-end / { close(out); out = ""; next }
		out != "" { print > out }' "$RESULTS_DIR/channel.log"
}

main() {
	help_if_asked "$@"
	local accel disks shares status=0
	parse_args "$@"
	need_cmd qemu-system-x86_64 timeout
	rm -rf "$RESULTS_DIR"
	mkdir -p "$RESULTS_DIR"
	NONCE=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
	echo "$NONCE" >"$RESULTS_DIR/nonce"
	write_resources
	[ "$ROOTFS" = busybox ] || mkdir -p "$RESULTS_DIR/share"
	make_run_initrd
	disks=$(disk_args)
	shares=$(rootfs_args)
	accel=$(pick_accel)
	: >"$RESULTS_DIR/channel.log"
	# shellcheck disable=SC2046,SC2086
	timeout $(timeout_args) -k 10 "$TIMEOUT" qemu-system-x86_64 \
		-nodefaults -nographic -no-reboot $(accel_args "$accel") \
		-smp "$SMP" -m "$MEM" \
		-kernel "$KERNEL" -initrd "$RESULTS_DIR/initrd.cpio" \
		-append "$(kernel_cmdline)" \
		$(console_args) \
		-device virtio-serial-pci \
		-chardev file,id=results,path="$RESULTS_DIR/channel.log" \
		-device virtserialport,chardev=results,name=uncached.results \
		$shares $disks || status=$?
	echo "$status" >"$RESULTS_DIR/qemu.status"
	echo "$accel" >"$RESULTS_DIR/accel"
	split_tap
	[ "$status" != 124 ] || log "QEMU killed after the ${TIMEOUT}s timeout"
	return 0
}

main "$@"
