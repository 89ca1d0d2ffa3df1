// SPDX-License-Identifier: GPL-2.0
/*
 * O_DIRECT writes with RWF_UNCACHED as the first writes an inode ever gets
 * (argv[1]: a mount point, where the test creates new files, or a raw block
 * device, which the test overwrites and which must not have had a buffered
 * write since boot: it runs first on the block-device target).
 *
 * With cgroup writeback an inode has no bdi_writeback (inode->i_wb is NULL)
 * until it is first dirtied, and a direct write dirties nothing. An
 * uncached write ends in generic_write_sync(), which once oopsed on such an
 * inode asking a NULL wb to write behind. Each case writes, reads back with
 * O_DIRECT from a second fd and checks that nothing of the range is cached:
 *
 * - a first 64 KiB O_DIRECT | RWF_UNCACHED write, then 15 more (1 MiB);
 * - the same with RWF_DSYNC added;
 * - a buffered uncached write after such writes on the same inode leaves
 *   nothing cached once written back.
 *
 * A filesystem may write O_DIRECT writes through the page cache instead.
 * ext4 with data=journal says so (statx() reports no direct I/O alignment);
 * btrfs does not: it reports an alignment but writes an inode with data
 * checksums (the default) buffered, then writes back and waits before the
 * call returns. Either way the writes are then uncached buffered writes:
 * nothing of them is cached when an RWF_DSYNC write returns (the sync drops
 * them), and without RWF_DSYNC their folios are dropped after writeback, by
 * the deferred drop, which on btrfs retries while an ordered extent's
 * completion makes ->release_folio() refuse. So a write without RWF_DSYNC
 * is checked once that has settled, and what was still cached when the
 * calls returned is only reported.
 */
#include "uncached_io.h"

#define BS		(64 << 10)
#define LEN		(1 << 20)
#define NR_CASES	11

static bool on_bdev;

/*
 * Does the filesystem write @fd's O_DIRECT writes through the page cache?
 * statx() then reports STATX_DIOALIGN with an alignment of 0.
 */
static bool direct_is_buffered(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx))
		tap_bail("statx: %s", strerror(errno));
	return (stx.stx_mask & STATX_DIOALIGN) && !stx.stx_dio_offset_align;
}

/* A target for one group: a new file, or the device itself. */
static int open_target(const char *name, int flags)
{
	int fd;

	if (on_bdev)
		return xopen(test_dir, O_RDWR | flags);
	fd = open(test_path(name), O_RDWR | O_CREAT | O_TRUNC | flags, 0644);
	if (fd < 0)
		tap_bail("open %s: %s", test_path(name), strerror(errno));
	return fd;
}

static void *aligned_buf(size_t len)
{
	void *buf;

	if (posix_memalign(&buf, 4096, len))
		tap_bail("posix_memalign: out of memory");
	return buf;
}

/* Write LEN bytes of pattern @seed in BS calls with O_DIRECT and @flags. */
static bool direct_write(int fd, uint64_t off, int flags, unsigned int seed,
			 const char *what)
{
	char *buf = aligned_buf(BS);
	uint64_t done;
	bool ok = true;

	for (done = 0; ok && done < LEN; done += BS) {
		struct iovec iov = { .iov_base = buf, .iov_len = BS };
		ssize_t ret;

		fill_pattern(buf, BS, off + done, seed);
		ret = pwritev2(fd, &iov, 1, (flags & RWF_APPEND) ? -1 :
			       (off_t)(off + done), flags);
		if (ret != BS) {
			tap_diag("%s: pwritev2 at %llu: %zd (%s)", what,
				 (unsigned long long)(off + done), ret,
				 ret < 0 ? strerror(errno) : "short");
			ok = false;
		}
		if (!done)
			tap_result(ok, "%s: the first O_DIRECT write (flags %#x) returns %d bytes",
				   what, flags, BS);
	}
	free(buf);
	return tap_result(ok, "%s: all %d writes return %d bytes", what,
			  LEN / BS, BS);
}

/* Read [off, off + LEN) back with O_DIRECT from a new fd; check @seed. */
static void check_medium(const char *path, uint64_t off, unsigned int seed,
			 const char *what)
{
	int fd = xopen(path, O_RDONLY | O_DIRECT);
	char *buf = aligned_buf(LEN);
	struct iovec iov = { .iov_base = buf, .iov_len = LEN };
	ssize_t ret = preadv2(fd, &iov, 1, off, RWF_UNCACHED);
	long bad = ret == LEN ? check_pattern(buf, LEN, off, seed) : -1;

	if (bad >= 0)
		tap_diag("%s: mismatch at offset %llu", what,
			 (unsigned long long)(off + bad));
	tap_result(ret == LEN && bad < 0,
		   "%s: an O_DIRECT|RWF_UNCACHED read finds the data written (%zd bytes read)",
		   what, ret);
	free(buf);
	close(fd);
}

/*
 * Nothing of [off, off + LEN) stays cached. With RWF_DSYNC that holds when
 * the calls return. Without, folios of writes that went through the page
 * cache are written behind by the flusher (ext4 data=journal: it starts
 * 10 ms after a write, at worst at the flusher's next periodic run; without
 * it they would stay dirty until they expire, 30 s) or were written back
 * before the call returned (btrfs), and dropped after writeback: polled for
 * at most UNCACHED_SETTLE_MS, with no fsync().
 */
static void expect_written_dropped(int fd, uint64_t off, int flags,
				   const char *name)
{
	struct cachestat cs;

	if (flags & RWF_DSYNC) {
		expect_cached(fd, off, LEN, 0, name);
		return;
	}
	cs = file_cachestat(fd, off, LEN);
	if (cs.nr_cache)
		tap_diag("%s: %llu pages cached, %llu dirty, %llu under writeback when checked first; waiting for the drop",
			 name, (unsigned long long)cs.nr_cache,
			 (unsigned long long)cs.nr_dirty,
			 (unsigned long long)cs.nr_writeback);
	cs = wait_range_settled(fd, off, LEN, 0, UNCACHED_SETTLE_MS);
	diag_cachestat(name, cs);
	if (cs.nr_cache)
		diag_cached_pages(fd, off, LEN);
	tap_result(cs.nr_cache == 0,
		   "%s: dropped after writeback with no fsync: %llu pages of [%llu, +%d) cached (want 0)",
		   name, (unsigned long long)cs.nr_cache,
		   (unsigned long long)off, LEN);
}

/* One group: the first writes of an inode are O_DIRECT | RWF_UNCACHED. */
static void direct_group(const char *name, uint64_t off, int flags,
			 unsigned int seed)
{
	int fd = open_target(name, O_DIRECT);
	const char *path = on_bdev ? test_dir : test_path(name);

	direct_write(fd, off, RWF_UNCACHED | flags, seed, name);
	if (!on_bdev && direct_is_buffered(fd)) {
		tap_diag("%s: this filesystem writes O_DIRECT through the page cache",
			 name);
		expect_written_dropped(fd, off, flags, name);
		check_medium(path, off, seed, name);
	} else {
		check_medium(path, off, seed, name);
		expect_written_dropped(fd, off, flags, name);
	}
	close(fd);
	if (!on_bdev)
		unlink(path);
}

/* After the direct writes, a buffered uncached write of the same inode. */
static void buffered_after(uint64_t off)
{
	const char *name = "buffered-after";
	int dfd = open_target(name, O_DIRECT), fd;
	const char *path = on_bdev ? test_dir : test_path(name);
	struct cachestat cs;

	if (!direct_write(dfd, off, RWF_UNCACHED, 9, "before the buffered write"))
		tap_bail("the direct writes failed");
	close(dfd);
	fd = xopen(path, O_RDWR);
	if (!write_range_flags(fd, off, LEN, BS, RWF_UNCACHED, 10))
		tap_bail("buffered uncached write failed");
	if (fsync(fd))
		tap_bail("fsync: %s", strerror(errno));
	cs = wait_range_settled(fd, off, LEN, 0, 5000);
	diag_cachestat("buffered after direct", cs);
	tap_result(cs.nr_cache == 0,
		   "a buffered uncached write after them: %llu pages left cached once written back (want 0)",
		   (unsigned long long)cs.nr_cache);
	close(fd);
	if (!on_bdev)
		unlink(path);
}

int main(int argc, char **argv)
{
	struct stat st;

	test_init(argc, argv);
	if (stat(test_dir, &st))
		tap_bail("stat %s: %s", test_dir, strerror(errno));
	on_bdev = S_ISBLK(st.st_mode);
	tap_plan(NR_CASES);
	tap_diag("%s: %s", on_bdev ? "block device" : "directory", test_dir);
	direct_group("direct", 0, 0, 1);
	direct_group("direct-dsync", 2 * LEN, RWF_DSYNC, 2);
	buffered_after(4 * LEN);
	return tap_finish();
}
