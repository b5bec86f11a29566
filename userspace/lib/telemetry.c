// SPDX-License-Identifier: MIT
/*
 * Telemetry snapshots from the driver's sysfs files (Documentation/telemetry.rst):
 * the attributes on the PCI device (driver/maia_telemetry.c, maia_hbm.c,
 * maia_reset.c, maia_sysfs.c) and its hwmon device (driver/maia_hwmon.c).
 * Read-only and without opening the device node, so a monitoring user
 * outside the device group (maia-exporter) can use it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define TM_FIELD(f) offsetof(struct maia_telemetry, f)

/* One number per file: where it is and where it goes. */
static const struct tm_file {
	const char *name;
	bool hwmon;		/* in the hwmon directory, else on the PCI device */
	bool is_signed;		/* an int64_t field */
	uint64_t bit;
	size_t offset;
} tm_files[] = {
	{ "power1_average", true, false, MAIA_TM_POWER, TM_FIELD(power_uw) },
	{ "power1_input", true, false, MAIA_TM_POWER_INSTANT, TM_FIELD(power_instant_uw) },
	{ "power1_cap", true, false, MAIA_TM_POWER_CAP, TM_FIELD(power_cap_uw) },
	{ "energy1_input", true, false, MAIA_TM_ENERGY, TM_FIELD(energy_uj) },
	{ "temp1_input", true, true, MAIA_TM_TEMP, TM_FIELD(temp_mc) },
	{ "freq1_input", true, false, MAIA_TM_CLOCK, TM_FIELD(clock_hz) },
	{ "utilization", false, false, MAIA_TM_UTILIZATION, TM_FIELD(utilization_pct) },
	{ "tensor_utilization", false, false, MAIA_TM_TENSOR_UTILIZATION,
	  TM_FIELD(tensor_utilization_pct) },
	{ "throttle_reasons", false, false, MAIA_TM_THROTTLE_REASONS, TM_FIELD(throttle_reasons) },
	{ "throttle_count", false, false, MAIA_TM_THROTTLE_COUNT, TM_FIELD(throttle_count) },
	{ "throttled_time_us", false, false, MAIA_TM_THROTTLED_TIME, TM_FIELD(throttled_time_us) },
	{ "busy_time_us", false, false, MAIA_TM_BUSY_TIME, TM_FIELD(busy_time_us) },
	{ "tensor_busy_time_us", false, false, MAIA_TM_TENSOR_BUSY_TIME,
	  TM_FIELD(tensor_busy_time_us) },
	{ "vector_busy_time_us", false, false, MAIA_TM_VECTOR_BUSY_TIME,
	  TM_FIELD(vector_busy_time_us) },
	{ "dma_busy_time_us", false, false, MAIA_TM_DMA_BUSY_TIME, TM_FIELD(dma_busy_time_us) },
	{ "hbm_bytes_read", false, false, MAIA_TM_HBM_READ, TM_FIELD(hbm_bytes_read) },
	{ "hbm_bytes_written", false, false, MAIA_TM_HBM_WRITTEN, TM_FIELD(hbm_bytes_written) },
	{ "dma_bytes", false, false, MAIA_TM_DMA_BYTES, TM_FIELD(dma_bytes) },
	{ "flops", false, false, MAIA_TM_FLOPS, TM_FIELD(flops) },
	{ "commands", false, false, MAIA_TM_COMMANDS, TM_FIELD(commands) },
	{ "hbm_used_bytes", false, false, MAIA_TM_HBM_USED, TM_FIELD(hbm_used_bytes) },
	{ "hbm_free_bytes", false, false, MAIA_TM_HBM_FREE, TM_FIELD(hbm_free_bytes) },
	{ "hbm_size", false, false, MAIA_TM_HBM_TOTAL, TM_FIELD(hbm_total_bytes) },
	{ "reset_count", false, false, MAIA_TM_RESET_COUNT, TM_FIELD(reset_count) },
	{ "hbm_ecc_ce_count", false, false, MAIA_TM_ECC_CE, TM_FIELD(ecc_ce_count) },
	{ "hbm_ecc_ue_count", false, false, MAIA_TM_ECC_UE, TM_FIELD(ecc_ue_count) },
	{ "hbm_retired_pages", false, false, MAIA_TM_RETIRED_PAGES, TM_FIELD(retired_pages) },
	{ "hbm_retired_pages_pending", false, false, MAIA_TM_RETIRED_PENDING,
	  TM_FIELD(retired_pages_pending) },
};

/* The whole (small) file as a string; its length, or -1. */
static ssize_t read_text(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (len < size - 1) {
		r = read(fd, buf + len, size - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/*
 * One number, decimal or 0x hex, alone in the file but for a newline. A
 * sign only where the value may be negative (strtoull would take "-1").
 */
static bool parse_value(const char *buf, bool is_signed, uint64_t *out)
{
	const char *p = buf;
	char *end;

	if (!is_signed && *p == '-')
		return false;
	errno = 0;
	if (is_signed) {
		long long v = strtoll(p, &end, 0);

		*out = (uint64_t)v;
	} else {
		*out = strtoull(p, &end, 0);
	}
	if (errno || end == p || (*end && strcmp(end, "\n") != 0))
		return false;
	return true;
}

/* First hwmon directory under the PCI device (hwmonM is renumbered on reload). */
static bool find_hwmon(const char *dev_dir, char *out, size_t size)
{
	char dir[PATH_MAX + 16];
	struct dirent *de;
	bool found = false;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/hwmon", dev_dir);
	dp = opendir(dir);
	if (!dp)
		return false;
	while ((de = readdir(dp))) {
		if (strncmp(de->d_name, "hwmon", 5) == 0) {
			found = (size_t)snprintf(out, size, "%s/%s", dir, de->d_name) < size;
			break;
		}
	}
	closedir(dp);
	return found;
}

/* tile_busy_time_us: space-separated microseconds, one value per tile. */
static void read_tiles(const char *dev_dir, struct maia_telemetry *t)
{
	char path[PATH_MAX + 32], *buf, *p, *end;

	/* a page of single digits and spaces, with room for a longer (fake) file */
	enum { TILE_BUF = 24 * 1024 };

	buf = malloc(TILE_BUF);
	if (!buf)
		return;
	snprintf(path, sizeof(path), "%s/tile_busy_time_us", dev_dir);
	if (read_text(path, buf, TILE_BUF) < 0) {
		free(buf);
		return;
	}
	for (p = buf; t->num_tiles < MAIA_TELEMETRY_MAX_TILES; p = end) {
		uint64_t v;

		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			break;
		v = strtoull(p, &end, 10);
		if (end == p)
			break;
		t->tile_busy_us[t->num_tiles++] = v;
	}
	free(buf);
	t->valid |= MAIA_TM_TILES;
}

/* "<clusters>x<tiles per cluster>" */
static void read_topology(const char *dev_dir, struct maia_telemetry *t)
{
	char path[PATH_MAX + 16], buf[64], tail;
	unsigned int clusters, tiles;

	snprintf(path, sizeof(path), "%s/topology", dev_dir);
	if (read_text(path, buf, sizeof(buf)) < 0)
		return;
	if (sscanf(buf, "%ux%u%c", &clusters, &tiles, &tail) < 2 || !clusters || !tiles)
		return;
	t->clusters = clusters;
	t->tiles_per_cluster = tiles;
	t->valid |= MAIA_TM_TOPOLOGY;
}

MAIA_EXPORT int maia_telemetry_read(const char *pci_address, struct maia_telemetry *t)
{
	char dev_dir[PATH_MAX], hwmon[PATH_MAX + 288], path[PATH_MAX + 320], buf[64];
	struct maia_device_entry entry;
	struct timespec now;
	bool has_hwmon;
	size_t i;

	maia_error_clear();
	if (!pci_address || !t)
		return maia_error(-EINVAL, "maia_telemetry_read: NULL argument");
	if (maia_find_pci(pci_address, &entry))
		return maia_error(-ENODEV, "maia_telemetry_read: no Maia device at '%.32s'",
				  pci_address);
	memset(t, 0, sizeof(*t));
	clock_gettime(CLOCK_MONOTONIC, &now);
	t->timestamp_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	t->index = entry.index;
	memcpy(t->pci_address, entry.pci_address, sizeof(t->pci_address));

	snprintf(dev_dir, sizeof(dev_dir), "%s/bus/pci/devices/%s", maia_sysfs_root(),
		 entry.pci_address);
	has_hwmon = find_hwmon(dev_dir, hwmon, sizeof(hwmon));
	for (i = 0; i < sizeof(tm_files) / sizeof(tm_files[0]); i++) {
		const struct tm_file *f = &tm_files[i];
		uint64_t v;

		if (f->hwmon && !has_hwmon)
			continue;
		snprintf(path, sizeof(path), "%s/%s", f->hwmon ? hwmon : dev_dir, f->name);
		if (read_text(path, buf, sizeof(buf)) < 0 || !parse_value(buf, f->is_signed, &v))
			continue;
		memcpy((char *)t + f->offset, &v, sizeof(v));
		t->valid |= f->bit;
	}
	read_topology(dev_dir, t);
	read_tiles(dev_dir, t);
	/* Gone while we read (unbound, removed): nothing read can be trusted. */
	if (maia_find_pci(entry.pci_address, &entry))
		return maia_error(-ENODEV, "maia_telemetry_read: %s went away", pci_address);
	return 0;
}

MAIA_EXPORT int maia_device_telemetry(struct maia_device *dev, struct maia_telemetry *t)
{
	if (!dev || !t)
		return maia_error(-EINVAL, "maia_device_telemetry: NULL argument");
	return maia_telemetry_read(dev->pci_address, t);
}

/* ---- the chip model and modeled telemetry (since 1.8) ---- */

const char *maia_model_name_of(uint32_t model)
{
	switch (model) {
	case MAIA_MODEL_MAIA100:
		return "maia100";
	case MAIA_MODEL_MAIA200:
		return "maia200";
	default:
		return "unknown";
	}
}

/* One unsigned number from dir/name; false if missing or not a number. */
static bool read_u64(const char *dir, const char *name, uint64_t *v)
{
	char path[PATH_MAX + 64], buf[64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return read_text(path, buf, sizeof(buf)) >= 0 && parse_value(buf, false, v);
}

MAIA_EXPORT int maia_model_read(const char *pci_address, struct maia_device_model *m)
{
	static const struct {
		const char *name;
		size_t offset;
	} files[] = {
#define F(n, f) { n, offsetof(struct maia_device_model, f) }
		F("hbm_mbps", hbm_mbps),
		F("host_mbps", host_mbps),
		F("link_mbps", link_mbps),
		F("link_latency_ns", link_lat_ns),
		F("command_ns", cmd_ns),
		F("job_ns", job_ns),
		F("vector_gflops", vector_gflops),
		F("sram_kib", sram_kib),
		F("design_power_mw", design_power_mw),
#undef F
	};
	char dir[PATH_MAX], path[PATH_MAX + 32], name[32];
	struct maia_device_model out = { 0 };
	struct maia_device_entry entry;
	uint64_t v;
	size_t i;

	maia_error_clear();
	if (!pci_address || !m)
		return maia_error(-EINVAL, "maia_model_read: NULL argument");
	if (maia_find_pci(pci_address, &entry))
		return maia_error(-ENODEV, "maia_model_read: no Maia device at '%.32s'",
				  pci_address);
	snprintf(dir, sizeof(dir), "%s/bus/pci/devices/%s/model", maia_sysfs_root(),
		 entry.pci_address);
	snprintf(path, sizeof(path), "%s/name", dir);
	if (read_text(path, name, sizeof(name)) <= 0)
		return maia_error(-EOPNOTSUPP, "maia_model_read: %s has no chip model (driver "
				  "before 1.7 or hardware before 1.8)", entry.pci_address);
	name[strcspn(name, "\n")] = '\0';
	snprintf(out.name, sizeof(out.name), "%.15s", name);
	if (!strcmp(name, "maia100"))
		out.model = MAIA_MODEL_MAIA100;
	else if (!strcmp(name, "maia200"))
		out.model = MAIA_MODEL_MAIA200;
	if (read_u64(dir, "hbm_bytes", &v))
		out.hbm_bytes = v;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		uint32_t v32;

		if (!read_u64(dir, files[i].name, &v))
			continue;
		v32 = (uint32_t)v;
		memcpy((char *)&out + files[i].offset, &v32, sizeof(v32));
	}
	/* A data type without a peak has no file: its peak stays 0. */
	for (i = 0; i < sizeof(out.peak_gflops) / sizeof(out.peak_gflops[0]); i++) {
		char file[48];

		if (!maia_dtype_name((unsigned int)i))
			continue;
		snprintf(file, sizeof(file), "peak_gflops_%s", maia_dtype_name((unsigned int)i));
		if (read_u64(dir, file, &v))
			out.peak_gflops[i] = (uint32_t)v;
	}
	*m = out;
	return 0;
}

MAIA_EXPORT int maia_telemetry_read_modeled(const char *pci_address,
					    struct maia_telemetry_modeled *t)
{
	static const struct {
		const char *name;
		uint64_t bit;
		size_t offset;
	} files[] = {
#define F(n, b, f) { n, b, offsetof(struct maia_telemetry_modeled, f) }
		F("modeled_time_ns", MAIA_TMM_MODELED_TIME, modeled_time_ns),
		F("peak_time_ns", MAIA_TMM_PEAK_TIME, peak_time_ns),
		F("hbm_utilization", MAIA_TMM_HBM_UTILIZATION, hbm_utilization_pct),
		F("mfu", MAIA_TMM_MFU, mfu_pct),
		F("flops", MAIA_TMM_FLOPS, flops),
		F("busy_time_us", MAIA_TMM_BUSY_TIME, busy_time_us),
#undef F
	};
	struct maia_telemetry_modeled out = { 0 };
	struct maia_device_entry entry;
	char dev_dir[PATH_MAX];
	uint64_t rd, wr;
	struct timespec now;
	size_t i;

	maia_error_clear();
	if (!pci_address || !t)
		return maia_error(-EINVAL, "maia_telemetry_read_modeled: NULL argument");
	if (maia_find_pci(pci_address, &entry))
		return maia_error(-ENODEV, "maia_telemetry_read_modeled: no Maia device at "
				  "'%.32s'", pci_address);
	clock_gettime(CLOCK_MONOTONIC, &now);
	out.timestamp_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	snprintf(dev_dir, sizeof(dev_dir), "%s/bus/pci/devices/%s", maia_sysfs_root(),
		 entry.pci_address);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		uint64_t v;

		if (!read_u64(dev_dir, files[i].name, &v))
			continue;
		memcpy((char *)&out + files[i].offset, &v, sizeof(v));
		out.valid |= files[i].bit;
	}
	if (read_u64(dev_dir, "hbm_bytes_read", &rd) && read_u64(dev_dir, "hbm_bytes_written", &wr)) {
		out.hbm_bytes = rd + wr;
		out.valid |= MAIA_TMM_HBM_BYTES;
	}
	/* Flops, bytes and busy time without modeled time would be host-paced: not ours. */
	if (!(out.valid & MAIA_TMM_MODELED_TIME))
		out.valid = 0;
	if (maia_find_pci(entry.pci_address, &entry))
		return maia_error(-ENODEV, "maia_telemetry_read_modeled: %s went away",
				  pci_address);
	*t = out;
	return 0;
}

MAIA_EXPORT int maia_modeled_rates(const struct maia_telemetry_modeled *a,
				   const struct maia_telemetry_modeled *b,
				   struct maia_modeled_rates *r)
{
	const uint64_t need = MAIA_TMM_MODELED_TIME | MAIA_TMM_PEAK_TIME | MAIA_TMM_FLOPS |
			      MAIA_TMM_HBM_BYTES | MAIA_TMM_BUSY_TIME;
	double s;

	maia_error_clear();
	if (!a || !b || !r)
		return maia_error(-EINVAL, "maia_modeled_rates: NULL argument");
	if ((a->valid & need) != need || (b->valid & need) != need)
		return maia_error(-EINVAL, "maia_modeled_rates: a snapshot lacks modeled time "
				  "(telemetry before 1.2)");
	if (b->modeled_time_ns < a->modeled_time_ns || b->peak_time_ns < a->peak_time_ns ||
	    b->flops < a->flops || b->hbm_bytes < a->hbm_bytes ||
	    b->busy_time_us < a->busy_time_us)
		return maia_error(-EINVAL, "maia_modeled_rates: a counter went back (another "
				  "device, or the snapshots swapped)");
	if (b->modeled_time_ns == a->modeled_time_ns)
		return -EAGAIN;
	s = (double)(b->modeled_time_ns - a->modeled_time_ns) * 1e-9;
	r->modeled_s = s;
	r->tflops = (double)(b->flops - a->flops) / s * 1e-12;
	r->mfu = (double)(b->peak_time_ns - a->peak_time_ns) * 1e-9 / s;
	r->hbm_gbps = (double)(b->hbm_bytes - a->hbm_bytes) / s * 1e-9;
	r->busy = (double)(b->busy_time_us - a->busy_time_us) * 1e-6 / s;
	if (r->mfu > 1.0)
		r->mfu = 1.0;
	if (r->busy > 1.0)
		r->busy = 1.0;
	return 0;
}
