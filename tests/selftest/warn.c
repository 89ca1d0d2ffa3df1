// SPDX-License-Identifier: GPL-2.0
/*
 * Harness self-test: provokes a kernel WARNING through LKDTM (debug config)
 * and itself reports success, so only the runner's kernel-log scan can fail
 * it. Never in tests.list.
 */
#include "../util.h"

#define LKDTM_DIRECT "/sys/kernel/debug/provoke-crash/DIRECT"

int main(int argc, char **argv)
{
	int fd;

	test_init(argc, argv);
	tap_plan(1);
	fd = open(LKDTM_DIRECT, O_WRONLY);
	if (fd < 0)
		tap_bail("open %s: %s (needs CONFIG_LKDTM)", LKDTM_DIRECT,
			 strerror(errno));
	tap_result(write(fd, "WARNING\n", 8) == 8, "provoked a WARNING");
	close(fd);
	return tap_finish();
}
