// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED reads and writes that are not page aligned: 1 byte, 4097
 * bytes straddling page boundaries, and iovecs of three odd-sized
 * segments, at odd offsets. The data is right (written data after
 * drop_caches) and no page of a written range stays cached. A read drops
 * every folio it copied to the folio's end; the folio it stopped inside
 * stays (flagged) for the next read of a sequential stream, so the cached
 * pages of a read range can only be a run that ends at its last page.
 * What a read leaves beyond its range (readahead) is reported, not
 * asserted, as the documented bound (uncached_ra_leftover_bound()) is
 * larger than the whole file.
 */
#include "uncached_io.h"

#define FILE_LEN	(64ULL << 10)
#define FILE_SEED	31
#define MAX_SEGS	3

struct unaligned_io {
	uint64_t off;
	int nseg;
	size_t seg[MAX_SEGS];
};

static const struct unaligned_io reads[] = {
	{ 4095, 1, { 1 } },			/* last byte of a page */
	{ 8191, 1, { 4097 } },			/* three pages */
	{ 20481, 3, { 1, 4097, 2999 } },
};

static const struct unaligned_io writes[] = {
	{ 30001, 1, { 1 } },
	{ 36863, 1, { 4097 } },
	{ 45057, 3, { 7, 4097, 1111 } },
};

static size_t io_len(const struct unaligned_io *io)
{
	size_t len = 0;
	int i;

	for (i = 0; i < io->nseg; i++)
		len += io->seg[i];
	return len;
}

/*
 * One preadv2()/pwritev2(RWF_UNCACHED) of @io's segments. A write stores
 * pattern @seed; a read must return pattern @seed. True when the call
 * transferred everything (and a read returned the right data).
 */
static bool uncached_rw(int fd, bool write, const struct unaligned_io *io,
			unsigned int seed)
{
	struct iovec iov[MAX_SEGS];
	uint64_t pos = io->off;
	size_t len = io_len(io);
	bool ok = true;
	ssize_t ret;
	int i;

	for (i = 0; i < io->nseg; i++) {
		iov[i].iov_base = xmalloc(io->seg[i]);
		iov[i].iov_len = io->seg[i];
		fill_pattern(iov[i].iov_base, io->seg[i], pos, write ? seed : 0);
		pos += io->seg[i];
	}
	if (write)
		ret = pwritev2(fd, iov, io->nseg, io->off, RWF_UNCACHED);
	else
		ret = preadv2(fd, iov, io->nseg, io->off, RWF_UNCACHED);
	if (ret != (ssize_t)len) {
		tap_diag("%s of %zu bytes at %llu: %zd (%s)",
			 write ? "pwritev2" : "preadv2", len,
			 (unsigned long long)io->off, ret,
			 ret < 0 ? strerror(errno) : "short");
		ok = false;
	}
	for (pos = io->off, i = 0; i < io->nseg; pos += io->seg[i], i++) {
		if (ok && !write &&
		    check_pattern(iov[i].iov_base, io->seg[i], pos, seed) >= 0) {
			tap_diag("segment %d (%zu bytes at %llu) mismatch", i,
				 io->seg[i], (unsigned long long)pos);
			ok = false;
		}
		free(iov[i].iov_base);
	}
	return ok;
}

/*
 * The cached pages of [off, off + len) form one run that ends at the last
 * page, the folio the read stopped in (or none are cached).
 */
static bool only_last_folio_cached(int fd, uint64_t off, uint64_t len,
				   const char *what)
{
	uint64_t pg, first = off / PAGE_SZ, last = (off + len - 1) / PAGE_SZ;
	bool seen = false, ok = true;

	for (pg = first; pg <= last; pg++) {
		bool cached = nr_cached(fd, pg * PAGE_SZ, PAGE_SZ) > 0;

		if (seen && !cached)
			ok = false;
		seen |= cached;
	}
	if (!ok)
		diag_cached_pages(fd, off, len);
	return tap_result(ok,
			  "%s: only the folio the read stopped in may stay cached (%llu pages of %llu)",
			  what,
			  (unsigned long long)nr_cached(fd, off, len),
			  (unsigned long long)(last - first + 1));
}

static void unaligned_reads(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, FILE_SEED);
	uint64_t end;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(reads); i++) {
		const struct unaligned_io *io = &reads[i];
		char what[96];

		snprintf(what, sizeof(what), "read %zu bytes in %d segment(s) at %llu",
			 io_len(io), io->nseg, (unsigned long long)io->off);
		evict_file(fd, FILE_LEN);
		tap_result(uncached_rw(fd, false, io, FILE_SEED),
			   "%s: data right", what);
		only_last_folio_cached(fd, io->off, io_len(io), what);
		end = pages_of(io->off + io_len(io)) * PAGE_SZ;
		diag_ra_leftover(fd, end, FILE_LEN - end, io_len(io), what);
		diag_cachestat("whole file", file_cachestat(fd, 0, FILE_LEN));
	}
	close(fd);
}

/* The file from disk equals @expect. */
static bool file_equals(int fd, const unsigned char *expect)
{
	unsigned char *buf = xmalloc(FILE_LEN);
	bool ok;
	size_t i;

	drop_caches();
	ok = pread(fd, buf, FILE_LEN, 0) == (ssize_t)FILE_LEN;
	for (i = 0; ok && i < FILE_LEN; i++)
		if (buf[i] != expect[i]) {
			tap_diag("byte %zu is %#x, want %#x", i, buf[i], expect[i]);
			ok = false;
		}
	free(buf);
	return ok;
}

static void unaligned_writes(const char *path)
{
	int fd = make_cold_file(path, FILE_LEN, FILE_SEED);
	unsigned char *expect = xmalloc(FILE_LEN);
	unsigned int i;

	fill_pattern(expect, FILE_LEN, 0, FILE_SEED);
	for (i = 0; i < ARRAY_SIZE(writes); i++) {
		const struct unaligned_io *io = &writes[i];
		unsigned int seed = FILE_SEED + 1 + i;
		char what[96];

		snprintf(what, sizeof(what), "write %zu bytes in %d segment(s) at %llu",
			 io_len(io), io->nseg, (unsigned long long)io->off);
		evict_file(fd, FILE_LEN);
		tap_result(uncached_rw(fd, true, io, seed), "%s: returns %zu",
			   what, io_len(io));
		fill_pattern(expect + io->off, io_len(io), io->off, seed);
		expect_settled(fd, io->off, io_len(io), 0, what);
		diag_cachestat("whole file", file_cachestat(fd, 0, FILE_LEN));
		tap_result(file_equals(fd, expect),
			   "%s: file right after drop_caches", what);
	}
	free(expect);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-unaligned");
	tap_plan(15);
	unaligned_reads(path);
	unaligned_writes(path);
	unlink(path);
	return tap_finish();
}
