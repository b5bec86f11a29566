/* SPDX-License-Identifier: MIT */
/* libmaia internals shared by its source files. */
#ifndef LIBMAIA_INTERNAL_H
#define LIBMAIA_INTERNAL_H

#include "libmaia.h"

struct maia_device {
	int fd;
	int index;
	char pci_address[16];
	/* Next free device VA for maia_bo_create (bump allocator). */
	uint64_t next_va;
	/*
	 * Live buffer objects of this device. A dma-buf imported into the
	 * file that exported it gets the exporter's GEM handle again, so a
	 * handle is closed only when its last maia_bo goes.
	 */
	struct maia_bo *bos;
	/*
	 * maia_device_close() was called while buffer objects (command
	 * buffers' included) were alive: the device is closed and freed when
	 * the last of them is destroyed, as libdrm_amdgpu's BOs keep their
	 * device.
	 */
	bool closing;
};

struct maia_bo {
	struct maia_device *dev;
	uint32_t handle;
	uint32_t placement;
	uint64_t size;
	uint64_t va;		/* 0 if not mapped on the device */
	void *cpu;		/* NULL until maia_bo_map */
	struct maia_bo *next;	/* in dev->bos */
};

struct maia_cmdbuf {
	struct maia_device *dev;
	struct maia_bo *bo;
	uint8_t *cpu;
	uint32_t capacity;
	uint32_t used;
};

/* drmIoctl with MAIA_TRACE logging; returns 0 or a negative errno. */
int maia_ioctl(struct maia_device *dev, unsigned long request, void *arg);

/* uAPI values to the device's (uapi.c) */
uint32_t maia_caps_from_uapi(uint64_t caps);
uint32_t maia_dtypes_from_uapi(uint64_t dtypes);
uint32_t maia_device_status_from_uapi(uint32_t status);
uint32_t maia_access_from_uapi(uint32_t access);
/* Closes the fd and frees dev (maia_device_close, or the last BO of a closed device). */
void maia_device_release(struct maia_device *dev);

/* MAIA_SYSFS_ROOT, default "/sys": lets tests point sysfs reads at a fake tree. */
const char *maia_sysfs_root(void);
/* The Maia device at a PCI address (full or short form), or -ENODEV. */
int maia_find_pci(const char *pci_address, struct maia_device_entry *entry);

/*
 * Record why a call failed for maia_last_error() (and stderr when
 * MAIA_TRACE or MAIA_DEBUG is set); returns err so callers can
 * `return maia_error(-EINVAL, "...")`.
 */
int maia_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clear this thread's last error at the start of a public call. */
void maia_error_clear(void);
/* MAIA_TRACE or MAIA_DEBUG set (and not "0"). */
int maia_debug_enabled(void);
int maia_trace_enabled(void);

#define MAIA_EXPORT __attribute__((visibility("default")))

#endif /* LIBMAIA_INTERNAL_H */
