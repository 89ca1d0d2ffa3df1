// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED through Linux AIO: struct iocb's aio_rw_flags carries the
 * flag for IOCB_CMD_PREAD and IOCB_CMD_PWRITE (raw syscalls, no libaio).
 * An uncached read of a cold file returns the data and leaves the range
 * it read uncached (readahead beyond it within the documented bound);
 * uncached writes reach the disk and leave nothing cached once written
 * back; 16 reads submitted at once read the file right and leave nothing;
 * RWF_NOWAIT | RWF_UNCACHED reads a cached file without dropping it; a
 * file without FOP_UNCACHED (tmpfs) gets EOPNOTSUPP. The test kernel has
 * CONFIG_AIO: io_setup() failing, even with ENOSYS, is a failure.
 */
#include "uncached_io.h"

#include <time.h>
#include <linux/aio_abi.h>

#define FILE_LEN	(4ULL << 20)
#define HEAD		(64ULL << 10)	/* the single read */
#define BS		(64 << 10)
#define NR_IOCBS	16
#define BATCH_LEN	((uint64_t)NR_IOCBS * BS)
#define WAIT_SEC	120		/* hang bound for io_getevents() */

static aio_context_t ctx;
static char *bufs[NR_IOCBS];

/* One AIO request as the test sees it: its result, and where it failed. */
struct aio_res {
	long long res;		/* bytes transferred, or -errno */
	bool at_submit;		/* io_submit() refused it (res is -errno) */
};

/*
 * Submit @nr requests of @opcode with aio_rw_flags @flags in one
 * io_submit(): request i moves bufs[i] (BS bytes, pattern @seed filled in
 * for writes) at @off + i * @stride. Waits for every submitted one and
 * stores each result in @res[i].
 */
static void aio_batch(int fd, int opcode, int flags, uint64_t off,
		      uint64_t stride, int nr, unsigned int seed,
		      struct aio_res *res)
{
	struct iocb cbs[NR_IOCBS], *ptrs[NR_IOCBS];
	struct io_event ev[NR_IOCBS];
	struct timespec ts = { .tv_sec = WAIT_SEC };
	long ret, got = 0, n;
	int i;

	for (i = 0; i < nr; i++) {
		uint64_t pos = off + i * stride;

		if (opcode == IOCB_CMD_PWRITE)
			fill_pattern(bufs[i], BS, pos, seed);
		else
			memset(bufs[i], 0, BS);
		memset(&cbs[i], 0, sizeof(cbs[i]));
		cbs[i].aio_data = i;
		cbs[i].aio_lio_opcode = opcode;
		cbs[i].aio_rw_flags = flags;
		cbs[i].aio_fildes = fd;
		cbs[i].aio_buf = (uintptr_t)bufs[i];
		cbs[i].aio_nbytes = BS;
		cbs[i].aio_offset = pos;
		ptrs[i] = &cbs[i];
		res[i].res = -EINPROGRESS;
		res[i].at_submit = false;
	}
	ret = syscall(__NR_io_submit, ctx, nr, ptrs);
	if (ret < 0)
		ret = -errno;
	/* a refused first request fails the call; later ones end the batch */
	for (i = ret < 0 ? 0 : ret; i < nr; i++) {
		res[i].res = ret < 0 && i == 0 ? ret : -ECANCELED;
		res[i].at_submit = true;
	}
	while (ret > 0 && got < ret) {
		n = syscall(__NR_io_getevents, ctx, ret - got, ret - got, ev,
			    &ts);
		if (n <= 0)
			tap_bail("io_getevents: %ld of %ld events (%s)", got,
				 ret, n < 0 ? strerror(errno) : "timed out");
		for (i = 0; i < n; i++)
			if (ev[i].data < (uint64_t)nr)
				res[ev[i].data].res = (long long)ev[i].res;
		got += n;
	}
}

/* Say what an AIO request returned. */
static const char *res_str(const struct aio_res *r)
{
	static char s[96];

	if (r->res >= 0)
		snprintf(s, sizeof(s), "%lld bytes", r->res);
	else
		snprintf(s, sizeof(s), "%s from %s", strerror(-r->res),
			 r->at_submit ? "io_submit" : "the event");
	return s;
}

/*
 * Do the @nr requests of a batch all move BS bytes (and, for reads, bring
 * pattern @seed)? Reports the first few that do not.
 */
static bool batch_ok(const struct aio_res *res, int nr, bool read,
		     uint64_t off, uint64_t stride, unsigned int seed)
{
	int i, bad = 0;

	for (i = 0; i < nr; i++) {
		uint64_t pos = off + i * stride;
		bool ok = res[i].res == BS;

		if (ok && read && check_pattern(bufs[i], BS, pos, seed) >= 0) {
			tap_diag("request %d at %llu: data mismatch", i,
				 (unsigned long long)pos);
			ok = false;
		} else if (!ok) {
			tap_diag("request %d at %llu: %s", i,
				 (unsigned long long)pos, res_str(&res[i]));
		}
		if (!ok && ++bad >= 5)
			break;
	}
	return !bad;
}

/* One uncached 64 KiB read of a cold file: the range read stays uncached. */
static void single_read(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, 81);
	uint64_t left, bound = uncached_ra_leftover_bound(fd, HEAD);
	struct aio_res res;

	aio_batch(fd, IOCB_CMD_PREAD, RWF_UNCACHED, 0, 0, 1, 81, &res);
	tap_result(batch_ok(&res, 1, true, 0, 0, 81),
		   "one uncached read of a cold file: %s, data right",
		   res_str(&res));
	expect_cached(fd, 0, HEAD, 0, "one uncached read: the range read");
	left = nr_cached(fd, HEAD, FILE_LEN - HEAD) * PAGE_SZ;
	if (left > bound)
		diag_cached_pages(fd, HEAD, FILE_LEN - HEAD);
	tap_result(left <= bound,
		   "one uncached read: %llu KiB read ahead beyond it stay cached (bound %llu KiB)",
		   (unsigned long long)(left >> 10),
		   (unsigned long long)(bound >> 10));
	close(fd);
}

/* Uncached writes of a new file, NR_IOCBS at once, four batches. */
static void write_cases(const char *path)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	struct aio_res res[NR_IOCBS];
	uint64_t off;
	bool ok = true;

	for (off = 0; off < FILE_LEN && ok; off += BATCH_LEN) {
		aio_batch(fd, IOCB_CMD_PWRITE, RWF_UNCACHED, off, BS, NR_IOCBS,
			  82, res);
		ok = batch_ok(res, NR_IOCBS, false, off, BS, 82);
	}
	tap_result(ok, "uncached writes of a new 4 MiB file, %d per io_submit, complete",
		   NR_IOCBS);
	expect_settled(fd, 0, FILE_LEN, 0, "uncached writes");
	drop_caches();
	tap_result(read_range_flags(fd, 0, FILE_LEN, 1 << 20, 0, 82),
		   "uncached writes: data right after drop_caches");
	close(fd);
}

/* NR_IOCBS uncached reads of a cold 1 MiB file in one io_submit(). */
static void many_reads(const char *path)
{
	int fd = make_cold_file(path, BATCH_LEN, 83);
	struct aio_res res[NR_IOCBS];

	aio_batch(fd, IOCB_CMD_PREAD, RWF_UNCACHED, 0, BS, NR_IOCBS, 83, res);
	tap_result(batch_ok(res, NR_IOCBS, true, 0, BS, 83),
		   "%d uncached reads of 64 KiB in one io_submit: all complete, data right",
		   NR_IOCBS);
	expect_cached(fd, 0, BATCH_LEN, 0, "16 uncached reads: whole file");
	close(fd);
}

/*
 * RWF_NOWAIT | RWF_UNCACHED reads: of a fully cached file it succeeds and
 * drops nothing; of a cold file it returns data or EAGAIN.
 */
static void nowait_reads(const char *path)
{
	const int flags = RWF_UNCACHED | RWF_NOWAIT;
	int fd = make_cold_file(path, FILE_LEN, 84);
	struct aio_res res;

	if (!read_range_flags(fd, 0, FILE_LEN, 1 << 20, 0, 84))
		tap_bail("buffered read of %s failed", path);
	aio_batch(fd, IOCB_CMD_PREAD, flags, 0, 0, 1, 84, &res);
	tap_result(batch_ok(&res, 1, true, 0, 0, 84),
		   "NOWAIT uncached read of a cached file: %s, data right",
		   res_str(&res));
	expect_cached(fd, 0, FILE_LEN, pages_of(FILE_LEN),
		      "NOWAIT uncached read of a cached file: whole file");

	evict_file(fd, FILE_LEN);
	aio_batch(fd, IOCB_CMD_PREAD, flags, 0, 0, 1, 84, &res);
	if (res.res == -EAGAIN)
		tap_diag("NOWAIT uncached read of a cold file: EAGAIN");
	else if (res.res > 0)
		tap_diag("NOWAIT uncached read of a cold file: returned data");
	tap_result(res.res == -EAGAIN ||
		   (res.res > 0 && res.res <= BS &&
		    check_pattern(bufs[0], res.res, 0, 84) < 0),
		   "NOWAIT uncached read of a cold file: data right or EAGAIN (%s)",
		   res_str(&res));
	diag_cachestat("after the NOWAIT read of the cold file",
		       file_cachestat(fd, 0, FILE_LEN));
	close(fd);
}

/* A file without FOP_UNCACHED: io_submit or the event says EOPNOTSUPP. */
static void unsupported(void)
{
	const char *path = "/tmp/uncached-aio";
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	struct aio_res res;

	unlink(path);
	write_pattern(fd, BS, 0, 85);
	aio_batch(fd, IOCB_CMD_PREAD, RWF_UNCACHED, 0, 0, 1, 85, &res);
	tap_result(res.res == -EOPNOTSUPP,
		   "uncached read on tmpfs fails with %s (got %s)",
		   strerror(EOPNOTSUPP), res_str(&res));
	aio_batch(fd, IOCB_CMD_PWRITE, RWF_UNCACHED, 0, 0, 1, 85, &res);
	tap_result(res.res == -EOPNOTSUPP,
		   "uncached write on tmpfs fails with %s (got %s)",
		   strerror(EOPNOTSUPP), res_str(&res));
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;
	int i, err;

	test_init(argc, argv);
	path = test_path("uncached-aio");
	for (i = 0; i < NR_IOCBS; i++)
		bufs[i] = xmalloc(BS);
	tap_plan(14);
	err = syscall(__NR_io_setup, NR_IOCBS, &ctx) ? errno : 0;
	if (!tap_result(!err, "io_setup(%d) succeeds (%s)", NR_IOCBS,
			err ? strerror(err) : "no error"))
		tap_bail("no AIO context: the test kernel must have CONFIG_AIO");
	single_read(path);
	write_cases(path);
	many_reads(path);
	nowait_reads(path);
	unsupported();
	if (syscall(__NR_io_destroy, ctx))
		tap_diag("io_destroy: %s", strerror(errno));
	unlink(path);
	return tap_finish();
}
