// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED combined with other flags and on other files:
 * RWF_NOWAIT reads and writes, RWF_DSYNC writes (durable and dropped when
 * the call returns), O_DIRECT (the flag is accepted and ignored), an
 * unknown flag bit, files whose filesystem does not support it (tmpfs,
 * procfs, pipes, sockets) and fds not open for the direction.
 */
#include "uncached_io.h"

#include <sys/socket.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#define LEN		(1ULL << 20)
#define BS		(64 << 10)
#define MAX_TRIES	100
#define DSYNC_ROUNDS	8

static void nowait_read(const char *path, bool warm)
{
	const char *what = warm ? "NOWAIT read of cached data" :
				  "NOWAIT read of cold data";
	int fd = make_cold_file(path, LEN, 71);
	char *buf = xmalloc(LEN);
	ssize_t ret;
	int err;

	if (warm && !read_range_flags(fd, 0, LEN, BS, 0, 71))
		tap_bail("buffered read failed");
	ret = rw_once(fd, false, buf, LEN, 0, RWF_UNCACHED | RWF_NOWAIT, 71);
	err = ret < 0 ? errno : 0;
	if (ret >= 0 && ret < (ssize_t)LEN)
		tap_diag("%s: short read of %zd bytes", what, ret);
	tap_result(err == EAGAIN ||
		   (ret > 0 && check_pattern(buf, ret, 0, 71) < 0),
		   "%s: data right or EAGAIN (got %zd, %s)", what, ret,
		   err ? strerror(err) : "no error");
	if (warm)
		expect_cached(fd, 0, LEN, pages_of(LEN), what);
	else
		diag_cachestat(what, file_cachestat(fd, 0, LEN));
	free(buf);
	close(fd);
}

/*
 * One RWF_UNCACHED|RWF_NOWAIT write of BS bytes at @off, tried until it
 * does not fail with EAGAIN, at most MAX_TRIES times. EAGAIN is a right
 * answer to a NOWAIT write that would block, and two causes are expected:
 * - the file's timestamps need an update (the coarse clock ticked since
 *   the last one), so futimens() makes them current before each try;
 * - the write-behind of the pieces before is in progress: on XFS the
 *   flusher holds the inode's ILOCK shared in xfs_map_blocks() when the
 *   write's iomap_begin tries to take it exclusive (seen with ftrace on
 *   one such EAGAIN). So after an EAGAIN the file is written back and
 *   waited for (its uncached folios are dropped at the end of that
 *   writeback like any other) before the next try.
 * *@eagain counts the EAGAINs.
 */
static ssize_t nowait_write_once(int fd, char *buf, uint64_t off, int *eagain)
{
	ssize_t ret;
	int tries, err;

	for (tries = 1; ; tries++) {
		if (futimens(fd, NULL))
			tap_bail("futimens: %s", strerror(errno));
		ret = rw_once(fd, true, buf, BS, off, RWF_UNCACHED | RWF_NOWAIT, 73);
		err = errno;
		if (ret >= 0 || err != EAGAIN || tries == MAX_TRIES)
			break;
		++*eagain;
		if (fdatasync(fd))
			tap_bail("fdatasync: %s", strerror(errno));
	}
	errno = err;
	return ret;
}

/*
 * For comparison after a failed RWF_UNCACHED|RWF_NOWAIT write at @off: the
 * same write without RWF_UNCACHED (pattern 72, what the file holds there).
 * The page cache it fills is evicted, not to fail the cases after on it.
 */
static void plain_nowait_write(int fd, char *buf, uint64_t off)
{
	ssize_t ret;

	futimens(fd, NULL);
	ret = rw_once(fd, true, buf, BS, off, RWF_NOWAIT, 72);
	tap_diag("plain RWF_NOWAIT write at %llu: %zd (%s)",
		 (unsigned long long)off, ret,
		 ret < 0 ? strerror(errno) : "no error");
	if (fdatasync(fd) || posix_fadvise(fd, off, BS, POSIX_FADV_DONTNEED))
		tap_bail("cannot evict the plain write: %s", strerror(errno));
}

/*
 * RWF_UNCACHED|RWF_NOWAIT writes of the file in BS pieces. btrfs refuses
 * NOWAIT writes with EAGAIN unless the inode is NOCOW or has preallocated
 * extents (btrfs_write_check()), so on btrfs the blocks are preallocated.
 */
static void nowait_write(const char *path)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	char *buf = xmalloc(BS);
	int eagain = 0, err = 0;
	struct statfs sfs;
	uint64_t off;
	ssize_t ret = 0;
	bool ext4;

	if (fstatfs(fd, &sfs))
		tap_bail("fstatfs: %s", strerror(errno));
	ext4 = sfs.f_type == EXT4_SUPER_MAGIC;
	if (sfs.f_type == BTRFS_SUPER_MAGIC && fallocate(fd, 0, 0, LEN))
		tap_bail("fallocate: %s", strerror(errno));
	write_pattern(fd, LEN, 0, 72);
	evict_file(fd, LEN);
	for (off = 0; off < LEN; off += BS) {
		ret = nowait_write_once(fd, buf, off, &eagain);
		err = errno;
		if (ret != BS)
			break;
	}
	tap_diag("NOWAIT write: %d EAGAIN, each retried after the file's writeback",
		 eagain);
	if (ret < 0)
		plain_nowait_write(fd, buf, off);
	if (ext4)
		tap_result(off == LEN || (!off && err == EOPNOTSUPP),
			   "NOWAIT writes on ext4: succeed or EOPNOTSUPP (%llu bytes written, %s)",
			   (unsigned long long)off, off < LEN ? strerror(err) : "no error");
	else
		tap_result(off == LEN,
			   "NOWAIT writes on %s: succeed (%llu bytes written, %s)",
			   test_fs, (unsigned long long)off,
			   off < LEN ? strerror(err) : "no error");
	expect_settled(fd, 0, LEN, 0, "NOWAIT write");
	drop_caches();
	tap_result(read_range_flags(fd, 0, off, BS, 0, 73) &&
		   read_range_flags(fd, off, LEN - off, BS, 0, 72),
		   "NOWAIT write: file right after drop_caches");
	free(buf);
	close(fd);
}

/*
 * The counters of drops that did not happen (uncached_vmstat.c): their
 * growth across a DSYNC call that returned with pages cached says why.
 */
static const char *const missed_drops[] = {
	"uncached_drop_busy", "uncached_drop_dirty", "uncached_drop_refused",
};

/*
 * One RWF_UNCACHED|RWF_DSYNC write of @len bytes at @off; *@left counts the
 * calls that return with pages of their range still cached, the first
 * of which is described. False if the write failed or was short.
 */
static bool dsync_write_once(int fd, char *buf, size_t len, uint64_t off,
			     unsigned int *left)
{
	long long before[ARRAY_SIZE(missed_drops)];
	struct cachestat cs;
	unsigned int i;
	ssize_t ret;

	for (i = 0; i < ARRAY_SIZE(missed_drops); i++)
		before[i] = vmstat_counter(missed_drops[i]);
	ret = rw_once(fd, true, buf, len, off, RWF_UNCACHED | RWF_DSYNC, 75);
	cs = file_cachestat(fd, off, len);
	if (ret != (ssize_t)len) {
		tap_diag("DSYNC write of %zu at %llu returned %zd (%s)", len,
			 (unsigned long long)off, ret,
			 ret < 0 ? strerror(errno) : "short");
		return false;
	}
	if (cs.nr_cache && !(*left)++) {
		tap_diag("DSYNC write of %zu at %llu: the first that returned with pages cached",
			 len, (unsigned long long)off);
		diag_cachestat("  its range right after", cs);
		diag_cached_pages(fd, off, len);
		for (i = 0; i < ARRAY_SIZE(missed_drops); i++)
			tap_diag("  %s grew by %lld", missed_drops[i],
				 vmstat_counter(missed_drops[i]) - before[i]);
	}
	return true;
}

/*
 * DSYNC: durable and dropped when the call returns; no waiting. Each
 * overwrite's writeback also queues its folios for the deferred drop,
 * which runs on another CPU while the call drops them itself: rounds of
 * overwrites catch a call that skips a folio the deferred drop is still
 * busy with (and returns before it is gone).
 */
static void dsync_write(const char *path)
{
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	unsigned int left = 0, calls = 0, round;
	char *buf = xmalloc(LEN);
	bool ok = true;
	uint64_t off;
	ssize_t ret;

	ret = rw_once(fd, true, buf, LEN, 0, RWF_UNCACHED | RWF_DSYNC, 74);
	tap_result(ret == (ssize_t)LEN,
		   "DSYNC write of 1 MiB to a new file returns %zd", ret);
	expect_cached(fd, 0, LEN, 0, "DSYNC write, right after the call");
	for (round = 0; ok && round < DSYNC_ROUNDS; round++)
		for (off = 0; ok && off < LEN; off += BS, calls++)
			ok = dsync_write_once(fd, buf, BS, off, &left);
	tap_result(ok, "DSYNC overwrites of 64 KiB: all %u returned", calls);
	tap_result(!left,
		   "DSYNC overwrites of 64 KiB: none returned with pages of its range cached (%u of %u did)",
		   left, calls);
	expect_settled(fd, 0, LEN, 0, "DSYNC overwrites, settled");
	drop_caches();
	tap_result(read_range_flags(fd, 0, LEN, BS, 0, 75),
		   "DSYNC writes: data right after drop_caches");
	free(buf);
	close(fd);
}

static void o_direct(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	void *buf;

	if (fd < 0 || posix_memalign(&buf, 4096, LEN))
		tap_bail("O_DIRECT open or buffer: %s", strerror(errno));
	tap_result(rw_once(fd, true, buf, LEN, 0, RWF_UNCACHED, 76) == (ssize_t)LEN,
		   "O_DIRECT: uncached aligned write works");
	tap_result(rw_once(fd, false, buf, LEN, 0, RWF_UNCACHED, 76) == (ssize_t)LEN &&
		   check_pattern(buf, LEN, 0, 76) < 0,
		   "O_DIRECT: uncached aligned read works, data right");
	diag_cachestat("O_DIRECT", file_cachestat(fd, 0, LEN));
	free(buf);
	close(fd);
}

/* Flags and files the call must refuse. */
static void refused(const char *path)
{
	int unknown = 1, fd, pfd[2], sfd[2];
	char name[64];

	while (unknown & RWF_SUPPORTED)
		unknown <<= 1;
	fd = make_cold_file(path, 4096, 77);
	snprintf(name, sizeof(name), "RWF_UNCACHED|%#x (not in RWF_SUPPORTED)",
		 unknown);
	expect_rw(fd, false, 0, RWF_UNCACHED | unknown, EOPNOTSUPP, name);
	expect_rw(fd, true, 0, RWF_UNCACHED | unknown, EOPNOTSUPP, name);
	close(fd);

	fd = xopen("/tmp/uncached-flags", O_RDWR | O_CREAT | O_TRUNC);
	unlink("/tmp/uncached-flags");
	write_pattern(fd, 4096, 0, 77);
	expect_rw(fd, false, 0, RWF_UNCACHED, EOPNOTSUPP, "on tmpfs");
	expect_rw(fd, true, 0, RWF_UNCACHED, EOPNOTSUPP, "on tmpfs");
	close(fd);

	fd = xopen("/proc/self/status", O_RDONLY);
	expect_rw(fd, false, 0, RWF_UNCACHED, EOPNOTSUPP, "of /proc/self/status");
	close(fd);

	/* data waiting in both, so that an accepted call would not block */
	if (pipe(pfd) || socketpair(AF_UNIX, SOCK_STREAM, 0, sfd) ||
	    write(pfd[1], "x", 1) != 1 || write(sfd[1], "x", 1) != 1)
		tap_bail("pipe or socketpair: %s", strerror(errno));
	expect_rw(pfd[0], false, -1, RWF_UNCACHED, EOPNOTSUPP, "on a pipe");
	expect_rw(pfd[1], true, -1, RWF_UNCACHED, EOPNOTSUPP, "on a pipe");
	expect_rw(sfd[0], false, -1, RWF_UNCACHED, EOPNOTSUPP, "on a socket");
	expect_rw(sfd[0], true, -1, RWF_UNCACHED, EOPNOTSUPP, "on a socket");
	close(pfd[0]);
	close(pfd[1]);
	close(sfd[0]);
	close(sfd[1]);

	fd = xopen(path, O_WRONLY);
	expect_rw(fd, false, 0, RWF_UNCACHED, EBADF, "on a write-only fd");
	close(fd);
	fd = xopen(path, O_RDONLY);
	expect_rw(fd, true, 0, RWF_UNCACHED, EBADF, "on a read-only fd");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *path;

	test_init(argc, argv);
	path = test_path("uncached-flags");
	tap_plan(25);
	nowait_read(path, true);
	nowait_read(path, false);
	nowait_write(path);
	dsync_write(path);
	o_direct(path);
	refused(path);
	unlink(path);
	return tap_finish();
}
