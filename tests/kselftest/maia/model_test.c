// SPDX-License-Identifier: GPL-2.0-only
/*
 * The chip model and modeled time (driver minor 7, hardware 1.8;
 * Documentation/hw/time-model.rst): the GET_PARAM model parameters against
 * the published figures of the preset the machine was booted with, the
 * model/ sysfs directory against GET_PARAM and the telemetry block, WAIT's
 * host_time_ns and device_time_ns, fdinfo's modeled and host engine time,
 * and determinism: the same GEMM job has the same modeled duration run
 * after run, with the guest idle and with it loaded, to the ns.
 *
 * On a device before hardware 1.8 the model parameters must read 0 and the
 * model/ directory must be absent; the tests that need modeled time skip.
 *
 * Environment: MAIA_EXPECT_MODEL, the QEMU model property (default maia100).
 */
#include <signal.h>
#include <sys/wait.h>

#include <maia/hw/tensor.h>

#include "maia_job_ksft.h"
#include "kselftest_harness.h"

#define VA_CMD		(DRM_MAIA_VA_START)
#define VA_GEMM		(DRM_MAIA_VA_START + 0x30000000ull)
#define SEC		NS_PER_SEC
#define GEMM_N		256u
#define GEMMS		8
#define TS_OFFSET	(KSFT_MIB - 64)	/* the timestamps: the end of the command BO */

/* Published figures of each preset (the table, Documentation/hw/time-model.rst). */
struct preset {
	const char *name;
	__u64 model;
	__u32 hbm_mbps;			/* HBM bandwidth */
	__u32 design_power_mw;		/* 0: not published */
	struct { __u32 dtype, gflops; } peaks[3];	/* published dense peaks */
};

static const struct preset presets[] = {
	{ "maia100", DRM_MAIA_MODEL_MAIA100, 1800000, 700000,
	  { { DRM_MAIA_DTYPE_BF16, 800000 }, { DRM_MAIA_DTYPE_MX9, 1500000 },
	    { DRM_MAIA_DTYPE_MX6, 3000000 } } },
	{ "maia200", DRM_MAIA_MODEL_MAIA200, 7000000, 0,
	  { { DRM_MAIA_DTYPE_FP8_E4M3, 5000000 }, { DRM_MAIA_DTYPE_MXFP4_E2M1, 10000000 },
	    { DRM_MAIA_DTYPE_FP8_E5M2, 5000000 } } },
};

/* The model parameters, by name as in model/ (sysfs). */
static const struct {
	__u32 param;
	const char *file;
} params[] = {
	{ DRM_MAIA_PARAM_HBM_MBPS, "hbm_mbps" },
	{ DRM_MAIA_PARAM_HOST_MBPS, "host_mbps" },
	{ DRM_MAIA_PARAM_LINK_MBPS, "link_mbps" },
	{ DRM_MAIA_PARAM_LINK_LAT_NS, "link_latency_ns" },
	{ DRM_MAIA_PARAM_CMD_NS, "command_ns" },
	{ DRM_MAIA_PARAM_JOB_NS, "job_ns" },
	{ DRM_MAIA_PARAM_VECTOR_GFLOPS, "vector_gflops" },
	{ DRM_MAIA_PARAM_CHIP_SRAM_KIB, "sram_kib" },
	{ DRM_MAIA_PARAM_DESIGN_POWER_MW, "design_power_mw" },
};

/* uAPI data type numbers and their names (libmaia's maia_dtype_name). */
static const char *const dtype_names[] = {
	"fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8", "int32", "mxfp8_e4m3",
	"mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8", "mx9", "mx6", "mx4",
};

FIXTURE(model) {
	struct maia_node node;
	int fd;
	char dev[PATH_MAX];	/* /sys/bus/pci/devices/<bdf> */
	__u64 revision;
	bool modeled;		/* hardware 1.8: a model block, modeled time */
	struct kbo cmd, gemm;
	struct kcmd cb;
};

FIXTURE_SETUP(model)
{
	self->fd = -1;
	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node");
	snprintf(self->dev, sizeof(self->dev), "/sys/bus/pci/devices/%s", self->node.bdf);
	self->fd = maia_open_node(&self->node);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_REVISION, &self->revision));
	self->modeled = (self->revision & 0xff) >= (MAIA_HW_REVISION_MODEL & 0xff);
	ASSERT_EQ(0, kbo_create(self->fd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &self->cmd));
	ASSERT_EQ(0, kbo_create(self->fd, 2 * KSFT_MIB, DRM_MAIA_BO_HBM, VA_GEMM, &self->gemm));
	self->cb.bo = &self->cmd;
}

FIXTURE_TEARDOWN(model)
{
	if (self->fd >= 0)
		close(self->fd);
}

static const struct preset *expected_preset(void)
{
	const char *want = getenv("MAIA_EXPECT_MODEL");

	if (!want || !*want)
		want = "maia100";
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (!strcmp(presets[i].name, want))
			return &presets[i];
	return NULL;
}

static __u64 param(int fd, __u32 p)
{
	__u64 v = ~0ull;

	if (maia_get_param(fd, p, &v))
		return ~0ull;
	return v;
}

static int peak(int fd, __u32 dtype, __u64 *v)
{
	struct drm_maia_get_param gp = { .param = DRM_MAIA_PARAM_PEAK_GFLOPS, .index = dtype };

	if (ioctl(fd, DRM_IOCTL_MAIA_GET_PARAM, &gp))
		return -errno;
	*v = gp.value;
	return 0;
}

/*
 * The model parameters against the published figures of the preset, and
 * against each other: a data type the tensor engine takes has a peak (but
 * INT32, which only the vector unit runs), the vector peak is below the
 * matrix ones. Before hardware 1.8 every one reads 0.
 */
TEST_F(model, params_of_the_preset)
{
	const struct preset *pr = expected_preset();
	__u64 model, v = 0, dtypes = 0;
	unsigned int d;

	ASSERT_NE(NULL, pr) TH_LOG("MAIA_EXPECT_MODEL names no preset");
	model = param(self->fd, DRM_MAIA_PARAM_MODEL);
	if (!self->modeled) {
		EXPECT_EQ(DRM_MAIA_MODEL_NONE, model);
		for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
			const char *file = params[i].file;

			EXPECT_EQ(0, param(self->fd, params[i].param)) TH_LOG("%s", file);
		}
		for (d = 0; d <= DRM_MAIA_DTYPE_MX4; d++) {
			ASSERT_EQ(0, peak(self->fd, d, &v));
			EXPECT_EQ(0, v);
		}
		SKIP(return, "hardware %llu.%llu has no chip model (1.8 has)",
		     (unsigned long long)(self->revision >> 8), (unsigned long long)(self->revision & 0xff));
	}
	EXPECT_EQ(pr->model, model) TH_LOG("model %llu, expected %s", (unsigned long long)model,
					   pr->name);
	EXPECT_EQ(pr->hbm_mbps, param(self->fd, DRM_MAIA_PARAM_HBM_MBPS));
	if (pr->design_power_mw)
		EXPECT_EQ(pr->design_power_mw, param(self->fd, DRM_MAIA_PARAM_DESIGN_POWER_MW));
	for (size_t i = 0; i < 3; i++) {
		const char *name = dtype_names[pr->peaks[i].dtype];

		ASSERT_EQ(0, peak(self->fd, pr->peaks[i].dtype, &v));
		EXPECT_EQ(pr->peaks[i].gflops, v) TH_LOG("peak of %s", name);
	}
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		const char *file = params[i].file;

		EXPECT_LT(0, param(self->fd, params[i].param)) TH_LOG("%s", file);
	}
	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_DTYPES, &dtypes));
	for (d = 0; d <= DRM_MAIA_DTYPE_MX4; d++) {
		const char *name = dtype_names[d];

		ASSERT_EQ(0, peak(self->fd, d, &v));
		if (d != DRM_MAIA_DTYPE_INT32 && (dtypes & (1ull << d))) {
			EXPECT_LT(0, v) TH_LOG("no peak for %s", name);
			EXPECT_LT(param(self->fd, DRM_MAIA_PARAM_VECTOR_GFLOPS), v)
				TH_LOG("%s below the vector peak", name);
		}
	}
	ASSERT_EQ(0, peak(self->fd, DRM_MAIA_DTYPE_BF16, &v));
	TH_LOG("%s: HBM %llu MB/s, host %llu MB/s, link %llu MB/s, BF16 %llu GFLOP/s",
	       pr->name, param(self->fd, DRM_MAIA_PARAM_HBM_MBPS),
	       param(self->fd, DRM_MAIA_PARAM_HOST_MBPS), param(self->fd, DRM_MAIA_PARAM_LINK_MBPS),
	       v);
}

/*
 * model/ in sysfs says what GET_PARAM says, its HBM capacity is the
 * device's, and the design power is the telemetry block's largest cap.
 */
TEST_F(model, sysfs_matches_params)
{
	char dir[PATH_MAX + 16], path[PATH_MAX + 64], name[32], hwmon[PATH_MAX + 300];
	const struct preset *pr = expected_preset();
	unsigned int d;
	__u64 v = 0;

	snprintf(dir, sizeof(dir), "%s/model", self->dev);
	if (!self->modeled) {
		EXPECT_NE(0, access(dir, F_OK)) TH_LOG("%s exists before hardware 1.8", dir);
		SKIP(return, "no chip model before hardware 1.8");
	}
	ASSERT_NE(NULL, pr);
	snprintf(path, sizeof(path), "%s/name", dir);
	ASSERT_EQ(0, maia_read_file(path, name, sizeof(name)));
	EXPECT_STREQ(pr->name, name);
	EXPECT_EQ((long long)param(self->fd, DRM_MAIA_PARAM_HBM_SIZE), kread_attr(dir, "hbm_bytes"));
	EXPECT_EQ(kread_attr(self->dev, "hbm_size"), kread_attr(dir, "hbm_bytes"));
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		const char *file = params[i].file;

		EXPECT_EQ((long long)param(self->fd, params[i].param),
			  kread_attr(dir, file)) TH_LOG("%s", file);
	}
	for (d = 0; d <= DRM_MAIA_DTYPE_MX4; d++) {
		char file[64];

		ASSERT_EQ(0, peak(self->fd, d, &v));
		snprintf(file, sizeof(file), "peak_gflops_%s", dtype_names[d]);
		if (v) {
			EXPECT_EQ((long long)v, kread_attr(dir, file)) TH_LOG("%s", file);
		} else {
			EXPECT_EQ(-1, kread_attr(dir, file)) TH_LOG("%s without a peak", file);
		}
	}
	/* read-only */
	snprintf(path, sizeof(path), "%s/hbm_mbps", dir);
	EXPECT_GT(0, maia_write_file(path, "1"));
	if (khwmon_dir(self->dev, hwmon, sizeof(hwmon))) {
		EXPECT_EQ((long long)param(self->fd, DRM_MAIA_PARAM_DESIGN_POWER_MW) * 1000,
			  kread_attr(hwmon, "power1_cap_max"));
	}
}

static void desc2(struct maia_tensor_desc *dsc, __u64 va, __u32 rows, __u32 cols)
{
	memset(dsc, 0, sizeof(*dsc));
	dsc->addr = va;
	dsc->dtype = MAIA_DTYPE_FP32;
	dsc->rank = 2;
	dsc->shape[0] = rows;
	dsc->shape[1] = cols;
	dsc->strides[0] = cols;
	dsc->strides[1] = 1;
}

/* The job: TIMESTAMP, GEMMS FP32 GEMMs of GEMM_N^3, TIMESTAMP. */
static void add_gemm_job(FIXTURE_DATA(model) *self)
{
	__u64 mat = (__u64)GEMM_N * GEMM_N * sizeof(float);
	struct maia_cmd_timestamp *t;

	self->cb.start = self->cb.used = 0;
	t = kcmd_add(&self->cb, MAIA_OP_TIMESTAMP, sizeof(*t));
	t->addr = VA_CMD + TS_OFFSET;
	for (int i = 0; i < GEMMS; i++) {
		struct maia_cmd_gemm *g = kcmd_add(&self->cb, MAIA_OP_GEMM, sizeof(*g));

		desc2(&g->a, VA_GEMM, GEMM_N, GEMM_N);
		desc2(&g->b, VA_GEMM + mat, GEMM_N, GEMM_N);
		desc2(&g->c, VA_GEMM + 2 * mat, GEMM_N, GEMM_N);
	}
	t = kcmd_add(&self->cb, MAIA_OP_TIMESTAMP, sizeof(*t));
	t->addr = VA_CMD + TS_OFFSET + 8;
}

/* Runs the GEMM job; its WAIT result and its TIMESTAMP difference. */
static int run_gemm_job(FIXTURE_DATA(model) *self, struct drm_maia_wait *w, __u64 *ts_ns)
{
	volatile __u64 *ts = (void *)((char *)self->cmd.cpu + TS_OFFSET);
	__u64 seqno = 0;
	int ret;

	add_gemm_job(self);
	ts[0] = ts[1] = 0;
	ret = kcmd_submit(self->fd, &self->cb, NULL, &seqno);
	if (!ret)
		ret = kwait(self->fd, seqno, 60 * SEC, w);
	self->cb.start = self->cb.used = 0;
	*ts_ns = ts[1] - ts[0];
	return ret ? ret : (int)w->status;
}

/* WAIT: the device time of a job and the host time from its SUBMIT to its end. */
TEST_F(model, wait_times)
{
	struct drm_maia_wait w;
	__s64 t0, wall;
	__u64 ts;

	t0 = kmono_ns();
	ASSERT_EQ(DRM_MAIA_JOB_OK, run_gemm_job(self, &w, &ts));
	wall = kmono_ns() - t0;
	EXPECT_LT(0, w.host_time_ns);
	EXPECT_GE(wall, (__s64)w.host_time_ns);
	EXPECT_LT(0, w.device_time_ns);
	EXPECT_LT(0, ts);
	if (self->modeled) {
		/* A job costs its fixed overhead and each command its own, at least. */
		__u64 floor = param(self->fd, DRM_MAIA_PARAM_CMD_NS) * GEMMS;

		EXPECT_LE(floor, w.device_time_ns);
		EXPECT_LE(ts, w.device_time_ns);
	}
	TH_LOG("%d GEMMs %u^3 FP32: device %llu ns (%s), TIMESTAMP %llu ns, host %llu ns", GEMMS,
	       GEMM_N, (unsigned long long)w.device_time_ns, self->modeled ? "modeled" : "device clock",
	       (unsigned long long)ts, (unsigned long long)w.host_time_ns);
}

/* Sum of the fdinfo values of keys starting with prefix, in ns; -1 if none. */
static long long fdinfo_sum(int fd, const char *prefix)
{
	char path[64], line[256];
	long long sum = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!v || strncmp(line, prefix, strlen(prefix)))
			continue;
		sum = (sum < 0 ? 0 : sum) + strtoll(v + 1, NULL, 10);
	}
	fclose(f);
	return sum;
}

/*
 * fdinfo: drm-engine-queueN is the device time of the file's jobs
 * (modeled on hardware 1.8), maia-host-engine-queueN the host time the
 * queues spent on them; both grow by a job's worth.
 */
TEST_F(model, fdinfo_engine_times)
{
	long long dev0 = fdinfo_sum(self->fd, "drm-engine-queue");
	long long host0 = fdinfo_sum(self->fd, "maia-host-engine-queue");
	struct drm_maia_wait w;
	__u64 ts;

	ASSERT_LE(0, dev0);
	ASSERT_LE(0, host0) TH_LOG("no maia-host-engine-queue keys in fdinfo");
	ASSERT_EQ(DRM_MAIA_JOB_OK, run_gemm_job(self, &w, &ts));
	EXPECT_EQ(dev0 + (long long)w.device_time_ns, fdinfo_sum(self->fd, "drm-engine-queue"));
	EXPECT_LT(host0, fdinfo_sum(self->fd, "maia-host-engine-queue"));
	EXPECT_GE(host0 + (long long)w.host_time_ns, fdinfo_sum(self->fd, "maia-host-engine-queue"));
}

/* Burns a CPU until killed: the loaded host. */
static pid_t spin(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		volatile unsigned long x = 0;

		for (;;)
			x++;
	}
	return pid;
}

/*
 * Determinism: the same GEMM job has the same modeled duration, in WAIT
 * and between its own TIMESTAMPs, five times with the guest idle and five
 * times with both of its CPUs busy with other work, while the host time
 * it takes varies. The clock is at nominal throughout (the job is far too
 * short to throttle; a clock left low by earlier work is settled first).
 */
TEST_F(model, gemm_modeled_time_repeatable)
{
	__u64 dev_ns[10], ts_ns[10], host_min = ~0ull, host_max = 0;
	struct drm_maia_wait w;
	pid_t burners[2] = { -1, -1 };
	float *a = self->gemm.cpu;
	long long spread = 0;

	if (!self->modeled)
		SKIP(return, "device time is host-paced before hardware 1.8");
	for (unsigned int i = 0; i < 2 * GEMM_N * GEMM_N; i++)
		a[i] = (float)(i % 5) - 2.0f;
	ASSERT_EQ(0, ksettle_clock(self->fd, &self->cb, self->dev));
	for (int i = 0; i < 10; i++) {
		if (i == 5) {
			burners[0] = spin();
			burners[1] = spin();
			ASSERT_LT(0, burners[0]);
			ASSERT_LT(0, burners[1]);
		}
		ASSERT_EQ(DRM_MAIA_JOB_OK, run_gemm_job(self, &w, &ts_ns[i]));
		dev_ns[i] = w.device_time_ns;
		host_min = w.host_time_ns < host_min ? w.host_time_ns : host_min;
		host_max = w.host_time_ns > host_max ? w.host_time_ns : host_max;
		EXPECT_EQ(0, kread_attr(self->dev, "throttle_reasons")) TH_LOG("run %d", i);
	}
	for (int i = 0; i < 2; i++) {
		kill(burners[i], SIGKILL);
		waitpid(burners[i], NULL, 0);
	}
	/* Identical to the ns, wherever each job fell between the control periods. */
	for (int i = 1; i < 10; i++) {
		long long dd = (long long)(dev_ns[i] - dev_ns[0]);
		long long dt = (long long)(ts_ns[i] - ts_ns[0]);

		spread = dd < 0 ? (-dd > spread ? -dd : spread) : (dd > spread ? dd : spread);
		EXPECT_EQ(0, dd) TH_LOG("run %d: %llu ns, run 0: %llu ns", i,
						       (unsigned long long)dev_ns[i],
						       (unsigned long long)dev_ns[0]);
		EXPECT_EQ(0, dt) TH_LOG("run %d: TIMESTAMPs %llu ns apart, run 0: %llu",
						       i, (unsigned long long)ts_ns[i],
						       (unsigned long long)ts_ns[0]);
	}
	TH_LOG("modeled %llu ns (TIMESTAMPs %llu ns), largest difference over 10 runs %lld ns "
	       "(5 idle, 5 loaded); host %llu .. %llu us", (unsigned long long)dev_ns[0],
	       (unsigned long long)ts_ns[0], spread, (unsigned long long)host_min / 1000,
	       (unsigned long long)host_max / 1000);
}

TEST_HARNESS_MAIN
