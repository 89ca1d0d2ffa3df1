// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED on compressible data: the word data of uncached_io.h (each
 * 8-byte word its own offset), which btrfs compress=zstd really compresses
 * (the tests' other pattern data is random: btrfs gives up compressing
 * it). On a compressing filesystem this takes the compressed write path
 * and the compressed read path, which reads whole compressed extents:
 * btrfs expands readahead to the end of the extent, or, where it cannot,
 * adds the rest of the extent to the page cache itself
 * (add_ra_bio_pages()); small files may be stored inline. Elsewhere these
 * are ordinary reads and writes.
 * Every folio an uncached call instantiated must go: reads keep at most
 * the readahead bound beyond where they stopped, writes keep nothing once
 * written back, and the data reads back right.
 */
#include "uncached_io.h"

#define FILE_LEN	(8ULL << 20)
#define BS		(64 << 10)
#define HALF		(FILE_LEN / 2)
#define SMALL_LEN	1000ULL	/* fits inline in a btrfs leaf */

/*
 * Read or write [off, off + len) in @bs calls with @flags, word data of
 * generation @gen (written, or expected). False with a diagnostic on an
 * error, a short call or wrong data.
 */
static bool words_io(int fd, bool write, uint64_t off, uint64_t len,
		     size_t bs, int flags, uint32_t gen)
{
	char *buf = xmalloc(bs);
	uint64_t done;
	bool ok = true;

	for (done = 0; ok && done < len; done += bs) {
		size_t n = len - done < bs ? len - done : bs;
		struct iovec iov = { .iov_base = buf, .iov_len = n };
		ssize_t ret;
		long bad;

		if (write) {
			fill_words(buf, n, off + done, gen);
			ret = pwritev2(fd, &iov, 1, off + done, flags);
		} else {
			ret = preadv2(fd, &iov, 1, off + done, flags);
		}
		if (ret != (ssize_t)n) {
			tap_diag("%s %zu at %llu: %zd (%s)",
				 write ? "pwritev2" : "preadv2", n,
				 (unsigned long long)(off + done), ret,
				 ret < 0 ? strerror(errno) : "short");
			ok = false;
		} else if (!write) {
			bad = check_words(buf, n, off + done, gen);
			if (bad >= 0) {
				tap_diag("wrong data at offset %llu",
					 (unsigned long long)(off + done + bad));
				ok = false;
			}
		}
	}
	free(buf);
	return ok;
}

/* A file of @len bytes of word data, written buffered, not cached. */
static int make_cold_words(const char *path, uint64_t len, uint32_t gen)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);

	if (!words_io(fd, true, 0, len, 1 << 20, 0, gen))
		tap_bail("cannot create %s", path);
	evict_file(fd, len);
	return fd;
}

static void read_whole(const char *path)
{
	int fd = make_cold_words(path, FILE_LEN, 1);
	long long busy = vmstat_counter("uncached_drop_busy");

	tap_result(words_io(fd, false, 0, FILE_LEN, BS, RWF_UNCACHED, 1),
		   "uncached read of a cold compressible file: right data");
	expect_read_left(fd, 0, FILE_LEN, 0, busy, "after reading it to EOF");
	close(fd);
}

static void read_half(const char *path)
{
	int fd = make_cold_words(path, FILE_LEN, 2);
	long long busy = vmstat_counter("uncached_drop_busy");

	tap_result(words_io(fd, false, 0, HALF, BS, RWF_UNCACHED, 2),
		   "uncached read of the first half: right data");
	expect_read_left(fd, 0, HALF, 0, busy, "the half read");
	expect_cached_at_most(fd, HALF, FILE_LEN - HALF,
			      uncached_ra_leftover_bound(fd, BS),
			      "readahead beyond the half read");
	close(fd);
}

/*
 * A stream of small reads that starts inside a compressed extent: the
 * readahead windows then end inside later extents, and btrfs expands them
 * to the ends of those extents, folios the stream reaches later. Read to
 * EOF, nothing of what it read may stay.
 */
static void read_from_inside(const char *path)
{
	int fd = make_cold_words(path, FILE_LEN, 6);
	const uint64_t start = 100 << 10;
	long long busy = vmstat_counter("uncached_drop_busy");

	tap_result(words_io(fd, false, start, FILE_LEN - start, 4096,
			    RWF_UNCACHED, 6),
		   "uncached 4 KiB reads from 100 KiB to EOF: right data");
	expect_read_left(fd, start, FILE_LEN - start, 0, busy,
			 "after the 4 KiB reads from 100 KiB to EOF");
	close(fd);
}

/*
 * One page cached in the middle of a cold compressed extent (read, then
 * the rest of the extent evicted): readahead of an uncached stream cannot
 * expand past that page (btrfs expands it to the end of a compressed
 * extent, and readahead_expand() stops at a cached folio), so
 * decompressing the first part adds the folios after the page itself
 * (btrfs add_ra_bio_pages()). Those must be uncached folios too: the
 * stream drops them as it reads them, and only the page that was cached
 * before stays.
 */
static void read_around_cached(const char *path)
{
	int fd = make_cold_words(path, FILE_LEN, 7);
	const uint64_t extent = 128 << 10, page = extent / 2;
	long long busy;
	uint64_t before;

	/*
	 * No readahead (still in flight, it would escape the eviction):
	 * btrfs decompresses and caches the whole extent all the same.
	 */
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) ||
	    !words_io(fd, false, page, PAGE_SZ, PAGE_SZ, 0, 7) ||
	    posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL) ||
	    posix_fadvise(fd, 0, page, POSIX_FADV_DONTNEED) ||
	    posix_fadvise(fd, page + PAGE_SZ, 0, POSIX_FADV_DONTNEED))
		tap_bail("cannot cache one page of the first extent");
	/* a large folio (XFS) keeps the whole folio */
	before = nr_cached(fd, 0, FILE_LEN);
	tap_result(before && before == nr_cached(fd, 0, extent),
		   "only the folio of the page at %llu KiB is cached (%llu pages)",
		   (unsigned long long)(page >> 10),
		   (unsigned long long)before);
	busy = vmstat_counter("uncached_drop_busy");
	tap_result(words_io(fd, false, 0, 2 * extent, BS, RWF_UNCACHED, 7),
		   "uncached reads of the first 256 KiB around it: right data");
	expect_read_left(fd, 0, 2 * extent, before, busy,
			 "after them, only what was cached before");
	close(fd);
}

/* Uncached writes of a new file, then an overwrite of its middle. */
static void write_new(const char *path)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);

	tap_result(words_io(fd, true, 0, FILE_LEN, BS, RWF_UNCACHED, 3),
		   "uncached writes of a new compressible file");
	expect_settled(fd, 0, FILE_LEN, 0, "new file");
	tap_result(words_io(fd, true, HALF / 2, HALF, BS, RWF_UNCACHED, 4),
		   "uncached overwrite of its middle");
	expect_settled(fd, 0, FILE_LEN, 0, "overwritten file");
	drop_caches();
	tap_result(words_io(fd, false, 0, HALF / 2, BS, 0, 3) &&
		   words_io(fd, false, HALF / 2, HALF, BS, 0, 4) &&
		   words_io(fd, false, HALF / 2 + HALF, FILE_LEN - HALF - HALF / 2,
			    BS, 0, 3),
		   "the file reads back right from disk");
	close(fd);
}

/* A file small enough to be stored inline in the filesystem's metadata. */
static void write_small(const char *path)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	long long busy;

	tap_result(words_io(fd, true, 0, SMALL_LEN, SMALL_LEN, RWF_UNCACHED, 5),
		   "uncached write of a new %llu-byte file", SMALL_LEN);
	expect_settled(fd, 0, SMALL_LEN, 0, "small file");
	drop_caches();
	tap_result(words_io(fd, false, 0, SMALL_LEN, SMALL_LEN, 0, 5),
		   "the small file reads back right from disk");
	evict_file(fd, SMALL_LEN);
	busy = vmstat_counter("uncached_drop_busy");
	tap_result(words_io(fd, false, 0, SMALL_LEN, SMALL_LEN, RWF_UNCACHED, 5),
		   "uncached read of the cold small file");
	expect_read_left(fd, 0, SMALL_LEN, 0, busy,
			 "small file after the uncached read");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-compressible");
	tap_plan(20);
	read_whole(path);
	read_half(path);
	read_from_inside(path);
	read_around_cached(path);
	write_new(path);
	write_small(path);
	unlink(path);
	return tap_finish();
}
