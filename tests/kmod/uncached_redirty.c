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
 *                 before the buffers are freed) while it is clean, as
 *                 the drop releases it, mark its first buffer dirty (if
 *                 mapped and uptodate); the release then fails, as the
 *                 buffer is dirty
 *   disarm        forget the armed folio
 *
 * It fires once per arm.  Reading ctl gives the number of times it fired
 * since the module was loaded.  Closing ctl disarms, as does unloading.
 * The armed file is held open until then, so its filesystem cannot be
 * unmounted from under the module (umount fails with EBUSY).
 *
 * ext4 may be built in (the test kernels) or a module loaded before this
 * one (a distribution kernel, make deb-test); the module then holds a
 * reference on ext4 for as long as its probe is attached.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/buffer_head.h>
#include <linux/debugfs.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>

#define RELEASE_TRACEPOINT	"ext4_release_folio"

static struct tracepoint *release_tp;
static struct module *release_tp_owner;	/* ext4, when it is a module */
static struct file *redirty_file;	/* held open while armed */
static struct inode *redirty_inode;	/* its inode, compared by the probe */
static pgoff_t redirty_index;
static atomic_t redirty_armed = ATOMIC_INIT(0);
static atomic_t redirty_fired = ATOMIC_INIT(0);
static DEFINE_MUTEX(redirty_mutex);
static struct dentry *redirty_dir;

/*
 * The ext4_release_folio probe: @folio is locked by the caller of
 * ->release_folio(); its buffers are still attached.  Preemption is off.
 */
static void redirty_on_release(void *data, struct inode *inode,
			       struct folio *folio)
{
	struct buffer_head *head;

	/* pairs with atomic_set_release() in redirty_arm() */
	if (!atomic_read_acquire(&redirty_armed) ||
	    inode != READ_ONCE(redirty_inode) ||
	    !folio_contains(folio, READ_ONCE(redirty_index)))
		return;
	/*
	 * The drop releases only clean folios.  Whether the folio is still
	 * flagged uncached here is what the test is about, so that is not
	 * checked.
	 */
	if (folio_test_dirty(folio))
		return;
	head = folio_buffers(folio);
	if (!head || !buffer_mapped(head) || !buffer_uptodate(head))
		return;
	if (atomic_cmpxchg(&redirty_armed, 1, 0) != 1)
		return;
	mark_buffer_dirty(head);
	atomic_inc(&redirty_fired);
}

static void redirty_disarm(void)
{
	struct file *file = redirty_file;

	atomic_set(&redirty_armed, 0);
	/* no probe still looks at the armed file once this returns */
	tracepoint_synchronize_unregister();
	WRITE_ONCE(redirty_inode, NULL);
	redirty_file = NULL;
	if (file)
		fput(file);
}

static int redirty_arm(unsigned int fd, pgoff_t index)
{
	struct file *file;

	/*
	 * The probe runs with preemption off, and mark_buffer_dirty() takes
	 * the mapping's i_pages lock, which sleeps on PREEMPT_RT.
	 */
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		return -EOPNOTSUPP;
	file = fget(fd);
	if (!file)
		return -EBADF;
	if (!S_ISREG(file_inode(file)->i_mode)) {
		fput(file);
		return -EINVAL;
	}
	redirty_disarm();
	redirty_file = file;
	WRITE_ONCE(redirty_index, index);
	WRITE_ONCE(redirty_inode, file_inode(file));
	atomic_set_release(&redirty_armed, 1);
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

	mutex_lock(&redirty_mutex);
	if (sscanf(buf, "arm %u %lu", &fd, &index) == 2) {
		ret = redirty_arm(fd, index);
	} else if (!strcmp(strim(buf), "disarm")) {
		redirty_disarm();
		ret = 0;
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&redirty_mutex);
	if (ret)
		return ret;
	return len;
}

static ssize_t ctl_read(struct file *file, char __user *ubuf, size_t len,
			loff_t *ppos)
{
	char buf[16];
	int n;

	n = scnprintf(buf, sizeof(buf), "%d\n", atomic_read(&redirty_fired));
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static int ctl_release(struct inode *inode, struct file *file)
{
	mutex_lock(&redirty_mutex);
	redirty_disarm();
	mutex_unlock(&redirty_mutex);
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

/*
 * Called for every module with tracepoints that is loaded when the
 * notifier is registered (with the tracepoint module list locked).
 */
static int find_release_tp_in_module(struct notifier_block *nb,
				     unsigned long val, void *data)
{
	struct module *mod = ((struct tp_module *)data)->mod;
	struct tracepoint *tp;
	unsigned int i;

	if (val != MODULE_STATE_COMING || release_tp)
		return NOTIFY_OK;
	for (i = 0; i < mod->num_tracepoints; i++) {
		tp = tracepoint_ptr_deref(&mod->tracepoints_ptrs[i]);
		if (strcmp(tp->name, RELEASE_TRACEPOINT))
			continue;
		if (try_module_get(mod)) {
			release_tp = tp;
			release_tp_owner = mod;
		}
		break;
	}
	return NOTIFY_OK;
}

static struct notifier_block release_tp_nb = {
	.notifier_call = find_release_tp_in_module,
};

static int __init uncached_redirty_init(void)
{
	int ret;

	for_each_kernel_tracepoint(find_release_tp, NULL);
	if (!release_tp) {
		ret = register_tracepoint_module_notifier(&release_tp_nb);
		if (ret)
			return ret;
		unregister_tracepoint_module_notifier(&release_tp_nb);
	}
	if (!release_tp) {
		pr_err("no tracepoint %s (ext4 neither built in nor loaded)\n",
		       RELEASE_TRACEPOINT);
		return -ENOENT;
	}
	ret = tracepoint_probe_register(release_tp, redirty_on_release, NULL);
	if (ret) {
		module_put(release_tp_owner);
		return ret;
	}
	redirty_dir = debugfs_create_dir("uncached_redirty", NULL);
	debugfs_create_file("ctl", 0600, redirty_dir, NULL, &ctl_fops);
	return 0;
}

static void __exit uncached_redirty_exit(void)
{
	debugfs_remove_recursive(redirty_dir);
	tracepoint_probe_unregister(release_tp, redirty_on_release, NULL);
	/* no CPU may still be in the probe when this module's text goes */
	tracepoint_synchronize_unregister();
	mutex_lock(&redirty_mutex);
	redirty_disarm();
	mutex_unlock(&redirty_mutex);
	module_put(release_tp_owner);
}

module_init(uncached_redirty_init);
module_exit(uncached_redirty_exit);
MODULE_DESCRIPTION("Guest test: dirty a folio without its lock while ext4 releases it");
MODULE_LICENSE("GPL");
