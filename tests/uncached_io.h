/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Uncached reads and writes of whole ranges for the guest tests, with
 * pattern data (util.h).
 */
#ifndef UNCACHED_IO_H
#define UNCACHED_IO_H

#include "util.h"

#ifndef RWF_UNCACHED
#error "the UAPI headers lack RWF_UNCACHED: build against the patched tree"
#endif

#define PAGE_SZ 4096ULL

static inline uint64_t pages_of(uint64_t len)
{
	return (len + PAGE_SZ - 1) / PAGE_SZ;
}

/*
 * Read [off, off + len) with preadv2(@flags) in @bs chunks and compare it
 * with pattern @seed. Returns false (with a diagnostic) on an error, a
 * short read or a mismatch.
 */
static inline bool read_range_flags(int fd, uint64_t off, uint64_t len,
				    size_t bs, int flags, unsigned int seed)
{
	char *buf = xmalloc(bs);
	uint64_t done = 0;
	bool ok = true;

	while (ok && done < len) {
		size_t n = len - done < bs ? len - done : bs;
		struct iovec iov = { .iov_base = buf, .iov_len = n };
		ssize_t ret = preadv2(fd, &iov, 1, off + done, flags);
		long bad;

		if (ret != (ssize_t)n) {
			tap_diag("preadv2 %zu at %llu (flags %#x): %zd (%s)", n,
				 (unsigned long long)(off + done), flags, ret,
				 ret < 0 ? strerror(errno) : "short");
			ok = false;
			break;
		}
		bad = check_pattern(buf, n, off + done, seed);
		if (bad >= 0) {
			tap_diag("mismatch at offset %llu",
				 (unsigned long long)(off + done + bad));
			ok = false;
		}
		done += n;
	}
	free(buf);
	return ok;
}

/* Write pattern @seed over [off, off + len) with pwritev2(@flags). */
static inline bool write_range_flags(int fd, uint64_t off, uint64_t len,
				     size_t bs, int flags, unsigned int seed)
{
	char *buf = xmalloc(bs);
	uint64_t done = 0;
	bool ok = true;

	while (done < len) {
		size_t n = len - done < bs ? len - done : bs;
		struct iovec iov = { .iov_base = buf, .iov_len = n };
		ssize_t ret;

		fill_pattern(buf, n, off + done, seed);
		ret = pwritev2(fd, &iov, 1, (flags & RWF_APPEND) ? -1 : (off_t)(off + done),
			       flags);
		if (ret != (ssize_t)n) {
			tap_diag("pwritev2 %zu at %llu (flags %#x): %zd (%s)", n,
				 (unsigned long long)(off + done), flags, ret,
				 ret < 0 ? strerror(errno) : "short");
			ok = false;
			break;
		}
		done += n;
	}
	free(buf);
	return ok;
}

/* A file of @len pattern bytes, on disk and not in the page cache. */
static inline int make_cold_file(const char *path, uint64_t len,
				 unsigned int seed)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);

	if (!write_range_flags(fd, 0, len, 1 << 20, 0, seed))
		tap_bail("cannot create %s", path);
	if (fsync(fd))
		tap_bail("fsync %s: %s", path, strerror(errno));
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		tap_bail("fadvise %s: %s", path, strerror(errno));
	if (file_cachestat(fd, 0, len).nr_cache)
		drop_caches();
	return fd;
}

#endif /* UNCACHED_IO_H */
