// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED on a raw block device (argv[1], a disk of its own whose
 * contents the test overwrites): the behavioural groups of the file tests,
 * asserted on cachestat() of the device's page cache and, for what reached
 * the medium, on O_DIRECT reads from a second fd. Each group works in a
 * 16 MiB slot of its own, written with O_DIRECT and evicted first:
 *
 * - reads: a cold range is read right and leaves nothing cached in it
 *   (read-ahead beyond it: at most uncached_ra_leftover_bound()), a warm
 *   range stays cached, a half-warm one keeps exactly its warm half;
 * - writes: a cold range is dropped once written back and is on the
 *   medium, a cached range stays cached with the new data, unaligned
 *   writes of 1, 512 and 4097 bytes (read-modify-write of blocks that are
 *   not cached) leave nothing cached and the right bytes on the medium;
 * - io_uring reads and writes; RWF_NOWAIT reads of a cached range;
 *   RWF_DSYNC writes (nothing cached and on the medium when they return);
 *   read-ahead leftovers adopted by a buffered read stay cached; an
 *   O_DIRECT fd with RWF_UNCACHED caches nothing;
 * - a buffered and an uncached writer of interleaved 4 KiB blocks of one
 *   range with an uncached and a buffered reader checking every word;
 * - memory pressure: an uncached read of the whole device (larger than
 *   RAM) grows the block devices' page cache ("Buffers") by less than 10%
 *   of RAM; a buffered read (the control) grows it by 40% of RAM.
 */
#include "uncached_blockdev.h"

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>

#define MIB		(1ULL << 20)
#define SLOT		(16 * MIB)
#define LEN		(8 * MIB)	/* the range a group works on */
#define BS		(64 << 10)
#define HEAD		MIB		/* adoption: the first uncached read */
#define SHORT_LEN	(2 * MIB)	/* DSYNC and O_DIRECT groups */
#define QD		16
#define CC_BLOCK	4096
#define CC_NBLK		(LEN / CC_BLOCK)
#define CC_ROUNDS	8
#define CC_MAX_READ	(256 << 10)
#define MAX_DIAGS	10
#define NR_CASES	59

enum slot {
	S_PROBE, S_COLD, S_WARM, S_HALF, S_WRITE, S_OVERWRITE, S_UNALIGNED,
	S_URING_W, S_URING_R, S_NOWAIT, S_DSYNC, S_ADOPT, S_DIRECT, S_SHARED,
	NR_SLOTS
};

static int fd, dfd;		/* the device: buffered, O_DIRECT */
static uint64_t dev_size;
static struct io_uring ring;

/* Pages cached in [off, off + len) (cachestat of len 0 means "to EOF"). */
static uint64_t range_cached(uint64_t off, uint64_t len)
{
	return len ? nr_cached(fd, off, len) : 0;
}

/* LEN bytes of pattern @seed on the medium at slot @s, none of it cached. */
static uint64_t cold_slot(enum slot s, unsigned int seed)
{
	uint64_t off = (uint64_t)s * SLOT;

	if (!bdev_dio_pattern(dfd, true, off, LEN, 0, seed))
		tap_bail("cannot write slot %d with O_DIRECT", s);
	bdev_evict(fd, off, SLOT);
	return off;
}

/*
 * A buffered read of exactly [off, off + len), no read-ahead (a second fd
 * with POSIX_FADV_RANDOM), checking pattern @seed.
 */
static bool buffered_read_exact(uint64_t off, uint64_t len, unsigned int seed)
{
	int rfd = xopen(test_dir, O_RDONLY);
	bool ok = !posix_fadvise(rfd, 0, 0, POSIX_FADV_RANDOM) &&
		  read_range_flags(rfd, off, len, BS, 0, seed);

	close(rfd);
	return ok;
}

/*
 * An uncached stream of @bs calls stopped at @end (inside a slot): what it
 * read ahead in the rest of the slot is at most uncached_ra_leftover_bound().
 */
static void expect_leftover(uint64_t end, size_t bs, const char *what)
{
	uint64_t slot_end = end - end % SLOT + SLOT;
	uint64_t left = range_cached(end, slot_end - end) * PAGE_SZ;
	uint64_t bound = uncached_ra_leftover_bound(fd, bs);

	if (left > bound)
		diag_cached_pages(fd, end, slot_end - end);
	tap_result(left <= bound,
		   "%s: %llu KiB read ahead beyond the range stay cached (bound %llu KiB)",
		   what, (unsigned long long)(left >> 10),
		   (unsigned long long)(bound >> 10));
}

/* The flag is checked at the end of the device, where nothing is read or written. */
static void probe(void)
{
	int rerr = bdev_probe_read(fd, dev_size), werr;
	char c = 0;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	ssize_t ret;

	tap_result(!rerr, "preadv2(RWF_UNCACHED) at the end of %s returns 0 (%s)",
		   test_dir, rerr ? strerror(rerr) : "the flag is taken");
	ret = pwritev2(fd, &iov, 1, dev_size, RWF_UNCACHED);
	werr = ret < 0 ? errno : 0;
	tap_result(werr == ENOSPC,
		   "pwritev2(RWF_UNCACHED) at the end of %s fails with ENOSPC, the flag taken (got %zd, %s)",
		   test_dir, ret, werr ? strerror(werr) : "no error");
	if (rerr || werr != ENOSPC)
		tap_bail("RWF_UNCACHED does not work on %s (a kernel without uncached I/O on block devices?)",
			 test_dir);
}

static void cold_read(void)
{
	uint64_t off = cold_slot(S_COLD, 1);

	tap_result(read_range_flags(fd, off, LEN, BS, RWF_UNCACHED, 1),
		   "cold read: uncached read of 8 MiB, data right");
	expect_cached(fd, off, LEN, 0, "cold read: the range read");
	expect_leftover(off + LEN, BS, "cold read");
}

static void warm_read(void)
{
	uint64_t off = cold_slot(S_WARM, 2);

	if (!read_range_flags(fd, off, LEN, BS, 0, 2))
		tap_bail("warm read: buffered read failed");
	expect_cached(fd, off, LEN, pages_of(LEN), "warm read: after a buffered read");
	tap_result(read_range_flags(fd, off, LEN, BS, RWF_UNCACHED, 2),
		   "warm read: uncached read of the cached range, data right");
	expect_cached(fd, off, LEN, pages_of(LEN), "warm read: after the uncached read");
}

static void half_warm(void)
{
	uint64_t off = cold_slot(S_HALF, 3), half = LEN / 2, warm, cold;

	if (!buffered_read_exact(off, half, 3))
		tap_bail("half warm: buffered read failed");
	warm = range_cached(off, half);
	cold = range_cached(off + half, SLOT - half);
	tap_result(warm == pages_of(half) && !cold,
		   "half warm: first half cached (%llu of %llu pages), the rest of the slot not (%llu)",
		   (unsigned long long)warm, (unsigned long long)pages_of(half),
		   (unsigned long long)cold);
	tap_result(read_range_flags(fd, off, LEN, BS, RWF_UNCACHED, 3),
		   "half warm: uncached read of the whole range, data right");
	expect_cached(fd, off, half, pages_of(half), "half warm: the warm half");
	expect_cached(fd, off + half, half, 0, "half warm: the cold half");
}

static void write_cold(void)
{
	uint64_t off = cold_slot(S_WRITE, 4);

	tap_result(write_range_flags(fd, off, LEN, BS, RWF_UNCACHED, 5),
		   "cold write: uncached write of 8 MiB over blocks not cached");
	expect_settled(fd, off, LEN, 0, "cold write");
	tap_result(bdev_dio_pattern(dfd, false, off, LEN, 0, 5),
		   "cold write: the medium holds the data (O_DIRECT read-back)");
}

static void overwrite_cached(void)
{
	uint64_t off = cold_slot(S_OVERWRITE, 6);

	if (!read_range_flags(fd, off, LEN, BS, 0, 6))
		tap_bail("overwrite cached: buffered read failed");
	tap_result(write_range_flags(fd, off, LEN, BS, RWF_UNCACHED, 7),
		   "overwrite cached: uncached write of 8 MiB over a cached range");
	expect_settled(fd, off, LEN, pages_of(LEN), "overwrite cached");
	tap_result(read_range_flags(fd, off, LEN, BS, 0, 7),
		   "overwrite cached: the cached pages hold the new data");
	tap_result(bdev_dio_pattern(dfd, false, off, LEN, 0, 7),
		   "overwrite cached: the medium holds the new data (O_DIRECT read-back)");
}

/* Unaligned writes: offset inside a page, length; each in its own MiB. */
static const struct {
	uint64_t in_page;
	size_t len;
} unaligned[] = {
	{ 1001, 1 },		/* inside one block */
	{ 3777, 512 },		/* the end of one block, the start of the next */
	{ 2049, 4097 },		/* parts of two blocks */
};

/*
 * The medium around [off, off + len), one page before and after: pattern
 * @seed in it, the slot's pattern @old elsewhere.
 */
static bool medium_around(uint64_t off, size_t len, unsigned int seed,
			  unsigned int old)
{
	uint64_t first = off / PAGE_SZ * PAGE_SZ - PAGE_SZ;
	size_t n = (pages_of(off + len) + 1) * PAGE_SZ - first;
	unsigned char *buf = bdev_memalign(n), *want = xmalloc(n);
	bool ok = bdev_dio(dfd, false, buf, n, first, 0);
	size_t i;

	fill_pattern(want, n, first, old);
	fill_pattern(want + (off - first), len, off, seed);
	for (i = 0; ok && i < n; i++)
		if (buf[i] != want[i]) {
			tap_diag("medium: byte at %llu is %#x, want %#x",
				 (unsigned long long)(first + i), buf[i], want[i]);
			ok = false;
		}
	free(buf);
	free(want);
	return ok;
}

static void unaligned_writes(void)
{
	uint64_t base = cold_slot(S_UNALIGNED, 8);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(unaligned); i++) {
		uint64_t off = base + i * MIB + 5 * PAGE_SZ + unaligned[i].in_page;
		size_t len = unaligned[i].len;
		char *buf = xmalloc(len), what[80];
		ssize_t ret;

		snprintf(what, sizeof(what), "unaligned: %zu byte(s) at %llu",
			 len, (unsigned long long)off);
		bdev_evict(fd, base, SLOT);
		ret = rw_once(fd, true, buf, len, off, RWF_UNCACHED, 9 + i);
		tap_result(ret == (ssize_t)len, "%s: pwritev2(RWF_UNCACHED) returns %zd (%s)",
			   what, ret, ret < 0 ? strerror(errno) : "no error");
		expect_settled(fd, off, len, 0, what);
		diag_cachestat("the whole slot", file_cachestat(fd, base, SLOT));
		tap_result(medium_around(off, len, 9 + i, 8),
			   "%s: the medium holds the bytes written and the old data around them (O_DIRECT)",
			   what);
		free(buf);
	}
}

struct uring_req {
	struct iovec iov;
	uint64_t off;
};

/* Queue one uncached request of BS bytes: vectored for every other block. */
static void uring_queue(bool write, struct uring_req *r, uint64_t off,
			unsigned int seed)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	bool vec = !(off / BS % 2);

	if (!sqe)
		tap_bail("no free SQE");
	r->off = off;
	if (write) {
		fill_pattern(r->iov.iov_base, BS, off, seed);
		if (vec)
			io_uring_prep_writev(sqe, fd, &r->iov, 1, off);
		else
			io_uring_prep_write(sqe, fd, r->iov.iov_base, BS, off);
	} else {
		memset(r->iov.iov_base, 0, BS);
		if (vec)
			io_uring_prep_readv(sqe, fd, &r->iov, 1, off);
		else
			io_uring_prep_read(sqe, fd, r->iov.iov_base, BS, off);
	}
	sqe->rw_flags = RWF_UNCACHED;
	io_uring_sqe_set_data(sqe, r);
}

/*
 * Uncached reads or writes of [base, base + LEN) through io_uring, QD in
 * flight. True when all transferred BS bytes (and reads gave pattern @seed).
 */
static bool uring_pass(bool write, uint64_t base, unsigned int seed)
{
	static struct uring_req reqs[QD];
	uint64_t next = 0, done = 0, n = LEN / BS;
	struct io_uring_cqe *cqe;
	struct uring_req *r;
	unsigned int bad = 0;
	int i, ret;

	for (i = 0; i < QD && next < n; i++, next++) {
		if (!reqs[i].iov.iov_base) {
			reqs[i].iov.iov_base = xmalloc(BS);
			reqs[i].iov.iov_len = BS;
		}
		uring_queue(write, &reqs[i], base + next * BS, seed);
	}
	for (; done < n; done++) {
		ret = io_uring_submit(&ring);
		if (ret < 0)
			tap_bail("io_uring_submit: %s", strerror(-ret));
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret)
			tap_bail("io_uring_wait_cqe: %s", strerror(-ret));
		r = io_uring_cqe_get_data(cqe);
		if (cqe->res != BS ||
		    (!write && check_pattern(r->iov.iov_base, BS, r->off, seed) >= 0)) {
			if (bad++ < MAX_DIAGS)
				tap_diag("io_uring %s at %llu: res %d (%s)",
					 write ? "write" : "read",
					 (unsigned long long)r->off, cqe->res,
					 cqe->res < 0 ? strerror(-cqe->res) :
					 cqe->res == BS ? "data mismatch" : "short");
		}
		io_uring_cqe_seen(&ring, cqe);
		if (next < n)
			uring_queue(write, r, base + next++ * BS, seed);
	}
	return !bad;
}

/*
 * io_uring writes are dropped after writeback. Reads in flight share the
 * device's read-ahead state: at most one window per read in flight stays
 * in the range, plus what the stream read ahead beyond it.
 */
static void uring_rw(void)
{
	uint64_t woff = cold_slot(S_URING_W, 14), roff = cold_slot(S_URING_R, 16);
	uint64_t window = file_ra_window(fd), bound, left;

	if (window < BS)
		window = BS;
	bound = QD * window + uncached_ra_leftover_bound(fd, BS);

	tap_result(uring_pass(true, woff, 15),
		   "io_uring: %llu uncached writes of 64 KiB (WRITEV and WRITE), %d in flight, complete",
		   LEN / BS, QD);
	expect_settled(fd, woff, LEN, 0, "io_uring writes");
	tap_result(bdev_dio_pattern(dfd, false, woff, LEN, 0, 15),
		   "io_uring writes: the medium holds the data (O_DIRECT read-back)");
	tap_result(uring_pass(false, roff, 16),
		   "io_uring: %llu uncached reads of 64 KiB (READV and READ), %d in flight, data right",
		   LEN / BS, QD);
	left = range_cached(roff, SLOT) * PAGE_SZ;
	if (left > bound)
		diag_cached_pages(fd, roff, SLOT);
	tap_result(left <= bound,
		   "io_uring reads: %llu KiB of the slot stay cached (bound %d x %llu KiB + %llu KiB)",
		   (unsigned long long)(left >> 10), QD,
		   (unsigned long long)(window >> 10),
		   (unsigned long long)(uncached_ra_leftover_bound(fd, BS) >> 10));
}

static void nowait_read(void)
{
	uint64_t off = cold_slot(S_NOWAIT, 17), warm;

	warm = buffered_read_exact(off, LEN, 17) ? range_cached(off, LEN) : 0;
	tap_result(warm == pages_of(LEN),
		   "nowait: a buffered read caches the range (%llu of %llu pages)",
		   (unsigned long long)warm, (unsigned long long)pages_of(LEN));
	tap_result(read_range_flags(fd, off, LEN, BS, RWF_NOWAIT | RWF_UNCACHED, 17),
		   "nowait: RWF_NOWAIT|RWF_UNCACHED reads of the cached range succeed, data right");
	expect_cached(fd, off, LEN, pages_of(LEN), "nowait: after the uncached NOWAIT reads");
}

/* Nothing of a DSYNC uncached write is cached once it returned, and it is on the medium. */
static void dsync_write(void)
{
	uint64_t off = cold_slot(S_DSYNC, 18), pos;
	unsigned int failed = 0, left = 0;
	char *buf = xmalloc(BS);
	ssize_t ret;

	for (pos = off; pos < off + SHORT_LEN; pos += BS) {
		ret = rw_once(fd, true, buf, BS, pos, RWF_DSYNC | RWF_UNCACHED, 19);
		if (ret != BS) {
			if (!failed++)
				tap_diag("dsync: pwritev2 at %llu: %zd (%s)",
					 (unsigned long long)pos, ret,
					 ret < 0 ? strerror(errno) : "short");
		} else if (range_cached(pos, BS) && !left++) {
			diag_cachestat("dsync: the first write that left pages",
				       file_cachestat(fd, pos, BS));
		}
	}
	tap_result(!failed, "dsync: %llu RWF_DSYNC|RWF_UNCACHED writes of 64 KiB succeed (%u failed)",
		   SHORT_LEN / BS, failed);
	tap_result(!left, "dsync: none returned with pages of its range cached (%u of %llu did)",
		   left, SHORT_LEN / BS);
	expect_settled(fd, off, SHORT_LEN, 0, "dsync: settled");
	tap_result(bdev_dio_pattern(dfd, false, off, SHORT_LEN, 0, 19),
		   "dsync: the medium holds the data (O_DIRECT read-back, no fsync)");
	free(buf);
}

/*
 * An uncached read of the first HEAD bytes leaves read-ahead folios behind
 * it; a buffered read of them adopts them (and its own pages are ordinary
 * cached pages): an uncached read of the whole range keeps every page that
 * was cached after the buffered read, and drops all others.
 */
static void adopt_leftovers(void)
{
	uint64_t off = cold_slot(S_ADOPT, 20), bound = uncached_ra_leftover_bound(fd, BS);
	uint64_t i, n = pages_of(LEN), nleft = 0, span = 0, nwarm = 0, kept = 0, other = 0;
	unsigned char *warm, *after;

	tap_result(read_range_flags(fd, off, HEAD, BS, RWF_UNCACHED, 20),
		   "adoption: uncached read of the first 1 MiB, data right");
	warm = bdev_residency(fd, off, LEN);
	for (i = pages_of(HEAD); i < n; i++)
		if (warm[i]) {
			nleft++;
			span = i + 1 - pages_of(HEAD);
		}
	tap_result(nleft && span * PAGE_SZ <= bound,
		   "adoption: it left %llu pages read ahead, within %llu KiB beyond it (want > 0, bound %llu KiB)",
		   (unsigned long long)nleft, (unsigned long long)(span * PAGE_SZ >> 10),
		   (unsigned long long)(bound >> 10));
	tap_result(buffered_read_exact(off + HEAD, span * PAGE_SZ, 20),
		   "adoption: a buffered read of those %llu KiB, data right",
		   (unsigned long long)(span * PAGE_SZ >> 10));
	free(warm);
	warm = bdev_residency(fd, off, LEN);
	tap_result(read_range_flags(fd, off, LEN, BS, RWF_UNCACHED, 20),
		   "adoption: uncached read of the whole 8 MiB, data right");
	after = bdev_residency(fd, off, LEN);
	for (i = 0; i < n; i++) {
		nwarm += warm[i];
		kept += warm[i] && after[i];
		other += !warm[i] && after[i];
	}
	tap_result(nwarm >= nleft && kept == nwarm,
		   "adoption: %llu of the %llu pages cached after the buffered read stay cached",
		   (unsigned long long)kept, (unsigned long long)nwarm);
	if (other)
		diag_cached_pages(fd, off, LEN);
	tap_result(!other, "adoption: no other page of the range is cached (%llu)",
		   (unsigned long long)other);
	free(warm);
	free(after);
}

/* RWF_UNCACHED on an O_DIRECT fd: direct I/O, nothing cached. */
static void direct_uncached(void)
{
	uint64_t off = cold_slot(S_DIRECT, 21);

	tap_result(bdev_dio_pattern(dfd, true, off, SHORT_LEN, RWF_UNCACHED, 22),
		   "O_DIRECT fd: pwritev2(RWF_UNCACHED) of 2 MiB in 1 MiB calls succeeds");
	expect_cached(fd, off, SHORT_LEN, 0, "O_DIRECT fd: right after the writes");
	tap_result(bdev_dio_pattern(dfd, false, off, SHORT_LEN, RWF_UNCACHED, 22),
		   "O_DIRECT fd: preadv2(RWF_UNCACHED) returns the data");
	expect_cached(fd, off, SHORT_LEN, 0, "O_DIRECT fd: after the reads");
}

/*
 * Shared range: block b (4 KiB) of round r holds words of generation
 * cc_gen(r, b % 2); round 0 is written with O_DIRECT, rounds 1..CC_ROUNDS
 * by the buffered writer (even blocks) and the uncached writer (odd
 * blocks). Generations stay below 256: one byte of a word changes between
 * rounds, so even a copy racing a write byte by byte gives a valid word.
 */
struct cc_writer {
	int parity, flags;
	atomic_long cur, done;	/* the round under way, the last completed */
	long errors;
	pthread_t thread;
};

struct cc_reader {
	const char *name;
	int flags;
	uint64_t rng;
	long reads, overlapping, bad;
	pthread_t thread;
};

static struct cc_writer cc_writers[2];
static struct cc_reader cc_readers[2] = {
	{ .name = "uncached reader", .flags = RWF_UNCACHED, .rng = 101 },
	{ .name = "buffered reader", .flags = 0, .rng = 202 },
};
static atomic_bool cc_finished;
static uint64_t cc_base;

static uint32_t cc_gen(long round, int parity)
{
	return 2 * round + 2 + parity;
}

/* A diagnostic from a thread: its lines kept together. */
#define cc_diag(...)				\
	do {					\
		flockfile(stdout);		\
		tap_diag(__VA_ARGS__);		\
		funlockfile(stdout);		\
	} while (0)

/*
 * Words of [off, off + len) in @w: each of its own offset, of its block's
 * writer and of a round of that writer in [lo[p], hi[p]]. Returns the
 * number of bad words.
 */
static long cc_check(const uint64_t *w, uint64_t off, size_t len,
		     const long lo[2], const long hi[2], long *diags)
{
	long bad = 0;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		uint64_t pos = off + i * 8;
		int p = (pos - cc_base) / CC_BLOCK % 2;
		long gen = word_gen(w[i], pos);
		long round = gen >= 2 && gen % 2 == p ? (gen - 2) / 2 : -1;

		if (round >= lo[p] && round <= hi[p])
			continue;
		if (!bad++ && (*diags)++ < MAX_DIAGS)
			cc_diag("word at %llu is %#llx, want a word of its offset, generation of round %ld..%ld of the %s writer",
				(unsigned long long)pos, (unsigned long long)w[i],
				lo[p], hi[p], p ? "uncached" : "buffered");
	}
	return bad;
}

static void *cc_writer_main(void *arg)
{
	static uint32_t orders[2][CC_NBLK / 2];
	struct cc_writer *w = arg;
	uint32_t *order = orders[w->parity], i, j, t;
	uint64_t rng = 303 + w->parity, buf[CC_BLOCK / 8], pos;
	struct iovec iov = { .iov_base = buf, .iov_len = CC_BLOCK };
	int wfd = xopen(test_dir, O_RDWR);
	long round;

	for (i = 0; i < CC_NBLK / 2; i++)
		order[i] = i;
	for (round = 1; round <= CC_ROUNDS; round++) {
		atomic_store(&w->cur, round);
		for (i = CC_NBLK / 2 - 1; i > 0; i--) {
			j = rand64(&rng) % (i + 1);
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < CC_NBLK / 2; i++) {
			pos = cc_base + (2 * (uint64_t)order[i] + w->parity) * CC_BLOCK;
			fill_words(buf, CC_BLOCK, pos, cc_gen(round, w->parity));
			if (pwritev2(wfd, &iov, 1, pos, w->flags) != CC_BLOCK &&
			    !w->errors++)
				cc_diag("writer %d: round %ld at %llu: %s", w->parity,
					round, (unsigned long long)pos, strerror(errno));
		}
		/* write back while the other writer keeps writing */
		if (round % 2 == w->parity && fsync(wfd) && !w->errors++)
			cc_diag("writer %d: fsync: %s", w->parity, strerror(errno));
		atomic_store(&w->done, round);
	}
	close(wfd);
	return NULL;
}

static void *cc_reader_main(void *arg)
{
	struct cc_reader *r = arg;
	uint64_t *buf = xmalloc(CC_MAX_READ), off;
	int rfd = xopen(test_dir, O_RDONLY);
	long diags = 0, lo[2], hi[2];
	struct iovec iov;
	ssize_t ret;
	size_t len;

	while (!atomic_load(&cc_finished)) {
		off = rand64(&r->rng) % (LEN / 8) * 8;
		len = (1 + rand64(&r->rng) % (CC_MAX_READ / 8)) * 8;
		if (len > LEN - off)
			len = LEN - off;
		iov = (struct iovec){ .iov_base = buf, .iov_len = len };
		lo[0] = atomic_load(&cc_writers[0].done);
		lo[1] = atomic_load(&cc_writers[1].done);
		ret = preadv2(rfd, &iov, 1, cc_base + off, r->flags);
		hi[0] = atomic_load(&cc_writers[0].cur);
		hi[1] = atomic_load(&cc_writers[1].cur);
		r->reads++;
		r->overlapping += lo[0] != hi[0] || lo[1] != hi[1];
		if (ret != (ssize_t)len) {
			if (diags++ < MAX_DIAGS)
				cc_diag("%s: read of %zu at %llu: %zd (%s)", r->name,
					len, (unsigned long long)(cc_base + off), ret,
					ret < 0 ? strerror(errno) : "short");
			r->bad++;
			continue;
		}
		r->bad += cc_check(buf, cc_base + off, len, lo, hi, &diags) > 0;
	}
	close(rfd);
	free(buf);
	return NULL;
}

/* Fill the range as round 0 with O_DIRECT, nothing of it cached. */
static void cc_round0(void)
{
	uint64_t *buf = bdev_memalign(MIB), done, b;

	for (done = 0; done < LEN; done += MIB) {
		for (b = 0; b < MIB / CC_BLOCK; b++)
			fill_words(buf + b * CC_BLOCK / 8, CC_BLOCK,
				   cc_base + done + b * CC_BLOCK,
				   cc_gen(0, (done / CC_BLOCK + b) % 2));
		if (!bdev_dio(dfd, true, buf, MIB, cc_base + done, 0))
			tap_bail("concurrent: cannot write round 0");
	}
	free(buf);
	bdev_evict(fd, cc_base, SLOT);
}

/* Every block of the range, read from @rfd, holds its writer's last round. */
static bool cc_final(int rfd, const char *what)
{
	const long last[2] = { CC_ROUNDS, CC_ROUNDS };
	uint64_t *buf = bdev_memalign(MIB), done;
	long bad = 0, diags = 0;

	for (done = 0; done < LEN; done += MIB) {
		if (pread(rfd, buf, MIB, cc_base + done) != (ssize_t)MIB) {
			tap_diag("concurrent: %s: read at %llu: %s", what,
				 (unsigned long long)(cc_base + done), strerror(errno));
			bad++;
			continue;
		}
		bad += cc_check(buf, cc_base + done, MIB, last, last, &diags);
	}
	if (bad)
		tap_diag("concurrent: %s: %ld bad words or reads", what, bad);
	free(buf);
	return !bad;
}

static void shared_range(void)
{
	long ncpus = tap_online_cpus(), errors;
	bool final_cache, final_medium;
	int i;

	tap_result(ncpus >= 2, "concurrent: %ld online CPUs (want at least 2)", ncpus);
	cc_base = (uint64_t)S_SHARED * SLOT;
	cc_round0();
	for (i = 0; i < 2; i++)
		if (pthread_create(&cc_readers[i].thread, NULL, cc_reader_main,
				   &cc_readers[i]))
			tap_bail("pthread_create failed");
	for (i = 0; i < 2; i++) {
		cc_writers[i].parity = i;
		cc_writers[i].flags = i ? RWF_UNCACHED : 0;
		if (pthread_create(&cc_writers[i].thread, NULL, cc_writer_main,
				   &cc_writers[i]))
			tap_bail("pthread_create failed");
	}
	for (i = 0; i < 2; i++)
		pthread_join(cc_writers[i].thread, NULL);
	atomic_store(&cc_finished, true);
	for (i = 0; i < 2; i++)
		pthread_join(cc_readers[i].thread, NULL);
	errors = cc_writers[0].errors + cc_writers[1].errors;
	tap_result(!errors,
		   "concurrent: a buffered writer of the even and an uncached writer of the odd 4 KiB blocks of 8 MiB, %d rounds each, every write succeeds (%ld errors)",
		   CC_ROUNDS, errors);
	for (i = 0; i < 2; i++) {
		struct cc_reader *r = &cc_readers[i];

		tap_result(!r->bad && r->reads >= CC_ROUNDS && r->overlapping,
			   "concurrent: %s: %ld random reads (%ld during writes), %ld bad",
			   r->name, r->reads, r->overlapping, r->bad);
	}
	if (fsync(fd))
		tap_diag("concurrent: fsync: %s", strerror(errno));
	final_cache = cc_final(fd, "page cache (buffered read)");
	final_medium = cc_final(dfd, "medium (O_DIRECT)");
	tap_result(final_cache && final_medium,
		   "concurrent: every block holds its last writer's last round (page cache %s, medium %s)",
		   final_cache ? "right" : "wrong", final_medium ? "right" : "wrong");
}

/* What one pass over the device saw. */
struct mp_pass {
	uint64_t bytes;		/* read (and checked) */
	uint64_t growth;	/* the largest growth of Buffers seen */
	bool data_ok;
};

/*
 * Read the device from 0 with preadv2(@flags) in 1 MiB calls, checking the
 * words, to the end or until Buffers grew by @stop_growth; Buffers is
 * sampled after every call.
 */
static struct mp_pass mp_read(int flags, uint64_t stop_growth)
{
	struct mp_pass p = { .data_ok = true };
	uint64_t base = bdev_buffers(NULL), now;
	char *buf = xmalloc(MIB);
	struct iovec iov = { .iov_base = buf };
	ssize_t ret;
	size_t n;
	long bad;

	while (p.bytes < dev_size && p.growth < stop_growth) {
		n = dev_size - p.bytes < MIB ? dev_size - p.bytes : MIB;
		iov.iov_len = n;
		ret = preadv2(fd, &iov, 1, p.bytes, flags);
		if (ret != (ssize_t)n) {
			tap_diag("preadv2 of %zu at %llu (flags %#x): %zd (%s)", n,
				 (unsigned long long)p.bytes, flags, ret,
				 ret < 0 ? strerror(errno) : "short");
			p.data_ok = false;
			break;
		}
		bad = check_words(buf, n, p.bytes, 1);
		if (bad >= 0 && p.data_ok)
			tap_diag("mismatch at offset %llu",
				 (unsigned long long)(p.bytes + bad));
		p.data_ok &= bad < 0;
		p.bytes += n;
		now = bdev_buffers(NULL);
		if (now > base && now - base > p.growth)
			p.growth = now - base;
	}
	tap_diag("flags %#x: read %llu MiB, Buffers %llu KiB at the start, grew by at most %llu KiB",
		 flags, (unsigned long long)(p.bytes / MIB),
		 (unsigned long long)(base >> 10),
		 (unsigned long long)(p.growth >> 10));
	free(buf);
	return p;
}

/* The whole device as words of generation 1, with O_DIRECT, not cached. */
static void mp_fill(void)
{
	char *buf = bdev_memalign(MIB);
	uint64_t off;
	size_t n;

	for (off = 0; off < dev_size; off += n) {
		n = dev_size - off < MIB ? dev_size - off : MIB;
		fill_words(buf, n, off, 1);
		if (!bdev_dio(dfd, true, buf, n, off, 0))
			tap_bail("memory pressure: cannot write the device");
	}
	free(buf);
	bdev_evict(fd, 0, dev_size);
}

static void memory_pressure(void)
{
	uint64_t mem_total, bound, want, left;
	struct mp_pass p;
	bool whole;

	bdev_buffers(&mem_total);
	/* of RAM, not of the device: the control must grow well beyond it */
	bound = mem_total / 10;
	want = mem_total * 2 / 5;
	tap_diag("memory pressure: device %llu MiB, MemTotal %llu MiB, growth bound %llu MiB, control wants %llu MiB",
		 (unsigned long long)(dev_size / MIB),
		 (unsigned long long)(mem_total / MIB),
		 (unsigned long long)(bound / MIB), (unsigned long long)(want / MIB));
	mp_fill();
	p = mp_read(RWF_UNCACHED, UINT64_MAX);
	whole = p.bytes == dev_size;
	tap_result(whole && p.data_ok,
		   "memory pressure: uncached read of the whole %llu MiB device, data right",
		   (unsigned long long)(dev_size / MIB));
	tap_result(whole && p.growth < bound && dev_size > mem_total,
		   "memory pressure: Buffers grew by at most %llu KiB reading %llu MiB, less than 10%% of MemTotal %llu MiB (want the device larger than MemTotal)",
		   (unsigned long long)(p.growth >> 10),
		   (unsigned long long)(dev_size / MIB),
		   (unsigned long long)(mem_total / MIB));
	left = range_cached(0, dev_size) * PAGE_SZ;
	tap_result(left <= uncached_ra_leftover_bound(fd, MIB),
		   "memory pressure: %llu KiB of the device cached afterwards (bound %llu KiB)",
		   (unsigned long long)(left >> 10),
		   (unsigned long long)(uncached_ra_leftover_bound(fd, MIB) >> 10));
	bdev_evict(fd, 0, dev_size);
	p = mp_read(0, want);
	tap_result(p.data_ok && p.growth >= want && want > bound,
		   "memory pressure: a buffered read (the control) grows Buffers by %llu MiB (want at least %llu MiB)",
		   (unsigned long long)(p.growth / MIB), (unsigned long long)(want / MIB));
	bdev_evict(fd, 0, dev_size);
}

int main(int argc, char **argv)
{
	int ret;

	bdev_test_init(argc, argv);
	fd = bdev_open(test_dir, O_RDWR, &dev_size);
	dfd = bdev_open(test_dir, O_RDWR | O_DIRECT, NULL);
	tap_plan(NR_CASES);
	ret = io_uring_queue_init(QD, &ring, 0);
	if (ret)
		tap_bail("io_uring_queue_init: %s", strerror(-ret));
	tap_diag("%s (%s): %llu MiB", test_dir, test_fs,
		 (unsigned long long)(dev_size / MIB));
	if (dev_size < NR_SLOTS * SLOT)
		tap_bail("%s has %llu MiB, the test needs at least %llu MiB",
			 test_dir, (unsigned long long)(dev_size / MIB),
			 NR_SLOTS * SLOT / MIB);
	probe();
	bdev_evict(fd, 0, dev_size);
	cold_read();
	warm_read();
	half_warm();
	write_cold();
	overwrite_cached();
	unaligned_writes();
	uring_rw();
	nowait_read();
	dsync_write();
	adopt_leftovers();
	direct_uncached();
	shared_range();
	memory_pressure();
	io_uring_queue_exit(&ring);
	close(dfd);
	close(fd);
	return tap_finish();
}
