/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Uncached reads and writes of whole ranges for the guest tests, with
 * pattern data (util.h).
 */
#ifndef UNCACHED_IO_H
#define UNCACHED_IO_H

#include "util.h"

#include <dirent.h>
#include <sys/sysmacros.h>

#ifndef RWF_UNCACHED
#error "the UAPI headers lack RWF_UNCACHED: build against the patched tree"
#endif

#define PAGE_SZ 4096ULL

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

static inline uint64_t pages_of(uint64_t len)
{
	return (len + PAGE_SZ - 1) / PAGE_SZ;
}

/*
 * Read [off, off + len) with preadv2(@flags) in @bs chunks and compare it
 * with pattern @seed. Returns false (with a diagnostic) on an error, a
 * short read or a mismatch.
 */
static inline bool read_range_flags(int fd, uint64_t off, uint64_t len,
				    size_t bs, int flags, unsigned int seed)
{
	char *buf = xmalloc(bs);
	uint64_t done = 0;
	bool ok = true;

	while (ok && done < len) {
		size_t n = len - done < bs ? len - done : bs;
		struct iovec iov = { .iov_base = buf, .iov_len = n };
		ssize_t ret = preadv2(fd, &iov, 1, off + done, flags);
		long bad;

		if (ret != (ssize_t)n) {
			tap_diag("preadv2 %zu at %llu (flags %#x): %zd (%s)", n,
				 (unsigned long long)(off + done), flags, ret,
				 ret < 0 ? strerror(errno) : "short");
			ok = false;
			break;
		}
		bad = check_pattern(buf, n, off + done, seed);
		if (bad >= 0) {
			tap_diag("mismatch at offset %llu",
				 (unsigned long long)(off + done + bad));
			ok = false;
		}
		done += n;
	}
	free(buf);
	return ok;
}

/* Write pattern @seed over [off, off + len) with pwritev2(@flags). */
static inline bool write_range_flags(int fd, uint64_t off, uint64_t len,
				     size_t bs, int flags, unsigned int seed)
{
	char *buf = xmalloc(bs);
	uint64_t done = 0;
	bool ok = true;

	while (done < len) {
		size_t n = len - done < bs ? len - done : bs;
		struct iovec iov = { .iov_base = buf, .iov_len = n };
		ssize_t ret;

		fill_pattern(buf, n, off + done, seed);
		ret = pwritev2(fd, &iov, 1, (flags & RWF_APPEND) ? -1 : (off_t)(off + done),
			       flags);
		if (ret != (ssize_t)n) {
			tap_diag("pwritev2 %zu at %llu (flags %#x): %zd (%s)", n,
				 (unsigned long long)(off + done), flags, ret,
				 ret < 0 ? strerror(errno) : "short");
			ok = false;
			break;
		}
		done += n;
	}
	free(buf);
	return ok;
}

/*
 * Does this file take RWF_UNCACHED? A one-byte preadv2(RWF_UNCACHED) at
 * offset 0 (at EOF of an empty file the flags are still checked).
 * Returns 0, or the errno of the refusal (EOPNOTSUPP: no support).
 */
static inline int uncached_probe(int fd)
{
	char c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };

	return preadv2(fd, &iov, 1, 0, RWF_UNCACHED) < 0 ? errno : 0;
}

/*
 * Write back and evict the page cache of [0, len) of @fd (pages mapped by
 * someone stay); drop_caches when fadvise left clean pages behind.
 */
static inline void evict_file(int fd, uint64_t len)
{
	if (fsync(fd))
		tap_bail("fsync: %s", strerror(errno));
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		tap_bail("fadvise: %s", strerror(errno));
	if (file_cachestat(fd, 0, len).nr_cache)
		drop_caches();
}

/* A file of @len pattern bytes, on disk and not in the page cache. */
static inline int make_cold_file(const char *path, uint64_t len,
				 unsigned int seed)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);

	if (!write_range_flags(fd, 0, len, 1 << 20, 0, seed))
		tap_bail("cannot create %s", path);
	evict_file(fd, len);
	return fd;
}

/* The value of /proc/vmstat counter @name, or -1 when there is none. */
static inline long long vmstat_counter(const char *name)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char key[64];
	long long val, found = -1;

	if (!f)
		tap_bail("/proc/vmstat: %s", strerror(errno));
	while (found < 0 && fscanf(f, "%63s %lld", key, &val) == 2)
		if (!strcmp(key, name))
			found = val;
	fclose(f);
	return found;
}

/* Pages of [off, off + len) of @fd in the page cache. */
static inline uint64_t nr_cached(int fd, uint64_t off, uint64_t len)
{
	return file_cachestat(fd, off, len).nr_cache;
}

/* Say which pages of [off, off + len) are cached (the first 32 runs). */
static inline void diag_cached_pages(int fd, uint64_t off, uint64_t len)
{
	uint64_t first = off / PAGE_SZ, end = pages_of(off + len), pg, start;
	int runs = 0;

	for (pg = first; pg < end && runs < 32; pg++) {
		if (!nr_cached(fd, pg * PAGE_SZ, PAGE_SZ))
			continue;
		for (start = pg; pg + 1 < end &&
		     nr_cached(fd, (pg + 1) * PAGE_SZ, PAGE_SZ); pg++)
			;
		tap_diag("  cached: pages %llu-%llu",
			 (unsigned long long)start, (unsigned long long)pg);
		runs++;
	}
}

/*
 * One case: cachestat() of exactly [off, off + len) finds @want pages
 * cached, right now (no waiting).
 */
static inline bool expect_cached(int fd, uint64_t off, uint64_t len,
				 uint64_t want, const char *what)
{
	struct cachestat cs = file_cachestat(fd, off, len);

	diag_cachestat(what, cs);
	if (cs.nr_cache != want)
		diag_cached_pages(fd, off, len);
	return tap_result(cs.nr_cache == want,
			  "%s: %llu pages of [%llu, +%llu) cached (want %llu)",
			  what, (unsigned long long)cs.nr_cache,
			  (unsigned long long)off, (unsigned long long)len,
			  (unsigned long long)want);
}

/*
 * One case, after uncached reads that began when uncached_drop_busy was
 * @busy_before: @want pages of [off, off + len) of @fd are cached right
 * now, plus at most one more for each folio those reads found locked and
 * left cached (a read never blocks for the drop; such a folio stays
 * flagged, for reclaim or a later uncached access). btrfs sets a folio
 * uptodate before it unlocks it at the end of a read, so a read on
 * another CPU can copy it while it is still locked.
 */
static inline bool expect_read_left(int fd, uint64_t off, uint64_t len,
				    uint64_t want, long long busy_before,
				    const char *what)
{
	struct cachestat cs = file_cachestat(fd, off, len);
	long long busy = vmstat_counter("uncached_drop_busy") - busy_before;
	uint64_t extra = cs.nr_cache > want ? cs.nr_cache - want : 0;

	diag_cachestat(what, cs);
	if (cs.nr_cache != want) {
		diag_cached_pages(fd, off, len);
		tap_diag("%s: the reads found %lld folio(s) locked", what, busy);
	}
	return tap_result(cs.nr_cache >= want && (long long)extra <= busy,
			  "%s: %llu pages of [%llu, +%llu) cached (want %llu, plus at most the %lld folio(s) the reads found locked)",
			  what, (unsigned long long)cs.nr_cache,
			  (unsigned long long)off, (unsigned long long)len,
			  (unsigned long long)want, busy);
}

/*
 * One case: of [0, len) of @fd exactly the pages before @split are cached,
 * every one of them, right now (no waiting).
 */
static inline bool expect_cached_below(int fd, uint64_t split, uint64_t len,
				       const char *what)
{
	uint64_t below = nr_cached(fd, 0, split);
	uint64_t above = nr_cached(fd, split, len - split);

	if (below != pages_of(split) || above)
		diag_cached_pages(fd, 0, len);
	return tap_result(below == pages_of(split) && !above,
			  "%s: [0, %llu) cached (%llu of %llu pages), the rest not (%llu)",
			  what, (unsigned long long)split,
			  (unsigned long long)below,
			  (unsigned long long)pages_of(split),
			  (unsigned long long)above);
}

/*
 * One case: at most @bound bytes of [off, off + len) of @fd are cached,
 * right now (for readahead leftovers: uncached_ra_leftover_bound()).
 */
static inline bool expect_cached_at_most(int fd, uint64_t off, uint64_t len,
					 uint64_t bound, const char *what)
{
	uint64_t bytes = nr_cached(fd, off, len) * PAGE_SZ;

	tap_diag("%s: %llu KiB of [%llu, +%llu) cached (bound %llu KiB)", what,
		 (unsigned long long)(bytes >> 10), (unsigned long long)off,
		 (unsigned long long)len, (unsigned long long)(bound >> 10));
	if (bytes > bound)
		diag_cached_pages(fd, off, len);
	return tap_result(bytes <= bound,
			  "%s: %llu KiB cached (bound %llu KiB)", what,
			  (unsigned long long)(bytes >> 10),
			  (unsigned long long)(bound >> 10));
}

/* Bound for the drop of written folios after fsync (see wait_range_settled). */
#define UNCACHED_SETTLE_MS	20000

/* Largest page cache folio the tests meet (PMD size): 2 MiB */
#define UNCACHED_MAX_FOLIO	(2ULL << 20)

/*
 * Is what @cs says is cached of [off, off + len) of @fd only the folio an
 * append ends in? The kernel keeps it for the next append while the file
 * is open for writing (@fd is) and its size is not page aligned. Folio
 * sizes are not visible from user space: accepted is one run of cached
 * pages, at most UNCACHED_MAX_FOLIO, that ends at the page holding EOF.
 */
static inline bool only_append_tail_cached(int fd, uint64_t off,
					   uint64_t len, struct cachestat cs)
{
	int mode = fcntl(fd, F_GETFL) & O_ACCMODE;
	uint64_t run = cs.nr_cache * PAGE_SZ, eof_page, run_start;
	struct stat st;

	if (!cs.nr_cache || mode == O_RDONLY || fstat(fd, &st) ||
	    !S_ISREG(st.st_mode) || !(st.st_size % PAGE_SZ) ||
	    run > UNCACHED_MAX_FOLIO)
		return false;
	/* the page holding the last byte, in the range */
	eof_page = (st.st_size - 1) / PAGE_SZ * PAGE_SZ;
	if (eof_page < off / PAGE_SZ * PAGE_SZ || eof_page >= off + len ||
	    eof_page + PAGE_SZ < run)
		return false;
	run_start = eof_page + PAGE_SZ - run;
	return run_start >= off / PAGE_SZ * PAGE_SZ &&
	       nr_cached(fd, run_start, run) == cs.nr_cache;
}

/*
 * One case: after fsync(), once writeback of [off, off + len) completed
 * (polled for at most UNCACHED_SETTLE_MS), @want pages of it stay cached.
 * With @want 0, the folio a write ended in at EOF may stay while @fd is
 * open for writing (only_append_tail_cached(); diagnosed).
 */
static inline bool expect_settled(int fd, uint64_t off, uint64_t len,
				  uint64_t want, const char *what)
{
	struct cachestat cs;
	bool tail = false;
	int waited;

	if (fsync(fd))
		tap_diag("%s: fsync: %s", what, strerror(errno));
	cs = wait_range_settled(fd, off, len, -1, UNCACHED_SETTLE_MS);
	for (waited = 0; waited < UNCACHED_SETTLE_MS; waited += 10) {
		tail = !want && only_append_tail_cached(fd, off, len, cs);
		if (cs.nr_cache == want || tail)
			break;
		usleep(10000);
		cs = wait_range_settled(fd, off, len, -1, UNCACHED_SETTLE_MS);
	}
	diag_cachestat(what, cs);
	if (tail)
		tap_diag("%s: %llu page(s) of the folio EOF falls in kept for the next append",
			 what, (unsigned long long)cs.nr_cache);
	else if (cs.nr_cache != want)
		diag_cached_pages(fd, off, len);
	return tap_result((cs.nr_cache == want || tail) && !cs.nr_dirty &&
			  !cs.nr_writeback,
			  "%s: %llu pages of [%llu, +%llu) cached after writeback (want %llu%s)",
			  what, (unsigned long long)cs.nr_cache,
			  (unsigned long long)off, (unsigned long long)len,
			  (unsigned long long)want,
			  want ? "" : ", or the folio an append ends in");
}

/* A byte range of an expected file: pattern @seed, or zeroes if @seed is 0. */
struct file_extent {
	uint64_t off;
	uint64_t len;
	unsigned int seed;
};

/*
 * After drop_caches, does the file read back from disk as @ext (@n
 * extents) with size @size?
 */
static inline bool file_matches_extents(int fd, const struct file_extent *ext,
					int n, uint64_t size)
{
	struct stat st;
	bool ok = true;
	uint64_t i;
	int e;

	drop_caches();
	if (fstat(fd, &st) || (uint64_t)st.st_size != size) {
		tap_diag("size %lld, want %llu", (long long)st.st_size,
			 (unsigned long long)size);
		ok = false;
	}
	for (e = 0; e < n; e++) {
		unsigned char *buf;

		if (ext[e].seed) {
			ok &= read_range_flags(fd, ext[e].off, ext[e].len,
					       1 << 20, 0, ext[e].seed);
			continue;
		}
		buf = xmalloc(ext[e].len);
		if (pread(fd, buf, ext[e].len, ext[e].off) != (ssize_t)ext[e].len)
			buf[0] = 1;
		for (i = 0; i < ext[e].len && !buf[i]; i++)
			;
		if (i < ext[e].len) {
			tap_diag("hole [%llu, +%llu) is not zeroes at %llu",
				 (unsigned long long)ext[e].off,
				 (unsigned long long)ext[e].len,
				 (unsigned long long)(ext[e].off + i));
			ok = false;
		}
		free(buf);
	}
	return ok;
}

/*
 * Word data for large files and racing threads: every 8-byte word encodes
 * a magic number, its own offset and the generation (1..WORD_GEN_MAX) of
 * the write that stored it, so a reader can tell a zero (hole), a word of
 * its own offset and a misplaced or garbage word apart. Offsets and
 * lengths are multiples of 8.
 */
#define WORD_MAGIC	0xa5cULL
#define WORD_GEN_MAX	((1U << 20) - 1)

static inline uint64_t data_word(uint64_t off, uint32_t gen)
{
	return WORD_MAGIC << 52 | (off >> 3 & 0xffffffffULL) << 20 | gen;
}

/* The generation of word @w found at @off, or 0 when it is not valid. */
static inline uint32_t word_gen(uint64_t w, uint64_t off)
{
	uint32_t gen = w & WORD_GEN_MAX;

	return gen && w == data_word(off, gen) ? gen : 0;
}

static inline void fill_words(void *buf, size_t len, uint64_t off,
			      uint32_t gen)
{
	uint64_t *w = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = data_word(off + i * 8, gen);
}

/* Byte index of the first word that is not generation @gen, or -1. */
static inline long check_words(const void *buf, size_t len, uint64_t off,
			       uint32_t gen)
{
	const uint64_t *w = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != data_word(off + i * 8, gen))
			return (long)(i * 8);
	return -1;
}

/*
 * Readahead of uncached reads. Like mainline's RWF_DONTCACHE, uncached
 * reads read ahead with the window the file asks for (read_ahead_kb of its
 * bdi, doubled by POSIX_FADV_SEQUENTIAL, or a larger request); the folios
 * read ahead are flagged uncached and dropped when the stream's later
 * reads copy them, so a stream that reads on to EOF leaves nothing. The
 * kernel documents the bound for one that stops: while its file is open,
 * at most 2 x W of read-ahead folios beyond the last byte it read, W =
 * max(window, request) (the window being consumed plus the one read ahead
 * asynchronously); once the reader reads elsewhere or releases the file,
 * none. Those leftovers stay flagged and are never promoted.
 */
#define UNCACHED_RA_MIN_WINDOW	(128ULL << 10)

/*
 * One folio of rounding slack on top of 2 x W: the kernel sizes windows in
 * pages but reads, marks and drops them in folios, so where the stream
 * stopped inside a folio the rest of that folio may count beyond the last
 * byte read. 64 KiB is enough for the tests: readahead builds no folio
 * larger than its window (order <= ilog2 of the window in pages) and
 * aligns folios to their size, so 128 KiB windows use folios of at most
 * 128 KiB, and the tests' partial reads stop on 64 KiB boundaries (their
 * requests larger than 128 KiB read to EOF): at most 64 KiB of a folio
 * lies past the stop.
 */
#define UNCACHED_RA_SLACK	(64ULL << 10)

/* read_ahead_kb of the bdi named @name in bytes, or 0 if there is none */
static inline uint64_t bdi_read_ahead(const char *name)
{
	char path[320];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &kb) != 1)
		kb = 0;
	fclose(f);
	return kb << 10;
}

/*
 * The name of the bdi of @fd's device ("MAJ:MIN"; a block device's own,
 * a file's filesystem's) in @name.
 */
static inline void fd_bdi_name(int fd, char *name, size_t size)
{
	struct stat st;
	dev_t dev;

	if (fstat(fd, &st))
		tap_bail("fstat: %s", strerror(errno));
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	snprintf(name, size, "%u:%u", major(dev), minor(dev));
}

/*
 * The readahead window of @fd's file in bytes: read_ahead_kb of its bdi,
 * named MAJ:MIN after the block device (the device itself, or the one the
 * filesystem is on). btrfs has a bdi of its own, btrfs-N, and raises its
 * read_ahead_kb to at least 4 MiB: the largest of those is taken.
 */
static inline uint64_t file_ra_window(int fd)
{
	uint64_t window = 0;
	struct dirent *de;
	char name[64];
	DIR *dir;

	fd_bdi_name(fd, name, sizeof(name));
	window = bdi_read_ahead(name);
	if (window)
		return window;
	dir = opendir("/sys/class/bdi");
	while (dir && (de = readdir(dir))) {
		uint64_t w;

		if (strncmp(de->d_name, "btrfs-", 6))
			continue;
		w = bdi_read_ahead(de->d_name);
		window = w > window ? w : window;
	}
	if (dir)
		closedir(dir);
	if (!window)
		tap_bail("no readahead setting found for device %s in /sys/class/bdi",
			 name);
	return window;
}

/*
 * Bytes of read-ahead folios an uncached stream of @req_bytes calls on @fd
 * may leave cached beyond the last byte it read, once it stopped and while
 * the file is open: 2 x W plus the slack above.
 */
static inline uint64_t uncached_ra_leftover_bound(int fd, uint64_t req_bytes)
{
	uint64_t window = file_ra_window(fd);

	if (window < req_bytes)
		window = req_bytes;
	return 2 * window + UNCACHED_RA_SLACK;
}

/*
 * Report (no case) the readahead an uncached stream of @req_bytes calls
 * left cached in [off, off + len), with uncached_ra_leftover_bound().
 */
static inline void diag_ra_leftover(int fd, uint64_t off, uint64_t len,
				    uint64_t req_bytes, const char *what)
{
	tap_diag("%s: leftover: %llu KiB (bound %llu KiB)", what,
		 (unsigned long long)(nr_cached(fd, off, len) * PAGE_SZ >> 10),
		 (unsigned long long)(uncached_ra_leftover_bound(fd, req_bytes) >> 10));
}

/* the bdis' debugfs directories (debugfs mounted by /init) */
#define BDI_DIR		"/sys/kernel/debug/bdi"

/*
 * Add the signed "@key" lines (kB) of file @name of bdi @bdi to *@sum;
 * false when it has none.
 */
static inline bool bdi_file_sum(const char *bdi, const char *name,
				const char *key, long long *sum)
{
	char path[512], line[256];
	bool seen = false;
	long long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", BDI_DIR, bdi, name);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, strlen(key)) ||
		    sscanf(line + strlen(key), " %lld", &v) != 1)
			continue;
		*sum += v;
		seen = true;
	}
	fclose(f);
	return seen;
}

/*
 * The sum over every bdi of the signed "@key" lines (kB) of file @name
 * (stats: the bdi's wbs together; wb_stats: one block per wb) in *@sum_out.
 * False when no bdi has the line: the kernel does not expose the counter.
 */
static inline bool bdi_sum(const char *name, const char *key, long long *sum_out)
{
	DIR *dir = opendir(BDI_DIR);
	struct dirent *de;
	long long sum = 0;
	bool seen = false;

	if (!dir)
		tap_bail("%s: %s (debugfs not mounted?)", BDI_DIR, strerror(errno));
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			seen |= bdi_file_sum(de->d_name, name, key, &sum);
	closedir(dir);
	if (!seen)
		tap_diag("no bdi has a '%s' line in %s: the kernel does not expose the write-behind counter",
			 key, name);
	*sum_out = sum;
	return seen;
}

/* tracefs, mounted by /init */
#define TRACING		"/sys/kernel/tracing"
#define TRACE_MAX_TASKS	64

/*
 * The writeback work each task of a trace is in: its writeback_start opens
 * one, its writeback_written closes it (background, periodic, sync ...
 * work). The write-behind pass of uncached writes puts inodes through
 * writeback outside any such work.
 */
struct trace_tasks {
	char name[TRACE_MAX_TASKS][64];
	bool in_work[TRACE_MAX_TASKS];
	int n;
};

/*
 * Account trace @line to its task (its first word): 1 if that task is in
 * a writeback work after the line, 0 if not, -1 for a line of no task.
 */
static inline int trace_in_work(struct trace_tasks *t, const char *line)
{
	char who[64];
	int i;

	if (line[0] == '#' || sscanf(line, "%63s", who) != 1)
		return -1;
	for (i = 0; i < t->n && strcmp(t->name[i], who); i++)
		;
	if (i == t->n) {
		if (t->n == TRACE_MAX_TASKS)
			tap_bail("more than %d tasks in the trace",
				 TRACE_MAX_TASKS);
		snprintf(t->name[i], sizeof(t->name[i]), "%s", who);
		t->in_work[t->n++] = false;
	}
	if (strstr(line, " writeback_start: "))
		t->in_work[i] = true;
	else if (strstr(line, " writeback_written: "))
		t->in_work[i] = false;
	return t->in_work[i];
}

#endif /* UNCACHED_IO_H */
