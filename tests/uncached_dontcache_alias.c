// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_DONTCACHE, mainline's name for the flag, is an alias of RWF_UNCACHED
 * (0x80) in the UAPI header: programs written for mainline build and work
 * unchanged. Checked at compile time, then used: a preadv2(RWF_DONTCACHE)
 * of a cold file returns the data and leaves nothing cached, a
 * pwritev2(RWF_DONTCACHE) of a new file reaches the disk and leaves nothing
 * cached once written back.
 */
#include "uncached_io.h"

#ifndef RWF_DONTCACHE
#error "the UAPI header lacks RWF_DONTCACHE, the mainline alias of RWF_UNCACHED"
#endif

_Static_assert(RWF_DONTCACHE == 0x80 && RWF_DONTCACHE == RWF_UNCACHED,
	       "RWF_DONTCACHE must be RWF_UNCACHED (0x80)");

#define FILE_LEN	(8ULL << 20)
#define BS		(64 << 10)

/* Read to EOF: readahead stops there, so nothing of the file stays. */
static void dontcache_read(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, 101);

	tap_result(read_range_flags(fd, 0, FILE_LEN, BS, RWF_DONTCACHE, 101),
		   "preadv2(RWF_DONTCACHE) of a cold file, data right");
	expect_cached(fd, 0, FILE_LEN, 0, "RWF_DONTCACHE read of the whole file");
	close(fd);
}

static void dontcache_write(const char *path)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);

	tap_result(write_range_flags(fd, 0, FILE_LEN, BS, RWF_DONTCACHE, 102),
		   "pwritev2(RWF_DONTCACHE) of a new file");
	expect_settled(fd, 0, FILE_LEN, 0, "RWF_DONTCACHE write");
	drop_caches();
	tap_result(read_range_flags(fd, 0, FILE_LEN, 1 << 20, 0, 102),
		   "RWF_DONTCACHE write: data right after drop_caches");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-dontcache-alias");
	tap_plan(5);
	tap_diag("RWF_DONTCACHE = %#x, RWF_UNCACHED = %#x", RWF_DONTCACHE,
		 RWF_UNCACHED);
	dontcache_read(path);
	dontcache_write(path);
	unlink(path);
	return tap_finish();
}
