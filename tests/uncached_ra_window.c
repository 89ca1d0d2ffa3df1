// SPDX-License-Identifier: GPL-2.0
/*
 * The readahead of RWF_UNCACHED reads, on the filesystem mounted at
 * argv[1]: uncached reads get the readahead the file asks for, and what a
 * stream leaves behind is bounded where it arises instead of by a smaller
 * window.
 *
 * - POSIX_FADV_SEQUENTIAL (fio's default) doubles the file's window: the
 *   device's read requests of an uncached sequential stream are on average
 *   at least 2/3 the size of a buffered stream's (/sys/dev/block/.../stat).
 *   A window capped at max(128 KiB, request), which this guards against,
 *   reads at most 128 KiB ahead of 64 KiB calls: about a quarter of the
 *   buffered stream's requests (about 500 KiB here).  The margin is for
 *   how requests merge, which varies with timing: a one-CPU guest of
 *   Debian's kernel measured 442 KiB against 496 on btrfs (89%);
 * - a stream that stops leaves at most 2 x its window cached while its file
 *   is open (uncached_ra_leftover_bound(), the window doubled by the
 *   advice), and nothing once the file is released;
 * - an fd that read buffered first, then goes on uncached with the window
 *   it grew (btrfs raises read_ahead_kb to 4 MiB), is bounded the same
 *   way, and its buffered part stays cached (with what buffered readahead
 *   brought in beyond it, past the stop too with btrfs' window: those
 *   folios were cached before the uncached reads, and are not theirs to
 *   drop; nothing else stays once the file is released);
 * - a stream that moves elsewhere drops what it left behind, but for
 *   folios still locked by readahead in flight (uncached_drop_busy).
 *
 * Every read's data is checked.
 */
#include "uncached_io.h"

#define KIB		1024ULL
#define MIB		(1024 * KIB)
#define FILE_LEN	(16 * MIB)
#define BS		(64 * KIB)
#define STOP		(4 * MIB)	/* where the stopped streams stop */
#define FAR		(12 * MIB)	/* where the moving stream goes on */
#define BUFFERED_LEN	(2 * MIB)	/* the buffered start of an fd */
#define NR_CASES	10

/* Reads and sectors read of the block device the test filesystem is on. */
struct dev_reads {
	unsigned long long ios, sectors;
};

static char dev_stat_path[128];

/* The source device of the mount at test_dir, from /proc/self/mountinfo. */
static void find_device(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024], mnt[512], src[512];
	struct stat st;
	bool found = false;

	if (!f)
		tap_bail("/proc/self/mountinfo: %s", strerror(errno));
	while (!found && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		found = sep && sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1 &&
			!strcmp(mnt, test_dir) &&
			sscanf(sep + 3, "%*s %511s", src) == 1;
	}
	fclose(f);
	if (!found)
		tap_bail("%s is not a mount point", test_dir);
	if (stat(src, &st) || !S_ISBLK(st.st_mode))
		tap_bail("the source of %s, %s, is not a block device", test_dir,
			 src);
	snprintf(dev_stat_path, sizeof(dev_stat_path),
		 "/sys/dev/block/%u:%u/stat", major(st.st_rdev),
		 minor(st.st_rdev));
}

static struct dev_reads dev_reads(void)
{
	FILE *f = fopen(dev_stat_path, "r");
	struct dev_reads r;

	if (!f || fscanf(f, "%llu %*u %llu", &r.ios, &r.sectors) != 2)
		tap_bail("%s: cannot read the read counters", dev_stat_path);
	fclose(f);
	return r;
}

/* A reader's fd of @path with POSIX_FADV_SEQUENTIAL, or no advice. */
static int open_reader(const char *path, bool sequential)
{
	int fd = xopen(path, O_RDONLY);
	int err = sequential ? posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL) : 0;

	if (err)
		tap_bail("posix_fadvise SEQUENTIAL: %s", strerror(err));
	return fd;
}

/*
 * A whole-file sequential read of the cold file @path with @flags and the
 * sequential advice; the device's mean read request, in bytes, in *@mean.
 */
static bool stream_mean_request(const char *path, int check_fd, int flags,
				unsigned long long *mean)
{
	struct dev_reads before, after;
	int fd;
	bool ok;

	evict_file(check_fd, FILE_LEN);
	fd = open_reader(path, true);
	before = dev_reads();
	ok = read_range_flags(fd, 0, FILE_LEN, BS, flags, 1);
	after = dev_reads();
	close(fd);
	*mean = after.ios > before.ios ?
		(after.sectors - before.sectors) * 512 / (after.ios - before.ios) : 0;
	return ok;
}

static void request_sizes(const char *path, int check_fd)
{
	unsigned long long buffered, uncached;
	bool ok;

	ok = stream_mean_request(path, check_fd, 0, &buffered);
	ok = stream_mean_request(path, check_fd, RWF_UNCACHED, &uncached) && ok;
	tap_result(ok && buffered && uncached * 3 >= buffered * 2,
		   "POSIX_FADV_SEQUENTIAL: uncached reads' mean device request %llu KiB, buffered %llu KiB (want at least 2/3), data right",
		   uncached >> 10, buffered >> 10);
}

/*
 * Pages of [off, off + len) cached beyond what the reads found locked:
 * a busy folio is at most a readahead window of pages.
 */
static bool expect_gone_but_busy(int fd, uint64_t off, uint64_t len,
				 long long busy_before, const char *what)
{
	long long busy = vmstat_counter("uncached_drop_busy") - busy_before;
	uint64_t left = nr_cached(fd, off, len);
	uint64_t allowed = busy * pages_of(2 * file_ra_window(fd));

	if (left)
		diag_cached_pages(fd, off, len);
	return tap_result(left <= allowed,
			  "%s: %llu pages of [%llu, +%llu) cached (want 0, but for the %lld folio(s) found locked: at most %llu pages)",
			  what, (unsigned long long)left,
			  (unsigned long long)off, (unsigned long long)len, busy,
			  (unsigned long long)allowed);
}

/* A stream with the advice stops at STOP: bounded while open, 0 after. */
static void stopped_stream(const char *path, int check_fd)
{
	int fd;
	uint64_t bound;

	evict_file(check_fd, FILE_LEN);
	fd = open_reader(path, true);
	tap_result(read_range_flags(fd, 0, STOP, BS, RWF_UNCACHED, 1),
		   "POSIX_FADV_SEQUENTIAL: an uncached stream of %llu MiB reads the right data",
		   STOP / MIB);
	/* the advice doubles the window */
	bound = 2 * uncached_ra_leftover_bound(fd, BS);
	expect_cached_at_most(check_fd, STOP, FILE_LEN - STOP, bound,
			      "POSIX_FADV_SEQUENTIAL: the stopped stream's readahead while its file is open");
	close(fd);
	expect_cached(check_fd, 0, FILE_LEN, 0,
		      "POSIX_FADV_SEQUENTIAL: once the stream's file is released");
}

/* Which pages of [off, off + len) of @fd are cached: a byte a page. */
static unsigned char *cached_map(int fd, uint64_t off, uint64_t len)
{
	uint64_t i, n = pages_of(len);
	unsigned char *map = xmalloc(n);

	for (i = 0; i < n; i++)
		map[i] = nr_cached(fd, off + i * PAGE_SZ, PAGE_SZ) != 0;
	return map;
}

/*
 * Once the file is released, the pages of [STOP, FILE_LEN) still cached
 * are those the buffered reads' readahead brought in (@before): with a
 * large window (btrfs: 4 MiB) it reaches past STOP. Those were cached
 * before the uncached reads and are not theirs to drop.
 */
static void expect_only_buffered_left(int check_fd, const unsigned char *before)
{
	unsigned char *now = cached_map(check_fd, STOP, FILE_LEN - STOP);
	uint64_t i, kept = 0, new = 0;

	for (i = 0; i < pages_of(FILE_LEN - STOP); i++) {
		kept += now[i] && before[i];
		new += now[i] && !before[i];
	}
	if (new)
		diag_cached_pages(check_fd, STOP, FILE_LEN - STOP);
	tap_result(!new,
		   "inherited window: beyond the stop, once the file is released: %llu pages cached that the buffered reads did not bring in (want 0; %llu of theirs stay)",
		   (unsigned long long)new, (unsigned long long)kept);
	free(now);
}

/* An fd reads BUFFERED_LEN buffered, then goes on uncached to STOP. */
static void inherited_window(const char *path, int check_fd)
{
	unsigned char *buffered_ra;
	int fd;
	bool ok;

	evict_file(check_fd, FILE_LEN);
	fd = open_reader(path, false);
	ok = read_range_flags(fd, 0, BUFFERED_LEN, BS, 0, 1);
	buffered_ra = cached_map(check_fd, STOP, FILE_LEN - STOP);
	ok = read_range_flags(fd, BUFFERED_LEN, STOP - BUFFERED_LEN, BS,
			      RWF_UNCACHED, 1) && ok;
	tap_result(ok, "an fd reads %llu MiB buffered, then uncached to %llu MiB: data right",
		   BUFFERED_LEN / MIB, STOP / MIB);
	expect_cached_at_most(check_fd, STOP, FILE_LEN - STOP,
			      uncached_ra_leftover_bound(fd, BS),
			      "inherited window: the readahead left while the file is open");
	close(fd);
	/* [BUFFERED_LEN, STOP) may hold what buffered readahead brought in */
	expect_only_buffered_left(check_fd, buffered_ra);
	expect_cached(check_fd, 0, BUFFERED_LEN, pages_of(BUFFERED_LEN),
		      "inherited window: the buffered part stays cached");
	free(buffered_ra);
}

/* A stream reads to STOP, then reads one block at FAR. */
static void moving_stream(const char *path, int check_fd)
{
	long long busy;
	int fd;
	bool ok;

	evict_file(check_fd, FILE_LEN);
	fd = open_reader(path, false);
	busy = vmstat_counter("uncached_drop_busy");
	ok = read_range_flags(fd, 0, STOP, BS, RWF_UNCACHED, 1);
	ok = read_range_flags(fd, FAR, BS, BS, RWF_UNCACHED, 1) && ok;
	tap_result(ok, "a stream reads to %llu MiB, then at %llu MiB: data right",
		   STOP / MIB, FAR / MIB);
	expect_gone_but_busy(check_fd, 0, FAR, busy,
			     "moved elsewhere: what the stream left before it moved");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;
	int check_fd;

	test_init(argc, argv);
	tap_plan(NR_CASES);
	find_device();
	path = test_path("ra");
	/* the checker's fd does no uncached IO: its release drops nothing */
	check_fd = make_cold_file(path, FILE_LEN, 1);
	request_sizes(path, check_fd);
	stopped_stream(path, check_fd);
	inherited_window(path, check_fd);
	moving_stream(path, check_fd);
	close(check_fd);
	unlink(path);
	return tap_finish();
}
