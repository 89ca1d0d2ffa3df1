// SPDX-License-Identifier: GPL-2.0
/*
 * Cached users adopt folios that uncached IO instantiated, also when they
 * read through splice: splice(2) into a pipe, sendfile(2), and (the
 * baseline) read(2).
 *
 * An uncached 64 KiB read at offset 0 of a cold file leaves the folios it
 * read ahead beyond 64 KiB cached and flagged uncached (at most
 * uncached_ra_leftover_bound(), see uncached_io.h). The control shows that
 * a later uncached read of the whole file drops those leftovers: nothing
 * stays cached. With a cached user in between, which reads the whole file
 * and so finds the leftovers, the folios are adopted (their flag goes
 * away) and the uncached read of the whole file leaves all of them cached.
 */
#include "uncached_io.h"

#include <sys/sendfile.h>

#define FILE_LEN	(4ULL << 20)
#define HEAD		(64ULL << 10)	/* the read that leaves leftovers */
#define BS		(64 << 10)

enum user { NOBODY, SPLICE, SENDFILE, READ };

static const char *const user_name[] = {
	[NOBODY]	= "nobody (control)",
	[SPLICE]	= "splice to a pipe",
	[SENDFILE]	= "sendfile to /dev/null",
	[READ]		= "read(2)",
};

/* splice(2) the whole file into a pipe, drain it, check the data. */
static bool splice_all(int fd, unsigned int seed)
{
	char *buf = xmalloc(BS);
	loff_t off = 0;
	bool ok = true;
	int pfd[2];

	if (pipe(pfd))
		tap_bail("pipe: %s", strerror(errno));
	while (ok && (uint64_t)off < FILE_LEN) {
		loff_t start = off;
		ssize_t n = splice(fd, &off, pfd[1], NULL, BS, 0), got = 0;

		if (n <= 0) {
			tap_diag("splice at %lld: %zd (%s)", (long long)start,
				 n, n < 0 ? strerror(errno) : "EOF");
			ok = false;
			break;
		}
		while (got < n) {
			ssize_t r = read(pfd[0], buf + got, n - got);

			if (r <= 0)
				tap_bail("read from the pipe: %s",
					 r < 0 ? strerror(errno) : "EOF");
			got += r;
		}
		if (check_pattern(buf, n, start, seed) >= 0) {
			tap_diag("splice at %lld: data mismatch",
				 (long long)start);
			ok = false;
		}
	}
	close(pfd[0]);
	close(pfd[1]);
	free(buf);
	return ok;
}

/* sendfile(2) the whole file to /dev/null. */
static bool sendfile_all(int fd)
{
	int null = xopen("/dev/null", O_WRONLY);
	off_t off = 0;
	ssize_t n = 1;

	while ((uint64_t)off < FILE_LEN && n > 0)
		n = sendfile(null, fd, &off, FILE_LEN - off);
	if (n <= 0)
		tap_diag("sendfile at %lld: %zd (%s)", (long long)off, n,
			 n < 0 ? strerror(errno) : "EOF");
	close(null);
	return (uint64_t)off == FILE_LEN;
}

/* Plain read(2) of the whole file from its start, BS at a time. */
static bool read_all(int fd, unsigned int seed)
{
	char *buf = xmalloc(BS);
	uint64_t off = 0;
	ssize_t n = 1;

	if (lseek(fd, 0, SEEK_SET))
		tap_bail("lseek: %s", strerror(errno));
	while (off < FILE_LEN && n > 0) {
		n = read(fd, buf, BS);
		if (n > 0 && check_pattern(buf, n, off, seed) >= 0) {
			tap_diag("read at %llu: data mismatch",
				 (unsigned long long)off);
			break;
		}
		if (n > 0)
			off += n;
	}
	if (n <= 0)
		tap_diag("read at %llu: %zd (%s)", (unsigned long long)off, n,
			 n < 0 ? strerror(errno) : "EOF");
	free(buf);
	return off == FILE_LEN;
}

static bool cached_user(int fd, enum user who, unsigned int seed)
{
	switch (who) {
	case NOBODY:
		return true;
	case SPLICE:
		return splice_all(fd, seed);
	case SENDFILE:
		return sendfile_all(fd);
	case READ:
		return read_all(fd, seed);
	}
	return false;
}

static void scenario(const char *path, enum user who)
{
	const char *name = user_name[who];
	unsigned int seed = 91 + who;
	int fd = make_cold_file(path, FILE_LEN, seed);
	uint64_t left, cached, want = 0;

	tap_result(read_range_flags(fd, 0, HEAD, HEAD, RWF_UNCACHED, seed),
		   "%s: uncached 64 KiB read at 0 of a cold file, data right",
		   name);
	left = nr_cached(fd, HEAD, FILE_LEN - HEAD);
	tap_result(left > 0,
		   "%s: it leaves %llu KiB read ahead beyond 64 KiB (want > 0, bound %llu KiB)",
		   name, (unsigned long long)(left * PAGE_SZ >> 10),
		   (unsigned long long)(uncached_ra_leftover_bound(fd, HEAD) >> 10));
	if (who != NOBODY) {
		tap_result(cached_user(fd, who, seed),
			   "%s: reads the whole file%s", name,
			   who == SENDFILE ? "" : ", data right");
		want = pages_of(FILE_LEN);
		cached = nr_cached(fd, 0, FILE_LEN);
		tap_result(cached == want,
			   "%s: the whole file is cached after it (%llu of %llu pages)",
			   name, (unsigned long long)cached,
			   (unsigned long long)want);
	}
	tap_result(read_range_flags(fd, 0, FILE_LEN, BS, RWF_UNCACHED, seed),
		   "%s: uncached read of the whole file, data right", name);
	expect_cached(fd, 0, FILE_LEN, want, name);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-splice-adopt");
	tap_plan(22);
	scenario(path, NOBODY);
	scenario(path, SPLICE);
	scenario(path, SENDFILE);
	scenario(path, READ);
	unlink(path);
	return tap_finish();
}
