// SPDX-License-Identifier: GPL-2.0
/*
 * Uncached reads of a file that another thread rewrites with buffered
 * writes. The writer rewrites an 8 MiB file in rounds of 4 KiB pwrite()s
 * (runs of four blocks in random order); every 8-byte word of round r at
 * word index i
 * holds (r << 32 | i). Three readers meanwhile read random ranges with
 * RWF_UNCACHED (preadv2, or io_uring READ/READV), each one read per
 * PACE_BLOCKS blocks the writer writes: each word must hold its
 * own index and a round between the last round completed before the read
 * and the round under way after it (a mix of two rounds is a legitimate
 * torn copy; zeroes, garbage, misplaced or stale data are not). After
 * each round (fsync and evict the file every other round) every reader
 * reads the whole file back, uncached: exactly that round. At the end the
 * file is read back from disk after drop_caches.
 *
 * Rounds: UNCACHED_STRESS_OPS / ROUND_OPS (2000: 5 rounds), 2 to
 * MAX_ROUNDS.
 */
#include "uncached_io.h"

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define FILE_LEN	(8ULL << 20)
#define BLOCK		4096
#define NR_BLOCKS	(FILE_LEN / BLOCK)
#define RUN_BLOCKS	4		/* blocks written in a row */
#define NR_RUNS		(NR_BLOCKS / RUN_BLOCKS)
#define WORD		8
#define MAX_READ	(256 << 10)	/* longest random read */
#define CHUNK		(1 << 20)	/* read-back unit (>= MAX_READ) */
#define NREADERS	3
#define MAX_DIAGS	10
#define PACE_BLOCKS	16	/* blocks written between two reads */
#define ROUND_OPS	400	/* UNCACHED_STRESS_OPS per round */
#define MAX_ROUNDS	254	/* see word_of() */

struct reader {
	char name[16];
	bool uring;
	struct io_uring ring;
	uint64_t rng;
	uint64_t *buf;
	long reads;
	long overlapping;	/* reads that started during a round */
	long bad;		/* bad words or failed random reads */
	long full_bad;		/* the same, in read-backs */
	pthread_t thread;
};

static int fd;
static long nrounds;
static atomic_long cur_round;	/* the round being written (or last) */
static atomic_long done_round;	/* the last round completely written */
static atomic_bool pause_readers, finished;
static pthread_barrier_t barrier;
static pthread_mutex_t pace_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pace_cond = PTHREAD_COND_INITIALIZER;
static long written;		/* blocks written so far, under pace_lock */
static struct reader readers[NREADERS];
static uint32_t order[NR_RUNS];	/* the writer's order of the runs */
static uint64_t writer_rng;

/*
 * Rounds stay below 256 so that consecutive rounds differ in one byte of
 * the word only: a copy racing a write that moves bytes one by one (as
 * TCG may) still gives the old or the new round, never a mix of both.
 */
static uint64_t word_of(long round, uint64_t idx)
{
	return (uint64_t)round << 32 | idx;
}

static void __attribute__((format(printf, 2, 3)))
reader_diag(struct reader *r, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	flockfile(stdout);
	tap_diag("%s: %s", r->name, line);
	funlockfile(stdout);
}

/*
 * Words [first, first + n) read into @w: each at its own index, from a
 * round in [lo, hi]. Returns the number of bad words.
 */
static long check_round_words(struct reader *r, const uint64_t *w, uint64_t first,
			uint64_t n, long lo, long hi, long *diags)
{
	long bad = 0;
	uint64_t i;

	for (i = 0; i < n; i++) {
		uint64_t idx = w[i] & 0xffffffffULL;
		long round = (long)(w[i] >> 32);

		if (idx == first + i && round >= lo && round <= hi)
			continue;
		if (!bad++ && (*diags)++ < MAX_DIAGS)
			reader_diag(r, "read of [%llu, +%llu): word at offset %llu is %#llx, want index %llu of a round in %ld..%ld",
				    (unsigned long long)(first * WORD),
				    (unsigned long long)(n * WORD),
				    (unsigned long long)((first + i) * WORD),
				    (unsigned long long)w[i],
				    (unsigned long long)(first + i), lo, hi);
	}
	return bad;
}

/* One RWF_UNCACHED read of [off, off + len) into r->buf (preadv2/io_uring). */
static ssize_t uncached_read(struct reader *r, uint64_t off, size_t len)
{
	struct iovec iov[2];
	size_t cut = (rand64(&r->rng) % (len / WORD + 1)) * WORD;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret;

	iov[0] = (struct iovec){ .iov_base = r->buf, .iov_len = cut };
	iov[1] = (struct iovec){ .iov_base = (char *)r->buf + cut,
				 .iov_len = len - cut };
	if (!r->uring)
		return preadv2(fd, iov, 2, off, RWF_UNCACHED);
	sqe = io_uring_get_sqe(&r->ring);
	if (rand64(&r->rng) & 1)
		io_uring_prep_readv(sqe, fd, iov, 2, off);
	else
		io_uring_prep_read(sqe, fd, r->buf, len, off);
	sqe->rw_flags = RWF_UNCACHED;
	ret = io_uring_submit_and_wait(&r->ring, 1);
	if (ret < 0)
		tap_bail("io_uring_submit_and_wait: %s", strerror(-ret));
	ret = io_uring_wait_cqe(&r->ring, &cqe);
	if (ret)
		tap_bail("io_uring_wait_cqe: %s", strerror(-ret));
	ret = cqe->res;
	io_uring_cqe_seen(&r->ring, cqe);
	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	return ret;
}

/*
 * Read [off, off + len) and check its words are from rounds [lo, hi]; @hi
 * < 0: up to the round under way once the read returned. Returns the
 * number of bad words (1 for a failed read).
 */
static long read_check(struct reader *r, uint64_t off, size_t len, long lo,
		       long hi, long *diags)
{
	ssize_t ret = uncached_read(r, off, len);

	if (hi < 0)
		hi = atomic_load(&cur_round);
	if (ret != (ssize_t)len) {
		if ((*diags)++ < MAX_DIAGS)
			reader_diag(r, "%s of %zu at %llu: %zd (%s)",
				    r->uring ? "io_uring read" : "preadv2",
				    len, (unsigned long long)off, ret,
				    ret < 0 ? strerror(errno) : "short");
		return 1;
	}
	return check_round_words(r, r->buf, off / WORD, len / WORD, lo, hi, diags);
}

/* A random word-aligned range, read while the writer may be writing it. */
static void random_read(struct reader *r, long *diags)
{
	uint64_t off = rand64(&r->rng) % (FILE_LEN / WORD) * WORD;
	size_t len = (1 + rand64(&r->rng) % (MAX_READ / WORD)) * WORD;
	long lo = atomic_load(&done_round);

	if (len > FILE_LEN - off)
		len = FILE_LEN - off;
	if (lo != atomic_load(&cur_round))
		r->overlapping++;
	r->reads++;
	r->bad += read_check(r, off, len, lo, -1, diags);
}

/* After a round: the whole file, uncached, holds exactly that round. */
static void full_check(struct reader *r, long *diags)
{
	long round = atomic_load(&done_round);
	uint64_t off;

	for (off = 0; off < FILE_LEN; off += CHUNK)
		r->full_bad += read_check(r, off, CHUNK, round, round, diags);
}

/* Writer: @n more blocks are written, or the round ended: wake readers. */
static void pace_advance(long n)
{
	pthread_mutex_lock(&pace_lock);
	written += n;
	pthread_cond_broadcast(&pace_cond);
	pthread_mutex_unlock(&pace_lock);
}

/*
 * Reader: wait until the writer wrote PACE_BLOCKS blocks more than @mark
 * or paused; returns the new mark. Paces the readers by the writer's
 * progress (so that reads overlap writes without starving the writer).
 */
static long pace_wait(long mark)
{
	pthread_mutex_lock(&pace_lock);
	while (written < mark + PACE_BLOCKS && !atomic_load(&pause_readers))
		pthread_cond_wait(&pace_cond, &pace_lock);
	mark = written;
	pthread_mutex_unlock(&pace_lock);
	return mark;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	long diags = 0, mark = 0;

	do {
		do {
			random_read(r, &diags);
			mark = pace_wait(mark);
		} while (!atomic_load(&pause_readers));
		pthread_barrier_wait(&barrier);
		full_check(r, &diags);
		pthread_barrier_wait(&barrier);
	} while (!atomic_load(&finished));
	return NULL;
}

/*
 * Write every block of the file once as round @round: runs of RUN_BLOCKS
 * blocks in random order (single blocks in random order make btrfs
 * writes about 15 times slower in the debug guest, with or without the
 * series).
 */
static bool write_round(long round)
{
	uint64_t block[BLOCK / WORD];
	uint32_t i, j, t;
	uint64_t w;

	for (i = NR_RUNS - 1; i > 0; i--) {
		j = rand64(&writer_rng) % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < NR_BLOCKS; i++) {
		uint64_t first = ((uint64_t)order[i / RUN_BLOCKS] * RUN_BLOCKS +
				  i % RUN_BLOCKS) * (BLOCK / WORD);
		ssize_t ret;

		for (w = 0; w < BLOCK / WORD; w++)
			block[w] = word_of(round, first + w);
		ret = pwrite(fd, block, BLOCK, first * WORD);
		if (ret != BLOCK) {
			tap_diag("writer: round %ld pwrite at %llu: %zd (%s)",
				 round, (unsigned long long)(first * WORD), ret,
				 ret < 0 ? strerror(errno) : "short");
			return false;
		}
		if (!((i + 1) % PACE_BLOCKS))
			pace_advance(PACE_BLOCKS);
	}
	return true;
}

/* fsync() the file and drop its (clean, unmapped) page cache. */
static bool sync_and_evict(void)
{
	int err = fsync(fd) ? errno :
		  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);

	if (err)
		tap_diag("writer: fsync/fadvise: %s", strerror(err));
	return !err;
}

/* Rounds 2..nrounds + 1 with the readers running; round 1 came before. */
static bool writer(void)
{
	bool ok = true;
	long round;

	for (round = 2; round <= nrounds + 1; round++) {
		atomic_store(&cur_round, round);
		ok &= write_round(round);
		atomic_store(&done_round, round);
		if (round % 2)
			ok &= sync_and_evict();
		atomic_store(&pause_readers, true);
		pace_advance(0);
		pthread_barrier_wait(&barrier);
		atomic_store(&pause_readers, false);
		atomic_store(&finished, round == nrounds + 1);
		pthread_barrier_wait(&barrier);
	}
	return ok;
}

static void start_readers(uint64_t seed)
{
	int i, ret;

	for (i = 0; i < NREADERS; i++) {
		struct reader *r = &readers[i];

		snprintf(r->name, sizeof(r->name), "reader %d", i);
		r->uring = i == NREADERS - 1;
		r->rng = seed + 1 + i;
		r->buf = xmalloc(CHUNK);
		ret = r->uring ? io_uring_queue_init(4, &r->ring, 0) : 0;
		if (ret)
			tap_bail("io_uring_queue_init: %s", strerror(-ret));
		if (pthread_create(&r->thread, NULL, reader_main, r))
			tap_bail("pthread_create failed");
	}
}

/* The file as round 1, on disk and out of the page cache. */
static void first_round(uint64_t seed)
{
	uint32_t i;

	writer_rng = seed;
	for (i = 0; i < NR_RUNS; i++)
		order[i] = i;
	if (!write_round(1))
		tap_bail("cannot write the first round");
	evict_file(fd, FILE_LEN);
	atomic_store(&cur_round, 1);
	atomic_store(&done_round, 1);
}

/* After drop_caches, the file read back with pread() is round @round. */
static bool final_check(long round)
{
	struct reader r = { .name = "final read", .buf = xmalloc(CHUNK) };
	long bad = 0, diags = 0;
	uint64_t off;

	drop_caches();
	for (off = 0; off < FILE_LEN; off += CHUNK) {
		if (pread(fd, r.buf, CHUNK, off) != CHUNK) {
			tap_diag("pread at %llu: %s", (unsigned long long)off,
				 strerror(errno));
			bad++;
			continue;
		}
		bad += check_round_words(&r, r.buf, off / WORD, CHUNK / WORD, round,
				   round, &diags);
	}
	free(r.buf);
	return !bad;
}

static void report_readers(void)
{
	long full_bad = 0;
	int i;

	for (i = 0; i < NREADERS; i++) {
		struct reader *r = &readers[i];

		pthread_join(r->thread, NULL);
		full_bad += r->full_bad;
		tap_result(!r->bad && r->reads >= nrounds,
			   "reader %d (%s): %ld random uncached reads (%ld started during a round), %ld bad",
			   i, r->uring ? "io_uring" : "preadv2", r->reads,
			   r->overlapping, r->bad);
	}
	tap_result(!full_bad,
		   "after each of %ld rounds every reader read back exactly that round (%ld bad)",
		   nrounds, full_bad);
}

int main(int argc, char **argv)
{
	uint64_t seed;
	bool ok;
	int err;

	test_init(argc, argv);
	seed = env_number("UNCACHED_STRESS_SEED", time(NULL) ^ getpid(), 0,
			  ~0ULL);
	nrounds = env_number("UNCACHED_STRESS_OPS", 2000, 1, 1000000000) /
		  ROUND_OPS;
	if (nrounds < 2)
		nrounds = 2;
	if (nrounds > MAX_ROUNDS)
		nrounds = MAX_ROUNDS;
	fd = xopen(test_path("uncached-shared-rw"), O_RDWR | O_CREAT | O_TRUNC);
	tap_plan(NREADERS + 3);
	tap_online_cpus();
	tap_diag("seed %llu, %ld rounds of %llu MiB, %d readers",
		 (unsigned long long)seed, nrounds, FILE_LEN >> 20, NREADERS);
	err = uncached_probe(fd);
	if (err)
		tap_bail("preadv2(RWF_UNCACHED) on %s: %s: no RWF_UNCACHED here (a kernel without the series?)",
			 test_dir, strerror(err));
	first_round(seed);
	pthread_barrier_init(&barrier, NULL, NREADERS + 1);
	start_readers(seed);
	ok = writer();
	tap_result(ok, "writer: %ld rounds of 4 KiB buffered pwrite()s over %llu MiB",
		   nrounds, FILE_LEN >> 20);
	report_readers();
	tap_result(final_check(nrounds + 1),
		   "after drop_caches the file holds the last round");
	unlink(test_path("uncached-shared-rw"));
	return tap_finish();
}
