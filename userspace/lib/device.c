// SPDX-License-Identifier: MIT
/*
 * Device enumeration and opening. libdrm 2.4.114 does not list accel nodes,
 * so we scan /sys/class/accel and keep the nodes our driver is bound to,
 * then confirm with drmGetVersion() (which works on an accel fd) on open.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>

#include "drm/maia_accel.h"
#include "internal.h"

#define MAIA_MAX_ACCEL_NODES 64

const char *maia_sysfs_root(void)
{
	/* Lets tests point enumeration at a fake tree. */
	const char *root = getenv("MAIA_SYSFS_ROOT");

	return root ? root : "/sys";
}

/* Is accelN bound to our driver? Fills the PCI address if so. */
static bool accel_is_maia(int n, char *pci, size_t pci_len)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t len;

	snprintf(path, sizeof(path), "%s/class/accel/accel%d/device/driver", maia_sysfs_root(), n);
	len = readlink(path, target, sizeof(target) - 1);
	if (len < 0)
		return false;
	target[len] = '\0';
	base = strrchr(target, '/');
	if (strcmp(base ? base + 1 : target, MAIA_DRIVER_NAME) != 0)
		return false;

	snprintf(path, sizeof(path), "%s/class/accel/accel%d/device", maia_sysfs_root(), n);
	len = readlink(path, target, sizeof(target) - 1);
	if (len < 0)
		return false;
	target[len] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) >= pci_len)
		return false;
	memcpy(pci, base, strlen(base) + 1);
	return true;
}

/* Calls fn for each Maia accel node in order until it returns nonzero. */
static int for_each_maia(int (*fn)(int n, const char *pci, void *arg), void *arg)
{
	char pci[64];
	int n, ret;

	for (n = 0; n < MAIA_MAX_ACCEL_NODES; n++) {
		if (!accel_is_maia(n, pci, sizeof(pci)))
			continue;
		ret = fn(n, pci, arg);
		if (ret)
			return ret;
	}
	return 0;
}

static int count_one(int n, const char *pci, void *arg)
{
	(void)n;
	(void)pci;
	(*(int *)arg)++;
	return 0;
}

MAIA_EXPORT int maia_device_count(void)
{
	int count = 0;

	for_each_maia(count_one, &count);
	return count;
}

static int open_node(int n, const char *pci, struct maia_device **out)
{
	struct maia_device *dev;
	drmVersionPtr ver;
	char node[32];
	int fd, err, minor;
	bool ours;

	snprintf(node, sizeof(node), "/dev/accel/accel%d", n);
	fd = open(node, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	errno = 0;
	ver = drmGetVersion(fd);
	if (!ver) {
		err = errno ? -errno : -ENOMEM;
		close(fd);
		return err;
	}
	ours = ver->name && strcmp(ver->name, MAIA_DRIVER_NAME) == 0 &&
	       ver->version_major == MAIA_DRIVER_MAJOR;
	minor = ver->version_minor;
	drmFreeVersion(ver);
	if (!ours) {
		close(fd);
		return -ENODEV;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		close(fd);
		return -ENOMEM;
	}
	dev->fd = fd;
	dev->index = n;
	dev->driver_minor = minor;
	pthread_mutex_init(&dev->uq.lock, NULL);
	if (strlen(pci) < sizeof(dev->pci_address))
		memcpy(dev->pci_address, pci, strlen(pci) + 1);
	*out = dev;
	return 0;
}

struct open_by_index {
	int want, seen;
	struct maia_device **out;
	int err;
};

static int open_index_one(int n, const char *pci, void *arg)
{
	struct open_by_index *o = arg;

	if (o->seen++ != o->want)
		return 0;
	o->err = open_node(n, pci, o->out);
	return 1;
}

MAIA_EXPORT int maia_device_open(int index, struct maia_device **out)
{
	struct open_by_index o = { .want = index, .out = out, .err = -ENODEV };

	maia_error_clear();
	if (!out || index < 0)
		return maia_error(-EINVAL, "maia_device_open: NULL out or negative index %d", index);
	for_each_maia(open_index_one, &o);
	if (o.err == -ENODEV && o.seen <= index)
		return maia_error(o.err, "maia_device_open: there are %d Maia devices, no index %d",
				  o.seen, index);
	if (o.err)
		return maia_error(o.err, "maia_device_open: opening device %d failed", index);
	return 0;
}

/* pci is "dddd:bb:dd.f"; want is that or the short "bb:dd.f" (no domain). */
static bool pci_matches(const char *pci, const char *want)
{
	const char *colon = strchr(pci, ':');

	return strcmp(pci, want) == 0 || (colon && strcmp(colon + 1, want) == 0);
}

struct open_by_pci {
	char want[64];
	struct maia_device **out;
	int err;
};

static int open_pci_one(int n, const char *pci, void *arg)
{
	struct open_by_pci *o = arg;

	if (!pci_matches(pci, o->want))
		return 0;
	o->err = open_node(n, pci, o->out);
	return 1;
}

MAIA_EXPORT int maia_device_open_pci(const char *pci_address, struct maia_device **out)
{
	struct open_by_pci o = { .out = out, .err = -ENODEV };

	maia_error_clear();
	if (!out || !pci_address || strlen(pci_address) >= sizeof(o.want))
		return maia_error(-EINVAL, "maia_device_open_pci: NULL or overlong argument");
	snprintf(o.want, sizeof(o.want), "%s", pci_address);
	for_each_maia(open_pci_one, &o);
	if (o.err)
		return maia_error(o.err, "maia_device_open_pci: no usable Maia device at %s",
				  pci_address);
	return 0;
}

struct find_pci {
	const char *want;
	struct maia_device_entry *entry;
};

static int find_pci_one(int n, const char *pci, void *arg)
{
	struct find_pci *f = arg;

	if (!pci_matches(pci, f->want) || strlen(pci) >= sizeof(f->entry->pci_address))
		return 0;
	f->entry->index = n;
	memcpy(f->entry->pci_address, pci, strlen(pci) + 1);
	return 1;
}

int maia_find_pci(const char *pci_address, struct maia_device_entry *entry)
{
	struct find_pci f = { .want = pci_address, .entry = entry };

	return for_each_maia(find_pci_one, &f) ? 0 : -ENODEV;
}

struct list_ctx {
	struct maia_device_entry *out;
	int max, n;
};

static int list_one(int n, const char *pci, void *arg)
{
	struct list_ctx *c = arg;
	struct maia_device_entry *e;

	if (c->n >= c->max)
		return 1;
	if (strlen(pci) >= sizeof(e->pci_address))
		return 0;	/* cannot be named: not listed, as it cannot be opened by name */
	e = &c->out[c->n++];
	memset(e, 0, sizeof(*e));
	e->index = n;
	memcpy(e->pci_address, pci, strlen(pci) + 1);
	return 0;
}

MAIA_EXPORT int maia_device_list(struct maia_device_entry *entries, int max)
{
	struct list_ctx c = { .out = entries, .max = max };

	maia_error_clear();
	if (max < 0 || (max && !entries))
		return maia_error(-EINVAL, "maia_device_list: NULL entries or negative max %d",
				  max);
	for_each_maia(list_one, &c);
	return c.n;
}

void maia_device_release(struct maia_device *dev)
{
	maia_userq_close(dev);
	pthread_mutex_destroy(&dev->uq.lock);
	close(dev->fd);
	free(dev);
}

MAIA_EXPORT void maia_device_close(struct maia_device *dev)
{
	if (!dev)
		return;
	if (dev->bos) {		/* the last maia_bo_destroy() releases it */
		dev->closing = true;
		return;
	}
	maia_device_release(dev);
}

MAIA_EXPORT int maia_device_set_submit_path(struct maia_device *dev, enum maia_submit_path path)
{
	int err;

	maia_error_clear();
	if (!dev || (path != MAIA_SUBMIT_AUTO && path != MAIA_SUBMIT_KERNEL))
		return maia_error(-EINVAL, "maia_device_set_submit_path: NULL device or unknown path %d",
				  (int)path);
	if (path == MAIA_SUBMIT_KERNEL) {
		/* Later kernel-path jobs come after those on the user queue. */
		err = maia_userq_drain(dev);
		if (err)
			return maia_error(err, "maia_device_set_submit_path: draining the user queue failed");
		maia_userq_close(dev);
	}
	dev->submit_path = path;
	return 0;
}

MAIA_EXPORT int maia_device_fd(const struct maia_device *dev)
{
	return dev ? dev->fd : -EINVAL;
}

MAIA_EXPORT int maia_query(struct maia_device *dev, uint32_t param, uint64_t *value)
{
	struct drm_maia_get_param gp = { .param = param };
	int err;

	if (!dev || !value)
		return -EINVAL;
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_GET_PARAM, &gp);
	if (!err)
		*value = gp.value;
	return err;
}

MAIA_EXPORT int maia_ping(struct maia_device *dev, uint64_t cookie, struct maia_ping_result *result)
{
	struct drm_maia_ping p = { .cookie = cookie };
	int err;

	if (!dev || !result)
		return -EINVAL;
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_PING, &p);
	if (err)
		return err;
	result->echo = p.echo;
	result->round_trip_ns = p.round_trip_ns;
	result->device_ns = p.device_ns;
	return 0;
}
