// SPDX-License-Identifier: GPL-2.0
/*
 * An uncached read drops the folios it copied one batch at a time
 * (filemap_read()'s folio batch, put with one folios_put()).  A folio in
 * the middle of such a batch that must stay cached stays, and only it:
 *
 * 1. locked by someone else (the test module uncached_hold, which looks it
 *    up without adopting it, so it keeps its uncached flag): the read does
 *    not wait for it, leaves it cached and counts it (uncached_drop_busy);
 * 2. mapped into this process: the fault adopts it (clears its flag);
 * 3. redirtied by a buffered write, which adopts it too.
 *
 * Cases 2 and 3 check an adopted folio in the batch; a folio still flagged
 * when found mapped or dirty by the drop (uncached_drop_mapped, _dirty)
 * only arises in races that user space cannot time.
 *
 * Each case reads [0, 64 KiB) of a cold file uncached, which leaves the
 * readahead window up to 128 KiB cached and flagged uncached, makes the
 * folio at page 24 one of the three, then reads [64 KiB, 128 KiB) uncached
 * in one call: every folio of that range but the folio of page 24 must be
 * gone, and every page of that folio must stay.  The folio may be large
 * (XFS): its bounds come from the module, which lists the folios it holds.
 * The batch starts after the folio of page 16, which readahead marked
 * (PG_readahead ends a batch); a case needs a folio of the range on each
 * side of the kept one within the batch, or skips.
 */
#include "uncached_io.h"

#include <sys/mman.h>

#define HOLD_CTL	"/sys/kernel/debug/uncached_hold/ctl"
#define FILE_LEN	(1ULL << 20)
#define HEAD		(64ULL << 10)	/* the first read */
#define RANGE_OFF	HEAD		/* the read whose batch is checked */
#define RANGE_LEN	(64ULL << 10)
#define KEPT_INDEX	24ULL		/* page 24: the middle of the range */
#define MARK_INDEX	16ULL		/* the first readahead's PG_readahead */
#define LOCK_WAIT_MS	2000

static int ctl_fd = -1;

/* The folio that held page KEPT_INDEX: its first page, its size in pages. */
struct kept_folio {
	uint64_t first, nr;
};

/* Write @cmd FD INDEX to the module's ctl; returns 0 or the errno. */
static int ctl(const char *cmd, int fd, uint64_t index)
{
	char buf[64];
	int len = snprintf(buf, sizeof(buf), "%s %d %llu", cmd, fd,
			   (unsigned long long)index);
	ssize_t ret = write(ctl_fd, buf, len);

	if (ret < 0)
		return errno;
	return ret == len ? 0 : EIO;
}

/*
 * At exit, also by tap_bail(): unlock whatever the module still holds
 * before the test file is released, as the release of a file that did
 * uncached reads waits for the locked folios of its stream.
 */
static void release_held(void)
{
	if (ctl_fd >= 0 && write(ctl_fd, "release", 7) != 7)
		perror("release the held folios");
}

/*
 * Lock the folio of page @index without adopting it (lock-uncached),
 * waiting while the readahead that created it still holds it; bails when
 * it cannot.
 */
static void lock_flagged(int fd, uint64_t index)
{
	long long start = now_ms();
	int err;

	while ((err = ctl("lock-uncached", fd, index)) == EBUSY &&
	       now_ms() - start < LOCK_WAIT_MS)
		usleep(1000);
	if (err)
		tap_bail("%s: lock-uncached of page %llu: %s", HOLD_CTL,
			 (unsigned long long)index, strerror(err));
}

static void unlock_flagged(int fd, uint64_t index)
{
	int err = ctl("unlock", fd, index);

	if (err)
		tap_bail("%s: unlock of page %llu: %s", HOLD_CTL,
			 (unsigned long long)index, strerror(err));
}

static void remove_file(int fd, const char *name)
{
	close(fd);
	unlink(test_path(name));
}

/*
 * The one folio the module holds (ctl reads: the count, then "INDEX
 * PAGES" per folio held).
 */
static struct kept_folio held_folio(void)
{
	unsigned long long count, first, nr;
	char buf[128];
	ssize_t n = pread(ctl_fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		tap_bail("read %s: %s", HOLD_CTL,
			 n < 0 ? strerror(errno) : "empty");
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu %llu", &count, &first, &nr) != 3 ||
	    count != 1 || !nr)
		tap_bail("%s: '%.40s', want one folio held", HOLD_CTL, buf);
	return (struct kept_folio){ .first = first, .nr = nr };
}

/*
 * A cold file, read uncached over [0, HEAD): the readahead it leaves,
 * [HEAD, HEAD + RANGE_LEN) at least, is cached and no longer locked by
 * its I/O (each of its folios taken and released through the module), so
 * the checked read finds no folio locked but the one a case locks.
 * Returns the file and, in @kept, the folio of page KEPT_INDEX; or -1
 * when the readahead left less than that range, or no folio of it on
 * each side of the kept one after the marked folio (the case's @cases
 * results are then reported skipped).
 */
static int file_with_readahead(const char *name, unsigned int seed,
			       int cases, struct kept_folio *kept)
{
	int fd = make_cold_file(test_path(name), FILE_LEN, seed);
	uint64_t end = pages_of(RANGE_OFF + RANGE_LEN), left, pg;
	struct kept_folio mark = { 0, 0 };

	if (!read_range_flags(fd, 0, HEAD, HEAD, RWF_UNCACHED, seed))
		tap_bail("uncached read of [0, %llu) failed",
			 (unsigned long long)HEAD);
	left = nr_cached(fd, RANGE_OFF, RANGE_LEN);
	if (left != pages_of(RANGE_LEN)) {
		diag_cached_pages(fd, 0, FILE_LEN);
		while (cases--)
			tap_skip("%s: the readahead of an uncached read of [0, %llu) left %llu of the %llu pages of [%llu, +%llu) cached: no batch to check",
				 name, (unsigned long long)HEAD,
				 (unsigned long long)left,
				 (unsigned long long)pages_of(RANGE_LEN),
				 (unsigned long long)RANGE_OFF,
				 (unsigned long long)RANGE_LEN);
		remove_file(fd, name);
		return -1;
	}
	for (pg = RANGE_OFF / PAGE_SZ; pg < end; pg++) {
		lock_flagged(fd, pg);
		if (pg == MARK_INDEX)
			mark = held_folio();
		if (pg == KEPT_INDEX)
			*kept = held_folio();
		unlock_flagged(fd, pg);
	}
	if (kept->first <= mark.first + mark.nr ||
	    kept->first + kept->nr >= end) {
		while (cases--)
			tap_skip("%s: the folio of page %llu (pages %llu-%llu) has no neighbour in the batch on each side (marked folio: pages %llu-%llu)",
				 name, (unsigned long long)KEPT_INDEX,
				 (unsigned long long)kept->first,
				 (unsigned long long)(kept->first + kept->nr - 1),
				 (unsigned long long)mark.first,
				 (unsigned long long)(mark.first + mark.nr - 1));
		remove_file(fd, name);
		return -1;
	}
	return fd;
}

/*
 * One case: of [RANGE_OFF, +RANGE_LEN) exactly the pages of the folio
 * that held page KEPT_INDEX before the read (@kept) are cached.
 */
static bool expect_only_kept_folio(int fd, struct kept_folio kept,
				   const char *what)
{
	uint64_t in_range = nr_cached(fd, RANGE_OFF, RANGE_LEN);
	uint64_t of_kept = nr_cached(fd, kept.first * PAGE_SZ,
				     kept.nr * PAGE_SZ);
	bool ok = in_range == kept.nr && of_kept == kept.nr;

	if (!ok)
		diag_cached_pages(fd, RANGE_OFF, RANGE_LEN);
	return tap_result(ok,
			  "%s: only its folio stays of [%llu, +%llu): %llu page(s) cached, %llu of them of the folio of pages %llu-%llu (want %llu and %llu)",
			  what, (unsigned long long)RANGE_OFF,
			  (unsigned long long)RANGE_LEN,
			  (unsigned long long)in_range,
			  (unsigned long long)of_kept,
			  (unsigned long long)kept.first,
			  (unsigned long long)(kept.first + kept.nr - 1),
			  (unsigned long long)kept.nr,
			  (unsigned long long)kept.nr);
}

/* The uncached read of the checked range, in one call; data right. */
static bool read_range(int fd, unsigned int seed)
{
	return read_range_flags(fd, RANGE_OFF, RANGE_LEN, RANGE_LEN,
				RWF_UNCACHED, seed);
}

/* Case 1: the folio is locked by someone else while the read drops. */
static void locked_in_batch(void)
{
	const unsigned int seed = 91;
	struct kept_folio kept;
	int fd = file_with_readahead("locked", seed, 3, &kept);
	long long busy;

	if (fd < 0)
		return;
	lock_flagged(fd, KEPT_INDEX);
	busy = vmstat_counter("uncached_drop_busy");
	tap_result(read_range(fd, seed),
		   "locked: uncached read over the locked folio, data right");
	busy = vmstat_counter("uncached_drop_busy") - busy;
	expect_only_kept_folio(fd, kept, "locked");
	tap_result(busy >= 1,
		   "locked: the read found it locked and left it (uncached_drop_busy +%lld, want >= 1)",
		   busy);
	/* unlocked before the release, which waits for locked folios */
	unlock_flagged(fd, KEPT_INDEX);
	remove_file(fd, "locked");
}

/* Case 2: the folio is mapped (and faulted in) by this process. */
static void mapped_in_batch(void)
{
	const unsigned int seed = 92;
	struct kept_folio kept;
	int fd = file_with_readahead("mapped", seed, 3, &kept);
	const unsigned char *map;

	if (fd < 0)
		return;
	map = mmap(NULL, PAGE_SZ, PROT_READ, MAP_SHARED, fd,
		   KEPT_INDEX * PAGE_SZ);
	if (map == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	if (check_pattern(map, PAGE_SZ, KEPT_INDEX * PAGE_SZ, seed) >= 0)
		tap_bail("the mapped page differs from the file's data");
	tap_result(read_range(fd, seed),
		   "mapped: uncached read over the mapped (adopted) folio, data right");
	expect_only_kept_folio(fd, kept, "mapped");
	tap_result(check_pattern(map, PAGE_SZ, KEPT_INDEX * PAGE_SZ, seed) < 0,
		   "mapped: the mapping still reads the file's data");
	munmap((void *)map, PAGE_SZ);
	remove_file(fd, "mapped");
}

/* Case 3: the folio is redirtied by a buffered write of the same data. */
static void redirtied_in_batch(void)
{
	const unsigned int seed = 93;
	struct kept_folio kept;
	int fd = file_with_readahead("redirtied", seed, 3, &kept);

	if (fd < 0)
		return;
	write_pattern(fd, PAGE_SZ, KEPT_INDEX * PAGE_SZ, seed);
	tap_result(read_range(fd, seed),
		   "redirtied: uncached read over the dirty (adopted) folio, data right");
	expect_only_kept_folio(fd, kept, "redirtied");
	tap_result(!fsync(fd) && verify_pattern(fd, FILE_LEN, 0, seed),
		   "redirtied: fsync, and the file's data right");
	remove_file(fd, "redirtied");
}

int main(int argc, char **argv)
{
	int fd, err;

	test_init(argc, argv);
	tap_plan(9);
	fd = xopen(test_path("probe"), O_RDWR | O_CREAT | O_TRUNC);
	err = uncached_probe(fd);
	if (err)
		tap_bail("RWF_UNCACHED refused: %s", strerror(err));
	remove_file(fd, "probe");
	ctl_fd = open(HOLD_CTL, O_RDWR);
	if (ctl_fd < 0)
		tap_bail("%s: %s (the test module uncached_hold is not loaded)",
			 HOLD_CTL, strerror(errno));
	atexit(release_held);

	locked_in_batch();
	mapped_in_batch();
	redirtied_in_batch();
	close(ctl_fd);
	ctl_fd = -1;
	return tap_finish();
}
