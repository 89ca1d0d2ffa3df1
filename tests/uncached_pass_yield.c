// SPDX-License-Identifier: GPL-2.0
/*
 * The flusher's write-behind pass of uncached writes yields to other
 * writeback work (sync(2), syncfs(2), a flush for ENOSPC), as background
 * writeback does: work queued while the pass writes one inode runs before
 * the pass goes on to the next inode.
 *
 * The test module uncached_hold (tests/kmod/) makes the flusher of this
 * cgroup's bdi_writeback run the pass at a moment the test knows:
 *  0. a syncfs() of a written file "stall" names that wb in the trace (the
 *     bdi and cgroup_ino of its events; only its events count) and leaves
 *     the filesystem clean;
 *  1. a buffered write dirties "stall" again, and the module locks its
 *     folio; a child calls syncfs(), whose first writeback work
 *     (writeback_inodes_sb()) then waits for that folio (its
 *     writeback_single_inode_start is in the trace);
 *  2. meanwhile files f0..fN are created and dirtied by uncached writes
 *     (after that work started, so it leaves them; the pass is asked for
 *     but cannot start), and the module locks f0's first folio;
 *  3. "stall" is released: the flusher finishes that work, then runs the
 *     pass (writeback works first, then the pass, then the rest), which
 *     starts on f0, the oldest, and waits for its folio (an
 *     writeback_single_inode_start of f0 outside any writeback work);
 *  4. syncfs() goes on and queues its second work (sync_inodes_sb():
 *     writeback_queue reason=sync), and f0 is released.
 * Then f1..fN must be written by that work (between its writeback_start
 * and writeback_written), none by the pass.  Should a writeback work reach
 * f0 before the pass does (syncfs() queueing its second work before the
 * flusher got to the pass), the set-up failed and the case is skipped.
 *
 * ext4 with data=journal is left out (tests/left-out.list): its writepages
 * starts a journal handle before it waits for the folio lock, so a journal
 * commit in that window could make the test's own writes wait for the
 * folio the module holds.  Without data=journal, ext4's first scan of the
 * folios (mpage_prepare_extent_to_map() with do_map 0) holds no handle.
 */
#include "uncached_io.h"

#include <sys/wait.h>

#define HOLD_CTL	"/sys/kernel/debug/uncached_hold/ctl"
#define NR_FILES	4
#define FILE_LEN	(64 << 10)
#define WAIT_MS		20000

static const char *const events[] = {
	"writeback_single_inode_start", "writeback_queue",
	"writeback_start", "writeback_written",
};

static int ctl_fd = -1;

/* write_text() that does not bail: for the clean-up at exit */
static bool write_quiet(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	bool ok = fd >= 0 && write(fd, s, strlen(s)) == (ssize_t)strlen(s);

	if (fd >= 0)
		close(fd);
	return ok;
}

static bool enable_events(const char *on)
{
	char path[256];
	bool ok = true;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(events); i++) {
		snprintf(path, sizeof(path), TRACING "/events/writeback/%s/enable",
			 events[i]);
		ok &= write_quiet(path, on);
	}
	return ok;
}

/*
 * At exit, a bail-out included: the module's folios released (the release
 * of an uncached file at exit would wait for them), the events off.
 */
static void restore_settings(void)
{
	if (ctl_fd >= 0 && write(ctl_fd, "release", 7) != 7)
		perror("release the held folios");
	enable_events("0");
}

static void ctl(const char *cmd, int fd)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%s %d 0", cmd, fd);

	if (write(ctl_fd, buf, n) != n)
		tap_bail("%s '%s': %s", HOLD_CTL, buf, strerror(errno));
}

static unsigned long ino_of(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		tap_bail("fstat: %s", strerror(errno));
	return st.st_ino;
}

static unsigned long ino[NR_FILES], stall_ino;
static char our_wb[128];	/* "BDI cgroup_ino=N" of this cgroup's wb */

/* What the trace says so far about our_wb. */
struct trace_scan {
	bool stall_started;	/* writeback_single_inode_start of "stall" */
	bool f0_by_work;	/* of f0 inside a writeback work: set-up failed */
	bool f0_by_pass;	/* of f0 outside any writeback work */
	bool queued;		/* then writeback_queue reason=sync */
	bool work_started;	/* then writeback_start reason=sync */
	int late_by_pass;	/* f1..fN outside work, queued, work not started */
	int late_by_work;	/* f1..fN inside a work, once queued */
};

/* The wb of a writeback event: "NAME cgroup_ino=N", or "". */
static void wb_of(const char *line, char *wb, size_t size)
{
	const char *bdi = strstr(line, ": bdi "), *cg = strstr(line, "cgroup_ino=");
	int len;

	wb[0] = '\0';
	if (!bdi || !cg)
		return;
	bdi += strlen(": bdi ");
	len = strstr(bdi, ": ") ? strstr(bdi, ": ") - bdi : 0;
	snprintf(wb, size, "%.*s %.*s", len, bdi, (int)strcspn(cg, "\n "), cg);
}

static bool names_ino(const char *line, unsigned long want)
{
	char key[32];

	snprintf(key, sizeof(key), " ino=%lu ", want);
	return strstr(line, key);
}

static void scan_inode_start(const char *line, bool in_work,
			     struct trace_scan *s)
{
	int i;

	if (names_ino(line, stall_ino))
		s->stall_started = true;
	if (!s->f0_by_pass && names_ino(line, ino[0])) {
		s->f0_by_work |= in_work;
		s->f0_by_pass = !in_work;
	}
	if (!s->queued)
		return;
	for (i = 1; i < NR_FILES; i++) {
		if (!names_ino(line, ino[i]))
			continue;
		if (in_work)
			s->late_by_work++;
		else if (!s->work_started)
			s->late_by_pass++;
	}
}

static struct trace_scan scan_trace(void)
{
	FILE *f = fopen(TRACING "/trace", "r");
	struct trace_tasks tasks = { .n = 0 };
	struct trace_scan s = { 0 };
	char line[512], wb[128];

	if (!f)
		tap_bail("%s/trace: %s", TRACING, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		int in_work = trace_in_work(&tasks, line);
		bool sync_on_wb;

		if (in_work < 0)
			continue;
		wb_of(line, wb, sizeof(wb));
		if (strcmp(wb, our_wb))
			continue;
		sync_on_wb = s.f0_by_pass && strstr(line, "reason=sync");
		if (strstr(line, " writeback_start: "))
			s.work_started |= s.queued && sync_on_wb;
		else if (strstr(line, " writeback_queue: "))
			s.queued |= sync_on_wb;
		else if (strstr(line, " writeback_single_inode_start: "))
			scan_inode_start(line, in_work, &s);
	}
	fclose(f);
	return s;
}

/* Poll the trace until @seen says yes; false if it never did. */
static bool wait_trace(bool (*seen)(const struct trace_scan *))
{
	int waited;

	for (waited = 0; waited < WAIT_MS; waited += 10) {
		struct trace_scan s = scan_trace();

		if (seen(&s))
			return true;
		usleep(10000);
	}
	return false;
}

static bool stall_started(const struct trace_scan *s)
{
	return s->stall_started;
}

static bool f0_reached(const struct trace_scan *s)
{
	return s->f0_by_pass || s->f0_by_work;
}

static bool queued(const struct trace_scan *s)
{
	return s->queued;
}

/* The trace lines of our_wb's writeback work and of inode @want. */
static void diag_trace_of(unsigned long want)
{
	FILE *f = fopen(TRACING "/trace", "r");
	char line[512], wb[128];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		wb_of(line, wb, sizeof(wb));
		if (!strcmp(wb, our_wb) && (names_ino(line, want) ||
					    !strstr(line, " ino=")))
			tap_diag("%.*s", (int)strcspn(line, "\n"), line);
	}
	fclose(f);
}

/* Step 0: our_wb from the trace of a syncfs() of a file written here. */
static void find_our_wb(int stall_fd)
{
	FILE *f;
	char line[512];

	if (!write_range_flags(stall_fd, 0, PAGE_SZ, PAGE_SZ, 0, 1) ||
	    syncfs(stall_fd))
		tap_bail("cannot write and sync \"stall\": %s", strerror(errno));
	f = fopen(TRACING "/trace", "r");
	if (!f)
		tap_bail("%s/trace: %s", TRACING, strerror(errno));
	while (!our_wb[0] && fgets(line, sizeof(line), f))
		if (strstr(line, " writeback_single_inode_start: ") &&
		    names_ino(line, stall_ino))
			wb_of(line, our_wb, sizeof(our_wb));
	fclose(f);
	if (!our_wb[0])
		tap_bail("the trace of syncfs() does not name \"stall\"");
	tap_diag("the flusher of this test: bdi %s", our_wb);
	write_text(TRACING "/trace", "");
}

static pid_t syncfs_child(int fd)
{
	pid_t pid = fork();

	if (pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (!pid)
		_exit(syncfs(fd) ? 1 : 0);
	return pid;
}

/* Step 1: the flusher waits for the locked folio of @stall_fd. */
static pid_t stall_flusher(int stall_fd)
{
	pid_t child;

	if (!write_range_flags(stall_fd, 0, PAGE_SZ, PAGE_SZ, 0, 2))
		tap_bail("buffered write failed");
	ctl("lock", stall_fd);
	child = syncfs_child(stall_fd);
	if (!wait_trace(stall_started))
		tap_bail("the flusher did not start on the stalled file in %d ms",
			 WAIT_MS);
	/* files dirtied from now on are younger than that work's start */
	usleep(100000);
	return child;
}

static void pass_yields(void)
{
	int fds[NR_FILES], stall_fd, i, status;
	struct trace_scan s;
	char name[32];
	pid_t child;

	stall_fd = xopen(test_path("stall"), O_RDWR | O_CREAT | O_TRUNC);
	stall_ino = ino_of(stall_fd);
	write_text(TRACING "/trace", "");
	if (!enable_events("1"))
		tap_bail("cannot enable the writeback events: %s", strerror(errno));
	find_our_wb(stall_fd);
	child = stall_flusher(stall_fd);
	for (i = 0; i < NR_FILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		fds[i] = xopen(test_path(name), O_RDWR | O_CREAT | O_TRUNC);
		ino[i] = ino_of(fds[i]);
		if (!write_range_flags(fds[i], 0, FILE_LEN, FILE_LEN,
				       RWF_UNCACHED, i + 3))
			tap_bail("uncached write of f%d failed", i);
	}
	ctl("lock", fds[0]);
	ctl("unlock", stall_fd);
	if (!wait_trace(f0_reached))
		tap_bail("the write-behind pass did not start on f0 in %d ms",
			 WAIT_MS);
	if (scan_trace().f0_by_work) {
		diag_trace_of(ino[0]);
		tap_skip("set-up failed: a writeback work reached f0 before the write-behind pass");
		restore_settings();
		waitpid(child, &status, 0);
		goto out;
	}
	if (!wait_trace(queued))
		tap_bail("syncfs() queued no second writeback work in %d ms",
			 WAIT_MS);
	ctl("unlock", fds[0]);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		tap_bail("syncfs() failed");
	s = scan_trace();
	tap_diag("after syncfs() queued its second work: f1..f%d written %d time(s) by that work, %d by the pass",
		 NR_FILES - 1, s.late_by_work, s.late_by_pass);
	tap_result(!s.late_by_pass && s.late_by_work,
		   "the write-behind pass yields to queued writeback work: %d inode(s) it wrote after syncfs() queued a work (want 0)",
		   s.late_by_pass);
out:
	restore_settings();
	for (i = 0; i < NR_FILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		close(fds[i]);
		unlink(test_path(name));
	}
	close(stall_fd);
	unlink(test_path("stall"));
}

int main(int argc, char **argv)
{
	int fd;

	test_init(argc, argv);
	tap_plan(1);
	fd = xopen(test_path("probe"), O_RDWR | O_CREAT | O_TRUNC);
	if (uncached_probe(fd))
		tap_bail("RWF_UNCACHED refused: %s", strerror(uncached_probe(fd)));
	close(fd);
	unlink(test_path("probe"));
	ctl_fd = open(HOLD_CTL, O_RDWR);
	if (ctl_fd < 0)
		tap_bail("%s: %s (the test module uncached_hold is not loaded)",
			 HOLD_CTL, strerror(errno));
	if (access(TRACING "/events/writeback", F_OK))
		tap_bail("%s/events/writeback: %s (tracefs not mounted?)",
			 TRACING, strerror(errno));
	atexit(restore_settings);
	pass_yields();
	close(ctl_fd);
	ctl_fd = -1;
	return tap_finish();
}
