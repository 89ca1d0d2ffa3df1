// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED writes into the holes of a sparse file, past EOF, and of a
 * tiny new file: once writeback completed (fsync, then bounded polling) no
 * page of the file stays cached, and after drop_caches the file holds the
 * written data, zeroes in the holes and the right size.
 *
 * The sparse file's first write does not fit inline, and the tiny file's
 * does: on ext4 with inline_data (the ext4-inline target) the first takes
 * the conversion path without inline data to move, the second keeps its
 * data in the inode and never writes its folio back; on btrfs the tiny
 * file is an inline extent.
 */
#include "uncached_io.h"

#define MIB		(1ULL << 20)
#define BS		(64 << 10)

static void into_holes(const char *path)
{
	const uint64_t size = 8 * MIB;
	const struct file_extent ext[] = {
		{ 0, MIB, 0 },
		{ MIB, MIB, 21 },			/* into a hole */
		{ 2 * MIB, 3 * MIB + 4096, 0 },
		{ 5 * MIB + 4096, MIB - 4096, 22 },	/* into a hole */
		{ 6 * MIB, 2 * MIB, 0 },
	};
	int fd;

	unlink(path);		/* a new inode, whatever ran before */
	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);

	if (ftruncate(fd, size))
		tap_bail("ftruncate: %s", strerror(errno));
	tap_result(write_range_flags(fd, ext[1].off, ext[1].len, BS,
				     RWF_UNCACHED, ext[1].seed) &&
		   write_range_flags(fd, ext[3].off, ext[3].len, BS,
				     RWF_UNCACHED, ext[3].seed),
		   "holes: uncached writes into the holes of a sparse file");
	expect_settled(fd, 0, size, 0, "holes: whole file");
	tap_result(file_matches_extents(fd, ext, 5, size),
		   "holes: data, holes and size right after drop_caches");
	close(fd);
}

/*
 * Past EOF: a write leaving a hole between the old EOF (page aligned; see
 * uncached_eof_zeroing.c for an unaligned one) and itself, then one
 * appending an unaligned tail.
 */
static void past_eof(const char *path)
{
	const struct file_extent ext[] = {
		{ 0, MIB, 23 },
		{ MIB, 2 * MIB, 0 },
		{ 3 * MIB, MIB, 24 },			/* past EOF */
		{ 4 * MIB, 12345, 25 },			/* at EOF, unaligned */
	};
	const uint64_t size = 4 * MIB + 12345;
	int fd = make_cold_file(path, MIB, 23);

	tap_result(write_range_flags(fd, ext[2].off, ext[2].len, BS,
				     RWF_UNCACHED, ext[2].seed) &&
		   write_range_flags(fd, ext[3].off, ext[3].len, BS,
				     RWF_UNCACHED, ext[3].seed),
		   "past EOF: uncached writes past EOF and appending at EOF");
	expect_settled(fd, 0, size, 0, "past EOF: whole file");
	tap_result(file_matches_extents(fd, ext, 4, size),
		   "past EOF: data, hole and size right after drop_caches");
	close(fd);
}

/* A new file (a new inode) of 40 bytes, written uncached in two writes. */
static void tiny_file(const char *path)
{
	const struct file_extent ext[] = { { 0, 40, 26 } };
	int fd;

	unlink(path);
	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);

	tap_result(write_range_flags(fd, 0, 40, 24, RWF_UNCACHED, 26),
		   "tiny: two uncached writes make a new 40-byte file");
	expect_settled(fd, 0, 4096, 0, "tiny: whole file");
	tap_result(file_matches_extents(fd, ext, 1, 40),
		   "tiny: data and size right after drop_caches");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-write-patterns");
	tap_plan(9);
	into_holes(path);
	past_eof(path);
	tiny_file(path);
	unlink(path);
	return tap_finish();
}
