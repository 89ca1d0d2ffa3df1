// SPDX-License-Identifier: GPL-2.0
/*
 * Memory pressure: a sequential RWF_UNCACHED read of a file 2.5 times the
 * size of RAM keeps the page cache (meminfo Cached) flat, while the same
 * read without the flag fills it (the control that shows the check can
 * fail). Meant for a guest with little RAM (scripts/runs/qemu-test.sh); the
 * file is sized from MemTotal. Skips only when the filesystem has no room
 * for the file. A behavioural check: no timing.
 */
#include "uncached_io.h"

#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <linux/magic.h>

#define MIB		(1ULL << 20)
#define BS		MIB		/* one read or write */
#define DROP_EVERY	(64 * MIB)	/* buffered setup: drop behind */
#define NR_CASES	5

/* A field of /proc/meminfo, in bytes. */
static uint64_t meminfo(const char *field)
{
	size_t n = strlen(field);
	unsigned long long kb;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		tap_bail("/proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, n) || line[n] != ':' ||
		    sscanf(line + n + 1, "%llu", &kb) != 1)
			continue;
		fclose(f);
		return (uint64_t)kb << 10;
	}
	tap_bail("/proc/meminfo has no %s", field);
}

static void *xmemalign(size_t len)
{
	void *buf;

	if (posix_memalign(&buf, 4096, len))
		tap_bail("out of memory (%zu bytes)", len);
	return buf;
}

/* Write back and drop what a buffered setup left in the page cache. */
static void drop_behind(int fd)
{
	if (fdatasync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		tap_bail("fdatasync or fadvise: %s", strerror(errno));
}

/*
 * btrfs: a NOCOW file, without data checksums. The debug kernel's generic
 * crc32c over the whole file takes minutes in the TCG guest, and the page
 * cache behaviour under test does not depend on checksums.
 */
static void btrfs_nocow(int fd)
{
	struct statfs sfs;
	int flags;

	if (fstatfs(fd, &sfs) || sfs.f_type != BTRFS_SUPER_MAGIC)
		return;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
		flags |= FS_NOCOW_FL;
		if (ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0)
			return;
	}
	tap_diag("btrfs: cannot make the file NOCOW (%s): writing it with checksums",
		 strerror(errno));
}

/*
 * Write @len bytes of word data (generation 1) with O_DIRECT, so that the
 * setup neither fills the page cache nor depends on the feature under
 * test; buffered, dropping behind, when the filesystem refuses O_DIRECT.
 */
static void write_file(const char *path, uint64_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	bool direct = fd >= 0;
	char *buf = xmemalign(BS);
	uint64_t off;
	ssize_t ret;

	if (!direct) {
		tap_diag("O_DIRECT open: %s; writing buffered",
			 strerror(errno));
		fd = xopen(path, O_WRONLY | O_CREAT | O_TRUNC);
	}
	btrfs_nocow(fd);
	for (off = 0; off < len; off += BS) {
		fill_words(buf, BS, off, 1);
		ret = pwrite(fd, buf, BS, off);
		if (ret < 0 && errno == EINVAL && direct && !off) {
			tap_diag("O_DIRECT write refused; writing buffered");
			close(fd);
			fd = xopen(path, O_WRONLY | O_CREAT | O_TRUNC);
			direct = false;
			ret = pwrite(fd, buf, BS, off);
		}
		if (ret != BS)
			tap_bail("write of 1 MiB at %llu: %zd (%s)",
				 (unsigned long long)off, ret,
				 ret < 0 ? strerror(errno) : "short");
		if (!direct && !((off + BS) % DROP_EVERY))
			drop_behind(fd);
	}
	if (fsync(fd))
		tap_bail("fsync: %s", strerror(errno));
	close(fd);
	free(buf);
}

/* What one sequential pass over the file saw. */
struct pass {
	uint64_t bytes;		/* read and checked */
	uint64_t growth;	/* the largest growth of Cached seen */
	bool data_ok;
	const char *error;	/* why the pass stopped early, or "no error" */
};

/*
 * Read [0, len) of @fd with preadv2(@flags) in 1 MiB pieces, checking the
 * data, until the end or until Cached grew by @stop_growth bytes over its
 * value at the start; Cached is sampled after every read.
 */
static struct pass read_pass(int fd, uint64_t len, int flags,
			     uint64_t stop_growth)
{
	struct pass p = { .data_ok = true, .error = "no error" };
	uint64_t base = meminfo("Cached"), cached;
	char *buf = xmemalign(BS);
	struct iovec iov = { .iov_base = buf, .iov_len = BS };
	ssize_t ret;
	long bad;

	while (p.bytes < len && p.growth < stop_growth) {
		ret = preadv2(fd, &iov, 1, p.bytes, flags);
		if (ret != BS) {
			p.error = ret < 0 ? strerror(errno) : "short read";
			tap_diag("preadv2 1 MiB at %llu (flags %#x): %zd (%s)",
				 (unsigned long long)p.bytes, flags, ret,
				 p.error);
			break;
		}
		bad = check_words(buf, BS, p.bytes, 1);
		if (bad >= 0 && p.data_ok)
			tap_diag("data mismatch at offset %llu",
				 (unsigned long long)(p.bytes + bad));
		p.data_ok &= bad < 0;
		p.bytes += BS;
		cached = meminfo("Cached");
		if (cached > base && cached - base > p.growth)
			p.growth = cached - base;
	}
	tap_diag("flags %#x: read %llu MiB, Cached %llu KiB at the start, grew by at most %llu KiB",
		 flags, (unsigned long long)(p.bytes / MIB),
		 (unsigned long long)(base >> 10),
		 (unsigned long long)(p.growth >> 10));
	free(buf);
	return p;
}

static void uncached_read(int fd, uint64_t len, uint64_t bound)
{
	struct pass p = read_pass(fd, len, RWF_UNCACHED, UINT64_MAX);
	bool whole = p.bytes == len;
	uint64_t left = nr_cached(fd, 0, len) * PAGE_SZ;

	tap_result(whole && p.data_ok,
		   "uncached read of the whole %llu MiB file: data right (%s)",
		   (unsigned long long)(len / MIB), p.error);
	tap_result(whole && p.growth <= bound,
		   "uncached read: Cached grew by at most %llu KiB (bound %llu MiB, %s)",
		   (unsigned long long)(p.growth >> 10),
		   (unsigned long long)(bound / MIB),
		   whole ? "whole file read" : "read incomplete");
	tap_result(whole && left <= bound,
		   "uncached read: %llu KiB of the file cached afterwards (bound %llu MiB)",
		   (unsigned long long)(left >> 10),
		   (unsigned long long)(bound / MIB));
}

/*
 * The control: without the flag the same read fills the page cache; it
 * stops once Cached grew by @want.
 */
static void buffered_read(int fd, uint64_t len, uint64_t want)
{
	struct pass p = read_pass(fd, len, 0, want);

	tap_result(p.data_ok && (p.bytes == len || p.growth >= want),
		   "buffered read (control): data right (%s)", p.error);
	tap_result(p.growth >= want,
		   "buffered read (control): Cached grew by %llu MiB (want at least %llu MiB)",
		   (unsigned long long)(p.growth / MIB),
		   (unsigned long long)(want / MIB));
}

/* Room for @len bytes (and some metadata) on the filesystem under test? */
static bool fs_has_room(uint64_t len)
{
	struct statvfs sv;
	uint64_t avail;
	int i;

	if (statvfs(test_dir, &sv))
		tap_bail("statvfs %s: %s", test_dir, strerror(errno));
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (avail >= len + 64 * MIB)
		return true;
	for (i = 0; i < NR_CASES; i++)
		tap_skip("%s has %llu MiB free, the %llu MiB file (2.5 x MemTotal) does not fit",
			 test_dir, (unsigned long long)(avail / MIB),
			 (unsigned long long)(len / MIB));
	return false;
}

int main(int argc, char **argv)
{
	uint64_t mem_total, len, bound, want;
	const char *path;
	int fd;

	test_init(argc, argv);
	path = test_path("uncached-pressure");
	mem_total = meminfo("MemTotal");
	len = (mem_total * 5 / 2 + MIB - 1) / MIB * MIB;
	bound = len / 50 > 16 * MIB ? len / 50 : 16 * MIB;
	want = mem_total / 2 > 4 * bound ? mem_total / 2 : 4 * bound;
	tap_diag("MemTotal %llu MiB, file %llu MiB, Cached bound %llu MiB, control wants %llu MiB",
		 (unsigned long long)(mem_total / MIB),
		 (unsigned long long)(len / MIB),
		 (unsigned long long)(bound / MIB),
		 (unsigned long long)(want / MIB));
	tap_plan(NR_CASES);
	if (!fs_has_room(len))
		return tap_finish();
	write_file(path, len);
	fd = xopen(path, O_RDONLY);
	drop_caches();
	uncached_read(fd, len, bound);
	drop_caches();
	buffered_read(fd, len, want);
	close(fd);
	unlink(path);
	drop_caches();
	return tap_finish();
}
