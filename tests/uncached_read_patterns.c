// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED reads in several access patterns: a half cached file,
 * sequential reads of the whole file and of its first half, the first half
 * and then the rest, random 4 KiB reads, a read ending beyond EOF and a
 * zero-length read. Asserts on cachestat() of the byte ranges read and
 * checks the data against the pattern. Uncached reads read ahead: a read
 * to EOF leaves nothing (readahead stops at EOF and the stream's later
 * calls drop what it read ahead), one that stops before EOF leaves at most
 * uncached_ra_leftover_bound() bytes beyond its end and nothing in the
 * range it read.
 */
#include "uncached_io.h"

#define FILE_LEN	(8ULL << 20)
#define HALF		(FILE_LEN / 2)
#define BS		(64 << 10)
#define NR_RANDOM	256
#define SHORT_LEN	10000ULL	/* a file ending inside its third page */

/* The uncached read of the whole file keeps exactly the warm half cached. */
static void half_warm(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, 11);

	/* warm exactly the first half: no readahead beyond what is read */
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) ||
	    !read_range_flags(fd, 0, HALF, BS, 0, 11) ||
	    posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL))
		tap_bail("buffered read of the first half of %s failed", path);
	expect_cached_below(fd, HALF, FILE_LEN, "half warm: first half");
	tap_result(read_range_flags(fd, 0, FILE_LEN, BS, RWF_UNCACHED, 11),
		   "half warm: uncached read of the whole file, data right");
	expect_cached(fd, 0, HALF, pages_of(HALF), "half warm: warm half");
	expect_cached(fd, HALF, FILE_LEN - HALF, 0, "half warm: cold half");
	close(fd);
}

/*
 * Read-ahead folios an uncached stream of @bs calls left in [end, FILE_LEN)
 * after it stopped at @end: reported, and one case that they stay within
 * uncached_ra_leftover_bound(@bs).
 */
static void expect_leftover(int fd, uint64_t end, size_t bs, const char *what)
{
	char beyond[128];

	snprintf(beyond, sizeof(beyond), "%s: read ahead beyond the read", what);
	expect_cached_at_most(fd, end, FILE_LEN - end,
			      uncached_ra_leftover_bound(fd, bs), beyond);
}

/*
 * Sequential reads of the first @len bytes of a cold file in @bs calls.
 * To EOF nothing stays cached anywhere in the file. When the reads stop
 * before EOF nothing stays in the range read, and at most the documented
 * two readahead windows beyond it.
 */
static void sequential(const char *path, size_t bs, uint64_t len)
{
	int fd = make_cold_file(path, FILE_LEN, 12);
	char what[64];

	snprintf(what, sizeof(what), "sequential %zu KiB calls, %llu MiB",
		 bs >> 10, (unsigned long long)(len >> 20));
	tap_result(read_range_flags(fd, 0, len, bs, RWF_UNCACHED, 12),
		   "%s: uncached read, data right", what);
	if (len == FILE_LEN) {
		expect_cached(fd, 0, FILE_LEN, 0, what);
	} else {
		expect_cached(fd, 0, len, 0, what);
		expect_leftover(fd, len, bs, what);
	}
	close(fd);
}

/*
 * A stream that stops halfway, then reads on to EOF: its later calls copy
 * (and so drop) what it read ahead beyond the half, nothing stays cached.
 */
static void half_then_rest(const char *path)
{
	const size_t bs = 16 << 10;
	const char *what = "first half, then the rest";
	int fd = make_cold_file(path, FILE_LEN, 15);

	tap_result(read_range_flags(fd, 0, HALF, bs, RWF_UNCACHED, 15),
		   "%s: uncached read of the first half, data right", what);
	diag_ra_leftover(fd, HALF, FILE_LEN - HALF, bs, what);
	tap_result(read_range_flags(fd, HALF, FILE_LEN - HALF, bs,
				    RWF_UNCACHED, 15),
		   "%s: uncached read of the rest to EOF, data right", what);
	expect_cached(fd, 0, FILE_LEN, 0, what);
	close(fd);
}

static uint64_t xorshift(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/*
 * 4 KiB reads at NR_RANDOM distinct pages in a fixed pseudo-random order.
 * No read ahead: the order reads neither page 0 nor a page at or right
 * after the one following the previous read, so readahead never sees a
 * sequential stream, and no page before a read stays cached to look like
 * one; nothing stays cached.
 */
static void random_reads(const char *path)
{
	uint64_t npages = pages_of(FILE_LEN), seed = 0x5eed1234abcdULL, i;
	uint64_t *order = xmalloc(npages * sizeof(*order));
	int fd = make_cold_file(path, FILE_LEN, 13);
	unsigned int bad = 0;

	for (i = 0; i < npages; i++)
		order[i] = i;
	for (i = npages - 1; i > 0; i--) {	/* Fisher-Yates */
		uint64_t j = xorshift(&seed) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < NR_RANDOM; i++)
		if (!read_range_flags(fd, order[i] * PAGE_SZ, PAGE_SZ, PAGE_SZ,
				      RWF_UNCACHED, 13))
			bad++;
	tap_result(!bad, "random: %d uncached 4 KiB reads, data right (%u bad)",
		   NR_RANDOM, bad);
	for (i = 0; i < NR_RANDOM; i++)
		if (nr_cached(fd, order[i] * PAGE_SZ, PAGE_SZ))
			tap_diag("random: page %llu (read #%llu) still cached",
				 (unsigned long long)order[i],
				 (unsigned long long)i);
	expect_cached(fd, 0, FILE_LEN, 0, "random: whole file");
	free(order);
	close(fd);
}

/* A read ending beyond EOF is short; one at EOF and one of 0 bytes read 0. */
static void eof_and_empty(const char *path)
{
	int fd = make_cold_file(path, SHORT_LEN, 14);
	uint64_t off = 1000, want = SHORT_LEN - off;
	char *buf = xmalloc(BS);
	struct iovec iov = { .iov_base = buf, .iov_len = BS };
	ssize_t ret;

	ret = preadv2(fd, &iov, 1, off, RWF_UNCACHED);
	tap_result(ret == (ssize_t)want && check_pattern(buf, want, off, 14) < 0,
		   "EOF: uncached read of %d bytes at %llu returns %zd (want %llu), data right",
		   BS, (unsigned long long)off, ret, (unsigned long long)want);
	expect_cached(fd, 0, SHORT_LEN, 0, "EOF: whole file");
	ret = preadv2(fd, &iov, 1, SHORT_LEN, RWF_UNCACHED);
	tap_result(ret == 0, "EOF: uncached read at EOF returns %zd (want 0)",
		   ret);
	iov.iov_len = 0;
	ret = preadv2(fd, &iov, 1, 0, RWF_UNCACHED);
	tap_result(ret == 0, "empty: zero-length uncached read returns %zd (want 0)",
		   ret);
	expect_cached(fd, 0, SHORT_LEN, 0, "empty: whole file");
	free(buf);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-read-patterns");
	tap_plan(21);
	half_warm(path);
	sequential(path, 16 << 10, FILE_LEN);
	sequential(path, 16 << 10, HALF);
	sequential(path, FILE_LEN, FILE_LEN);
	half_then_rest(path);
	random_reads(path);
	eof_and_empty(path);
	unlink(path);
	return tap_finish();
}
