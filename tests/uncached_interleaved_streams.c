// SPDX-License-Identifier: GPL-2.0
/*
 * Two sequential RWF_UNCACHED read streams through one open file, on the
 * filesystem mounted at argv[1]: two threads share the file description
 * (and so its readahead state), each reading its own half of a cold file
 * in 64 KiB preadv2() calls, as a program that scans a file with several
 * threads and pread() does.
 *
 * Readahead serves interleaved streams on one file (its marker folios
 * tell each stream's window apart), so a buffered pair reads each byte
 * from the device once. An uncached read that starts outside the
 * readahead state's range takes the stream to have moved and drops what
 * it left behind; that must not drop the other stream's readahead, which
 * that stream would then read from the device again (twice the bytes on
 * btrfs, whose window is 4 MiB, before the kernel told the two apart).
 * So, for an uncached and then a buffered pair: the data right, and the
 * device reads (pgpgin) at most the file, plus twice what one stream may
 * read ahead (uncached_ra_leftover_bound(), 2 x the window): the first
 * read of the second half's stream looks like a seek and may drop what
 * the first stream read ahead, and the first stream's readahead goes on
 * into the second half, which the stream there has dropped already; plus
 * 1 MiB of metadata. Leftovers: each stream's, within that bound,
 * while the file is open; one stream's once it is closed (the release
 * drops what the readahead state describes, the last stream's; the other
 * stream's readahead stays flagged for reclaim or a later uncached read).
 */
#include "uncached_io.h"

#include <pthread.h>

#define MIB		(1ULL << 20)
#define FILE_LEN	(32 * MIB)
#define HALF		(FILE_LEN / 2)
#define BS		(64 << 10)
#define NR_CASES	6

struct stream {
	int fd;
	int flags;
	uint64_t off;
	bool ok;
	pthread_t thread;
};

static void *read_half(void *arg)
{
	struct stream *s = arg;

	s->ok = read_range_flags(s->fd, s->off, HALF, BS, s->flags, 1);
	return NULL;
}

/* Read both halves of @fd at once with @flags; the KiB the device read. */
static long long read_pair(int fd, int flags, bool *ok)
{
	struct stream s[2] = {
		{ .fd = fd, .flags = flags, .off = 0 },
		{ .fd = fd, .flags = flags, .off = HALF },
	};
	long long before = vmstat_counter("pgpgin");
	int i;

	for (i = 0; i < 2; i++)
		if (pthread_create(&s[i].thread, NULL, read_half, &s[i]))
			tap_bail("pthread_create failed");
	for (i = 0; i < 2; i++)
		pthread_join(s[i].thread, NULL);
	*ok = s[0].ok && s[1].ok;
	return vmstat_counter("pgpgin") - before;
}

/* One pair's cases: its data, and its device reads against the bound. */
static void pair_cases(int fd, int flags, const char *what)
{
	long long bound, read_kib;
	bool ok;

	bound = (FILE_LEN + 2 * uncached_ra_leftover_bound(fd, BS) + MIB) >> 10;
	read_kib = read_pair(fd, flags, &ok);
	tap_result(ok, "%s: two threads read the two halves of one file right",
		   what);
	tap_result(read_kib <= bound,
		   "%s: the device read %lld KiB for %llu KiB (at most %lld)",
		   what, read_kib, FILE_LEN >> 10, bound);
}

int main(int argc, char **argv)
{
	const char *path;
	int fd, rfd;

	test_init(argc, argv);
	tap_online_cpus();
	tap_plan(NR_CASES);
	path = test_path("streams");
	fd = make_cold_file(path, FILE_LEN, 1);
	rfd = xopen(path, O_RDONLY);
	pair_cases(rfd, RWF_UNCACHED, "uncached");
	expect_cached_at_most(fd, 0, FILE_LEN,
			      2 * uncached_ra_leftover_bound(rfd, BS),
			      "uncached pair, file open");
	close(rfd);
	expect_cached_at_most(fd, 0, FILE_LEN,
			      uncached_ra_leftover_bound(fd, BS),
			      "uncached pair, file closed");
	evict_file(fd, FILE_LEN);
	rfd = xopen(path, O_RDONLY);
	pair_cases(rfd, 0, "buffered");
	close(rfd);
	close(fd);
	unlink(path);
	return tap_finish();
}
