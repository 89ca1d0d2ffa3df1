// SPDX-License-Identifier: GPL-2.0
/*
 * A folio instantiated by an RWF_UNCACHED read is adopted by a user that
 * is not uncached - a plain buffered read, a plain write, a page fault
 * through mmap - if that user finds it before the uncached IO dropped it:
 * it stays cached, also through a later uncached read of it.
 *
 * One syscall cannot be interleaved with, so the test uses readahead:
 * the uncached read of the first 16 KiB of a cold file reads ahead, and
 * the folios beyond the 16 KiB are instantiated (flagged uncached) but
 * not copied, so the read does not drop them. Those are then adopted,
 * or (the control) not, and read with RWF_UNCACHED: without adoption
 * they are dropped, with it they stay.
 */
#include "uncached_io.h"

#include <sys/mman.h>

#define FILE_LEN	(1ULL << 20)
#define HEAD		(16ULL << 10)
#define MAX_RUN		64		/* pages looked at beyond HEAD */

enum adopter { NOBODY, BUFFERED_READ, BUFFERED_WRITE, PAGE_FAULT };

static const char *const adopter_name[] = {
	[NOBODY]	 = "nobody (control)",
	[BUFFERED_READ]	 = "buffered read",
	[BUFFERED_WRITE] = "buffered write",
	[PAGE_FAULT]	 = "page fault (mapping gone before the uncached read)",
};

/* Cached pages right after HEAD: those readahead left behind. */
static uint64_t readahead_run(int fd)
{
	uint64_t n = 0;

	while (n < MAX_RUN && nr_cached(fd, HEAD + n * PAGE_SZ, PAGE_SZ))
		n++;
	return n;
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
		return read_range_flags(fd, HEAD, len, len, 0, seed);
	case BUFFERED_WRITE:	/* the same data again */
		return write_range_flags(fd, HEAD, len, len, 0, seed) &&
		       !fsync(fd);
	case PAGE_FAULT:
		return fault_in(fd, HEAD, len, seed);
	}
	return false;
}

static void scenario(const char *path, enum adopter how)
{
	const char *who = adopter_name[how];
	unsigned int seed = 41 + how;
	int fd = make_cold_file(path, FILE_LEN, seed);
	uint64_t head, run, want;
	bool ok;

	ok = read_range_flags(fd, 0, HEAD, HEAD, RWF_UNCACHED, seed);
	head = nr_cached(fd, 0, HEAD);
	run = readahead_run(fd);
	tap_result(ok && !head && run,
		   "%s: uncached read of the first 16 KiB: data %s, %llu of its pages cached, %llu readahead pages beyond it",
		   who, ok ? "right" : "wrong", (unsigned long long)head,
		   (unsigned long long)run);
	if (!run) {
		tap_skip("%s: no readahead folio to adopt", who);
		tap_skip("%s: no readahead folio to adopt", who);
		tap_skip("%s: no readahead folio to adopt", who);
		close(fd);
		return;
	}

	tap_result(adopt(fd, how, run * PAGE_SZ, seed),
		   "%s: finds the %llu readahead pages, data right", who,
		   (unsigned long long)run);
	diag_cachestat("the readahead pages after the adopter",
		       file_cachestat(fd, HEAD, run * PAGE_SZ));
	tap_result(read_range_flags(fd, HEAD, run * PAGE_SZ, run * PAGE_SZ,
				    RWF_UNCACHED, seed),
		   "%s: uncached read of the readahead pages, data right", who);
	want = how == NOBODY ? 0 : run;
	expect_cached(fd, HEAD, run * PAGE_SZ, want, who);
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
