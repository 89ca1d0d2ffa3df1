// SPDX-License-Identifier: GPL-2.0
/*
 * The /proc/vmstat counters of uncached IO, in folios: uncached_read_drop
 * (dropped by uncached reads), uncached_write_drop (dropped after the
 * writeback of uncached writes, the RWF_DSYNC drop included), and the
 * drops skipped or refused: uncached_drop_busy (folio lock contended),
 * uncached_drop_dirty (dirty or under writeback again), uncached_drop_mapped
 * (mapped), uncached_drop_refused (->release_folio() refused, kept flagged
 * for a retry), uncached_drop_gave_up (retries exhausted, left to reclaim).
 * All seven exist; an uncached read of a cold file counts read drops, a
 * buffered read none; uncached writes count write drops once written back,
 * with RWF_DSYNC before the call returns. An 8 MiB file has at most 2048
 * folios, so one pass over it counts at most 2048 drops.
 */
#include "uncached_io.h"

#define FILE_LEN	(8ULL << 20)
#define MAX_FOLIOS	(FILE_LEN / PAGE_SZ)
#define DSYNC_LEN	(1ULL << 20)
#define BS		(64 << 10)

static const char *const counters[] = {
	"uncached_read_drop",
	"uncached_write_drop",
	"uncached_drop_busy",
	"uncached_drop_dirty",
	"uncached_drop_mapped",
	"uncached_drop_refused",
	"uncached_drop_gave_up",
};

/*
 * One case: counter @name grew by @min to @max from @before (-1: it is
 * missing) to now.
 */
static bool expect_growth(const char *name, long long before, long long min,
			  long long max, const char *what)
{
	long long now = vmstat_counter(name);
	long long delta = now - before;

	if (before < 0 || now < 0)
		return tap_result(false, "%s: %s is missing", what, name);
	return tap_result(delta >= min && delta <= max,
			  "%s: %s grew by %lld (want %lld to %lld)", what,
			  name, delta, min, max);
}

static void all_present(void)
{
	char missing[512] = "";
	size_t i;

	for (i = 0; i < ARRAY_SIZE(counters); i++)
		if (vmstat_counter(counters[i]) < 0)
			snprintf(missing + strlen(missing),
				 sizeof(missing) - strlen(missing), " %s",
				 counters[i]);
	tap_result(!missing[0], "/proc/vmstat has all %zu uncached counters%s%s",
		   ARRAY_SIZE(counters), missing[0] ? "; missing:" : "",
		   missing);
}

static void read_cases(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, 111);
	long long before = vmstat_counter("uncached_read_drop");

	tap_result(read_range_flags(fd, 0, FILE_LEN, BS, RWF_UNCACHED, 111),
		   "uncached read of a cold 8 MiB file, data right");
	expect_growth("uncached_read_drop", before, 1, MAX_FOLIOS,
		      "uncached read");
	close(fd);

	fd = make_cold_file(path, FILE_LEN, 112);
	before = vmstat_counter("uncached_read_drop");
	tap_result(read_range_flags(fd, 0, FILE_LEN, BS, 0, 112),
		   "buffered read of a cold 8 MiB file, data right");
	expect_growth("uncached_read_drop", before, 0, 0, "buffered read");
	close(fd);
}

static void write_cases(const char *path)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	long long before = vmstat_counter("uncached_write_drop");

	tap_result(write_range_flags(fd, 0, FILE_LEN, BS, RWF_UNCACHED, 113),
		   "uncached write of a new 8 MiB file");
	expect_settled(fd, 0, FILE_LEN, 0, "uncached write");
	expect_growth("uncached_write_drop", before, 1, MAX_FOLIOS,
		      "uncached write, written back");
	close(fd);

	/* RWF_DSYNC: dropped before the call returns, no waiting */
	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	before = vmstat_counter("uncached_write_drop");
	tap_result(write_range_flags(fd, 0, DSYNC_LEN, DSYNC_LEN,
				     RWF_UNCACHED | RWF_DSYNC, 114),
		   "RWF_DSYNC uncached write of 1 MiB to a new file");
	expect_growth("uncached_write_drop", before, 1, DSYNC_LEN / PAGE_SZ,
		      "RWF_DSYNC write, right after the call");
	expect_cached(fd, 0, DSYNC_LEN, 0, "RWF_DSYNC write, right after the call");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;
	size_t i;
	int fd, err;

	test_init(argc, argv);
	path = test_path("uncached-vmstat");
	tap_plan(12);
	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	err = uncached_probe(fd);
	tap_result(!err, "the file takes RWF_UNCACHED (%s)",
		   err ? strerror(err) : "no error");
	close(fd);
	all_present();
	read_cases(path);
	write_cases(path);
	for (i = 0; i < ARRAY_SIZE(counters); i++)
		tap_diag("%s %lld", counters[i], vmstat_counter(counters[i]));
	unlink(path);
	return tap_finish();
}
