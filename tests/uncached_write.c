// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED writes: the data reaches the disk, and once writeback has
 * completed no page the write instantiated is left in the page cache;
 * pages that were cached before the write stay cached. Asserts on
 * cachestat() of the file's byte range.
 */
#include "uncached_io.h"

#define BIG_LEN		(64ULL << 20)	/* a write far larger than one folio batch */
#define LEN		(8ULL << 20)
#define BS		(64 << 10)

/*
 * fsync, wait until writeback of the range completed and report how many
 * pages stayed cached; then check the data from disk.
 */
static void check_after_writeback(int fd, uint64_t len, uint64_t want_cached,
				  unsigned int seed, const char *what)
{
	tap_result(fsync(fd) == 0, "%s: fsync", what);
	expect_settled(fd, 0, len, want_cached, what);
	drop_caches();
	tap_result(read_range_flags(fd, 0, len, 1 << 20, 0, seed),
		   "%s: data right after drop_caches", what);
}

static void new_file(const char *path)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	struct cachestat cs;

	diag_cachestat("new file before the 64 MiB uncached write",
		       file_cachestat(fd, 0, BIG_LEN));
	tap_result(write_range_flags(fd, 0, BIG_LEN, BS, RWF_UNCACHED, 1),
		   "new file: 64 MiB uncached write");
	cs = file_cachestat(fd, 0, BIG_LEN);
	diag_cachestat("new file right after the write returned", cs);
	check_after_writeback(fd, BIG_LEN, 0, 1, "new file");
	close(fd);
}

static void append(const char *path, bool o_append)
{
	const char *what = o_append ? "O_APPEND" : "RWF_APPEND";
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC | (o_append ? O_APPEND : 0));
	int flags = RWF_UNCACHED | (o_append ? 0 : RWF_APPEND);

	tap_result(write_range_flags(fd, 0, LEN, BS, flags, 2),
		   "%s: uncached appending writes", what);
	check_after_writeback(fd, LEN, 0, 2, what);
	close(fd);
}

static void overwrite_on_disk(const char *path)
{
	int fd = make_cold_file(path, LEN, 3);

	tap_result(write_range_flags(fd, 0, LEN, BS, RWF_UNCACHED, 4),
		   "overwrite of uncached on-disk blocks");
	check_after_writeback(fd, LEN, 0, 4, "overwrite on disk");
	close(fd);
}

static void overwrite_cached(const char *path)
{
	int fd = make_cold_file(path, LEN, 5);

	if (!read_range_flags(fd, 0, LEN, BS, 0, 5))
		tap_bail("buffered read of %s failed", path);
	tap_result(write_range_flags(fd, 0, LEN, BS, RWF_UNCACHED, 6),
		   "overwrite of a cached range");
	check_after_writeback(fd, LEN, pages_of(LEN), 6, "overwrite cached");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-write");
	tap_plan(20);
	new_file(path);
	append(path, true);
	append(path, false);
	overwrite_on_disk(path);
	overwrite_cached(path);
	unlink(path);
	return tap_finish();
}
