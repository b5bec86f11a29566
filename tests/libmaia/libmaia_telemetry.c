// SPDX-License-Identifier: MIT
/*
 * libmaia's telemetry API (maia_telemetry_read, maia_device_telemetry,
 * maia_device_list). On the real device (in the guest): every value against
 * the driver's sysfs and hwmon files read directly, counters moving under a
 * DMA job, argument errors and addresses that are not a Maia device. On a
 * fake sysfs tree (MAIA_SYSFS_ROOT, runs anywhere): missing and malformed
 * files, hex values, the tile list and its cap, a device that goes away.
 * The chip model and modeled telemetry (since 1.8: maia_device_model,
 * maia_model_read, maia_telemetry_read_modeled, maia_modeled_rates) on the
 * device against GET_PARAM, the files and the closed-form flops of a GEMM
 * job, and on the fake tree.
 * kselftest harness, TAP output.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "libmaia.h"
#include "maia/hw/regs.h"

#define SEC	1000000000ll

/* ---- helpers ------------------------------------------------------------ */

/* One number (decimal or 0x hex) from dir/attr, or -1. */
static long long read_ll(const char *dir, const char *attr)
{
	char path[PATH_MAX];
	long long v;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%lli", &v) == 1;
	fclose(f);
	return ok ? v : -1;
}

/* The first hwmonN directory of the PCI device, or "" (as the driver has one). */
static void hwmon_dir(const char *dev_dir, char *out, size_t size)
{
	char dir[PATH_MAX / 2];
	struct dirent *de;
	DIR *dp;

	out[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/hwmon", dev_dir);
	dp = opendir(dir);
	if (!dp)
		return;
	while ((de = readdir(dp)))
		if (!strncmp(de->d_name, "hwmon", 5)) {
			snprintf(out, size, "%s/%.200s", dir, de->d_name);
			break;
		}
	closedir(dp);
}

/* tile_busy_time_us as numbers; how many. */
static int read_tiles(const char *dev_dir, unsigned long long *us, int max)
{
	char path[PATH_MAX];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tile_busy_time_us", dev_dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (n < max && fscanf(f, "%llu", &us[n]) == 1)
		n++;
	fclose(f);
	return n;
}

static int write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -errno;
	ok = fputs(s, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

/* ---- on the device --------------------------------------------------------- */

FIXTURE(tm) {
	struct maia_device *dev;
	struct maia_device_info info;
	char dir[256];			/* /sys/bus/pci/devices/<pci> */
	char hwmon[PATH_MAX];
};

FIXTURE_SETUP(tm)
{
	int err = maia_device_open(0, &self->dev);

	if (err == -ENODEV)
		SKIP(return, "no Maia device");
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, maia_device_info(self->dev, &self->info));
	snprintf(self->dir, sizeof(self->dir), "/sys/bus/pci/devices/%s",
		 self->info.pci_address);
	hwmon_dir(self->dir, self->hwmon, sizeof(self->hwmon));
	ASSERT_STRNE("", self->hwmon);
}

FIXTURE_TEARDOWN(tm)
{
	maia_device_close(self->dev);
}

/*
 * Values that do not move on an idle device are equal to the file; the
 * others lie between a read of the file before and one after.
 */
TEST_F(tm, values_match_sysfs)
{
	static const struct {
		const char *file;
		bool hwmon;
		uint64_t bit;
		size_t off;
		bool exact;		/* constant on an idle device */
	} files[] = {
#define F(file, hw, bit, field, exact) \
	{ file, hw, bit, offsetof(struct maia_telemetry, field), exact }
		F("power1_average", true, MAIA_TM_POWER, power_uw, false),
		F("power1_input", true, MAIA_TM_POWER_INSTANT, power_instant_uw, false),
		F("power1_cap", true, MAIA_TM_POWER_CAP, power_cap_uw, true),
		F("energy1_input", true, MAIA_TM_ENERGY, energy_uj, false),
		F("temp1_input", true, MAIA_TM_TEMP, temp_mc, false),
		F("freq1_input", true, MAIA_TM_CLOCK, clock_hz, false),
		F("utilization", false, MAIA_TM_UTILIZATION, utilization_pct, false),
		F("tensor_utilization", false, MAIA_TM_TENSOR_UTILIZATION,
		  tensor_utilization_pct, false),
		F("throttle_reasons", false, MAIA_TM_THROTTLE_REASONS, throttle_reasons, false),
		F("throttle_count", false, MAIA_TM_THROTTLE_COUNT, throttle_count, false),
		F("throttled_time_us", false, MAIA_TM_THROTTLED_TIME, throttled_time_us, false),
		F("busy_time_us", false, MAIA_TM_BUSY_TIME, busy_time_us, false),
		F("tensor_busy_time_us", false, MAIA_TM_TENSOR_BUSY_TIME, tensor_busy_time_us,
		  false),
		F("vector_busy_time_us", false, MAIA_TM_VECTOR_BUSY_TIME, vector_busy_time_us,
		  false),
		F("dma_busy_time_us", false, MAIA_TM_DMA_BUSY_TIME, dma_busy_time_us, false),
		F("hbm_bytes_read", false, MAIA_TM_HBM_READ, hbm_bytes_read, false),
		F("hbm_bytes_written", false, MAIA_TM_HBM_WRITTEN, hbm_bytes_written, false),
		F("dma_bytes", false, MAIA_TM_DMA_BYTES, dma_bytes, false),
		F("flops", false, MAIA_TM_FLOPS, flops, false),
		F("commands", false, MAIA_TM_COMMANDS, commands, false),
		F("hbm_used_bytes", false, MAIA_TM_HBM_USED, hbm_used_bytes, true),
		F("hbm_free_bytes", false, MAIA_TM_HBM_FREE, hbm_free_bytes, true),
		F("hbm_size", false, MAIA_TM_HBM_TOTAL, hbm_total_bytes, true),
		F("reset_count", false, MAIA_TM_RESET_COUNT, reset_count, true),
		F("hbm_ecc_ce_count", false, MAIA_TM_ECC_CE, ecc_ce_count, true),
		F("hbm_ecc_ue_count", false, MAIA_TM_ECC_UE, ecc_ue_count, true),
		F("hbm_retired_pages", false, MAIA_TM_RETIRED_PAGES, retired_pages, true),
		F("hbm_retired_pages_pending", false, MAIA_TM_RETIRED_PENDING,
		  retired_pages_pending, true),
#undef F
	};
	static struct maia_telemetry t;
	static long long before[32], after[32];
	static unsigned long long tb[MAIA_TELEMETRY_MAX_TILES], ta[MAIA_TELEMETRY_MAX_TILES];
	int nb, na;
	size_t i;

	ASSERT_GE(32, ARRAY_SIZE(files));
	for (i = 0; i < ARRAY_SIZE(files); i++)
		before[i] = read_ll(files[i].hwmon ? self->hwmon : self->dir, files[i].file);
	nb = read_tiles(self->dir, tb, MAIA_TELEMETRY_MAX_TILES);
	ASSERT_EQ(0, maia_telemetry_read(self->info.pci_address, &t));
	for (i = 0; i < ARRAY_SIZE(files); i++)
		after[i] = read_ll(files[i].hwmon ? self->hwmon : self->dir, files[i].file);
	na = read_tiles(self->dir, ta, MAIA_TELEMETRY_MAX_TILES);

	EXPECT_EQ(self->info.index, t.index);
	EXPECT_STREQ(self->info.pci_address, t.pci_address);
	EXPECT_NE(0u, t.timestamp_ns);
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		long long v, lo = before[i] < after[i] ? before[i] : after[i];
		long long hi = before[i] < after[i] ? after[i] : before[i];

		memcpy(&v, (const char *)&t + files[i].off, sizeof(v));
		ASSERT_LE(0, before[i]) TH_LOG("%s unreadable", files[i].file);
		EXPECT_TRUE(t.valid & files[i].bit) TH_LOG("%s not valid", files[i].file);
		if (files[i].exact)
			EXPECT_EQ(before[i], v) TH_LOG("%s", files[i].file);
		EXPECT_TRUE(v >= lo && v <= hi)
			TH_LOG("%s: %lld not in [%lld, %lld]", files[i].file, v, lo, hi);
	}
	EXPECT_EQ(self->info.hbm_size, t.hbm_total_bytes);
	EXPECT_EQ(t.hbm_total_bytes, t.hbm_used_bytes + t.hbm_free_bytes);

	EXPECT_TRUE(t.valid & MAIA_TM_TOPOLOGY);
	EXPECT_EQ(self->info.clusters, t.clusters);
	EXPECT_EQ(self->info.tiles_per_cluster, t.tiles_per_cluster);
	EXPECT_TRUE(t.valid & MAIA_TM_TILES);
	EXPECT_EQ(self->info.clusters * self->info.tiles_per_cluster, t.num_tiles);
	ASSERT_EQ(nb, na);
	ASSERT_EQ(nb, (int)t.num_tiles);
	for (i = 0; i < t.num_tiles; i++)
		EXPECT_TRUE(t.tile_busy_us[i] >= tb[i] && t.tile_busy_us[i] <= ta[i])
			TH_LOG("tile %zu: %llu not in [%llu, %llu]", i,
			       (unsigned long long)t.tile_busy_us[i], tb[i], ta[i]);
}

/* A DMA copy moves the counters by what it did; both entry points agree. */
TEST_F(tm, counters_follow_a_job)
{
	static struct maia_telemetry t0, t1, t2;
	struct maia_cmdbuf *cb;
	struct maia_bo *bo;
	uint64_t va;

	ASSERT_EQ(0, maia_bo_create(self->dev, 1 << 20, MAIA_BO_HBM, &bo));
	ASSERT_EQ(0, maia_cmdbuf_create(self->dev, 4096, &cb));
	va = maia_bo_va(bo);
	ASSERT_EQ(0, maia_device_telemetry(self->dev, &t0));
	ASSERT_EQ(0, maia_cmd_copy(cb, va + (512 << 10), va, 256 << 10));
	ASSERT_EQ(0, maia_run(self->dev, cb, 30 * SEC, NULL));
	ASSERT_EQ(0, maia_device_telemetry(self->dev, &t1));
	ASSERT_EQ(0, maia_telemetry_read(self->info.pci_address, &t2));

	EXPECT_EQ(256u << 10, t1.dma_bytes - t0.dma_bytes);
	EXPECT_EQ(256u << 10, t1.hbm_bytes_read - t0.hbm_bytes_read);
	EXPECT_EQ(256u << 10, t1.hbm_bytes_written - t0.hbm_bytes_written);
	EXPECT_LE(1u, t1.commands - t0.commands);
	EXPECT_LE(t0.energy_uj, t1.energy_uj);
	EXPECT_LE(t0.dma_busy_time_us, t1.dma_busy_time_us);
	/* the BO is allocated in HBM */
	EXPECT_LE(1u << 20, t0.hbm_used_bytes);
	EXPECT_LT(t0.timestamp_ns, t1.timestamp_ns);
	EXPECT_LE(t1.timestamp_ns, t2.timestamp_ns);
	EXPECT_LE(t1.commands, t2.commands);
	EXPECT_EQ(t1.valid, t2.valid);
	maia_cmdbuf_destroy(cb);
	maia_bo_destroy(bo);
}

/*
 * The chip model from GET_PARAM and from sysfs agree, and with the device
 * info; a device before hardware 1.8 has none either way.
 */
TEST_F(tm, device_model)
{
	struct maia_device_model a, b;
	int ea, eb;

	memset(&a, 0x5a, sizeof(a));
	memset(&b, 0xa5, sizeof(b));
	ea = maia_device_model(self->dev, &a);
	eb = maia_model_read(self->info.pci_address, &b);
	if ((self->info.revision & 0xff) < (MAIA_HW_REVISION_MODEL & 0xff)) {
		EXPECT_EQ(-EOPNOTSUPP, ea);
		EXPECT_EQ(-EOPNOTSUPP, eb);
		SKIP(return, "hardware before 1.8 has no chip model");
	}
	ASSERT_EQ(0, ea) TH_LOG("%s", maia_last_error());
	ASSERT_EQ(0, eb) TH_LOG("%s", maia_last_error());
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
	EXPECT_TRUE(a.model == MAIA_MODEL_MAIA100 || a.model == MAIA_MODEL_MAIA200);
	EXPECT_STREQ(a.model == MAIA_MODEL_MAIA100 ? "maia100" : "maia200", a.name);
	EXPECT_EQ(self->info.hbm_size, a.hbm_bytes);
	EXPECT_LT(0u, a.hbm_mbps);
	EXPECT_LT(0u, a.host_mbps);
	EXPECT_LT(0u, a.design_power_mw);
	EXPECT_LT(0u, a.peak_gflops[MAIA_DTYPE_BF16]);
	EXPECT_EQ(0u, a.peak_gflops[MAIA_DTYPE_INT32]);
	TH_LOG("%s: HBM %u MB/s, host %u MB/s, BF16 %u GFLOP/s, %u mW design", a.name,
	       a.hbm_mbps, a.host_mbps, a.peak_gflops[MAIA_DTYPE_BF16], a.design_power_mw);
}

static void fp32_desc(struct maia_tensor_desc *d, uint64_t va, uint32_t n)
{
	const uint32_t shape[2] = { n, n };

	if (maia_tensor_init(d, va, MAIA_DTYPE_FP32, 2, shape))
		abort();
}

/*
 * Rates over a GEMM job from two modeled snapshots: the flops are the
 * closed-form 2 N^3 per GEMM, the achieved rate is never above the FP32
 * peak, MFU is in (0, 1]; no modeled time between two snapshots is -EAGAIN.
 */
TEST_F(tm, modeled_rates_of_a_gemm_job)
{
	const uint32_t n = 128, gemms = 16;
	struct maia_telemetry_modeled a, b;
	struct maia_device_model m;
	struct maia_tensor_desc da, db, dc;
	struct maia_modeled_rates r;
	struct maia_cmdbuf *cb;
	struct maia_bo *bo;
	uint64_t va, mat = (uint64_t)n * n * 4;

	if (maia_device_model(self->dev, &m))
		SKIP(return, "no chip model: telemetry is not modeled");
	ASSERT_EQ(0, maia_bo_create(self->dev, 3 * mat, MAIA_BO_HBM, &bo));
	ASSERT_EQ(0, maia_cmdbuf_create(self->dev, 64 << 10, &cb));
	va = maia_bo_va(bo);
	fp32_desc(&da, va, n);
	fp32_desc(&db, va + mat, n);
	fp32_desc(&dc, va + 2 * mat, n);
	for (uint32_t i = 0; i < gemms; i++)
		ASSERT_EQ(0, maia_cmd_gemm(cb, &da, &db, &dc, 1.0f, 0.0f, 0));
	ASSERT_EQ(0, maia_telemetry_read_modeled(self->info.pci_address, &a));
	ASSERT_EQ(0, maia_run(self->dev, cb, 60 * SEC, NULL));
	ASSERT_EQ(0, maia_telemetry_read_modeled(self->info.pci_address, &b));
	EXPECT_EQ(-EAGAIN, maia_modeled_rates(&b, &b, &r));
	EXPECT_EQ(-EINVAL, maia_modeled_rates(&b, &a, &r));
	ASSERT_EQ(0, maia_modeled_rates(&a, &b, &r));
	EXPECT_EQ(2ull * n * n * n * gemms, b.flops - a.flops);
	EXPECT_LT(0.0, r.tflops);
	EXPECT_GE(m.peak_gflops[MAIA_DTYPE_FP32] / 1e3, r.tflops);
	EXPECT_LT(0.0, r.mfu);
	EXPECT_GE(1.0, r.mfu);
	EXPECT_LT(0.0, r.hbm_gbps);
	EXPECT_GE(m.hbm_mbps / 1e3 + 1e-9, r.hbm_gbps);
	EXPECT_GE(100u, b.hbm_utilization_pct);
	EXPECT_GE(100u, b.mfu_pct);
	TH_LOG("%u GEMMs %u^3 FP32: %.3f TFLOP/s, MFU %.2f %%, HBM %.1f GB/s over %.1f us modeled",
	       gemms, n, r.tflops, 100 * r.mfu, r.hbm_gbps, r.modeled_s * 1e6);
	maia_cmdbuf_destroy(cb);
	maia_bo_destroy(bo);
}

TEST_F(tm, short_pci_address)
{
	static struct maia_telemetry t;
	const char *bdf = strchr(self->info.pci_address, ':') + 1;	/* "bb:dd.f" */

	ASSERT_EQ(0, maia_telemetry_read(bdf, &t));
	EXPECT_STREQ(self->info.pci_address, t.pci_address);
	EXPECT_EQ(self->info.index, t.index);
}

TEST_F(tm, device_list)
{
	struct maia_device_entry e[64];
	int n = maia_device_list(e, 64), i, found = 0;

	ASSERT_EQ(maia_device_count(), n);
	for (i = 0; i < n; i++)
		if (e[i].index == self->info.index) {
			EXPECT_STREQ(self->info.pci_address, e[i].pci_address);
			found++;
		}
	EXPECT_EQ(1, found);
	EXPECT_EQ(0, maia_device_list(e, 0));
	EXPECT_EQ(1, maia_device_list(e, 1));
}

TEST(bad_arguments)
{
	static struct maia_telemetry t;
	struct maia_device_entry e;

	EXPECT_EQ(-EINVAL, maia_telemetry_read(NULL, &t));
	EXPECT_EQ(-EINVAL, maia_telemetry_read("0000:00:01.0", NULL));
	EXPECT_STRNE("", maia_last_error());
	EXPECT_EQ(-EINVAL, maia_device_telemetry(NULL, &t));
	EXPECT_EQ(-EINVAL, maia_device_list(NULL, 1));
	EXPECT_EQ(-EINVAL, maia_device_list(&e, -1));
	EXPECT_EQ(0, maia_device_list(NULL, 0) < 0);
}

/* Addresses that are not a Maia device: -ENODEV, t untouched, a message. */
TEST(not_a_maia_device)
{
	static const char * const bad[] = {
		"ffff:ff:1f.7", "", "0000:00:00.0" /* the host bridge */, "..", "../..",
		"0000:00:01.0/../../..", "garbage",
	};
	static struct maia_telemetry t;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(&t, 0xa5, sizeof(t));
		EXPECT_EQ(-ENODEV, maia_telemetry_read(bad[i], &t)) TH_LOG("'%s'", bad[i]);
		EXPECT_STRNE("", maia_last_error());
		EXPECT_EQ(0xa5a5a5a5a5a5a5a5ull, t.valid);
	}
}

/* ---- on a fake sysfs tree -------------------------------------------------- */

FIXTURE(fake) {
	char root[64];
	char dev0[256];		/* accel0: 0000:00:01.0, maia, everything */
	char dev2[256];		/* accel2: 0000:00:03.0, maia, some files */
};

static void put(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (write_file(path, text))
		abort();
}

static void mkdirs(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(tmp, 0755);
			*p = '/';
		}
	mkdir(tmp, 0755);
}

/* accelN -> the PCI device, its driver link -> drv: as the kernel lays it out. */
static void fake_device(const char *root, int n, const char *pci, const char *drv,
			char *dev_dir, size_t size)
{
	char path[PATH_MAX], target[PATH_MAX];

	snprintf(dev_dir, size, "%s/bus/pci/devices/%s", root, pci);
	mkdirs(dev_dir);
	snprintf(path, sizeof(path), "%s/bus/pci/drivers/%s", root, drv);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/driver", dev_dir);
	snprintf(target, sizeof(target), "../../../bus/pci/drivers/%s", drv);
	if (symlink(target, path))
		abort();
	snprintf(path, sizeof(path), "%s/class/accel/accel%d", root, n);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/class/accel/accel%d/device", root, n);
	snprintf(target, sizeof(target), "../../../bus/pci/devices/%s", pci);
	if (symlink(target, path))
		abort();
}

FIXTURE_SETUP(fake)
{
	char other[256], hw[PATH_MAX];

	snprintf(self->root, sizeof(self->root), "/tmp/maia-fake-sysfs.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->root));
	fake_device(self->root, 0, "0000:00:01.0", "maia", self->dev0, sizeof(self->dev0));
	fake_device(self->root, 1, "0000:00:02.0", "other", other, sizeof(other));
	fake_device(self->root, 2, "0000:00:03.0", "maia", self->dev2, sizeof(self->dev2));

	put(self->dev0, "utilization", "42\n");
	put(self->dev0, "tensor_utilization", "17\n");
	put(self->dev0, "throttle_reasons", "0x3\n");
	put(self->dev0, "throttle_count", "5\n");
	put(self->dev0, "busy_time_us", "18446744073709551615\n");	/* 2^64 - 1 */
	put(self->dev0, "hbm_used_bytes", "1048576\n");
	put(self->dev0, "hbm_free_bytes", "68718428160\n");
	put(self->dev0, "hbm_size", "68719476736\n");
	put(self->dev0, "reset_count", "2\n");
	put(self->dev0, "topology", "2x3\n");
	put(self->dev0, "tile_busy_time_us", "1 2 3 4 5 600000\n");
	snprintf(hw, sizeof(hw), "%s/hwmon/hwmon7", self->dev0);
	mkdirs(hw);
	put(hw, "power1_average", "123456789\n");
	put(hw, "power1_cap", "500000000\n");
	put(hw, "energy1_input", "987654321012\n");
	put(hw, "temp1_input", "-5250\n");
	put(hw, "freq1_input", "1500000000\n");

	put(self->dev2, "utilization", "7");			/* no newline: fine */
	put(self->dev2, "busy_time_us", "bogus\n");		/* malformed */
	put(self->dev2, "commands", "12 34\n");			/* trailing junk */
	put(self->dev2, "flops", "-1\n");			/* negative counter */
	put(self->dev2, "dma_bytes", "\n");			/* empty */
	put(self->dev2, "hbm_bytes_read", "99999999999999999999\n");	/* > 2^64 */
	put(self->dev2, "topology", "16x\n");			/* malformed */

	/* accel0 has a chip model and modeled telemetry (hardware 1.8) */
	put(self->dev0, "modeled_time_ns", "2000000000\n");
	put(self->dev0, "peak_time_ns", "500000000\n");
	put(self->dev0, "hbm_utilization", "96\n");
	put(self->dev0, "mfu", "25\n");
	put(self->dev0, "flops", "400000000000000\n");
	put(self->dev0, "hbm_bytes_read", "3000000000\n");
	put(self->dev0, "hbm_bytes_written", "1000000000\n");
	snprintf(hw, sizeof(hw), "%s/model", self->dev0);
	mkdirs(hw);
	put(hw, "name", "maia200\n");
	put(hw, "hbm_bytes", "231928233984\n");
	put(hw, "hbm_mbps", "7000000\n");
	put(hw, "link_latency_ns", "1000\n");
	put(hw, "design_power_mw", "900000\n");
	put(hw, "peak_gflops_mxfp4_e2m1", "10000000\n");
	put(hw, "peak_gflops_fp8_e4m3", "bogus\n");		/* malformed: left 0 */
	ASSERT_EQ(0, setenv("MAIA_SYSFS_ROOT", self->root, 1));
}

FIXTURE_TEARDOWN(fake)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->root);
	if (system(cmd))
		TH_LOG("could not remove %s", self->root);
}

TEST_F(fake, all_values)
{
	static struct maia_telemetry t;

	ASSERT_EQ(0, maia_telemetry_read("0000:00:01.0", &t));
	EXPECT_EQ(0, t.index);
	EXPECT_STREQ("0000:00:01.0", t.pci_address);
	EXPECT_EQ(MAIA_TM_POWER | MAIA_TM_POWER_CAP | MAIA_TM_ENERGY | MAIA_TM_TEMP |
		  MAIA_TM_CLOCK | MAIA_TM_UTILIZATION | MAIA_TM_TENSOR_UTILIZATION |
		  MAIA_TM_THROTTLE_REASONS | MAIA_TM_THROTTLE_COUNT | MAIA_TM_BUSY_TIME |
		  MAIA_TM_HBM_USED | MAIA_TM_HBM_FREE | MAIA_TM_HBM_TOTAL |
		  MAIA_TM_RESET_COUNT | MAIA_TM_TOPOLOGY | MAIA_TM_TILES | MAIA_TM_FLOPS |
		  MAIA_TM_HBM_READ | MAIA_TM_HBM_WRITTEN, t.valid);
	EXPECT_EQ(123456789u, t.power_uw);
	EXPECT_EQ(0u, t.power_instant_uw);		/* no power1_input */
	EXPECT_EQ(500000000u, t.power_cap_uw);
	EXPECT_EQ(987654321012ull, t.energy_uj);
	EXPECT_EQ(-5250, t.temp_mc);
	EXPECT_EQ(1500000000u, t.clock_hz);
	EXPECT_EQ(42u, t.utilization_pct);
	EXPECT_EQ(17u, t.tensor_utilization_pct);
	EXPECT_EQ(3u, t.throttle_reasons);
	EXPECT_EQ(5u, t.throttle_count);
	EXPECT_EQ(UINT64_MAX, t.busy_time_us);
	EXPECT_EQ(1048576u, t.hbm_used_bytes);
	EXPECT_EQ(68718428160ull, t.hbm_free_bytes);
	EXPECT_EQ(68719476736ull, t.hbm_total_bytes);
	EXPECT_EQ(2u, t.reset_count);
	EXPECT_EQ(2u, t.clusters);
	EXPECT_EQ(3u, t.tiles_per_cluster);
	ASSERT_EQ(6u, t.num_tiles);
	EXPECT_EQ(1u, t.tile_busy_us[0]);
	EXPECT_EQ(5u, t.tile_busy_us[4]);
	EXPECT_EQ(600000u, t.tile_busy_us[5]);
	EXPECT_EQ(0u, t.tile_busy_us[6]);
}

/* Missing and malformed files leave their bit clear and the value 0, no error. */
TEST_F(fake, missing_and_malformed)
{
	static struct maia_telemetry t;

	memset(&t, 0xa5, sizeof(t));
	ASSERT_EQ(0, maia_telemetry_read("00:03.0", &t));
	EXPECT_EQ(2, t.index);
	EXPECT_STREQ("0000:00:03.0", t.pci_address);
	EXPECT_EQ(MAIA_TM_UTILIZATION, t.valid);	/* no hwmon, no tiles, bad topology */
	EXPECT_EQ(7u, t.utilization_pct);
	EXPECT_EQ(0u, t.busy_time_us);
	EXPECT_EQ(0u, t.commands);
	EXPECT_EQ(0u, t.flops);
	EXPECT_EQ(0u, t.dma_bytes);
	EXPECT_EQ(0u, t.hbm_bytes_read);
	EXPECT_EQ(0u, t.power_uw);
	EXPECT_EQ(0, t.temp_mc);
	EXPECT_EQ(0u, t.clusters);
	EXPECT_EQ(0u, t.num_tiles);
}

/* The model/ directory and the modeled files; a device without them. */
TEST_F(fake, model_and_modeled)
{
	struct maia_telemetry_modeled a, b;
	struct maia_modeled_rates r;
	struct maia_device_model m;

	memset(&m, 0xa5, sizeof(m));
	ASSERT_EQ(0, maia_model_read("0000:00:01.0", &m));
	EXPECT_EQ(MAIA_MODEL_MAIA200, m.model);
	EXPECT_STREQ("maia200", m.name);
	EXPECT_EQ(231928233984ull, m.hbm_bytes);
	EXPECT_EQ(7000000u, m.hbm_mbps);
	EXPECT_EQ(0u, m.host_mbps);			/* no file */
	EXPECT_EQ(1000u, m.link_lat_ns);
	EXPECT_EQ(900000u, m.design_power_mw);
	EXPECT_EQ(10000000u, m.peak_gflops[MAIA_DTYPE_MXFP4_E2M1]);
	EXPECT_EQ(0u, m.peak_gflops[MAIA_DTYPE_FP8_E4M3]);
	EXPECT_EQ(0u, m.peak_gflops[MAIA_DTYPE_BF16]);
	EXPECT_EQ(-EOPNOTSUPP, maia_model_read("0000:00:03.0", &m));
	EXPECT_EQ(-ENODEV, maia_model_read("0000:00:02.0", &m));
	EXPECT_EQ(-EINVAL, maia_model_read(NULL, &m));

	ASSERT_EQ(0, maia_telemetry_read_modeled("0000:00:01.0", &a));
	EXPECT_EQ(MAIA_TMM_MODELED_TIME | MAIA_TMM_PEAK_TIME | MAIA_TMM_HBM_UTILIZATION |
		  MAIA_TMM_MFU | MAIA_TMM_FLOPS | MAIA_TMM_HBM_BYTES | MAIA_TMM_BUSY_TIME, a.valid);
	EXPECT_EQ(2000000000u, a.modeled_time_ns);
	EXPECT_EQ(96u, a.hbm_utilization_pct);
	EXPECT_EQ(25u, a.mfu_pct);
	EXPECT_EQ(4000000000ull, a.hbm_bytes);
	/* since power-on: from zero counters */
	memset(&b, 0, sizeof(b));
	b.valid = a.valid;
	b.busy_time_us = 0;
	a.busy_time_us = 1000000;
	ASSERT_EQ(0, maia_modeled_rates(&b, &a, &r));
	EXPECT_EQ(2.0, r.modeled_s);
	EXPECT_EQ(200.0, r.tflops);
	EXPECT_EQ(0.25, r.mfu);
	EXPECT_EQ(2.0, r.hbm_gbps);
	EXPECT_EQ(0.5, r.busy);
	/* accel2 has no modeled time: nothing valid, and no rates from it */
	ASSERT_EQ(0, maia_telemetry_read_modeled("0000:00:03.0", &b));
	EXPECT_EQ(0u, b.valid);
	EXPECT_EQ(-EINVAL, maia_modeled_rates(&b, &a, &r));
}

/* Bound to another driver, or no such device: -ENODEV. */
TEST_F(fake, not_maia)
{
	static struct maia_telemetry t;

	EXPECT_EQ(-ENODEV, maia_telemetry_read("0000:00:02.0", &t));
	EXPECT_EQ(-ENODEV, maia_telemetry_read("0000:00:04.0", &t));
	EXPECT_EQ(-ENODEV, maia_telemetry_read("01.0", &t));	/* not a short address */
}

TEST_F(fake, list)
{
	struct maia_device_entry e[4];

	memset(e, 0, sizeof(e));
	ASSERT_EQ(2, maia_device_list(e, 4));
	EXPECT_EQ(0, e[0].index);
	EXPECT_STREQ("0000:00:01.0", e[0].pci_address);
	EXPECT_EQ(2, e[1].index);
	EXPECT_STREQ("0000:00:03.0", e[1].pci_address);
	EXPECT_EQ(0, e[2].index);
	EXPECT_EQ(1, maia_device_list(e, 1));
	EXPECT_EQ(2, maia_device_count());
}

/* Unbound (the driver link goes): -ENODEV, the list shrinks. */
TEST_F(fake, unbound)
{
	static struct maia_telemetry t;
	struct maia_device_entry e[4];
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/driver", self->dev0);
	ASSERT_EQ(0, unlink(path));
	EXPECT_EQ(-ENODEV, maia_telemetry_read("0000:00:01.0", &t));
	ASSERT_EQ(1, maia_device_list(e, 4));
	EXPECT_STREQ("0000:00:03.0", e[0].pci_address);
}

/* More tiles than MAIA_TELEMETRY_MAX_TILES: the first ones, no overflow. */
TEST_F(fake, tile_cap)
{
	static struct maia_telemetry t;
	static char text[MAIA_TELEMETRY_MAX_TILES * 2 * 6 + 2];
	size_t len = 0;

	for (int i = 0; i < 2 * MAIA_TELEMETRY_MAX_TILES; i++)
		len += (size_t)sprintf(text + len, "%s%d", i ? " " : "", i);
	strcpy(text + len, "\n");
	put(self->dev0, "tile_busy_time_us", text);
	ASSERT_EQ(0, maia_telemetry_read("0000:00:01.0", &t));
	ASSERT_EQ((unsigned int)MAIA_TELEMETRY_MAX_TILES, t.num_tiles);
	EXPECT_EQ((uint64_t)MAIA_TELEMETRY_MAX_TILES - 1,
		  t.tile_busy_us[MAIA_TELEMETRY_MAX_TILES - 1]);
}

TEST_HARNESS_MAIN
