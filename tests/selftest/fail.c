// SPDX-License-Identifier: GPL-2.0
/* Harness self-test: a test that reports a failure. Never in tests.list. */
#include "../util.h"

int main(int argc, char **argv)
{
	test_init(argc, argv);
	tap_plan(2);
	tap_result(true, "a case that passes");
	tap_result(false, "a case that fails on purpose");
	return tap_finish();
}
