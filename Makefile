# RWF_UNCACHED for linux-source-6.12: build, boot and test harness.
# See README.md. Everything is built under build/ (ignored by git).
#
# 'make help' lists the targets and variables from the "## NAME: text"
# lines below (lower-case NAME: a target, upper-case: a variable).

TREE ?= patched
FLAVOR ?= test
CMD ?=

## TESTS='NAME...': make qemu-test: only these tests (tests/tests.list)
## FS='FS...': make qemu-test: only these targets (scripts/data/*disks.list, blockdev)
## TREE=pristine: the pristine 6.12 kernel instead of the patched one
## FLAVOR=perf|rt: the performance kernel (no KASAN, lockdep), or the debug kernel with PREEMPT_RT
## CMD='...': make boot runs this shell command in the guest
## ROOTFS=host: make boot: the host's userland (its / read-only over virtio-9p)
## FSTESTS_SRC=PATH: make fstests: fstests from this tarball or directory
## FIO_SRC=PATH: make bench: fio from this tarball or directory (default: ../shared/vendor/)
## QEMU_TIMEOUT=SECS: time limit of a test guest (default 3600)
## QEMU_MEM=SIZE: memory of a test guest (default 384M)
## QEMU_SMP=N: CPUs of a test guest (default 2)
## ACCEL=tcg|kvm: skip the KVM probe
## STRESS_OPS=N: make stress: operations per checker process (6000)
## STRESS_SEED=N: make stress: replay the run with this seed
## CRASH_ROUNDS=N: make crash-test: power cuts (default 1)
## CRASH_SEED=N: make crash-test: replay the run with this seed
## SOAK_OPS=N: make soak: operations per checker process (50000)
## SOAK_SEED=N: make soak: replay (or continue) the run with this seed
## SOAK_FS='FS...': make soak: only these targets (default: all, blockdev too)
## SOAK_RESTART=1: make soak: start over, not skipping targets that passed

# The older spellings SERIES=none and SERIES=series still mean
# TREE=pristine and TREE=patched.
ifeq ($(SERIES),none)
TREE := pristine
else ifeq ($(SERIES),series)
TREE := patched
else ifneq ($(SERIES),)
$(error SERIES is now TREE: TREE=pristine (SERIES=none) or TREE=patched)
endif
ifeq ($(filter patched pristine,$(TREE)),)
$(error TREE must be 'patched' (the series applied) or 'pristine' (6.12 as Debian ships it))
endif

# Every script that boots a kernel takes the same two words: TREE FLAVOR.
KARGS := $(TREE) $(FLAVOR)
CHECKPATCH := build/src/pristine/scripts/checkpatch.pl

.PHONY: all deps source kernel initramfs qemu-test qemu-test-matrix boot \
	harness-selftest check-series crash-test stress qemu-baseline demo bench profile \
	clean distclean help lint soak fstests deb deb-test

## all: kernel and initramfs (the default)
all: kernel initramfs

## help: this list
help:
	@awk -f scripts/lib/make-help.awk $(firstword $(MAKEFILE_LIST))

## deps: install missing host packages and linux-source-6.12
deps:
	@scripts/host/deps.sh

## source: unpack 6.12 and apply the series (build/src/)
source: deps
	@scripts/host/prepare-source.sh

## kernel: build the kernel (build/kernel/TREE-FLAVOR/)
kernel: source
	@scripts/host/build-kernel.sh $(KARGS)

## initramfs: build the guest initramfs with the tests
initramfs: source
	@scripts/host/build-initramfs.sh

## lint: shellcheck the scripts, checkpatch the guest tests, run the host-side tests
lint: $(CHECKPATCH)
	@scripts/checks/lint.sh

# lint needs the kernel's checkpatch.pl: 'make source' only when it is missing.
$(CHECKPATCH):
	@$(MAKE) --no-print-directory source

## qemu-test: lint, boot the debug kernel, run and judge the guest tests
qemu-test: lint kernel initramfs
	@scripts/runs/qemu-test.sh --tests '$(TESTS)' --fs '$(FS)' $(KARGS)

## qemu-test-matrix: qemu-test plus every mount/mkfs configuration (over 30 min)
qemu-test-matrix: lint kernel initramfs
	@scripts/runs/qemu-test.sh --matrix --tests '$(TESTS)' --fs '$(FS)' $(KARGS)

## boot: a shell in the guest, or with CMD='...' one command
boot: kernel initramfs
	@scripts/host/boot.sh $(KARGS) '$(subst ','\'',$(CMD))'

## fstests: upstream fstests on ext4, XFS, btrfs (tests/fstests.list; FS=, TESTS=)
fstests: kernel initramfs
	@scripts/runs/fstests.sh --fs '$(FS)' --tests '$(TESTS)' $(KARGS)

## harness-selftest: inject faults and check that the verdict fails
harness-selftest: kernel initramfs
	@scripts/runs/harness-selftest.sh $(KARGS)

## crash-test: power cut during uncached writes, verify after reboot
crash-test: kernel initramfs
	@scripts/runs/crash-test.sh $(KARGS)

## stress: long randomized checker run + crash-test (about 11 min)
stress: kernel initramfs
	@scripts/runs/stress.sh $(KARGS)

## soak: the checkers at length, a boot per target, resumable (hours)
soak: kernel initramfs
	@scripts/runs/soak.sh $(KARGS)

## qemu-baseline: the tests on pristine 6.12: feature tests must fail
qemu-baseline: initramfs
	@$(MAKE) --no-print-directory kernel TREE=pristine
	@scripts/runs/qemu-baseline.sh pristine $(FLAVOR)

# The performance kernels (FLAVOR=perf: no lockdep, KASAN or DEBUG_VM).
## demo: buffered and uncached reads side by side (3 min)
demo: source initramfs
	@scripts/host/build-kernel.sh patched perf
	@scripts/bench/demo.sh patched perf

## bench: benchmark pristine vs patched perf kernels (75 min: 3 alternating boots of each)
bench: source initramfs
	@scripts/host/build-kernel.sh pristine perf
	@scripts/host/build-kernel.sh patched perf
	@scripts/bench/bench.sh

## profile: kernel CPU per GiB by function, buffered vs uncached, fio beside uncached_bench (perf in the guest, 9 min)
profile: source initramfs
	@scripts/host/build-kernel.sh patched perf
	@scripts/bench/profile.sh patched perf

## check-series: apply, checkpatch and compile each patch in turn
check-series: source
	@scripts/checks/check-series.sh

## check-distro-config: build with Debian's own config, link its modules, check the module ABI (about an hour)
check-distro-config: source
	@scripts/host/deps.sh --linux-config
	@scripts/checks/check-distro-config.sh

## deb: Debian packages of the patched kernel with Debian's config (build/deb/; DEB_FLAVOUR=amd64|cloud-amd64; hours, see README)
deb: source
	@scripts/host/deps.sh --deb
	@scripts/host/build-deb.sh

## deb-test: boot the kernel of make deb's package with its modules, run the suite on ext4, XFS, btrfs
deb-test: initramfs
	@scripts/runs/deb-test.sh

## clean: remove results, initramfs, headers and scratch trees
clean:
	rm -rf build/results build/initramfs build/headers build/check \
		build/bench build/demo build/distro build/profile

## distclean: remove all of build/
distclean:
	rm -rf build
