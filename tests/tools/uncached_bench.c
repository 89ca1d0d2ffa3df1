// SPDX-License-Identifier: GPL-2.0
/*
 * uncached_bench - streaming read/write benchmark for buffered, RWF_UNCACHED
 * and O_DIRECT I/O, after the seeds' test: N files, one thread each, each
 * thread reads (or writes) its file sequentially in BLOCK-sized calls,
 * wrapping at FILESIZE, until the time (or byte) budget is spent.
 *
 * Every second it prints the throughput of that second and what the system
 * did meanwhile (from /proc): the page cache size, dirty + writeback
 * memory, the CPU time kswapd used and the kernel CPU time (system + irq +
 * softirq, all CPUs). At the end: totals, the first-5-seconds figure and
 * the steady-state figure, the mean of the seconds after the page cache
 * first filled (the first second kswapd ran), or of the last half of the
 * run when it never filled. Writes end with fsync() of every file, timed
 * separately: the MB/s figures measure the per-second progress of the
 * write calls only. MB means MiB (2^20 bytes) throughout.
 *
 * With --json, machine-readable lines follow the text ones:
 *   uncached-bench-sec {...}      one per second
 *   uncached-bench-summary {...}  one at the end
 *
 * With --hot FILE, a neighbour runs beside the streams: a "hot" reader doing
 * random 4 KiB buffered reads of FILE (--hot-size, default 30% of the RAM;
 * created with O_DIRECT when missing, read once fully before the clock
 * starts). A read is a page-cache hit when cachestat() found its page
 * cached just before. With -j 0 the hot reader runs alone. Its figures
 * follow the summary (uncached-bench-hot {...} with --json).
 *
 * Other actions: --prepare creates the data set (O_DIRECT writes, so the
 * page cache stays clean; files of the right size are reused), --cachestat
 * reports how much of each file is in the page cache.
 *
 * When -f names a block device, thread i uses its region [i * FILESIZE,
 * (i + 1) * FILESIZE) instead of the file PREFIX.i (the device must hold
 * them all); --prepare writes the regions (always: a device cannot tell).
 * -o copy reads the data set and writes what it read to the same offsets of
 * --dst (files DST.i, or the regions of a device), a dd of 64 KiB calls per
 * thread, with the mode of -m on both sides; MB/s count the bytes copied.
 *
 * --fadvise ADVICE calls posix_fadvise(fd, 0, 0, POSIX_FADV_<ADVICE>) on
 * every data file (or device) a thread opens, right after open(), as fio
 * does by default (it gives POSIX_FADV_SEQUENTIAL for sequential jobs):
 * sequential doubles the file's readahead window.
 *
 * The page cache is Cached + Buffers of /proc/meminfo: a block device's
 * page cache is counted in Buffers.
 */
#include "uncached_io.h"

#include <dirent.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/statfs.h>
#include <time.h>

#define MIB		(1024.0 * 1024.0)
#define MAX_THREADS	64
#define MAX_SECONDS	3600
#define MAX_KSWAPD	16
#define PREP_BLOCK	(1 << 20)
#define HOT_BLOCK	4096

enum action { ACT_RUN, ACT_PREPARE, ACT_CACHESTAT };
enum mode { MODE_BUFFERED, MODE_UNCACHED, MODE_DIRECT };
enum op { OP_READ, OP_WRITE, OP_COPY };

static const char *const mode_names[] = { "buffered", "uncached", "direct" };
static const char *const op_names[] = { "read", "write", "copy" };
/* --fadvise: the names of the POSIX_FADV_* advice, in fadvise_values' order */
static const char *const fadvise_names[] = { "normal", "sequential",
					     "random", "noreuse" };
static const int fadvise_values[] = { POSIX_FADV_NORMAL,
				      POSIX_FADV_SEQUENTIAL,
				      POSIX_FADV_RANDOM, POSIX_FADV_NOREUSE };
_Static_assert(ARRAY_SIZE(fadvise_names) == ARRAY_SIZE(fadvise_values),
	       "a value for every --fadvise name");

/*
 * The files of the threads: PREFIX.0 .. PREFIX.<THREADS-1>, or, when PREFIX
 * is a block device, its regions [i * FILESIZE, (i + 1) * FILESIZE).
 */
struct fileset {
	const char *prefix;
	bool dev;
	char names[MAX_THREADS][4096];
	char desc[4200];
};

static struct fileset data_set;	/* -f */
static struct fileset dst_set;	/* --dst: where -o copy writes */

struct options {
	enum action action;
	enum mode mode;
	enum op op;
	size_t bs;
	int threads;
	uint64_t filesize;
	int seconds;
	uint64_t max_bytes;
	const char *label;
	bool json;
	bool truncate;
	bool drop;
	const char *hot;	/* the hot reader's file, or NULL */
	uint64_t hot_size;
	int fadvise;		/* index in fadvise_names, or -1: none */
};

static struct options opt = {
	.mode = MODE_BUFFERED,
	.bs = 64 << 10,
	.threads = -1,
	.filesize = 1ULL << 30,
	.label = "",
	.drop = true,
	.fadvise = -1,
};

/* One side of a worker's calls: a file, or a region of a device. */
struct side {
	int fd;			/* -1: not used by this operation */
	uint64_t base;		/* where the file or region starts */
	const char *name;
};

/* One worker per file (or region): reads in, writes out, or both (copy). */
struct worker {
	pthread_t thread;
	int idx;
	void *buf;
	_Atomic uint64_t bytes;
	struct side in;		/* read from (read, copy) */
	struct side out;	/* written to (write, copy) */
	int err;		/* errno of the failed call, or 0 */
	const char *what;	/* which call failed */
	const char *err_name;	/* of which file */
};

static struct worker workers[MAX_THREADS];

/* The neighbour of the streams: random 4 KiB buffered reads of opt.hot. */
struct hot_reader {
	pthread_t thread;
	int fd;
	void *buf;
	_Atomic uint64_t ops;
	_Atomic uint64_t hits;	/* reads whose page was cached before */
	int err;
	const char *what;
	struct cachestat before, after;	/* of the whole file */
};

static struct hot_reader hot;

static atomic_bool stop;
static _Atomic uint64_t reserved;
static atomic_int running;

/* What the system looked like at one instant (from /proc). */
struct snapshot {
	double t;		/* seconds since the start */
	uint64_t bytes;		/* transferred by all workers */
	double cached_mb, dirty_wb_mb, free_mb;
	double kswapd_s;	/* CPU of all kswapd threads */
	double user_s, sys_s, iowait_s, idle_s;	/* /proc/stat, all CPUs */
	double dev_rd_mb, dev_wr_mb;	/* /proc/diskstats, all NVMe disks */
	uint64_t dev_rd_ios, dev_wr_ios;
	uint64_t hot_ops, hot_hits;	/* the hot reader's reads and hits */
};

static struct snapshot samples[MAX_SECONDS + 2];
static int nsamples;
static pid_t kswapd_pids[MAX_KSWAPD];
static int nkswapd;
static double clk_tck;

static void __attribute__((noreturn, format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "uncached_bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: uncached_bench -f FILE-PREFIX [-m buffered|uncached|direct]\n"
		"  [-o read|write|copy --dst DST-PREFIX] [-b BLOCK] [-j THREADS]\n"
		"  [-s FILESIZE] [-t SECONDS] [-n BYTES] [--truncate] [--no-drop]\n"
		"  [--json] [--label TEXT] [--fadvise normal|sequential|random|noreuse]\n"
		"  [--hot FILE [--hot-size SIZE]]   (-j 0: the hot reader alone)\n"
		"  uncached_bench -f FILE-PREFIX [-j THREADS] [-s FILESIZE] --prepare\n"
		"  uncached_bench -f FILE-PREFIX [-j THREADS] [-s FILESIZE] --cachestat\n"
		"Files are FILE-PREFIX.0 .. FILE-PREFIX.<THREADS-1>, one thread each;\n"
		"a block device as FILE-PREFIX (or DST-PREFIX): thread i uses its bytes\n"
		"[i * FILESIZE, (i + 1) * FILESIZE). -o copy reads FILE-PREFIX's and\n"
		"writes DST-PREFIX's. Sizes take K, M or G (powers of 1024). Defaults:\n"
		"buffered read, 64K blocks, one thread per CPU, 1G files, 30 seconds.\n");
	exit(2);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "uncached_bench: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static uint64_t parse_size(const char *s, const char *what)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		usage_error("%s: '%s' is not a size", what, s);
	switch (*end) {
	case 'G': case 'g':
		v <<= 10;
		/* fall through */
	case 'M': case 'm':
		v <<= 10;
		/* fall through */
	case 'K': case 'k':
		v <<= 10;
		end++;
		break;
	}
	if (*end || !v)
		usage_error("%s: '%s' is not a positive size", what, s);
	return v;
}

static long parse_num(const char *s, const char *what, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		usage_error("%s must be a number from %ld to %ld, not '%s'",
			    what, min, max, s);
	return v;
}

static int parse_choice(const char *s, const char *const *names, int n,
			const char *what)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	usage_error("unknown %s '%s'", what, s);
}

static void check_label(const char *s)
{
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/=+-", *s))
			usage_error("--label allows letters, digits and _.:/=+- only");
}

/* 30% of MemTotal, in whole MiB: the hot reader's default file size. */
static uint64_t default_hot_size(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kb = 0;

	if (!f || fscanf(f, "MemTotal: %llu kB", &kb) != 1 || !kb)
		die("cannot read MemTotal from /proc/meminfo");
	fclose(f);
	return (kb * 3 / 10 >> 10) << 20;
}

/* Is @set's prefix a block device? */
static void find_kind(struct fileset *set)
{
	struct stat st;

	set->dev = !stat(set->prefix, &st) && S_ISBLK(st.st_mode);
	snprintf(set->desc, sizeof(set->desc), set->dev ? "regions of %s" :
		 "files %s.N", set->prefix);
}

static void validate_sets(void)
{
	if (!data_set.prefix)
		usage_error("-f FILE-PREFIX is required");
	if ((opt.op == OP_COPY) != !!dst_set.prefix)
		usage_error("-o copy and --dst DST-PREFIX go together");
	if (dst_set.prefix && !strcmp(dst_set.prefix, data_set.prefix))
		usage_error("--dst must differ from -f");
	find_kind(&data_set);
	if (dst_set.prefix)
		find_kind(&dst_set);
	if (opt.truncate && (data_set.dev || dst_set.dev))
		usage_error("--truncate: a block device cannot be truncated");
}

static void validate_options(void)
{
	validate_sets();
	if (!opt.threads && !opt.hot)
		usage_error("-j 0 (no streams) needs --hot");
	if (opt.hot && !opt.hot_size)
		opt.hot_size = default_hot_size();
	if (opt.hot_size % HOT_BLOCK)
		usage_error("--hot-size must be a multiple of 4K");
	if (opt.threads < 0)
		opt.threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ?
			      sysconf(_SC_NPROCESSORS_ONLN) : 1;
	if (opt.threads > MAX_THREADS)
		opt.threads = MAX_THREADS;
	if (opt.bs % 512 || opt.bs > (64 << 20))
		usage_error("-b must be a multiple of 512 up to 64M");
	if (opt.filesize % opt.bs || opt.filesize % 4096)
		usage_error("-s must be a multiple of the block size and of 4K");
	if (!opt.seconds && !opt.max_bytes)
		opt.seconds = 30;
	if (!opt.seconds)
		opt.seconds = MAX_SECONDS;
}

static void parse_args(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "label", required_argument, NULL, 'L' },
		{ "prepare", no_argument, NULL, 'P' },
		{ "cachestat", no_argument, NULL, 'C' },
		{ "truncate", no_argument, NULL, 'T' },
		{ "no-drop", no_argument, NULL, 'D' },
		{ "hot", required_argument, NULL, 'H' },
		{ "hot-size", required_argument, NULL, 'S' },
		{ "dst", required_argument, NULL, 'd' },
		{ "fadvise", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "m:o:b:j:s:t:n:f:h", longs,
				NULL)) != -1) {
		switch (c) {
		case 'm':
			opt.mode = parse_choice(optarg, mode_names, 3, "mode");
			break;
		case 'o':
			opt.op = parse_choice(optarg, op_names, 3, "operation");
			break;
		case 'b':
			opt.bs = parse_size(optarg, "-b");
			break;
		case 'j':
			opt.threads = parse_num(optarg, "-j", 0, MAX_THREADS);
			break;
		case 's':
			opt.filesize = parse_size(optarg, "-s");
			break;
		case 't':
			opt.seconds = parse_num(optarg, "-t", 1, MAX_SECONDS);
			break;
		case 'n':
			opt.max_bytes = parse_size(optarg, "-n");
			break;
		case 'f':
			data_set.prefix = optarg;
			break;
		case 'd':
			dst_set.prefix = optarg;
			break;
		case 'J':
			opt.json = true;
			break;
		case 'L':
			check_label(optarg);
			opt.label = optarg;
			break;
		case 'P':
			opt.action = ACT_PREPARE;
			break;
		case 'C':
			opt.action = ACT_CACHESTAT;
			break;
		case 'T':
			opt.truncate = true;
			break;
		case 'D':
			opt.drop = false;
			break;
		case 'H':
			opt.hot = optarg;
			break;
		case 'S':
			opt.hot_size = parse_size(optarg, "--hot-size");
			break;
		case 'A':
			opt.fadvise = parse_choice(optarg, fadvise_names,
						   ARRAY_SIZE(fadvise_names),
						   "--fadvise advice");
			break;
		case 'h':
			usage_error("help");
		default:
			usage_error("bad option");
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	validate_options();
}

/* The file of thread @idx in @set: PREFIX.idx, or the device. */
static const char *member_name(struct fileset *set, int idx)
{
	if (set->dev)
		return set->prefix;
	snprintf(set->names[idx], sizeof(set->names[idx]), "%s.%d",
		 set->prefix, idx);
	return set->names[idx];
}

/* Where thread @idx's bytes of @set start. */
static uint64_t member_base(const struct fileset *set, int idx)
{
	return set->dev ? idx * opt.filesize : 0;
}

static bool writes(void)
{
	return opt.op != OP_READ;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- what the system does: /proc ---- */

static void find_kswapd(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	char path[300], comm[32];
	FILE *f;

	if (!d)
		die("cannot open /proc: %s", strerror(errno));
	while ((de = readdir(d)) && nkswapd < MAX_KSWAPD) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "kswapd", 6))
			kswapd_pids[nkswapd++] = atoi(de->d_name);
		fclose(f);
	}
	closedir(d);
}

/* utime + stime of @pid in seconds (fields 14 and 15 of /proc/PID/stat). */
static double task_cpu(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return (ut + st) / clk_tck;
}

static void read_proc_stat(struct snapshot *s)
{
	unsigned long long u, ni, sy, id, io, irq, sirq;
	FILE *f = fopen("/proc/stat", "r");

	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &u, &ni,
			 &sy, &id, &io, &irq, &sirq) != 7)
		die("cannot parse /proc/stat");
	fclose(f);
	s->user_s = (u + ni) / clk_tck;
	s->sys_s = (sy + irq + sirq) / clk_tck;
	s->iowait_s = io / clk_tck;
	s->idle_s = id / clk_tck;
}

static void read_meminfo(struct snapshot *s)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kb;
	char key[64];

	if (!f)
		die("cannot open /proc/meminfo: %s", strerror(errno));
	s->dirty_wb_mb = s->cached_mb = 0;
	while (fscanf(f, "%63s %llu kB\n", key, &kb) == 2) {
		if (!strcmp(key, "Cached:") || !strcmp(key, "Buffers:"))
			s->cached_mb += kb / 1024.0;
		else if (!strcmp(key, "MemFree:"))
			s->free_mb = kb / 1024.0;
		else if (!strcmp(key, "Dirty:") || !strcmp(key, "Writeback:"))
			s->dirty_wb_mb += kb / 1024.0;
	}
	fclose(f);
}

/* Sectors and requests of all whole NVMe disks (nvmeXnY). */
static void read_diskstats(struct snapshot *s)
{
	unsigned long long rio, rsec, wio, wsec;
	FILE *f = fopen("/proc/diskstats", "r");
	char name[64], line[512];
	int a, b;

	s->dev_rd_mb = s->dev_wr_mb = 0;
	s->dev_rd_ios = s->dev_wr_ios = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*u %*u %63s %llu %*u %llu %*u %llu %*u %llu",
			   name, &rio, &rsec, &wio, &wsec) != 5 ||
		    sscanf(name, "nvme%dn%d", &a, &b) != 2 || strchr(name, 'p'))
			continue;
		s->dev_rd_mb += rsec * 512 / MIB;
		s->dev_wr_mb += wsec * 512 / MIB;
		s->dev_rd_ios += rio;
		s->dev_wr_ios += wio;
	}
	fclose(f);
}

static void take_snapshot(struct snapshot *s, double t0)
{
	int i;

	s->t = now() - t0;
	s->bytes = 0;
	for (i = 0; i < opt.threads; i++)
		s->bytes += atomic_load(&workers[i].bytes);
	s->hot_ops = atomic_load(&hot.ops);
	s->hot_hits = atomic_load(&hot.hits);
	s->kswapd_s = 0;
	for (i = 0; i < nkswapd; i++)
		s->kswapd_s += task_cpu(kswapd_pids[i]);
	read_proc_stat(s);
	read_meminfo(s);
	read_diskstats(s);
}

/* ---- the workers ---- */

static bool reserve_block(void)
{
	if (!opt.max_bytes)
		return true;
	return atomic_fetch_add(&reserved, opt.bs) < opt.max_bytes;
}

/* One call on side @s at @off (unless @s is unused); false if it failed. */
static bool do_io(struct worker *w, const struct side *s, uint64_t off,
		  bool write)
{
	struct iovec iov = { .iov_base = w->buf, .iov_len = opt.bs };
	int flags = opt.mode == MODE_UNCACHED ? RWF_UNCACHED : 0;
	ssize_t ret;

	if (s->fd < 0)
		return true;
	if (write)
		ret = pwritev2(s->fd, &iov, 1, s->base + off, flags);
	else
		ret = preadv2(s->fd, &iov, 1, s->base + off, flags);
	if (ret == (ssize_t)opt.bs)
		return true;
	w->err = ret < 0 ? errno : EIO;
	w->what = ret < 0 ? (write ? "pwritev2" : "preadv2") : "short transfer";
	w->err_name = s->name;
	return false;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t off = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed) &&
	       reserve_block()) {
		if (!do_io(w, &w->in, off, false) ||
		    !do_io(w, &w->out, off, true)) {
			atomic_store(&stop, true);
			break;
		}
		atomic_fetch_add_explicit(&w->bytes, opt.bs,
					  memory_order_relaxed);
		off += opt.bs;
		if (off >= opt.filesize)
			off = 0;
	}
	atomic_fetch_sub(&running, 1);
	return NULL;
}

/* The hot reader: random 4 KiB buffered reads; cachestat() counts hits. */
static void *hot_main(void *arg)
{
	uint64_t pages = opt.hot_size / HOT_BLOCK, seed = 1, off;
	struct cachestat_range range = { .len = HOT_BLOCK };
	struct cachestat cs;
	ssize_t ret;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		off = rand64(&seed) % pages * HOT_BLOCK;
		range.off = off;
		if (syscall(__NR_cachestat, hot.fd, &range, &cs, 0)) {
			hot.err = errno;
			hot.what = "cachestat";
			break;
		}
		ret = pread(hot.fd, hot.buf, HOT_BLOCK, off);
		if (ret != HOT_BLOCK) {
			hot.err = ret < 0 ? errno : EIO;
			hot.what = "pread";
			break;
		}
		atomic_fetch_add_explicit(&hot.ops, 1, memory_order_relaxed);
		if (cs.nr_cache)
			atomic_fetch_add_explicit(&hot.hits, 1,
						  memory_order_relaxed);
	}
	if (hot.err)
		atomic_store(&stop, true);
	return NULL;
}

/* A device must hold the regions of all threads. */
static void check_device_size(int fd, const char *name)
{
	off_t size = lseek(fd, 0, SEEK_END);

	if (size < 0)
		die("size of %s: %s", name, strerror(errno));
	if ((uint64_t)size < opt.threads * opt.filesize)
		die("%s has %lld bytes, fewer than -j %d x -s %llu",
		    name, (long long)size, opt.threads,
		    (unsigned long long)opt.filesize);
}

/* --fadvise: posix_fadvise() of the whole of @s's file (or device). */
static void advise(const struct side *s)
{
	int err;

	if (opt.fadvise < 0)
		return;
	err = posix_fadvise(s->fd, 0, 0, fadvise_values[opt.fadvise]);
	if (err)
		die("posix_fadvise %s %s: %s", s->name,
		    fadvise_names[opt.fadvise], strerror(err));
}

/* Thread @idx's file of @set, opened for reading or writing, as @s. */
static void open_side(struct side *s, struct fileset *set, int idx,
		      bool write)
{
	int flags = write ? O_WRONLY : O_RDONLY;
	struct stat st;

	s->name = member_name(set, idx);
	s->base = member_base(set, idx);
	if (write && !set->dev)
		flags |= O_CREAT;
	if (opt.mode == MODE_DIRECT)
		flags |= O_DIRECT;
	s->fd = open(s->name, flags, 0644);
	if (s->fd < 0)
		die("open %s: %s", s->name, strerror(errno));
	advise(s);
	if (set->dev) {
		check_device_size(s->fd, s->name);
		return;
	}
	if (fstat(s->fd, &st))
		die("stat %s: %s", s->name, strerror(errno));
	if (!write && (uint64_t)st.st_size < opt.filesize)
		die("%s has %lld bytes, fewer than -s %llu: make the data set with --prepare first",
		    s->name, (long long)st.st_size,
		    (unsigned long long)opt.filesize);
	if (opt.truncate && write && ftruncate(s->fd, 0))
		die("truncate %s: %s", s->name, strerror(errno));
}

/* Read: in = the data set; write: out = the data set; copy: both. */
static void open_worker(struct worker *w, int idx)
{
	w->in.fd = w->out.fd = -1;
	if (opt.op != OP_WRITE)
		open_side(&w->in, &data_set, idx, false);
	if (opt.op == OP_WRITE)
		open_side(&w->out, &data_set, idx, true);
	if (opt.op == OP_COPY)
		open_side(&w->out, &dst_set, idx, true);
}

static void prepare_file(const char *name, uint64_t size, void *buf);

/*
 * The hot file: created when missing, then read once fully (buffered) so
 * that it starts in the page cache, as a working set would be.
 */
static void start_hot_reader(void)
{
	double t = now();
	uint64_t off;
	void *buf;

	if (posix_memalign(&buf, 4096, PREP_BLOCK))
		die("out of memory");
	fill_pattern(buf, PREP_BLOCK, 0, 2);
	prepare_file(opt.hot, opt.hot_size, buf);
	hot.fd = open(opt.hot, O_RDONLY);
	if (hot.fd < 0)
		die("open %s: %s", opt.hot, strerror(errno));
	for (off = 0; off < opt.hot_size; off += PREP_BLOCK)
		if (pread(hot.fd, buf, PREP_BLOCK, off) <= 0)
			die("read %s: %s", opt.hot, strerror(errno));
	free(buf);
	hot.before = file_cachestat(hot.fd, 0, 0);
	printf("hot reader: %s warmed in %.1f s, %.0f of %llu MB cached; random %d KB buffered reads\n",
	       opt.hot, now() - t, hot.before.nr_cache * PAGE_SZ / MIB,
	       (unsigned long long)(opt.hot_size >> 20), HOT_BLOCK >> 10);
	if (posix_memalign(&hot.buf, 4096, HOT_BLOCK))
		die("out of memory");
	if (pthread_create(&hot.thread, NULL, hot_main, NULL))
		die("cannot start the hot reader");
}

static void start_workers(void)
{
	int i;

	atomic_store(&running, opt.threads);
	for (i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];

		w->idx = i;
		open_worker(w, i);
		if (posix_memalign(&w->buf, 4096, opt.bs))
			die("out of memory for a %zu-byte buffer", opt.bs);
		fill_pattern(w->buf, opt.bs, 0, i + 1);
	}
	for (i = 0; i < opt.threads; i++)
		if (pthread_create(&workers[i].thread, NULL, worker_main,
				   &workers[i]))
			die("cannot start thread %d", i);
}

/* Stop and join the workers; die on the first one that failed. */
static void stop_workers(void)
{
	int i;

	atomic_store(&stop, true);
	for (i = 0; i < opt.threads; i++)
		pthread_join(workers[i].thread, NULL);
	if (opt.hot)
		pthread_join(hot.thread, NULL);
	for (i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];

		if (w->err == EOPNOTSUPP && opt.mode == MODE_UNCACHED)
			die("%s of %s: RWF_UNCACHED is not supported here (%s): a kernel without the series, or a filesystem or device without FOP_UNCACHED",
			    w->what, w->err_name, strerror(w->err));
		if (w->err)
			die("%s of %s failed: %s", w->what, w->err_name,
			    strerror(w->err));
	}
	if (hot.err)
		die("%s of %s (hot reader) failed: %s", hot.what, opt.hot,
		    strerror(hot.err));
	if (opt.hot) {
		hot.after = file_cachestat(hot.fd, 0, 0);
		close(hot.fd);
		free(hot.buf);
	}
}

/* ---- reporting ---- */

static const char *fs_name(int fd)
{
	struct statfs sf;
	struct stat st;

	if (!fstat(fd, &st) && S_ISBLK(st.st_mode))
		return "blockdev";
	if (fstatfs(fd, &sf))
		return "unknown";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x9123683E: return "btrfs";
	case 0x01021994: return "tmpfs";
	case 0x858458f6: return "ramfs";
	}
	return "other";
}

static double rate(int from, int to)
{
	const struct snapshot *a = &samples[from], *b = &samples[to];

	if (b->t <= a->t)
		return 0;
	return (b->bytes - a->bytes) / MIB / (b->t - a->t);
}

static void print_second(int i)
{
	const struct snapshot *a = &samples[i - 1], *b = &samples[i];

	if (b->t + 0.05 >= i)
		printf("%4ds:", i);
	else
		printf("%5.1fs", b->t);
	printf(" %6.0fMB/sec  cache %4.0fMB  dirty+wb %4.0fMB  kswapd %.2fs  sys %.2fs",
	       rate(i - 1, i), b->cached_mb, b->dirty_wb_mb,
	       b->kswapd_s - a->kswapd_s, b->sys_s - a->sys_s);
	if (opt.hot)
		printf("  hot %llu reads, %llu hits",
		       (unsigned long long)(b->hot_ops - a->hot_ops),
		       (unsigned long long)(b->hot_hits - a->hot_hits));
	printf("\n");
	if (opt.json)
		printf("uncached-bench-sec {\"label\":\"%s\",\"sec\":%d,\"t\":%.3f,\"dt\":%.3f,\"mbps\":%.1f,\"cache_mb\":%.1f,\"dirty_wb_mb\":%.1f,\"free_mb\":%.1f,\"kswapd_s\":%.3f,\"sys_s\":%.3f,\"user_s\":%.3f,\"iowait_s\":%.3f,\"dev_rd_mb\":%.1f,\"dev_wr_mb\":%.1f,\"hot_ops\":%llu,\"hot_hits\":%llu}\n",
		       opt.label, i, b->t, b->t - a->t, rate(i - 1, i),
		       b->cached_mb, b->dirty_wb_mb, b->free_mb,
		       b->kswapd_s - a->kswapd_s, b->sys_s - a->sys_s,
		       b->user_s - a->user_s, b->iowait_s - a->iowait_s,
		       b->dev_rd_mb - a->dev_rd_mb, b->dev_wr_mb - a->dev_wr_mb,
		       (unsigned long long)(b->hot_ops - a->hot_ops),
		       (unsigned long long)(b->hot_hits - a->hot_hits));
	fflush(stdout);
}

static bool failed(void)
{
	int i;

	for (i = 0; i < opt.threads; i++)
		if (workers[i].err)
			return true;
	return hot.err != 0;
}

/* Sample /proc every second until the budget is spent or workers end. */
static void sample_loop(double t0)
{
	double next = 1, left;

	for (;;) {
		/* streams all ended; or, for the hot reader alone, it failed */
		bool done = opt.threads ? !atomic_load(&running) :
					  atomic_load(&stop);

		left = next - (now() - t0);
		if (!done && left > 0) {
			usleep(left > 0.05 ? 50000 : (useconds_t)(left * 1e6));
			continue;
		}
		nsamples++;
		take_snapshot(&samples[nsamples], t0);
		if (done && failed())
			return;		/* stop_workers() says why */
		print_second(nsamples);
		if (done || nsamples >= opt.seconds)
			return;
		next += 1;
	}
}

struct summary {
	int last;		/* index of the last sample */
	int fill;		/* second in which kswapd first ran, or 0 */
	int steady_from;	/* first second of the steady window */
	double cache_peak, dirty_wb_peak;
	double fsync_s, cache_after_fsync;
	double sys_after_fsync;	/* /proc/stat kernel CPU after the fsync */
	const char *fs;
};

static void find_windows(struct summary *sm)
{
	int i, n = nsamples;

	/* a last partial second (the byte budget ran out) is not steady */
	if (n > 1 && samples[n].t - samples[n - 1].t < 0.5)
		n--;
	sm->last = n;
	sm->fill = 0;
	for (i = 1; i <= nsamples && !sm->fill; i++)
		if (samples[i].kswapd_s > samples[0].kswapd_s + 1e-6)
			sm->fill = i;
	if (sm->fill && n - sm->fill >= 2)
		sm->steady_from = sm->fill + 1;
	else
		sm->steady_from = n / 2 + 1;
	sm->cache_peak = sm->dirty_wb_peak = 0;
	for (i = 0; i <= nsamples; i++) {
		if (samples[i].cached_mb > sm->cache_peak)
			sm->cache_peak = samples[i].cached_mb;
		if (samples[i].dirty_wb_mb > sm->dirty_wb_peak)
			sm->dirty_wb_peak = samples[i].dirty_wb_mb;
	}
}

static double avg_kb(double mb, uint64_t ios)
{
	return ios ? mb * 1024 / ios : 0;
}

static void print_device_io(const struct snapshot *a, const struct snapshot *b)
{
	double rd = b->dev_rd_mb - a->dev_rd_mb, wr = b->dev_wr_mb - a->dev_wr_mb;
	uint64_t rio = b->dev_rd_ios - a->dev_rd_ios;
	uint64_t wio = b->dev_wr_ios - a->dev_wr_ios;

	printf("  device I/O   %.0f MB read in %llu requests (%.0f KB each), %.0f MB written in %llu requests (%.0f KB each), all NVMe disks\n",
	       rd, (unsigned long long)rio, avg_kb(rd, rio), wr,
	       (unsigned long long)wio, avg_kb(wr, wio));
}

static void print_summary_text(const struct summary *sm)
{
	const struct snapshot *s0 = &samples[0], *e = &samples[nsamples];
	const struct snapshot *sa = &samples[sm->steady_from - 1];
	const struct snapshot *sb = &samples[sm->last];
	int first5 = sm->last < 5 ? sm->last : 5;
	double steady_secs = sb->t - sa->t;

	printf("summary: %s %s on %s, %d file(s) x %llu MB, %zu KB blocks (MB = 2^20 bytes)\n",
	       op_names[opt.op], mode_names[opt.mode], sm->fs,
	       opt.threads, (unsigned long long)(opt.filesize >> 20),
	       opt.bs >> 10);
	printf("  total        %.0f MB in %.1f s: %.1f MB/s\n",
	       e->bytes / MIB, e->t, rate(0, nsamples));
	printf("  first %d s    %.1f MB/s\n", first5, rate(0, first5));
	printf("  steady       %.1f MB/s (seconds %d-%d: %s)\n",
	       rate(sm->steady_from - 1, sm->last), sm->steady_from, sm->last,
	       sm->fill && sm->steady_from == sm->fill + 1 ?
	       "after the page cache filled" :
	       sm->fill ? "the last half; the cache filled too late" :
	       "the last half; the page cache never filled");
	printf("  kswapd CPU   %.2f s (%.2f s per steady second)\n",
	       e->kswapd_s - s0->kswapd_s,
	       steady_secs > 0 ? (sb->kswapd_s - sa->kswapd_s) / steady_secs : 0);
	printf("  kernel CPU   %.2f s, user CPU %.2f s (all CPUs; kernel = system + irq + softirq)\n",
	       e->sys_s - s0->sys_s, e->user_s - s0->user_s);
	printf("  page cache   %.0f MB at the start, %.0f MB peak, %.0f MB at the end; dirty+writeback peak %.0f MB\n",
	       s0->cached_mb, sm->cache_peak, e->cached_mb, sm->dirty_wb_peak);
	print_device_io(s0, e);
	if (writes())
		printf("  fsync        %.2f s after the timed part; page cache then %.0f MB; kernel CPU with it %.2f s\n",
		       sm->fsync_s, sm->cache_after_fsync,
		       sm->sys_after_fsync - s0->sys_s);
}

static void print_summary_json(const struct summary *sm)
{
	const struct snapshot *s0 = &samples[0], *e = &samples[nsamples];
	const struct snapshot *sa = &samples[sm->steady_from - 1];
	const struct snapshot *sb = &samples[sm->last];
	int first5 = sm->last < 5 ? sm->last : 5;

	printf("uncached-bench-summary {\"label\":\"%s\",\"op\":\"%s\",\"mode\":\"%s\",\"fs\":\"%s\",\"bs\":%zu,\"threads\":%d,\"filesize\":%llu,\"truncate\":%s,",
	       opt.label, op_names[opt.op], mode_names[opt.mode],
	       sm->fs, opt.bs, opt.threads,
	       (unsigned long long)opt.filesize,
	       opt.truncate ? "true" : "false");
	printf("\"seconds\":%.3f,\"mb\":%.1f,\"mbps_total\":%.2f,\"mbps_first5\":%.2f,\"mbps_steady\":%.2f,\"fill_sec\":%d,\"steady_from\":%d,\"steady_to\":%d,",
	       e->t, e->bytes / MIB, rate(0, nsamples), rate(0, first5),
	       rate(sm->steady_from - 1, sm->last), sm->fill,
	       sm->steady_from, sm->last);
	printf("\"kswapd_s\":%.3f,\"kswapd_steady_s\":%.3f,\"sys_s\":%.3f,\"sys_steady_s\":%.3f,\"sys_incl_fsync_s\":%.3f,\"user_s\":%.3f,",
	       e->kswapd_s - s0->kswapd_s, sb->kswapd_s - sa->kswapd_s,
	       e->sys_s - s0->sys_s, sb->sys_s - sa->sys_s,
	       sm->sys_after_fsync - s0->sys_s, e->user_s - s0->user_s);
	printf("\"cache_start_mb\":%.1f,\"cache_peak_mb\":%.1f,\"cache_final_mb\":%.1f,\"dirty_wb_peak_mb\":%.1f,\"fsync_s\":%.3f,\"cache_after_fsync_mb\":%.1f,",
	       s0->cached_mb, sm->cache_peak, e->cached_mb, sm->dirty_wb_peak,
	       sm->fsync_s, sm->cache_after_fsync);
	printf("\"dev_rd_mb\":%.1f,\"dev_wr_mb\":%.1f,\"dev_rd_ios\":%llu,\"dev_wr_ios\":%llu}\n",
	       e->dev_rd_mb - s0->dev_rd_mb, e->dev_wr_mb - s0->dev_wr_mb,
	       (unsigned long long)(e->dev_rd_ios - s0->dev_rd_ios),
	       (unsigned long long)(e->dev_wr_ios - s0->dev_wr_ios));
}

/* The hot reader's reads per second and hit rate, whole run and steady. */
static void print_hot_summary(const struct summary *sm)
{
	const struct snapshot *s0 = &samples[0], *e = &samples[nsamples];
	const struct snapshot *sa = &samples[sm->steady_from - 1];
	const struct snapshot *sb = &samples[sm->last];
	double secs = e->t - s0->t, steady_secs = sb->t - sa->t;
	uint64_t ops = e->hot_ops - s0->hot_ops;
	uint64_t hits = e->hot_hits - s0->hot_hits;
	uint64_t sops = sb->hot_ops - sa->hot_ops;
	uint64_t shits = sb->hot_hits - sa->hot_hits;
	double iops = secs > 0 ? ops / secs : 0;
	double siops = steady_secs > 0 ? sops / steady_secs : 0;
	double hit = ops ? 100.0 * hits / ops : 0;
	double shit = sops ? 100.0 * shits / sops : 0;
	long long evicted = (long long)hot.after.nr_evicted -
			    (long long)hot.before.nr_evicted;

	printf("  hot reader   %.0f reads/s (%.2f MB/s), %.1f%% page-cache hits; steady (seconds %d-%d) %.0f reads/s, %.1f%% hits\n",
	       iops, iops * HOT_BLOCK / MIB, hit, sm->steady_from, sm->last,
	       siops, shit);
	printf("  hot file     %.0f MB cached before, %.0f MB after, %lld pages evicted meanwhile (cachestat)\n",
	       hot.before.nr_cache * PAGE_SZ / MIB,
	       hot.after.nr_cache * PAGE_SZ / MIB, evicted);
	if (!opt.json)
		return;
	printf("uncached-bench-hot {\"label\":\"%s\",\"file\":\"%s\",\"size_mb\":%.1f,\"ops\":%llu,\"hits\":%llu,\"iops\":%.1f,\"hit_pct\":%.2f,\"iops_steady\":%.1f,\"hit_pct_steady\":%.2f,\"mbps_steady\":%.3f,",
	       opt.label, opt.hot, opt.hot_size / MIB,
	       (unsigned long long)ops, (unsigned long long)hits, iops, hit,
	       siops, shit, siops * HOT_BLOCK / MIB);
	printf("\"cached_before_mb\":%.1f,\"cached_after_mb\":%.1f,\"evicted\":%lld}\n",
	       hot.before.nr_cache * PAGE_SZ / MIB,
	       hot.after.nr_cache * PAGE_SZ / MIB, evicted);
}

/* Writes and copies: fsync every file written (timed), then close all. */
static void finish_files(struct summary *sm)
{
	struct worker *w;
	struct snapshot s;
	double t = now();
	int i;

	for (i = 0; i < opt.threads; i++) {
		w = &workers[i];
		if (w->out.fd >= 0 && fsync(w->out.fd))
			die("fsync %s: %s", w->out.name, strerror(errno));
	}
	sm->fsync_s = writes() ? now() - t : 0;
	read_meminfo(&s);
	read_proc_stat(&s);
	sm->cache_after_fsync = s.cached_mb;
	sm->sys_after_fsync = s.sys_s;
	for (i = 0; i < opt.threads; i++) {
		w = &workers[i];
		if (w->in.fd >= 0)
			close(w->in.fd);
		if (w->out.fd >= 0)
			close(w->out.fd);
		free(w->buf);
	}
}

static int run_benchmark(void)
{
	struct summary sm;
	double t0;

	clk_tck = sysconf(_SC_CLK_TCK);
	if (opt.drop)
		drop_caches();
	find_kswapd();
	if (opt.threads)
		printf("uncached_bench: %s %s, %d thread(s), one file each (%s%s%s, %llu MB), %zu KB blocks, %d s at most",
		       op_names[opt.op], mode_names[opt.mode], opt.threads,
		       data_set.desc, opt.op == OP_COPY ? " to " : "",
		       opt.op == OP_COPY ? dst_set.desc : "",
		       (unsigned long long)(opt.filesize >> 20), opt.bs >> 10,
		       opt.seconds);
	else
		printf("uncached_bench: the hot reader alone, %d s", opt.seconds);
	if (opt.max_bytes)
		printf(", %llu MB at most",
		       (unsigned long long)(opt.max_bytes >> 20));
	if (opt.fadvise >= 0)
		printf(", posix_fadvise %s", fadvise_names[opt.fadvise]);
	printf("%s\n", opt.drop ? ", caches dropped first" : "");
	if (opt.hot)
		start_hot_reader();
	start_workers();
	sm.fs = fs_name(!opt.threads ? hot.fd : workers[0].in.fd >= 0 ?
			workers[0].in.fd : workers[0].out.fd);
	t0 = now();
	take_snapshot(&samples[0], t0);
	sample_loop(t0);
	stop_workers();
	finish_files(&sm);
	find_windows(&sm);
	print_summary_text(&sm);
	if (opt.hot)
		print_hot_summary(&sm);
	if (opt.json)
		print_summary_json(&sm);
	return 0;
}

/* ---- the data set ---- */

static bool file_ready(const char *name, uint64_t size)
{
	struct stat st;

	return !stat(name, &st) && (uint64_t)st.st_size == size &&
	       (uint64_t)st.st_blocks * 512 >= size;
}

/*
 * @size bytes of @buf's pattern (PREP_BLOCK) at @base of @fd (@name, opened
 * with O_DIRECT), then fsync and close it. Returns the seconds it took.
 */
static double fill_range(int fd, const char *name, uint64_t base,
			 uint64_t size, void *buf)
{
	double t = now();
	uint64_t off;
	size_t n;

	for (off = 0; off < size; off += n) {
		n = size - off < PREP_BLOCK ? size - off : PREP_BLOCK;
		if (pwrite(fd, buf, n, base + off) != (ssize_t)n)
			die("write %s at %llu: %s", name,
			    (unsigned long long)(base + off), strerror(errno));
	}
	if (fsync(fd) || close(fd))
		die("fsync %s: %s", name, strerror(errno));
	return now() - t;
}

/* @name with @size bytes of @buf's pattern (PREP_BLOCK), unless it has. */
static void prepare_file(const char *name, uint64_t size, void *buf)
{
	double t;
	int fd;

	if (file_ready(name, size)) {
		printf("reusing %s (%llu MB)\n", name,
		       (unsigned long long)(size >> 20));
		return;
	}
	fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0)
		die("create %s: %s", name, strerror(errno));
	t = fill_range(fd, name, 0, size, buf);
	printf("created %s: %llu MB in %.1f s (%.0f MB/s, O_DIRECT)\n", name,
	       (unsigned long long)(size >> 20), t, size / MIB / t);
}

/* Thread @idx's region of the data set's device, with @buf's pattern. */
static void prepare_region(int idx, void *buf)
{
	const char *name = data_set.prefix;
	uint64_t base = member_base(&data_set, idx);
	double t;
	int fd;

	fd = open(name, O_WRONLY | O_DIRECT);
	if (fd < 0)
		die("open %s: %s", name, strerror(errno));
	check_device_size(fd, name);
	t = fill_range(fd, name, base, opt.filesize, buf);
	printf("wrote region %d of %s (%llu MB at %llu MB) in %.1f s (%.0f MB/s, O_DIRECT)\n",
	       idx, name, (unsigned long long)(opt.filesize >> 20),
	       (unsigned long long)(base >> 20), t, opt.filesize / MIB / t);
}

static int prepare_data_set(void)
{
	void *buf;
	int i;

	if (posix_memalign(&buf, 4096, PREP_BLOCK))
		die("out of memory");
	fill_pattern(buf, PREP_BLOCK, 0, 1);
	for (i = 0; i < opt.threads; i++) {
		if (data_set.dev)
			prepare_region(i, buf);
		else
			prepare_file(member_name(&data_set, i), opt.filesize,
				     buf);
	}
	free(buf);
	return 0;
}

/* cachestat() of each thread's file, or of its region of a device. */
static int report_cachestat(void)
{
	struct cachestat cs;
	struct stat st;
	const char *name;
	char what[4200];
	uint64_t size;
	int i, fd;

	for (i = 0; i < opt.threads; i++) {
		name = member_name(&data_set, i);
		fd = open(name, O_RDONLY);
		if (fd < 0 || fstat(fd, &st))
			die("open %s: %s", name, strerror(errno));
		size = data_set.dev ? opt.filesize : (uint64_t)st.st_size;
		if (data_set.dev)
			snprintf(what, sizeof(what), "%s region %d", name, i);
		else
			snprintf(what, sizeof(what), "%s", name);
		cs = file_cachestat(fd, member_base(&data_set, i),
				    data_set.dev ? size : 0);
		printf("cachestat %s: %.0f of %.0f MB in the page cache (%llu pages; dirty %llu, writeback %llu, evicted %llu, recently evicted %llu)\n",
		       what, cs.nr_cache * PAGE_SZ / MIB, size / MIB,
		       (unsigned long long)cs.nr_cache,
		       (unsigned long long)cs.nr_dirty,
		       (unsigned long long)cs.nr_writeback,
		       (unsigned long long)cs.nr_evicted,
		       (unsigned long long)cs.nr_recently_evicted);
		if (opt.json)
			printf("uncached-bench-cachestat {\"label\":\"%s\",\"file\":\"%s\",\"size_mb\":%.1f,\"cached_mb\":%.1f,\"dirty\":%llu,\"writeback\":%llu}\n",
			       opt.label, what, size / MIB,
			       cs.nr_cache * PAGE_SZ / MIB,
			       (unsigned long long)cs.nr_dirty,
			       (unsigned long long)cs.nr_writeback);
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	switch (opt.action) {
	case ACT_PREPARE:
		return prepare_data_set();
	case ACT_CACHESTAT:
		return report_cachestat();
	default:
		return run_benchmark();
	}
}
