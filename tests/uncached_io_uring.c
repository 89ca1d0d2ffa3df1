// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED through io_uring: IORING_OP_WRITEV/WRITE and
 * IORING_OP_READV/READ with sqe->rw_flags = RWF_UNCACHED, 32 requests of
 * 64 KiB in flight over an 8 MiB file. The data is what the syscalls
 * give (the pattern, written data read back after drop_caches). No page
 * stays cached after the writes once writeback completed. Uncached reads
 * read ahead, and the reads in flight share the file's readahead state: a
 * read that finished first can have its range read ahead again by another
 * one, so after the reads at most one readahead window per read in flight
 * stays cached (QD x max(128 KiB, 64 KiB)).
 */
#include "uncached_io.h"

#include <liburing.h>

#define FILE_LEN	(8ULL << 20)
#define BS		(64 << 10)
#define QD		32
#define NR_BLOCKS	(FILE_LEN / BS)

struct slot {
	struct iovec iov;
	uint64_t off;
};

static struct io_uring ring;
static struct slot slots[QD];

static void queue_block(int fd, int op, struct slot *s, uint64_t off,
			unsigned int seed)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

	if (!sqe)
		tap_bail("no free SQE");
	s->off = off;
	if (op == IORING_OP_WRITEV || op == IORING_OP_WRITE)
		fill_pattern(s->iov.iov_base, BS, off, seed);
	else
		memset(s->iov.iov_base, 0, BS);
	switch (op) {
	case IORING_OP_READV:
		io_uring_prep_readv(sqe, fd, &s->iov, 1, off);
		break;
	case IORING_OP_WRITEV:
		io_uring_prep_writev(sqe, fd, &s->iov, 1, off);
		break;
	case IORING_OP_READ:
		io_uring_prep_read(sqe, fd, s->iov.iov_base, BS, off);
		break;
	case IORING_OP_WRITE:
		io_uring_prep_write(sqe, fd, s->iov.iov_base, BS, off);
		break;
	}
	sqe->rw_flags = RWF_UNCACHED;
	io_uring_sqe_set_data(sqe, s);
}

/*
 * Run @op over the whole file, QD requests in flight. True when every
 * request transferred BS bytes and every read returned pattern @seed.
 */
static bool ring_pass(int fd, int op, unsigned int seed)
{
	bool write = op == IORING_OP_WRITEV || op == IORING_OP_WRITE;
	uint64_t next = 0, done = 0;
	unsigned int bad = 0;
	int i, ret;

	for (i = 0; i < QD && next < NR_BLOCKS; i++, next++)
		queue_block(fd, op, &slots[i], next * BS, seed);
	while (done < NR_BLOCKS) {
		struct io_uring_cqe *cqe;
		struct slot *s;

		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0)
			tap_bail("io_uring_submit_and_wait: %s", strerror(-ret));
		ret = io_uring_peek_cqe(&ring, &cqe);
		if (ret)
			continue;
		s = io_uring_cqe_get_data(cqe);
		if (cqe->res != BS) {
			if (bad++ < 5)
				tap_diag("%s at %llu: res %d (%s)",
					 write ? "write" : "read",
					 (unsigned long long)s->off, cqe->res,
					 cqe->res < 0 ? strerror(-cqe->res) : "short");
		} else if (!write && check_pattern(s->iov.iov_base, BS, s->off,
						   seed) >= 0) {
			if (bad++ < 5)
				tap_diag("read at %llu: data mismatch",
					 (unsigned long long)s->off);
		}
		io_uring_cqe_seen(&ring, cqe);
		done++;
		if (next < NR_BLOCKS)
			queue_block(fd, op, s, next++ * BS, seed);
	}
	return !bad;
}

static void uring_write(const char *path, int op, const char *name,
			unsigned int seed)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);

	tap_result(ring_pass(fd, op, seed),
		   "%s: %llu uncached writes of 64 KiB, %d in flight, complete",
		   name, (unsigned long long)NR_BLOCKS, QD);
	expect_settled(fd, 0, FILE_LEN, 0, name);
	drop_caches();
	tap_result(read_range_flags(fd, 0, FILE_LEN, 1 << 20, 0, seed),
		   "%s: data right after drop_caches", name);
	close(fd);
}

static void uring_read(const char *path, int op, const char *name,
		       unsigned int seed)
{
	int fd = make_cold_file(path, FILE_LEN, seed);
	uint64_t window = file_ra_window(fd);
	char what[96];

	if (window < BS)
		window = BS;
	tap_result(ring_pass(fd, op, seed),
		   "%s: %llu uncached reads of 64 KiB, %d in flight, data right",
		   name, (unsigned long long)NR_BLOCKS, QD);
	snprintf(what, sizeof(what), "%s: read ahead left by %d reads in flight (a window each)",
		 name, QD);
	expect_cached_at_most(fd, 0, FILE_LEN, QD * window, what);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;
	int i, ret;

	test_init(argc, argv);
	path = test_path("uncached-io-uring");
	ret = io_uring_queue_init(QD, &ring, 0);
	if (ret)
		tap_bail("io_uring_queue_init: %s", strerror(-ret));
	for (i = 0; i < QD; i++) {
		slots[i].iov.iov_base = xmalloc(BS);
		slots[i].iov.iov_len = BS;
	}
	tap_plan(10);
	uring_write(path, IORING_OP_WRITEV, "IORING_OP_WRITEV", 61);
	uring_read(path, IORING_OP_READV, "IORING_OP_READV", 62);
	uring_write(path, IORING_OP_WRITE, "IORING_OP_WRITE", 63);
	uring_read(path, IORING_OP_READ, "IORING_OP_READ", 64);
	io_uring_queue_exit(&ring);
	unlink(path);
	return tap_finish();
}
