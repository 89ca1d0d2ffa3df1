// SPDX-License-Identifier: GPL-2.0
/*
 * Smoke test of the filesystem under test: buffered writes of several sizes
 * and offsets reach the disk and read back right after the page cache has
 * been dropped. Holds on every kernel, with or without the series.
 */
#include "util.h"

static const struct {
	uint64_t off;
	size_t len;
} extents[] = {
	{ 0, 4096 },
	{ 4096, 1 },			/* a single byte */
	{ 8191, 4097 },			/* straddles a page boundary */
	{ 65536, 1 << 20 },		/* 1 MiB, page aligned */
	{ (3 << 20) + 17, 300001 },	/* unaligned both ends */
};

#define NR_EXTENTS (sizeof(extents) / sizeof(extents[0]))

int main(int argc, char **argv)
{
	const char *path;
	unsigned int i;
	struct stat st;
	int fd;

	test_init(argc, argv);
	path = test_path("integrity");
	tap_plan(NR_EXTENTS + 2);

	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	for (i = 0; i < NR_EXTENTS; i++)
		write_pattern(fd, extents[i].len, extents[i].off, i + 1);
	tap_result(fsync(fd) == 0, "fsync after buffered writes");
	close(fd);

	drop_caches();
	fd = xopen(path, O_RDONLY);
	for (i = 0; i < NR_EXTENTS; i++)
		tap_result(verify_pattern(fd, extents[i].len, extents[i].off,
					  i + 1),
			   "%zu bytes at %llu read back after drop_caches",
			   extents[i].len,
			   (unsigned long long)extents[i].off);
	tap_result(fstat(fd, &st) == 0 &&
		   st.st_size == (off_t)(extents[NR_EXTENTS - 1].off +
					 extents[NR_EXTENTS - 1].len),
		   "file size is the end of the last write");
	close(fd);
	unlink(path);
	return tap_finish();
}
