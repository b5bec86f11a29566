// SPDX-License-Identifier: GPL-2.0-only
/*
 * HBM ECC errors (Documentation/reliability.rst, "HBM ECC errors"), injected
 * through debugfs "inject" into the device's DEBUG_INJECT register:
 *
 * - an uncorrectable error in a page of context 1's buffer fails context 1's
 *   job that reads it (DRM_MAIA_JOB_ERROR, DRM_MAIA_DEVICE_HBM_ECC); the
 *   context keeps working; context 2's job on its own buffer succeeds with
 *   the right data;
 * - the page is retired when the buffer is freed (hbm_retired_pages), a UE
 *   in a free page is retired at once, and no buffer created afterwards
 *   contains a retired page (debugfs "bos" lists each buffer's HBM blocks);
 *   hbm_free_bytes ends exactly two pages short;
 * - correctable errors are corrected (the data is right) and counted in
 *   sysfs and by maia-exporter.
 *
 * Environment: MAIA_EXPORTER, path of maia-exporter (default /usr/bin/maia-exporter).
 */
#include <limits.h>

#include "maia_job_ksft.h"
#include "kselftest_harness.h"

#define VA_CMD		(DRM_MAIA_VA_START)
#define VA_BUF		(DRM_MAIA_VA_START + 0x10000000ull)
#define VA_OUT		(DRM_MAIA_VA_START + 0x20000000ull)
#define BUF_SIZE	(64 * 1024ull)
#define SEC		NS_PER_SEC
#define NSMALL		32

/* One open file: a command buffer, an HBM buffer and a host buffer for results. */
struct ctx {
	int fd;
	__u32 asid;
	struct kbo cmd, buf, out;
	struct kcmd cb;
};

FIXTURE(ecc) {
	struct maia_node node;
	char dev[PATH_MAX];
	char inject[PATH_MAX];
	char bos[PATH_MAX];
};

static long long dev_ll(FIXTURE_DATA(ecc) *self, const char *attr)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", self->dev, attr);
	return kread_ll(path);
}

FIXTURE_SETUP(ecc)
{
	struct drm_version v = { 0 };
	__u64 rev = 0;
	int fd;

	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node");
	snprintf(self->dev, sizeof(self->dev), "/sys/class/accel/accel%d/device", self->node.minor);
	snprintf(self->inject, sizeof(self->inject), "/sys/kernel/debug/accel/%s/inject",
		 self->node.bdf);
	snprintf(self->bos, sizeof(self->bos), "/sys/kernel/debug/accel/%s/bos", self->node.bdf);
	fd = maia_open_node(&self->node);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_VERSION, &v));
	ASSERT_EQ(0, maia_get_param(fd, DRM_MAIA_PARAM_REVISION, &rev));
	close(fd);
	if (v.version_minor < 2 || rev < 0x0102)
		SKIP(return, "driver minor %d, hardware %#llx: no HBM ECC", v.version_minor,
		     (unsigned long long)rev);
	if (access(self->inject, W_OK) || access(self->bos, R_OK))
		SKIP(return, "no debugfs inject or bos file (debugfs not mounted?)");
}

FIXTURE_TEARDOWN(ecc)
{
}

static int ctx_open(FIXTURE_DATA(ecc) *self, struct ctx *c, __u32 pattern)
{
	struct drm_maia_context_status cs;
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = maia_open_node(&self->node);
	if (c->fd < 0)
		return c->fd;
	ret = kcontext_status(c->fd, &cs);
	if (!ret)
		ret = kbo_create(c->fd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &c->cmd);
	if (!ret)
		ret = kbo_create(c->fd, BUF_SIZE, DRM_MAIA_BO_HBM, VA_BUF, &c->buf);
	if (!ret)
		ret = kbo_create(c->fd, BUF_SIZE, DRM_MAIA_BO_HOST, VA_OUT, &c->out);
	if (ret)
		return ret;
	c->asid = cs.asid;
	c->cb.bo = &c->cmd;
	for (size_t i = 0; i < BUF_SIZE / 4; i++)
		((volatile __u32 *)c->buf.cpu)[i] = pattern ^ (__u32)i;
	return 0;
}

static void ctx_close(struct ctx *c)
{
	if (c->fd < 0)
		return;
	kbo_destroy(c->fd, &c->out);
	kbo_destroy(c->fd, &c->buf);
	kbo_destroy(c->fd, &c->cmd);
	close(c->fd);
	c->fd = -1;
}

/* Copies the whole HBM buffer to the host buffer; the job's WAIT result in *w. */
static int copy_job(struct ctx *c, struct drm_maia_wait *w)
{
	__u64 seq = 0;
	int ret;

	memset(c->out.cpu, 0, BUF_SIZE);
	if (c->cb.used + 256 > c->cmd.size)
		c->cb.start = c->cb.used = 0;
	kcmd_copy(&c->cb, VA_BUF, VA_OUT, BUF_SIZE, 1, 0, 0);
	ret = kcmd_submit(c->fd, &c->cb, NULL, &seq);
	return ret ? ret : kwait(c->fd, seq, 30 * SEC, w);
}

static bool out_is(const struct ctx *c, __u32 pattern)
{
	for (size_t i = 0; i < BUF_SIZE / 4; i++)
		if (((__u32 *)c->out.cpu)[i] != (pattern ^ (__u32)i))
			return false;
	return true;
}

/*
 * HBM offset of the first block of the buffer mapped at @va in @asid, from
 * debugfs "bos" ("... <asid>:<va>+<size> ... hbm@<offset>+<size>"), and
 * that block's size; -1 if not found.
 */
static long long bo_block(FIXTURE_DATA(ecc) *self, __u32 asid, __u64 va, long long *size)
{
	char line[1024], key[64];
	long long off = -1;
	FILE *f = fopen(self->bos, "r");

	if (!f)
		return -1;
	snprintf(key, sizeof(key), " %u:%#llx+", asid, (unsigned long long)va);
	while (off < 0 && fgets(line, sizeof(line), f)) {
		char *h = strstr(line, " hbm@");

		if (strstr(line, key) && h && sscanf(h, " hbm@%lli+%lli", &off, size) != 2)
			off = -1;
	}
	fclose(f);
	return off;
}

/* Whether any buffer object's HBM blocks cover the page at @page. */
static bool bos_cover(FIXTURE_DATA(ecc) *self, long long page)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen(self->bos, "r");

	if (!f)
		return true;	/* cannot tell: fail safe */
	while (!found && fgets(line, sizeof(line), f)) {
		for (char *h = strstr(line, " hbm@"); h; h = strstr(h + 1, " hbm@")) {
			long long off, size;

			if (sscanf(h, " hbm@%lli+%lli", &off, &size) == 2 &&
			    page >= off && page < off + size)
				found = true;
		}
	}
	fclose(f);
	return found;
}

static int inject(FIXTURE_DATA(ecc) *self, const char *what, long long off)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "%s %#llx", what, off);
	return maia_write_file(self->inject, cmd);
}

/*
 * Waits (up to 20 s) for attr to reach want: the event is handled by an
 * interrupt thread, and the last reference to a buffer may go a little
 * after the ioctl that dropped the handle.
 */
static long long wait_ll(FIXTURE_DATA(ecc) *self, const char *attr, long long want)
{
	long long v = dev_ll(self, attr);

	for (int i = 0; i < 200 && v != want; i++) {
		maia_sleep_ms(100);
		v = dev_ll(self, attr);
	}
	return v;
}

static const char *exporter_path(void)
{
	const char *p = getenv("MAIA_EXPORTER");

	return p && *p ? p : "/usr/bin/maia-exporter";
}

/* The value of @metric for this device in maia-exporter --once, or -1. */
static long long exporter_value(FIXTURE_DATA(ecc) *self, const char *metric)
{
	char cmd[PATH_MAX + 16], line[1024], want[128];
	long long v = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s --once", exporter_path());
	snprintf(want, sizeof(want), "pci_address=\"%s\"", self->node.bdf);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *sp = strrchr(line, ' ');

		if (!strncmp(line, metric, strlen(metric)) && line[strlen(metric)] == '{' &&
		    strstr(line, want) && sp)
			v = strtoll(sp + 1, NULL, 10);
	}
	pclose(p);
	return v;
}

TEST_F_TIMEOUT(ecc, ue_fails_owner_retires_page_ce_counted, 180)
{
	long long free0 = dev_ll(self, "hbm_free_bytes"), size = dev_ll(self, "hbm_size");
	long long retired0 = dev_ll(self, "hbm_retired_pages");
	long long pending0 = dev_ll(self, "hbm_retired_pages_pending");
	long long ue0 = dev_ll(self, "hbm_ecc_ue_count"), ce0 = dev_ll(self, "hbm_ecc_ce_count");
	long long a_off, a_size, b_off, b_size, bad, bad_free, bsz;
	struct kbo small[NSMALL], big, c;
	struct drm_maia_context_status cs;
	struct ctx c1, c2;
	struct drm_maia_wait w;
	bool covered = false;
	__u64 seq = 0;
	int i;

	ASSERT_LE(0, free0);
	ASSERT_LE(0, retired0) TH_LOG("no hbm_retired_pages");
	ASSERT_LE(0, ue0) TH_LOG("no hbm_ecc_ue_count");
	ASSERT_LE(0, ce0);
	ASSERT_EQ(0, ctx_open(self, &c1, 0x11110000));
	ASSERT_EQ(0, ctx_open(self, &c2, 0x22220000));

	/* Both contexts work. */
	ASSERT_EQ(0, copy_job(&c1, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status);
	ASSERT_EQ(0, copy_job(&c2, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status);

	/* A UE in the second page of context 1's buffer. */
	a_off = bo_block(self, c1.asid, VA_BUF, &a_size);
	ASSERT_LE(0, a_off) TH_LOG("context 1's buffer not in %s", self->bos);
	bad = a_size >= 2 * (long long)KSFT_PAGE ? a_off + KSFT_PAGE : a_off;
	TH_LOG("context 1 (asid %u) buffer at HBM %#llx (+%#llx), UE at %#llx", c1.asid, a_off,
	       a_size, bad);
	EXPECT_NE(0, inject(self, "ecc_ue", size)) TH_LOG("an offset beyond HBM");
	EXPECT_NE(0, inject(self, "ecc_oops", bad)) TH_LOG("an unknown kind");
	ASSERT_EQ(0, inject(self, "ecc_ue", bad + 100));
	EXPECT_EQ(pending0 + 1, wait_ll(self, "hbm_retired_pages_pending", pending0 + 1))
		TH_LOG("the owned page is not pending retirement");
	EXPECT_EQ(retired0, dev_ll(self, "hbm_retired_pages")) TH_LOG("retired while owned");
	EXPECT_EQ(ue0 + 1, dev_ll(self, "hbm_ecc_ue_count"));

	/* Context 1's job reading it fails with the ECC status; the context goes on. */
	ASSERT_EQ(0, copy_job(&c1, &w));
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, w.status);
	EXPECT_EQ(DRM_MAIA_DEVICE_HBM_ECC, w.device_status) TH_LOG("device status %u",
								    w.device_status);
	ASSERT_EQ(0, kcontext_status(c1.fd, &cs));
	EXPECT_EQ(0, cs.flags & DRM_MAIA_CTX_FAULTED);
	kcmd_fill(&c1.cb, VA_OUT, 4096, 0x600dda7a);
	ASSERT_EQ(0, kcmd_submit(c1.fd, &c1.cb, NULL, &seq));
	ASSERT_EQ(0, kwait(c1.fd, seq, 30 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("context 1 cannot run a job that avoids the page");

	/* Context 2 loses nothing. */
	ASSERT_EQ(0, copy_job(&c2, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	EXPECT_TRUE(out_is(&c2, 0x22220000)) TH_LOG("context 2's data changed");

	/* CEs in context 2's buffer: corrected on read, counted. */
	b_off = bo_block(self, c2.asid, VA_BUF, &b_size);
	ASSERT_LE(0, b_off);
	ASSERT_EQ(0, inject(self, "ecc_ce", b_off));
	ASSERT_EQ(0, inject(self, "ecc_ce", b_off + 8));
	ASSERT_EQ(0, inject(self, "ecc_ce", b_off + b_size - 1));
	EXPECT_EQ(ce0, dev_ll(self, "hbm_ecc_ce_count")) TH_LOG("counted before any read");
	ASSERT_EQ(0, copy_job(&c2, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	EXPECT_TRUE(out_is(&c2, 0x22220000)) TH_LOG("corrected data is wrong");
	EXPECT_EQ(ce0 + 3, dev_ll(self, "hbm_ecc_ce_count"));
	EXPECT_EQ(ue0 + 1, dev_ll(self, "hbm_ecc_ue_count"));

	/* Freeing the buffer retires the page. */
	kbo_destroy(c1.fd, &c1.buf);
	EXPECT_EQ(retired0 + 1, wait_ll(self, "hbm_retired_pages", retired0 + 1));
	EXPECT_EQ(pending0, dev_ll(self, "hbm_retired_pages_pending"));

	/* A UE in a free page: retired at once. */
	ASSERT_EQ(0, kbo_create(c2.fd, KSFT_PAGE, DRM_MAIA_BO_HBM, VA_BUF + BUF_SIZE, &c));
	bad_free = bo_block(self, c2.asid, VA_BUF + BUF_SIZE, &bsz);
	ASSERT_LE(0, bad_free);
	kbo_destroy(c2.fd, &c);
	ASSERT_EQ(0, inject(self, "ecc_ue", bad_free));
	EXPECT_EQ(retired0 + 2, wait_ll(self, "hbm_retired_pages", retired0 + 2));
	EXPECT_EQ(pending0, dev_ll(self, "hbm_retired_pages_pending"));
	EXPECT_EQ(ue0 + 2, dev_ll(self, "hbm_ecc_ue_count"));

	/*
	 * New buffers, where the buddy allocator puts small ones first (the
	 * pieces A's block split into around its bad page): none gets a
	 * retired page.
	 */
	ASSERT_EQ(0, kbo_create(c1.fd, BUF_SIZE, DRM_MAIA_BO_HBM, 0, &big));
	for (i = 0; i < NSMALL; i++)
		ASSERT_EQ(0, kbo_create(c1.fd, KSFT_PAGE, DRM_MAIA_BO_HBM, 0, &small[i]));
	EXPECT_FALSE(bos_cover(self, bad)) TH_LOG("a new buffer holds retired page %#llx", bad);
	EXPECT_FALSE(bos_cover(self, bad_free)) TH_LOG("a new buffer holds retired page %#llx",
						       bad_free);
	covered = bos_cover(self, a_off == bad ? a_off + KSFT_PAGE : a_off);
	TH_LOG("information: new buffers %s the freed buffer's range", covered ? "reuse" : "do not reuse");
	for (i = 0; i < NSMALL; i++)
		kbo_destroy(c1.fd, &small[i]);
	kbo_destroy(c1.fd, &big);

	/* Exporter, if installed. */
	if (!access(exporter_path(), X_OK)) {
		EXPECT_EQ(ce0 + 3, exporter_value(self, "MAIA_FI_DEV_ECC_SBE_VOL_TOTAL"));
		EXPECT_EQ(ue0 + 2, exporter_value(self, "MAIA_FI_DEV_ECC_DBE_VOL_TOTAL"));
		EXPECT_EQ(retired0 + 2, exporter_value(self, "MAIA_FI_DEV_RETIRED_DBE"));
	} else {
		TH_LOG("%s not found: exporter not checked", exporter_path());
	}

	/* All closed: exactly the two retired pages are missing, and counted as used. */
	ctx_close(&c1);
	ctx_close(&c2);
	EXPECT_EQ(free0 - 2 * (long long)KSFT_PAGE,
		  wait_ll(self, "hbm_free_bytes", free0 - 2 * (long long)KSFT_PAGE));
	EXPECT_EQ(size, dev_ll(self, "hbm_used_bytes") + dev_ll(self, "hbm_free_bytes"));
}

TEST_HARNESS_MAIN
