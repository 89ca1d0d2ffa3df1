# RWF_UNCACHED for linux-source-6.12: build, boot and test harness.
# See README.md. Everything is built under build/ (ignored by git).

SERIES ?= series
FLAVOR ?= test
CMD ?=

ifeq ($(SERIES),none)
TREE := pristine
else ifeq ($(SERIES),series)
TREE := patched
else
$(error SERIES must be 'series' (the patched kernel) or 'none' (pristine 6.12))
endif

KERNEL := build/kernel/$(TREE)-$(FLAVOR)/arch/x86/boot/bzImage
INITRD := build/initramfs/initramfs.cpio

.PHONY: all deps source kernel initramfs qemu-test boot harness-selftest \
	check-series crash-test stress qemu-baseline demo bench clean distclean \
	help

all: kernel initramfs

help:
	@sed -n '/^## Make targets/,/^Variables:/p' README.md

deps:
	@scripts/deps.sh

source: deps
	@scripts/prepare-source.sh

kernel: source
	@scripts/build-kernel.sh $(TREE) $(FLAVOR)

initramfs: source
	@scripts/build-initramfs.sh

qemu-test: kernel initramfs
	@scripts/qemu-test.sh $(TREE)

boot: kernel initramfs
	@scripts/boot.sh $(KERNEL) $(INITRD) '$(subst ','\'',$(CMD))'

harness-selftest: kernel initramfs
	@scripts/harness-selftest.sh $(KERNEL)

crash-test: kernel initramfs
	@scripts/crash-test.sh $(KERNEL)

stress: kernel initramfs
	@scripts/stress.sh

qemu-baseline: initramfs
	@$(MAKE) --no-print-directory kernel SERIES=none
	@scripts/qemu-baseline.sh

# The performance kernels (FLAVOR=perf: no lockdep, KASAN or DEBUG_VM).
demo: source initramfs
	@scripts/build-kernel.sh patched perf
	@scripts/demo.sh

bench: source initramfs
	@scripts/build-kernel.sh pristine perf
	@scripts/build-kernel.sh patched perf
	@scripts/bench.sh

check-series: source
	@scripts/check-series.sh

clean:
	rm -rf build/results build/initramfs build/headers build/check \
		build/bench build/demo

distclean:
	rm -rf build
