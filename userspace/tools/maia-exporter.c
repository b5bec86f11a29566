// SPDX-License-Identifier: MIT
/*
 * maia-exporter: Maia device metrics for Prometheus, in the style of NVIDIA's
 * dcgm-exporter (MAIA_FI_* names, labels device, pci_address, modelName).
 *
 *   maia-exporter [--port N] [--bind ADDR]   serve GET /metrics (default port 9400)
 *   maia-exporter --once                     print one scrape to stdout and exit
 *
 * Devices are enumerated with libmaia (once, and again when they change);
 * the values come from the driver's sysfs attributes on the PCI device and
 * its hwmon device, read afresh on every scrape (Documentation/telemetry.rst). A metric a device does not
 * provide (an older driver) is left out for that device, not reported as 0.
 * MAIA_SYSFS_ROOT (default /sys) points the sysfs reads elsewhere, as it
 * does for libmaia's enumeration.
 */
#define _GNU_SOURCE	/* accept4 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "libmaia.h"

#define MAX_DEVICES	64
#define REQ_MAX		4096

struct dev {
	char name[32];		/* "maia0" */
	char pci[32];
	char model[64];
	char hwmon[PATH_MAX + 512];	/* hwmon directory, "" if none */
	unsigned int tiles_per_cluster;
};

enum mtype { GAUGE, COUNTER };

/* How a metric's value is read and scaled. */
struct metric {
	const char *name;
	enum mtype type;
	const char *help;
	const char *file;	/* sysfs attribute of the PCI device, or hwmon file */
	bool hwmon;
	double scale;		/* value = raw * scale */
};

static const struct metric metrics[] = {
	{ "MAIA_FI_DEV_UTIL", GAUGE,
	  "Engine utilization, percent of the last second any command ran (in %).",
	  "utilization", false, 1.0 },
	{ "MAIA_FI_PROF_TENSOR_ACTIVE", GAUGE,
	  "Ratio of the last second the tensor (matrix) unit was busy (0..1).",
	  "tensor_utilization", false, 0.01 },
	{ "MAIA_FI_DEV_BUSY_TIME", COUNTER,
	  "Time any command ran since power-on (in s).",
	  "busy_time_us", false, 1e-6 },
	{ "MAIA_FI_DEV_POWER_USAGE", GAUGE,
	  "Power draw averaged over the last second (in W).",
	  "power1_average", true, 1e-6 },
	{ "MAIA_FI_DEV_POWER_CAP", GAUGE,
	  "Power cap the firmware enforces (in W).",
	  "power1_cap", true, 1e-6 },
	{ "MAIA_FI_DEV_TOTAL_ENERGY_CONSUMPTION", COUNTER,
	  "Energy consumed since power-on (in J).",
	  "energy1_input", true, 1e-6 },
	{ "MAIA_FI_DEV_TEMP", GAUGE,
	  "Die temperature (in C).",
	  "temp1_input", true, 1e-3 },
	{ "MAIA_FI_DEV_CLOCK", GAUGE,
	  "Tensor clock (in MHz).",
	  "freq1_input", true, 1e-6 },
	{ "MAIA_FI_DEV_CLOCK_THROTTLE_REASONS", GAUGE,
	  "Why the clock is below nominal: bitmask, 1 power cap, 2 thermal.",
	  "throttle_reasons", false, 1.0 },
	{ "MAIA_FI_DEV_THROTTLE_EVENTS", COUNTER,
	  "Clock step-downs by the power controller since power-on.",
	  "throttle_count", false, 1.0 },
	{ "MAIA_FI_DEV_HBM_USED", GAUGE,
	  "HBM allocated (in bytes).",
	  "hbm_used_bytes", false, 1.0 },
	{ "MAIA_FI_DEV_HBM_FREE", GAUGE,
	  "HBM free (in bytes).",
	  "hbm_free_bytes", false, 1.0 },
	{ "MAIA_FI_DEV_HBM_READ_BYTES", COUNTER,
	  "HBM bytes read by commands since power-on.",
	  "hbm_bytes_read", false, 1.0 },
	{ "MAIA_FI_DEV_HBM_WRITE_BYTES", COUNTER,
	  "HBM bytes written by commands since power-on.",
	  "hbm_bytes_written", false, 1.0 },
	{ "MAIA_FI_DEV_RESET_COUNT", COUNTER,
	  "Device resets (hang recovery) since the driver was loaded.",
	  "reset_count", false, 1.0 },
};

static const char *sysfs_root(void)
{
	const char *root = getenv("MAIA_SYSFS_ROOT");

	return root ? root : "/sys";
}

/* First hwmon directory under the PCI device, or "". */
static void find_hwmon(struct dev *d)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *dp;

	d->hwmon[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/bus/pci/devices/%s/hwmon", sysfs_root(), d->pci);
	dp = opendir(dir);
	if (!dp)
		return;
	while ((de = readdir(dp))) {
		if (strncmp(de->d_name, "hwmon", 5) == 0) {
			snprintf(d->hwmon, sizeof(d->hwmon), "%s/%s", dir, de->d_name);
			break;
		}
	}
	closedir(dp);
}

/* Basename of a symlink's target, or false. */
static bool link_base(const char *path, char *out, size_t size)
{
	char target[PATH_MAX];
	const char *base;
	ssize_t len = readlink(path, target, sizeof(target) - 1);

	if (len < 0)
		return false;
	target[len] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) >= size)
		return false;
	memcpy(out, base, strlen(base) + 1);
	return true;
}

/* Tiles per cluster from sysfs topology ("<clusters>x<tiles>"); 1 if unknown. */
static unsigned int sysfs_tiles_per_cluster(const char *pci)
{
	char path[PATH_MAX];
	unsigned int clusters = 0, tiles = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/topology", sysfs_root(), pci);
	f = fopen(path, "r");
	if (!f)
		return 1;
	if (fscanf(f, "%ux%u", &clusters, &tiles) != 2 || !tiles)
		tiles = 1;
	fclose(f);
	return tiles;
}

/*
 * Without permission to open the device nodes (a monitoring user outside
 * the device group), the accelN entries bound to the maia driver in sysfs
 * still give the index and PCI address; only the revision is unknown.
 */
static bool enumerate_sysfs(int nth, struct dev *d)
{
	char path[PATH_MAX], drv[64];
	int seen = 0;

	for (int n = 0; n < 64; n++) {
		snprintf(path, sizeof(path), "%s/class/accel/accel%d/device/driver", sysfs_root(), n);
		if (!link_base(path, drv, sizeof(drv)) || strcmp(drv, "maia"))
			continue;
		if (seen++ != nth)
			continue;
		snprintf(path, sizeof(path), "%s/class/accel/accel%d/device", sysfs_root(), n);
		if (!link_base(path, d->pci, sizeof(d->pci)))
			return false;
		snprintf(d->name, sizeof(d->name), "maia%d", n);
		snprintf(d->model, sizeof(d->model), "Maia");
		d->tiles_per_cluster = sysfs_tiles_per_cluster(d->pci);
		find_hwmon(d);
		return true;
	}
	return false;
}

static int enumerate(struct dev *devs, int max)
{
	int n = maia_device_count(), found = 0;

	for (int i = 0; i < n && found < max; i++) {
		struct maia_device_info info;
		struct maia_device *md;
		struct dev *d = &devs[found];

		if (maia_device_open(i, &md) < 0) {
			if (enumerate_sysfs(i, d))
				found++;
			continue;
		}
		if (maia_device_info(md, &info) == 0) {
			snprintf(d->name, sizeof(d->name), "maia%d", info.index);
			snprintf(d->pci, sizeof(d->pci), "%s", info.pci_address);
			snprintf(d->model, sizeof(d->model), "Maia %s rev %u.%u",
				 info.device_id == 0xa100 ? "100" : "accelerator",
				 info.revision >> 8 & 0xff, info.revision & 0xff);
			d->tiles_per_cluster = info.tiles_per_cluster ? info.tiles_per_cluster : 1;
			find_hwmon(d);
			found++;
		}
		maia_device_close(md);
	}
	return found;
}

/* Reads one number (decimal or 0x hex) from a file. */
static bool read_value(const struct dev *d, const struct metric *m, double *out)
{
	char path[PATH_MAX + 1024], buf[64];
	unsigned long long v;
	char *end;
	FILE *f;

	if (m->hwmon) {
		if (!d->hwmon[0])
			return false;
		snprintf(path, sizeof(path), "%s/%s", d->hwmon, m->file);
	} else {
		snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/%s", sysfs_root(), d->pci,
			 m->file);
	}
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return false;
	}
	fclose(f);
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (errno || end == buf || (*end && *end != '\n'))
		return false;
	*out = (double)v * m->scale;
	return true;
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
 * the driver, so scrapes reuse the list while the device count (a sysfs
 * scan) is unchanged and every cached device is still there.
 */
static struct dev cached[MAX_DEVICES];
static int ncached = -1;

static bool cache_valid(void)
{
	char path[PATH_MAX + 64];

	if (ncached < 0 || maia_device_count() != ncached)
		return false;
	for (int i = 0; i < ncached; i++) {
		snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/driver", sysfs_root(),
			 cached[i].pci);
		if (access(path, F_OK))
			return false;
	}
	return true;
}

/*
 * Per-tile busy time (sysfs tile_busy_time_us: microseconds, one value per
 * tile), one sample per tile labelled with its cluster and tile index.
 */
static void scrape_tiles(FILE *out, const struct dev *devs, int n)
{
	fputs("# HELP MAIA_FI_PROF_TILE_BUSY_TIME Time the tile ran tensor work since power-on "
	      "(in s).\n# TYPE MAIA_FI_PROF_TILE_BUSY_TIME counter\n", out);
	for (int j = 0; j < n; j++) {
		char path[PATH_MAX + 64], buf[16384], *p, *end;
		unsigned int t = 0, per = devs[j].tiles_per_cluster ? devs[j].tiles_per_cluster : 1;
		size_t len;
		FILE *f;

		snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/tile_busy_time_us",
			 sysfs_root(), devs[j].pci);
		f = fopen(path, "r");
		if (!f)
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		for (p = buf;; p = end, t++) {
			char cl[16], ti[16];
			unsigned long long us = strtoull(p, &end, 10);

			if (end == p)
				break;
			snprintf(cl, sizeof(cl), "%u", t / per);
			snprintf(ti, sizeof(ti), "%u", t % per);
			fputs("MAIA_FI_PROF_TILE_BUSY_TIME{", out);
			put_label(out, "device", devs[j].name, false);
			put_label(out, "pci_address", devs[j].pci, false);
			put_label(out, "modelName", devs[j].model, false);
			put_label(out, "cluster", cl, false);
			put_label(out, "tile", ti, true);
			fprintf(out, "} %.10g\n", (double)us * 1e-6);
		}
	}
}

static void scrape(FILE *out)
{
	const struct dev *devs = cached;
	int n;

	if (!cache_valid())
		ncached = enumerate(cached, MAX_DEVICES);
	n = ncached;
	for (int j = 0; j < n; j++)
		find_hwmon(&cached[j]);	/* renumbered when the driver is reloaded */

	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		const struct metric *m = &metrics[i];

		fprintf(out, "# HELP %s %s\n", m->name, m->help);
		fprintf(out, "# TYPE %s %s\n", m->name, m->type == GAUGE ? "gauge" : "counter");
		for (int j = 0; j < n; j++) {
			double v;

			if (!read_value(&devs[j], m, &v))
				continue;
			fprintf(out, "%s{", m->name);
			put_label(out, "device", devs[j].name, false);
			put_label(out, "pci_address", devs[j].pci, false);
			put_label(out, "modelName", devs[j].model, true);
			fprintf(out, "} %.10g\n", v);
		}
	}
	scrape_tiles(out, devs, n);
}

static void send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		buf += w;
		len -= (size_t)w;
	}
}

static void respond(int fd, const char *status, const char *type, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", status, type, len);

	send_all(fd, head, (size_t)n);
	send_all(fd, body, len);
}

/* One connection: read the request head, answer, close. */
static void serve_one(int fd)
{
	char req[REQ_MAX], method[16], path[256];
	struct timeval tv = { .tv_sec = 5 };
	size_t used = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (used < sizeof(req) - 1) {
		ssize_t r = recv(fd, req + used, sizeof(req) - 1 - used, 0);

		if (r <= 0)
			break;
		used += (size_t)r;
		req[used] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[used] = '\0';
	if (sscanf(req, "%15s %255s", method, path) != 2) {
		respond(fd, "400 Bad Request", "text/plain", "bad request\n", 12);
		return;
	}
	if (strcmp(method, "GET") != 0) {
		respond(fd, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
		return;
	}
	if (strcmp(path, "/metrics") == 0) {
		char *body = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&body, &len);

		if (!mem) {
			respond(fd, "500 Internal Server Error", "text/plain", "no memory\n", 10);
			return;
		}
		scrape(mem);
		fclose(mem);
		respond(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
		free(body);
	} else if (strcmp(path, "/") == 0) {
		static const char page[] =
			"<html><body><a href=\"/metrics\">Maia metrics</a></body></html>\n";

		respond(fd, "200 OK", "text/html", page, sizeof(page) - 1);
	} else {
		respond(fd, "404 Not Found", "text/plain", "not found\n", 10);
	}
}

static int serve(const char *bind_addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, lfd;

	if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "maia-exporter: bad bind address '%s'\n", bind_addr);
		return 2;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		perror("maia-exporter: socket");
		return 1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 16)) {
		fprintf(stderr, "maia-exporter: cannot listen on %s:%d: %s\n", bind_addr, port,
			strerror(errno));
		close(lfd);
		return 1;
	}
	fprintf(stderr, "maia-exporter: serving http://%s:%d/metrics\n", bind_addr, port);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("maia-exporter: accept");
			close(lfd);
			return 1;
		}
		serve_one(fd);
		close(fd);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: maia-exporter [--port N] [--bind ADDR] [--once]\n"
		   "  -p, --port N     TCP port (default 9400)\n"
		   "  -b, --bind ADDR  IPv4 address to listen on (default 0.0.0.0)\n"
		   "  -1, --once       print one scrape to stdout and exit\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "once", no_argument, NULL, '1' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *bind_addr = "0.0.0.0";
	bool once = false;
	long port = 9400;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "p:b:1h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			port = strtol(optarg, &end, 10);
			if (errno || *end || port < 1 || port > 65535) {
				fprintf(stderr, "maia-exporter: bad port '%s'\n", optarg);
				return 2;
			}
			break;
		case 'b':
			bind_addr = optarg;
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
	return serve(bind_addr, (int)port);
}
