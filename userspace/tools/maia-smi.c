// SPDX-License-Identifier: MIT
/*
 * maia-smi: list Maia devices, their memory and the processes using them;
 * load and unload the driver.
 *
 *   maia-smi [--json] [-l SECONDS]   one entry per device (-l: repeat)
 *   maia-smi ping [-n COUNT]         round trips through a hardware queue
 *   maia-smi load [PARAM=VALUE...]   load maia.ko (libkmod)
 *   maia-smi unload                  unload it
 *
 * Memory in use, resets, power, clocks and per-tile busy time come from
 * libmaia's telemetry snapshot (maia_telemetry_read: the driver's sysfs
 * and hwmon files, as maia-exporter reads them); processes from /proc/PID/fdinfo, where DRM drivers print
 * drm-usage-stats (Documentation/gpu/drm-usage-stats.rst): drm-driver,
 * drm-pdev, drm-client-id and drm-total-* / drm-resident-* memory keys.
 *
 * On a device with a chip model (hardware 1.8) the chip model's bandwidths
 * and peaks are listed, and the activity is modeled: power, tensor
 * utilization, HBM saturation and MFU over the device's window of modeled
 * time, achieved TFLOPS since power-on (with -l: since the last refresh).
 * A process's busy time (drm-engine-*) is then modeled device time; its
 * host time is the maia-host-engine-* keys.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libkmod.h>

#include "libmaia.h"
#include "maia/hw/dtype.h"

#define MAX_CLIENTS	256

/* One open DRM file of a process (fds sharing a client id are counted once). */
struct client {
	int pid;
	char comm[32];
	unsigned long long client_id;
	char pdev[32];
	unsigned long long hbm_bytes;	/* drm-total-hbm */
	unsigned long long host_bytes;	/* drm-total-host */
	unsigned long long busy_ns;	/* sum of drm-engine-* (modeled on hardware 1.8) */
	unsigned long long host_ns;	/* sum of maia-host-engine-* (driver 1.7) */
};

struct device_state {
	struct maia_device_info info;
	long long hbm_used;		/* -1 if the driver does not say */
	long long hbm_free;
	long long resets;
	/* HBM ECC: corrected, uncorrectable, pages retired and pending; -1 if absent. */
	long long ecc_ce, ecc_ue, retired, retired_pending;
	/* Telemetry (maia_telemetry_read, as maia-exporter); -1 if absent. */
	long long power_uw, cap_uw, temp_mc, freq_hz, util, throttle_reasons, throttle_count;
	/* busy time of each tile, us; ntiles 0 if absent */
	int ntiles;
	const uint64_t *tile_us;
	/* The chip model (hardware 1.8) and modeled telemetry; has_* false if absent. */
	bool has_model, has_modeled;
	struct maia_device_model model;
	struct maia_telemetry_modeled tmm;
	long long tensor_util;
	/* Achieved TFLOP/s and MFU (0..1) over rate_s of modeled time; rate_s 0 if none. */
	double tflops, mfu, rate_s;
	bool rate_since_refresh;	/* else since power-on */
};

/* A telemetry value, or -1 when the driver does not provide it. */
static long long tm_value(const struct maia_telemetry *t, uint64_t field, long long v)
{
	return t->valid & field ? v : -1;
}

/* The device's telemetry snapshot into d; tm must outlive d. */
static void read_telemetry(struct device_state *d, struct maia_telemetry *tm)
{
	if (maia_telemetry_read(d->info.pci_address, tm))
		tm->valid = 0;	/* gone since it was opened: show what the ioctls said */
	d->hbm_used = tm_value(tm, MAIA_TM_HBM_USED, (long long)tm->hbm_used_bytes);
	d->hbm_free = tm_value(tm, MAIA_TM_HBM_FREE, (long long)tm->hbm_free_bytes);
	d->resets = tm_value(tm, MAIA_TM_RESET_COUNT, (long long)tm->reset_count);
	d->ecc_ce = tm_value(tm, MAIA_TM_ECC_CE, (long long)tm->ecc_ce_count);
	d->ecc_ue = tm_value(tm, MAIA_TM_ECC_UE, (long long)tm->ecc_ue_count);
	d->retired = tm_value(tm, MAIA_TM_RETIRED_PAGES, (long long)tm->retired_pages);
	d->retired_pending = tm_value(tm, MAIA_TM_RETIRED_PENDING,
				      (long long)tm->retired_pages_pending);
	d->power_uw = tm_value(tm, MAIA_TM_POWER, (long long)tm->power_uw);
	d->cap_uw = tm_value(tm, MAIA_TM_POWER_CAP, (long long)tm->power_cap_uw);
	d->temp_mc = tm_value(tm, MAIA_TM_TEMP, tm->temp_mc);
	d->freq_hz = tm_value(tm, MAIA_TM_CLOCK, (long long)tm->clock_hz);
	d->util = tm_value(tm, MAIA_TM_UTILIZATION, (long long)tm->utilization_pct);
	d->throttle_reasons = tm_value(tm, MAIA_TM_THROTTLE_REASONS,
				       (long long)tm->throttle_reasons);
	d->throttle_count = tm_value(tm, MAIA_TM_THROTTLE_COUNT, (long long)tm->throttle_count);
	d->ntiles = tm->valid & MAIA_TM_TILES ? (int)tm->num_tiles : 0;
	d->tile_us = tm->tile_busy_us;
	d->tensor_util = tm_value(tm, MAIA_TM_TENSOR_UTILIZATION,
				  (long long)tm->tensor_utilization_pct);
}

/*
 * The device's previous modeled snapshot, by PCI address, for rates
 * between refreshes (-l).
 */
#define MAX_PREV	64
static struct prev_snap {
	char pci[16];
	struct maia_telemetry_modeled tmm;
} prev[MAX_PREV];
static int nprev;

/* The chip model and the modeled telemetry; rates since power-on or the last refresh. */
static void read_modeled(struct device_state *d)
{
	struct maia_telemetry_modeled zero = { 0 };
	struct maia_modeled_rates r;
	struct prev_snap *p = NULL;
	int k;

	d->has_model = maia_model_read(d->info.pci_address, &d->model) == 0;
	d->has_modeled = maia_telemetry_read_modeled(d->info.pci_address, &d->tmm) == 0 &&
			 (d->tmm.valid & MAIA_TMM_MODELED_TIME);
	d->rate_s = 0;
	d->rate_since_refresh = false;
	if (!d->has_modeled)
		return;
	for (k = 0; k < nprev; k++)
		if (!strcmp(prev[k].pci, d->info.pci_address))
			p = &prev[k];
	if (p && maia_modeled_rates(&p->tmm, &d->tmm, &r) == 0) {
		d->rate_since_refresh = true;
	} else {
		/* since power-on: from an all-zero snapshot with the same bits */
		zero.valid = d->tmm.valid;
		if (maia_modeled_rates(&zero, &d->tmm, &r))
			r.modeled_s = 0;
	}
	if (r.modeled_s > 0) {
		d->tflops = r.tflops;
		d->mfu = r.mfu;
		d->rate_s = r.modeled_s;
	}
	if (!p && nprev < MAX_PREV)
		p = &prev[nprev++];
	if (p) {
		snprintf(p->pci, sizeof(p->pci), "%s", d->info.pci_address);
		p->tmm = d->tmm;
	}
}

/* ---- /proc ------------------------------------------------------------- */

/* "12 KiB" / "3 MiB" / "42" -> bytes (drm_print_memory_stats units). */
static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	while (*end == ' ')
		end++;
	if (!strncmp(end, "KiB", 3))
		v <<= 10;
	else if (!strncmp(end, "MiB", 3))
		v <<= 20;
	else if (!strncmp(end, "GiB", 3))
		v <<= 30;
	return v;
}

/* Parse one fdinfo file; true if it is a maia DRM file. */
static bool parse_fdinfo(const char *path, struct client *c)
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
		else if (!strcmp(line, "drm-total-hbm"))
			c->hbm_bytes = parse_size(v);
		else if (!strcmp(line, "drm-total-host"))
			c->host_bytes = parse_size(v);
		else if (!strncmp(line, "drm-engine-", 11))
			c->busy_ns += strtoull(v, NULL, 10);
		else if (!strncmp(line, "maia-host-engine-", 17))
			c->host_ns += strtoull(v, NULL, 10);
	}
	fclose(f);
	return maia;
}

/* Every maia DRM client of every process we may inspect. */
static int scan_clients(struct client *out, int max)
{
	DIR *proc = opendir("/proc"), *fds;
	struct dirent *pe, *fe;
	int n = 0, i;

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
			continue;	/* gone, or not ours to see */
		while ((fe = readdir(fds)) && n < max) {
			struct client c = { .pid = pid };
			bool dup = false;

			if (fe->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", pid, fe->d_name);
			if (!parse_fdinfo(path, &c))
				continue;
			for (i = 0; i < n; i++)
				dup |= out[i].pid == pid && out[i].client_id == c.client_id;
			if (dup)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/comm", pid);
			{
				FILE *f = fopen(path, "r");

				if (f) {
					if (fgets(c.comm, sizeof(c.comm), f))
						c.comm[strcspn(c.comm, "\n")] = '\0';
					fclose(f);
				}
			}
			out[n++] = c;
		}
		closedir(fds);
	}
	closedir(proc);
	return n;
}

/* ---- listing ------------------------------------------------------------ */

static void print_dtypes(uint32_t mask, const char *sep, const char *quote)
{
	const char *s = "";
	unsigned int t;

	for (t = 0; t < MAIA_DTYPE_COUNT; t++) {
		if (!(mask & (1u << t)))
			continue;
		printf("%s%s%s%s", s, quote, maia_dtype_name(t), quote);
		s = sep;
	}
}

static double mib(unsigned long long b)
{
	return b / (double)(1 << 20);
}

static void print_text(const struct device_state *d, const struct client *cl, int ncl)
{
	const struct maia_device_info *i = &d->info;
	int k, shown = 0;

	printf("accel%d  %s  [%04x:%04x rev %u.%u]  %s\n", i->index, i->pci_address,
	       i->vendor_id, i->device_id, i->revision >> 8, i->revision & 0xff, i->node);
	printf("  firmware   %u.%u.%u (ABI %u.%u)   driver %s\n", i->fw_version >> 16,
	       (i->fw_version >> 8) & 0xff, i->fw_version & 0xff, i->fw_abi >> 16,
	       i->fw_abi & 0xffff, i->driver_version);
	if (d->hbm_used >= 0)
		printf("  HBM        %.1f / %.1f MiB used (%.1f%%)\n",
		       mib((unsigned long long)d->hbm_used), mib(i->hbm_size),
		       100.0 * (double)d->hbm_used / (double)i->hbm_size);
	else
		printf("  HBM        %.1f GiB\n", i->hbm_size / (double)(1ull << 30));
	printf("  topology   %u clusters x %u tiles, %u KiB SRAM per cluster, %u queues\n",
	       i->clusters, i->tiles_per_cluster, i->sram_kib, i->num_queues);
	if (i->link_width)
		printf("  PCIe       %u.%u GT/s x%u\n", i->link_speed_gts_x10 / 10,
		       i->link_speed_gts_x10 % 10, i->link_width);
	if (d->resets >= 0)
		printf("  resets     %lld\n", d->resets);
	if (d->power_uw >= 0)
		printf("  power      %.1f W (cap %.0f W)  %.1f C  %lld MHz  util %lld%%  "
		       "throttle 0x%llx (%lld events)\n", d->power_uw / 1e6, d->cap_uw / 1e6,
		       d->temp_mc / 1e3, d->freq_hz / 1000000, d->util, d->throttle_reasons,
		       d->throttle_count);
	if (d->has_model) {
		const struct maia_device_model *m = &d->model;
		unsigned int t;
		const char *sep = "";

		printf("  model      %s: HBM %.0f GB/s, host link %.0f GB/s, fabric %.1f GB/s per "
		       "port (%.1f us a hop), SRAM %.0f MB, design power %.0f W\n", m->name,
		       m->hbm_mbps / 1e3, m->host_mbps / 1e3, m->link_mbps / 1e3,
		       m->link_lat_ns / 1e3, m->sram_kib * 1024.0 / 1e6, m->design_power_mw / 1e3);
		printf("  peaks      ");
		for (t = 0; t < MAIA_DTYPE_COUNT; t++) {
			if (!m->peak_gflops[t])
				continue;
			printf("%s%s %.0f", sep, maia_dtype_name(t), m->peak_gflops[t] / 1e3);
			sep = ", ";
		}
		printf(" TFLOPS; vector %.1f TFLOPS\n", m->vector_gflops / 1e3);
	}
	if (d->has_modeled) {
		printf("  modeled    power %.1f W  tensor util %lld%%  HBM saturation %llu%%  "
		       "MFU %llu%%  (window)\n", d->power_uw >= 0 ? d->power_uw / 1e6 : 0.0,
		       d->tensor_util, (unsigned long long)d->tmm.hbm_utilization_pct,
		       (unsigned long long)d->tmm.mfu_pct);
		if (d->rate_s > 0)
			printf("  achieved   %.1f TFLOPS, MFU %.1f%% over %.3f ms of modeled time "
			       "%s\n", d->tflops, 100.0 * d->mfu, d->rate_s * 1e3,
			       d->rate_since_refresh ? "since the last refresh" : "since power-on");
	}
	if (d->ntiles) {
		long long lo = (long long)d->tile_us[0], hi = (long long)d->tile_us[0], sum = 0;
		int t;

		for (t = 0; t < d->ntiles; t++) {
			long long us = (long long)d->tile_us[t];

			lo = us < lo ? us : lo;
			hi = us > hi ? us : hi;
			sum += us;
		}
		printf("  tiles      %d busy %.1f ms in all, per tile %.1f .. %.1f ms\n", d->ntiles,
		       sum / 1e3, lo / 1e3, hi / 1e3);
	}
	printf("  dtypes     ");
	print_dtypes(i->dtypes, " ", "");
	printf("\n");
	for (k = 0; k < ncl; k++) {
		if (strcmp(cl[k].pdev, i->pci_address))
			continue;
		if (!shown++)
			printf("  processes  %7s  %-16s %6s %12s %12s %12s %12s\n", "PID", "NAME",
			       "CLIENT", "HBM MiB", "HOST MiB",
			       d->has_model ? "MODELED ms" : "BUSY ms", "HOST ms");
		printf("             %7d  %-16s %6llu %12.1f %12.1f %12.3f %12.1f\n", cl[k].pid,
		       cl[k].comm, cl[k].client_id, mib(cl[k].hbm_bytes), mib(cl[k].host_bytes),
		       cl[k].busy_ns / 1e6, cl[k].host_ns / 1e6);
	}
	if (!shown)
		printf("  processes  none\n");
}

static void print_json(const struct device_state *d, const struct client *cl, int ncl,
		       int first)
{
	const struct maia_device_info *i = &d->info;
	int k, shown = 0;

	printf("%s{\"index\":%d,\"node\":\"%s\",\"pci_address\":\"%s\","
	       "\"vendor_id\":\"0x%04x\",\"device_id\":\"0x%04x\",\"revision\":%u,"
	       "\"firmware_version\":\"%u.%u.%u\",\"firmware_abi\":\"%u.%u\","
	       "\"driver\":\"%s\",\"hbm_total_bytes\":%llu,\"clusters\":%u,"
	       "\"tiles_per_cluster\":%u,\"sram_kib_per_cluster\":%u,\"queues\":%u,"
	       "\"pcie_link_gts\":%.1f,\"pcie_link_width\":%u,\"dtypes\":[",
	       first ? "" : ",", i->index, i->node, i->pci_address, i->vendor_id,
	       i->device_id, i->revision, i->fw_version >> 16, (i->fw_version >> 8) & 0xff,
	       i->fw_version & 0xff, i->fw_abi >> 16, i->fw_abi & 0xffff, i->driver_version,
	       (unsigned long long)i->hbm_size, i->clusters, i->tiles_per_cluster,
	       i->sram_kib, i->num_queues, i->link_speed_gts_x10 / 10.0, i->link_width);
	print_dtypes(i->dtypes, ",", "\"");
	printf("]");
	if (d->hbm_used >= 0)
		printf(",\"hbm_used_bytes\":%lld", d->hbm_used);
	if (d->hbm_free >= 0)
		printf(",\"hbm_free_bytes\":%lld", d->hbm_free);
	if (d->resets >= 0)
		printf(",\"resets\":%lld", d->resets);
	if (d->ecc_ce >= 0)
		printf(",\"hbm_ecc_ce_count\":%lld", d->ecc_ce);
	if (d->ecc_ue >= 0)
		printf(",\"hbm_ecc_ue_count\":%lld", d->ecc_ue);
	if (d->retired >= 0)
		printf(",\"hbm_retired_pages\":%lld", d->retired);
	if (d->retired_pending >= 0)
		printf(",\"hbm_retired_pages_pending\":%lld", d->retired_pending);
	if (d->power_uw >= 0)
		printf(",\"power_w\":%.3f,\"power_cap_w\":%.3f,\"temperature_c\":%.3f,"
		       "\"clock_mhz\":%lld,\"utilization_pct\":%lld,\"throttle_reasons\":%lld,"
		       "\"throttle_count\":%lld", d->power_uw / 1e6, d->cap_uw / 1e6,
		       d->temp_mc / 1e3, d->freq_hz / 1000000, d->util, d->throttle_reasons,
		       d->throttle_count);
	if (d->has_model) {
		const struct maia_device_model *m = &d->model;
		const char *sep = "";
		unsigned int t;

		printf(",\"model\":{\"name\":\"%s\",\"hbm_bytes\":%llu,\"hbm_mbps\":%u,"
		       "\"host_mbps\":%u,\"link_mbps\":%u,\"link_latency_ns\":%u,"
		       "\"command_ns\":%u,\"job_ns\":%u,\"vector_gflops\":%u,\"sram_kib\":%u,"
		       "\"design_power_mw\":%u,\"peak_gflops\":{", m->name,
		       (unsigned long long)m->hbm_bytes, m->hbm_mbps, m->host_mbps, m->link_mbps,
		       m->link_lat_ns, m->cmd_ns, m->job_ns, m->vector_gflops, m->sram_kib,
		       m->design_power_mw);
		for (t = 0; t < MAIA_DTYPE_COUNT; t++) {
			if (!m->peak_gflops[t])
				continue;
			printf("%s\"%s\":%u", sep, maia_dtype_name(t), m->peak_gflops[t]);
			sep = ",";
		}
		printf("}}");
	}
	if (d->has_modeled) {
		printf(",\"modeled_time_ns\":%llu,\"peak_time_ns\":%llu,"
		       "\"hbm_utilization_pct\":%llu,\"mfu_pct\":%llu",
		       (unsigned long long)d->tmm.modeled_time_ns,
		       (unsigned long long)d->tmm.peak_time_ns,
		       (unsigned long long)d->tmm.hbm_utilization_pct,
		       (unsigned long long)d->tmm.mfu_pct);
		if (d->tensor_util >= 0)
			printf(",\"tensor_utilization_pct\":%lld", d->tensor_util);
		if (d->rate_s > 0)
			printf(",\"achieved_tflops\":%.3f,\"achieved_mfu\":%.4f,"
			       "\"achieved_over_modeled_s\":%.6f,\"achieved_since\":\"%s\"",
			       d->tflops, d->mfu, d->rate_s,
			       d->rate_since_refresh ? "refresh" : "power-on");
	}
	if (d->ntiles) {
		printf(",\"tile_busy_us\":[");
		for (k = 0; k < d->ntiles; k++)
			printf("%s%lld", k ? "," : "", (long long)d->tile_us[k]);
		printf("]");
	}
	printf(",\"processes\":[");
	for (k = 0; k < ncl; k++) {
		const char *p;

		if (strcmp(cl[k].pdev, i->pci_address))
			continue;
		printf("%s{\"pid\":%d,\"name\":\"", shown++ ? "," : "", cl[k].pid);
		for (p = cl[k].comm; *p; p++)	/* comm is arbitrary bytes */
			if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
				printf("\\u%04x", (unsigned char)*p);
			else
				putchar(*p);
		printf("\",\"client_id\":%llu,\"hbm_bytes\":%llu,\"host_bytes\":%llu,"
		       "\"busy_ns\":%llu,\"host_busy_ns\":%llu}", cl[k].client_id,
		       cl[k].hbm_bytes, cl[k].host_bytes, cl[k].busy_ns, cl[k].host_ns);
	}
	printf("]}");
}

static int list(int json)
{
	static struct client clients[MAX_CLIENTS];
	static struct maia_telemetry tm;
	int n = maia_device_count(), idx, err, shown = 0, ncl;

	if (n < 0) {
		fprintf(stderr, "maia-smi: %s\n", maia_strerror(n));
		return 1;
	}
	ncl = scan_clients(clients, MAX_CLIENTS);
	if (json)
		printf("[");
	for (idx = 0; idx < n; idx++) {
		struct device_state d;
		struct maia_device *dev;

		err = maia_device_open(idx, &dev);
		if (!err) {
			err = maia_device_info(dev, &d.info);
			maia_device_close(dev);
		}
		if (err) {
			fprintf(stderr, "maia-smi: device %d: %s\n", idx, maia_strerror(err));
			continue;
		}
		read_telemetry(&d, &tm);
		read_modeled(&d);
		/* Our own open file is gone by now, so it does not show. */
		if (json)
			print_json(&d, clients, ncl, shown == 0);
		else
			print_text(&d, clients, ncl);
		shown++;
	}
	if (json)
		printf("]\n");
	else if (!shown)
		printf("No Maia devices found (is the driver loaded? try 'maia-smi load').\n");
	fflush(stdout);
	return shown == n ? 0 : 1;
}

/* ---- ping ---------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int ping(int count)
{
	struct maia_device *dev;
	uint64_t *rt;
	int i, err;

	err = maia_device_open(0, &dev);
	if (err) {
		fprintf(stderr, "maia-smi: open: %s\n", maia_strerror(err));
		return 1;
	}
	rt = calloc((size_t)count, sizeof(*rt));
	if (!rt) {
		maia_device_close(dev);
		return 1;
	}
	for (i = 0; i < count; i++) {
		struct maia_ping_result r;
		uint64_t cookie = 0x6d61696100000000ull | (uint64_t)i;

		err = maia_ping(dev, cookie, &r);
		if (err || r.echo != cookie) {
			fprintf(stderr, "maia-smi: ping %d: %s (echo 0x%llx)\n", i,
				err ? maia_strerror(err) : "wrong echo",
				(unsigned long long)(err ? 0 : r.echo));
			free(rt);
			maia_device_close(dev);
			return 1;
		}
		rt[i] = r.round_trip_ns;
	}
	qsort(rt, (size_t)count, sizeof(*rt), cmp_u64);
	printf("ping: %d round trips through queue 0, doorbell -> device -> MSI-X: "
	       "min %.1f us, median %.1f us, max %.1f us\n", count, rt[0] / 1e3,
	       rt[count / 2] / 1e3, rt[count - 1] / 1e3);
	free(rt);
	maia_device_close(dev);
	return 0;
}

/* ---- load / unload ----------------------------------------------------------- */

#define DEFAULT_FIRMWARE	"maia/maia_fw_v1.bin"

/* libkmod logs errors to stderr itself; we say what failed in our words. */
static struct kmod_ctx *kmod_open(void)
{
	struct kmod_ctx *ctx = kmod_new(NULL, NULL);
	const char *dbg = getenv("MAIA_DEBUG");

	if (ctx && !(dbg && *dbg && strcmp(dbg, "0")))
		kmod_set_log_priority(ctx, 0);
	return ctx;
}

/* The module: by name through modules.dep, else MAIA_MODULE or the guest's path. */
static int find_module(struct kmod_ctx *ctx, struct kmod_module **mod, bool *by_path)
{
	const char *path = getenv("MAIA_MODULE");
	struct kmod_list *l = NULL;
	int err;

	*by_path = false;
	if (!path) {
		err = kmod_module_new_from_lookup(ctx, "maia", &l);
		if (!err && l) {
			*mod = kmod_module_get_module(l);
			kmod_module_unref_list(l);
			if (kmod_module_get_path(*mod))
				return 0;
			kmod_module_unref(*mod);
		}
		path = "/lib/modules/maia.ko";	/* where qemu/run-guest puts it */
	}
	if (access(path, R_OK))
		return -ENOENT;
	*by_path = true;
	return kmod_module_new_from_path(ctx, path, mod);
}

static int load(int argc, char **argv)
{
	char opts[1024] = "", fw[PATH_MAX];
	const char *fw_name = DEFAULT_FIRMWARE;
	struct kmod_module *mod;
	struct kmod_ctx *ctx;
	bool by_path;
	size_t len = 0;
	int i, err, n;

	for (i = 0; i < argc; i++) {
		if (!strchr(argv[i], '=')) {
			fprintf(stderr, "maia-smi load: '%s' is not PARAM=VALUE\n", argv[i]);
			return 2;
		}
		if (!strncmp(argv[i], "firmware=", 9))
			fw_name = argv[i] + 9;
		n = snprintf(opts + len, sizeof(opts) - len, "%s%s", len ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= sizeof(opts) - len) {
			fprintf(stderr, "maia-smi load: parameters too long\n");
			return 2;
		}
		len += (size_t)n;
	}
	/* The driver would fail probe without it; say so before loading. */
	snprintf(fw, sizeof(fw), "/lib/firmware/%s", fw_name);
	if (access(fw, R_OK)) {
		fprintf(stderr, "maia-smi load: firmware %s is missing: install it (the "
			"firmware-sim build makes build/firmware-sim/firmware/%s) or pass "
			"firmware=PATH relative to /lib/firmware\n", fw, DEFAULT_FIRMWARE);
		return 1;
	}
	ctx = kmod_open();
	if (!ctx) {
		fprintf(stderr, "maia-smi load: libkmod initialisation failed\n");
		return 1;
	}
	err = find_module(ctx, &mod, &by_path);
	if (err) {
		if (getenv("MAIA_MODULE"))
			fprintf(stderr, "maia-smi load: no module at MAIA_MODULE=%s\n",
				getenv("MAIA_MODULE"));
		else
			fprintf(stderr, "maia-smi load: module maia not found (not in "
				"/lib/modules/$(uname -r), not at /lib/modules/maia.ko; set "
				"MAIA_MODULE=PATH)\n");
		kmod_unref(ctx);
		return 1;
	}
	if (by_path)	/* no modules.dep entry: dependencies must already be loaded */
		err = kmod_module_insert_module(mod, 0, opts);
	else
		err = kmod_module_probe_insert_module(mod, KMOD_PROBE_FAIL_ON_LOADED, opts,
						      NULL, NULL, NULL);
	if (err == -EEXIST) {
		fprintf(stderr, "maia-smi load: maia is already loaded ('maia-smi unload' "
			"first to change parameters)\n");
	} else if (err) {
		fprintf(stderr, "maia-smi load: loading %s failed: %s%s\n",
			kmod_module_get_path(mod) ?: "maia", strerror(-err),
			err == -ENOENT ? " (a module it depends on, e.g. gpu_sched, is missing)" :
			err == -EPERM ? " (run as root)" : " (see dmesg)");
	}
	kmod_module_unref(mod);
	kmod_unref(ctx);
	if (err)
		return 1;
	/* Probe is synchronous for PCI drivers: devices are bound by now. */
	n = maia_device_count();
	printf("maia-smi: loaded maia%s%s; %d device%s bound\n", len ? " with " : "", opts, n,
	       n == 1 ? "" : "s");
	if (n <= 0)
		printf("maia-smi: no device came up: check 'lspci -d 1414:' and dmesg "
		       "(firmware boot errors are logged there)\n");
	return 0;
}

static int unload(void)
{
	struct kmod_module *mod;
	struct kmod_ctx *ctx;
	int err;

	ctx = kmod_open();
	if (!ctx) {
		fprintf(stderr, "maia-smi unload: libkmod initialisation failed\n");
		return 1;
	}
	err = kmod_module_new_from_name(ctx, "maia", &mod);
	if (!err) {
		if (kmod_module_get_initstate(mod) < 0) {
			fprintf(stderr, "maia-smi unload: maia is not loaded\n");
			kmod_module_unref(mod);
			kmod_unref(ctx);
			return 1;
		}
		err = kmod_module_remove_module(mod, 0);
		kmod_module_unref(mod);
	}
	kmod_unref(ctx);
	if (err == -EAGAIN || err == -EBUSY) {
		static struct client clients[MAX_CLIENTS];
		int n = scan_clients(clients, MAX_CLIENTS), i;

		fprintf(stderr, "maia-smi unload: maia is in use%s", n ? " by:" : "\n");
		for (i = 0; i < n; i++)
			fprintf(stderr, " %d (%s)%s", clients[i].pid, clients[i].comm,
				i + 1 == n ? "\n" : ",");
		return 1;
	}
	if (err) {
		fprintf(stderr, "maia-smi unload: %s\n", strerror(-err));
		return 1;
	}
	printf("maia-smi: unloaded maia\n");
	return 0;
}

/* ---- topo: which port of which device is cabled to which ------------------ */

#define TOPO_MAX_DEV	64
#define TOPO_MAX_PORTS	16

static uint64_t read_serial(const char *pci)
{
	char path[512], buf[64] = "";
	const char *root = getenv("MAIA_SYSFS_ROOT");
	FILE *f;

	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/fabric_serial", root ? root : "/sys",
		 pci);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strtoull(buf, NULL, 0);
}

/*
 * In the spirit of nvidia-smi topo -m: a matrix of the devices of this
 * machine (Pa-Pb: the row's port a is cabled to the column's port b), then
 * every port with its peer, which may be a device of another machine.
 */
/* " avoided: down latency loss" for a failover state (hardware 1.10). */
static const char *fo_words(uint32_t state)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "%s%s%s", state & MAIA_FABRIC_FO_DOWN ? " down" : "",
		 state & MAIA_FABRIC_FO_LATENCY ? " latency" : "",
		 state & MAIA_FABRIC_FO_LOSS ? " loss" : "");
	return buf;
}

/* The failover part of a port's line: nothing while it never failed over. */
static void print_failover(const struct maia_fabric_failover *fo, bool has)
{
	if (!has || (!fo->failovers && !fo->state && !fo->relayed && !fo->resent))
		return;
	printf("; failovers %u", fo->failovers);
	if (fo->state)
		printf(" (avoided now:%s)", fo_words(fo->state));
	if (fo->relayed)
		printf(", relayed %llu", (unsigned long long)fo->relayed);
	if (fo->resent)
		printf(", re-sent %u as it went down", fo->resent);
}

static int topo(int json)
{
	static struct maia_fabric_port port[TOPO_MAX_DEV][TOPO_MAX_PORTS];
	static struct maia_fabric_failover fo[TOPO_MAX_DEV][TOPO_MAX_PORTS];
	static bool has_fo[TOPO_MAX_DEV][TOPO_MAX_PORTS];
	/* Spurious retransmit timeouts (hardware 1.12; has_rto: the device has them). */
	static uint32_t rto[TOPO_MAX_DEV][TOPO_MAX_PORTS];
	static bool has_rto[TOPO_MAX_DEV][TOPO_MAX_PORTS];
	struct maia_device_entry list[TOPO_MAX_DEV];
	unsigned int nports[TOPO_MAX_DEV];
	uint64_t serial[TOPO_MAX_DEV];
	int n = maia_device_list(list, TOPO_MAX_DEV), i, j;
	unsigned int p;

	if (n < 0) {
		fprintf(stderr, "maia-smi topo: %s\n", maia_last_error());
		return 1;
	}
	for (i = 0; i < n; i++) {
		serial[i] = read_serial(list[i].pci_address);
		for (nports[i] = 0; nports[i] < TOPO_MAX_PORTS; nports[i]++)
			if (maia_fabric_read(list[i].pci_address, nports[i], &port[i][nports[i]]))
				break;
			else {
				has_fo[i][nports[i]] = !maia_fabric_read_failover(
					list[i].pci_address, nports[i], &fo[i][nports[i]]);
				has_rto[i][nports[i]] = !maia_fabric_read_spurious_rto(
					list[i].pci_address, nports[i], &rto[i][nports[i]]);
			}
	}
	if (json) {
		printf("{\"devices\": [");
		for (i = 0; i < n; i++) {
			printf("%s{\"device\": \"maia%d\", \"pci_address\": \"%s\", "
			       "\"serial\": \"0x%016llx\", \"ports\": [", i ? ", " : "",
			       list[i].index, list[i].pci_address, (unsigned long long)serial[i]);
			for (p = 0; p < nports[i]; p++) {
				const struct maia_fabric_port *f = &port[i][p];
				int peer = -1;

				for (j = 0; f->up && j < n; j++)
					if (serial[j] == f->peer_serial)
						peer = list[j].index;
				printf("%s{\"port\": %u, \"up\": %s, \"peer_serial\": "
				       "\"0x%016llx\", \"peer_port\": %u, \"peer_device\": %d, "
				       "\"tx_bytes\": %llu, \"rx_bytes\": %llu, \"retransmits\": %llu, "
				       "\"link_downs\": %u", p ? ", " : "", p, f->up ? "true" : "false",
				       (unsigned long long)f->peer_serial, f->peer_port, peer,
				       (unsigned long long)f->tx_bytes,
				       (unsigned long long)f->rx_bytes,
				       (unsigned long long)f->retransmits, f->link_downs);
				if (has_rto[i][p])
					printf(", \"spurious_rto\": %u", rto[i][p]);
				if (has_fo[i][p])
					printf(", \"failovers\": %u, \"failover_state\": %u, "
					       "\"relayed\": %llu, \"resent\": %u, \"latency_ns\": %u, "
					       "\"loss_ppm\": %u", fo[i][p].failovers, fo[i][p].state,
					       (unsigned long long)fo[i][p].relayed, fo[i][p].resent,
					       fo[i][p].latency_ns, fo[i][p].loss_ppm);
				printf("}");
			}
			printf("]}");
		}
		printf("]}\n");
		return 0;
	}
	printf("%-8s", "");
	for (j = 0; j < n; j++)
		printf("maia%-6d", list[j].index);
	printf("\n");
	for (i = 0; i < n; i++) {
		printf("maia%-4d", list[i].index);
		for (j = 0; j < n; j++) {
			char cell[64] = "", *c = cell;

			if (i == j) {
				printf("%-10s", "X");
				continue;
			}
			for (p = 0; p < nports[i]; p++)
				if (port[i][p].up && port[i][p].peer_serial == serial[j] && serial[j])
					c += snprintf(c, sizeof(cell) - (size_t)(c - cell), "%sP%u-P%u",
						      c == cell ? "" : ",", p, port[i][p].peer_port);
			printf("%-10s", cell[0] ? cell : "-");
		}
		printf("\n");
	}
	printf("\nLegend: X = self, Pa-Pb = the row's port a is cabled to the column's port b, "
	       "- = no link\n\n");
	for (i = 0; i < n; i++) {
		if (!nports[i])
			printf("maia%d (%s): no fabric\n", list[i].index, list[i].pci_address);
		for (p = 0; p < nports[i]; p++) {
			const struct maia_fabric_port *f = &port[i][p];
			char peer[64] = "another machine";

			for (j = 0; j < n; j++)
				if (f->up && serial[j] == f->peer_serial)
					snprintf(peer, sizeof(peer), "maia%d", list[j].index);
			if (f->up)
				printf("maia%d port %u: up   -> %s port %u (serial 0x%016llx), "
				       "tx %llu B, rx %llu B, retransmits %llu, link downs %u",
				       list[i].index, p, peer, f->peer_port,
				       (unsigned long long)f->peer_serial,
				       (unsigned long long)f->tx_bytes, (unsigned long long)f->rx_bytes,
				       (unsigned long long)f->retransmits, f->link_downs);
			else
				printf("maia%d port %u: down (link downs %u)", list[i].index, p,
				       f->link_downs);
			/* Timeouts that were late acks, not losses: only when there were some. */
			if (has_rto[i][p] && rto[i][p])
				printf(", spurious timeouts %u", rto[i][p]);
			print_failover(&fo[i][p], has_fo[i][p]);
			printf("\n");
		}
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: maia-smi [--json] [-l SECONDS]\n"
			"       maia-smi ping [-n COUNT]\n"
			"       maia-smi topo [--json]\n"
			"       maia-smi load [PARAM=VALUE...]\n"
			"       maia-smi unload\n");
}

int main(int argc, char **argv)
{
	int json = 0, interval = 0, i;

	if (argc >= 2 && !strcmp(argv[1], "ping")) {
		int count = 100;

		if (argc == 4 && !strcmp(argv[2], "-n"))
			count = atoi(argv[3]);
		else if (argc != 2)
			count = 0;
		if (count > 0)
			return ping(count);
		usage();
		return 2;
	}
	if (argc >= 2 && !strcmp(argv[1], "load"))
		return load(argc - 2, argv + 2);
	if (argc == 2 && !strcmp(argv[1], "topo"))
		return topo(0);
	if (argc == 3 && !strcmp(argv[1], "topo") && !strcmp(argv[2], "--json"))
		return topo(1);
	if (argc == 2 && !strcmp(argv[1], "unload"))
		return unload();
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "-l") && i + 1 < argc) {
			interval = atoi(argv[++i]);
			if (interval <= 0) {
				usage();
				return 2;
			}
		} else {
			usage();
			return 2;
		}
	}
	if (!interval)
		return list(json);
	/* Watch: text redraws the screen, JSON prints one document per line. */
	for (;;) {
		if (!json)
			printf("\033[H\033[2J");
		list(json);
		sleep((unsigned int)interval);
	}
}
