// SPDX-License-Identifier: GPL-2.0
/*
 * Random sub-page RWF_UNCACHED reads, as a key-value store makes them
 * (records of 512 B - 2 KiB at random offsets of a cold 32 MiB file), on
 * the filesystem mounted at argv[1] or a raw block device.
 *
 * A read that stops inside a folio keeps it for the stream's next read;
 * a reader that never reads on from there must not leave one folio per
 * read behind. What the reads leave cached is bounded while the file is
 * open (the folio the last read stopped in, plus what the reads found
 * locked and readahead of reads that looked sequential: at most
 * 2 x 128 KiB here), and nothing is left once the file is closed (but
 * for folios the reads found locked, counted by uncached_drop_busy).
 * The data of every read is checked.
 */
#include "uncached_io.h"

#define MIB		(1ULL << 20)
#define FILE_LEN	(32 * MIB)
#define NR_READS	2000
#define MIN_REC		512
#define MAX_REC		2048
#define OPEN_BOUND	(256ULL << 10)
#define NR_CASES	3

static bool on_bdev;

static int open_cold(void)
{
	int fd;

	if (!on_bdev)
		return make_cold_file(test_path("kv"), FILE_LEN, 1);
	fd = xopen(test_dir, O_RDWR);
	if (!write_range_flags(fd, 0, FILE_LEN, MIB, 0, 1))
		tap_bail("cannot write %s", test_dir);
	evict_file(fd, FILE_LEN);
	return fd;
}

/* NR_READS random records read uncached; false on a bad read. */
static bool random_reads(int fd, uint64_t *seed)
{
	char buf[MAX_REC];
	int i;

	for (i = 0; i < NR_READS; i++) {
		size_t len = MIN_REC + rand64(seed) % (MAX_REC - MIN_REC + 1);
		uint64_t off = rand64(seed) % (FILE_LEN - len);
		struct iovec iov = { .iov_base = buf, .iov_len = len };
		ssize_t ret = preadv2(fd, &iov, 1, off, RWF_UNCACHED);

		if (ret != (ssize_t)len || check_pattern(buf, len, off, 1) >= 0) {
			tap_diag("read %d: %zu at %llu: %zd (%s)", i, len,
				 (unsigned long long)off, ret,
				 ret < 0 ? strerror(errno) : "short or wrong data");
			return false;
		}
	}
	return true;
}

int main(int argc, char **argv)
{
	uint64_t seed = 0x5eed;
	long long busy;
	struct stat st;
	int fd, rfd;

	test_init(argc, argv);
	if (stat(test_dir, &st))
		tap_bail("stat %s: %s", test_dir, strerror(errno));
	on_bdev = S_ISBLK(st.st_mode);
	tap_plan(NR_CASES);
	fd = open_cold();
	rfd = xopen(on_bdev ? test_dir : test_path("kv"), O_RDONLY);
	busy = vmstat_counter("uncached_drop_busy");
	tap_result(random_reads(rfd, &seed),
		   "%d random uncached reads of %d-%d bytes return the right data",
		   NR_READS, MIN_REC, MAX_REC);
	tap_diag("the reads found %lld folio(s) locked",
		 vmstat_counter("uncached_drop_busy") - busy);
	expect_cached_at_most(fd, 0, FILE_LEN, OPEN_BOUND,
			      "while the reader's file is open");
	close(rfd);
	expect_read_left(fd, 0, FILE_LEN, 0, busy,
			 "once the reader closed the file");
	close(fd);
	if (!on_bdev)
		unlink(test_path("kv"));
	return tap_finish();
}
