// SPDX-License-Identifier: MIT
/*
 * maia-exporter: Maia device metrics for Prometheus, in the style of NVIDIA's
 * dcgm-exporter (MAIA_FI_* names, labels device, pci_address, modelName).
 *
 *   maia-exporter [--port N] [--bind ADDR] [--conn-timeout SEC] [--max-conns N]
 *                      serve GET /metrics (default 127.0.0.1:9400) with libmicrohttpd
 *   maia-exporter --once   print one scrape to stdout and exit
 *
 * Devices are enumerated with libmaia (once, and again when they change);
 * the values are libmaia telemetry snapshots (maia_telemetry_read: the
 * driver's sysfs and hwmon files, no device access needed), read afresh on
 * every scrape (Documentation/telemetry.rst). A metric a device does not
 * provide (an older driver) is left out for that device, not reported as 0.
 * MAIA_SYSFS_ROOT (default /sys) points libmaia's sysfs reads elsewhere.
 *
 * On a device with a chip model (hardware 1.8) the activity is modeled time
 * (Documentation/telemetry.rst): the chip model's parameters are gauges,
 * HBM saturation and MFU are the device's window gauges, and achieved
 * TFLOP/s is the flops over the modeled time between two scrapes that saw
 * the device work (the first scrape: since power-on). Per process, from
 * /proc/PID/fdinfo of the processes this user may see: modeled device time
 * (drm-engine-*) and host time (maia-host-engine-*) per client.
 */
#define _GNU_SOURCE	/* open_memstream */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "libmaia.h"

#define MAX_DEVICES	64
#define DEFAULT_PORT	9400
#define DEFAULT_CONN_TIMEOUT	10	/* s; Prometheus's default scrape_timeout */
#define DEFAULT_MAX_CONNS	128
/* Per-connection memory (MHD's pool): the request line and headers must fit. */
#define REQ_MEMORY	(16 * 1024)

struct dev {
	char name[32];		/* "maia0" */
	char pci[32];
	char model[64];
	/* Achieved TFLOP/s: the last snapshot that moved and the value it gave. */
	struct maia_telemetry_modeled last;
	bool has_last;
	double tflops;
	bool has_tflops;
};

enum mtype { GAUGE, COUNTER };

/* A metric: which telemetry value, and how it is scaled. */
struct metric {
	const char *name;
	enum mtype type;
	const char *help;
	uint64_t field;		/* MAIA_TM_* */
	double scale;		/* value = raw * scale */
};

static const struct metric metrics[] = {
	{ "MAIA_FI_DEV_UTIL", GAUGE,
	  "Engine utilization: percent of the device's window (1 s; 10 ms of modeled time on "
	  "hardware 1.8) any command ran (in %).",
	  MAIA_TM_UTILIZATION, 1.0 },
	{ "MAIA_FI_PROF_TENSOR_ACTIVE", GAUGE,
	  "Ratio of the device's window the tensor (matrix) unit was busy (0..1).",
	  MAIA_TM_TENSOR_UTILIZATION, 0.01 },
	{ "MAIA_FI_DEV_BUSY_TIME", COUNTER,
	  "Time any command ran since power-on, modeled on hardware 1.8 (in s).",
	  MAIA_TM_BUSY_TIME, 1e-6 },
	{ "MAIA_FI_DEV_POWER_USAGE", GAUGE,
	  "Power draw averaged over the device's window (1 s; 10 ms of modeled time on "
	  "hardware 1.8) (in W).",
	  MAIA_TM_POWER, 1e-6 },
	{ "MAIA_FI_DEV_POWER_CAP", GAUGE,
	  "Power cap the firmware enforces (in W).",
	  MAIA_TM_POWER_CAP, 1e-6 },
	{ "MAIA_FI_DEV_TOTAL_ENERGY_CONSUMPTION", COUNTER,
	  "Energy consumed since power-on (in J).",
	  MAIA_TM_ENERGY, 1e-6 },
	{ "MAIA_FI_DEV_TEMP", GAUGE,
	  "Die temperature (in C).",
	  MAIA_TM_TEMP, 1e-3 },
	{ "MAIA_FI_DEV_CLOCK", GAUGE,
	  "Tensor clock (in MHz).",
	  MAIA_TM_CLOCK, 1e-6 },
	{ "MAIA_FI_DEV_CLOCK_THROTTLE_REASONS", GAUGE,
	  "Why the clock is below nominal: bitmask, 1 power cap, 2 thermal.",
	  MAIA_TM_THROTTLE_REASONS, 1.0 },
	{ "MAIA_FI_DEV_THROTTLE_EVENTS", COUNTER,
	  "Clock step-downs by the power controller since power-on.",
	  MAIA_TM_THROTTLE_COUNT, 1.0 },
	{ "MAIA_FI_DEV_HBM_USED", GAUGE,
	  "HBM allocated (in bytes).",
	  MAIA_TM_HBM_USED, 1.0 },
	{ "MAIA_FI_DEV_HBM_FREE", GAUGE,
	  "HBM free (in bytes).",
	  MAIA_TM_HBM_FREE, 1.0 },
	{ "MAIA_FI_DEV_HBM_READ_BYTES", COUNTER,
	  "HBM bytes read by commands since power-on.",
	  MAIA_TM_HBM_READ, 1.0 },
	{ "MAIA_FI_DEV_HBM_WRITE_BYTES", COUNTER,
	  "HBM bytes written by commands since power-on.",
	  MAIA_TM_HBM_WRITTEN, 1.0 },
	{ "MAIA_FI_DEV_RESET_COUNT", COUNTER,
	  "Device resets (hang recovery) since the driver was loaded.",
	  MAIA_TM_RESET_COUNT, 1.0 },
	{ "MAIA_FI_PROF_FLOPS_TOTAL", COUNTER,
	  "Floating-point and integer operations done by commands since power-on.",
	  MAIA_TM_FLOPS, 1.0 },
};

/* Modeled telemetry (hardware 1.8): struct maia_telemetry_modeled. */
static const struct mmetric {
	const char *name;
	enum mtype type;
	const char *help;
	uint64_t field;		/* MAIA_TMM_* */
	double scale;
} modeled_metrics[] = {
	{ "MAIA_FI_PROF_HBM_ACTIVE", GAUGE,
	  "HBM bandwidth saturation: bytes moved over the device's window of modeled time as a "
	  "ratio of the HBM bandwidth (0..1).", MAIA_TMM_HBM_UTILIZATION, 0.01 },
	{ "MAIA_FI_PROF_MFU", GAUGE,
	  "Model flops utilization: time the flops done over the window take at the peak, as a "
	  "ratio of the window (0..1).", MAIA_TMM_MFU, 0.01 },
	{ "MAIA_FI_PROF_MODELED_TIME", COUNTER,
	  "Modeled device time since power-on: it passes while the device works (in s).",
	  MAIA_TMM_MODELED_TIME, 1e-9 },
	{ "MAIA_FI_PROF_PEAK_TIME", COUNTER,
	  "Time the flops done since power-on take at the data types' peaks (in s); "
	  "MFU = rate(PEAK_TIME) / rate(MODELED_TIME).", MAIA_TMM_PEAK_TIME, 1e-9 },
};

/*
 * HBM ECC, after the per-tile block so that the lines before stay as they
 * were; names as DCGM's ECC_SBE_VOL_TOTAL / ECC_DBE_VOL_TOTAL / RETIRED_DBE
 * (single-bit = corrected, double-bit = uncorrectable).
 */
static const struct metric ecc_metrics[] = {
	{ "MAIA_FI_DEV_ECC_SBE_VOL_TOTAL", COUNTER,
	  "HBM ECC errors corrected since power-on.",
	  MAIA_TM_ECC_CE, 1.0 },
	{ "MAIA_FI_DEV_ECC_DBE_VOL_TOTAL", COUNTER,
	  "HBM ECC uncorrectable errors (bad pages) since power-on.",
	  MAIA_TM_ECC_UE, 1.0 },
	{ "MAIA_FI_DEV_RETIRED_DBE", GAUGE,
	  "HBM pages retired for an uncorrectable ECC error.",
	  MAIA_TM_RETIRED_PAGES, 1.0 },
	{ "MAIA_FI_DEV_RETIRED_PENDING", GAUGE,
	  "HBM pages with an uncorrectable ECC error, retired once their owner frees them.",
	  MAIA_TM_RETIRED_PENDING, 1.0 },
};

/* The snapshot's value of one MAIA_TM_* field, unscaled. */
static double raw_value(const struct maia_telemetry *t, uint64_t field)
{
	switch (field) {
	case MAIA_TM_UTILIZATION:	return (double)t->utilization_pct;
	case MAIA_TM_TENSOR_UTILIZATION: return (double)t->tensor_utilization_pct;
	case MAIA_TM_BUSY_TIME:		return (double)t->busy_time_us;
	case MAIA_TM_POWER:		return (double)t->power_uw;
	case MAIA_TM_POWER_CAP:		return (double)t->power_cap_uw;
	case MAIA_TM_ENERGY:		return (double)t->energy_uj;
	case MAIA_TM_TEMP:		return (double)t->temp_mc;
	case MAIA_TM_CLOCK:		return (double)t->clock_hz;
	case MAIA_TM_THROTTLE_REASONS:	return (double)t->throttle_reasons;
	case MAIA_TM_THROTTLE_COUNT:	return (double)t->throttle_count;
	case MAIA_TM_HBM_USED:		return (double)t->hbm_used_bytes;
	case MAIA_TM_HBM_FREE:		return (double)t->hbm_free_bytes;
	case MAIA_TM_HBM_READ:		return (double)t->hbm_bytes_read;
	case MAIA_TM_HBM_WRITTEN:	return (double)t->hbm_bytes_written;
	case MAIA_TM_RESET_COUNT:	return (double)t->reset_count;
	case MAIA_TM_ECC_CE:		return (double)t->ecc_ce_count;
	case MAIA_TM_ECC_UE:		return (double)t->ecc_ue_count;
	case MAIA_TM_RETIRED_PAGES:	return (double)t->retired_pages;
	case MAIA_TM_RETIRED_PENDING:	return (double)t->retired_pages_pending;
	case MAIA_TM_FLOPS:		return (double)t->flops;
	default:			return 0;
	}
}

/*
 * Devices as libmaia lists them from sysfs. Opening one gives the model
 * and revision; without permission to open the device nodes (a monitoring
 * user outside the device group) the list still gives the index and PCI
 * address, and the telemetry is read from sysfs either way.
 */
static int enumerate(const struct maia_device_entry *list, int n, struct dev *devs)
{
	int found = 0;

	for (int i = 0; i < n; i++) {
		struct maia_device_info info;
		struct maia_device *md;
		struct dev *d = &devs[found];

		if (maia_device_open_pci(list[i].pci_address, &md) < 0) {
			snprintf(d->name, sizeof(d->name), "maia%d", list[i].index);
			snprintf(d->pci, sizeof(d->pci), "%s", list[i].pci_address);
			snprintf(d->model, sizeof(d->model), "Maia");
			found++;
			continue;
		}
		if (maia_device_info(md, &info) == 0) {
			struct maia_device_model m;
			const char *chip = info.device_id == 0xa100 ? "100" : "accelerator";

			/* The chip model (hardware 1.8) names the part. */
			if (maia_device_model(md, &m) == 0)
				chip = m.model == MAIA_MODEL_MAIA200 ? "200" :
				       m.model == MAIA_MODEL_MAIA100 ? "100" : "accelerator";
			snprintf(d->name, sizeof(d->name), "maia%d", info.index);
			snprintf(d->pci, sizeof(d->pci), "%s", info.pci_address);
			snprintf(d->model, sizeof(d->model), "Maia %s rev %u.%u", chip,
				 info.revision >> 8 & 0xff, info.revision & 0xff);
			found++;
		}
		maia_device_close(md);
	}
	return found;
}

/* Label values: backslash, quote and newline escaped. */
static void put_label(FILE *out, const char *key, const char *val, bool last)
{
	fprintf(out, "%s=\"", key);
	for (const char *p = val; *p; p++) {
		if (*p == '\\' || *p == '"')
			fputc('\\', out);
		if (*p == '\n')
			fputs("\\n", out);
		else
			fputc(*p, out);
	}
	fprintf(out, "\"%s", last ? "" : ",");
}

/*
 * Devices from the last enumeration. Opening a device creates a context in
 * the driver, so scrapes reuse the list while libmaia's device list (a
 * sysfs scan: accel index and PCI address of each device bound to maia) is
 * unchanged.
 */
static struct maia_device_entry cached_list[MAX_DEVICES];
static int ncached_list = -1;
static struct dev cached[MAX_DEVICES];
static int ncached;
/* This scrape's snapshots; ok[j] false when devs[j] could not be read. */
static struct maia_telemetry snaps[MAX_DEVICES];
static bool ok[MAX_DEVICES];
/* Modeled telemetry and the chip model of this scrape; mok/has_model false without. */
static struct maia_telemetry_modeled msnaps[MAX_DEVICES];
static bool mok[MAX_DEVICES];
static struct maia_device_model models[MAX_DEVICES];
static bool has_model[MAX_DEVICES];

static void refresh_devices(void)
{
	struct maia_device_entry list[MAX_DEVICES];
	int n = maia_device_list(list, MAX_DEVICES);

	if (n < 0)
		n = 0;
	if (n == ncached_list && !memcmp(list, cached_list, (size_t)n * sizeof(list[0])))
		return;
	memcpy(cached_list, list, (size_t)n * sizeof(list[0]));
	ncached_list = n;
	memset(cached, 0, sizeof(cached));
	ncached = enumerate(list, n, cached);
}

/* The labels every per-device sample has. */
static void put_dev_labels(FILE *out, const struct dev *d, bool last)
{
	put_label(out, "device", d->name, false);
	put_label(out, "pci_address", d->pci, false);
	put_label(out, "modelName", d->model, last);
}

/*
 * The chip model's parameters (hardware 1.8), one gauge each, the peaks
 * labelled by data type.
 */
static void scrape_model(FILE *out, const struct dev *devs, int n)
{
	static const struct {
		const char *name, *help;
		size_t offset;
		double scale;
	} params[] = {
#define P(n, h, f, sc) { n, h, offsetof(struct maia_device_model, f), sc }
		P("MAIA_FI_DEV_HBM_BANDWIDTH", "HBM bandwidth of the chip model (in bytes/s).",
		  hbm_mbps, 1e6),
		P("MAIA_FI_DEV_HOST_LINK_BANDWIDTH",
		  "Host link (PCIe) bandwidth of the chip model, each direction (in bytes/s).",
		  host_mbps, 1e6),
		P("MAIA_FI_DEV_FABRIC_LINK_BANDWIDTH",
		  "Fabric port bandwidth of the chip model, each direction (in bytes/s).",
		  link_mbps, 1e6),
		P("MAIA_FI_DEV_FABRIC_LINK_LATENCY", "Fabric hop latency of the chip model (in s).",
		  link_lat_ns, 1e-9),
		P("MAIA_FI_DEV_POWER_DESIGN", "Design power of the chip model: the largest cap "
		  "(in W).", design_power_mw, 1e-3),
#undef P
	};

	fputs("# HELP MAIA_FI_DEV_MODEL_INFO The chip model the device is built as (value 1).\n"
	      "# TYPE MAIA_FI_DEV_MODEL_INFO gauge\n", out);
	for (int j = 0; j < n; j++) {
		if (!has_model[j])
			continue;
		fputs("MAIA_FI_DEV_MODEL_INFO{", out);
		put_dev_labels(out, &devs[j], false);
		put_label(out, "model", models[j].name, true);
		fputs("} 1\n", out);
	}
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", params[i].name, params[i].help,
			params[i].name);
		for (int j = 0; j < n; j++) {
			uint32_t v;

			if (!has_model[j])
				continue;
			memcpy(&v, (const char *)&models[j] + params[i].offset, sizeof(v));
			fprintf(out, "%s{", params[i].name);
			put_dev_labels(out, &devs[j], true);
			fprintf(out, "} %.10g\n", v * params[i].scale);
		}
	}
	fputs("# HELP MAIA_FI_DEV_PEAK_TFLOPS Dense tensor peak of the chip model for the data "
	      "type (in TFLOP/s).\n# TYPE MAIA_FI_DEV_PEAK_TFLOPS gauge\n", out);
	for (int j = 0; j < n; j++) {
		if (!has_model[j])
			continue;
		for (unsigned int t = 0; t < 16; t++) {
			if (!models[j].peak_gflops[t] || !maia_dtype_name(t))
				continue;
			fputs("MAIA_FI_DEV_PEAK_TFLOPS{", out);
			put_dev_labels(out, &devs[j], false);
			put_label(out, "dtype", maia_dtype_name(t), true);
			fprintf(out, "} %.10g\n", models[j].peak_gflops[t] * 1e-3);
		}
	}
}

/* Modeled gauges and counters, and achieved TFLOP/s. */
static void scrape_modeled(FILE *out, struct dev *devs, int n)
{
	for (size_t i = 0; i < sizeof(modeled_metrics) / sizeof(modeled_metrics[0]); i++) {
		const struct mmetric *m = &modeled_metrics[i];

		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
			m->type == GAUGE ? "gauge" : "counter");
		for (int j = 0; j < n; j++) {
			const struct maia_telemetry_modeled *t = &msnaps[j];
			double v;

			if (!mok[j] || !(t->valid & m->field))
				continue;
			switch (m->field) {
			case MAIA_TMM_HBM_UTILIZATION:	v = (double)t->hbm_utilization_pct; break;
			case MAIA_TMM_MFU:		v = (double)t->mfu_pct; break;
			case MAIA_TMM_MODELED_TIME:	v = (double)t->modeled_time_ns; break;
			default:			v = (double)t->peak_time_ns; break;
			}
			fprintf(out, "%s{", m->name);
			put_dev_labels(out, &devs[j], true);
			fprintf(out, "} %.10g\n", v * m->scale);
		}
	}
	fputs("# HELP MAIA_FI_PROF_ACHIEVED_TFLOPS Flops done over the modeled time between the "
	      "last two scrapes that saw the device work, the first since power-on "
	      "(in TFLOP/s).\n# TYPE MAIA_FI_PROF_ACHIEVED_TFLOPS gauge\n", out);
	for (int j = 0; j < n; j++) {
		struct dev *d = &devs[j];
		struct maia_modeled_rates r;

		if (!mok[j])
			continue;
		if (!d->has_last) {
			struct maia_telemetry_modeled zero = { .valid = msnaps[j].valid };

			if (maia_modeled_rates(&zero, &msnaps[j], &r) == 0) {
				d->tflops = r.tflops;
				d->has_tflops = true;
			}
		} else if (maia_modeled_rates(&d->last, &msnaps[j], &r) == 0) {
			d->tflops = r.tflops;
			d->has_tflops = true;
		}
		/* keep the last snapshot the device moved in (or the first) */
		if (!d->has_last || msnaps[j].modeled_time_ns != d->last.modeled_time_ns) {
			d->last = msnaps[j];
			d->has_last = true;
		}
		if (!d->has_tflops)
			continue;
		fputs("MAIA_FI_PROF_ACHIEVED_TFLOPS{", out);
		put_dev_labels(out, d, true);
		fprintf(out, "} %.10g\n", d->tflops);
	}
}

/* One DRM client of a process on a Maia device, from /proc/PID/fdinfo. */
struct proc_client {
	int pid;
	char comm[32];
	unsigned long long client_id;
	char pdev[32];
	unsigned long long busy_ns, host_ns;
};

/* One fdinfo file: true if it is a maia DRM file. */
static bool parse_fdinfo(const char *path, struct proc_client *c)
{
	char line[256];
	bool maia = false;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		*v++ = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = '\0';
		if (!strcmp(line, "drm-driver"))
			maia = !strcmp(v, "maia");
		else if (!strcmp(line, "drm-pdev"))
			snprintf(c->pdev, sizeof(c->pdev), "%s", v);
		else if (!strcmp(line, "drm-client-id"))
			c->client_id = strtoull(v, NULL, 10);
		else if (!strncmp(line, "drm-engine-", 11))
			c->busy_ns += strtoull(v, NULL, 10);
		else if (!strncmp(line, "maia-host-engine-", 17))
			c->host_ns += strtoull(v, NULL, 10);
	}
	fclose(f);
	return maia;
}

#define MAX_CLIENTS	256

/* The maia clients of every process this user may inspect, each once. */
static int scan_clients(struct proc_client *out, int max)
{
	DIR *proc = opendir("/proc"), *fds;
	struct dirent *pe, *fe;
	int n = 0;

	if (!proc)
		return 0;
	while ((pe = readdir(proc)) && n < max) {
		char path[PATH_MAX];
		int pid;

		if (!isdigit((unsigned char)pe->d_name[0]))
			continue;
		pid = atoi(pe->d_name);
		snprintf(path, sizeof(path), "/proc/%d/fdinfo", pid);
		fds = opendir(path);
		if (!fds)
			continue;
		while ((fe = readdir(fds)) && n < max) {
			struct proc_client c = { .pid = pid };
			bool dup = false;
			FILE *f;

			if (fe->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", pid, fe->d_name);
			if (!parse_fdinfo(path, &c))
				continue;
			for (int i = 0; i < n; i++)
				dup |= out[i].pid == pid && out[i].client_id == c.client_id;
			if (dup)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/comm", pid);
			f = fopen(path, "r");
			if (f) {
				if (fgets(c.comm, sizeof(c.comm), f))
					c.comm[strcspn(c.comm, "\n")] = '\0';
				fclose(f);
			}
			out[n++] = c;
		}
		closedir(fds);
	}
	closedir(proc);
	return n;
}

/* Per process (client): modeled device time and host time on each device. */
static void scrape_processes(FILE *out, const struct dev *devs, int n)
{
	static struct proc_client cl[MAX_CLIENTS];
	int ncl = scan_clients(cl, MAX_CLIENTS);

	for (int which = 0; which < 2; which++) {
		const char *name = which ? "MAIA_FI_PROC_HOST_BUSY_TIME" : "MAIA_FI_PROC_BUSY_TIME";

		fprintf(out, "# HELP %s %s\n# TYPE %s counter\n", name,
			which ? "Host time the device's queues spent on the client's jobs, doorbell "
				"to completion (in s)." :
				"Device time the client's jobs took: modeled time on hardware 1.8 "
				"(in s).", name);
		for (int k = 0; k < ncl; k++) {
			char pid[16], id[24];
			int j;

			for (j = 0; j < n; j++)
				if (!strcmp(cl[k].pdev, devs[j].pci))
					break;
			if (j == n)
				continue;
			snprintf(pid, sizeof(pid), "%d", cl[k].pid);
			snprintf(id, sizeof(id), "%llu", cl[k].client_id);
			fprintf(out, "%s{", name);
			put_dev_labels(out, &devs[j], false);
			put_label(out, "pid", pid, false);
			put_label(out, "comm", cl[k].comm, false);
			put_label(out, "client_id", id, true);
			fprintf(out, "} %.10g\n",
				(double)(which ? cl[k].host_ns : cl[k].busy_ns) * 1e-9);
		}
	}
}

/*
 * Per-tile busy time (microseconds, one value per tile), one sample per
 * tile labelled with its cluster and tile index.
 */
static void scrape_tiles(FILE *out, const struct dev *devs, int n)
{
	fputs("# HELP MAIA_FI_PROF_TILE_BUSY_TIME Time the tile ran tensor work since power-on "
	      "(in s).\n# TYPE MAIA_FI_PROF_TILE_BUSY_TIME counter\n", out);
	for (int j = 0; j < n; j++) {
		const struct maia_telemetry *t = &snaps[j];
		unsigned int per = t->valid & MAIA_TM_TOPOLOGY ? t->tiles_per_cluster : 1;

		if (!ok[j] || !(t->valid & MAIA_TM_TILES))
			continue;
		for (unsigned int i = 0; i < t->num_tiles; i++) {
			char cl[16], ti[16];

			snprintf(cl, sizeof(cl), "%u", i / per);
			snprintf(ti, sizeof(ti), "%u", i % per);
			fputs("MAIA_FI_PROF_TILE_BUSY_TIME{", out);
			put_label(out, "device", devs[j].name, false);
			put_label(out, "pci_address", devs[j].pci, false);
			put_label(out, "modelName", devs[j].model, false);
			put_label(out, "cluster", cl, false);
			put_label(out, "tile", ti, true);
			fprintf(out, "} %.10g\n", (double)t->tile_busy_us[i] * 1e-6);
		}
	}
}

/* One sample per device that has the value, under each metric's HELP and TYPE. */
static void put_metrics(FILE *out, const struct metric *table, size_t count,
			const struct dev *devs, int n)
{
	for (size_t i = 0; i < count; i++) {
		const struct metric *m = &table[i];

		fprintf(out, "# HELP %s %s\n", m->name, m->help);
		fprintf(out, "# TYPE %s %s\n", m->name, m->type == GAUGE ? "gauge" : "counter");
		for (int j = 0; j < n; j++) {
			if (!ok[j] || !(snaps[j].valid & m->field))
				continue;
			fprintf(out, "%s{", m->name);
			put_label(out, "device", devs[j].name, false);
			put_label(out, "pci_address", devs[j].pci, false);
			put_label(out, "modelName", devs[j].model, true);
			fprintf(out, "} %.10g\n", raw_value(&snaps[j], m->field) * m->scale);
		}
	}
}

/* Fabric port counters, one sample per port (label port). */
static const struct fabric_metric {
	const char *name;
	bool counter;
	const char *help;
	size_t offset;
	bool wide;
	enum { SRC_PORT, SRC_GAPS, SRC_FAILOVER, SRC_RTO } src;
	/*
	 * SRC_GAPS: struct maia_fabric_port_gaps (driver minor 6); SRC_FAILOVER:
	 * hardware 1.10; SRC_RTO: maia_fabric_read_spurious_rto()'s count, hardware 1.12.
	 */
} fabric_metrics[] = {
#define FM(n, c, h, f, w) { n, c, h, offsetof(struct maia_fabric_port, f), w, SRC_PORT }
#define GM(n, h, f) { n, true, h, offsetof(struct maia_fabric_port_gaps, f), true, SRC_GAPS }
#define OM(n, c, h, f, w) \
	{ n, c, h, offsetof(struct maia_fabric_failover, f), w, SRC_FAILOVER }
	FM("MAIA_FI_FABRIC_LINK_UP", false, "Fabric port link is up (1) or down (0).", up, false),
	FM("MAIA_FI_FABRIC_TX_BYTES", true, "Bytes sent on the fabric port.", tx_bytes, true),
	FM("MAIA_FI_FABRIC_RX_BYTES", true, "Bytes received on the fabric port.", rx_bytes, true),
	FM("MAIA_FI_FABRIC_TX_FRAMES", true, "Frames sent on the fabric port.", tx_frames, true),
	FM("MAIA_FI_FABRIC_RX_FRAMES", true, "Frames received on the fabric port.", rx_frames,
	   true),
	FM("MAIA_FI_FABRIC_RETRANSMITS", true, "Frames sent again after a loss.", retransmits,
	   true),
	FM("MAIA_FI_FABRIC_RX_DROPS", true, "Received frames dropped (malformed, unexpected, "
	   "queue full).", rx_drops, true),
	FM("MAIA_FI_FABRIC_NAK_TX", true, "Remote requests refused by this device (bad key, "
	   "access, range).", nak_tx, true),
	FM("MAIA_FI_FABRIC_NAK_RX", true, "Refusals received for this device's requests.",
	   nak_rx, true),
	FM("MAIA_FI_FABRIC_LINK_FLAPS", true, "Times the link went down.", link_downs, false),
	GM("MAIA_FI_FABRIC_LINK_NAKS_TX", "NAK frames sent: gaps in the frames received named "
	   "to the peer.", link_nak_tx),
	GM("MAIA_FI_FABRIC_RX_HELD", "Frames received after a gap and held until it filled.",
	   rx_held),
	{ "MAIA_FI_FABRIC_SPURIOUS_RTO", true, "Retransmit timeouts undone: the peer had the "
	  "frame (a late ack, not a loss).", 0, false, SRC_RTO },
	OM("MAIA_FI_FABRIC_FAILOVERS", true, "Collectives routed around the fabric port (down, "
	   "or over a failover threshold).", failovers, false),
	OM("MAIA_FI_FABRIC_FAILOVER_STATE", false, "Why collectives avoid the port now: 0 not, "
	   "else 1 down + 2 latency + 4 loss.", state, false),
	OM("MAIA_FI_FABRIC_RELAYED", true, "Relayed collective chunks sent on out of the port "
	   "for other devices.", relayed, true),
	OM("MAIA_FI_FABRIC_LATENCY_NS", false, "Modeled latency of the port's cable, ns.",
	   latency_ns, false),
	OM("MAIA_FI_FABRIC_LOSS_PPM", false, "Gaps the peer named per million frames sent, "
	   "last window.", loss_ppm, false),
#undef OM
#undef GM
#undef FM
};

static void scrape_fabric(FILE *out, const struct dev *devs, int n)
{
	static struct maia_fabric_port ports[MAX_DEVICES][16];
	static struct maia_fabric_port_gaps gaps[MAX_DEVICES][16];
	static struct maia_fabric_failover fo[MAX_DEVICES][16];
	static uint32_t rto[MAX_DEVICES][16];
	static bool has_gaps[MAX_DEVICES][16], has_fo[MAX_DEVICES][16], has_rto[MAX_DEVICES][16];
	static unsigned int nports[MAX_DEVICES];

	for (int j = 0; j < n; j++)
		for (nports[j] = 0; nports[j] < 16; nports[j]++) {
			unsigned int p = nports[j];

			if (maia_fabric_read(devs[j].pci, p, &ports[j][p]))
				break;
			/* An older driver or device has no gap counters: no sample. */
			has_gaps[j][p] = !maia_fabric_read_gaps(devs[j].pci, p, &gaps[j][p]);
			has_fo[j][p] = !maia_fabric_read_failover(devs[j].pci, p, &fo[j][p]);
			has_rto[j][p] = !maia_fabric_read_spurious_rto(devs[j].pci, p, &rto[j][p]);
		}
	for (size_t i = 0; i < sizeof(fabric_metrics) / sizeof(fabric_metrics[0]); i++) {
		const struct fabric_metric *m = &fabric_metrics[i];

		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
			m->counter ? "counter" : "gauge");
		for (int j = 0; j < n; j++) {
			for (unsigned int p = 0; p < nports[j]; p++) {
				const char *f = m->src == SRC_GAPS ? (const char *)&gaps[j][p] :
						m->src == SRC_FAILOVER ? (const char *)&fo[j][p] :
						m->src == SRC_RTO ? (const char *)&rto[j][p] :
						(const char *)&ports[j][p];
				char port[16];
				double v;

				f += m->offset;
				if ((m->src == SRC_GAPS && !has_gaps[j][p]) ||
				    (m->src == SRC_FAILOVER && !has_fo[j][p]) ||
				    (m->src == SRC_RTO && !has_rto[j][p]))
					continue;
				if (m->src == SRC_PORT &&
				    m->offset == offsetof(struct maia_fabric_port, up))
					v = ports[j][p].up;
				else if (m->wide)
					v = (double)*(const uint64_t *)(const void *)f;
				else
					v = (double)*(const uint32_t *)(const void *)f;
				snprintf(port, sizeof(port), "%u", p);
				fprintf(out, "%s{", m->name);
				put_label(out, "device", devs[j].name, false);
				put_label(out, "pci_address", devs[j].pci, false);
				put_label(out, "modelName", devs[j].model, false);
				put_label(out, "port", port, true);
				fprintf(out, "} %.10g\n", v);
			}
		}
	}
}

static void scrape(FILE *out)
{
	const struct dev *devs = cached;
	int n;

	refresh_devices();
	n = ncached;
	for (int j = 0; j < n; j++) {	/* afresh: values, and hwmon renumbered on reload */
		ok[j] = maia_telemetry_read(devs[j].pci, &snaps[j]) == 0;
		mok[j] = maia_telemetry_read_modeled(devs[j].pci, &msnaps[j]) == 0 &&
			 msnaps[j].valid;
		has_model[j] = maia_model_read(devs[j].pci, &models[j]) == 0;
	}

	put_metrics(out, metrics, sizeof(metrics) / sizeof(metrics[0]), devs, n);
	scrape_tiles(out, devs, n);
	put_metrics(out, ecc_metrics, sizeof(ecc_metrics) / sizeof(ecc_metrics[0]), devs, n);
	scrape_fabric(out, devs, n);
	/* After the families above, so that their lines stay as they were. */
	scrape_model(out, devs, n);
	scrape_modeled(out, cached, n);
	scrape_processes(out, devs, n);
}

/* Bodies of the answers other than a scrape (static: MHD_RESPMEM_PERSISTENT). */
static const char landing_page[] =
	"<html><body><a href=\"/metrics\">Maia metrics</a></body></html>\n";
static const char not_found[] = "not found\n";
static const char get_only[] = "GET only\n";
static const char no_memory[] = "no memory\n";

/*
 * Every answer closes its connection ("Connection: close"): a connection
 * serves one request, so a slot is held only while a request is being read
 * or answered, and clients that read the answer to EOF get it whole.
 */
static enum MHD_Result answer(struct MHD_Connection *conn, unsigned int status,
			      const char *type, void *body, size_t len,
			      enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;	/* MHD closes the connection */
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/*
 * MHD calls this once the request line and headers are in (a body, if the
 * client sends one, is never read: the answer is queued at once and the
 * connection closed after it). GET (or HEAD) /metrics scrapes; / is a
 * landing page linking to it; any other path is 404, any other method 405.
 */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version,
			      const char *upload_data, size_t *upload_data_size,
			      void **con_cls)
{
	char *body = NULL;
	size_t len = 0;
	FILE *mem;

	(void)cls;
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", (void *)get_only,
			      sizeof(get_only) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/") == 0)
		return answer(conn, MHD_HTTP_OK, "text/html", (void *)landing_page,
			      sizeof(landing_page) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") != 0)
		return answer(conn, MHD_HTTP_NOT_FOUND, "text/plain", (void *)not_found,
			      sizeof(not_found) - 1, MHD_RESPMEM_PERSISTENT);
	mem = open_memstream(&body, &len);
	if (!mem)
		return answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
			      (void *)no_memory, sizeof(no_memory) - 1, MHD_RESPMEM_PERSISTENT);
	scrape(mem);
	if (fclose(mem)) {
		free(body);
		return answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
			      (void *)no_memory, sizeof(no_memory) - 1, MHD_RESPMEM_PERSISTENT);
	}
	return answer(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len,
		      MHD_RESPMEM_MUST_FREE);
}

struct server_opts {
	const char *bind_addr;
	int port;		/* 0: the kernel picks one (printed) */
	unsigned int conn_timeout;	/* seconds without traffic before a connection is closed */
	unsigned int max_conns;
};

/* The listening socket, bound here so that errors name the address and --port 0 works. */
static int listen_on(const struct server_opts *o, int *port_out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o->port) };
	socklen_t salen = sizeof(sa);
	int one = 1, lfd;

	if (inet_pton(AF_INET, o->bind_addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "maia-exporter: bad bind address '%s'\n", o->bind_addr);
		return -2;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0) {
		perror("maia-exporter: socket");
		return -1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, SOMAXCONN) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &salen)) {
		fprintf(stderr, "maia-exporter: cannot listen on %s:%d: %s\n", o->bind_addr,
			o->port, strerror(errno));
		close(lfd);
		return -1;
	}
	*port_out = ntohs(sa.sin_port);
	return lfd;
}

/*
 * The HTTP server is libmicrohttpd with one internal thread polling every
 * connection (MHD_USE_POLL_INTERNAL_THREAD): a connection that is idle or
 * sends half a request costs a slot and nothing else, so it never delays
 * another's scrape. All requests are handled on that one thread, one after
 * another, so scrape() and its static device cache need no locking (a
 * scrape is a few sysfs reads). poll() rather than MHD's epoll mode: with
 * libmicrohttpd 0.9.75's edge-triggered epoll, a client that sends part of
 * a request and then shuts down its side keeps its slot until the timeout
 * (the EOF that came with the data is never read); level-triggered poll()
 * sees it and closes at once, and costs nothing at max_conns connections.
 * Limits: max_conns connections at once (MHD stops accepting at the limit;
 * further clients wait in the listen backlog until a slot frees),
 * conn_timeout seconds without traffic closes a connection, and REQ_MEMORY
 * bytes of request line and headers per connection (beyond: 414 or 431,
 * and the connection is closed).
 *
 * SIGTERM and SIGINT are blocked before the thread starts (it inherits the
 * mask) and taken here with sigwait(): the daemon is stopped, exit 0.
 */
static int serve(const struct server_opts *o)
{
	struct MHD_Daemon *d;
	sigset_t stop;
	int lfd, port, sig;

	lfd = listen_on(o, &port);
	if (lfd < 0)
		return -lfd;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	d = MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD, 0, NULL, NULL, handle, NULL,
			     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd,
			     MHD_OPTION_CONNECTION_LIMIT, o->max_conns,
			     MHD_OPTION_CONNECTION_TIMEOUT, o->conn_timeout,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)REQ_MEMORY,
			     MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "maia-exporter: cannot start the HTTP server (libmicrohttpd)\n");
		close(lfd);
		return 1;
	}
	fprintf(stderr, "maia-exporter: serving http://%s:%d/metrics\n", o->bind_addr, port);
	while (sigwait(&stop, &sig))
		;
	MHD_stop_daemon(d);	/* closes lfd too */
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: maia-exporter [--port N] [--bind ADDR] [--conn-timeout SEC] "
		   "[--max-conns N] [--once]\n"
		   "  -p, --port N            TCP port (default %d; 0: any free port, printed)\n"
		   "  -b, --bind ADDR         IPv4 address to listen on (default 127.0.0.1;\n"
		   "                          0.0.0.0 for a Prometheus on another host)\n"
		   "  -t, --conn-timeout SEC  close a connection idle this long (default %u)\n"
		   "  -c, --max-conns N       connections served at once (default %u)\n"
		   "  -1, --once              print one scrape to stdout and exit\n",
		DEFAULT_PORT, DEFAULT_CONN_TIMEOUT, DEFAULT_MAX_CONNS);
}

/* A decimal in [min, max], or -1. */
static long parse_num(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "conn-timeout", required_argument, NULL, 't' },
		{ "max-conns", required_argument, NULL, 'c' },
		{ "once", no_argument, NULL, '1' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_opts o = {
		.bind_addr = "127.0.0.1",
		.port = DEFAULT_PORT,
		.conn_timeout = DEFAULT_CONN_TIMEOUT,
		.max_conns = DEFAULT_MAX_CONNS,
	};
	bool once = false;
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "p:b:t:c:1h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			v = parse_num(optarg, 0, 65535);
			if (v < 0) {
				fprintf(stderr, "maia-exporter: bad port '%s'\n", optarg);
				return 2;
			}
			o.port = (int)v;
			break;
		case 'b':
			o.bind_addr = optarg;
			break;
		case 't':
			v = parse_num(optarg, 1, 86400);
			if (v < 0) {
				fprintf(stderr, "maia-exporter: bad --conn-timeout '%s' (1..86400 s)\n",
					optarg);
				return 2;
			}
			o.conn_timeout = (unsigned int)v;
			break;
		case 'c':
			v = parse_num(optarg, 1, 65536);
			if (v < 0) {
				fprintf(stderr, "maia-exporter: bad --max-conns '%s' (1..65536)\n",
					optarg);
				return 2;
			}
			o.max_conns = (unsigned int)v;
			break;
		case '1':
			once = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (once) {
		scrape(stdout);
		return fflush(stdout) ? 1 : 0;
	}
	return serve(&o);
}
