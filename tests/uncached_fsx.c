// SPDX-License-Identifier: GPL-2.0
/*
 * uncached_fsx - a randomized operation checker in the spirit of fsx. A
 * seeded random mix of buffered, RWF_UNCACHED (preadv2/pwritev2 and
 * io_uring), O_DIRECT and mmap reads and writes, truncate, fallocate,
 * fsync and cache drops on one file, with every read (and, now and then
 * and at the end, the whole file read back from disk) checked against an
 * in-memory model of the file. On a file also:
 *  - copy-range: copy_file_range() of a range to one of the same file that
 *    does not overlap it (a reflink on XFS and btrfs where aligned);
 *  - clone-range: FICLONERANGE likewise, of whole blocks (st_blksize), or
 *    up to EOF and then past it (the partial last block too);
 *  - dio-mix: O_DIRECT and uncached (or cached) I/O on one aligned range,
 *    right after each other: uncached write then O_DIRECT read, O_DIRECT
 *    write then uncached read, both writes, or a cached read first;
 *  - a cached reader: a thread beside each process that keeps reading
 *    ranges of its file, about one per op (half of them the range the
 *    latest change op changed), with plain preadv2() or (a quarter)
 *    through a mapping, checked against the model. It holds a shared lock
 *    that ops changing the file (and the whole-file check) take
 *    exclusively: it reads between those and during the others, and its
 *    cached reads adopt the folios uncached I/O flagged. Its timing
 *    varies; the ops (and their data) replay by seed.
 * A filesystem that lacks copy_file_range(), FICLONERANGE (ext4) or
 * O_DIRECT gets those ops skipped (a diag says so once, the counts show
 * them), never failed; a failing call that the filesystem supports fails.
 *
 *	uncached_fsx [-s SEED] [-n OPS] [-l MAXLEN] [-P NPROC] [-R] [-v]
 *		     DIR|BLOCKDEV
 *
 * -P forks NPROC processes, process i on its own file DIR/fsx.PID.i with
 * seed SEED + i: one TAP case each. Defaults come from the environment:
 * UNCACHED_STRESS_SEED (else time and pid), UNCACHED_STRESS_OPS (2000 ops
 * per process), UNCACHED_STRESS_NPROC (2); MAXLEN (the largest file) is
 * 1 MiB. One process replays exactly with the same seed (-P 1; -R without
 * the cached reader). A failure prints the bad bytes, the last operations
 * and the replay command. Each process ends with its op counts per kind.
 *
 * Given a block device (a disk of its own: its contents are overwritten),
 * process i works on region i of it, [i * R, (i + 1) * R) with R = MAXLEN
 * rounded up to 1 MiB, at most the device size / NPROC rounded down to
 * 1 MiB, through the device node (a buffered and an O_DIRECT fd, mappings
 * of the region). The region starts as a known pattern (written with
 * O_DIRECT) and has a fixed size: truncate, fallocate and the file-only
 * ops above are not drawn (the ops drawn are those of the file mode before
 * they came: a seed replays as it did), reads and writes stay in the
 * region, and there is no cached reader. A drop is fadvise(DONTNEED) of
 * the region (rarely fsync first, never drop_caches), the whole-file check
 * an O_DIRECT read of the region after fsync. Offsets in the output are
 * relative to the region; the replay command (-l R -P 1) runs on region 0.
 */
#include "uncached_blockdev.h"

#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#define LOG_LEN		64	/* operations shown on a failure */
#define CHECK_EVERY	500	/* operations between whole-file checks */
#define MAX_SEGS	4	/* iovec segments of one preadv2/pwritev2 */
#define MAX_INFLIGHT	4	/* io_uring requests in flight */
#define DIO_ALIGN	4096
#define REGION_ALIGN	(1ULL << 20)	/* of the regions of a device */
#define READS_PER_OP	1	/* of the cached reader, at most */

enum op_type {
	OP_READ, OP_WRITE, OP_UREAD, OP_UWRITE, OP_RING_READ, OP_RING_WRITE,
	OP_DREAD, OP_DWRITE, OP_MREAD, OP_MWRITE, OP_TRUNCATE, OP_FALLOC,
	OP_FSYNC, OP_DROP, OP_COPY, OP_CLONE, OP_DIO_MIX, OP_NR
};

struct op {
	long nr;
	enum op_type type;
	uint64_t off;
	uint64_t len;
	uint64_t aux;		/* randomness for the op's own choices */
	unsigned int seed;	/* pattern of the data it writes */
	bool skipped;		/* refused by the fs, or nothing to do */
	char note[40];		/* what it chose: segments, mode, ... */
};

struct op_desc {
	const char *name;
	int weight;
	bool (*run)(struct op *op);
	bool writes_data;	/* fills [off, off + len) with pattern seed */
	bool reads;		/* may reach past MAXLEN (of a file) */
	bool file_only;		/* not drawn on a device (may resize) */
};

static const struct op_desc op_descs[OP_NR];

/* The command line, or the environment's defaults. */
static struct {
	uint64_t seed;
	long ops;
	uint64_t maxlen;
	int nproc;
	bool verbose;
	const char *dir;	/* or the block device */
	bool dev;		/* MAXLEN is the size of a region */
	uint64_t dev_size;
	bool no_reader;		/* -R */
	bool copy_ok;		/* copy_file_range() works (probe_ops) */
	bool clone_ok;		/* FICLONERANGE does */
	uint64_t clone_bs;	/* its alignment: st_blksize */
} cfg;

/* One checker process: its file, the model of it, its log. */
static struct {
	int proc;
	uint64_t seed;
	uint64_t rng;
	char path[4096];
	int fd;
	int dfd;		/* O_DIRECT, or -1 when the fs refuses it */
	uint64_t dio_eof_align;	/* see dio_read_range() */
	uint64_t base;		/* of the region of the device; 0 for a file */
	unsigned char *model;	/* expected content; zeroes beyond size */
	uint64_t size;
	unsigned char *buf;	/* I/O buffer, page aligned */
	struct io_uring ring;
	long nr;		/* the current operation */
	long checks;
	long done[OP_NR];
	long skipped[OP_NR];
	unsigned int falloc_off;	/* fallocate modes the fs refuses */
	struct op log[LOG_LEN];
} fx;

/*
 * The cached reader thread of a process on a file (reader_main). It reads
 * the model under the shared lock, which the ops that change the file
 * take exclusively (they set hot_*). A failure is kept here for the main
 * thread to report: the bytes read and those the model held then.
 */
static struct {
	pthread_rwlock_t lock;
	pthread_t thread;
	bool running;
	atomic_bool stop;
	atomic_bool failed;
	atomic_long ran;	/* ops the main thread completed */
	uint64_t rng;
	uint64_t hot_off;	/* the range the last change op changed */
	uint64_t hot_len;
	unsigned char *got;
	unsigned char *want;	/* a failure: the model's bytes */
	long reads;		/* preadv2() checked */
	long mreads;		/* mapped reads checked */
	long hot;		/* of them, of the hot range */
	/* a failure: what, where, and what the call returned */
	const char *call;
	uint64_t off;
	uint64_t len;		/* the bytes expected */
	ssize_t ret;
	int err;
	long after;		/* ops completed when it failed */
} rd;

static void __attribute__((format(printf, 1, 2))) pdiag(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	tap_diag("[p%d] %s", fx.proc, line);
}

/* The file or device offset of offset @off of the model. */
static off_t pos_of(uint64_t off)
{
	return (off_t)(fx.base + off);
}

/* The pattern seed of op @nr; op -1 is the initial content of a region. */
static unsigned int op_seed(long nr)
{
	return (unsigned int)(fx.seed * 0x9e3779b97f4a7c15ULL +
			      nr * 0x9e3779b1ULL);
}

/* Does the op stay below MAXLEN (and the end of a region)? */
static bool op_bounded(const struct op *op)
{
	return cfg.dev || !op_descs[op->type].reads;
}

static int op_weight(int type)
{
	return cfg.dev && op_descs[type].file_only ? 0 : op_descs[type].weight;
}

/* Does the op change the file's data or size? The cached reader waits. */
static bool op_changes(int type)
{
	return op_descs[type].writes_data || op_descs[type].file_only;
}

static const char *format_op(const struct op *op)
{
	static char line[160];
	int n;

	n = snprintf(line, sizeof(line), "%7ld %-10s %8llu +%-7llu %s", op->nr,
		     op_descs[op->type].name, (unsigned long long)op->off,
		     (unsigned long long)op->len, op->note);
	while (n > 0 && line[n - 1] == ' ')
		line[--n] = '\0';
	return line;
}

static void dump_log(void)
{
	long first = fx.nr >= LOG_LEN ? fx.nr - LOG_LEN + 1 : 0, nr;

	pdiag("last %ld operations:     op type       offset  length  details",
	      fx.nr - first + 1);
	for (nr = first; nr <= fx.nr; nr++)
		pdiag("%s", format_op(&fx.log[nr % LOG_LEN]));
}

/* Report a failure @where ("at op 7 (read)"): the message, log, replay. */
static bool vfail(const char *where, const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	pdiag("FAILED %s: %s", where, msg);
	if (cfg.dev)
		pdiag("seed %llu, block device %s, region %d: [%llu, +%llu) (offsets are relative to it)",
		      (unsigned long long)fx.seed, fx.path, fx.proc,
		      (unsigned long long)fx.base,
		      (unsigned long long)fx.size);
	else
		pdiag("seed %llu, file %s, model size %llu",
		      (unsigned long long)fx.seed, fx.path,
		      (unsigned long long)fx.size);
	dump_log();
	pdiag("replay%s: uncached_fsx -s %llu -n %ld -l %llu -P 1 %s",
	      cfg.dev ? " (on region 0)" : "", (unsigned long long)fx.seed,
	      fx.nr + 1, (unsigned long long)cfg.maxlen, cfg.dir);
	return false;
}

static bool __attribute__((format(printf, 2, 3)))
fail_at(const char *where, const char *fmt, ...)
{
	va_list ap;
	bool ret;

	va_start(ap, fmt);
	ret = vfail(where, fmt, ap);
	va_end(ap);
	return ret;
}

/* Report a failure of operation @op (NULL: the whole-file check). */
static bool __attribute__((format(printf, 2, 3)))
fail(const struct op *op, const char *fmt, ...)
{
	char where[80];
	va_list ap;
	bool ret;

	if (op)
		snprintf(where, sizeof(where), "at op %ld (%s)", op->nr,
			 op_descs[op->type].name);
	else
		snprintf(where, sizeof(where),
			 "in the whole-file check after op %ld", fx.nr);
	va_start(ap, fmt);
	ret = vfail(where, fmt, ap);
	va_end(ap);
	return ret;
}

static bool fail_errno(const struct op *op, const char *call, ssize_t ret,
		       uint64_t want)
{
	if (ret < 0)
		return fail(op, "%s: %s", call, strerror(errno));
	return fail(op, "%s: %zd bytes, want %llu", call, ret,
		    (unsigned long long)want);
}

static void dump_bytes(const char *what, const unsigned char *p,
		       uint64_t off, uint64_t n)
{
	char hex[3 * 32 + 1] = "";
	uint64_t i;

	for (i = 0; i < n && i < 32; i++)
		snprintf(hex + 3 * i, 4, " %02x", p[i]);
	pdiag("%-8s at %8llu:%s", what, (unsigned long long)off, hex);
}

/*
 * Where do @n bytes @p at file offset @pos come from: "zeroes", "data of
 * op N" (the newest logged write whose data they are) or "unknown data".
 */
static const char *origin(uint64_t pos, const unsigned char *p, uint64_t n)
{
	static char what[2][32];
	static int turn;
	char *s = what[turn++ & 1];
	long nr;
	uint64_t i;

	for (i = 0; i < n && !p[i]; i++)
		;
	if (i == n)
		return "zeroes";
	for (nr = fx.nr; nr >= 0 && nr > fx.nr - LOG_LEN; nr--) {
		const struct op *o = &fx.log[nr % LOG_LEN];

		if (!op_descs[o->type].writes_data || pos < o->off ||
		    pos + n > o->off + o->len)
			continue;
		for (i = 0; i < n; i++)
			if (p[i] != pattern_byte(pos + i, o->seed))
				break;
		if (i == n) {
			snprintf(s, sizeof(what[0]), "data of op %ld", nr);
			return s;
		}
	}
	if (cfg.dev && check_pattern(p, n, pos, op_seed(-1)) < 0)
		return "the initial data";
	return "unknown data";
}

/* Show where @n bytes @got, read at file offset @off, differ from @want. */
static void diag_mismatch(const unsigned char *got, const unsigned char *want,
			  uint64_t off, uint64_t n, const char *what)
{
	uint64_t first, last, i, bad = 0, from;

	for (first = 0; got[first] == want[first]; first++)
		;
	for (i = last = first; i < n; i++)
		if (got[i] != want[i]) {
			bad++;
			last = i;
		}
	pdiag("%s: first bad byte at file offset %llu; %llu bad bytes up to %llu",
	      what, (unsigned long long)(off + first),
	      (unsigned long long)bad, (unsigned long long)(off + last));
	from = first > 8 ? first - 8 : 0;
	dump_bytes("expected", want + from, off + from, n - from);
	dump_bytes("got", got + from, off + from, n - from);
	n = n - first < 8 ? n - first : 8;
	pdiag("expected %s, got %s (the last %d ops searched)",
	      origin(off + first, want + first, n),
	      origin(off + first, got + first, n), LOG_LEN);
}

/* Do @n bytes @got, read at file offset @off, match the model? */
static bool check_data(const struct op *op, const unsigned char *got,
		       uint64_t off, uint64_t n, const char *what)
{
	if (!memcmp(got, fx.model + off, n))
		return true;
	diag_mismatch(got, fx.model + off, off, n, what);
	return fail(op, "%s returned wrong data", what);
}

/* Check a read of @len bytes at @off that returned @ret into @got. */
static bool check_read(const struct op *op, const char *call, ssize_t ret,
		       const unsigned char *got, uint64_t off, uint64_t len)
{
	uint64_t want = off >= fx.size ? 0 :
			(fx.size - off < len ? fx.size - off : len);

	if (ret != (ssize_t)want)
		return fail_errno(op, call, ret, want);
	return check_data(op, got, off, want, call);
}

static void model_write(uint64_t off, uint64_t len, unsigned int seed)
{
	fill_pattern(fx.model + off, len, off, seed);
	if (off + len > fx.size)
		fx.size = off + len;
}

static void model_zero(uint64_t off, uint64_t len)
{
	memset(fx.model + off, 0, len);
}

/* @n bytes at @src copied to @dst (ranges that do not overlap). */
static void model_copy(uint64_t dst, uint64_t src, uint64_t n)
{
	memmove(fx.model + dst, fx.model + src, n);
	if (dst + n > fx.size)
		fx.size = dst + n;
}

/* Add to the op's note (what it chose), after what it holds. */
static void __attribute__((format(printf, 2, 3)))
add_note(struct op *op, const char *fmt, ...)
{
	size_t n = strlen(op->note);
	va_list ap;

	if (n && op->note[n - 1] != ' ' && n + 2 < sizeof(op->note)) {
		memcpy(op->note + n, ", ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(op->note + n, sizeof(op->note) - n, fmt, ap);
	va_end(ap);
}

static bool write_done(const struct op *op, const char *call, ssize_t ret)
{
	if (ret != (ssize_t)op->len)
		return fail_errno(op, call, ret, op->len);
	model_write(op->off, op->len, op->seed);
	return true;
}

/* The user buffer of a buffered op: page aligned or not. */
static unsigned char *op_buf(const struct op *op)
{
	return fx.buf + ((op->aux >> 8) & 1 ? (op->aux >> 16) % 512 : 0);
}

static bool do_read(struct op *op)
{
	unsigned char *buf = op_buf(op);

	return check_read(op, "pread",
			  pread(fx.fd, buf, op->len, pos_of(op->off)), buf,
			  op->off, op->len);
}

static bool do_write(struct op *op)
{
	unsigned char *buf = op_buf(op);

	fill_pattern(buf, op->len, op->off, op->seed);
	return write_done(op, "pwrite",
			  pwrite(fx.fd, buf, op->len, pos_of(op->off)));
}

/* Split @len bytes at @base into 1..MAX_SEGS iovecs (some may be empty). */
static int make_iovecs(struct iovec *iov, unsigned char *base, uint64_t len,
		       uint64_t aux)
{
	uint64_t st = aux, left = len;
	int n = 1 + (aux >> 24) % MAX_SEGS, i;

	for (i = 0; i < n; i++) {
		size_t seg = i == n - 1 ? left : rand64(&st) % (left + 1);

		iov[i].iov_base = base;
		iov[i].iov_len = seg;
		base += seg;
		left -= seg;
	}
	return n;
}

static bool do_uread(struct op *op)
{
	struct iovec iov[MAX_SEGS];
	unsigned char *buf = op_buf(op);
	int n = make_iovecs(iov, buf, op->len, op->aux);
	ssize_t ret = preadv2(fx.fd, iov, n, pos_of(op->off), RWF_UNCACHED);

	add_note(op, "segs %d", n);
	return check_read(op, "preadv2(RWF_UNCACHED)", ret, buf, op->off,
			  op->len);
}

static bool do_uwrite(struct op *op)
{
	struct iovec iov[MAX_SEGS];
	unsigned char *buf = op_buf(op);
	int n = make_iovecs(iov, buf, op->len, op->aux);

	add_note(op, "segs %d", n);
	fill_pattern(buf, op->len, op->off, op->seed);
	return write_done(op, "pwritev2(RWF_UNCACHED)",
			  pwritev2(fx.fd, iov, n, pos_of(op->off),
				   RWF_UNCACHED));
}

/* One io_uring request: a disjoint piece of the op's range. */
struct piece {
	uint64_t off;
	uint64_t len;
	bool vectored;
	int res;
	struct iovec iov[2];
};

/* Cut the op's range into up to MAX_INFLIGHT pieces; returns how many. */
static int make_pieces(struct piece *pieces, const struct op *op,
		       uint64_t *st)
{
	uint64_t off = op->off, left = op->len;
	int want = 1 + (op->aux >> 24) % MAX_INFLIGHT, n = 0, i;

	for (i = 0; i < want && left; i++) {
		uint64_t len = i == want - 1 ? left : rand64(st) % (left + 1);

		if (!len)
			continue;
		pieces[n].off = off;
		pieces[n++].len = len;
		off += len;
		left -= len;
	}
	return n;
}

static void queue_piece(struct piece *p, bool write, unsigned char *buf,
			uint64_t *st)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&fx.ring);
	size_t cut = rand64(st) % (p->len + 1);
	off_t pos = pos_of(p->off);

	p->vectored = rand64(st) & 1;
	p->iov[0] = (struct iovec){ .iov_base = buf, .iov_len = cut };
	p->iov[1] = (struct iovec){ .iov_base = buf + cut,
				    .iov_len = p->len - cut };
	if (p->vectored && write)
		io_uring_prep_writev(sqe, fx.fd, p->iov, 2, pos);
	else if (p->vectored)
		io_uring_prep_readv(sqe, fx.fd, p->iov, 2, pos);
	else if (write)
		io_uring_prep_write(sqe, fx.fd, buf, p->len, pos);
	else
		io_uring_prep_read(sqe, fx.fd, buf, p->len, pos);
	sqe->rw_flags = RWF_UNCACHED;
	io_uring_sqe_set_data(sqe, p);
}

/* Submit the @n queued pieces and wait for all of them. */
static bool ring_wait(const struct op *op, int n)
{
	struct io_uring_cqe *cqe;
	int i, ret = io_uring_submit(&fx.ring);

	if (ret != n)
		return fail(op, "io_uring_submit: %d of %d (%s)", ret, n,
			    ret < 0 ? strerror(-ret) : "short");
	for (i = 0; i < n; i++) {
		struct piece *p;

		ret = io_uring_wait_cqe(&fx.ring, &cqe);
		if (ret)
			return fail(op, "io_uring_wait_cqe: %s",
				    strerror(-ret));
		p = io_uring_cqe_get_data(cqe);
		p->res = cqe->res;
		io_uring_cqe_seen(&fx.ring, cqe);
	}
	return true;
}

/* Check one completed piece of an io_uring read or write. */
static bool piece_done(const struct op *op, const struct piece *p,
		       bool write, const unsigned char *buf)
{
	char call[64];
	ssize_t ret = p->res;

	snprintf(call, sizeof(call), "io_uring %s%s(RWF_UNCACHED) at %llu",
		 write ? "WRITE" : "READ", p->vectored ? "V" : "",
		 (unsigned long long)p->off);
	if (ret < 0) {
		errno = -p->res;
		ret = -1;
	}
	if (!write)
		return check_read(op, call, ret, buf, p->off, p->len);
	return ret == (ssize_t)p->len || fail_errno(op, call, ret, p->len);
}

static bool do_ring(struct op *op, bool write)
{
	struct piece pieces[MAX_INFLIGHT];
	unsigned char *buf = op_buf(op);
	uint64_t st = op->aux;
	int n = make_pieces(pieces, op, &st), i;

	snprintf(op->note, sizeof(op->note), "%d in flight", n);
	if (write)
		fill_pattern(buf, op->len, op->off, op->seed);
	for (i = 0; i < n; i++)
		queue_piece(&pieces[i], write, buf + (pieces[i].off - op->off),
			    &st);
	if (!ring_wait(op, n))
		return false;
	for (i = 0; i < n; i++)
		if (!piece_done(op, &pieces[i], write,
				buf + (pieces[i].off - op->off)))
			return false;
	if (write)
		model_write(op->off, op->len, op->seed);
	return true;
}

static bool do_ring_read(struct op *op)
{
	return do_ring(op, false);
}

static bool do_ring_write(struct op *op)
{
	return do_ring(op, true);
}

/* Align the op's range for O_DIRECT; false when O_DIRECT is off. */
static bool dio_range(struct op *op)
{
	if (fx.dfd < 0) {
		op->skipped = true;
		return false;
	}
	op->off &= ~(uint64_t)(DIO_ALIGN - 1);
	op->len = (op->len + DIO_ALIGN - 1) & ~(uint64_t)(DIO_ALIGN - 1);
	if (op_bounded(op) && op->off + op->len > cfg.maxlen)
		op->len = cfg.maxlen - op->off;
	return true;
}

/*
 * The O_DIRECT alignment of @fd's file (statx: dio_offset_align), or
 * DIO_ALIGN when the filesystem does not say.
 */
static uint64_t dio_offset_align(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) ||
	    !(stx.stx_mask & STATX_DIOALIGN) || !stx.stx_dio_offset_align ||
	    DIO_ALIGN % stx.stx_dio_offset_align)
		return DIO_ALIGN;
	return stx.stx_dio_offset_align;
}

/*
 * Align an O_DIRECT read, and end it at most at EOF rounded up to the
 * file's O_DIRECT alignment (fsx trims its reads at EOF too): it still
 * reads across EOF, but not into the blocks past it.  XFS holds its
 * speculative preallocation there as delalloc while the file is open,
 * which iomap's direct read refuses with EIO ("Direct I/O collision with
 * buffered writes!"); pristine 6.12 does that with cached I/O only (seed
 * 5589549054753, op 1522 on XFS: bmap showed delalloc past the EOF block),
 * so it says nothing of the series.
 */
static bool dio_read_range(struct op *op)
{
	uint64_t end;

	if (!dio_range(op))
		return false;
	end = (fx.size + fx.dio_eof_align - 1) & ~(fx.dio_eof_align - 1);
	if (!cfg.dev && op->off < end && op->off + op->len > end)
		op->len = end - op->off;
	return true;
}

static bool do_dread(struct op *op)
{
	if (!dio_read_range(op))
		return true;
	return check_read(op, "O_DIRECT pread",
			  pread(fx.dfd, fx.buf, op->len, pos_of(op->off)),
			  fx.buf, op->off, op->len);
}

static bool do_dwrite(struct op *op)
{
	if (!dio_range(op))
		return true;
	fill_pattern(fx.buf, op->len, op->off, op->seed);
	return write_done(op, "O_DIRECT pwrite",
			  pwrite(fx.dfd, fx.buf, op->len, pos_of(op->off)));
}

/*
 * Read or write the op's range (moved into the file) through a shared
 * mapping of the whole file (or region). A read also checks that the
 * mapped bytes past EOF in the last page are zeroes.
 */
static bool do_mmap(struct op *op, bool write)
{
	uint64_t end = (fx.size + PAGE_SZ - 1) & ~(PAGE_SZ - 1);
	unsigned char *map;
	bool ok;

	if (!fx.size) {
		op->skipped = true;
		return true;
	}
	op->off %= fx.size;
	if (op->len > fx.size - op->off)
		op->len = fx.size - op->off;
	map = mmap(NULL, fx.size, PROT_READ | PROT_WRITE, MAP_SHARED, fx.fd,
		   pos_of(0));
	if (map == MAP_FAILED)
		return fail(op, "mmap: %s", strerror(errno));
	if (write) {
		fill_pattern(map + op->off, op->len, op->off, op->seed);
		model_write(op->off, op->len, op->seed);
		ok = !(op->aux & 1) || !msync(map, fx.size, MS_SYNC) ||
		     fail(op, "msync: %s", strerror(errno));
		snprintf(op->note, sizeof(op->note), "%s",
			 op->aux & 1 ? "msync" : "");
	} else {
		ok = check_data(op, map + op->off, op->off, op->len,
				"mapped read") &&
		     check_data(op, map + fx.size, fx.size, end - fx.size,
				"mapped read past EOF");
	}
	munmap(map, fx.size);
	return ok;
}

static bool do_mread(struct op *op)
{
	return do_mmap(op, false);
}

static bool do_mwrite(struct op *op)
{
	return do_mmap(op, true);
}

static bool do_truncate(struct op *op)
{
	uint64_t size = op->off;

	snprintf(op->note, sizeof(op->note), "%s from %llu",
		 size < fx.size ? "down" : "up", (unsigned long long)fx.size);
	op->len = 0;
	if (ftruncate(fx.fd, size))
		return fail(op, "ftruncate: %s", strerror(errno));
	if (size < fx.size)
		model_zero(size, fx.size - size);
	fx.size = size;
	return true;
}

static const struct {
	int mode;
	const char *name;
} falloc_modes[] = {
	{ 0, "plain" },
	{ FALLOC_FL_KEEP_SIZE, "keep-size" },
	{ FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, "punch-hole" },
	{ FALLOC_FL_ZERO_RANGE, "zero-range" },
	{ FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, "zero-range keep-size" },
};

static bool do_falloc(struct op *op)
{
	unsigned int m = op->aux % ARRAY_SIZE(falloc_modes);
	int mode = falloc_modes[m].mode;

	snprintf(op->note, sizeof(op->note), "%s", falloc_modes[m].name);
	op->skipped = fx.falloc_off & (1u << m);
	if (op->skipped)
		return true;
	if (fallocate(fx.fd, mode, op->off, op->len)) {
		if (errno != EOPNOTSUPP)
			return fail(op, "fallocate %s: %s",
				    falloc_modes[m].name, strerror(errno));
		pdiag("fallocate %s: EOPNOTSUPP here, no more of it",
		      falloc_modes[m].name);
		fx.falloc_off |= 1u << m;
		op->skipped = true;
		return true;
	}
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		model_zero(op->off, op->len);
	if (!(mode & FALLOC_FL_KEEP_SIZE) && op->off + op->len > fx.size)
		fx.size = op->off + op->len;
	return true;
}

static bool do_fsync(struct op *op)
{
	bool data = op->aux & 1;

	op->off = op->len = 0;
	snprintf(op->note, sizeof(op->note), "%s",
		 data ? "fdatasync" : "fsync");
	if (data ? fdatasync(fx.fd) : fsync(fx.fd))
		return fail(op, "%s: %s", op->note, strerror(errno));
	return true;
}

/* fadvise(DONTNEED) of the file, or of the region of the device. */
static bool fadvise_dontneed(const struct op *op)
{
	int err = posix_fadvise(fx.fd, pos_of(0), cfg.dev ? fx.size : 0,
				POSIX_FADV_DONTNEED);

	return !err || fail(op, "posix_fadvise: %s", strerror(err));
}

/*
 * Device mode: write back (the whole device) and evict the region's page
 * cache. Other processes share the device's cache: nothing beyond the own
 * region is dropped (no drop_caches, no BLKFLSBUF).
 */
static bool evict_region(const struct op *op)
{
	if (fsync(fx.fd))
		return fail(op, "fsync of the device: %s", strerror(errno));
	return fadvise_dontneed(op);
}

/*
 * Mostly fadvise(DONTNEED) of the file; rarely (slow) drop_caches, or on a
 * device fsync and fadvise of the region.
 */
static bool do_drop(struct op *op)
{
	op->off = op->len = 0;
	if (op->aux % 32 == 0 && cfg.dev) {
		snprintf(op->note, sizeof(op->note), "fsync, fadvise DONTNEED");
		return evict_region(op);
	}
	if (op->aux % 32 == 0) {
		snprintf(op->note, sizeof(op->note), "drop_caches");
		drop_caches();
		return true;
	}
	snprintf(op->note, sizeof(op->note), "fadvise DONTNEED");
	return fadvise_dontneed(op);
}

/*
 * A destination for @len bytes from @src of the same file: a multiple of
 * @align in [@lo, MAXLEN - @len] (@lo a multiple of @align) whose range
 * does not overlap [@src, @src + @len), drawn with @r; false when there is
 * none.
 */
static bool pick_dst(uint64_t src, uint64_t len, uint64_t lo, uint64_t align,
		     uint64_t r, uint64_t *dst)
{
	uint64_t k0 = lo / align, k1, f0, f1, forbidden = 0, k;

	if (!len || lo + len > cfg.maxlen)
		return false;
	k1 = (cfg.maxlen - len) / align;	/* the starts: k0..k1 */
	f0 = src >= len ? (src - len) / align + 1 : 0;
	f1 = (src + len - 1) / align;		/* those that overlap */
	if (f0 < k0)
		f0 = k0;
	if (f1 > k1)
		f1 = k1;
	if (f0 <= f1)
		forbidden = f1 - f0 + 1;
	if (k1 - k0 + 1 == forbidden)
		return false;
	k = k0 + r % (k1 - k0 + 1 - forbidden);
	if (forbidden && k >= f0)
		k += forbidden;
	*dst = k * align;
	return true;
}

/*
 * Call copy_file_range() from @src to @dst (same file) until @len bytes
 * are copied or the source reaches EOF (as the file grows, a hole may
 * follow), the model following each call. A call may copy less (a
 * shortened reflink), never more than is there, and nothing only at EOF.
 */
static bool copy_loop(const struct op *op, uint64_t src, uint64_t dst,
		      uint64_t len, uint64_t *done)
{
	for (*done = 0; *done < len;) {
		loff_t in = src + *done, out = dst + *done;
		uint64_t left = len - *done, there;
		ssize_t ret;

		there = src + *done >= fx.size ? 0 : fx.size - src - *done;
		if (there > left)
			there = left;
		ret = copy_file_range(fx.fd, &in, fx.fd, &out, left, 0);
		if (ret < 0 || (uint64_t)ret > there || (!ret && there))
			return fail(op, "copy_file_range of %llu at %llu to %llu: %zd (%s), want 1..%llu (0 at EOF)",
				    (unsigned long long)left,
				    (unsigned long long)(src + *done),
				    (unsigned long long)(dst + *done), ret,
				    ret < 0 ? strerror(errno) : "no error",
				    (unsigned long long)there);
		if (!ret)
			return true;
		model_copy(dst + *done, src + *done, ret);
		*done += ret;
	}
	return true;
}

/*
 * copy_file_range() of [off, off + len) to a range of the same file that
 * does not overlap it (the kernel refuses that); a reflink on XFS and
 * btrfs where the ranges allow, else a copy through the page cache.
 */
static bool do_copy(struct op *op)
{
	uint64_t src = op->off, dst, done;

	op->skipped = !cfg.copy_ok ||
		      !pick_dst(src, op->len, 0, 1, op->aux, &dst);
	if (op->skipped)
		return true;
	op->off = dst;
	snprintf(op->note, sizeof(op->note), "from %llu",
		 (unsigned long long)src);
	if (!copy_loop(op, src, dst, op->len, &done))
		return false;
	if (done < op->len)
		add_note(op, "%llu to EOF", (unsigned long long)done);
	op->len = done;
	return true;
}

/*
 * FICLONERANGE of whole blocks of the file (cfg.clone_bs) to blocks of
 * the same file that do not overlap them. A range that reaches EOF clones
 * up to EOF, the partial last block too, and then only to blocks past the
 * EOF block (the kernel refuses a partial block inside the destination).
 */
static bool do_clone(struct op *op)
{
	uint64_t bs = cfg.clone_bs, src, len, lo = 0, dst;
	struct file_clone_range fcr;

	op->skipped = !cfg.clone_ok || !fx.size;
	if (op->skipped)
		return true;
	src = (op->off % fx.size) & ~(bs - 1);
	len = (op->len + bs - 1) & ~(bs - 1);
	if (src + len >= fx.size) {
		len = fx.size - src;
		lo = (fx.size + bs - 1) & ~(bs - 1);
	}
	op->skipped = !pick_dst(src, len, lo, bs, op->aux, &dst);
	if (op->skipped)
		return true;
	snprintf(op->note, sizeof(op->note), "from %llu%s",
		 (unsigned long long)src, lo ? " to EOF" : "");
	op->off = dst;
	op->len = len;
	fcr = (struct file_clone_range){ .src_fd = fx.fd, .src_offset = src,
					 .src_length = len,
					 .dest_offset = dst };
	if (ioctl(fx.fd, FICLONERANGE, &fcr))
		return fail(op, "FICLONERANGE of %llu at %llu to %llu: %s",
			    (unsigned long long)len, (unsigned long long)src,
			    (unsigned long long)dst, strerror(errno));
	model_copy(dst, src, len);
	return true;
}

/* An uncached write of the op's range with data of pattern @seed. */
static bool uwrite_seed(struct op *op, unsigned int seed)
{
	unsigned int own = op->seed;
	bool ok;

	op->seed = seed;
	ok = do_uwrite(op);
	op->seed = own;
	return ok;
}

/*
 * O_DIRECT and buffered I/O on one aligned range, one right after the
 * other (the O_DIRECT fd and the buffered one), each read checked: the
 * range ends with the op's data.
 */
static bool do_dio_mix(struct op *op)
{
	static const char *const mixes[] = {
		"uwrite>dread", "dwrite>uread", "uwrite>dwrite>uread",
		"read>dwrite>uread",
	};
	unsigned int m = op->aux % ARRAY_SIZE(mixes);

	if (!dio_range(op))
		return true;
	snprintf(op->note, sizeof(op->note), "%s: ", mixes[m]);
	switch (m) {
	case 0:
		return do_uwrite(op) && do_dread(op);
	case 1:
		return do_dwrite(op) && do_uread(op);
	case 2:
		return uwrite_seed(op, op->seed + 1) && do_dwrite(op) &&
		       do_uread(op);
	default:
		return do_read(op) && do_dwrite(op) && do_uread(op);
	}
}

static const struct op_desc op_descs[OP_NR] = {
	/* name, weight, run, writes_data, reads, file_only */
	[OP_READ] = { "read", 10, do_read, false, true, false },
	[OP_WRITE] = { "write", 10, do_write, true, false, false },
	[OP_UREAD] = { "uread", 14, do_uread, false, true, false },
	[OP_UWRITE] = { "uwrite", 14, do_uwrite, true, false, false },
	[OP_RING_READ] = { "ring-read", 8, do_ring_read, false, true, false },
	[OP_RING_WRITE] = { "ring-write", 8, do_ring_write, true, false, false },
	[OP_DREAD] = { "dio-read", 4, do_dread, false, true, false },
	[OP_DWRITE] = { "dio-write", 4, do_dwrite, true, false, false },
	[OP_MREAD] = { "mmap-read", 4, do_mread, false, true, false },
	[OP_MWRITE] = { "mmap-write", 4, do_mwrite, true, false, false },
	[OP_TRUNCATE] = { "truncate", 3, do_truncate, false, false, true },
	[OP_FALLOC] = { "fallocate", 5, do_falloc, false, false, true },
	[OP_FSYNC] = { "fsync", 2, do_fsync, false, false, false },
	[OP_DROP] = { "drop", 2, do_drop, false, false, false },
	[OP_COPY] = { "copy-range", 5, do_copy, false, false, true },
	[OP_CLONE] = { "clone-range", 4, do_clone, false, false, true },
	[OP_DIO_MIX] = { "dio-mix", 4, do_dio_mix, true, false, true },
};

static enum op_type pick_type(uint64_t r)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < OP_NR; i++)
		total += op_weight(i);
	r %= total;
	for (i = 0; r >= (uint64_t)op_weight(i); i++)
		r -= op_weight(i);
	return i;
}

/* Lengths up to MAXLEN / 16: half uniform, half log-uniform (short). */
static uint64_t draw_len(uint64_t r)
{
	uint64_t maxop = cfg.maxlen / 16, lim = maxop;

	if (r & 1)
		lim = 2ULL << ((r >> 1) % 20);
	return 1 + (r >> 8) % (lim < maxop ? lim : maxop);
}

/*
 * Operation @nr: always four numbers from the PRNG, so the sequence does
 * not depend on what the file system refused (skipped ops).
 */
static struct op *draw_op(long nr)
{
	struct op *op = &fx.log[nr % LOG_LEN];
	uint64_t type = rand64(&fx.rng), off = rand64(&fx.rng);
	uint64_t len = rand64(&fx.rng);

	*op = (struct op){
		.nr = nr,
		.type = pick_type(type),
		.off = off % cfg.maxlen,
		.len = draw_len(len),
		.aux = rand64(&fx.rng),
		.seed = op_seed(nr),
	};
	if (!(op->aux >> 62)) {		/* a quarter is page aligned */
		op->off &= ~(PAGE_SZ - 1);
		op->len = (op->len + PAGE_SZ - 1) & ~(PAGE_SZ - 1);
	}
	if (op_bounded(op) && op->off + op->len > cfg.maxlen)
		op->len = cfg.maxlen - op->off;
	fx.nr = nr;
	return op;
}

/* Device mode: write back and evict the region, read it with O_DIRECT. */
static bool check_region(void)
{
	const char *call = "whole-region O_DIRECT pread";
	ssize_t ret;

	fx.checks++;
	if (!evict_region(NULL))
		return false;
	ret = pread(fx.dfd, fx.buf, fx.size, pos_of(0));
	if (ret != (ssize_t)fx.size)
		return fail_errno(NULL, call, ret, fx.size);
	return check_data(NULL, fx.buf, 0, fx.size, call);
}

/* Write back and evict the file, then read it all back and compare. */
static bool check_file(void)
{
	bool uncached = fx.checks++ & 1;
	struct iovec iov = { .iov_base = fx.buf, .iov_len = fx.size };
	const char *call = uncached ? "whole-file preadv2(RWF_UNCACHED)" :
				      "whole-file pread";
	struct stat st;
	ssize_t ret;

	if (cfg.dev)
		return check_region();
	evict_file(fx.fd, cfg.maxlen);
	if (fstat(fx.fd, &st))
		return fail(NULL, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size != fx.size)
		return fail(NULL, "file size %lld, model %llu",
			    (long long)st.st_size,
			    (unsigned long long)fx.size);
	if (uncached)
		ret = preadv2(fx.fd, &iov, 1, 0, RWF_UNCACHED);
	else
		ret = pread(fx.fd, fx.buf, fx.size, 0);
	if (ret != (ssize_t)fx.size)
		return fail_errno(NULL, call, ret, fx.size);
	return check_data(NULL, fx.buf, 0, fx.size, call);
}

/* The whole-file check, the cached reader kept out. */
static bool locked_check_file(void)
{
	bool ok;

	pthread_rwlock_wrlock(&rd.lock);
	ok = check_file();
	pthread_rwlock_unlock(&rd.lock);
	return ok;
}

/*
 * The cached reader failed: keep what it read (in rd.got) and what the
 * model holds, for the main thread to report; returns false.
 */
static bool reader_failed(const char *call, uint64_t off, uint64_t len,
			  ssize_t ret)
{
	rd.err = errno;
	rd.call = call;
	rd.off = off;
	rd.len = len;
	rd.ret = ret;
	rd.after = atomic_load(&rd.ran);
	memcpy(rd.want, fx.model + off, len);
	return false;
}

/* Check @len bytes read at @off (the call returned @ret) against the model. */
static bool reader_check(const char *call, uint64_t off, uint64_t len,
			 ssize_t ret)
{
	if (ret == (ssize_t)len && !memcmp(rd.got, fx.model + off, len))
		return true;
	return reader_failed(call, off, len, ret);
}

/* A plain preadv2() of [off, off + len). */
static bool reader_pread(uint64_t off, uint64_t len)
{
	struct iovec iov = { .iov_base = rd.got, .iov_len = len };
	ssize_t ret = preadv2(fx.fd, &iov, 1, off, 0);

	rd.reads++;
	len = off >= fx.size ? 0 : (fx.size - off < len ? fx.size - off : len);
	return reader_check("cached preadv2", off, len, ret);
}

/* A read of [off, off + len), moved into the file, through a mapping. */
static bool reader_mread(uint64_t off, uint64_t len)
{
	unsigned char *map;

	if (!fx.size)
		return true;
	off %= fx.size;
	if (len > fx.size - off)
		len = fx.size - off;
	map = mmap(NULL, fx.size, PROT_READ, MAP_SHARED, fx.fd, 0);
	if (map == MAP_FAILED)
		return reader_failed("mmap", off, 0, -1);
	memcpy(rd.got, map + off, len);
	munmap(map, fx.size);
	rd.mreads++;
	return reader_check("cached mapped read", off, len, len);
}

/*
 * One read of the cached reader: a quarter through a mapping, half of the
 * range the last change op changed, the others of a random range.
 */
static bool reader_read(void)
{
	uint64_t r = rand64(&rd.rng), off, len;

	if ((r & 2) && rd.hot_len) {
		off = rd.hot_off;
		len = rd.hot_len;
		rd.hot++;
	} else {
		off = (r >> 8) % cfg.maxlen;
		len = draw_len(rand64(&rd.rng));
	}
	if (off + len > cfg.maxlen)
		len = cfg.maxlen - off;
	return (r & 5) == 5 ? reader_mread(off, len) : reader_pread(off, len);
}

/* The cached reader: READS_PER_OP reads per op, each under the lock. */
static void *reader_main(void *arg)
{
	bool ok = true;

	(void)arg;
	while (ok && !atomic_load(&rd.stop)) {
		if (rd.reads + rd.mreads >=
		    atomic_load(&rd.ran) * READS_PER_OP) {
			usleep(1000);
			continue;
		}
		pthread_rwlock_rdlock(&rd.lock);
		ok = reader_read();
		pthread_rwlock_unlock(&rd.lock);
	}
	atomic_store(&rd.failed, !ok);
	return NULL;
}

/*
 * The lock of the ops, writer first (a waiting op keeps new reads out),
 * and on a file (without -R) the cached reader.
 */
static void reader_start(void)
{
	int kind = PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, err;
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, kind);
	pthread_rwlock_init(&rd.lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	if (cfg.dev || cfg.no_reader)
		return;
	rd.rng = fx.seed ^ 0x6361636865ULL;
	rd.got = malloc(cfg.maxlen);
	rd.want = malloc(cfg.maxlen);
	if (!rd.got || !rd.want)
		tap_bail("out of memory");
	err = pthread_create(&rd.thread, NULL, reader_main, NULL);
	if (err)
		tap_bail("pthread_create: %s", strerror(err));
	rd.running = true;
}

/* Report a failure of the cached reader, if it had one. */
static bool reader_ok(void)
{
	char where[80];

	if (!atomic_load(&rd.failed))
		return true;
	snprintf(where, sizeof(where), "in the cached reader, %ld ops done",
		 rd.after);
	if (rd.ret != (ssize_t)rd.len) {
		errno = rd.err;
		return fail_at(where, "%s of %llu at %llu: %zd (%s)", rd.call,
			       (unsigned long long)rd.len,
			       (unsigned long long)rd.off, rd.ret,
			       rd.ret < 0 ? strerror(errno) : "short");
	}
	diag_mismatch(rd.got, rd.want, rd.off, rd.len, rd.call);
	return fail_at(where, "%s returned wrong data", rd.call);
}

/* Stop the cached reader and report whether it failed. */
static bool reader_stop(void)
{
	if (rd.running) {
		atomic_store(&rd.stop, true);
		pthread_join(rd.thread, NULL);
		rd.running = false;
	}
	return reader_ok();
}

/* A fatal signal (SIGBUS from a mapping, say) still shows the log. */
static void on_signal(int sig)
{
	fail(&fx.log[fx.nr % LOG_LEN], "killed by signal %d (%s)", sig,
	     strsignal(sig));
	_exit(1);
}

/*
 * Open the device, or create an empty file DIR/@name: @path gets its path.
 * Returns the fd.
 */
static int open_target(char *path, size_t size, const char *name, int flags)
{
	if (cfg.dev)
		snprintf(path, size, "%s", cfg.dir);
	else
		snprintf(path, size, "%s/%s", cfg.dir, name);
	return xopen(path, cfg.dev ? flags : flags | O_CREAT | O_TRUNC);
}

/* Device mode: the region holds the data of "op -1", on the medium. */
static void init_region(void)
{
	fx.size = cfg.maxlen;
	fill_pattern(fx.model, fx.size, 0, op_seed(-1));
	memcpy(fx.buf, fx.model, fx.size);
	if (pwrite(fx.dfd, fx.buf, fx.size, pos_of(0)) != (ssize_t)fx.size)
		tap_bail("[p%d] cannot write region [%llu, +%llu) of %s with O_DIRECT: %s",
			 fx.proc, (unsigned long long)fx.base,
			 (unsigned long long)fx.size, fx.path, strerror(errno));
}

static void proc_setup(int proc, pid_t parent)
{
	char name[64];
	int ret;

	fx.proc = proc;
	fx.seed = cfg.seed + proc;
	fx.rng = fx.seed;
	fx.base = cfg.dev ? proc * cfg.maxlen : 0;
	snprintf(name, sizeof(name), "fsx.%d.%d", parent, proc);
	fx.fd = open_target(fx.path, sizeof(fx.path), name, O_RDWR);
	fx.dfd = open(fx.path, O_RDWR | O_DIRECT);
	if (fx.dfd < 0 && (errno != EINVAL || cfg.dev))
		tap_bail("open %s O_DIRECT: %s", fx.path, strerror(errno));
	if (fx.dfd < 0)
		pdiag("O_DIRECT refused here (EINVAL): O_DIRECT ops skipped");
	else
		fx.dio_eof_align = dio_offset_align(fx.dfd);
	fx.model = calloc(1, cfg.maxlen);
	if (!fx.model || posix_memalign((void **)&fx.buf, PAGE_SZ,
					cfg.maxlen + 2 * DIO_ALIGN))
		tap_bail("out of memory");
	ret = io_uring_queue_init(MAX_INFLIGHT, &fx.ring, 0);
	if (ret)
		tap_bail("io_uring_queue_init: %s", strerror(-ret));
	if (cfg.dev)
		init_region();
	signal(SIGBUS, on_signal);
	signal(SIGSEGV, on_signal);
}

static void print_counts(void)
{
	char done[512] = "", skipped[512] = "", undrawn[128] = "";
	size_t d = 0, s = 0, u = 0;
	int i;

	for (i = 0; i < OP_NR; i++) {
		if (!op_weight(i)) {
			u += snprintf(undrawn + u, sizeof(undrawn) - u, " %s",
				      op_descs[i].name);
			continue;
		}
		d += snprintf(done + d, sizeof(done) - d, " %s %ld",
			      op_descs[i].name, fx.done[i]);
		if (fx.skipped[i])
			s += snprintf(skipped + s, sizeof(skipped) - s,
				      " %s %ld", op_descs[i].name,
				      fx.skipped[i]);
	}
	pdiag("ops done:%s; whole-file checks %ld", done, fx.checks);
	if (s)
		pdiag("ops skipped (refused by the fs, or nothing to do):%s",
		      skipped);
	if (u)
		pdiag("ops not drawn on a block device:%s", undrawn);
	if (cfg.no_reader)
		pdiag("cached reader: off (-R)");
	else if (!cfg.dev)
		pdiag("cached reader: %ld preadv2, %ld mapped reads checked (%ld of the range the last change op changed)",
		      rd.reads, rd.mreads, rd.hot);
}

/*
 * Run operation @op: those that change the file with the lock held
 * exclusively (the cached reader waits), the others shared.
 */
static bool run_op(struct op *op)
{
	bool change = op_changes(op->type), ok;

	if (change)
		pthread_rwlock_wrlock(&rd.lock);
	else
		pthread_rwlock_rdlock(&rd.lock);
	ok = op_descs[op->type].run(op);
	if (change && !op->skipped) {
		rd.hot_off = op->off;
		rd.hot_len = op->len;
	}
	pthread_rwlock_unlock(&rd.lock);
	return ok;
}

/* Operation @nr, then every CHECK_EVERY ops the whole-file check. */
static bool step(long nr)
{
	struct op *op = draw_op(nr);

	if (!run_op(op))
		return false;
	if (op->skipped)
		fx.skipped[op->type]++;
	else
		fx.done[op->type]++;
	if (cfg.verbose)
		pdiag("%s%s", format_op(op), op->skipped ? " (skipped)" : "");
	atomic_store(&rd.ran, nr + 1);
	if (!reader_ok())
		return false;
	return (nr + 1) % CHECK_EVERY || locked_check_file();
}

/* One checker process; returns its exit status. */
static int run_proc(int proc, pid_t parent)
{
	long nr;

	proc_setup(proc, parent);
	reader_start();
	for (nr = 0; nr < cfg.ops; nr++)
		if (!step(nr))
			return 1;
	if (!reader_stop() || (cfg.ops % CHECK_EVERY && !check_file()))
		return 1;
	print_counts();
	io_uring_queue_exit(&fx.ring);
	if (fx.dfd >= 0)
		close(fx.dfd);
	close(fx.fd);
	if (!cfg.dev)
		unlink(fx.path);
	return 0;
}

static void __attribute__((noreturn)) usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-s SEED] [-n OPS] [-l MAXLEN] [-P NPROC] [-R] [-v] DIR|BLOCKDEV\n"
		"  SEED      PRNG seed (UNCACHED_STRESS_SEED; else time and pid)\n"
		"  OPS       operations per process (UNCACHED_STRESS_OPS; 2000)\n"
		"  MAXLEN    largest file size, a multiple of 4096 (1048576); on a\n"
		"            device the region size, rounded up to 1 MiB, at most\n"
		"            the device size / NPROC\n"
		"  NPROC     processes, each on its own file or region of BLOCKDEV\n"
		"            (UNCACHED_STRESS_NPROC; 2)\n"
		"  BLOCKDEV  a block device whose contents may be overwritten\n"
		"  -R        no cached reader thread beside each process\n"
		"  -v        print every operation\n", prog);
	exit(2);
}

/* Device mode: MAXLEN becomes the size of a process's region. */
static void setup_device(void)
{
	int fd = open(cfg.dir, O_RDONLY);
	uint64_t per;

	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &cfg.dev_size)) {
		fprintf(stderr, "%s: cannot get the device size: %s\n",
			cfg.dir, strerror(errno));
		exit(1);
	}
	close(fd);
	per = cfg.dev_size / cfg.nproc & ~(REGION_ALIGN - 1);
	if (!per) {
		fprintf(stderr, "%s: %llu bytes, smaller than NPROC (%d) x 1 MiB: use a larger device or fewer processes (-P)\n",
			cfg.dir, (unsigned long long)cfg.dev_size, cfg.nproc);
		exit(1);
	}
	cfg.maxlen = (cfg.maxlen + REGION_ALIGN - 1) & ~(REGION_ALIGN - 1);
	if (cfg.maxlen > per)
		cfg.maxlen = per;
	cfg.dev = true;
}

static void parse_args(int argc, char **argv)
{
	uint64_t now = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	struct stat st;
	int c;

	cfg.seed = env_number("UNCACHED_STRESS_SEED", now, 0, ~0ULL);
	cfg.ops = env_number("UNCACHED_STRESS_OPS", 2000, 1, 1000000000);
	cfg.nproc = env_number("UNCACHED_STRESS_NPROC", 2, 1, 64);
	cfg.maxlen = 1 << 20;
	while ((c = getopt(argc, argv, "s:n:l:P:Rv")) != -1) {
		switch (c) {
		case 's':
			cfg.seed = parse_number("-s SEED", optarg, 0, ~0ULL);
			break;
		case 'n':
			cfg.ops = parse_number("-n OPS", optarg, 1, 1000000000);
			break;
		case 'l':
			cfg.maxlen = parse_number("-l MAXLEN", optarg, 65536,
						  1ULL << 28);
			break;
		case 'P':
			cfg.nproc = parse_number("-P NPROC", optarg, 1, 64);
			break;
		case 'R':
			cfg.no_reader = true;
			break;
		case 'v':
			cfg.verbose = true;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc - 1)
		usage(argv[0]);
	cfg.dir = argv[optind];
	if (cfg.maxlen % DIO_ALIGN) {
		fprintf(stderr, "-l MAXLEN: %llu is not a multiple of %d\n",
			(unsigned long long)cfg.maxlen, DIO_ALIGN);
		exit(2);
	}
	if (stat(cfg.dir, &st) ||
	    !(S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode))) {
		fprintf(stderr, "%s: not a directory or a block device\n",
			cfg.dir);
		usage(argv[0]);
	}
	if (S_ISBLK(st.st_mode))
		setup_device();
}

/*
 * 0, or the errno with which the directory's fs (or the device) refuses
 * RWF_UNCACHED.
 */
static int probe_target(void)
{
	char path[4096], name[64];
	int fd, err;

	snprintf(name, sizeof(name), "fsx.%d.probe", getpid());
	fd = open_target(path, sizeof(path), name, O_RDWR);
	err = cfg.dev ? bdev_probe_read(fd, cfg.dev_size) : uncached_probe(fd);
	close(fd);
	if (!cfg.dev)
		unlink(path);
	return err;
}

/*
 * Is the errno @err of the probe of @call a filesystem without it? Then
 * say so: the op is skipped. Any other error bails out.
 */
static bool probe_ok(const char *call, int err)
{
	if (!err)
		return true;
	if (err != EOPNOTSUPP && err != EINVAL && err != EXDEV &&
	    err != ENOTTY)
		tap_bail("%s probe on %s: %s", call, cfg.dir, strerror(err));
	tap_diag("%s unsupported on this filesystem (%s): its ops are skipped",
		 call, strerror(err));
	return false;
}

/* The errno of a copy_file_range() of block 0 onto block 1 of @fd. */
static int probe_copy(int fd, uint64_t bs)
{
	loff_t in = 0, out = bs;

	return copy_file_range(fd, &in, fd, &out, bs, 0) < 0 ? errno : 0;
}

/* The errno of FICLONERANGE of block 0 onto block 1 of @fd. */
static int probe_clone(int fd, uint64_t bs)
{
	struct file_clone_range fcr = { .src_fd = fd, .src_length = bs,
					.dest_offset = bs };

	return ioctl(fd, FICLONERANGE, &fcr) ? errno : 0;
}

/*
 * A file: do copy_file_range() and FICLONERANGE (of st_blksize blocks)
 * work here? Each tried once in a scratch file of two blocks.
 */
static void probe_ops(void)
{
	char path[4096], name[64];
	struct stat st;
	uint64_t bs;
	int fd;

	snprintf(name, sizeof(name), "fsx.%d.ops", getpid());
	fd = open_target(path, sizeof(path), name, O_RDWR);
	if (fstat(fd, &st))
		tap_bail("fstat %s: %s", path, strerror(errno));
	bs = st.st_blksize;
	write_pattern(fd, 2 * bs, 0, 1);
	cfg.copy_ok = probe_ok("copy_file_range", probe_copy(fd, bs));
	if (bs < 512 || bs > cfg.maxlen / 16 || (bs & (bs - 1)))
		tap_diag("FICLONERANGE: st_blksize %llu is no block size here: its ops are skipped",
			 (unsigned long long)bs);
	else
		cfg.clone_ok = probe_ok("FICLONERANGE", probe_clone(fd, bs));
	cfg.clone_bs = bs;
	close(fd);
	unlink(path);
}

static void report(int proc, pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		tap_bail("waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status))
		tap_diag("proc %d killed by signal %d (%s)", proc,
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	tap_result(WIFEXITED(status) && !WEXITSTATUS(status),
		   "fsx proc %d seed=%llu ops=%ld", proc,
		   (unsigned long long)(cfg.seed + proc), cfg.ops);
}

int main(int argc, char **argv)
{
	pid_t pids[64], parent = getpid();
	int i, err;

	parse_args(argc, argv);
	tap_plan(cfg.nproc);
	tap_online_cpus();
	tap_diag("seed %llu, %ld ops per process, MAXLEN %llu, NPROC %d, on %s%s",
		 (unsigned long long)cfg.seed, cfg.ops,
		 (unsigned long long)cfg.maxlen, cfg.nproc, cfg.dir,
		 cfg.dev ? " (a block device: MAXLEN is the region size)" : "");
	err = probe_target();
	if (err) {
		tap_diag("preadv2(RWF_UNCACHED) on %s: %s: no RWF_UNCACHED here (a kernel without the series?)",
			 cfg.dir, strerror(err));
		for (i = 0; i < cfg.nproc; i++)
			tap_result(false, "fsx proc %d seed=%llu: not run",
				   i, (unsigned long long)(cfg.seed + i));
		return tap_finish();
	}
	if (!cfg.dev)
		probe_ops();
	for (i = 0; i < cfg.nproc; i++) {
		fflush(stdout);
		pids[i] = fork();
		if (pids[i] < 0)
			tap_bail("fork: %s", strerror(errno));
		if (!pids[i]) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			exit(run_proc(i, parent));
		}
	}
	for (i = 0; i < cfg.nproc; i++)
		report(i, pids[i]);
	return tap_finish();
}
