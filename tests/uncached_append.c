// SPDX-License-Identifier: GPL-2.0
/*
 * Unaligned RWF_UNCACHED appends, as a log or a write-ahead log makes them
 * (1000-byte records at EOF), on the filesystem mounted at argv[1].
 *
 * The folio a write ends inside is needed by the next append, which
 * writes the rest of it: dropping it once it is written back makes every
 * append read the block back from disk first (a read-modify-write per
 * append). So the folio that holds EOF of a file open for writing stays
 * cached (flagged) after an uncached write, and goes when the file is
 * closed. Device reads (pgpgin in /proc/vmstat) per append:
 *
 * - RWF_DSYNC appends, one after the other;
 * - plain appends, each waiting for the write-behind of the previous one
 *   to be done (its folio written back);
 *
 * at most one read per 20 appends each (filesystem metadata), the data
 * right, and nothing of the file cached once it is closed and written
 * back.
 *
 * Then small files rewritten as a program replaces them: open with
 * O_TRUNC, one uncached write that ends inside a folio, close, no fsync.
 * ext4, XFS and btrfs start the writeback of a file truncated that way in
 * ->release(), so it may end while the file is being closed: whenever it
 * ends, nothing of a file stays cached once it is closed and written back.
 */
#include "uncached_io.h"

#define REC		1000
#define NR_DSYNC	200
#define NR_PLAIN	60
#define PLAIN_GAP_US	30000	/* write-behind runs 10 ms after a write */
#define NR_REWRITES	100
#define NR_CASES	8

static uint64_t file_len;

/* Append @n records with @flags; false on a failed or short write. */
static bool append_records(int fd, int n, int flags, int gap_us)
{
	char buf[REC];
	int i;

	for (i = 0; i < n; i++) {
		struct iovec iov = { .iov_base = buf, .iov_len = REC };
		ssize_t ret;

		fill_pattern(buf, REC, file_len, 1);
		ret = pwritev2(fd, &iov, 1, -1, flags | RWF_APPEND);
		if (ret != REC) {
			tap_diag("append %d at %llu: %zd (%s)", i,
				 (unsigned long long)file_len, ret,
				 ret < 0 ? strerror(errno) : "short");
			return false;
		}
		file_len += REC;
		if (gap_us)
			usleep(gap_us);
	}
	return true;
}

/* One group: @n appends, with the device reads they caused. */
static void append_group(int fd, const char *what, int n, int flags, int gap_us)
{
	long long before = vmstat_counter("pgpgin"), read_kib;
	bool ok = append_records(fd, n, flags, gap_us);

	read_kib = vmstat_counter("pgpgin") - before;
	tap_result(ok, "%s: %d appends of %d bytes", what, n, REC);
	tap_result(read_kib * 20 <= (long long)n * 4,
		   "%s: %lld KiB read from the device for %d appends (at most one 4 KiB block per 20)",
		   what, read_kib, n);
}

/* The pages of the @n files of @fds cached, once they are written back. */
static uint64_t files_cached(const int *fds, int n)
{
	uint64_t cached = 0;
	struct cachestat cs;
	int i;

	for (i = 0; i < n; i++) {
		cs = wait_range_settled(fds[i], 0, REC, -1, UNCACHED_SETTLE_MS);
		cached += cs.nr_cache;
	}
	return cached;
}

/*
 * Rewrite NR_REWRITES files of 8 KiB each to one record, uncached, each
 * closed right after its write; then count what stays of them once they
 * are written back (polled for at most UNCACHED_SETTLE_MS in all: the drop
 * after writeback may run later than the close).
 */
static void rewrite_files(void)
{
	static char buf[2 * PAGE_SZ];
	int fds[NR_REWRITES], i, j, fd, waited;
	char name[32];
	uint64_t cached;
	bool ok = true;

	for (i = 0; i < NR_REWRITES; i++) {
		snprintf(name, sizeof(name), "rewrite%d", i);
		fd = xopen(test_path(name), O_WRONLY | O_CREAT | O_TRUNC);
		if (rw_once(fd, true, buf, sizeof(buf), 0, 0, i) != sizeof(buf) ||
		    fsync(fd))
			tap_bail("writing %s: %s", name, strerror(errno));
		close(fd);
	}
	for (i = 0; i < NR_REWRITES && ok; i++) {
		snprintf(name, sizeof(name), "rewrite%d", i);
		fd = xopen(test_path(name), O_WRONLY | O_TRUNC);
		ok = rw_once(fd, true, buf, REC, 0, RWF_UNCACHED, i) == REC;
		if (!ok)
			tap_diag("rewrite of %s: %s", name, strerror(errno));
		close(fd);
		fds[i] = xopen(test_path(name), O_RDONLY);
	}
	tap_result(ok, "%d files rewritten to %d bytes with RWF_UNCACHED, each closed at once",
		   NR_REWRITES, REC);
	sync();
	cached = files_cached(fds, i);
	for (waited = 0; cached && waited < UNCACHED_SETTLE_MS; waited += 100) {
		usleep(100000);
		cached = files_cached(fds, i);
	}
	for (j = 0; cached && j < i; j++)
		if (nr_cached(fds[j], 0, REC))
			tap_diag("rewrite%d: %llu page(s) cached", j,
				 (unsigned long long)nr_cached(fds[j], 0, REC));
	tap_result(cached == 0,
		   "once they are closed and written back: %llu pages of the %d files cached (want 0)",
		   (unsigned long long)cached, i);
	while (i--) {
		close(fds[i]);
		snprintf(name, sizeof(name), "rewrite%d", i);
		unlink(test_path(name));
	}
}

int main(int argc, char **argv)
{
	const char *path;
	struct cachestat cs;
	int fd;

	test_init(argc, argv);
	tap_plan(NR_CASES);
	path = test_path("log");
	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	if (!append_records(fd, 1, RWF_UNCACHED | RWF_DSYNC, 0))
		tap_bail("the first append failed");
	append_group(fd, "RWF_DSYNC appends", NR_DSYNC,
		     RWF_UNCACHED | RWF_DSYNC, 0);
	append_group(fd, "plain appends", NR_PLAIN, RWF_UNCACHED, PLAIN_GAP_US);
	if (fsync(fd))
		tap_bail("fsync: %s", strerror(errno));
	close(fd);
	fd = xopen(path, O_RDONLY);
	cs = wait_range_settled(fd, 0, file_len, 0, UNCACHED_SETTLE_MS);
	diag_cachestat("after close", cs);
	if (cs.nr_cache)
		diag_cached_pages(fd, 0, file_len);
	tap_result(cs.nr_cache == 0,
		   "once the file is closed and written back: %llu pages cached (want 0)",
		   (unsigned long long)cs.nr_cache);
	tap_result(read_range_flags(fd, 0, file_len, 1 << 16, RWF_UNCACHED, 1),
		   "the %llu bytes appended read back right",
		   (unsigned long long)file_len);
	close(fd);
	unlink(path);
	rewrite_files();
	return tap_finish();
}
