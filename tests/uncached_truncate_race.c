// SPDX-License-Identifier: GPL-2.0
/*
 * Truncation and hole punching racing with RWF_UNCACHED writes and reads.
 *
 * Writer threads store word data (uncached_io.h: every 8-byte word holds
 * its offset and a generation unique to the write), reader threads read
 * random ranges uncached, and one thread truncates the file down and up
 * and punches holes into it, all at once on one file, for a bounded
 * number of operations. Every operation is a multiple of UNIT bytes and
 * records the ticks of a global counter taken right before the call and
 * right after its return, so "A returned before B started" is known.
 * Writes, truncates and punches are serialised by the inode lock, so the
 * file is the result of applying them in some order consistent with that.
 * Readers then assert that every word is zero or a word of its own offset
 * from an issued write that covers it (or a torn copy of such words: a
 * buffered read is not atomic against a write, truncate or punch running
 * at the same time, and may copy a word while it changes, some of its
 * bytes old and some new), that no word shows a write that an
 * operation which started after it and returned before the read replaced
 * or zeroed (stale data), and that no zero stands where a returned write
 * must show (lost data). After the threads are joined, the page cache is
 * dropped and the file read from disk: its size and the content of every
 * unit must be a possible result of the operations.
 */
#include "uncached_io.h"

#include <pthread.h>

#define UNIT		512ULL		/* the granule of every operation */
#define MAX_SIZE	(4ULL << 20)
#define MAX_WRITE	(64ULL << 10)
#define MAX_READ	(64ULL << 10)
#define MAX_PUNCH	(256ULL << 10)
#define NR_WRITERS	2
#define NR_READERS	2
#define WRITES		300		/* per writer */
#define READS		300		/* per reader */
#define ZEROINGS	200		/* truncates and punches */
#define NR_GENS		(NR_WRITERS * WRITES)
#define NO_END		UINT64_MAX
#define OP_FAILED	UINT64_MAX

/*
 * A write of generation @gen (0 for a truncate or a punch) setting
 * [off, end): truncation to T sets [T, NO_END) to nothing. @start and
 * @done are ticks; @done is 0 while the call runs, OP_FAILED after it
 * failed.
 */
struct op {
	uint64_t off, end;
	uint64_t start, done;
	uint32_t gen;
};

static struct op writes[NR_GENS + 1];	/* indexed by generation */
static struct op zeroings[ZEROINGS];
static uint32_t last_gen, nr_zeroings, writes_done, writers_running;
static uint64_t ticks;
static pthread_barrier_t start_line;
static int test_fd;

/* A thread and what it saw; only the main thread prints. */
struct worker {
	pthread_t thread;
	void *(*fn)(void *);
	const char *name;
	uint64_t rnd;
	unsigned int calls, failed, punches, truncates;
	unsigned int bad_words, stale, lost, torn;
	char error[200];	/* the first failed call */
	char bad[200];		/* the first bad, stale or lost word */
};

static uint64_t tick(void)
{
	return __atomic_add_fetch(&ticks, 1, __ATOMIC_SEQ_CST);
}

static void op_done(struct op *op, bool ok)
{
	__atomic_store_n(&op->done, ok ? tick() : OP_FAILED, __ATOMIC_RELEASE);
}

static bool op_running(const struct op *op)
{
	return !__atomic_load_n(&op->done, __ATOMIC_ACQUIRE);
}

/* The tick after the op returned success; 0 while it runs or if it failed. */
static uint64_t op_done_tick(const struct op *op)
{
	uint64_t done = __atomic_load_n(&op->done, __ATOMIC_ACQUIRE);

	return done == OP_FAILED ? 0 : done;
}

static bool covers(const struct op *op, uint64_t off)
{
	return off >= op->off && off < op->end;
}

/* A random number in [0, n) (xorshift64). */
static uint64_t rnd(struct worker *w, uint64_t n)
{
	w->rnd ^= w->rnd << 13;
	w->rnd ^= w->rnd >> 7;
	w->rnd ^= w->rnd << 17;
	return w->rnd % n;
}

/* A random range of 1 to @max bytes inside [0, MAX_SIZE), in units. */
static void rnd_range(struct worker *w, uint64_t max, uint64_t *off,
		      uint64_t *len)
{
	*len = (rnd(w, max / UNIT) + 1) * UNIT;
	*off = rnd(w, (MAX_SIZE - *len) / UNIT + 1) * UNIT;
}

static void call_failed(struct worker *w, const char *what, uint64_t off,
			uint64_t len, long ret, int err)
{
	if (!w->failed++)
		snprintf(w->error, sizeof(w->error),
			 "%s(off %llu, len %llu): %ld (%s)", what,
			 (unsigned long long)off, (unsigned long long)len,
			 ret, ret < 0 ? strerror(err) : "short");
}

/* Let call @i of @n wait until the writers are as far along. */
static void pace(unsigned int i, unsigned int n)
{
	while ((uint64_t)__atomic_load_n(&writes_done, __ATOMIC_ACQUIRE) * n <
	       (uint64_t)i * NR_GENS &&
	       __atomic_load_n(&writers_running, __ATOMIC_ACQUIRE))
		usleep(500);
}

static void *writer(void *arg)
{
	struct worker *w = arg;
	char *buf = xmalloc(MAX_WRITE);
	struct iovec iov = { .iov_base = buf };
	uint64_t off, len;
	struct op *op;
	uint32_t gen;
	ssize_t ret;

	pthread_barrier_wait(&start_line);
	while (w->calls < WRITES && !w->failed) {
		rnd_range(w, MAX_WRITE, &off, &len);
		gen = __atomic_add_fetch(&last_gen, 1, __ATOMIC_SEQ_CST);
		op = &writes[gen];
		*op = (struct op){ .off = off, .end = off + len, .gen = gen };
		fill_words(buf, len, off, gen);
		iov.iov_len = len;
		op->start = tick();
		ret = pwritev2(test_fd, &iov, 1, off, RWF_UNCACHED);
		op_done(op, ret == (ssize_t)len);
		if (ret != (ssize_t)len)
			call_failed(w, "pwritev2", off, len, ret, errno);
		w->calls++;
		__atomic_add_fetch(&writes_done, 1, __ATOMIC_RELEASE);
	}
	__atomic_sub_fetch(&writers_running, 1, __ATOMIC_RELEASE);
	free(buf);
	return NULL;
}

/*
 * Did an op other than write @gen that covers @off start after tick
 * @after and return before tick @before? Then the word of @gen at @off
 * was replaced by then.
 */
static bool replaced_between(uint64_t off, uint32_t gen, uint64_t after,
			     uint64_t before)
{
	uint32_t n = __atomic_load_n(&last_gen, __ATOMIC_ACQUIRE), i;
	uint64_t done;

	for (i = 1; i <= n; i++) {
		done = op_done_tick(&writes[i]);
		if (done && i != gen && covers(&writes[i], off) &&
		    writes[i].start > after && done < before)
			return true;
	}
	n = __atomic_load_n(&nr_zeroings, __ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++) {
		done = op_done_tick(&zeroings[i]);
		if (done && covers(&zeroings[i], off) &&
		    zeroings[i].start > after && done < before)
			return true;
	}
	return false;
}

/*
 * Can @off read as zeroes in a read that started at tick @rstart and
 * ended at @rend? Not when a write covering it returned before the read
 * started and no truncate or punch covering it may come after that write
 * (still running, or returned after the write started) and before the
 * read's end.
 */
static bool zero_possible(uint64_t off, uint64_t rstart, uint64_t rend)
{
	uint32_t nw = __atomic_load_n(&last_gen, __ATOMIC_ACQUIRE), i, j;
	uint32_t nz = __atomic_load_n(&nr_zeroings, __ATOMIC_ACQUIRE);
	uint64_t done;
	bool zeroed;

	for (i = 1; i <= nw; i++) {
		done = op_done_tick(&writes[i]);
		if (!done || done > rstart || !covers(&writes[i], off))
			continue;
		zeroed = false;
		for (j = 0; j < nz && !zeroed; j++) {
			done = op_done_tick(&zeroings[j]);
			zeroed = covers(&zeroings[j], off) &&
				 zeroings[j].start < rend &&
				 (op_running(&zeroings[j]) ||
				  done > writes[i].start);
		}
		if (!zeroed)
			return false;
	}
	return true;
}

/* Did @op run (at least in part) while a read from @rstart to @rend did? */
static bool ran_during(const struct op *op, uint64_t rstart, uint64_t rend)
{
	return op->start < rend &&
	       (op_running(op) || op_done_tick(op) > rstart);
}

/*
 * Could a read from @rstart to @rend see the word of write @gen at @off?
 * When the write covers @off and ran during the read, or returned before
 * and nothing replaced the word before the read started.
 */
static bool word_visible(uint32_t gen, uint64_t off, uint64_t rstart,
			 uint64_t rend)
{
	const struct op *op = &writes[gen];
	uint64_t done = op_done_tick(op);

	if (!covers(op, off))
		return false;
	if (ran_during(op, rstart, rend))
		return true;
	return done && done < rstart &&
	       !replaced_between(off, gen, done, rstart);
}

/*
 * Can @word at @off be a torn copy, in a read from @rstart to @rend? Only
 * while a write, truncate or punch covering @off ran during the read; then
 * each byte of @word must be that byte of zero (if the read may see zero
 * there) or of a word the read may see there (@word itself excluded: a
 * valid word is only torn if it is a mix of others).
 */
static bool torn_possible(uint64_t off, uint64_t word, uint64_t rstart,
			  uint64_t rend)
{
	uint32_t nw = __atomic_load_n(&last_gen, __ATOMIC_ACQUIRE), i;
	uint32_t nz = __atomic_load_n(&nr_zeroings, __ATOMIC_ACQUIRE);
	uint64_t unmatched = word, candidate, mask;
	bool racing = false;
	unsigned int byte;

	for (i = 1; i <= nw && !racing; i++)
		racing = covers(&writes[i], off) &&
			 ran_during(&writes[i], rstart, rend);
	for (i = 0; i < nz && !racing; i++)
		racing = covers(&zeroings[i], off) &&
			 ran_during(&zeroings[i], rstart, rend);
	if (!racing)
		return false;
	/* clear the bytes of @unmatched that zero or a visible word explain */
	if (zero_possible(off, rstart, rend))
		for (byte = 0; byte < 8; byte++)
			if (!(word >> (byte * 8) & 0xff))
				unmatched &= ~(0xffULL << (byte * 8));
	for (i = 1; i <= nw && unmatched; i++) {
		candidate = data_word(off, i);
		if (candidate == word || !word_visible(i, off, rstart, rend))
			continue;
		for (byte = 0; byte < 8; byte++) {
			mask = 0xffULL << (byte * 8);
			if ((candidate & mask) == (word & mask))
				unmatched &= ~mask;
		}
	}
	return !unmatched;
}

static void bad_word(struct worker *w, unsigned int *count, uint64_t off,
		     uint64_t word, uint64_t roff, const char *why)
{
	if (!w->bad_words && !w->stale && !w->lost)
		snprintf(w->bad, sizeof(w->bad),
			 "read at %llu: word at %llu is %#llx: %s",
			 (unsigned long long)roff, (unsigned long long)off,
			 (unsigned long long)word, why);
	(*count)++;
}

/* Check the words of one read; the decisions are made once per unit. */
static void check_read(struct worker *w, const uint64_t *buf, size_t len,
		       uint64_t roff, uint64_t rstart, uint64_t rend)
{
	uint32_t issued = __atomic_load_n(&last_gen, __ATOMIC_ACQUIRE);
	uint64_t off, done, unit = NO_END, word;
	uint32_t gen, seen = 0;
	bool stale;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		off = roff + i * 8;
		word = buf[i];
		gen = word ? word_gen(word, off) : 0;
		if (word && (!gen || gen > issued ||
			     !covers(&writes[gen], off))) {
			if (torn_possible(off, word, rstart, rend))
				w->torn++;
			else
				bad_word(w, &w->bad_words, off, word, roff,
					 "neither zero nor a word of its offset from an issued write covering it");
			unit = NO_END;
			continue;
		}
		if (off / UNIT == unit && gen == seen)
			continue;
		unit = off / UNIT;
		seen = gen;
		done = gen ? op_done_tick(&writes[gen]) : 0;
		stale = gen && done && replaced_between(off, gen, done, rstart);
		if (stale && torn_possible(off, word, rstart, rend)) {
			w->torn++;
			unit = NO_END;
		} else if (stale) {
			bad_word(w, &w->stale, off, word, roff,
				 "stale: replaced before the read started");
		} else if (!gen && !zero_possible(off, rstart, rend)) {
			bad_word(w, &w->lost, off, word, roff,
				 "lost: a returned write must show here");
		}
	}
}

static void *reader(void *arg)
{
	struct worker *w = arg;
	uint64_t *buf = xmalloc(MAX_READ);
	struct iovec iov = { .iov_base = buf };
	uint64_t off, len, rstart;
	ssize_t ret;

	pthread_barrier_wait(&start_line);
	while (w->calls < READS && !w->failed) {
		pace(w->calls, READS);
		rnd_range(w, MAX_READ, &off, &len);
		iov.iov_len = len;
		rstart = tick();
		ret = preadv2(test_fd, &iov, 1, off, RWF_UNCACHED);
		w->calls++;
		if (ret < 0)
			call_failed(w, "preadv2", off, len, ret, errno);
		else
			check_read(w, buf, ret, off, rstart, tick());
	}
	free(buf);
	return NULL;
}

/* One truncate or hole punch; punching stops when it is not supported. */
static void zero_once(struct worker *w, struct op *op, bool *can_punch)
{
	bool punch = *can_punch && rnd(w, 2);
	uint64_t off, len;
	int ret;

	if (punch) {
		rnd_range(w, MAX_PUNCH, &off, &len);
		*op = (struct op){ .off = off, .end = off + len };
	} else {
		off = rnd(w, MAX_SIZE / UNIT + 1) * UNIT;
		len = 0;
		*op = (struct op){ .off = off, .end = NO_END };
	}
	op->start = tick();
	__atomic_add_fetch(&nr_zeroings, 1, __ATOMIC_RELEASE);
	if (punch)
		ret = fallocate(test_fd, FALLOC_FL_PUNCH_HOLE |
				FALLOC_FL_KEEP_SIZE, off, len);
	else
		ret = ftruncate(test_fd, off);
	op_done(op, !ret);
	if (!ret) {
		if (punch)
			w->punches++;
		else
			w->truncates++;
	} else if (punch && errno == EOPNOTSUPP && !w->punches) {
		snprintf(w->bad, sizeof(w->bad),
			 "hole punching not supported: truncating only");
		*can_punch = false;
	} else {
		call_failed(w, punch ? "fallocate(PUNCH_HOLE)" : "ftruncate",
			    off, len, ret, errno);
	}
}

static void *zeroer(void *arg)
{
	struct worker *w = arg;
	bool can_punch = true;

	pthread_barrier_wait(&start_line);
	while (w->calls < ZEROINGS && !w->failed) {
		pace(w->calls, ZEROINGS);
		zero_once(w, &zeroings[w->calls], &can_punch);
		w->calls++;
	}
	return NULL;
}

/* Could unit @off hold generation @gen (0: zeroes) after all ops? */
static bool content_possible(uint64_t off, uint32_t gen)
{
	const struct op *op = &writes[gen];

	if (!gen)
		return zero_possible(off, NO_END, NO_END);
	return op_done_tick(op) && covers(op, off) &&
	       !replaced_between(off, gen, op->done, NO_END);
}

/* The size an op leaves the file at, or NO_END when it sets none. */
static uint64_t size_set(const struct op *op)
{
	if (!op_done_tick(op))
		return NO_END;
	if (op->end == NO_END)
		return op->off;		/* truncate */
	return op->gen ? op->end : NO_END;	/* write, punch */
}

/* Every op: the truncates and punches, then the writes. */
#define NR_OPS		(ZEROINGS + NR_GENS + 1)

static const struct op *op_nr(uint32_t i)
{
	return i < ZEROINGS ? &zeroings[i] : &writes[i - ZEROINGS];
}

/*
 * Can the file still be @size bytes after all ops, if something left it
 * at @size at tick @done? Not when a truncate, or a write ending beyond
 * @size, started after @done.
 */
static bool size_stays(uint64_t size, uint64_t done)
{
	const struct op *op;
	uint32_t i;

	for (i = 0; i < NR_OPS; i++) {
		op = op_nr(i);
		if (op_done_tick(op) && op->start > done &&
		    (op->end == NO_END || (op->gen && op->end > size)))
			return false;
	}
	return true;
}

/* Could the file end at @size after all ops (it starts empty)? */
static bool size_possible(uint64_t size)
{
	uint32_t i;

	if (!size && size_stays(0, 0))
		return true;
	for (i = 0; i < NR_OPS; i++)
		if (size_set(op_nr(i)) == size &&
		    size_stays(size, op_nr(i)->done))
			return true;
	return false;
}

/* The generation of a unit read from disk, 0 for zeroes, -1 if mixed. */
static long unit_gen(const uint64_t *w, uint64_t off)
{
	uint32_t gen = w[0] ? word_gen(w[0], off) : 0;
	unsigned int i;

	if (w[0] && !gen)
		return -1;
	for (i = 1; i < UNIT / 8; i++)
		if (w[i] != (gen ? data_word(off + i * 8, gen) : 0))
			return -1;
	return gen;
}

static void check_file(void)
{
	uint64_t *buf = xmalloc(MAX_SIZE + UNIT);
	unsigned int mixed = 0, wrong = 0;
	uint64_t off, size;
	struct stat st;
	ssize_t ret;
	long gen;

	drop_caches();
	if (fstat(test_fd, &st))
		tap_bail("fstat: %s", strerror(errno));
	size = st.st_size;
	ret = pread(test_fd, buf, MAX_SIZE + UNIT, 0);
	tap_result(ret == (ssize_t)size && size_possible(size),
		   "file size %llu is a possible result of the ops (read returns %zd)",
		   (unsigned long long)size, ret);
	for (off = 0; ret > 0 && off + UNIT <= (uint64_t)ret; off += UNIT) {
		gen = unit_gen(buf + off / 8, off);
		if (gen >= 0 && content_possible(off, gen))
			continue;
		if (!mixed && !wrong)
			tap_diag("unit at %llu: %s (first word %#llx)",
				 (unsigned long long)off,
				 gen < 0 ? "mixed or garbage words" :
				 "not a possible content",
				 (unsigned long long)buf[off / 8]);
		gen < 0 ? mixed++ : wrong++;
	}
	tap_result(!mixed,
		   "after drop_caches every unit is zeroes or one write's words (%u are not)",
		   mixed);
	tap_result(!wrong,
		   "after drop_caches every unit holds a possible result of the ops (%u do not)",
		   wrong);
	free(buf);
}

static void report_calls(struct worker *w, int n, const char *what,
			 unsigned int want)
{
	unsigned int calls = 0, failed = 0;
	const char *first = "no error";
	int i;

	for (i = 0; i < n; i++) {
		calls += w[i].calls;
		failed += w[i].failed;
		if (w[i].failed && !strcmp(first, "no error"))
			first = w[i].error;
	}
	tap_result(calls == want && !failed,
		   "%s: %u of %u calls made, %u failed (%s)", what, calls,
		   want, failed, first);
}

static void report_words(struct worker *r, int n)
{
	unsigned int bad = 0, stale = 0, lost = 0, torn = 0;
	int i;

	for (i = 0; i < n; i++) {
		bad += r[i].bad_words;
		stale += r[i].stale;
		lost += r[i].lost;
		torn += r[i].torn;
		if (r[i].bad[0])
			tap_diag("%s: %s", r[i].name, r[i].bad);
	}
	tap_diag("readers: %u torn copies of words changing during the read",
		 torn);
	tap_result(!bad,
		   "readers: every word is zero or a word of its offset from an issued write (%u are not)",
		   bad);
	tap_result(!stale,
		   "readers: no data that an op returned before the read replaced (%u stale)",
		   stale);
	tap_result(!lost,
		   "readers: no zeroes where a returned write must show (%u lost)",
		   lost);
}

static void run_workers(struct worker *w, int n)
{
	int i;

	if (pthread_barrier_init(&start_line, NULL, n))
		tap_bail("pthread_barrier_init failed");
	writers_running = NR_WRITERS;
	for (i = 0; i < n; i++)
		if (pthread_create(&w[i].thread, NULL, w[i].fn, &w[i]))
			tap_bail("pthread_create failed");
	for (i = 0; i < n; i++)
		pthread_join(w[i].thread, NULL);
}

int main(int argc, char **argv)
{
	struct worker w[NR_WRITERS + NR_READERS + 1] = {
		{ .fn = writer, .name = "writer 1", .rnd = 0x9e3779b97f4a7c15 },
		{ .fn = writer, .name = "writer 2", .rnd = 0xbf58476d1ce4e5b9 },
		{ .fn = reader, .name = "reader 1", .rnd = 0x94d049bb133111eb },
		{ .fn = reader, .name = "reader 2", .rnd = 0x2545f4914f6cdd1d },
		{ .fn = zeroer, .name = "truncator",
		  .rnd = 0xd6e8feb86659fd93 },
	};
	struct worker *z = &w[NR_WRITERS + NR_READERS];
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-truncate-race");
	test_fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	unlink(path);
	tap_plan(9);
	tap_online_cpus();
	run_workers(w, ARRAY_SIZE(w));
	tap_diag("%u truncates and %u punches succeeded", z->truncates,
		 z->punches);
	if (z->bad[0])
		tap_diag("%s", z->bad);
	report_calls(w, NR_WRITERS, "uncached writers", NR_GENS);
	report_calls(w + NR_WRITERS, NR_READERS, "uncached readers",
		     NR_READERS * READS);
	report_calls(z, 1, "truncates and punches", ZEROINGS);
	report_words(w + NR_WRITERS, NR_READERS);
	if (fsync(test_fd))
		tap_diag("fsync: %s", strerror(errno));
	diag_cachestat("after the race and fsync",
		       wait_range_settled(test_fd, 0, MAX_SIZE, -1, 5000));
	check_file();
	close(test_fd);
	return tap_finish();
}
