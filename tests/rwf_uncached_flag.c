// SPDX-License-Identifier: GPL-2.0
/*
 * Is RWF_UNCACHED what the kernel under test says it is?
 *
 * Built against a UAPI header without RWF_UNCACHED (the series is absent),
 * the raw value 0x80 must be refused with EOPNOTSUPP as an unknown flag.
 * With the series, RWF_UNCACHED must be 0x80 and known to the kernel, and
 * the filesystem under test must accept it exactly when it is listed in
 * UNCACHED_SUPPORTED_FS (the filesystems the series opts in); tmpfs never.
 */
#include "util.h"

static int scratch_file(const char *dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/rwf-flag.%d", dir, getpid());
	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	unlink(path);
	write_pattern(fd, 4096, 0, 7);
	return fd;
}

#ifndef RWF_UNCACHED
int main(int argc, char **argv)
{
	int fd;

	test_init(argc, argv);
	tap_diag("UAPI header has no RWF_UNCACHED: checking 0x80 is unknown");
	tap_plan(2);
	fd = scratch_file(test_dir);
	expect_rw(fd, false, 0, 0x80, EOPNOTSUPP, "flag 0x80");
	expect_rw(fd, true, 0, 0x80, EOPNOTSUPP, "flag 0x80");
	close(fd);
	return tap_finish();
}
#else
static bool fs_is_listed(const char *fs)
{
	const char *list = getenv("UNCACHED_SUPPORTED_FS");
	char copy[256], *tok, *save;

	if (!list)
		return false;
	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, " ,", &save); tok;
	     tok = strtok_r(NULL, " ,", &save))
		if (!strcmp(tok, fs))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	int fd, tmpfd, want;
	char what[64];

	test_init(argc, argv);
	want = fs_is_listed(test_fs) ? 0 : EOPNOTSUPP;
	tap_plan(7);
	tap_result(RWF_UNCACHED == 0x80, "RWF_UNCACHED is 0x80");
	tap_result((RWF_SUPPORTED & RWF_UNCACHED) == RWF_UNCACHED,
		   "RWF_SUPPORTED includes RWF_UNCACHED");

	fd = scratch_file(test_dir);
	/* EINVAL, not EOPNOTSUPP: the flag passed the known-flags check. */
	expect_rw(fd, false, 0, RWF_UNCACHED | RWF_APPEND | RWF_NOAPPEND, EINVAL,
	       "RWF_UNCACHED|RWF_APPEND|RWF_NOAPPEND (flag known)");
	snprintf(what, sizeof(what), "RWF_UNCACHED on %s", test_fs);
	expect_rw(fd, false, 0, RWF_UNCACHED, want, what);
	expect_rw(fd, true, 0, RWF_UNCACHED, want, what);
	close(fd);

	tmpfd = scratch_file("/tmp");
	expect_rw(tmpfd, false, 0, RWF_UNCACHED, EOPNOTSUPP,
		  "RWF_UNCACHED on tmpfs");
	expect_rw(tmpfd, true, 0, RWF_UNCACHED, EOPNOTSUPP,
		  "RWF_UNCACHED on tmpfs");
	close(tmpfd);
	return tap_finish();
}
#endif
