// SPDX-License-Identifier: GPL-2.0-only
/*
 * Telemetry: the hwmon device and the sysfs counters exist with sane values;
 * counters move under a real load (DMA copies and GEMMs submitted through
 * the uAPI), per-tile busy time included; invalid power caps are rejected
 * with EINVAL; a low cap makes the firmware throttle (the clock drops, the
 * THERMAL interrupt is logged, jobs take longer, power settles under the
 * cap); maia-exporter's scrape (--once and over HTTP) is valid Prometheus
 * text, checked line by line.
 *
 * On hardware 1.8 (telemetry 1.2) every time in the block is modeled time
 * (Documentation/hw/time-model.rst), which passes only while the device
 * works: busy time is checked against the closed-form time of the work
 * (bytes over the host link), energy against the modeled time, and the
 * throttle is deterministic: a sustained FP32 GEMM job throttles at the
 * default cap and not at the design power. Idle time on the chip is a job
 * of NOPs (ksettle_clock()), which brings a throttled clock back.
 *
 * Environment: MAIA_EXPORTER, path of maia-exporter (default /usr/bin/maia-exporter).
 */
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <maia/hw/tensor.h>

#include "maia_job_ksft.h"
#include "kselftest_harness.h"

#define VA_CMD		(DRM_MAIA_VA_START)
#define VA_HBM		(DRM_MAIA_VA_START + 0x10000000ull)
#define VA_HOST		(DRM_MAIA_VA_START + 0x20000000ull)
#define VA_GEMM		(DRM_MAIA_VA_START + 0x30000000ull)
#define SEC		NS_PER_SEC
#define GEMM_N		256u
#define CAP_DEFAULT_UW	500000000ll

FIXTURE(tm) {
	struct maia_node node;
	int fd;
	bool modeled;		/* telemetry 1.2: modeled time (hardware 1.8) */
	char dev[PATH_MAX];	/* /sys/bus/pci/devices/<bdf> */
	char hwmon[PATH_MAX + 300];
	long long cap_uw;	/* restored at teardown */
	struct kbo cmd, hbm, host, gemm;
	struct kcmd cb;
};

static int write_attr(const char *dir, const char *attr, const char *val)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	return maia_write_file(path, val);
}

FIXTURE_SETUP(tm)
{
	self->fd = -1;
	self->cap_uw = -1;
	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node");
	snprintf(self->dev, sizeof(self->dev), "/sys/bus/pci/devices/%s", self->node.bdf);
	ASSERT_TRUE(khwmon_dir(self->dev, self->hwmon, sizeof(self->hwmon)))
		TH_LOG("no hwmon directory under %s", self->dev);
	self->cap_uw = kread_attr(self->hwmon, "power1_cap");
	self->fd = maia_open_node(&self->node);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, kbo_create(self->fd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &self->cmd));
	ASSERT_EQ(0, kbo_create(self->fd, 4 * KSFT_MIB, DRM_MAIA_BO_HBM, VA_HBM, &self->hbm));
	ASSERT_EQ(0, kbo_create(self->fd, 4 * KSFT_MIB, DRM_MAIA_BO_HOST, VA_HOST, &self->host));
	ASSERT_EQ(0, kbo_create(self->fd, 2 * KSFT_MIB, DRM_MAIA_BO_HBM, VA_GEMM, &self->gemm));
	self->cb.bo = &self->cmd;
	self->modeled = kread_attr(self->dev, "modeled_time_ns") >= 0;
	/* Earlier work may have left the clock throttled: modeled time stood still since. */
	if (self->modeled)
		ASSERT_EQ(0, ksettle_clock(self->fd, &self->cb, self->dev));
}

FIXTURE_TEARDOWN(tm)
{
	char v[32];

	if (self->cap_uw > 0) {
		snprintf(v, sizeof(v), "%lld", self->cap_uw);
		write_attr(self->hwmon, "power1_cap", v);
	}
	if (self->fd >= 0)
		close(self->fd);
}

/* Submits what was added and waits; the job status or -errno; *ns = wall time. */
static int run(int fd, struct kcmd *cb, long long *ns)
{
	struct drm_maia_wait w;
	__u64 seqno = 0;
	__s64 t0 = kmono_ns();
	int ret;

	if (cb->used > KSFT_MIB - 4096)	/* start over at the buffer's beginning */
		return -ENOSPC;
	ret = kcmd_submit(fd, cb, NULL, &seqno);
	if (!ret)
		ret = kwait(fd, seqno, 60 * SEC, &w);
	if (ns)
		*ns = kmono_ns() - t0;
	cb->start = cb->used = 0;
	return ret ? ret : (int)w.status;
}

/* Where timed jobs write their device timestamps: the end of the command BO. */
#define TS_OFFSET	(KSFT_MIB - 64)

static void add_timestamp(FIXTURE_DATA(tm) *self, int slot)
{
	struct maia_cmd_timestamp *t = kcmd_add(&self->cb, MAIA_OP_TIMESTAMP, sizeof(*t));

	t->addr = VA_CMD + TS_OFFSET + 8 * slot;
}

/* Device time a job of n copies takes, best of 3, from its own timestamps. */
static long long timed_copies(FIXTURE_DATA(tm) *self, int n)
{
	volatile __u64 *ts = (void *)((char *)self->cmd.cpu + TS_OFFSET);
	long long best = -1;

	for (int i = 0; i < 3; i++) {
		add_timestamp(self, 0);
		for (int k = 0; k < n; k++)
			kcmd_copy(&self->cb, VA_HOST, VA_HBM, 4 * KSFT_MIB, 1, 0, 0);
		add_timestamp(self, 1);
		if (run(self->fd, &self->cb, NULL) != DRM_MAIA_JOB_OK)
			return -1;
		if (best < 0 || (long long)(ts[1] - ts[0]) < best)
			best = (long long)(ts[1] - ts[0]);
	}
	return best;
}

/* n copies of the 4 MiB host BO into the 4 MiB HBM BO. */
static void add_copies(FIXTURE_DATA(tm) *self, int n)
{
	for (int i = 0; i < n; i++)
		kcmd_copy(&self->cb, VA_HOST, VA_HBM, 4 * KSFT_MIB, 1, 0, 0);
}

static void desc2(struct maia_tensor_desc *d, __u64 va, __u32 rows, __u32 cols)
{
	memset(d, 0, sizeof(*d));
	d->addr = va;
	d->dtype = MAIA_DTYPE_FP32;
	d->rank = 2;
	d->shape[0] = rows;
	d->shape[1] = cols;
	d->strides[0] = cols;
	d->strides[1] = 1;
}

/* n FP32 GEMMs C = A * B, GEMM_N^3, operands in the GEMM BO. */
static void add_gemms(FIXTURE_DATA(tm) *self, int n)
{
	__u64 mat = (__u64)GEMM_N * GEMM_N * sizeof(float);

	for (int i = 0; i < n; i++) {
		struct maia_cmd_gemm *g = kcmd_add(&self->cb, MAIA_OP_GEMM, sizeof(*g));

		desc2(&g->a, VA_GEMM, GEMM_N, GEMM_N);
		desc2(&g->b, VA_GEMM + mat, GEMM_N, GEMM_N);
		desc2(&g->c, VA_GEMM + 2 * mat, GEMM_N, GEMM_N);
	}
}

TEST_F(tm, hwmon_and_sysfs)
{
	static const char * const counters[] = {
		"busy_time_us", "tensor_busy_time_us", "vector_busy_time_us",
		"dma_busy_time_us", "throttled_time_us", "hbm_bytes_read",
		"hbm_bytes_written", "dma_bytes", "flops", "commands", "utilization",
		"tensor_utilization", "throttle_count", "throttle_reasons",
	};
	char name[32], path[PATH_MAX * 2];
	long long t, cap_max, cap_min;

	/*
	 * Modeled time passes only while the device works: right after boot
	 * the power controller may not have closed a control period (100 us)
	 * yet. 4096 NOPs are about 0.4 ms of idle on the chip.
	 */
	if (self->modeled) {
		for (int i = 0; i < 4096; i++)
			kcmd_nop(&self->cb);
		ASSERT_EQ(DRM_MAIA_JOB_OK, run(self->fd, &self->cb, NULL));
		EXPECT_LE(400000, kread_attr(self->dev, "modeled_time_ns"));
	}
	snprintf(path, sizeof(path), "%s/name", self->hwmon);
	ASSERT_LE(0, maia_read_file(path, name, sizeof(name)));
	EXPECT_STREQ("maia", name);
	t = kread_attr(self->hwmon, "temp1_input");
	EXPECT_TRUE(t >= 20000 && t <= kread_attr(self->hwmon, "temp1_crit")) TH_LOG("temp %lld", t);
	EXPECT_EQ(95000, kread_attr(self->hwmon, "temp1_max"));
	cap_max = kread_attr(self->hwmon, "power1_cap_max");
	cap_min = kread_attr(self->hwmon, "power1_cap_min");
	if (self->modeled) {
		__u64 design = 0;

		/* the chip model's design power (700 W for a Maia 100, 900 W for a Maia 200) */
		ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_DESIGN_POWER_MW, &design));
		EXPECT_EQ((long long)design * 1000, cap_max);
	} else {
		EXPECT_EQ(700000000, cap_max);
	}
	EXPECT_EQ(100000000, cap_min);
	EXPECT_TRUE(self->cap_uw >= cap_min && self->cap_uw <= cap_max);
	EXPECT_EQ(1500000000ll, kread_attr(self->hwmon, "freq1_input"));
	EXPECT_LE(50000000, kread_attr(self->hwmon, "power1_average"));
	EXPECT_LE(50000000, kread_attr(self->hwmon, "power1_input"));
	/* the window: 1 s of host time, or 10 ms of modeled time (telemetry 1.2) */
	EXPECT_EQ(self->modeled ? 10 : 1000, kread_attr(self->hwmon, "power1_average_interval"));
	EXPECT_LT(0, kread_attr(self->hwmon, "energy1_input"));
	for (size_t i = 0; i < ARRAY_SIZE(counters); i++) {
		const char *attr = counters[i];

		EXPECT_LE(0, kread_attr(self->dev, attr)) TH_LOG("%s", attr);
	}
	if (self->modeled) {
		static const char * const modeled[] = {
			"modeled_time_ns", "peak_time_ns", "hbm_utilization", "mfu",
		};

		for (size_t i = 0; i < ARRAY_SIZE(modeled); i++) {
			const char *attr = modeled[i];

			EXPECT_LE(0, kread_attr(self->dev, attr)) TH_LOG("%s", attr);
		}
		EXPECT_GE(100, kread_attr(self->dev, "hbm_utilization"));
		EXPECT_GE(100, kread_attr(self->dev, "mfu"));
		EXPECT_GE(kread_attr(self->dev, "modeled_time_ns") / 1000,
			  kread_attr(self->dev, "busy_time_us"));
	}
	/* hwmon files are read-only except power1_cap. */
	EXPECT_GT(0, write_attr(self->hwmon, "energy1_input", "0"));
}

TEST_F(tm, counters_move_under_load)
{
	long long busy0, tensor0, dma0, hbmw0, hbmr0, bytes0, flops0, cmds0, e0, e1;
	long long t0, t1, ns, m0, m1;
	float *a = self->gemm.cpu;

	for (unsigned int i = 0; i < 2 * GEMM_N * GEMM_N; i++)
		a[i] = (float)(i % 7) - 3.0f;
	memset(self->host.cpu, 0x5a, self->host.size);
	busy0 = kread_attr(self->dev, "busy_time_us");
	tensor0 = kread_attr(self->dev, "tensor_busy_time_us");
	dma0 = kread_attr(self->dev, "dma_busy_time_us");
	hbmw0 = kread_attr(self->dev, "hbm_bytes_written");
	hbmr0 = kread_attr(self->dev, "hbm_bytes_read");
	bytes0 = kread_attr(self->dev, "dma_bytes");
	flops0 = kread_attr(self->dev, "flops");
	cmds0 = kread_attr(self->dev, "commands");
	e0 = kread_attr(self->hwmon, "energy1_input");
	m0 = kread_attr(self->dev, "modeled_time_ns") / 1000;	/* us */
	t0 = kmono_ns();

	add_copies(self, 32);
	add_gemms(self, 16);
	ASSERT_EQ(DRM_MAIA_JOB_OK, run(self->fd, &self->cb, &ns));

	EXPECT_EQ(0x5a5a5a5a, ((__u32 *)self->hbm.cpu)[12345]);
	EXPECT_LE(32 * 4 * KSFT_MIB, kread_attr(self->dev, "hbm_bytes_written") - hbmw0);
	EXPECT_LE(32 * 4 * KSFT_MIB, kread_attr(self->dev, "dma_bytes") - bytes0);
	/* Each GEMM reads A and B (at least 2 x 256 KiB) from HBM. */
	EXPECT_LE(16ll * 2 * GEMM_N * GEMM_N * 4, kread_attr(self->dev, "hbm_bytes_read") - hbmr0);
	EXPECT_LE(16ll * 2 * GEMM_N * GEMM_N * GEMM_N, kread_attr(self->dev, "flops") - flops0);
	EXPECT_LE(48, kread_attr(self->dev, "commands") - cmds0);
	EXPECT_LT(0, kread_attr(self->dev, "tensor_busy_time_us") - tensor0);
	EXPECT_LT(0, kread_attr(self->dev, "dma_busy_time_us") - dma0);
	/* each counter is shown truncated to us: each difference is within 1 us */
	EXPECT_LE(kread_attr(self->dev, "dma_busy_time_us") - dma0 +
		  kread_attr(self->dev, "tensor_busy_time_us") - tensor0,
		  kread_attr(self->dev, "busy_time_us") - busy0 + 2);
	EXPECT_LT(0, kread_attr(self->dev, "utilization"));
	if (!self->modeled) {
		/* The busy time is device time inside this job's wall time. */
		EXPECT_GE(ns / 1000 + 1000, kread_attr(self->dev, "busy_time_us") - busy0);
		maia_sleep_ms(100);
		e1 = kread_attr(self->hwmon, "energy1_input");
		t1 = kmono_ns();
		/* At least the idle power (60 W) over the time, less a 10 ms period. */
		EXPECT_LE((long long)(60.0 * ((double)(t1 - t0) / 1e9 - 0.02) * 1e6), e1 - e0)
			TH_LOG("energy %lld uJ over %lld ms", e1 - e0, (t1 - t0) / 1000000);
		TH_LOG("job %lld ms, busy %lld us, energy %lld mJ", ns / 1000000,
		       kread_attr(self->dev, "busy_time_us") - busy0, (e1 - e0) / 1000);
		return;
	}
	/*
	 * Modeled: the copies move 32 x 4 MiB over the host link, so the busy
	 * time is at least that at the chip model's host bandwidth (MB/s:
	 * bytes * 1000 / mbps ns), whatever the host needed. Modeled time
	 * passes only while the device works: it covers the busy time, and the
	 * energy is at least the idle power (50 W, below either chip's) over
	 * it and at most the design power.
	 */
	{
		__u64 host_mbps = 0, design_mw = 0;
		long long floor_us, busy;

		ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_HOST_MBPS, &host_mbps));
		ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_DESIGN_POWER_MW, &design_mw));
		ASSERT_LT(0, host_mbps);
		floor_us = (long long)(32 * 4 * KSFT_MIB * 1000 / host_mbps / 1000);
		busy = kread_attr(self->dev, "busy_time_us") - busy0;
		m1 = kread_attr(self->dev, "modeled_time_ns") / 1000;
		e1 = kread_attr(self->hwmon, "energy1_input");
		EXPECT_LE(floor_us - 1, busy) TH_LOG("busy %lld us, the copies take %lld us",
						     busy, floor_us);
		EXPECT_LE(busy, m1 - m0);
		EXPECT_LE((long long)(50.0 * (double)(m1 - m0)) - 1000, e1 - e0)
			TH_LOG("energy %lld uJ over %lld us of modeled time", e1 - e0, m1 - m0);
		EXPECT_GE((long long)(design_mw / 1000.0 * (double)(m1 - m0)) + 1000, e1 - e0)
			TH_LOG("energy %lld uJ over %lld us of modeled time", e1 - e0, m1 - m0);
		TH_LOG("job: host %lld ms; modeled busy %lld us (copies at the host link: %lld us), "
		       "modeled time %lld us, energy %lld uJ", ns / 1000000, busy, floor_us,
		       m1 - m0, e1 - e0);
	}
}

/* tile_busy_time_us: values into v (up to max); returns how many, -1 if unreadable. */
static int read_tiles(const char *dir, long long *v, int max)
{
	char path[PATH_MAX * 2], buf[8192], *p, *end;
	int n = 0;

	snprintf(path, sizeof(path), "%s/tile_busy_time_us", dir);
	if (maia_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; n < max; p = end) {
		long long x = strtoll(p, &end, 10);

		if (end == p)
			break;
		v[n++] = x;
	}
	return n;
}

/*
 * Per-tile busy time: one value per tile of the topology, and GEMMs (whose
 * tasks are spread over the tiles) move several of them, never backwards.
 */
TEST_F(tm, tile_busy_time)
{
	long long before[1024], after[1024], grew = 0, moved = 0;
	__u64 clusters = 0, per = 0;
	int n0, n1;
	long long ns;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_NUM_CLUSTERS, &clusters));
	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_TILES_PER_CLUSTER, &per));
	n0 = read_tiles(self->dev, before, 1024);
	ASSERT_EQ((int)(clusters * per), n0);
	add_gemms(self, 8);
	ASSERT_EQ(DRM_MAIA_JOB_OK, run(self->fd, &self->cb, &ns));
	n1 = read_tiles(self->dev, after, 1024);
	ASSERT_EQ(n0, n1);
	for (int t = 0; t < n1; t++) {
		EXPECT_LE(before[t], after[t]);
		grew += after[t] - before[t];
		moved += after[t] > before[t];
	}
	/* a 256^3 GEMM is several tasks: more than one tile worked */
	EXPECT_LE(2, moved);
	EXPECT_LT(0, grew);
	TH_LOG("8 GEMMs: %lld tile-us over %lld of %d tiles, job %lld us", grew, moved, n1,
	       ns / 1000);
	/* the file is read-only */
	EXPECT_GT(0, write_attr(self->dev, "tile_busy_time_us", "0"));
}

TEST_F(tm, invalid_power_cap)
{
	static const char * const bad[] = {
		"0", "-1", "-500000000", "99999999", "9999999999999", "abc",
	};
	char above[32];
	int ret;

	/* One uW above the largest cap (the design power). */
	snprintf(above, sizeof(above), "%lld", kread_attr(self->hwmon, "power1_cap_max") + 1);
	ret = write_attr(self->hwmon, "power1_cap", above);
	EXPECT_EQ(-EINVAL, ret) TH_LOG("power1_cap <- '%s': %d", above, ret);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *val = bad[i];
		int ret = write_attr(self->hwmon, "power1_cap", val);

		EXPECT_EQ(-EINVAL, ret) TH_LOG("power1_cap <- '%s': %d", val, ret);
	}
	EXPECT_EQ(self->cap_uw, kread_attr(self->hwmon, "power1_cap"));
	/* A valid value is taken and rounded to the device's mW. */
	ASSERT_EQ(0, write_attr(self->hwmon, "power1_cap", "400000400"));
	EXPECT_EQ(400000000, kread_attr(self->hwmon, "power1_cap"));
}

/* Kernel log lines of this device saying its clock was throttled for the cap. */
struct throttle_log {
	const char *bdf;
	int lines;
};

static void count_throttle_line(int level, const char *text, void *arg)
{
	struct throttle_log *t = arg;

	if (level <= 4 && strstr(text, t->bdf) && strstr(text, "clock throttled to") &&
	    strstr(text, "power cap"))
		t->lines++;
}

TEST_F(tm, low_cap_throttles)
{
	long long nominal = kread_attr(self->hwmon, "freq1_input"), freq = nominal;
	long long ev0 = kread_attr(self->dev, "throttle_count"), d0, d1;
	long long deadline, avg;
	struct throttle_log tl = { .bdf = strrchr(self->dev, '/') + 1 };
	int kmsg = maia_kmsg_open();
	long long low_uw = 100000000;
	char low[32];

	/*
	 * The low cap: 100 W, or on a chip model a seventh of its design power
	 * (a Maia 200 idles at about 100 W at its lowest clock: 100 W is out
	 * of its reach, 128 W is not), at least the smallest cap.
	 */
	if (self->modeled) {
		__u64 design = 0;

		ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_DESIGN_POWER_MW, &design));
		if ((long long)design / 7 * 1000 > low_uw)
			low_uw = (long long)design / 7 * 1000;
	}
	snprintf(low, sizeof(low), "%lld", low_uw);

	/* Reference: device time of a job at the nominal clock. */
	d0 = timed_copies(self, 16);
	ASSERT_LT(0, d0);
	ASSERT_EQ(0, write_attr(self->hwmon, "power1_cap", low));
	EXPECT_EQ(low_uw, kread_attr(self->hwmon, "power1_cap"));

	/* Keep the device busy until the clock has dropped a few steps. */
	deadline = kmono_ns() + 20 * SEC;
	while (kmono_ns() < deadline && freq > nominal * 6 / 10) {
		add_copies(self, 16);
		ASSERT_EQ(DRM_MAIA_JOB_OK, run(self->fd, &self->cb, NULL));
		freq = kread_attr(self->hwmon, "freq1_input");
	}
	EXPECT_GE(nominal * 6 / 10, freq) TH_LOG("clock %lld Hz after 20 s of load", freq);
	EXPECT_LE(ev0 + 4, kread_attr(self->dev, "throttle_count"));
	EXPECT_EQ(1, kread_attr(self->dev, "throttle_reasons") & 1);
	EXPECT_LT(0, kread_attr(self->dev, "throttled_time_us"));
	/* the THERMAL interrupt: the driver logged the start of throttling */
	ASSERT_LE(0, kmsg);
	maia_sleep_ms(100);
	maia_kmsg_each(kmsg, count_throttle_line, &tl);
	close(kmsg);
	EXPECT_LE(1, tl.lines) TH_LOG("no 'clock throttled ... power cap' warning for %s", tl.bdf);

	/*
	 * Jobs now take longer. Only logged: under TCG the guest's own overhead
	 * swamps the stretch, and timing limits belong in benchmarks. The firmware
	 * unit test checks the stretch on virtual time; here throttled_time_us
	 * above proves the firmware stretched work.
	 */
	d1 = timed_copies(self, 16);

	/* Under continued load, the 1 s average settles under the cap. */
	deadline = kmono_ns() + 3 * SEC / 2;
	while (kmono_ns() < deadline) {
		add_copies(self, 16);
		ASSERT_EQ(DRM_MAIA_JOB_OK, run(self->fd, &self->cb, NULL));
	}
	avg = kread_attr(self->hwmon, "power1_average");
	EXPECT_GE(low_uw, avg) TH_LOG("power1_average %lld uW over a %lld W cap", avg,
				      low_uw / 1000000);
	TH_LOG("throttled to %lld MHz, %lld W average, jobs %lld -> %lld us",
	       kread_attr(self->hwmon, "freq1_input") / 1000000, avg / 1000000, d0 / 1000, d1 / 1000);

	/*
	 * Cap lifted: the clock climbs back to nominal once idle (on hardware
	 * 1.8 idle on the chip: NOP jobs, as modeled time stands still between
	 * jobs).
	 */
	{
		char v[32];

		snprintf(v, sizeof(v), "%lld", self->cap_uw);
		ASSERT_EQ(0, write_attr(self->hwmon, "power1_cap", v));
	}
	if (self->modeled) {
		EXPECT_EQ(0, ksettle_clock(self->fd, &self->cb, self->dev));
	} else {
		deadline = kmono_ns() + 5 * SEC;
		while (kmono_ns() < deadline && kread_attr(self->hwmon, "freq1_input") != nominal)
			maia_sleep_ms(50);
	}
	EXPECT_EQ(nominal, kread_attr(self->hwmon, "freq1_input"));
	EXPECT_EQ(0, kread_attr(self->dev, "throttle_reasons"));
}

/* The throttle job: TIMESTAMP, n FP32 GEMMs of GEMM_N^3, TIMESTAMP; its modeled time. */
static long long timed_gemms(FIXTURE_DATA(tm) *self, int n)
{
	volatile __u64 *ts = (void *)((char *)self->cmd.cpu + TS_OFFSET);

	self->cb.start = self->cb.used = 0;
	add_timestamp(self, 0);
	add_gemms(self, n);
	add_timestamp(self, 1);
	if (run(self->fd, &self->cb, NULL) != DRM_MAIA_JOB_OK)
		return -1;
	return (long long)(ts[1] - ts[0]);
}

#define THROTTLE_GEMMS	1000	/* about 1.4 ms on a Maia 100, 1000 x 1.4 us */

/*
 * Deterministic throttling (hardware 1.8): a sustained FP32 GEMM job draws
 * more than 90 % of the default cap (the TDP: 500 W on a Maia 100, 750 W on
 * a Maia 200), so within the job the power controller steps the clock down
 * (a throttle event, throttled time, the power-cap reason); at the design
 * power (700 W / 900 W) the same job runs at the nominal clock throughout.
 * Run twice at the default cap from a settled clock, the throttle happens
 * both times.
 */
TEST_F(tm, gemm_throttles_at_default_cap_not_at_design_power)
{
	long long ev0, thr0, def, def2, design, cap_max = kread_attr(self->hwmon, "power1_cap_max");
	char v[32];

	if (!self->modeled)
		SKIP(return, "throttling follows host time before hardware 1.8");
	ASSERT_LT(0, self->cap_uw);

	/* The default cap. */
	ev0 = kread_attr(self->dev, "throttle_count");
	thr0 = kread_attr(self->dev, "throttled_time_us");
	def = timed_gemms(self, THROTTLE_GEMMS);
	ASSERT_LT(0, def);
	EXPECT_LT(ev0, kread_attr(self->dev, "throttle_count"))
		TH_LOG("no step-down in %lld us of FP32 GEMMs at a %lld W cap", def / 1000,
		       self->cap_uw / 1000000);
	EXPECT_LT(thr0, kread_attr(self->dev, "throttled_time_us"));
	EXPECT_EQ(1, kread_attr(self->dev, "throttle_reasons") & 1);
	TH_LOG("at %lld W: %lld us modeled, %lld step-downs, %lld W average, %lld%% MFU",
	       self->cap_uw / 1000000, def / 1000, kread_attr(self->dev, "throttle_count") - ev0,
	       kread_attr(self->hwmon, "power1_average") / 1000000, kread_attr(self->dev, "mfu"));

	/* Again from a settled clock: it throttles again. */
	ASSERT_EQ(0, ksettle_clock(self->fd, &self->cb, self->dev));
	ev0 = kread_attr(self->dev, "throttle_count");
	def2 = timed_gemms(self, THROTTLE_GEMMS);
	EXPECT_LT(ev0, kread_attr(self->dev, "throttle_count"));

	/* The design power: no step-down, shorter. */
	ASSERT_EQ(0, ksettle_clock(self->fd, &self->cb, self->dev));
	snprintf(v, sizeof(v), "%lld", cap_max);
	ASSERT_EQ(0, write_attr(self->hwmon, "power1_cap", v));
	ev0 = kread_attr(self->dev, "throttle_count");
	thr0 = kread_attr(self->dev, "throttled_time_us");
	design = timed_gemms(self, THROTTLE_GEMMS);
	ASSERT_LT(0, design);
	EXPECT_EQ(ev0, kread_attr(self->dev, "throttle_count"));
	EXPECT_EQ(thr0, kread_attr(self->dev, "throttled_time_us"));
	EXPECT_EQ(0, kread_attr(self->dev, "throttle_reasons"));
	/*
	 * A lower clock lengthens only the compute part of a command; these
	 * GEMMs are bound by HBM and their fixed cost (arithmetic intensity 43
	 * flops/byte, the FP32 ridge of a Maia 100 is 111), so they take no
	 * less at the design power, and never more.
	 */
	EXPECT_LE(design, def);
	EXPECT_LE(design, def2);
	TH_LOG("at %lld W: %lld us modeled, no step-down, %lld W average; at the default cap "
	       "%lld and %lld us", cap_max / 1000000, design / 1000,
	       kread_attr(self->hwmon, "power1_average") / 1000000, def / 1000, def2 / 1000);
}

/* ---- the exporter ---- */

static const char *exporter_path(void)
{
	const char *p = getenv("MAIA_EXPORTER");

	return p && *p ? p : "/usr/bin/maia-exporter";
}

static bool metric_name_ok(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			     c == ':';

		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

struct scrape_check {
	int samples, families;
	bool device_label, pci_label, model_label;
	char seen[64][64];	/* families with HELP and TYPE, in order */
	char bad[256];		/* first bad line */
};

/* Validates Prometheus text exposition format, line by line. */
static bool check_scrape(char *text, const char *bdf, struct scrape_check *c)
{
	char help_for[64] = "", type_for[64] = "";
	char *line;

	memset(c, 0, sizeof(*c));
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
			const char *name = line + 7, *sp = strchr(name, ' ');
			size_t len = sp ? (size_t)(sp - name) : 0;

			if (!sp || !metric_name_ok(name, len) || len >= 64)
				goto bad;
			if (line[2] == 'H') {
				snprintf(help_for, sizeof(help_for), "%.*s", (int)len, name);
			} else {
				if (strcmp(sp + 1, "gauge") && strcmp(sp + 1, "counter"))
					goto bad;
				/* TYPE follows the HELP of the same family. */
				if (strncmp(help_for, name, len) || help_for[len])
					goto bad;
				snprintf(type_for, sizeof(type_for), "%.*s", (int)len, name);
				if (c->families < 64)
					snprintf(c->seen[c->families], 64, "%s", type_for);
				c->families++;
			}
			continue;
		}
		if (line[0] == '#')
			continue;
		{
			char *brace = strchr(line, '{'), *close, *end;
			size_t len = brace ? (size_t)(brace - line) : 0;
			double v;

			/* Samples come after their family's HELP and TYPE. */
			if (!brace || !metric_name_ok(line, len) || strncmp(type_for, line, len) ||
			    type_for[len])
				goto bad;
			close = strstr(brace, "} ");
			if (!close)
				goto bad;
			*close = '\0';
			c->device_label |= strstr(brace, "device=\"maia") != NULL;
			c->model_label |= strstr(brace, "modelName=\"") != NULL;
			if (strstr(brace, "pci_address=\"") && strstr(brace, bdf))
				c->pci_label = true;
			errno = 0;
			v = strtod(close + 2, &end);
			if (errno || end == close + 2 || *end || !isfinite(v))
				goto bad;
			c->samples++;
		}
	}
	return true;
bad:
	snprintf(c->bad, sizeof(c->bad), "%s", line);
	return false;
}

static bool has_family(const struct scrape_check *c, const char *name)
{
	for (int i = 0; i < c->families && i < 64; i++)
		if (!strcmp(c->seen[i], name))
			return true;
	return false;
}

static char *read_all(int fd)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf)
		return NULL;
	while ((n = read(fd, buf + len, cap - 1 - len)) > 0) {
		len += (size_t)n;
		if (len == cap - 1) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	buf[len] = '\0';
	return buf;
}

static void expect_families(struct __test_metadata *_metadata, const struct scrape_check *c)
{
	static const char * const want[] = {
		"MAIA_FI_DEV_UTIL", "MAIA_FI_PROF_TENSOR_ACTIVE", "MAIA_FI_DEV_POWER_USAGE",
		"MAIA_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "MAIA_FI_DEV_TEMP", "MAIA_FI_DEV_CLOCK",
		"MAIA_FI_DEV_HBM_USED", "MAIA_FI_DEV_HBM_FREE", "MAIA_FI_DEV_THROTTLE_EVENTS",
		"MAIA_FI_DEV_RESET_COUNT", "MAIA_FI_PROF_TILE_BUSY_TIME",
	};

	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const char *name = want[i];

		EXPECT_TRUE(has_family(c, name)) TH_LOG("no family %s", name);
	}
	if (!access("/sys/class/accel/accel0/device/modeled_time_ns", F_OK)) {
		static const char * const modeled[] = {
			"MAIA_FI_PROF_HBM_ACTIVE", "MAIA_FI_PROF_MFU", "MAIA_FI_PROF_MODELED_TIME",
			"MAIA_FI_PROF_ACHIEVED_TFLOPS", "MAIA_FI_DEV_MODEL_INFO",
			"MAIA_FI_DEV_PEAK_TFLOPS", "MAIA_FI_PROC_BUSY_TIME",
		};

		for (size_t i = 0; i < ARRAY_SIZE(modeled); i++) {
			const char *name = modeled[i];

			EXPECT_TRUE(has_family(c, name)) TH_LOG("no family %s", name);
		}
	}
	EXPECT_LE(10, c->samples);
	EXPECT_TRUE(c->device_label);
	EXPECT_TRUE(c->pci_label);
	EXPECT_TRUE(c->model_label);
}

/*
 * The per-process series of this process: it holds the device open
 * (self->fd), so the exporter finds its fdinfo (drm-pdev, drm-client-id,
 * drm-engine-* and maia-host-engine-*).
 */
static bool has_own_process(const char *text, const char *metric)
{
	char pid[32];
	const char *l;

	snprintf(pid, sizeof(pid), "pid=\"%d\"", getpid());
	for (l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);

		if (!strncmp(l, metric, strlen(metric)) && l[strlen(metric)] == '{' &&
		    memmem(l, len, pid, strlen(pid)))
			return true;
	}
	return false;
}

TEST_F(tm, exporter_once)
{
	struct scrape_check c;
	char cmd[PATH_MAX + 16];
	char *out;
	FILE *p;

	if (access(exporter_path(), X_OK))
		SKIP(return, "%s not found", exporter_path());
	snprintf(cmd, sizeof(cmd), "%s --once", exporter_path());
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	out = read_all(fileno(p));
	ASSERT_EQ(0, pclose(p));
	ASSERT_NE(NULL, out);
	EXPECT_TRUE(has_own_process(out, "MAIA_FI_PROC_BUSY_TIME"));
	EXPECT_TRUE(has_own_process(out, "MAIA_FI_PROC_HOST_BUSY_TIME"));
	EXPECT_TRUE(check_scrape(out, self->node.bdf, &c)) TH_LOG("bad line: %s", c.bad);
	expect_families(_metadata, &c);
	free(out);
}

static int loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0), ret = 0;

	if (s < 0)
		return -errno;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr))
			ret = -errno;
	}
	close(s);
	return ret;
}

/* GET path from 127.0.0.1:port; the whole response, or NULL. */
static char *http_get(int port, const char *path)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char req[256];
	char *resp;
	int s;

	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return NULL;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		close(s);
		return NULL;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
	if (write(s, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(s);
		return NULL;
	}
	resp = read_all(s);
	close(s);
	return resp;
}

TEST_F(tm, exporter_http)
{
	int port = 9400 + getpid() % 500;
	struct scrape_check c;
	char portarg[16];
	char *resp = NULL, *body;
	pid_t pid;

	if (access(exporter_path(), X_OK))
		SKIP(return, "%s not found", exporter_path());
	ASSERT_EQ(0, loopback_up());
	snprintf(portarg, sizeof(portarg), "%d", port);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		execl(exporter_path(), "maia-exporter", "--port", portarg, "--bind", "127.0.0.1",
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100 && !resp; i++) {
		resp = http_get(port, "/metrics");
		if (!resp)
			maia_sleep_ms(50);
	}
	ASSERT_NE(NULL, resp) TH_LOG("exporter did not answer on port %d", port);
	EXPECT_EQ(0, strncmp(resp, "HTTP/1.1 200 OK\r\n", 17)) TH_LOG("%.80s", resp);
	EXPECT_NE(NULL, strstr(resp, "Content-Type: text/plain; version=0.0.4"));
	body = strstr(resp, "\r\n\r\n");
	ASSERT_NE(NULL, body);
	EXPECT_TRUE(check_scrape(body + 4, self->node.bdf, &c)) TH_LOG("bad line: %s", c.bad);
	expect_families(_metadata, &c);
	free(resp);

	/* A second scrape (the exporter reuses its device list) is just as valid. */
	resp = http_get(port, "/metrics");
	ASSERT_NE(NULL, resp);
	body = strstr(resp, "\r\n\r\n");
	ASSERT_NE(NULL, body);
	EXPECT_TRUE(check_scrape(body + 4, self->node.bdf, &c)) TH_LOG("bad line: %s", c.bad);
	expect_families(_metadata, &c);
	free(resp);

	resp = http_get(port, "/nope");
	ASSERT_NE(NULL, resp);
	EXPECT_EQ(0, strncmp(resp, "HTTP/1.1 404", 12));
	free(resp);

	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

TEST_HARNESS_MAIN
