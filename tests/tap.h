/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal TAP (KTAP/kselftest style) output for the guest tests.
 *
 *	tap_plan(3);
 *	tap_result(ok, "read returns %d bytes", n);
 *	tap_skip("no io_uring");
 *	return tap_finish();
 *
 * tap_finish() returns 0 when every planned case ran and none failed, 4
 * (KSFT_SKIP) when all were skipped, 1 otherwise.
 */
#ifndef UNCACHED_TAP_H
#define UNCACHED_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_planned, tap_count, tap_failed, tap_skipped;

static inline void tap_plan(int n)
{
	tap_planned = n;
	printf("TAP version 13\n1..%d\n", n);
	fflush(stdout);
}

static inline void tap_vline(const char *status, const char *directive,
			     const char *fmt, va_list ap)
{
	printf("%s %d ", status, ++tap_count);
	vprintf(fmt, ap);
	if (directive)
		printf(" # %s", directive);
	printf("\n");
	fflush(stdout);
}

static inline void __attribute__((format(printf, 1, 2)))
tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Report one case; returns @ok so callers can chain on it. */
static inline bool __attribute__((format(printf, 2, 3)))
tap_result(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vline(ok ? "ok" : "not ok", NULL, fmt, ap);
	va_end(ap);
	if (!ok)
		tap_failed++;
	return ok;
}

static inline void __attribute__((format(printf, 1, 2)))
tap_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vline("ok", "SKIP", fmt, ap);
	va_end(ap);
	tap_skipped++;
}

/* Abort the test: the runner sees the incomplete plan and the exit status. */
static inline void __attribute__((noreturn, format(printf, 1, 2)))
tap_bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static inline int tap_finish(void)
{
	if (tap_count != tap_planned) {
		tap_diag("planned %d cases, ran %d", tap_planned, tap_count);
		return 1;
	}
	if (tap_failed)
		return 1;
	if (tap_skipped == tap_count && tap_count)
		return 4;
	return 0;
}

#endif /* UNCACHED_TAP_H */
