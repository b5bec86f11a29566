/* SPDX-License-Identifier: MIT */
/* libmaia internals shared by its source files. */
#ifndef LIBMAIA_INTERNAL_H
#define LIBMAIA_INTERNAL_H

#include <pthread.h>

#include "libmaia.h"
#include "maia/hw/queue.h"

/*
 * How long maia_wait() polls a user queue's completion array before it
 * sleeps in USERQ_WAIT, unless MAIA_WAIT_SPIN_US says otherwise.
 */
#define LIBMAIA_WAIT_SPIN_US	100

/* Results kept for maia_wait() of user-queue jobs, as the kernel keeps its own. */
#define LIBMAIA_USERQ_HISTORY	1024u

struct maia_userq_result {
	uint64_t seq;			/* job number on this device, from 0 */
	bool done;
	struct maia_job_status st;
	uint64_t submitted_ns;		/* CLOCK_MONOTONIC at the doorbell */
	uint64_t device_ns;		/* completion entry's end - start */
	uint64_t host_ns;		/* doorbell to the completion reaped */
};

/* The device's user queue (userq.c); one per maia_device, created on first use. */
struct maia_userq {
	pthread_mutex_t lock;		/* everything below */
	enum { MAIA_USERQ_UNKNOWN, MAIA_USERQ_OFF, MAIA_USERQ_ON } mode;
	int64_t spin_ns;		/* maia_wait() polls this long before it sleeps */
	bool created;
	bool gone;			/* the device was removed */
	uint64_t gen;			/* bumped at each create and destroy */
	unsigned int fork_gen;		/* userq.c's fork count when it was created */
	volatile uint32_t *state_word;	/* DRM_MAIA_USERQ_STATE_OFFSET in the array's page */
	uint32_t id, entries;
	uint16_t asid;
	struct maia_sq_entry *sq;		/* mapped ring */
	volatile struct maia_cq_entry *cq;	/* mapped completion array */
	volatile uint32_t *doorbell;		/* mapped doorbell page */
	uint64_t base;			/* jobs on earlier queues of this device */
	uint64_t written, reaped;	/* entries on this queue, from 0 */
	struct maia_userq_result results[LIBMAIA_USERQ_HISTORY];
};

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
	int driver_minor;		/* DRM_IOCTL_VERSION */
	enum maia_submit_path submit_path;
	/* Last NORMAL kernel-path job while a user queue is in use (ordering; uq.lock). */
	uint64_t last_kernel_seqno;
	struct maia_userq uq;
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
struct drm_maia_wait;
/* DRM_IOCTL_MAIA_WAIT sized for the driver's minor (submit.c). */
int maia_wait_ioctl(struct maia_device *dev, struct drm_maia_wait *w);

/* uAPI values to the device's (uapi.c) */
uint32_t maia_caps_from_uapi(uint64_t caps);
uint32_t maia_dtypes_from_uapi(uint64_t dtypes);
uint32_t maia_device_status_from_uapi(uint32_t status);
uint32_t maia_access_from_uapi(uint32_t access);
uint32_t maia_model_from_uapi(uint64_t model);
int maia_dtype_to_uapi(unsigned int hw);
/* "maia100" for MAIA_MODEL_MAIA100 ..., "unknown" otherwise (telemetry.c) */
const char *maia_model_name_of(uint32_t model);
/* cmdbuf.c, fabric.c: appending a command already checked (libmaia's own). */
int maia_cmdbuf_put(struct maia_cmdbuf *cb, const void *cmd);
struct maia_cmd_collective;
int maia_cmd_collective_put(struct maia_cmdbuf *cb, struct maia_cmd_collective *c);

/*
 * submit.c: maia_submit() and maia_wait_times() after their argument checks
 * (the user queue, else the kernel), for libmaia's own callers whose
 * arguments are valid (a communicator's slots).
 */
int maia_submit_checked(struct maia_device *dev, struct maia_cmdbuf *cb,
			const struct maia_submit_opts *opts, uint64_t *seqno);
int maia_wait_checked(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
		      struct maia_job_status *status, struct maia_job_times *times);
/* submit.c: maia_submit() after the user queue declined the job (arguments checked). */
int maia_submit_kernel(struct maia_device *dev, struct maia_cmdbuf *cb,
		       const struct maia_submit_opts *opts, uint64_t *seqno);

/* userq.c: maia_userq_submit() returns 1 when the job takes the kernel path. */
bool maia_userq_seqno(uint64_t seqno);
int maia_userq_submit(struct maia_device *dev, struct maia_cmdbuf *cb,
		      const struct maia_submit_opts *opts, uint64_t *seqno);
int maia_userq_wait(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
		    struct maia_job_status *status, struct maia_job_times *times);
int maia_userq_drain(struct maia_device *dev);
void maia_userq_note_kernel_job(struct maia_device *dev, uint64_t seqno);
void maia_userq_close(struct maia_device *dev);

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
