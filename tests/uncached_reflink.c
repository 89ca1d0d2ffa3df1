// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_UNCACHED on shared (reflinked) extents. A cold file A is cloned into
 * B with FICLONE: uncached reads of B leave nothing of B or A cached, and
 * uncached overwrites of parts of B (64 KiB calls and an unaligned piece)
 * copy the shared blocks on write, leave nothing of B or A cached once
 * writeback completed and change B only. The same for a range of A
 * deduplicated into C (FIDEDUPERANGE; C written with uncached writes) and
 * for a copy_file_range() of A into D (a reflink on XFS and btrfs; a
 * diagnostic says how much of each file shares its blocks).
 *
 * A filesystem without reflink (ext4: FICLONE fails with EOPNOTSUPP)
 * skips every case, provided it takes RWF_UNCACHED: on a kernel without
 * the series the test fails there with EOPNOTSUPP, as make qemu-baseline
 * wants of a feature test. A filesystem without FIDEDUPERANGE skips the
 * dedupe cases.
 */
#include "uncached_io.h"

#include <linux/fiemap.h>
#include <sys/ioctl.h>

#define FILE_LEN	(1ULL << 20)
#define BS		(64 << 10)
#define NR_CASES	14
#define NR_DEDUPE_CASES	3

#define S1		101	/* A, and what B, C and D share with it */
#define S2		102	/* B's overwrites */
#define S3		103	/* C's overwrite */
#define S4		104	/* D's overwrite */

/* B's uncached overwrites: 64 KiB calls, and an unaligned piece. */
#define B_OFF		(256ULL << 10)
#define B_LEN		(256ULL << 10)
#define B_ODD_OFF	((640ULL << 10) + 123)
#define B_ODD_LEN	1000ULL

/* C: a copy of [0, C_LEN) of A; its uncached overwrite. */
#define C_LEN		(512ULL << 10)
#define C_OFF		(128ULL << 10)
#define C_OVER		(128ULL << 10)

/* D's uncached overwrite. */
#define D_OFF		(768ULL << 10)
#define D_OVER		(128ULL << 10)

#define KIB(x)		((unsigned long long)(x) >> 10)

static const struct file_extent a_ext[] = {
	{ 0, FILE_LEN, S1 },
};

static char *scratch_path(const char *name)
{
	char *path = strdup(test_path(name));

	if (!path)
		tap_bail("out of memory");
	return path;
}

/* Errors of FICLONE and FIDEDUPERANGE that mean "cannot share blocks". */
static bool no_sharing(int err)
{
	return err == EOPNOTSUPP || err == EXDEV || err == EINVAL ||
	       err == ENOTTY;
}

/* Report what @what left cached of [0, len) of @fd, then evict it. */
static void evict_after(int fd, uint64_t len, const char *what)
{
	diag_cachestat(what, file_cachestat(fd, 0, len));
	evict_file(fd, len);
}

/* Report how much of [0, len) of @fd lies in shared extents (FIEMAP). */
static void diag_shared(int fd, uint64_t len, const char *what)
{
	unsigned int i, max = 64;
	size_t size = sizeof(struct fiemap) + max * sizeof(struct fiemap_extent);
	struct fiemap *fm = xmalloc(size);
	uint64_t shared = 0;

	memset(fm, 0, size);
	fm->fm_length = len;
	fm->fm_extent_count = max;
	if (ioctl(fd, FS_IOC_FIEMAP, fm)) {
		tap_diag("%s: FIEMAP: %s", what, strerror(errno));
		free(fm);
		return;
	}
	for (i = 0; i < fm->fm_mapped_extents; i++)
		if (fm->fm_extents[i].fe_flags & FIEMAP_EXTENT_SHARED)
			shared += fm->fm_extents[i].fe_length;
	tap_diag("%s: %llu KiB of %llu KiB in shared extents (%u extents)",
		 what, KIB(shared), KIB(len), fm->fm_mapped_extents);
	free(fm);
}

/*
 * Does @fd read as @ext (@n extents, file size @size), with uncached reads
 * first and from disk after drop_caches then?
 */
static bool reads_as(int fd, const struct file_extent *ext, int n,
		     uint64_t size)
{
	bool ok = true;
	int e;

	for (e = 0; e < n; e++)
		ok &= read_range_flags(fd, ext[e].off, ext[e].len, BS,
				       RWF_UNCACHED, ext[e].seed);
	return file_matches_extents(fd, ext, n, size) && ok;
}

/*
 * FICLONE failed with @err, a filesystem without reflink: skip every case,
 * but only on a kernel with RWF_UNCACHED (a kernel without the series must
 * fail here with EOPNOTSUPP).
 */
/*
 * File @x (@name, @len bytes, sharing @a's blocks) gets an uncached
 * overwrite of [off, off + over) with pattern @seed: two cases, nothing of
 * @x cached once written back, and @a reads S1 while @x reads @ext.
 */
static void cow_overwrite(int a, int x, const char *name, uint64_t len,
			  uint64_t off, uint64_t over, unsigned int seed,
			  const struct file_extent *ext, int n)
{
	char what[64];
	bool wrote, a_ok, x_ok;

	wrote = write_range_flags(x, off, over, BS, RWF_UNCACHED, seed);
	snprintf(what, sizeof(what), "%s after its uncached overwrite", name);
	expect_settled(x, 0, len, 0, what);
	a_ok = reads_as(a, a_ext, ARRAY_SIZE(a_ext), FILE_LEN);
	x_ok = reads_as(x, ext, n, len);
	tap_result(a_ok && x_ok && wrote,
		   "%s: uncached overwrite of [%llu, +%llu) %s; A reads S1, %s the new data there and S1 elsewhere (uncached reads, then from disk)",
		   name, (unsigned long long)off, (unsigned long long)over,
		   wrote ? "succeeded" : "FAILED", name);
}

static void no_reflink(int a, int err)
{
	int probe = uncached_probe(a), i = 0;

	if (probe) {
		tap_result(false, "A takes RWF_UNCACHED (preadv2: %s)",
			   strerror(probe));
		i++;
	}
	for (; i < NR_CASES; i++)
		tap_skip("FICLONE on %s fails with %s: no reflink", test_fs,
			 strerror(err));
}

/* B, a clone of A: uncached reads, uncached COW overwrites. */
static void clone_cases(int a, int b)
{
	static const struct file_extent b_ext[] = {
		{ 0, B_OFF, S1 },
		{ B_OFF, B_LEN, S2 },
		{ B_OFF + B_LEN, B_ODD_OFF - B_OFF - B_LEN, S1 },
		{ B_ODD_OFF, B_ODD_LEN, S2 },
		{ B_ODD_OFF + B_ODD_LEN, FILE_LEN - B_ODD_OFF - B_ODD_LEN, S1 },
	};
	bool wrote;

	tap_result(read_range_flags(b, 0, FILE_LEN, BS, RWF_UNCACHED, S1),
		   "B: uncached 64 KiB reads of the shared extents, data S1");
	expect_cached(b, 0, FILE_LEN, 0, "B after its uncached reads");
	expect_cached(a, 0, FILE_LEN, 0, "A after the uncached reads of B");

	wrote = write_range_flags(b, B_OFF, B_LEN, BS, RWF_UNCACHED, S2);
	wrote &= write_range_flags(b, B_ODD_OFF, B_ODD_LEN, B_ODD_LEN,
				   RWF_UNCACHED, S2);
	expect_settled(b, 0, FILE_LEN, 0, "B after its uncached COW overwrites");
	expect_settled(a, 0, FILE_LEN, 0, "A after the COW overwrites of B");
	diag_shared(b, FILE_LEN, "B after its overwrites");

	tap_result(reads_as(a, a_ext, ARRAY_SIZE(a_ext), FILE_LEN),
		   "A after the COW of B: S1 everywhere (uncached reads, then from disk)");
	tap_result(reads_as(b, b_ext, ARRAY_SIZE(b_ext), FILE_LEN) && wrote,
		   "B: uncached overwrites of [%llu, +%llu) and [%llu, +%llu) %s; S2 there, S1 elsewhere (uncached reads, then from disk)",
		   B_OFF, B_LEN, B_ODD_OFF, B_ODD_LEN,
		   wrote ? "succeeded" : "FAILED");
}

/* C, written with uncached writes, deduplicated against A, overwritten. */
static void dedupe_cases(int a, const char *path)
{
	static const struct file_extent c_ext[] = {
		{ 0, C_OFF, S1 },
		{ C_OFF, C_OVER, S3 },
		{ C_OFF + C_OVER, C_LEN - C_OFF - C_OVER, S1 },
	};
	struct file_dedupe_range *range;
	size_t size = sizeof(*range) + sizeof(range->info[0]);
	int c = xopen(path, O_RDWR | O_CREAT | O_TRUNC), err = 0, i;
	bool wrote;

	/*
	 * Let the drop after writeback finish first: the dedupe compare
	 * takes a folio that was removed from the page cache between its
	 * lookup and its lock for a difference (as with any concurrent
	 * invalidation), and on btrfs with compression the drop of C's
	 * folios runs after fsync() returned.
	 */
	wrote = write_range_flags(c, 0, C_LEN, BS, RWF_UNCACHED, S1);
	if (fsync(c))
		tap_diag("fsync of C: %s", strerror(errno));
	diag_cachestat("C after its uncached writes, fsync and the drop",
		       wait_range_settled(c, 0, C_LEN, 0, UNCACHED_SETTLE_MS));

	range = xmalloc(size);
	memset(range, 0, size);
	range->src_offset = 0;
	range->src_length = C_LEN;
	range->dest_count = 1;
	range->info[0].dest_fd = c;
	range->info[0].dest_offset = 0;
	if (ioctl(a, FIDEDUPERANGE, range))
		err = errno;
	else if (range->info[0].status < 0)
		err = -range->info[0].status;
	if (wrote && no_sharing(err)) {
		for (i = 0; i < NR_DEDUPE_CASES; i++)
			tap_skip("FIDEDUPERANGE on %s fails with %s: no dedupe",
				 test_fs, strerror(err));
		goto out;
	}
	tap_result(wrote && !err &&
		   range->info[0].status == FILE_DEDUPE_RANGE_SAME &&
		   range->info[0].bytes_deduped == C_LEN,
		   "FIDEDUPERANGE of A [0, +%llu KiB) into C (uncached writes %s): status %d (want FILE_DEDUPE_RANGE_SAME), %llu KiB deduped (%s)",
		   KIB(C_LEN), wrote ? "succeeded" : "FAILED",
		   err ? -err : range->info[0].status,
		   KIB(range->info[0].bytes_deduped),
		   err ? strerror(err) : "no error");
	evict_after(a, FILE_LEN, "A after FIDEDUPERANGE");
	evict_after(c, C_LEN, "C after FIDEDUPERANGE");
	diag_shared(c, C_LEN, "C after FIDEDUPERANGE");

	cow_overwrite(a, c, "C", C_LEN, C_OFF, C_OVER, S3, c_ext,
		      ARRAY_SIZE(c_ext));
out:
	free(range);
	close(c);
}

/* copy_file_range() of all of @in into @out; returns the bytes copied. */
static uint64_t copy_all(int in, int out, uint64_t len)
{
	loff_t off_in = 0, off_out = 0;
	ssize_t n = 1;

	while ((uint64_t)off_in < len && n > 0)
		n = copy_file_range(in, &off_in, out, &off_out, len - off_in, 0);
	if (n <= 0)
		tap_diag("copy_file_range at %lld: %zd (%s)",
			 (long long)off_in, n, n < 0 ? strerror(errno) : "EOF");
	return off_in;
}

/* D, a copy_file_range() of A, overwritten. */
static void copy_cases(int a, const char *path)
{
	static const struct file_extent d_ext[] = {
		{ 0, D_OFF, S1 },
		{ D_OFF, D_OVER, S4 },
		{ D_OFF + D_OVER, FILE_LEN - D_OFF - D_OVER, S1 },
	};
	int d = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	uint64_t copied = copy_all(a, d, FILE_LEN);

	tap_result(copied == FILE_LEN,
		   "copy_file_range of A into D copies all %llu KiB (got %llu KiB)",
		   KIB(FILE_LEN), KIB(copied));
	evict_after(a, FILE_LEN, "A after copy_file_range");
	evict_after(d, FILE_LEN, "D after copy_file_range");
	diag_shared(d, FILE_LEN, "D after copy_file_range");

	cow_overwrite(a, d, "D", FILE_LEN, D_OFF, D_OVER, S4, d_ext,
		      ARRAY_SIZE(d_ext));
	close(d);
}

int main(int argc, char **argv)
{
	char *a_path, *b_path, *c_path, *d_path;
	int a, b, err;

	test_init(argc, argv);
	a_path = scratch_path("uncached-reflink-a");
	b_path = scratch_path("uncached-reflink-b");
	c_path = scratch_path("uncached-reflink-c");
	d_path = scratch_path("uncached-reflink-d");
	tap_plan(NR_CASES);

	a = make_cold_file(a_path, FILE_LEN, S1);
	b = xopen(b_path, O_RDWR | O_CREAT | O_TRUNC);
	err = ioctl(b, FICLONE, a) ? errno : 0;
	if (no_sharing(err)) {
		no_reflink(a, err);
		goto out;
	}
	tap_result(!err, "FICLONE of A (%llu KiB, cold) into B (%s)",
		   KIB(FILE_LEN), err ? strerror(err) : "no error");
	evict_after(a, FILE_LEN, "A after FICLONE");
	evict_after(b, FILE_LEN, "B after FICLONE");
	diag_shared(b, FILE_LEN, "B after FICLONE");

	clone_cases(a, b);
	dedupe_cases(a, c_path);
	copy_cases(a, d_path);
out:
	close(b);
	close(a);
	unlink(a_path);
	unlink(b_path);
	unlink(c_path);
	unlink(d_path);
	return tap_finish();
}
