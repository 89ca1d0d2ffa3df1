// SPDX-License-Identifier: MIT
/*
 * An out-of-tree module under a licence other than the GPL that ends its
 * buffered writes the usual way: generic_write_sync(), an inline of
 * include/linux/fs.h that the series extends. It must still link: modpost
 * finds no GPL-only symbol in it.
 */
#include <linux/fs.h>
#include <linux/module.h>

static ssize_t abi_write_sync(struct kiocb *iocb, ssize_t count)
{
	return generic_write_sync(iocb, count);
}

/* referenced, so that the inline is compiled in */
static ssize_t (*const abi_hook)(struct kiocb *, ssize_t) __used =
	abi_write_sync;

MODULE_LICENSE("Proprietary");
MODULE_DESCRIPTION("non-GPL user of generic_write_sync()");
