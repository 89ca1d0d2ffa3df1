// SPDX-License-Identifier: GPL-2.0
/*
 * Uncached reads of a block device whose filesystem is mounted never drop
 * that filesystem's cached blocks. UNCACHED_ROFS_DEV names a small ext4
 * disk with a directory tree (made on the host; used read-only): it is
 * mounted read-only on a directory under /tmp and the tree is walked
 * (stat and a buffered read of every file), which caches the filesystem's
 * metadata (superblock, group descriptors, bitmaps, inode tables,
 * directory and extent blocks) in the device's own page cache. Then,
 * through the device node:
 *
 * - an uncached read of the whole device returns what an O_DIRECT read
 *   does, every page of the device cached before stays cached, and of the
 *   others at most uncached_ra_leftover_bound() are left (the read goes to
 *   the end of the device, so none should be);
 * - the tree walks again with the same result;
 * - after a buffered read of the whole device an uncached read of it keeps
 *   every page cached.
 *
 * Residency is per page (cachestat() of each 4 KiB). argv[1] is the spare
 * disk of the block device tests (checked, not used). A missing or wrong
 * UNCACHED_ROFS_DEV is a harness error: the test fails.
 */
#include "uncached_blockdev.h"

#include <dirent.h>
#include <sys/mount.h>

#define BS		(64 << 10)
#define MAX_DIAGS	10
#define NR_CASES	13
#define FNV_BASIS	0xcbf29ce484222325ULL

static char mnt[64];	/* the mount point, made under /tmp */
static bool made_mnt, mounted;
static const char *rofs;
static int fd, dfd;		/* the device node: buffered, O_DIRECT */
static uint64_t dev_size;
/*
 * The pages the mounted filesystem had cached before the reads: their
 * contents may differ from the medium (ext4 builds the bitmaps of
 * uninitialised block groups in memory), so the reads are compared with
 * O_DIRECT on the other pages only.
 */
static unsigned char *fs_cached;

/* What a walk of the tree saw. */
struct walk {
	long files, dirs, others, errors;
	uint64_t bytes;
	uint64_t sum;		/* of the entries' hashes: order does not count */
};

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static void walk_error(struct walk *w, const char *what, const char *path)
{
	if (w->errors++ < MAX_DIAGS)
		tap_diag("walk: %s %s: %s", what, path, strerror(errno));
}

/* Read all of regular file @path with read(); folds its bytes into @h. */
static uint64_t walk_file(const char *path, const struct stat *st,
			  struct walk *w, uint64_t h)
{
	static char buf[BS];
	int ffd = open(path, O_RDONLY);
	uint64_t total = 0;
	ssize_t n;

	if (ffd < 0) {
		walk_error(w, "open", path);
		return h;
	}
	while ((n = read(ffd, buf, sizeof(buf))) > 0) {
		h = fnv1a(h, buf, n);
		total += n;
	}
	if (n < 0)
		walk_error(w, "read", path);
	else if (total != (uint64_t)st->st_size && w->errors++ < MAX_DIAGS)
		tap_diag("walk: %s: read %llu bytes of %lld", path,
			 (unsigned long long)total, (long long)st->st_size);
	close(ffd);
	w->files++;
	w->bytes += total;
	return h;
}

/* Walk directory @path: lstat every entry, read every regular file. */
static void walk_dir(const char *path, struct walk *w)
{
	DIR *d = opendir(path);
	char child[4096];
	struct dirent *de;
	struct stat st;
	uint64_t h;

	if (!d) {
		walk_error(w, "opendir", path);
		return;
	}
	w->dirs++;
	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
		if (lstat(child, &st)) {
			walk_error(w, "lstat", child);
			continue;
		}
		h = fnv1a(FNV_BASIS, child + strlen(mnt), strlen(child + strlen(mnt)));
		h = fnv1a(h, &st.st_mode, sizeof(st.st_mode));
		h = fnv1a(h, &st.st_size, sizeof(st.st_size));
		if (S_ISDIR(st.st_mode))
			walk_dir(child, w);
		else if (S_ISREG(st.st_mode))
			h = walk_file(child, &st, w, h);
		else
			w->others++;
		w->sum += h;
	}
	if (errno)
		walk_error(w, "readdir", path);
	closedir(d);
}

static struct walk walk_tree(void)
{
	struct walk w = { 0 };

	walk_dir(mnt, &w);
	tap_diag("walk: %ld files, %ld directories, %ld others, %llu bytes, %ld errors, sum %#llx",
		 w.files, w.dirs, w.others, (unsigned long long)w.bytes,
		 w.errors, (unsigned long long)w.sum);
	return w;
}

/* Also run by exit() (tap_bail): nothing stays mounted. */
static void cleanup(void)
{
	if (mounted && umount(mnt))
		fprintf(stderr, "umount %s: %s\n", mnt, strerror(errno));
	mounted = false;
	if (made_mnt)
		rmdir(mnt);
	made_mnt = false;
}

/* UNCACHED_ROFS_DEV: set, a block device, not the test's own disk argv[1]. */
static void check_rofs(void)
{
	struct stat st, own;
	const char *why = NULL;

	rofs = getenv("UNCACHED_ROFS_DEV");
	if (!rofs || !*rofs)
		why = "unset";
	else if (stat(rofs, &st))
		why = strerror(errno);
	else if (!S_ISBLK(st.st_mode))
		why = "not a block device";
	else if (!stat(test_dir, &own) && own.st_rdev == st.st_rdev)
		why = "the same disk as argv[1]";
	tap_result(!why, "UNCACHED_ROFS_DEV (%s) names the block device of the read-only filesystem (%s)",
		   rofs ? rofs : "unset", why ? why : "yes");
	if (why)
		tap_bail("harness error: UNCACHED_ROFS_DEV must name the ext4 disk with the tree");
}

static void mount_rofs(void)
{
	int ret;

	snprintf(mnt, sizeof(mnt), "/tmp/uncached-rofs.XXXXXX");
	if (!mkdtemp(mnt))
		tap_bail("mkdtemp %s: %s", mnt, strerror(errno));
	made_mnt = true;
	ret = mount(rofs, mnt, "ext4", MS_RDONLY, NULL);
	mounted = !ret;
	tap_result(mounted, "mount -t ext4 -o ro %s %s (%s)", rofs, mnt,
		   ret ? strerror(errno) : "mounted");
	if (!mounted)
		tap_bail("cannot mount %s", rofs);
}

/*
 * The first byte of the page-aligned range [@off, @off + @n) at which @buf
 * and @dbuf differ, outside the pages of fs_cached; -1 when none.
 */
static long first_difference(const char *buf, const char *dbuf, uint64_t off,
			     size_t n)
{
	size_t pg, i;

	for (pg = 0; pg < n; pg += PAGE_SZ) {
		if (fs_cached[(off + pg) / PAGE_SZ])
			continue;
		for (i = pg; i < pg + PAGE_SZ && i < n; i++)
			if (buf[i] != dbuf[i])
				return i;
	}
	return -1;
}

/*
 * Read the whole device with preadv2(@flags) in BS calls, all of it; each
 * call's data must equal an O_DIRECT read of the same range, except on the
 * pages of fs_cached.
 */
static bool read_whole(int flags)
{
	char *buf = xmalloc(BS), *dbuf = bdev_memalign(BS);
	struct iovec iov = { .iov_base = buf };
	unsigned int bad = 0;
	uint64_t off;
	ssize_t ret;
	long i;
	size_t n;

	for (off = 0; off < dev_size; off += n) {
		n = dev_size - off < BS ? dev_size - off : BS;
		iov.iov_len = n;
		ret = preadv2(fd, &iov, 1, off, flags);
		if (ret != (ssize_t)n) {
			tap_diag("preadv2 of %zu at %llu (flags %#x): %zd (%s)", n,
				 (unsigned long long)off, flags, ret,
				 ret < 0 ? strerror(errno) : "short");
			bad++;
			continue;
		}
		if (!bdev_dio(dfd, false, dbuf, n, off, 0)) {
			bad++;
			continue;
		}
		i = first_difference(buf, dbuf, off, n);
		if (i >= 0 && bad++ < MAX_DIAGS)
			tap_diag("flags %#x: byte at %llu is %#x, O_DIRECT reads %#x",
				 flags, (unsigned long long)(off + i),
				 (unsigned char)buf[i], (unsigned char)dbuf[i]);
	}
	free(buf);
	free(dbuf);
	return !bad;
}

static uint64_t count_pages(const unsigned char *map, uint64_t n)
{
	uint64_t i, sum = 0;

	for (i = 0; i < n; i++)
		sum += map[i];
	return sum;
}

/*
 * Pages cached in @before and no longer in @after (@lost, the first ones
 * reported), and cached in @after only (@added).
 */
static void compare_residency(const unsigned char *before,
			      const unsigned char *after, uint64_t n,
			      uint64_t *lost, uint64_t *added)
{
	uint64_t i;

	*lost = *added = 0;
	for (i = 0; i < n; i++) {
		if (before[i] && !after[i] && (*lost)++ < MAX_DIAGS)
			tap_diag("page %llu (offset %llu) was cached and is not",
				 (unsigned long long)i,
				 (unsigned long long)(i * PAGE_SZ));
		*added += !before[i] && after[i];
	}
}

/* The filesystem's cached metadata survives an uncached read of the device. */
static void metadata_kept(const struct walk *first)
{
	uint64_t n = pages_of(dev_size), nbefore, lost, added;
	uint64_t bound = uncached_ra_leftover_bound(fd, BS);
	unsigned char *before, *after;
	struct walk again;

	before = bdev_residency(fd, 0, dev_size);
	fs_cached = bdev_residency(fd, 0, dev_size);
	nbefore = count_pages(before, n);
	tap_result(nbefore > 0,
		   "the mounted filesystem has %llu of the device's %llu pages cached (want > 0)",
		   (unsigned long long)nbefore, (unsigned long long)n);
	tap_result(read_whole(RWF_UNCACHED),
		   "uncached read of the whole mounted device (%llu MiB) equals its O_DIRECT read outside the filesystem's cached pages",
		   (unsigned long long)(dev_size >> 20));
	after = bdev_residency(fd, 0, dev_size);
	compare_residency(before, after, n, &lost, &added);
	tap_result(!lost,
		   "every page cached before the uncached read is still cached (%llu of %llu, %llu lost)",
		   (unsigned long long)(nbefore - lost), (unsigned long long)nbefore,
		   (unsigned long long)lost);
	if (added * PAGE_SZ > bound)
		diag_cached_pages(fd, 0, dev_size);
	tap_result(added * PAGE_SZ <= bound,
		   "the uncached read left %llu KiB newly cached (bound %llu KiB)",
		   (unsigned long long)(added * PAGE_SZ >> 10),
		   (unsigned long long)(bound >> 10));
	again = walk_tree();
	tap_result(!again.errors && again.files == first->files &&
		   again.dirs == first->dirs && again.bytes == first->bytes &&
		   again.sum == first->sum,
		   "the tree walks again after the uncached read: %ld files, %ld directories, same contents",
		   again.files, again.dirs);
	free(before);
	free(after);
}

/* A device cached by a buffered read stays cached through an uncached read. */
static void all_cached_kept(void)
{
	uint64_t n = pages_of(dev_size), cached;
	bool ok;

	ok = read_whole(0);
	cached = nr_cached(fd, 0, dev_size);
	tap_result(ok && cached == n,
		   "a buffered read of the whole device equals its O_DIRECT read (outside the filesystem's cached pages) and caches it (%llu of %llu pages)",
		   (unsigned long long)cached, (unsigned long long)n);
	tap_result(read_whole(RWF_UNCACHED),
		   "uncached read of the cached device equals its O_DIRECT read (outside the filesystem's cached pages)");
	expect_cached(fd, 0, dev_size, n, "the cached device after the uncached read");
}

int main(int argc, char **argv)
{
	struct walk first;
	int err;

	bdev_test_init(argc, argv);
	tap_plan(NR_CASES);
	atexit(cleanup);
	check_rofs();
	mount_rofs();
	first = walk_tree();
	tap_result(first.files > 0 && !first.errors,
		   "walk of the mounted tree: stat and read %ld files in %ld directories (%llu bytes), no error",
		   first.files, first.dirs, (unsigned long long)first.bytes);
	fd = bdev_open(rofs, O_RDONLY, &dev_size);
	dfd = bdev_open(rofs, O_RDONLY | O_DIRECT, NULL);
	err = bdev_probe_read(fd, dev_size);
	tap_result(!err, "preadv2(RWF_UNCACHED) at the end of %s returns 0 (%s)",
		   rofs, err ? strerror(err) : "the flag is taken");
	if (err)
		tap_bail("RWF_UNCACHED does not work on %s (a kernel without uncached I/O on block devices?)",
			 rofs);
	metadata_kept(&first);
	all_cached_kept();
	err = umount(mnt) ? errno : 0;
	mounted = !!err;
	tap_result(!err, "umount %s (%s)", mnt, err ? strerror(err) : "done");
	close(dfd);
	close(fd);
	cleanup();
	return tap_finish();
}
