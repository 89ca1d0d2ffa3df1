// SPDX-License-Identifier: GPL-2.0
/*
 * uncached_crash - crash consistency of RWF_UNCACHED writes (a guest tool of
 * tests/tools/tools.list, driven by scripts/runs/crash-test.sh):
 *
 *   uncached_crash write DIR SEED [--no-crash]
 *   uncached_crash verify DIR SEED
 *
 * write creates DIR/uncached-crash/ with NR_SYNCED files "synced.NN". Each
 * gets a plan made from SEED alone: one to MAX_STAGES stages of uncached
 * pwritev2() calls (varied sizes, unaligned iovec pieces, overwrites of
 * earlier data, RWF_APPEND appends, truncates, some RWF_DSYNC, a few
 * without RWF_UNCACHED), each stage made durable by fsync(), fdatasync() or
 * RWF_DSYNC on every write of the stage. A later stage starts with an
 * overwrite of data an earlier stage synced. The plans run interleaved with
 * writes to NR_UNSYNCED files "unsynced.N" that are never synced. Then it
 * prints "crash-write: DIR: synced N files, M bytes", keeps writing unsynced
 * uncached data (writeback in flight) and cuts power with sysrq 'b' (an
 * immediate reboot, no sync). With --no-crash it returns instead and
 * leaves a child process writing unsynced data until someone else cuts
 * power.
 *
 * verify recomputes the plans from SEED: every synced file must have
 * exactly the size and bytes of its last synced state; every other file
 * may hold anything but must read to its end without an I/O error. TAP,
 * one case per synced file and one for the other files; exit status 0
 * only when all pass.
 */
#include "uncached_io.h"

#include <dirent.h>
#include <termios.h>

#define CRASH_SUBDIR	"uncached-crash"
#define NR_SYNCED	12
#define NR_UNSYNCED	4
#define MAX_STAGES	3
#define MAX_STAGE_OPS	10
#define MAX_IOV		4
#define FILE_MAX	(4ULL << 20)	/* no file grows beyond this */
#define CRASH_TAIL	(16ULL << 20)	/* unsynced bytes before the cut */
#define CHILD_PAUSE_US	20000		/* pacing of the --no-crash child */

enum op_kind { OP_WRITE, OP_APPEND, OP_TRUNCATE };
enum sync_how { SYNC_FSYNC, SYNC_FDATASYNC, SYNC_DSYNC };

static const char *const sync_names[] = { "fsync", "fdatasync", "RWF_DSYNC" };

struct op {
	enum op_kind kind;
	uint64_t off;		/* OP_TRUNCATE: the new size */
	uint64_t len;
	int flags;		/* RWF_* of the write */
	unsigned int seed;	/* pattern of the data */
	int niov;
};

struct stage {
	struct op ops[MAX_STAGE_OPS];
	int nops;
	enum sync_how sync;
};

struct plan {
	struct stage stages[MAX_STAGES];
	int nstages;
	uint64_t size;		/* after the last stage */
};

/* The never-synced files of the writer, and their sizes so far. */
struct unsynced {
	int fd[NR_UNSYNCED];
	uint64_t size[NR_UNSYNCED];
	uint64_t rng;
};

static const char *crash_dir;

static void __attribute__((noreturn, format(printf, 1, 2)))
crash_fail(const char *fmt, ...)
{
	va_list ap;

	printf("crash-write: %s: error: ", crash_dir);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/* splitmix64: the one source of every choice the writer makes. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

static uint64_t pick_len(uint64_t *r)
{
	switch (rng_below(r, 5)) {
	case 0:
		return 1 + rng_below(r, 64);
	case 1:
		return 1 + rng_below(r, PAGE_SZ);
	case 2:	/* a page multiple, or one byte short or over */
		return PAGE_SZ * (1 + rng_below(r, 16)) + rng_below(r, 3) - 1;
	case 3:
		return 1 + rng_below(r, 256 << 10);
	default:
		return 1 + rng_below(r, 1 << 20);
	}
}

/* Offset of a write: inside the data for an overwrite, else up to 256K past. */
static uint64_t pick_off(uint64_t *r, uint64_t size, uint64_t len,
			 bool overwrite)
{
	uint64_t span = overwrite && size ? size : size + (256 << 10);
	uint64_t off = rng_below(r, span);

	if (!rng_below(r, 4))
		off &= ~(PAGE_SZ - 1);
	return off < FILE_MAX - len ? off : FILE_MAX - len;
}

/* The size of the file after @op. */
static uint64_t size_after(const struct op *op, uint64_t size)
{
	if (op->kind == OP_TRUNCATE)
		return op->off;
	return op->off + op->len > size ? op->off + op->len : size;
}

/*
 * One operation on a file of @size bytes. @later prefers overwrites of
 * existing data; @dsync: the stage is synced by RWF_DSYNC on every write,
 * so it has no truncate.
 */
static void gen_op(uint64_t *r, struct op *op, uint64_t size, bool later,
		   bool dsync)
{
	unsigned int what = rng_below(r, 16);

	op->seed = (unsigned int)rng_next(r);
	op->niov = 1 + rng_below(r, MAX_IOV);
	op->len = pick_len(r);
	op->flags = RWF_UNCACHED;
	if (what == 14)
		op->flags = 0;		/* a plain buffered write */
	if (dsync || what == 15)
		op->flags |= RWF_DSYNC;
	if (what == 0 && !dsync) {
		op->kind = OP_TRUNCATE;
		op->off = rng_below(r, size + (64 << 10));
		op->off = op->off < FILE_MAX ? op->off : FILE_MAX;
		op->len = 0;
	} else if (what < 4 && size + op->len <= FILE_MAX) {
		op->kind = OP_APPEND;
		op->off = size;
		op->flags |= RWF_APPEND;
	} else {
		op->kind = OP_WRITE;
		op->off = pick_off(r, size, op->len, later && what < 12);
	}
}

/* The first operation of a later stage: an overwrite inside synced data. */
static void gen_overwrite(uint64_t *r, struct op *op, uint64_t size,
			  bool dsync)
{
	gen_op(r, op, size, true, dsync);
	op->kind = OP_WRITE;
	op->flags &= ~RWF_APPEND;
	op->off = rng_below(r, size);
	op->len = 1 + rng_below(r, size - op->off);
}

static void gen_plan(struct plan *p, unsigned int seed, int idx)
{
	uint64_t r = ((uint64_t)seed << 32) ^ (uint64_t)(idx + 1) * 0x2545f491;
	struct stage *st;
	bool dsync;
	int s, i;

	memset(p, 0, sizeof(*p));
	p->nstages = 1 + idx % MAX_STAGES;
	for (s = 0; s < p->nstages; s++) {
		st = &p->stages[s];
		st->sync = rng_below(&r, 3);
		st->nops = 2 + rng_below(&r, MAX_STAGE_OPS - 1);
		dsync = st->sync == SYNC_DSYNC;
		for (i = 0; i < st->nops; i++) {
			if (s > 0 && i == 0 && p->size)
				gen_overwrite(&r, &st->ops[i], p->size, dsync);
			else
				gen_op(&r, &st->ops[i], p->size, s > 0, dsync);
			p->size = size_after(&st->ops[i], p->size);
		}
	}
}

static void model_apply(unsigned char *buf, uint64_t *size, const struct op *op)
{
	if (op->kind == OP_TRUNCATE && op->off < *size)
		memset(buf + op->off, 0, *size - op->off);
	if (op->kind != OP_TRUNCATE)
		fill_pattern(buf + op->off, op->len, op->off, op->seed);
	*size = size_after(op, *size);
}

/* The expected file after the first @nstages stages: @buf, returns the size. */
static uint64_t model_build(const struct plan *p, int nstages,
			    unsigned char *buf)
{
	uint64_t size = 0;
	int s, i;

	memset(buf, 0, FILE_MAX);
	for (s = 0; s < nstages; s++)
		for (i = 0; i < p->stages[s].nops; i++)
			model_apply(buf, &size, &p->stages[s].ops[i]);
	return size;
}

/* Write @op's data in up to MAX_IOV unaligned pieces; 0 or an errno. */
static int do_write(int fd, const struct op *op)
{
	struct iovec iov[MAX_IOV];
	char *buf = xmalloc(op->len);
	uint64_t cut = 0, next;
	ssize_t ret;
	int i;

	fill_pattern(buf, op->len, op->off, op->seed);
	for (i = 0; i < op->niov; i++) {
		next = op->len * (i + 1) / op->niov;
		iov[i].iov_base = buf + cut;
		iov[i].iov_len = next - cut;
		cut = next;
	}
	ret = pwritev2(fd, iov, op->niov,
		       op->kind == OP_APPEND ? -1 : (off_t)op->off, op->flags);
	free(buf);
	if (ret < 0)
		return errno;
	return ret == (ssize_t)op->len ? 0 : EIO;
}

static void do_op(int fd, const struct op *op, const char *name)
{
	int err;

	if (op->kind == OP_TRUNCATE) {
		if (ftruncate(fd, op->off))
			crash_fail("ftruncate %s to %llu: %s", name,
				   (unsigned long long)op->off,
				   strerror(errno));
		return;
	}
	err = do_write(fd, op);
	if (err)
		crash_fail("pwritev2 %s, %llu bytes at %llu, flags %#x: %s",
			   name, (unsigned long long)op->len,
			   (unsigned long long)op->off, op->flags,
			   strerror(err));
}

static void sync_stage(int fd, enum sync_how how, const char *name)
{
	int ret = 0;

	if (how == SYNC_FSYNC)
		ret = fsync(fd);
	else if (how == SYNC_FDATASYNC)
		ret = fdatasync(fd);
	/* SYNC_DSYNC: every write of the stage carried RWF_DSYNC. */
	if (ret)
		crash_fail("%s %s: %s", sync_names[how], name, strerror(errno));
}

static void synced_name(char *name, size_t len, int idx)
{
	snprintf(name, len, "synced.%02d", idx);
}

static int open_dir_fsync(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);

	if (fd < 0 || fsync(fd))
		crash_fail("fsync of directory %s: %s", path, strerror(errno));
	return fd;
}

/* One write of unsynced data to one of the unsynced files; its length. */
static uint64_t unsynced_op(struct unsynced *u)
{
	int i = rng_below(&u->rng, NR_UNSYNCED);
	struct op op;

	gen_op(&u->rng, &op, u->size[i], true, false);
	do_op(u->fd[i], &op, "an unsynced file");
	u->size[i] = size_after(&op, u->size[i]);
	return op.len;
}

static void unsynced_open(struct unsynced *u, unsigned int seed)
{
	char name[32];
	int i;

	u->rng = ~(uint64_t)seed;
	for (i = 0; i < NR_UNSYNCED; i++) {
		snprintf(name, sizeof(name), "unsynced.%d", i);
		u->fd[i] = open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (u->fd[i] < 0)
			crash_fail("create %s: %s", name, strerror(errno));
		u->size[i] = 0;
	}
}

/* Where a synced file is in its plan while the writer runs. */
struct progress {
	int fd;
	int stage;
	int op;
};

/* Run the next operation of file @idx; returns false once it is done. */
static bool step_file(const struct plan *p, struct progress *pr, int idx)
{
	const struct stage *st = &p->stages[pr->stage];
	char name[32];

	synced_name(name, sizeof(name), idx);
	do_op(pr->fd, &st->ops[pr->op], name);
	if (++pr->op < st->nops)
		return true;
	sync_stage(pr->fd, st->sync, name);
	pr->op = 0;
	return ++pr->stage < p->nstages;
}

/* Create the synced files and make their names durable. */
static void create_synced(struct progress *pr)
{
	char name[32];
	int i;

	for (i = 0; i < NR_SYNCED; i++) {
		synced_name(name, sizeof(name), i);
		pr[i].fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0644);
		if (pr[i].fd < 0)
			crash_fail("create %s: %s", name, strerror(errno));
	}
	close(open_dir_fsync("."));
}

/*
 * Run every plan, interleaved in an order drawn from @seed, with unsynced
 * writes in between. Returns the bytes the synced files now hold.
 */
static uint64_t run_plans(unsigned int seed, struct unsynced *u)
{
	static struct plan plans[NR_SYNCED];
	struct progress pr[NR_SYNCED] = { 0 };
	int live[NR_SYNCED], nlive = NR_SYNCED, i, k;
	uint64_t r = seed, bytes = 0;

	for (i = 0; i < NR_SYNCED; i++) {
		gen_plan(&plans[i], seed, i);
		bytes += plans[i].size;
		live[i] = i;
	}
	create_synced(pr);
	while (nlive) {
		k = rng_below(&r, nlive);
		i = live[k];
		if (!step_file(&plans[i], &pr[i], i)) {
			close(pr[i].fd);
			live[k] = live[--nlive];
		}
		if (!rng_below(&r, 3))
			unsynced_op(u);
	}
	return bytes;
}

/* "Dirty: N kB, Writeback: N kB" from /proc/meminfo, for the log. */
static void meminfo_dirty(char *out, size_t len)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long dirty = 0, wb = 0, kb;
	char line[128];

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Dirty: %lu", &kb) == 1)
			dirty = kb;
		if (sscanf(line, "Writeback: %lu", &kb) == 1)
			wb = kb;
	}
	if (f)
		fclose(f);
	snprintf(out, len, "Dirty %lu kB, Writeback %lu kB", dirty, wb);
}

static void __attribute__((noreturn)) cut_power(struct unsynced *u)
{
	uint64_t done = 0;
	char state[64];
	int fd;

	while (done < CRASH_TAIL)
		done += unsynced_op(u);
	meminfo_dirty(state, sizeof(state));
	printf("crash-write: %s: cutting power after %llu unsynced bytes (%s)\n",
	       crash_dir, (unsigned long long)done, state);
	fflush(stdout);
	tcdrain(STDOUT_FILENO);
	fd = open("/proc/sysrq-trigger", O_WRONLY);
	if (fd < 0 || write(fd, "b", 1) != 1)
		crash_fail("sysrq 'b': %s", strerror(errno));
	crash_fail("sysrq 'b' returned: no power cut");
}

/* --no-crash: a child keeps writing unsynced data until the power cut. */
static int leave_writer(struct unsynced *u)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		crash_fail("fork: %s", strerror(errno));
	if (pid > 0) {
		printf("crash-write: %s: pid %d keeps writing unsynced data\n",
		       crash_dir, (int)pid);
		return 0;
	}
	for (;;) {
		unsynced_op(u);
		usleep(CHILD_PAUSE_US);
	}
}

static int crash_write(unsigned int seed, bool crash)
{
	struct unsynced u;
	uint64_t bytes;

	if (chdir(crash_dir) || mkdir(CRASH_SUBDIR, 0755) ||
	    chdir(CRASH_SUBDIR))
		crash_fail("cannot make %s/%s: %s", crash_dir, CRASH_SUBDIR,
			   strerror(errno));
	close(open_dir_fsync(".."));
	unsynced_open(&u, seed);
	bytes = run_plans(seed, &u);
	printf("crash-write: %s: synced %d files, %llu bytes (seed %u)\n",
	       crash_dir, NR_SYNCED, (unsigned long long)bytes, seed);
	if (crash)
		cut_power(&u);
	return leave_writer(&u);
}

/*
 * Read the file @name into @got, at most FILE_MAX + 1 bytes: the bytes
 * read, or -1 after a diagnostic. @size: its size by fstat().
 */
static int64_t read_synced(const char *name, unsigned char *got,
			   int64_t *size)
{
	int fd = open(name, O_RDONLY);
	uint64_t done = 0;
	ssize_t ret = 1;
	struct stat st;

	if (fd < 0 || fstat(fd, &st)) {
		tap_diag("%s: open: %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*size = st.st_size;
	while (done <= FILE_MAX && ret > 0) {
		ret = pread(fd, got + done, FILE_MAX + 1 - done, done);
		done += ret > 0 ? ret : 0;
	}
	if (ret < 0)
		tap_diag("%s: read error at offset %llu: %s", name,
			 (unsigned long long)done, strerror(errno));
	close(fd);
	return ret < 0 ? -1 : (int64_t)done;
}

/* Which earlier synced state does the file hold, if it holds one? */
static void diag_older_state(const struct plan *p, const unsigned char *got,
			     uint64_t size, unsigned char *model)
{
	uint64_t want;
	int s;

	for (s = p->nstages - 1; s >= 1; s--) {
		want = model_build(p, s, model);
		if (want == size && !memcmp(model, got, size))
			tap_diag("  the file holds the state after stage %d of %d: the last synced stage was lost",
				 s, p->nstages);
	}
}

/* Compare what was read with the model; the first difference, or -1. */
static int64_t first_mismatch(const unsigned char *want, uint64_t want_size,
			      const unsigned char *got, uint64_t got_size)
{
	uint64_t n = want_size < got_size ? want_size : got_size, i;

	for (i = 0; i < n; i++)
		if (want[i] != got[i])
			return i;
	return want_size == got_size ? -1 : (int64_t)n;
}

static void verify_synced(const struct plan *p, int idx, unsigned char *model,
			  unsigned char *got)
{
	uint64_t want = model_build(p, p->nstages, model);
	int64_t size = -1, len, bad;
	char name[32];

	synced_name(name, sizeof(name), idx);
	len = read_synced(name, got, &size);
	bad = len < 0 ? 0 : first_mismatch(model, want, got, len);
	if (len >= 0 && bad >= 0 && bad < len && (uint64_t)bad < want)
		tap_diag("%s: first mismatch at offset %lld: expected 0x%02x, got 0x%02x",
			 name, (long long)bad, model[bad], got[bad]);
	if (len >= 0 && size != (int64_t)want)
		tap_diag("%s: size %lld, expected %llu", name, (long long)size,
			 (unsigned long long)want);
	if (len >= 0 && bad >= 0)
		diag_older_state(p, got, len, model);
	tap_result(len >= 0 && bad < 0 && size == (int64_t)want,
		   "%s: %llu bytes as synced (%d stage(s), last synced by %s)",
		   name, (unsigned long long)want, p->nstages,
		   sync_names[p->stages[p->nstages - 1].sync]);
}

static bool is_synced_name(const char *name)
{
	char want[32];
	int i;

	for (i = 0; i < NR_SYNCED; i++) {
		synced_name(want, sizeof(want), i);
		if (!strcmp(name, want))
			return true;
	}
	return false;
}

/* Read @fd to its end, counting @bytes; 0 or an errno. */
static int read_to_end(int fd, unsigned char *buf, uint64_t *bytes)
{
	ssize_t ret;

	while ((ret = read(fd, buf, FILE_MAX)) > 0)
		*bytes += ret;
	return ret < 0 ? errno : 0;
}

/* Read every other file to its end: any content, but no error. */
static void verify_others(unsigned char *buf)
{
	int files = 0, errors = 0, fd, err;
	uint64_t bytes = 0;
	struct dirent *de;
	DIR *d = opendir(".");

	if (!d)
		tap_bail("opendir: %s", strerror(errno));
	while ((errno = 0, de = readdir(d))) {
		if (de->d_name[0] == '.' || is_synced_name(de->d_name))
			continue;
		fd = open(de->d_name, O_RDONLY);
		err = fd < 0 ? errno : read_to_end(fd, buf, &bytes);
		if (err) {
			tap_diag("%s: %s", de->d_name, strerror(err));
			errors++;
		}
		if (fd >= 0)
			close(fd);
		files++;
	}
	if (errno)
		tap_diag("readdir: %s", strerror(errno));
	tap_result(!errno && !errors,
		   "%d unsynced file(s) read to their end: %llu bytes, %d error(s)",
		   files, (unsigned long long)bytes, errors);
	closedir(d);
}

static int crash_verify(unsigned int seed)
{
	static struct plan plan;
	unsigned char *model = xmalloc(FILE_MAX), *got = xmalloc(FILE_MAX + 1);
	int i;

	tap_plan(NR_SYNCED + 1);
	if (chdir(crash_dir) || chdir(CRASH_SUBDIR))
		tap_bail("%s/%s: %s", crash_dir, CRASH_SUBDIR, strerror(errno));
	drop_caches();
	for (i = 0; i < NR_SYNCED; i++) {
		gen_plan(&plan, seed, i);
		verify_synced(&plan, i, model, got);
	}
	verify_others(got);
	return tap_finish();
}

static void __attribute__((noreturn)) usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s write DIR SEED [--no-crash]\n"
		"       %s verify DIR SEED\n"
		"DIR: an absolute path (a mount point); SEED: 0..4294967295\n",
		prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long seed;
	bool writer;
	char *end;

	if (argc < 4 || argc > 5 || argv[2][0] != '/')
		usage(argv[0]);
	writer = !strcmp(argv[1], "write");
	if (!writer && strcmp(argv[1], "verify"))
		usage(argv[0]);
	errno = 0;
	seed = strtoul(argv[3], &end, 10);
	if (errno || *end || end == argv[3] || argv[3][0] == '-' ||
	    seed > UINT32_MAX)
		usage(argv[0]);
	if (argc == 5 && (!writer || strcmp(argv[4], "--no-crash")))
		usage(argv[0]);
	crash_dir = argv[2];
	return writer ? crash_write(seed, argc == 4) : crash_verify(seed);
}
