/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the guest tests: the file under test, data patterns,
 * dropping caches and cachestat(). RWF_* come from the kernel's own UAPI
 * header (make headers_install of the tree under test), never from here.
 */
#ifndef UNCACHED_UTIL_H
#define UNCACHED_UTIL_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* glibc's copies of the RWF_* values give way to the kernel's header. */
#undef RWF_HIPRI
#undef RWF_DSYNC
#undef RWF_SYNC
#undef RWF_NOWAIT
#undef RWF_APPEND
#undef RWF_NOAPPEND
#undef RWF_ATOMIC
#include <linux/fs.h>
#include <linux/mman.h>

#include "tap.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

/* The mount point under test (argv[1]) and its filesystem type (UNCACHED_FS). */
static const char *test_dir;
static const char *test_fs;

static inline void test_init(int argc, char **argv)
{
	const char *slash;

	if (argc != 2 || argv[1][0] != '/') {
		fprintf(stderr, "usage: %s MOUNT-POINT (an absolute path)\n",
			argv[0]);
		exit(2);
	}
	test_dir = argv[1];
	slash = strrchr(test_dir, '/');
	test_fs = getenv("UNCACHED_FS");
	if (!test_fs || !*test_fs)
		test_fs = slash[1] ? slash + 1 : test_dir;
}

/* Path of a scratch file for this test in the directory under test. */
static inline const char *test_path(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/%s.%d", test_dir, name, getpid());
	return path;
}

/* Byte @off of the pattern used for file data: never all zeroes. */
static inline unsigned char pattern_byte(uint64_t off, unsigned int seed)
{
	uint64_t x = off * 0x9e3779b97f4a7c15ULL + seed;

	x ^= x >> 29;
	return (unsigned char)(x | 1);
}

static inline void fill_pattern(void *buf, size_t len, uint64_t off,
				unsigned int seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern_byte(off + i, seed);
}

/* Returns the index of the first bad byte, or -1 when all match. */
static inline long check_pattern(const void *buf, size_t len, uint64_t off,
				 unsigned int seed)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pattern_byte(off + i, seed))
			return (long)i;
	return -1;
}

static inline void *xmalloc(size_t len)
{
	void *p = malloc(len);

	if (!p)
		tap_bail("out of memory (%zu bytes)", len);
	return p;
}

/* Write @len pattern bytes at @off with plain pwrite(); bail on error. */
static inline void write_pattern(int fd, size_t len, uint64_t off,
				 unsigned int seed)
{
	char *buf = xmalloc(len);
	ssize_t ret;

	fill_pattern(buf, len, off, seed);
	ret = pwrite(fd, buf, len, off);
	if (ret != (ssize_t)len)
		tap_bail("pwrite %zu at %llu: %zd (%s)", len,
			 (unsigned long long)off, ret, strerror(errno));
	free(buf);
}

/* Read back [off, off + len) and compare it with the pattern. */
static inline bool verify_pattern(int fd, size_t len, uint64_t off,
				  unsigned int seed)
{
	char *buf = xmalloc(len);
	ssize_t ret = pread(fd, buf, len, off);
	long bad = -1;

	if (ret == (ssize_t)len)
		bad = check_pattern(buf, len, off, seed);
	else
		tap_diag("pread %zu at %llu: %zd (%s)", len,
			 (unsigned long long)off, ret, strerror(errno));
	if (bad >= 0)
		tap_diag("data mismatch at offset %llu",
			 (unsigned long long)off + bad);
	free(buf);
	return ret == (ssize_t)len && bad < 0;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Write @text to @path (a sysfs, procfs or tracefs file); bails on failure. */
static inline void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t len = strlen(text);

	if (fd < 0 || write(fd, text, len) != len)
		tap_bail("write '%s' to %s: %s", text, path, strerror(errno));
	close(fd);
}

/* Write back everything and drop clean page cache, dentries and inodes. */
static inline void drop_caches(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0 || write(fd, "3\n", 2) != 2)
		tap_bail("drop_caches: %s", strerror(errno));
	close(fd);
}

/* cachestat() of [off, off + len) of @fd; bails when it fails. */
static inline struct cachestat file_cachestat(int fd, uint64_t off,
					      uint64_t len)
{
	struct cachestat_range range = { .off = off, .len = len };
	struct cachestat cs;

	if (syscall(__NR_cachestat, fd, &range, &cs, 0))
		tap_bail("cachestat: %s", strerror(errno));
	return cs;
}

/*
 * Poll cachestat() of the range until no page of it is dirty or under
 * writeback and (if @want_cached >= 0) nr_cache reaches @want_cached, for
 * at most @max_ms milliseconds: the drop of uncached folios runs when their
 * writeback completes, possibly in a workqueue after fsync() returned.
 * Returns the last cachestat seen. Not a timing assertion: the caller
 * checks the state, the bound only keeps a broken kernel from hanging us.
 */
static inline struct cachestat wait_range_settled(int fd, uint64_t off,
						  uint64_t len,
						  long long want_cached,
						  int max_ms)
{
	struct cachestat cs;
	int waited = 0;

	for (;;) {
		cs = file_cachestat(fd, off, len);
		if (!cs.nr_dirty && !cs.nr_writeback &&
		    (want_cached < 0 || cs.nr_cache == (uint64_t)want_cached))
			return cs;
		if (waited >= max_ms)
			return cs;
		usleep(10000);
		waited += 10;
	}
}

static inline void diag_cachestat(const char *what, struct cachestat cs)
{
	tap_diag("%s: nr_cache %llu nr_dirty %llu nr_writeback %llu nr_evicted %llu",
		 what, (unsigned long long)cs.nr_cache,
		 (unsigned long long)cs.nr_dirty,
		 (unsigned long long)cs.nr_writeback,
		 (unsigned long long)cs.nr_evicted);
}

/* One preadv2()/pwritev2() of @len bytes at @off (pattern @seed written). */
static inline ssize_t rw_once(int fd, bool write, void *buf, size_t len,
			      off_t off, int flags, unsigned int seed)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	fill_pattern(buf, len, off < 0 ? 0 : off, write ? seed : seed + 1);
	if (write)
		return pwritev2(fd, &iov, 1, off, flags);
	return preadv2(fd, &iov, 1, off, flags);
}

/*
 * One case: a 4 KiB preadv2()/pwritev2() at @off with @flags fails with
 * @want_errno, or, when @want_errno is 0, transfers all 4 KiB.
 */
static inline void expect_rw(int fd, bool write, off_t off, int flags,
			     int want_errno, const char *what)
{
	char buf[4096];
	ssize_t ret = rw_once(fd, write, buf, sizeof(buf), off, flags, 7);
	int err = ret < 0 ? errno : 0;
	const char *op = write ? "pwritev2" : "preadv2";

	if (!want_errno)
		tap_result(ret == (ssize_t)sizeof(buf),
			   "%s %s succeeds (got %zd, %s)", op, what, ret,
			   err ? strerror(err) : "no error");
	else
		tap_result(ret < 0 && err == want_errno,
			   "%s %s fails with %s (got %zd, %s)", op, what,
			   strerror(want_errno), ret,
			   err ? strerror(err) : "no error");
}

/* splitmix64: a small seeded PRNG, the same sequence on every machine. */
static inline uint64_t rand64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* @s as a number in [min, max], or a usage error (exit 2) naming @what. */
static inline unsigned long long parse_number(const char *what, const char *s,
					      unsigned long long min,
					      unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "%s: '%s' is not a number in [%llu, %llu]\n",
			what, s, min, max);
		exit(2);
	}
	return v;
}

/* Environment variable @name as a number in [min, max], @def when unset. */
static inline unsigned long long env_number(const char *name,
					    unsigned long long def,
					    unsigned long long min,
					    unsigned long long max)
{
	const char *s = getenv(name);

	return s && *s ? parse_number(name, s, min, max) : def;
}

static inline int xopen(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		tap_bail("open %s: %s", path, strerror(errno));
	return fd;
}

/*
 * Report the online CPUs as a TAP diagnostic ("# online CPUs: N"), for the
 * tests whose races need more than one; returns the count.
 */
static inline long tap_online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	tap_diag("online CPUs: %ld", n);
	return n;
}

#endif /* UNCACHED_UTIL_H */
