/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the maia kselftests: finding maia accel nodes, loading
 * and unloading maia.ko, and reading the kernel log.
 *
 * Environment (all optional):
 *   MAIA_KO               path of maia.ko (default /lib/modules/maia.ko, where
 *                         qemu/run-guest puts it)
 *   MAIA_EXPECT_DEVICES   number of maia devices the machine must have
 *   MAIA_EXPECT_HBM_SIZE  the QEMU hbm-size property in bytes (default 1 GiB)
 *   MAIA_EXPECT_CLUSTERS, MAIA_EXPECT_TILES   topology (default 16 x 4)
 */
#ifndef MAIA_KSFT_H
#define MAIA_KSFT_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <drm.h>
#include <maia_accel.h>
#include <maia/hw/regs.h>

#define MAIA_KO_DEFAULT		"/lib/modules/maia.ko"
#define MAIA_MAX_DEVICES	16
#define MAIA_DEFAULT_HBM_SIZE	(1ull << 30)	/* qemu/hw/maia-pci.c hbm-size */
#define MAIA_DEFAULT_CLUSTERS	16
#define MAIA_DEFAULT_TILES	4

struct maia_node {
	int minor;		/* N of /dev/accel/accelN */
	char path[32];		/* /dev/accel/accelN */
	char bdf[32];		/* PCI address from sysfs, e.g. 0000:00:03.0 */
};

static inline unsigned long long maia_env_ull(const char *name, unsigned long long def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

static inline const char *maia_ko_path(void)
{
	const char *p = getenv("MAIA_KO");

	return p && *p ? p : MAIA_KO_DEFAULT;
}

static inline long long maia_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

static inline void maia_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000l };

	nanosleep(&ts, NULL);
}

/* Reads a whole small file into buf, without the trailing newline. */
static inline int maia_read_file(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return 0;
}

/* A drm-<key> value of this process's fdinfo for fd, in bytes; -1 if absent. */
static inline long long maia_fdinfo_bytes(int fd, const char *key)
{
	char path[64], buf[4096], *p, unit[8] = "";
	unsigned long long v;
	int n;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (maia_read_file(path, buf, sizeof(buf)))
		return -1;
	p = strstr(buf, key);
	if (!p || p[strlen(key)] != ':')
		return -1;
	n = sscanf(p + strlen(key) + 1, "%llu %7s", &v, unit);
	if (n < 1)
		return -1;
	if (n == 2 && !strcmp(unit, "KiB"))
		v <<= 10;
	else if (n == 2 && !strcmp(unit, "MiB"))
		v <<= 20;
	return v;
}

static inline int maia_write_file(const char *path, const char *s)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* Basename of the symlink target: the driver or PCI address of a device. */
static inline int maia_link_name(const char *link, char *buf, size_t size)
{
	char target[PATH_MAX];
	const char *base;
	size_t len;
	ssize_t n;

	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	len = strlen(base);
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(buf, base, len + 1);
	return 0;
}

/*
 * The accel nodes a maia device is bound to, found as libmaia does: through
 * /sys/class/accel and the PCI driver link, sorted by minor.
 */
static inline int maia_find_nodes(struct maia_node *nodes, int max)
{
	char link[PATH_MAX], drv[64];
	struct dirent *de;
	int n = 0, i, j;
	DIR *dir;

	dir = opendir("/sys/class/accel");
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		int minor;

		if (sscanf(de->d_name, "accel%d", &minor) != 1)
			continue;
		snprintf(link, sizeof(link), "/sys/class/accel/%s/device/driver", de->d_name);
		if (maia_link_name(link, drv, sizeof(drv)) || strcmp(drv, "maia"))
			continue;
		nodes[n].minor = minor;
		snprintf(nodes[n].path, sizeof(nodes[n].path), "/dev/accel/accel%d", minor);
		snprintf(link, sizeof(link), "/sys/class/accel/%s/device", de->d_name);
		if (maia_link_name(link, nodes[n].bdf, sizeof(nodes[n].bdf)))
			nodes[n].bdf[0] = '\0';
		n++;
	}
	closedir(dir);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && nodes[j - 1].minor > nodes[j].minor; j--) {
			struct maia_node t = nodes[j];

			nodes[j] = nodes[j - 1];
			nodes[j - 1] = t;
		}
	return n;
}

/* The maia PCI functions on the bus, bound or not (IDs from maia/hw/regs.h). */
static inline int maia_count_pci_functions(void)
{
	char path[PATH_MAX], val[32];
	struct dirent *de;
	DIR *dir;
	int n = 0;

	dir = opendir("/sys/bus/pci/devices");
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", de->d_name);
		if (maia_read_file(path, val, sizeof(val)) ||
		    strtoul(val, NULL, 16) != MAIA_PCI_VENDOR_ID)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", de->d_name);
		if (maia_read_file(path, val, sizeof(val)) ||
		    strtoul(val, NULL, 16) != MAIA_PCI_DEVICE_ID)
			continue;
		n++;
	}
	closedir(dir);
	return n;
}

/* Waits until `want` maia nodes exist and can be opened; returns the count. */
static inline int maia_wait_nodes(int want, int timeout_ms)
{
	struct maia_node nodes[MAIA_MAX_DEVICES];
	long long end = maia_now_ms() + timeout_ms;
	int n, i, ok;

	for (;;) {
		n = maia_find_nodes(nodes, MAIA_MAX_DEVICES);
		for (i = 0, ok = 0; i < n; i++)
			ok += access(nodes[i].path, R_OK | W_OK) == 0;
		if (ok >= want || maia_now_ms() > end)
			return ok;
		maia_sleep_ms(20);
	}
}

static inline int maia_open_node(const struct maia_node *node)
{
	return open(node->path, O_RDWR | O_CLOEXEC);
}

/* The driver name as DRM_IOCTL_VERSION reports it. */
static inline int maia_driver_name(int fd, char *name, size_t size)
{
	struct drm_version v;

	memset(&v, 0, sizeof(v));
	memset(name, 0, size);
	v.name = name;
	v.name_len = size - 1;
	if (ioctl(fd, DRM_IOCTL_VERSION, &v))
		return -errno;
	return 0;
}

static inline int maia_get_param(int fd, __u32 param, __u64 *value)
{
	struct drm_maia_get_param gp = { .param = param };

	if (ioctl(fd, DRM_IOCTL_MAIA_GET_PARAM, &gp))
		return -errno;
	*value = gp.value;
	return 0;
}

static inline int maia_ping(int fd, __u64 cookie, struct drm_maia_ping *out)
{
	struct drm_maia_ping p = { .cookie = cookie };
	int ret;

	ret = ioctl(fd, DRM_IOCTL_MAIA_PING, &p);
	if (out)
		*out = p;
	return ret ? -errno : 0;
}

/* Opens the first maia node and pings it with `cookie`: 0 if it echoed. */
static inline int maia_ping_first(__u64 cookie)
{
	struct maia_node node;
	struct drm_maia_ping p;
	int fd, ret;

	if (maia_find_nodes(&node, 1) < 1)
		return -ENODEV;
	fd = maia_open_node(&node);
	if (fd < 0)
		return -errno;
	ret = maia_ping(fd, cookie, &p);
	close(fd);
	if (!ret && p.echo != cookie)
		ret = -EPROTO;
	return ret;
}

/* --- module control ----------------------------------------------------- */

static inline bool maia_module_loaded(void)
{
	return access("/sys/module/maia/initstate", F_OK) == 0;
}

/* finit_module(2) maia.ko with `params`; returns 0 or -errno. */
static inline int maia_module_load(const char *params)
{
	int fd, ret;

	fd = open(maia_ko_path(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params ? params : "", 0);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

/* delete_module(2), retrying for a while if the module is still busy. */
static inline int maia_module_unload(void)
{
	long long end = maia_now_ms() + 5000;

	for (;;) {
		if (syscall(SYS_delete_module, "maia", O_NONBLOCK) == 0)
			return 0;
		if ((errno != EAGAIN && errno != EBUSY) || maia_now_ms() > end)
			return -errno;
		maia_sleep_ms(50);
	}
}

/* Ends with maia unloaded; 0 if it is. */
static inline int maia_module_ensure_unloaded(void)
{
	return maia_module_loaded() ? maia_module_unload() : 0;
}

/* --- kernel log ---------------------------------------------------------- */

/* Opens /dev/kmsg positioned after the newest record. */
static inline int maia_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * Calls fn(level, text, arg) for each record logged since maia_kmsg_open()
 * or the previous call, and returns how many records there were.
 */
static inline int maia_kmsg_each(int fd, void (*fn)(int level, const char *text, void *arg),
				 void *arg)
{
	char rec[8192];
	int n = 0;

	for (;;) {
		ssize_t len = read(fd, rec, sizeof(rec) - 1);
		char *text;
		int prio;

		if (len < 0) {
			if (errno == EPIPE)	/* overwritten records: go on */
				continue;
			break;			/* EAGAIN: no more */
		}
		rec[len] = '\0';
		/* "prio,seq,usec,flags;text\n continuation lines" */
		text = strchr(rec, ';');
		if (!text)
			continue;
		*strchrnul(text, '\n') = '\0';
		prio = atoi(rec);
		fn(prio & 7, text + 1, arg);
		n++;
	}
	return n;
}

#endif /* MAIA_KSFT_H */
