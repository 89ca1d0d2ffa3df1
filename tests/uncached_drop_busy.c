// SPDX-License-Identifier: GPL-2.0
/*
 * The deferred drop after writeback meets folios that someone else holds
 * locked, as a truncate waiting for writeback does.  The test module
 * uncached_hold (tests/kmod/) holds one such folio queued on each CPU:
 *
 * 1. The drop does not wait for it: the folios of an uncached write queued
 *    behind it on the same CPUs are dropped while it is still held (a
 *    blocking folio_lock() in the drop work stalls them until the release).
 * 2. It is tried again on its own schedule (10 ms after the first try,
 *    doubling, 2.55 s in all): held for BUSY_MS while other uncached
 *    writes keep the drop work of every CPU busy, it is dropped once
 *    released.  Retries that ran whenever the work ran would burn its tries
 *    in the busy phase and leave it cached (uncached_drop_gave_up).  The
 *    case needs the release well within the 2.55 s (RELEASE_LIMIT_MS after
 *    the first hold) and enough drops meanwhile (MIN_WRITES_PER_CPU) to
 *    tell the two apart; a guest too slow for either skips it.
 */
#include "uncached_io.h"

#include <sched.h>

#define HOLD_CTL		"/sys/kernel/debug/uncached_hold/ctl"
#define WRITE_LEN		(1ULL << 20)
#define BUSY_MS			500
#define HOLD_LIMIT_MS		2000	/* no more writes after this */
#define RELEASE_LIMIT_MS	2300	/* the last retry comes at 2.55 s */
#define MIN_WRITES_PER_CPU	10	/* more than the 8 retries */
#define MAX_CPUS		64

static int ctl_fd;
static int cpus[MAX_CPUS], ncpus;

/* The CPUs this test may run on (sched_getaffinity()). */
static void find_cpus(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		tap_bail("sched_getaffinity: %s", strerror(errno));
	for (cpu = 0; cpu < CPU_SETSIZE && ncpus < MAX_CPUS; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[ncpus++] = cpu;
	if (!ncpus)
		tap_bail("no CPU to run on");
	tap_diag("%d CPU(s): one folio held on each", ncpus);
}

static void pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		tap_bail("sched_setaffinity(CPU %d): %s", cpu, strerror(errno));
}

static void ctl(const char *cmd)
{
	if (write(ctl_fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
		tap_bail("%s '%s': %s", HOLD_CTL, cmd, strerror(errno));
}

static const char *held_name(const char *name, int i)
{
	static char path[64];

	snprintf(path, sizeof(path), "%s-cpu%d", name, i);
	return path;
}

/*
 * For each CPU, a one-page file written buffered and synced (clean and
 * cached), its folio held locked by the module and queued for the drop on
 * that CPU.  Returns the files' descriptors in @fds.
 */
static void hold_one_per_cpu(int *fds, const char *name)
{
	char cmd[64];
	int i;

	for (i = 0; i < ncpus; i++) {
		fds[i] = xopen(test_path(held_name(name, i)),
			       O_RDWR | O_CREAT | O_TRUNC);
		if (!write_range_flags(fds[i], 0, PAGE_SZ, PAGE_SZ, 0, i + 1) ||
		    fsync(fds[i]))
			tap_bail("cannot write %s", held_name(name, i));
	}
	for (i = 0; i < ncpus; i++) {
		pin_to_cpu(cpus[i]);
		snprintf(cmd, sizeof(cmd), "hold %d 0", fds[i]);
		ctl(cmd);
	}
}

static void remove_file(int fd, const char *name)
{
	close(fd);
	unlink(test_path(name));
}

static void remove_held(int *fds, const char *name)
{
	int i;

	for (i = 0; i < ncpus; i++)
		remove_file(fds[i], held_name(name, i));
}

/* Case 1: an uncached write's folios are dropped while others are held. */
static void drop_behind_held_folio(void)
{
	int held[MAX_CPUS], fd;
	struct cachestat cs;

	hold_one_per_cpu(held, "held");
	fd = xopen(test_path("behind"), O_RDWR | O_CREAT | O_TRUNC);
	if (!write_range_flags(fd, 0, WRITE_LEN, 64 << 10, RWF_UNCACHED, 7) ||
	    fsync(fd))
		tap_bail("uncached write: %s", strerror(errno));
	cs = wait_range_settled(fd, 0, WRITE_LEN, 0, UNCACHED_SETTLE_MS);
	diag_cachestat("written uncached while the held folios are queued", cs);
	tap_result(cs.nr_cache == 0,
		   "the drop does not wait for a held folio: %llu pages of an uncached write queued behind it still cached (want 0)",
		   (unsigned long long)cs.nr_cache);
	ctl("release");
	remove_file(fd, "behind");
	remove_held(held, "held");
}

/* Uncached one-page writes, each synced, on every CPU in turn; how many. */
static int keep_drops_busy(int fd, long long start)
{
	int writes = 0;

	while (now_ms() - start < HOLD_LIMIT_MS &&
	       (now_ms() - start < BUSY_MS ||
		writes < MIN_WRITES_PER_CPU * ncpus)) {
		pin_to_cpu(cpus[writes % ncpus]);
		if (!write_range_flags(fd, 0, PAGE_SZ, PAGE_SZ, RWF_UNCACHED,
				       writes + 1) || fsync(fd))
			tap_bail("uncached write: %s", strerror(errno));
		writes++;
	}
	return writes;
}

/*
 * Case 2: folios held while the drop work of every CPU is kept busy are
 * dropped once released.
 */
static void retry_on_own_schedule(void)
{
	long long gave_up = vmstat_counter("uncached_drop_gave_up");
	long long start, held_ms;
	int held[MAX_CPUS], fd, i, writes;
	uint64_t left = 0;

	fd = xopen(test_path("busy"), O_RDWR | O_CREAT | O_TRUNC);
	start = now_ms();
	hold_one_per_cpu(held, "retried");
	writes = keep_drops_busy(fd, start);
	ctl("release");
	held_ms = now_ms() - start;
	tap_diag("%d uncached writes while the folios were held; released %lld ms after the first hold",
		 writes, held_ms);
	for (i = 0; i < ncpus; i++)
		left += wait_range_settled(held[i], 0, PAGE_SZ, 0,
					   UNCACHED_SETTLE_MS).nr_cache;
	tap_diag("uncached_drop_gave_up grew by %lld",
		 vmstat_counter("uncached_drop_gave_up") - gave_up);
	if (held_ms > RELEASE_LIMIT_MS || writes < MIN_WRITES_PER_CPU * ncpus)
		tap_skip("retries on their own schedule: the guest is too slow to tell (%d writes, released after %lld ms; want %d, within %d ms)",
			 writes, held_ms, MIN_WRITES_PER_CPU * ncpus,
			 RELEASE_LIMIT_MS);
	else
		tap_result(left == 0,
			   "a folio busy at its drop is retried on its own schedule: %llu of %d held folio(s) still cached once released (want 0)",
			   (unsigned long long)left, ncpus);
	remove_file(fd, "busy");
	remove_held(held, "retried");
}

int main(int argc, char **argv)
{
	int fd;

	test_init(argc, argv);
	tap_plan(2);
	find_cpus();
	fd = xopen(test_path("probe"), O_RDWR | O_CREAT | O_TRUNC);
	if (uncached_probe(fd))
		tap_bail("RWF_UNCACHED refused: %s", strerror(uncached_probe(fd)));
	remove_file(fd, "probe");
	ctl_fd = open(HOLD_CTL, O_RDWR);
	if (ctl_fd < 0)
		tap_bail("%s: %s (the test module uncached_hold is not loaded)",
			 HOLD_CTL, strerror(errno));
	drop_behind_held_folio();
	retry_on_own_schedule();
	close(ctl_fd);
	return tap_finish();
}
