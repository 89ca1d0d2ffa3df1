// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED next to MAP_SHARED mappings of the same file: uncached
 * writes show through an existing mapping, data stored through a mapping
 * (and msync) is what an uncached read returns, and a page that is mapped
 * is never dropped from under its mapping by uncached reads or writes.
 */
#include "uncached_io.h"

#include <sys/mman.h>

#define FILE_LEN	(1ULL << 20)
#define HALF		(FILE_LEN / 2)
#define BS		(64 << 10)

static unsigned char *map_range(int fd, int prot, uint64_t off, uint64_t len)
{
	void *map = mmap(NULL, len, prot, MAP_SHARED, fd, off);

	if (map == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	return map;
}

static unsigned char *map_file(int fd, int prot)
{
	return map_range(fd, prot, 0, FILE_LEN);
}

/* Read every byte of [off, off + len) through @map (mapping @off at @base). */
static bool touch_at(const unsigned char *map, uint64_t base, uint64_t off,
		     uint64_t len, unsigned int seed)
{
	long bad = check_pattern(map + off - base, len, off, seed);

	if (bad >= 0)
		tap_diag("mapping differs at offset %llu",
			 (unsigned long long)(off + bad));
	return bad < 0;
}

static bool touch(const unsigned char *map, uint64_t off, uint64_t len,
		  unsigned int seed)
{
	return touch_at(map, 0, off, len, seed);
}

/*
 * Uncached writes show through existing mappings, touched or not. Each
 * half has a mapping of its own, so that fault-around in the touched
 * first half cannot map pages of the second.
 */
static void write_shows_in_mapping(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, 51);
	unsigned char *lo = map_range(fd, PROT_READ, 0, HALF);
	unsigned char *hi = map_range(fd, PROT_READ, HALF, FILE_LEN - HALF);

	/* fault the first half in without reading ahead past it */
	if (madvise(lo, HALF, MADV_RANDOM))
		tap_bail("madvise: %s", strerror(errno));
	touch(lo, 0, HALF, 51);
	expect_cached_below(fd, HALF, FILE_LEN, "first half mapped");
	tap_result(write_range_flags(fd, 0, FILE_LEN, BS, RWF_UNCACHED, 52) &&
		   touch(lo, 0, HALF, 52),
		   "uncached write over the file shows at once in the touched mapping");
	expect_settled(fd, 0, HALF, pages_of(HALF),
		       "touched half after the uncached write");
	expect_settled(fd, HALF, FILE_LEN - HALF, 0,
		       "untouched half after the uncached write");
	tap_result(touch_at(hi, HALF, HALF, FILE_LEN - HALF, 52),
		   "the untouched mapping faults the written data in");
	munmap(lo, HALF);
	munmap(hi, FILE_LEN - HALF);
	close(fd);
}

/* Data stored through a mapping is what uncached reads return. */
static void mapping_write_read_uncached(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, 53);
	unsigned char *map = map_file(fd, PROT_READ | PROT_WRITE);

	fill_pattern(map, FILE_LEN, 0, 54);
	tap_result(!msync(map, FILE_LEN, MS_SYNC), "msync of the stored data");
	tap_result(read_range_flags(fd, 0, FILE_LEN, BS, RWF_UNCACHED, 54),
		   "uncached read returns the data stored through the mapping");
	munmap(map, FILE_LEN);
	drop_caches();
	tap_result(read_range_flags(fd, 0, FILE_LEN, BS, RWF_UNCACHED, 54),
		   "after drop_caches too (from disk)");
	expect_cached(fd, 0, FILE_LEN, 0, "uncached read after drop_caches");
	close(fd);
}

/*
 * Mapped pages stay cached through uncached reads and writes over them.
 * The pages are readahead folios of an uncached read (flagged uncached),
 * so that faulting them in may map folios that still carry the flag.
 */
static void mapped_never_dropped(const char *path)
{
	const uint64_t off = 16 << 10, len = 16 << 10, range = 64 << 10;
	int fd = make_cold_file(path, FILE_LEN, 55);
	unsigned char *map;

	if (!read_range_flags(fd, 0, off, off, RWF_UNCACHED, 55))
		tap_bail("uncached read of the first 16 KiB failed");
	diag_cachestat("readahead pages after the uncached read of 16 KiB",
		       file_cachestat(fd, off, len));
	tap_diag("leftover after the uncached read of 16 KiB: %llu KiB (bound %llu KiB)",
		 (unsigned long long)(nr_cached(fd, off, FILE_LEN - off) *
				      PAGE_SZ >> 10),
		 (unsigned long long)(uncached_ra_leftover_bound(fd, off) >> 10));
	map = map_file(fd, PROT_READ);
	tap_result(touch(map, off, len, 55), "mapped pages read right");
	tap_result(read_range_flags(fd, 0, range, range, RWF_UNCACHED, 55),
		   "uncached read over the mapped pages, data right");
	expect_cached(fd, off, len, pages_of(len),
		      "mapped pages after the uncached read");
	tap_result(write_range_flags(fd, 0, range, range, RWF_UNCACHED, 56),
		   "uncached write over the mapped pages");
	expect_settled(fd, off, len, pages_of(len),
		       "mapped pages after the uncached write");
	tap_result(touch(map, 0, range, 56),
		   "the mapping shows the written data");
	munmap(map, FILE_LEN);
	drop_caches();
	tap_result(read_range_flags(fd, 0, range, range, 0, 56),
		   "written data right after drop_caches");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-mmap");
	tap_plan(16);
	write_shows_in_mapping(path);
	mapping_write_read_uncached(path);
	mapped_never_dropped(path);
	unlink(path);
	return tap_finish();
}
