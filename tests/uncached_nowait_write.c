// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED|RWF_NOWAIT writes never block in writeback submission. The
 * device under the mount point gets its smallest queue/nr_requests and is
 * kept busy by O_DIRECT writers pinned to every CPU (every hardware queue
 * full) while 200 sequential uncached NOWAIT writes of 64 KiB go through
 * pwritev2() and 200 through io_uring. Each must succeed or fail with
 * EAGAIN (EOPNOTSUPP where a plain RWF_NOWAIT write says the filesystem
 * takes no buffered NOWAIT write: ext4 on 6.12) and none may take seconds,
 * as a write starting writeback itself would, waiting for a tag. Then the
 * file holds what the writes wrote and none of it stays cached.
 */
#include "uncached_io.h"

#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/sysmacros.h>

#define BS		(64 << 10)
#define NR_WRITES	200
#define NR_BLOCKS	(1 + 2 * NR_WRITES)	/* block 0: the probes */
#define LEN		((uint64_t)NR_BLOCKS * BS)
#define SAT_LEN		(64ULL << 20)
#define SAT_MAX		(1 << 20)
#define WRITERS_PER_CPU	8
#define MAX_WRITERS	32
#define BOUND_NS	2000000000LL	/* "did not block for seconds" */
#define SEED		91

static char path[4096], sat_path[4096], sys_dev[64], queue_path[128];
static char old_nr[32];	/* nr_requests to restore, "" when nothing to */
static int sat_fd, nwriters, ncpus, inflight_max, stop_writers;
static unsigned long long sat_writes, sat_errors;
static pthread_t writers[MAX_WRITERS];
static void *sat_buf;
static struct io_uring ring;
static ssize_t written[NR_BLOCKS];
static bool refused[NR_BLOCKS];	/* the NOWAIT write returned EAGAIN */

static bool read_sysfs(const char *p, char *buf, size_t len)
{
	int fd = open(p, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return n > 0;
}

static bool write_sysfs(const char *p, const char *val)
{
	int fd = open(p, O_WRONLY);
	bool ok = fd >= 0 && write(fd, val, strlen(val)) == (ssize_t)strlen(val);

	close(fd);
	return ok;
}

/* sys_dev = /sys/dev/block/MAJ:MIN of the device under test_dir. */
static bool find_device(void)
{
	char src[256], mnt[256];
	struct stat st, bst;
	dev_t dev;
	FILE *f;

	if (stat(test_dir, &st))
		tap_bail("stat %s: %s", test_dir, strerror(errno));
	dev = st.st_dev;
	f = major(dev) ? NULL : fopen("/proc/mounts", "r");
	if (f) {	/* btrfs: an anonymous st_dev; the last mount there */
		while (fscanf(f, "%255s %255s %*[^\n]", src, mnt) == 2)
			if (!strcmp(mnt, test_dir) && !stat(src, &bst) &&
			    S_ISBLK(bst.st_mode))
				dev = bst.st_rdev;
		fclose(f);
	}
	if (!major(dev))
		return false;
	snprintf(sys_dev, sizeof(sys_dev), "/sys/dev/block/%u:%u",
		 major(dev), minor(dev));
	snprintf(queue_path, sizeof(queue_path), "%s/queue/nr_requests", sys_dev);
	if (access(queue_path, F_OK))	/* a partition: the disk's queue */
		snprintf(queue_path, sizeof(queue_path),
			 "%s/../queue/nr_requests", sys_dev);
	return true;
}

/* The smallest nr_requests the queue takes (4, 8, 16...), or 0. */
static int lower_nr_requests(void)
{
	char val[32];
	int nr;

	if (!find_device() || !read_sysfs(queue_path, old_nr, sizeof(old_nr))) {
		tap_diag("no block device queue found under %s", test_dir);
		return 0;
	}
	for (nr = 4; nr <= 4096; nr *= 2) {
		snprintf(val, sizeof(val), "%d", nr);
		if (write_sysfs(queue_path, val) &&
		    read_sysfs(queue_path, val, sizeof(val))) {
			tap_diag("%s: queue/nr_requests %s -> %s", sys_dev,
				 old_nr, val);
			return atoi(val);
		}
	}
	tap_diag("%s: no nr_requests value accepted (was %s)", queue_path, old_nr);
	old_nr[0] = 0;
	return 0;
}

static void *writer(void *arg)
{
	/* each its own 2 MiB: no waiting for another's range (btrfs) */
	uint64_t rng = (uintptr_t)arg + 1, nblk = SAT_LEN / MAX_WRITERS / BS;
	uint64_t base = (uintptr_t)arg * nblk * BS;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((uintptr_t)arg % ncpus, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	while (!__atomic_load_n(&stop_writers, __ATOMIC_RELAXED)) {
		uint64_t n = 1 + rand64(&rng) % (SAT_MAX / BS);
		uint64_t off = rand64(&rng) % (nblk - n + 1) * BS;

		if (pwrite(sat_fd, sat_buf, n * BS, base + off) != (ssize_t)(n * BS)) {
			__atomic_fetch_add(&sat_errors, 1, __ATOMIC_RELAXED);
			break;
		}
		__atomic_fetch_add(&sat_writes, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void start_saturation(void)
{
	int i, n, flags;

	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	n = ncpus * WRITERS_PER_CPU < MAX_WRITERS ? ncpus * WRITERS_PER_CPU :
						    MAX_WRITERS;
	sat_fd = open(sat_path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	/* btrfs (6.12) turns O_DIRECT writes of checksummed files buffered */
	if (sat_fd >= 0 && !ioctl(sat_fd, FS_IOC_GETFLAGS, &flags)) {
		flags |= FS_NOCOW_FL;
		ioctl(sat_fd, FS_IOC_SETFLAGS, &flags);
	}
	if (sat_fd < 0 || posix_memalign(&sat_buf, 4096, SAT_MAX))
		tap_bail("O_DIRECT file %s: %s", sat_path, strerror(errno));
	fill_pattern(sat_buf, SAT_MAX, 0, 1);
	/* written once, so that the writers only overwrite */
	for (i = 0; i < (int)(SAT_LEN / SAT_MAX); i++)
		if (pwrite(sat_fd, sat_buf, SAT_MAX, (off_t)i * SAT_MAX) != SAT_MAX)
			tap_bail("O_DIRECT write of %s: %s", sat_path, strerror(errno));
	for (nwriters = 0; nwriters < n; nwriters++)
		if (pthread_create(&writers[nwriters], NULL, writer,
				   (void *)(uintptr_t)nwriters))
			tap_bail("pthread_create failed");
	/* let the queue fill: a few completions, for at most 5 s */
	for (i = 0; i < 500 && __atomic_load_n(&sat_writes, __ATOMIC_RELAXED) <
	     (unsigned long long)n; i++)
		usleep(10000);
}

static void stop_saturation(void)
{
	__atomic_store_n(&stop_writers, 1, __ATOMIC_RELAXED);
	while (nwriters > 0)
		pthread_join(writers[--nwriters], NULL);
	if (old_nr[0] && !write_sysfs(queue_path, old_nr))
		tap_diag("cannot restore %s to %s", queue_path, old_nr);
	old_nr[0] = 0;
}

/* Also run by exit() (tap_bail): no thread, file or queue setting left. */
static void cleanup(void)
{
	stop_saturation();
	unlink(sat_path);
	unlink(path);
}

static void sample_inflight(void)
{
	char p[96], buf[64];
	int r, w;

	snprintf(p, sizeof(p), "%s/inflight", sys_dev);
	if (sys_dev[0] && read_sysfs(p, buf, sizeof(buf)) &&
	    sscanf(buf, "%d %d", &r, &w) == 2 && w > inflight_max)
		inflight_max = w;
}

/* One RWF_UNCACHED|RWF_NOWAIT write of 64 KiB at block @blk: bytes or -errno. */
static ssize_t nowait_write(int fd, bool uring, char *buf, int blk)
{
	struct iovec iov = { .iov_base = buf, .iov_len = BS };
	off_t off = (off_t)blk * BS;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	ssize_t ret;

	if (!uring) {
		ret = pwritev2(fd, &iov, 1, off, RWF_UNCACHED | RWF_NOWAIT);
		return ret < 0 ? -errno : ret;
	}
	sqe = io_uring_get_sqe(&ring);
	if (!sqe)
		tap_bail("no free SQE");
	if (blk & 1)
		io_uring_prep_write(sqe, fd, buf, BS, off);
	else
		io_uring_prep_writev(sqe, fd, &iov, 1, off);
	sqe->rw_flags = RWF_UNCACHED | RWF_NOWAIT;
	ret = io_uring_submit_and_wait(&ring, 1);
	if (ret < 0 || io_uring_peek_cqe(&ring, &cqe))
		tap_bail("io_uring_submit_and_wait: %zd, no CQE", ret);
	ret = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	return ret;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* NR_WRITES timed uncached NOWAIT writes from block @first on: two cases. */
static void run_writes(int fd, bool uring, bool nowait_ok, int first)
{
	const char *name = uring ? "io_uring WRITEV/WRITE" : "pwritev2";
	int done = 0, full = 0, eagain = 0, eop = 0, other = 0, i;
	long long ns[NR_WRITES];
	struct timespec t0, t1;
	char buf[BS];
	ssize_t ret;

	for (i = 0; i < NR_WRITES; i++) {
		int blk = first + i;

		sample_inflight();
		fill_pattern(buf, BS, (uint64_t)blk * BS, SEED);
		/* stale timestamps would make a NOWAIT write EAGAIN */
		if (futimens(fd, NULL))
			tap_bail("futimens: %s", strerror(errno));
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ret = nowait_write(fd, uring, buf, blk);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns[i] = (t1.tv_sec - t0.tv_sec) * 1000000000LL +
			t1.tv_nsec - t0.tv_nsec;
		if (ret > 0 && ret <= BS) {
			written[blk] = ret;
			done++;
			full += ret == BS;
		} else if (ret == -EAGAIN) {
			refused[blk] = true;
			eagain++;
		} else if (ret == -EOPNOTSUPP && !nowait_ok) {
			eop++;
		} else if (other++ < 5) {
			tap_diag("%s at block %d: %zd (%s)", name, blk, ret,
				 ret < 0 ? strerror(-ret) : "bad length");
		}
	}
	qsort(ns, NR_WRITES, sizeof(ns[0]), cmp_ll);
	tap_diag("%s: %d written (%d short), %d EAGAIN, %d EOPNOTSUPP, %d other; latency median %.3f ms, max %.3f ms",
		 name, done, done - full, eagain, eop, other,
		 ns[NR_WRITES / 2] / 1e6, ns[NR_WRITES - 1] / 1e6);
	tap_result(!other && (nowait_ok ? done > 0 : !done),
		   "%s: RWF_UNCACHED|RWF_NOWAIT writes of 64 KiB %s (%d written, %d EAGAIN, %d EOPNOTSUPP)",
		   name, nowait_ok ? "succeed or fail with EAGAIN, some succeed" :
		   "fail with EOPNOTSUPP or EAGAIN (no buffered NOWAIT writes here)",
		   done, eagain, eop);
	tap_result(ns[NR_WRITES - 1] < BOUND_NS,
		   "%s: no call blocked for seconds (max %.3f ms, bound 2 s)",
		   name, ns[NR_WRITES - 1] / 1e6);
}

/* Pages cached in the blocks written (@want_refused: in those refused). */
static uint64_t cached_in_blocks(int fd, bool want_refused)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < NR_BLOCKS; i++)
		if (want_refused ? refused[i] && !written[i] : written[i] > 0)
			sum += nr_cached(fd, (uint64_t)i * BS, BS);
	return sum;
}

/*
 * Once writeback settled, no page of a block a NOWAIT write wrote is
 * cached, whether the write wrote all of it or returned short: iomap drops
 * the folio a write created and gave up on (on XFS with order-0 folios, a
 * stale mapping the NOWAIT write cannot map again ends it short). For the
 * same reason no page of a block whose write returned EAGAIN stays cached
 * (ext4 refuses buffered NOWAIT writes before creating any). btrfs may
 * leave those (clean, flagged, for reclaim: see README, "Known gaps"), so
 * there they are only reported.
 */
static void check_written_dropped(int fd)
{
	uint64_t left, left_refused;
	struct statfs sfs;
	bool btrfs;
	int waited;

	if (fsync(fd))
		tap_diag("fsync: %s", strerror(errno));
	diag_cachestat("after the NOWAIT writes",
		       wait_range_settled(fd, 0, LEN, -1, UNCACHED_SETTLE_MS));
	/* the drop after writeback is deferred to a work item */
	for (waited = 0; (left = cached_in_blocks(fd, false)) &&
	     waited < UNCACHED_SETTLE_MS; waited += 10)
		usleep(10000);
	left_refused = cached_in_blocks(fd, true);
	if (left || left_refused)
		diag_cached_pages(fd, 0, LEN);
	tap_result(!left,
		   "after the NOWAIT writes: %llu pages of the blocks written cached after writeback (want 0)",
		   (unsigned long long)left);
	if (fstatfs(fd, &sfs))
		tap_bail("fstatfs: %s", strerror(errno));
	btrfs = sfs.f_type == BTRFS_SUPER_MAGIC;
	if (!btrfs)
		tap_result(!left_refused,
			   "after the NOWAIT writes: %llu pages cached in blocks of writes that returned EAGAIN (want 0)",
			   (unsigned long long)left_refused);
	else
		tap_skip("btrfs may keep the folios of a write that returned EAGAIN (%llu pages cached in such blocks)",
			 (unsigned long long)left_refused);
}

int main(int argc, char **argv)
{
	static struct file_extent ext[2 * NR_BLOCKS];
	unsigned long long w0, w1;
	int fd, nr, err, i, n = 0;
	bool nowait_ok;
	char buf[BS];
	ssize_t ret;

	test_init(argc, argv);
	snprintf(path, sizeof(path), "%s", test_path("uncached-nowait"));
	snprintf(sat_path, sizeof(sat_path), "%s", test_path("uncached-nowait-odirect"));
	atexit(cleanup);
	err = io_uring_queue_init(4, &ring, 0);
	if (err)
		tap_bail("io_uring_queue_init: %s", strerror(-err));
	tap_plan(9);

	/* btrfs takes NOWAIT writes only into preallocated (or NOCOW) files */
	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	if (fallocate(fd, 0, 0, LEN))
		tap_bail("fallocate: %s", strerror(errno));
	futimens(fd, NULL);
	ret = rw_once(fd, true, buf, BS, 0, RWF_NOWAIT, SEED);
	err = ret < 0 ? errno : 0;
	nowait_ok = err != EOPNOTSUPP;
	tap_diag("plain (cached) RWF_NOWAIT write: %zd (%s): buffered NOWAIT writes %s on %s",
		 ret, err ? strerror(err) : "no error", nowait_ok ? "supported" :
		 "unsupported, uncached ones must fail fast", test_fs);
	written[0] = ret > 0 ? ret : 0;
	ret = rw_once(fd, true, buf, BS, 0, RWF_UNCACHED, SEED);
	err = ret < 0 ? errno : 0;
	written[0] = ret > written[0] ? ret : written[0];
	tap_result(ret == BS, "RWF_UNCACHED write of 64 KiB returns %zd (%s)",
		   ret, err ? strerror(err) : "no error");
	evict_file(fd, LEN);

	nr = lower_nr_requests();
	start_saturation();
	w0 = __atomic_load_n(&sat_writes, __ATOMIC_RELAXED);
	run_writes(fd, false, nowait_ok, 1);
	run_writes(fd, true, nowait_ok, 1 + NR_WRITES);
	w1 = __atomic_load_n(&sat_writes, __ATOMIC_RELAXED);
	i = nwriters;
	stop_saturation();
	tap_result(nr && w1 > w0 && !sat_errors,
		   "saturation: nr_requests %d, %d O_DIRECT writers completed %llu writes during the NOWAIT writes (%llu failed; device writes in flight: up to %d)",
		   nr, i, w1 - w0, sat_errors, inflight_max);

	check_written_dropped(fd);
	for (i = 0; i < NR_BLOCKS; i++) {
		uint64_t off = (uint64_t)i * BS;

		if (written[i])
			ext[n++] = (struct file_extent){ off, written[i], SEED };
		if (written[i] < BS)
			ext[n++] = (struct file_extent){ off + written[i],
							 BS - written[i], 0 };
	}
	tap_result(file_matches_extents(fd, ext, n, LEN),
		   "data after drop_caches: what the successful writes wrote, zeroes elsewhere");
	close(fd);
	io_uring_queue_exit(&ring);
	cleanup();
	return tap_finish();
}
