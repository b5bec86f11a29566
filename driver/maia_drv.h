/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: the device structure shared by all driver files,
 * and logging wrappers.
 */
#ifndef __MAIA_DRV_H__
#define __MAIA_DRV_H__

#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_print.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>

#include <maia/hw/dtype.h>
#include <maia/hw/queue.h>

#include "maia_fault.h"
#include "maia_gem.h"
#include "maia_hbm.h"
#include "maia_mbox.h"
#include "maia_vm.h"

#define MAIA_DRIVER_DESC	"Maia accelerator"

struct maia_fabric;
struct maia_reset;
struct maia_telemetry;
struct maia_sched;
struct maia_userqs;

/* The hardware ABI structures are little-endian and used as they are. */
#ifndef __LITTLE_ENDIAN
#error "maia: the device ABI is little-endian; big-endian hosts need conversions"
#endif

/* Entries in the kernel queue: enough for driver work, one page of SQ. */
#define MAIA_KQ_ENTRIES		64u
#define MAIA_KQ_INDEX		0u

/* What the device reports about itself in its identification registers. */
struct maia_hw_info {
	u32 revision;		/* MAIA_REG_REVISION, major << 8 | minor */
	u32 caps;		/* MAIA_CAP_* */
	u32 dtypes;		/* 1 << MAIA_DTYPE_* */
	u32 clusters;
	u32 tiles_per_cluster;
	u32 num_queues;
	u32 sram_kib;		/* per cluster */
	u32 msix_vectors;
	u64 hbm_size;		/* bytes */
};

/*
 * The chip model block (maia/hw/model.h, hardware 1.8): the parameters of
 * the device time model. All 0 on an older device.
 */
struct maia_model_info {
	u32 id;			/* MAIA_MODEL_*, 0 without the block */
	u32 hbm_mbps;
	u32 host_mbps;
	u32 link_mbps;
	u32 link_lat_ns;
	u32 cmd_ns;
	u32 job_ns;
	u32 vector_gflops;
	u32 sram_kib;		/* whole chip */
	u32 design_power_mw;
	u32 peak_gflops[MAIA_DTYPE_COUNT];	/* by MAIA_DTYPE_* */
};

/* The firmware that is running, valid once probe has booted it. */
struct maia_fw_info {
	const char *name;	/* file it was loaded from */
	u32 version;		/* MAIA_REG_FW_VERSION: MAIA_FW_VERSION() */
	u32 abi;		/* MAIA_REG_FW_ABI: major << 16 | minor */
	char build_id[32];
	struct completion boot_done;	/* signalled by MAIA_INT_BOOT_DONE */
};

/* A completion drained from a queue by its interrupt handler. */
struct maia_queue_done {
	struct maia_cq_entry cqe;
	ktime_t handled;	/* host time the interrupt handler saw it */
};

/*
 * A hardware queue owned by the kernel. Slot i of the completion array
 * belongs to slot i of the submission ring.
 *
 * @submitted and @completed count jobs since the queue was enabled; slot
 * n % @entries holds job n. @submitted is written under @lock and published
 * with a release store; @completed and @done are written only by the
 * queue's interrupt handler and published with a release store of @completed.
 */
struct maia_queue {
	struct maia_device *mdev;
	unsigned int index;
	u32 entries;			/* power of two */
	struct maia_sq_entry *sq;
	dma_addr_t sq_dma;
	struct maia_cq_entry *cq;
	dma_addr_t cq_dma;
	bool enabled;
	/* Serializes submitters: protects sq[], the clearing of cq[], @submitted. */
	struct mutex lock;
	u64 submitted;
	u64 completed;
	struct maia_queue_done done[MAIA_KQ_ENTRIES];
	wait_queue_head_t done_wq;	/* woken when @completed moves */
	u32 prio;			/* MAIA_QUEUE_PRIO_*, set before enabling */
	/*
	 * Optional, for the scheduled queues (maia_sched.c): called by the
	 * queue's hard interrupt handler (maia_queue_drain(), there is no
	 * thread) for each completion, in order, once @completed covers it.
	 */
	void (*complete)(struct maia_queue *q, u64 seq,
			 const struct maia_queue_done *done);
};

struct maia_device {
	struct drm_device drm;
	void __iomem *regs;		/* BAR0 */
	struct maia_hw_info hw;
	struct maia_model_info model;	/* chip model (hardware 1.8), or zeros */
	struct maia_fw_info fw;

	/* MAIA_INT_* causes acked by the hard handler, not yet handled by the thread. */
	atomic_t irq_causes;
	struct maia_faults faults;	/* MMU fault record and queue (maia_fault.c) */

	struct maia_queue kq;		/* kernel queue for driver work */

	struct maia_mbox mbox;		/* firmware mailbox */
	struct maia_hbm hbm;		/* device memory allocator, BAR2 */
	struct maia_gem gem;		/* buffer objects */
	struct maia_contexts contexts;	/* per-file address spaces by ASID */

	struct maia_sched *sched;	/* user queues and their schedulers */
	struct maia_userqs *userqs;	/* queues mapped into processes (maia_userq.c) */
	struct maia_reset *reset;	/* hang recovery */
	struct maia_telemetry *telemetry;	/* power and counters, or NULL */
	struct maia_fabric *fabric;	/* fabric ports, or NULL without */
};

static inline struct maia_device *to_maia_device(struct drm_device *drm)
{
	return container_of(drm, struct maia_device, drm);
}

struct maia_job_file;

/*
 * One open file of the device (drm_file.driver_priv), as ivpu_file_priv:
 * what the file owns, made at open in this order (maia_open()) and undone
 * at close in the opposite one (maia_postclose()). Its user queues are the
 * queue slots whose owner is this file (maia_userq.c, under
 * maia_userqs.lock).
 */
struct maia_file {
	struct maia_device *mdev;
	struct maia_context *ctx;	/* its device address space (maia_vm.c) */
	/* Its submission state (maia_job.c); NULL when the device has no scheduled queue. */
	struct maia_job_file *jobs;
	/*
	 * Its fabric windows (maia_fabric.c), under @ctx->lock, which also
	 * orders them against the unmapping of the ranges they open.
	 */
	struct list_head fabric_windows;
	unsigned int fabric_nwindows;
};

static inline struct maia_file *to_maia_file(struct drm_file *file)
{
	return file->driver_priv;
}

static inline struct maia_context *maia_ctx_from_file(struct drm_file *file)
{
	return to_maia_file(file)->ctx;
}

/*
 * Logging: errors and warnings go through dev_* on the PCI device so that a
 * user sees "maia 0000:00:03.0: <message>", the debug messages through the
 * DRM "driver" debug category (drm.debug=0x2, or dynamic debug).
 */
#define maia_err(mdev, fmt, ...) \
	dev_err((mdev)->drm.dev, fmt, ##__VA_ARGS__)
#define maia_err_ratelimited(mdev, fmt, ...) \
	dev_err_ratelimited((mdev)->drm.dev, fmt, ##__VA_ARGS__)
#define maia_warn(mdev, fmt, ...) \
	dev_warn((mdev)->drm.dev, fmt, ##__VA_ARGS__)
#define maia_warn_ratelimited(mdev, fmt, ...) \
	dev_warn_ratelimited((mdev)->drm.dev, fmt, ##__VA_ARGS__)
#define maia_info(mdev, fmt, ...) \
	dev_info((mdev)->drm.dev, fmt, ##__VA_ARGS__)
#define maia_dbg(mdev, fmt, ...) \
	drm_dbg_driver(&(mdev)->drm, "%s(): " fmt, __func__, ##__VA_ARGS__)

/*
 * Interrupts on, firmware booted, kernel queue running: the common start of
 * probe and of recovery after a device reset.
 */
int maia_device_start(struct maia_device *mdev);

#endif /* __MAIA_DRV_H__ */
