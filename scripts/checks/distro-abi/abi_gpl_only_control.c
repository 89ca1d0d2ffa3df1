// SPDX-License-Identifier: MIT
/*
 * The control of abi_write_sync.c: the same kind of module calling a
 * GPL-only export of the series, folio_end_uncached_write(). modpost must
 * refuse it; if it does not, the check proves nothing.
 */
#include <linux/module.h>
#include <linux/pagemap.h>

static void abi_end_write(struct folio *folio)
{
	folio_end_uncached_write(folio);
}

/* referenced, so that the call is compiled in */
static void (*const abi_hook)(struct folio *) __used = abi_end_write;

MODULE_LICENSE("Proprietary");
MODULE_DESCRIPTION("non-GPL user of a GPL-only export: must not link");
