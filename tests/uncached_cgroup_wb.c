// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED writes under cgroup writeback (CONFIG_CGROUP_WRITEBACK, as
 * Debian ships it), on the filesystem mounted at argv[1]. Uncached writes
 * count their dirty pages per bdi_writeback (the write-behind counter,
 * "UncachedDirty" in /sys/kernel/debug/bdi/BDI/stats and wb_stats); the
 * flusher writes back that many pages after an uncached write.
 *
 * - adoption: a buffered read that adopts the dirty folios of uncached
 *   writes before the flusher wrote them takes them off the counter: once
 *   all is written back the counter of every wb is back to 0, and a later
 *   uncached write does not make the flusher write back a bystander's dirty
 *   data (only the inodes uncached writes dirtied are written behind);
 * - wb switch: a file first dirtied from a memory+io cgroup is then written
 *   uncached from the root cgroup while that cgroup is removed, until the
 *   kernel switches the inode to another wb (the writeback:inode_switch_wbs
 *   tracepoint says so): no splat (the switch holds the i_pages lock
 *   across the write-behind request; lockdep reported an inconsistent
 *   lock state when that request re-enabled interrupts), the data is
 *   right, and once all is written back every wb's counter is 0 again.
 *   That last check guards the move of the count on a switch: with the
 *   move taken out of inode_do_switch_wbs() it failed on all five
 *   targets (the counters summed to -112 to -852 kB: the new wb was
 *   decremented for pages the old one had counted).
 *
 * The cgroup v2 hierarchy (/sys/fs/cgroup), debugfs and tracefs are mounted
 * by the guest's /init.
 */
#include "uncached_io.h"

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#define CGROOT		"/sys/fs/cgroup"
#define SWITCH_EVENT	TRACING "/events/writeback/inode_switch_wbs/enable"
#define INODE_WB_EVENT	TRACING "/events/writeback/writeback_single_inode_start/enable"
#define KIB		1024ULL
#define MIB		(1024 * KIB)
#define BS		(64 * KIB)
#define ADOPT_LEN	(4 * MIB)
#define BYSTANDER_LEN	(8 * MIB)
#define CHILD_LEN	MIB
#define SWITCH_LEN	(4 * MIB)	/* the root writer's range, after CHILD_LEN */
#define SWITCH_BS	(16 * KIB)
#define MAX_ROUNDS	6
#define NR_CASES	7

/* Does the file @path hold the word @word? */
static bool file_has_word(const char *path, const char *word)
{
	FILE *f = fopen(path, "r");
	char w[64];
	bool found = false;

	if (!f)
		return false;
	while (!found && fscanf(f, "%63s", w) == 1)
		found = !strcmp(w, word);
	fclose(f);
	return found;
}

/* Is a wb of the cgroup with inode number @cgino still in some wb_stats? */
static bool wb_of_cgroup_listed(unsigned long cgino)
{
	DIR *dir = opendir(BDI_DIR);
	struct dirent *de;
	bool found = false;

	if (!dir)
		tap_bail("%s: %s", BDI_DIR, strerror(errno));
	while (!found && (de = readdir(dir))) {
		char path[512], line[256];
		unsigned long ino;
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s/wb_stats", BDI_DIR, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (!found && fgets(line, sizeof(line), f))
			found = sscanf(line, "WbCgIno: %lu", &ino) == 1 &&
				ino == cgino;
		fclose(f);
	}
	closedir(dir);
	return found;
}

/* Every wb's write-behind counter, after all is written back: 0 kB. */
static void expect_counter_zero(const char *what)
{
	long long kb = 0;
	bool shown = true;
	int waited;

	sync();
	/* the drop after writeback is deferred; the counter is not, but wait */
	for (waited = 0; waited < 5000; waited += 50) {
		shown = bdi_sum("stats", "BdiUncachedDirty:", &kb);
		if (!shown || !kb)
			break;
		usleep(50000);
	}
	tap_result(shown && kb == 0,
		   "%s: once all is written back, the write-behind counters of all wbs sum to %lld kB (want 0)",
		   what, kb);
}

/*
 * After fsync, the folios read back buffered stay cached: all but the
 * @lost pages that were already gone right after their read.  Those the
 * drop after writeback removed while the read was taking them: the read
 * then copies a folio that is already out of the page cache, as with any
 * concurrent invalidation.  A page the read found is either adopted or read
 * in anew (not uncached): neither may go once the read returned.
 */
static void expect_adopted(int fd, uint64_t lost)
{
	struct cachestat cs = wait_range_settled(fd, 0, ADOPT_LEN, -1,
						 UNCACHED_SETTLE_MS);
	uint64_t want = pages_of(ADOPT_LEN) - lost;

	diag_cachestat("adoption: the folios read back buffered", cs);
	tap_diag("adoption: %llu page(s) were already out of the page cache right after their read (the drop raced it)",
		 (unsigned long long)lost);
	if (cs.nr_cache != want)
		diag_cached_pages(fd, 0, ADOPT_LEN);
	tap_result(!cs.nr_dirty && !cs.nr_writeback && cs.nr_cache == want,
		   "adoption: %llu of the %llu pages cached right after their buffered read stay cached after writeback",
		   (unsigned long long)cs.nr_cache, (unsigned long long)want);
}

/* Uncached writes, each followed by a buffered read that adopts its folios. */
static void adoption(void)
{
	const char *path = test_path("adopt");
	int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	char *buf = xmalloc(BS);
	uint64_t off, lost = 0;

	for (off = 0; off < ADOPT_LEN; off += BS) {
		if (!write_range_flags(fd, off, BS, BS, RWF_UNCACHED, 1))
			tap_bail("uncached write at %llu failed", (unsigned long long)off);
		if (pread(fd, buf, BS, off) != BS ||
		    check_pattern(buf, BS, off, 1) >= 0)
			tap_bail("buffered read back at %llu failed", (unsigned long long)off);
		lost += pages_of(BS) - nr_cached(fd, off, BS);
	}
	free(buf);
	if (fsync(fd))
		tap_bail("fsync: %s", strerror(errno));
	expect_adopted(fd, lost);
	expect_counter_zero("adoption");
	close(fd);
	unlink(path);
}

/* Number of @event events for inode @ino in the trace buffer. */
static int events_of(const char *event, unsigned long ino)
{
	FILE *f = fopen(TRACING "/trace", "r");
	char line[512], want[64];
	int n = 0;

	if (!f)
		tap_bail("%s/trace: %s", TRACING, strerror(errno));
	snprintf(want, sizeof(want), " ino=%lu ", ino);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, event) && strstr(line, want);
	fclose(f);
	return n;
}

#define START_EVENT	TRACING "/events/writeback/writeback_start/enable"
#define WRITTEN_EVENT	TRACING "/events/writeback/writeback_written/enable"

/*
 * Number of writeback_single_inode_start events for inode @ino that no
 * writeback work (writeback_start ... writeback_written of the same task:
 * background, periodic, sync, ...) brackets: the write-behind pass of
 * uncached writes writes inodes outside any such work.
 */
static int unbracketed_writes_of(unsigned long ino)
{
	FILE *f = fopen(TRACING "/trace", "r");
	struct trace_tasks tasks = { .n = 0 };
	char line[512], want[64];
	int n = 0;

	if (!f)
		tap_bail("%s/trace: %s", TRACING, strerror(errno));
	snprintf(want, sizeof(want), " ino=%lu ", ino);
	while (fgets(line, sizeof(line), f))
		if (!trace_in_work(&tasks, line) &&
		    strstr(line, " writeback_single_inode_start: ") &&
		    strstr(line, want))
			n++;
	fclose(f);
	return n;
}

/*
 * A bystander's dirty data (a buffered writer's, dirtied first: its inode
 * is the wb's oldest) is not written back by the write-behind of a later
 * uncached write: the pass writes the inodes uncached writes dirtied. It
 * writes an inode through __writeback_single_inode(), whose tracepoint
 * names it, outside any writeback work: no such event may name the
 * bystander's (background writeback, in a work, may). Its pages counted
 * clean again are reported too: once, on btrfs, all of them were cleaned
 * within the window with the new pass in place (cause not traced), so
 * the page count alone does not tell who wrote them.
 */
static void bystander(void)
{
	const char *bpath = test_path("bystander");
	int bfd = xopen(bpath, O_RDWR | O_CREAT | O_TRUNC), fd;
	uint64_t before, after;
	struct stat st;
	int flushed;
	char path[4096];

	snprintf(path, sizeof(path), "%s", test_path("after"));
	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	write_pattern(bfd, BYSTANDER_LEN, 0, 2);
	usleep(200000);
	if (fstat(bfd, &st))
		tap_bail("fstat: %s", strerror(errno));
	before = file_cachestat(bfd, 0, BYSTANDER_LEN).nr_dirty;
	write_text(TRACING "/trace", "");
	write_text(START_EVENT, "1");
	write_text(WRITTEN_EVENT, "1");
	write_text(INODE_WB_EVENT, "1");
	if (!write_range_flags(fd, 0, BS, BS, RWF_UNCACHED, 3))
		tap_bail("uncached write failed");
	usleep(300000);
	write_text(INODE_WB_EVENT, "0");
	write_text(WRITTEN_EVENT, "0");
	write_text(START_EVENT, "0");
	after = file_cachestat(bfd, 0, BYSTANDER_LEN).nr_dirty;
	flushed = unbracketed_writes_of(st.st_ino);
	tap_diag("bystander: %llu of its %llu dirty pages were written back meanwhile, %d writeback(s) of its inode in all",
		 (unsigned long long)(before - after), (unsigned long long)before,
		 events_of("writeback_single_inode_start", st.st_ino));
	tap_result(before == pages_of(BYSTANDER_LEN) && !flushed,
		   "bystander: after an uncached write of %llu pages the write-behind wrote the bystander's inode %d time(s) (want 0)",
		   (unsigned long long)pages_of(BS), flushed);
	fsync(bfd);
	fsync(fd);
	close(bfd);
	close(fd);
	unlink(bpath);
	unlink(path);
}

/*
 * Is test_dir an ext4 with data=journal? A dirty inode's wb is switched
 * when writeback through that wb finds the inode written mostly by another
 * cgroup. With data=journal, fsync() and the journal commits make the data
 * durable without that writeback, which comes only at a checkpoint: within
 * a round it hardly ever runs.
 */
static bool data_journalled(void)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char line[1024], mnt[512], opts[512];
	bool found = false;

	if (!f)
		tap_bail("/proc/self/mounts: %s", strerror(errno));
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %511s %*s %511s", mnt, opts) == 2 &&
			!strcmp(mnt, test_dir) && strstr(opts, "data=journal");
	fclose(f);
	return found;
}

/* The child: join @cg, dirty @path first (uncached), wait to be told. */
static void child_dirty_first(const char *cg, const char *path, int go_fd)
{
	char procs[512], c;
	int fd;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	write_text(procs, "0");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !write_range_flags(fd, 0, CHILD_LEN, BS, RWF_UNCACHED, 4))
		_exit(1);
	if (write(go_fd, "x", 1) != 1 || read(go_fd, &c, 1) != 1)
		_exit(1);
	_exit(0);
}

/* Uncached writes of the root writer over its range for @ms. */
static bool write_for(int fd, int ms, uint64_t *off)
{
	long long end = now_ms() + ms;

	while (now_ms() < end) {
		if (!write_range_flags(fd, CHILD_LEN + *off, SWITCH_BS, SWITCH_BS,
				       RWF_UNCACHED, 5))
			return false;
		*off = (*off + SWITCH_BS) % SWITCH_LEN;
	}
	return true;
}

/* rmdir @cg, retrying while it is busy (its last task is leaving). */
static bool remove_cgroup(const char *cg, int fd, uint64_t *off)
{
	int i;

	for (i = 0; i < 100; i++) {
		if (!rmdir(cg))
			return true;
		if (errno != EBUSY || !write_for(fd, 20, off))
			break;
	}
	tap_diag("rmdir %s: %s", cg, strerror(errno));
	return false;
}

/*
 * One round: a new cgroup and file; the child dirties the file first, the
 * root writer writes it while the child leaves and the cgroup goes away.
 * Returns the number of wb switches of the file seen; *cgino the cgroup's.
 */
static int switch_round(int round, bool *ok, unsigned long *cgino)
{
	char cg[256], path[4096];
	int sv[2], fd, status;
	uint64_t off = 0;
	struct stat st;
	pid_t pid;
	char c;

	snprintf(cg, sizeof(cg), "%s/uncached-wb.%d.%d", CGROOT, getpid(), round);
	snprintf(path, sizeof(path), "%s", test_path("switch"));
	if (mkdir(cg, 0755) || stat(cg, &st))
		tap_bail("mkdir %s: %s", cg, strerror(errno));
	*cgino = st.st_ino;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		tap_bail("socketpair: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (!pid)
		child_dirty_first(cg, path, sv[1]);
	if (read(sv[0], &c, 1) != 1)
		tap_bail("the child could not write %s", path);
	fd = xopen(path, O_RDWR);
	*ok = write_for(fd, 1500, &off) && *ok;
	if (write(sv[0], "x", 1) != 1 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status))
		tap_bail("the child in %s failed", cg);
	*ok = remove_cgroup(cg, fd, &off) && *ok;
	*ok = write_for(fd, 1500, &off) && *ok;
	if (fstat(fd, &st))
		tap_bail("fstat: %s", strerror(errno));
	if (fsync(fd))
		tap_bail("fsync: %s", strerror(errno));
	*ok = verify_pattern(fd, CHILD_LEN, 0, 4) && *ok;
	close(fd);
	close(sv[0]);
	close(sv[1]);
	unlink(path);
	return events_of("inode_switch_wbs", st.st_ino);
}

static void wb_switch(void)
{
	unsigned long cgino[MAX_ROUNDS];
	int round, switches = 0, waited;
	bool ok = true, gone = false, journalled = data_journalled();
	int rounds = journalled ? 2 : MAX_ROUNDS;

	write_text(TRACING "/trace", "");
	write_text(SWITCH_EVENT, "1");
	for (round = 0; round < rounds && !switches; round++)
		switches += switch_round(round, &ok, &cgino[round]);
	write_text(SWITCH_EVENT, "0");
	if (journalled && !switches)
		tap_skip("wb switch: data=journal: no writeback of the inode found it foreign in %d round(s), so its wb was not switched",
			 round);
	else
		tap_result(switches > 0,
			   "wb switch: the inode written uncached switched wb %d time(s) in %d round(s)",
			   switches, round);
	tap_result(ok, "wb switch: the uncached writes and the cgroup removal worked, data right");
	/* the removed cgroups' wbs go once their inodes have moved away */
	for (waited = 0; !gone && waited < 10000; waited += 100) {
		int i;

		sync();
		gone = true;
		for (i = 0; i < round; i++)
			gone = gone && !wb_of_cgroup_listed(cgino[i]);
		if (!gone)
			usleep(100000);
	}
	tap_result(gone, "wb switch: the wbs of the removed cgroups are released");
	expect_counter_zero("wb switch");
}

int main(int argc, char **argv)
{
	test_init(argc, argv);
	tap_plan(NR_CASES);
	if (!file_has_word(CGROOT "/cgroup.controllers", "memory") ||
	    !file_has_word(CGROOT "/cgroup.controllers", "io"))
		tap_bail("%s has no memory and io controllers: is cgroup v2 mounted (by /init)?",
			 CGROOT);
	if (!file_has_word(CGROOT "/cgroup.subtree_control", "memory") ||
	    !file_has_word(CGROOT "/cgroup.subtree_control", "io"))
		write_text(CGROOT "/cgroup.subtree_control", "+memory +io");
	if (access(SWITCH_EVENT, W_OK) || access(INODE_WB_EVENT, W_OK) ||
	    access(START_EVENT, W_OK) || access(WRITTEN_EVENT, W_OK))
		tap_bail("%s/events/writeback: %s (tracefs not mounted?)",
			 TRACING, strerror(errno));
	adoption();
	bystander();
	wb_switch();
	return tap_finish();
}
