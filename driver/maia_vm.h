/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: per-file contexts (device address spaces) and
 * DRM_IOCTL_MAIA_VM_BIND.
 */
#ifndef __MAIA_VM_H__
#define __MAIA_VM_H__

#include <drm/drm_file.h>
#include <drm/drm_mm.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>

#include "maia_mmu.h"

struct drm_device;
struct drm_gem_object;
struct maia_context;
struct maia_device;

/* Device-wide table of contexts. */
struct maia_contexts {
	/*
	 * Serializes context creation and destruction against the restore of
	 * every context after a device reset (it covers the SET_CONTEXT
	 * mailbox commands too). Taken after the reset lock.
	 */
	struct mutex lock;
	struct xarray by_asid;		/* ASID -> context; lookups under xa_lock */
	u32 next_asid;			/* xa_alloc_cyclic() cursor, under @lock */
};

/*
 * The context of one open file: an ASID and its page tables, created at
 * open and freed at close (maia_file.ctx), after the file's jobs are done
 * (maia_job_file_close()); then @asid may be reused.
 */
struct maia_context {
	struct maia_device *mdev;
	u32 asid;

	/*
	 * Protects @va_mm, @pgt and the mappings. SUBMIT holds it from
	 * maia_vm_find_bo_va() until its job is queued, so an UNMAP either
	 * sees the job (and waits for it) or the job sees no mapping.
	 */
	struct mutex lock;
	struct drm_mm va_mm;		/* struct maia_vm_mapping nodes */
	struct maia_pgtable pgt;

	/* Protects the fault state, written when a job of this context faults. */
	spinlock_t fault_lock;
	bool faulted;
	bool fault_addr_known;		/* false: the device's record was another's */
	u64 fault_addr;
	u32 fault_access;		/* MAIA_ACCESS_* */

};

/* A VM_BIND mapping: [node.start, node.start + node.size) -> BO @offset. */
struct maia_vm_mapping {
	struct drm_mm_node node;
	struct maia_context *ctx;
	struct drm_gem_object *obj;	/* holds a reference */
	u64 offset;
	u32 flags;			/* DRM_MAIA_VM_* */
	struct list_head bo_link;	/* in maia_bo.mappings, under maia_gem.lock */
};

int maia_vm_init(struct maia_device *mdev);
int maia_vm_open(struct maia_device *mdev, struct drm_file *file);
/* At close, after maia_job_file_close(): no job of the file runs any more. */
void maia_vm_close(struct maia_device *mdev, struct drm_file *file);

/*
 * Marks @ctx faulted by one of its jobs; the first fault is kept. Without
 * @addr_known, @addr and @access are 0. Any context.
 */
void maia_ctx_report_fault(struct maia_context *ctx, bool addr_known, u64 addr, u32 access);
bool maia_ctx_faulted(struct maia_context *ctx);
/* Copies the fault state; returns whether the context is faulted. */
bool maia_ctx_fault_info(struct maia_context *ctx, bool *addr_known, u64 *addr, u32 *access);

/*
 * Device VA of byte @offset of @obj where [@offset, @offset + @size) is
 * mapped in @ctx: 0, or -ENOENT if no single mapping covers it. Caller
 * holds @ctx->lock.
 */
int maia_vm_find_bo_va(struct maia_context *ctx, struct drm_gem_object *obj,
		       u64 offset, u64 size, u64 *va);

/*
 * After a device reset: installs the page tables of every live context.
 * Caller holds the reset lock for writing (asserted).
 */
int maia_vm_restore(struct maia_device *mdev);

int maia_vm_bind_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* __MAIA_VM_H__ */
