// SPDX-License-Identifier: GPL-2.0
/*
 * A folio instantiated by an RWF_UNCACHED read is adopted by a user that
 * is not uncached - a plain buffered read, a plain write, a page fault
 * through mmap - if that user finds it before the uncached IO dropped it:
 * it stays cached, also through a later uncached read of it.
 *
 * One syscall cannot be interleaved with, so the test makes the uncached
 * read stop between instantiating its folios and copying them:
 * RWF_UNCACHED | RWF_NOWAIT on a cold range starts the read of that range
 * and of a readahead window beyond it (all flagged uncached) and returns
 * EAGAIN instead of waiting for it (under emulation the I/O often
 * completes before the read looks, so it is tried up to TRIES times).
 * The folios of the range are then adopted, or (the control) not, and
 * read with RWF_UNCACHED: without adoption they are dropped, with it they
 * stay. Only the range is asserted on; what was read ahead beyond it
 * stays flagged and uncopied (at most uncached_ra_leftover_bound(HEAD)),
 * and is only reported.
 */
#include "uncached_io.h"

#include <sys/mman.h>

#define FILE_LEN	(1ULL << 20)
#define HEAD		(64ULL << 10)	/* the range the NOWAIT read starts */
#define TRIES		200		/* NOWAIT reads that may find it done */

enum adopter { NOBODY, BUFFERED_READ, BUFFERED_WRITE, PAGE_FAULT };

static const char *const adopter_name[] = {
	[NOBODY]	 = "nobody (control)",
	[BUFFERED_READ]	 = "buffered read",
	[BUFFERED_WRITE] = "buffered write",
	[PAGE_FAULT]	 = "page fault (mapping gone before the uncached read)",
};

/*
 * Instantiate the folios of [0, HEAD) the way an uncached read does,
 * without copying them: an RWF_UNCACHED | RWF_NOWAIT read of the cold
 * range starts the I/O (with readahead beyond HEAD) and returns EAGAIN.
 * Should the I/O beat the read's check (it then copies and drops the
 * folios of the range), evict the file, readahead leftovers included, and
 * try again. Returns the number of pages of the range in the page cache
 * after it.
 */
/* Report the pages of [HEAD, FILE_LEN) in the page cache (not asserted). */
static void diag_leftover(const char *what, int fd)
{
	char beyond[128];

	snprintf(beyond, sizeof(beyond), "beyond the %llu KiB range %s",
		 (unsigned long long)(HEAD >> 10), what);
	diag_ra_leftover(fd, HEAD, FILE_LEN - HEAD, HEAD, beyond);
}

static uint64_t start_uncached_read(int fd, unsigned int seed)
{
	char *buf = xmalloc(HEAD);
	uint64_t run = 0;
	ssize_t ret;
	int i;

	for (i = 0; i < TRIES && !run; i++) {
		evict_file(fd, FILE_LEN);
		ret = rw_once(fd, false, buf, HEAD, 0,
			      RWF_UNCACHED | RWF_NOWAIT, seed);
		if (ret < 0 && errno != EAGAIN)
			tap_diag("NOWAIT read %d: %s", i, strerror(errno));
		run = nr_cached(fd, 0, HEAD);
	}
	tap_diag("%d NOWAIT read(s), the last returned %zd", i, ret);
	diag_leftover("read ahead by the NOWAIT read", fd);
	free(buf);
	return run;
}

/* Touch every page of [off, off + len) through a shared mapping. */
static bool fault_in(int fd, uint64_t off, uint64_t len, unsigned int seed)
{
	unsigned char *map = mmap(NULL, FILE_LEN, PROT_READ, MAP_SHARED, fd, 0);
	bool ok = true;
	uint64_t pos;

	if (map == MAP_FAILED) {
		tap_diag("mmap: %s", strerror(errno));
		return false;
	}
	for (pos = off + 17; pos < off + len; pos += PAGE_SZ)
		if (map[pos] != pattern_byte(pos, seed))
			ok = false;
	munmap(map, FILE_LEN);
	return ok;
}

static bool adopt(int fd, enum adopter how, uint64_t len, unsigned int seed)
{
	switch (how) {
	case NOBODY:
		return true;
	case BUFFERED_READ:
		return read_range_flags(fd, 0, len, len, 0, seed);
	case BUFFERED_WRITE:	/* the same data again */
		return write_range_flags(fd, 0, len, len, 0, seed) &&
		       !fsync(fd);
	case PAGE_FAULT:
		return fault_in(fd, 0, len, seed);
	}
	return false;
}

static void scenario(const char *path, enum adopter how)
{
	const char *who = adopter_name[how];
	unsigned int seed = 41 + how;
	int fd = make_cold_file(path, FILE_LEN, seed);
	uint64_t run, want;

	run = start_uncached_read(fd, seed);
	tap_result(run, "%s: an uncached NOWAIT read of a cold 64 KiB instantiates %llu pages and leaves them",
		   who, (unsigned long long)run);
	tap_result(adopt(fd, how, HEAD, seed),
		   "%s: finds those pages, data right", who);
	diag_cachestat("the pages after the adopter",
		       file_cachestat(fd, 0, HEAD));
	tap_result(read_range_flags(fd, 0, HEAD, HEAD, RWF_UNCACHED, seed),
		   "%s: uncached read of the pages, data right", who);
	want = how == NOBODY ? 0 : run;
	expect_cached(fd, 0, HEAD, want, who);
	diag_leftover("after the uncached read", fd);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-adopt");
	tap_plan(16);
	scenario(path, NOBODY);
	scenario(path, BUFFERED_READ);
	scenario(path, BUFFERED_WRITE);
	scenario(path, PAGE_FAULT);
	unlink(path);
	return tap_finish();
}
