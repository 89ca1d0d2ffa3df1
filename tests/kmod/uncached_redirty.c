// SPDX-License-Identifier: GPL-2.0
/*
 * uncached_redirty - guest test module: dirty a folio without its lock
 * while ext4 is asked to release it.
 *
 * The drop of an uncached folio after writeback (filemap_end_uncached())
 * may be refused by the filesystem (->release_folio()).  A folio can be
 * dirtied meanwhile without the folio lock: mark_buffer_dirty(), as jbd2
 * and block device metadata writers do.  Whether the drop then leaves the
 * folio flagged uncached and counted as uncached dirty data, or flagged
 * and not counted (the write-behind count drifts below 0 once the folio is
 * cleaned), depends on when the drop clears the flag, inside a window of
 * a few instructions that user space cannot hit.  This module hits it:
 * /sys/kernel/debug/uncached_redirty/ctl takes one command per write:
 *
 *   arm FD INDEX  the next time ext4 is asked to release the folio at
 *                 INDEX of the regular file open on FD (the
 *                 ext4_release_folio tracepoint, under the folio lock,
 *                 before the buffers are freed), mark its first buffer
 *                 dirty; the release then fails, as the buffer is dirty
 *   disarm        forget the armed folio
 *
 * It fires once per arm.  Reading ctl gives the number of times it fired
 * since the module was loaded.  Closing ctl disarms, as does unloading.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/buffer_head.h>
#include <linux/debugfs.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>

#define RELEASE_TRACEPOINT	"ext4_release_folio"

static struct tracepoint *release_tp;
static struct inode *armed_inode;	/* a reference, taken by arm */
static pgoff_t armed_index;
static atomic_t armed = ATOMIC_INIT(0);
static atomic_t fired = ATOMIC_INIT(0);
static DEFINE_MUTEX(arm_mutex);
static struct dentry *redirty_dir;

/*
 * The ext4_release_folio probe: @folio is locked by the caller of
 * ->release_folio(); its buffers are still attached.
 */
static void redirty_on_release(void *data, struct inode *inode,
			       struct folio *folio)
{
	struct buffer_head *head;

	if (!atomic_read(&armed) || inode != READ_ONCE(armed_inode) ||
	    !folio_contains(folio, READ_ONCE(armed_index)))
		return;
	head = folio_buffers(folio);
	if (!head || !buffer_uptodate(head))
		return;
	if (atomic_cmpxchg(&armed, 1, 0) != 1)
		return;
	mark_buffer_dirty(head);
	atomic_inc(&fired);
}

static void disarm(void)
{
	atomic_set(&armed, 0);
	/* no probe still looks at armed_inode once this returns */
	tracepoint_synchronize_unregister();
	if (armed_inode)
		iput(armed_inode);
	WRITE_ONCE(armed_inode, NULL);
}

static int arm(unsigned int fd, pgoff_t index)
{
	struct inode *inode;
	struct file *file;

	file = fget(fd);
	if (!file)
		return -EBADF;
	inode = file_inode(file);
	if (!S_ISREG(inode->i_mode)) {
		fput(file);
		return -EINVAL;
	}
	ihold(inode);
	fput(file);
	disarm();
	WRITE_ONCE(armed_index, index);
	WRITE_ONCE(armed_inode, inode);
	atomic_set(&armed, 1);
	return 0;
}

static ssize_t ctl_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	unsigned long index;
	unsigned int fd;
	char buf[64];
	int ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';

	mutex_lock(&arm_mutex);
	if (sscanf(buf, "arm %u %lu", &fd, &index) == 2) {
		ret = arm(fd, index);
	} else if (!strcmp(strim(buf), "disarm")) {
		disarm();
		ret = 0;
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&arm_mutex);
	return ret ? ret : len;
}

static ssize_t ctl_read(struct file *file, char __user *ubuf, size_t len,
			loff_t *ppos)
{
	char buf[16];
	int n;

	n = scnprintf(buf, sizeof(buf), "%d\n", atomic_read(&fired));
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static int ctl_release(struct inode *inode, struct file *file)
{
	mutex_lock(&arm_mutex);
	disarm();
	mutex_unlock(&arm_mutex);
	return 0;
}

static const struct file_operations ctl_fops = {
	.owner = THIS_MODULE,
	.read = ctl_read,
	.write = ctl_write,
	.release = ctl_release,
	.llseek = default_llseek,
};

static void find_release_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, RELEASE_TRACEPOINT))
		release_tp = tp;
}

static int __init uncached_redirty_init(void)
{
	int ret;

	for_each_kernel_tracepoint(find_release_tp, NULL);
	if (!release_tp) {
		pr_err("no tracepoint %s (ext4 not built in?)\n",
		       RELEASE_TRACEPOINT);
		return -ENOENT;
	}
	ret = tracepoint_probe_register(release_tp, redirty_on_release, NULL);
	if (ret)
		return ret;
	redirty_dir = debugfs_create_dir("uncached_redirty", NULL);
	debugfs_create_file("ctl", 0600, redirty_dir, NULL, &ctl_fops);
	return 0;
}

static void __exit uncached_redirty_exit(void)
{
	debugfs_remove_recursive(redirty_dir);
	tracepoint_probe_unregister(release_tp, redirty_on_release, NULL);
	mutex_lock(&arm_mutex);
	disarm();
	mutex_unlock(&arm_mutex);
}

module_init(uncached_redirty_init);
module_exit(uncached_redirty_exit);
MODULE_DESCRIPTION("Guest test: dirty a folio without its lock while ext4 releases it");
MODULE_LICENSE("GPL");
