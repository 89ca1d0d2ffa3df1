/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the block device tests (uncached_blockdev*.c), on top of
 * uncached_io.h: the device node under test (argv[1]), its size, O_DIRECT
 * I/O with aligned buffers (what is on the medium), eviction of a range of
 * the device's page cache and per-page residency. Offsets and lengths of
 * O_DIRECT I/O are multiples of 4 KiB (any logical block size up to that).
 *
 * The page cache of block devices is counted in /proc/meminfo as "Buffers"
 * (sysinfo()'s bufferram), not in "Cached", which leaves those pages out.
 */
#ifndef UNCACHED_BLOCKDEV_H
#define UNCACHED_BLOCKDEV_H

#include "uncached_io.h"

#include <sys/ioctl.h>
#include <sys/sysinfo.h>

#define BDEV_DIO_ALIGN	4096
#define BDEV_DIO_CHUNK	(1 << 20)

/*
 * The device node argv[1]: an absolute path of a block device, else a usage
 * error (exit 2). test_dir is the node's path, test_fs UNCACHED_FS.
 */
static inline void bdev_test_init(int argc, char **argv)
{
	struct stat st;
	const char *why = NULL;

	test_init(argc, argv);
	if (stat(test_dir, &st))
		why = strerror(errno);
	else if (!S_ISBLK(st.st_mode))
		why = "not a block device";
	if (why) {
		fprintf(stderr, "usage: %s BLOCK-DEVICE (the node of a disk for this test only): %s: %s\n",
			argv[0], test_dir, why);
		exit(2);
	}
}

/* Open block device @path with @flags and get its size; bail on failure. */
static inline int bdev_open(const char *path, int flags, uint64_t *size)
{
	int fd = xopen(path, flags);
	uint64_t bytes;

	if (ioctl(fd, BLKGETSIZE64, &bytes))
		tap_bail("BLKGETSIZE64 on %s: %s", path, strerror(errno));
	if (size)
		*size = bytes;
	return fd;
}

static inline void *bdev_memalign(size_t len)
{
	void *buf;

	if (posix_memalign(&buf, BDEV_DIO_ALIGN, len))
		tap_bail("out of memory (%zu aligned bytes)", len);
	return buf;
}

/*
 * One preadv2()/pwritev2(@flags) on the O_DIRECT fd @dfd of all @len bytes
 * at @off; false, with a diagnostic, if not.
 */
static inline bool bdev_dio(int dfd, bool write, void *buf, size_t len,
			    uint64_t off, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	ssize_t ret = write ? pwritev2(dfd, &iov, 1, off, flags) :
			      preadv2(dfd, &iov, 1, off, flags);

	if (ret == (ssize_t)len)
		return true;
	tap_diag("O_DIRECT %s of %zu bytes at %llu (flags %#x): %zd (%s)",
		 write ? "write" : "read", len, (unsigned long long)off, flags,
		 ret, ret < 0 ? strerror(errno) : "short");
	return false;
}

/*
 * O_DIRECT I/O with @flags on @dfd over [off, off + len) in 1 MiB calls:
 * write pattern @seed, or read it back and compare (with @flags 0: the
 * medium holds the pattern).
 */
static inline bool bdev_dio_pattern(int dfd, bool write, uint64_t off,
				    uint64_t len, int flags, unsigned int seed)
{
	char *buf = bdev_memalign(BDEV_DIO_CHUNK);
	uint64_t done;
	bool ok = true;
	long bad;

	for (done = 0; ok && done < len; done += BDEV_DIO_CHUNK) {
		size_t n = len - done < BDEV_DIO_CHUNK ? len - done : BDEV_DIO_CHUNK;

		if (write)
			fill_pattern(buf, n, off + done, seed);
		ok = bdev_dio(dfd, write, buf, n, off + done, flags);
		bad = ok && !write ? check_pattern(buf, n, off + done, seed) : -1;
		if (bad >= 0) {
			tap_diag("O_DIRECT read: mismatch at offset %llu",
				 (unsigned long long)(off + done + bad));
			ok = false;
		}
	}
	free(buf);
	return ok;
}

/*
 * Write back and evict [off, off + len) of the device's page cache:
 * fadvise(DONTNEED), then BLKFLSBUF (the whole device) if pages stayed.
 * Bails when the range cannot be made cold.
 */
static inline void bdev_evict(int fd, uint64_t off, uint64_t len)
{
	int err;

	if (fsync(fd))
		tap_bail("fsync of the device: %s", strerror(errno));
	err = posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED);
	if (err)
		tap_bail("fadvise(DONTNEED) of the device: %s", strerror(err));
	if (!nr_cached(fd, off, len))
		return;
	if (ioctl(fd, BLKFLSBUF, 0))
		tap_bail("BLKFLSBUF: %s", strerror(errno));
	if (nr_cached(fd, off, len)) {
		diag_cached_pages(fd, off, len);
		tap_bail("cannot evict [%llu, +%llu) of the device",
			 (unsigned long long)off, (unsigned long long)len);
	}
}

/*
 * Which pages of [off, off + len) are in the page cache: one byte per page,
 * 1 when cachestat() of that page counts it. The caller frees the map.
 */
static inline unsigned char *bdev_residency(int fd, uint64_t off, uint64_t len)
{
	uint64_t i, n = pages_of(len);
	unsigned char *map = xmalloc(n ? n : 1);

	for (i = 0; i < n; i++)
		map[i] = nr_cached(fd, off + i * PAGE_SZ, PAGE_SZ) > 0;
	return map;
}

/*
 * preadv2(RWF_UNCACHED) of one byte at the end of the device (@size): the
 * flag is checked, nothing is read. 0 when the call returns 0 (the device
 * takes the flag), else its errno (EOPNOTSUPP: no uncached I/O here).
 */
static inline int bdev_probe_read(int fd, uint64_t size)
{
	char c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	ssize_t ret = preadv2(fd, &iov, 1, size, RWF_UNCACHED);

	return ret < 0 ? errno : ret ? EPROTO : 0;
}

/*
 * The page cache of all block devices ("Buffers" in /proc/meminfo), and
 * MemTotal (@total, if not NULL), in bytes.
 */
static inline uint64_t bdev_buffers(uint64_t *total)
{
	struct sysinfo si;

	if (sysinfo(&si))
		tap_bail("sysinfo: %s", strerror(errno));
	if (total)
		*total = (uint64_t)si.totalram * si.mem_unit;
	return (uint64_t)si.bufferram * si.mem_unit;
}

#endif /* UNCACHED_BLOCKDEV_H */
