// SPDX-License-Identifier: GPL-2.0
/*
 * The drop after writeback is refused for a folio dirtied, without its
 * lock, while the filesystem was asked to release it (mark_buffer_dirty(),
 * as jbd2 and block device metadata writers dirty buffers).  The test module
 * uncached_redirty (tests/kmod/) does that dirtying from ext4's
 * ext4_release_folio tracepoint, at the one moment user space cannot hit.
 *
 * The folio must come out of it either flagged uncached and counted in the
 * write-behind count (WB_UNCACHED_DIRTY, "BdiUncachedDirty" in the bdi's
 * debugfs stats), or neither.  A drop that clears the flag first and sets
 * it again on the refusal leaves it flagged but not counted: cleaning it
 * then lowers the count below what was raised, for good.  So:
 *
 * 1. the module fired, and the drop was refused (uncached_drop_refused);
 * 2. the folio, written back by fsync(), is dropped then, and the data on
 *    disk is right;
 * 3. the write-behind count is back where it was before the write.
 *
 * ext4 only (tests/left-out.list): the tracepoint is ext4's, and XFS and
 * btrfs data folios have no buffer heads that anyone dirties without the
 * folio lock. Skipped on PREEMPT_RT kernels (FLAVOR=rt), where the module
 * cannot dirty a folio from a tracepoint probe.
 */
#include "uncached_io.h"

#define REDIRTY_CTL	"/sys/kernel/debug/uncached_redirty/ctl"
#define FILE_LEN	(2 * PAGE_SZ)
#define SEED		5

static int ctl_fd;
static char bdi[32];	/* the test filesystem's bdi: MAJ:MIN */

/* The number of times the module fired so far. */
static long module_fired(void)
{
	char buf[32];
	ssize_t n = pread(ctl_fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		tap_bail("read %s: %s", REDIRTY_CTL,
			 n < 0 ? strerror(errno) : "empty");
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/*
 * Write @cmd to the module's ctl; false if the module answers EOPNOTSUPP
 * (it cannot arm on PREEMPT_RT), any other error bails out.
 */
static bool ctl_supported(const char *cmd)
{
	if (write(ctl_fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd))
		return true;
	if (errno != EOPNOTSUPP)
		tap_bail("%s '%s': %s", REDIRTY_CTL, cmd, strerror(errno));
	return false;
}

static void ctl(const char *cmd)
{
	if (!ctl_supported(cmd))
		tap_bail("%s '%s': %s", REDIRTY_CTL, cmd, strerror(errno));
}

/* The write-behind count of the test filesystem's bdi (all its wbs), kB. */
static long long uncached_dirty_kb(void)
{
	long long kb = 0;

	if (!bdi_file_sum(bdi, "stats", "BdiUncachedDirty:", &kb))
		tap_bail("%s/%s/stats has no BdiUncachedDirty: the kernel does not expose the write-behind count",
			 BDI_DIR, bdi);
	return kb;
}

/*
 * Wait until the module fired more than @fired times and the drop counted
 * more than @refused refusals (it counts after the probe returns).
 */
static bool wait_refused(long fired, long long refused)
{
	long long start = now_ms();

	while (module_fired() <= fired ||
	       vmstat_counter("uncached_drop_refused") <= refused) {
		if (now_ms() - start > UNCACHED_SETTLE_MS)
			return false;
		usleep(10000);
	}
	return true;
}

int main(int argc, char **argv)
{
	long long refused, base_kb, end_kb;
	bool was_refused;
	char cmd[64];
	long fired;
	int fd, err, i;

	test_init(argc, argv);
	tap_plan(3);
	fd = xopen(test_path("redirty"), O_RDWR | O_CREAT | O_TRUNC);
	err = uncached_probe(fd);
	if (err)
		tap_bail("RWF_UNCACHED refused: %s", strerror(err));
	fd_bdi_name(fd, bdi, sizeof(bdi));
	ctl_fd = open(REDIRTY_CTL, O_RDWR);
	if (ctl_fd < 0)
		tap_bail("%s: %s (the test module uncached_redirty is not loaded)",
			 REDIRTY_CTL, strerror(errno));

	if (syncfs(fd))
		tap_bail("syncfs: %s", strerror(errno));
	base_kb = uncached_dirty_kb();
	refused = vmstat_counter("uncached_drop_refused");
	fired = module_fired();
	snprintf(cmd, sizeof(cmd), "arm %d 0", fd);
	if (!ctl_supported(cmd)) {
		for (i = 0; i < 3; i++)
			tap_skip("the module cannot dirty a folio from ext4's release tracepoint on PREEMPT_RT (its probes run with preemption off, and the i_pages lock sleeps there)");
		close(ctl_fd);
		close(fd);
		unlink(test_path("redirty"));
		return tap_finish();
	}
	if (!write_range_flags(fd, 0, FILE_LEN, FILE_LEN, RWF_UNCACHED, SEED))
		tap_bail("uncached write failed");
	if (fsync(fd))
		tap_bail("fsync: %s", strerror(errno));

	was_refused = wait_refused(fired, refused);
	tap_result(was_refused,
		   "the drop of folio 0 was refused: dirtied while released (module fired %ld time(s), uncached_drop_refused +%lld)",
		   module_fired() - fired,
		   vmstat_counter("uncached_drop_refused") - refused);
	tap_diag("after the refusal: BdiUncachedDirty %+lld kB, %llu page(s) cached",
		 uncached_dirty_kb() - base_kb,
		 (unsigned long long)nr_cached(fd, 0, FILE_LEN));
	expect_settled(fd, 0, FILE_LEN, 0, "the refused folio, written back again");
	end_kb = uncached_dirty_kb();
	tap_result(was_refused && end_kb == base_kb &&
		   verify_pattern(fd, FILE_LEN, 0, SEED),
		   "write-behind count of bdi %s back to its start once all is written: %+lld kB (want +0), data right",
		   bdi, end_kb - base_kb);
	ctl("disarm");
	close(ctl_fd);
	close(fd);
	unlink(test_path("redirty"));
	return tap_finish();
}
