// SPDX-License-Identifier: GPL-2.0
/*
 * An RWF_UNCACHED write past an EOF that is not page aligned: extending
 * the file makes the filesystem zero the rest of the old EOF block (ext4
 * ext4_zero_partial_blocks(), XFS iomap_zero_range(), btrfs
 * btrfs_truncate_block()), in a folio of the old EOF page that this call
 * instantiates. Once writeback completed, no page of the file may stay
 * cached, and the file reads back right after drop_caches.
 */
#include "uncached_io.h"

#define MIB		(1ULL << 20)
#define OLD_SIZE	(MIB + 100)	/* EOF inside page 256 */
#define WRITE_OFF	(2 * MIB)
#define WRITE_LEN	(64ULL << 10)

int main(int argc, char **argv)
{
	const struct file_extent ext[] = {
		{ 0, OLD_SIZE, 81 },
		{ OLD_SIZE, WRITE_OFF - OLD_SIZE, 0 },
		{ WRITE_OFF, WRITE_LEN, 82 },
	};
	const uint64_t size = WRITE_OFF + WRITE_LEN;
	const char *path;
	int fd;

	test_init(argc, argv);
	path = test_path("uncached-eof-zeroing");
	tap_plan(4);
	fd = make_cold_file(path, OLD_SIZE, 81);
	expect_cached(fd, 0, size, 0, "cold file of 1 MiB + 100 bytes");
	tap_result(write_range_flags(fd, WRITE_OFF, WRITE_LEN, WRITE_LEN,
				     RWF_UNCACHED, 82),
		   "uncached write of 64 KiB at 2 MiB, past the unaligned EOF");
	expect_settled(fd, 0, size, 0, "whole file");
	tap_result(file_matches_extents(fd, ext, 3, size),
		   "data, zeroed tail of the old EOF block, hole and size right after drop_caches");
	close(fd);
	unlink(path);
	return tap_finish();
}
