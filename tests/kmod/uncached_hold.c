// SPDX-License-Identifier: GPL-2.0
/*
 * uncached_hold - guest test module: a folio whose lock is held while its
 * writeback ends, or while the flusher wants to write it, on demand.
 *
 * The deferred drop of uncached folios after writeback (mm/filemap.c) must
 * not block on a folio someone else holds locked, and must retry such a
 * folio on its own schedule.  In real life the holder is e.g. a truncate
 * that locked the folio and waits for its writeback: when the writeback
 * ends, the folio is queued for the drop while the truncate still holds
 * it.  Likewise the flusher waits for the lock of a dirty folio it
 * writes back, which makes it run the write-behind pass of uncached writes
 * at a moment a test chooses.  User space cannot hold a folio lock for as
 * long as it likes, so this module does, through
 * /sys/kernel/debug/uncached_hold/ctl, one command per write:
 *
 *   hold FD INDEX  take the folio at INDEX of the regular file open on FD
 *                  (it must be cached, uptodate, clean, unmapped and not
 *                  under writeback), lock it, flag it uncached as an uncached
 *                  write would have, and pass it through a writeback
 *                  without I/O (folio_start_writeback() and
 *                  folio_end_writeback(), what a filesystem does around
 *                  its write I/O): its writeback completion queues it for
 *                  the drop on the CPU the caller runs on (pin it), while
 *                  this module keeps it locked
 *   lock FD INDEX  only lock the folio at INDEX of the regular file open
 *                  on FD (dirty or not): whoever writes it back waits.
 *                  The lookup adopts a folio flagged uncached, as any
 *                  cached user's does
 *   lock-uncached FD INDEX  the same, but looked up as uncached IO looks
 *                  folios up (FGP_UNCACHED): a flagged folio keeps its
 *                  flag, so the drop of an uncached read finds it locked
 *   unlock FD INDEX  unlock and put that folio (held or locked above)
 *   release        unlock and put every folio held
 *
 * Reading ctl gives the number of folios held, then a line per folio held:
 * the index of its first page and its number of pages.  Closing ctl releases
 * them, so a test that dies leaves no folio locked (an unmount would wait
 * for it forever); so does unloading the module.  The folio's data is
 * clean, so skipping the I/O loses nothing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/backing-dev.h>
#include <linux/debugfs.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/writeback.h>

#define HOLD_MAX	64

static struct folio *held[HOLD_MAX];
static unsigned int nr_held;
static DEFINE_MUTEX(held_mutex);
static struct dentry *hold_dir;

/* Can @folio, locked, go through a writeback without I/O? */
static bool hold_folio_ok(struct folio *folio)
{
	struct address_space *mapping = folio->mapping;

	return mapping && S_ISREG(mapping->host->i_mode) &&
	       mapping_can_writeback(mapping) && folio_test_uptodate(folio) &&
	       !folio_test_dirty(folio) && !folio_test_writeback(folio) &&
	       !folio_mapped(folio) && !folio_test_uncached(folio);
}

/*
 * Flag @folio uncached if it is still clean, under the i_pages lock as
 * folio_adopt_uncached() clears it: a folio dirtied meanwhile without its
 * lock (mark_buffer_dirty()) would be flagged without being counted as
 * uncached dirty data.
 */
static bool flag_clean_folio(struct folio *folio)
{
	struct address_space *mapping = folio->mapping;
	bool clean;

	xa_lock_irq(&mapping->i_pages);
	clean = !folio_test_dirty(folio);
	if (clean)
		folio_set_uncached(folio);
	xa_unlock_irq(&mapping->i_pages);
	return clean;
}

/*
 * The folio at @index of the regular file open on @fd, looked up with
 * @fgp_flags and locked, or an error.
 */
static struct folio *lock_file_folio(unsigned int fd, pgoff_t index,
				     fgf_t fgp_flags)
{
	struct folio *folio = ERR_PTR(-EINVAL);
	struct file *file;

	if (nr_held == HOLD_MAX)
		return ERR_PTR(-ENOSPC);
	file = fget(fd);
	if (!file)
		return ERR_PTR(-EBADF);
	if (S_ISREG(file_inode(file)->i_mode))
		folio = __filemap_get_folio(file->f_mapping, index, fgp_flags,
					    0);
	fput(file);
	if (IS_ERR(folio))
		return folio;
	/* never wait: the caller may hold this folio already */
	if (!folio_trylock(folio)) {
		folio_put(folio);
		return ERR_PTR(-EBUSY);
	}
	return folio;
}

static void unlock_put(struct folio *folio)
{
	folio_unlock(folio);
	folio_put(folio);
}

static int hold_folio(unsigned int fd, pgoff_t index)
{
	struct folio *folio = lock_file_folio(fd, index, 0);

	if (IS_ERR(folio))
		return PTR_ERR(folio);
	if (!hold_folio_ok(folio))
		goto invalid;
	/* the writeback accounting needs the inode's bdi_writeback */
	inode_attach_wb(folio->mapping->host, folio);
	if (!flag_clean_folio(folio))
		goto invalid;
	folio_start_writeback(folio);
	folio_end_writeback(folio);
	held[nr_held++] = folio;
	pr_info("holding folio %lu of inode %lu on CPU %d\n", index,
		folio->mapping->host->i_ino, raw_smp_processor_id());
	return 0;
invalid:
	unlock_put(folio);
	return -EINVAL;
}

static int lock_only(unsigned int fd, pgoff_t index, fgf_t fgp_flags)
{
	struct folio *folio = lock_file_folio(fd, index, fgp_flags);

	if (IS_ERR(folio))
		return PTR_ERR(folio);
	held[nr_held++] = folio;
	return 0;
}

static int unlock_one(unsigned int fd, pgoff_t index)
{
	struct file *file = fget(fd);
	unsigned int i;

	if (!file)
		return -EBADF;
	for (i = 0; i < nr_held; i++)
		if (held[i]->mapping == file->f_mapping &&
		    folio_contains(held[i], index))
			break;
	fput(file);
	if (i == nr_held)
		return -ENOENT;
	unlock_put(held[i]);
	held[i] = held[--nr_held];
	return 0;
}

static void release_all(void)
{
	while (nr_held)
		unlock_put(held[--nr_held]);
}

static ssize_t ctl_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	unsigned int fd;
	unsigned long index;
	char buf[64];
	int ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';

	mutex_lock(&held_mutex);
	if (sscanf(buf, "hold %u %lu", &fd, &index) == 2) {
		ret = hold_folio(fd, index);
	} else if (sscanf(buf, "lock %u %lu", &fd, &index) == 2) {
		ret = lock_only(fd, index, 0);
	} else if (sscanf(buf, "lock-uncached %u %lu", &fd, &index) == 2) {
		ret = lock_only(fd, index, FGP_UNCACHED);
	} else if (sscanf(buf, "unlock %u %lu", &fd, &index) == 2) {
		ret = unlock_one(fd, index);
	} else if (!strcmp(strim(buf), "release")) {
		release_all();
		ret = 0;
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&held_mutex);
	return ret ? ret : len;
}

#define CTL_LINE_MAX	48	/* "%lu %lu\n" of two unsigned longs */

static ssize_t ctl_read(struct file *file, char __user *ubuf, size_t len,
			loff_t *ppos)
{
	size_t size = (HOLD_MAX + 1) * CTL_LINE_MAX;
	char *buf = kmalloc(size, GFP_KERNEL);
	unsigned int i;
	ssize_t ret;
	int n;

	if (!buf)
		return -ENOMEM;
	mutex_lock(&held_mutex);
	n = scnprintf(buf, size, "%u\n", nr_held);
	for (i = 0; i < nr_held; i++)
		n += scnprintf(buf + n, size - n, "%lu %lu\n", held[i]->index,
			       folio_nr_pages(held[i]));
	mutex_unlock(&held_mutex);
	ret = simple_read_from_buffer(ubuf, len, ppos, buf, n);
	kfree(buf);
	return ret;
}

static int ctl_release(struct inode *inode, struct file *file)
{
	mutex_lock(&held_mutex);
	release_all();
	mutex_unlock(&held_mutex);
	return 0;
}

static const struct file_operations ctl_fops = {
	.owner = THIS_MODULE,
	.read = ctl_read,
	.write = ctl_write,
	.release = ctl_release,
	.llseek = default_llseek,
};

static int __init uncached_hold_init(void)
{
	hold_dir = debugfs_create_dir("uncached_hold", NULL);
	debugfs_create_file("ctl", 0600, hold_dir, NULL, &ctl_fops);
	return 0;
}

static void __exit uncached_hold_exit(void)
{
	debugfs_remove_recursive(hold_dir);
	mutex_lock(&held_mutex);
	release_all();
	mutex_unlock(&held_mutex);
}

module_init(uncached_hold_init);
module_exit(uncached_hold_exit);
MODULE_DESCRIPTION("Guest test: hold folios locked at moments a test chooses");
MODULE_LICENSE("GPL");
