// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED reads: the data is right, the folios the read instantiated
 * are gone afterwards, folios that were cached before stay cached.
 * Asserts on cachestat() of the file's byte range.
 */
#include "uncached_io.h"

#define FILE_LEN	(64ULL << 20)	/* a read far larger than the readahead window */
#define BS		(64 << 10)

/*
 * The read goes on to EOF: readahead stops there, and the stream's later
 * calls copy (and so drop) every folio it read ahead, so nothing stays.
 */
static void cold_read(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, 1);

	diag_cachestat("cold 64 MiB file before the uncached read",
		       file_cachestat(fd, 0, FILE_LEN));
	tap_result(read_range_flags(fd, 0, FILE_LEN, BS, RWF_UNCACHED, 1),
		   "uncached read of a cold file returns the right data");
	expect_cached(fd, 0, FILE_LEN, 0, "cold file after the uncached read");
	close(fd);
}

static void warm_read(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, 2);
	uint64_t npages = pages_of(FILE_LEN);

	if (!read_range_flags(fd, 0, FILE_LEN, BS, 0, 2))
		tap_bail("buffered read of %s failed", path);
	expect_cached(fd, 0, FILE_LEN, npages,
		      "warm file: a buffered read caches the whole file");
	tap_result(read_range_flags(fd, 0, FILE_LEN, BS, RWF_UNCACHED, 2),
		   "uncached read of a cached file returns the right data");
	expect_cached(fd, 0, FILE_LEN, npages,
		      "warm file: every page stays cached after the uncached read");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-read");
	tap_plan(5);
	cold_read(path);
	warm_read(path);
	unlink(path);
	return tap_finish();
}
