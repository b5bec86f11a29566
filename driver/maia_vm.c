// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: per-file contexts and VM_BIND.
 *
 * Every open file gets an ASID (1..MAIA_MAX_ASIDS-1; 0 is the physical
 * context of the kernel queue) and four-level page tables in HBM,
 * installed with SET_CONTEXT. Userspace picks device VAs inside
 * [DRM_MAIA_VA_START, DRM_MAIA_VA_END) and maps buffer objects there with
 * VM_BIND; a drm_mm keeps the mappings from overlapping. The device MMU is
 * what keeps one file's jobs out of another's memory.
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
#include <drm/maia_accel.h>
#include <linux/slab.h>

#include <maia/hw/queue.h>

#include "maia_drv.h"
#include "maia_fabric.h"
#include "maia_gem.h"
#include "maia_fault.h"
#include "maia_job.h"
#include "maia_mmu.h"
#include "maia_reset.h"
#include "maia_userq.h"
#include "maia_vm.h"

static void maia_vm_fini(struct drm_device *drm, void *arg)
{
	struct maia_contexts *contexts = arg;

	drm_WARN_ON(drm, !xa_empty(&contexts->by_asid));
	xa_destroy(&contexts->by_asid);
}

int maia_vm_init(struct maia_device *mdev)
{
	struct maia_contexts *contexts = &mdev->contexts;
	int ret;

	ret = drmm_mutex_init(&mdev->drm, &contexts->lock);
	if (ret)
		return ret;
	xa_init_flags(&contexts->by_asid, XA_FLAGS_ALLOC);
	return drmm_add_action_or_reset(&mdev->drm, maia_vm_fini, contexts);
}

/* The file was the context's only owner: jobs never outlive its close. */
static void maia_ctx_free(struct maia_context *ctx)
{
	mutex_destroy(&ctx->lock);
	kfree(ctx);
}

void maia_ctx_report_fault(struct maia_context *ctx, bool addr_known, u64 addr, u32 access)
{
	unsigned long flags;

	spin_lock_irqsave(&ctx->fault_lock, flags);
	if (!ctx->faulted) {
		ctx->faulted = true;
		ctx->fault_addr_known = addr_known;
		ctx->fault_addr = addr_known ? addr : 0;
		ctx->fault_access = addr_known ? access : 0;
	}
	spin_unlock_irqrestore(&ctx->fault_lock, flags);
}

bool maia_ctx_fault_info(struct maia_context *ctx, bool *addr_known, u64 *addr, u32 *access)
{
	unsigned long flags;
	bool faulted;

	spin_lock_irqsave(&ctx->fault_lock, flags);
	faulted = ctx->faulted;
	*addr_known = ctx->fault_addr_known;
	*addr = ctx->fault_addr;
	*access = ctx->fault_access;
	spin_unlock_irqrestore(&ctx->fault_lock, flags);
	return faulted;
}

bool maia_ctx_faulted(struct maia_context *ctx)
{
	bool known;
	u64 addr;
	u32 access;

	return maia_ctx_fault_info(ctx, &known, &addr, &access);
}

int maia_vm_open(struct maia_device *mdev, struct drm_file *file)
{
	struct maia_contexts *contexts = &mdev->contexts;
	struct maia_context *ctx;
	int idx, ret;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->mdev = mdev;
	mutex_init(&ctx->lock);
	spin_lock_init(&ctx->fault_lock);
	drm_mm_init(&ctx->va_mm, DRM_MAIA_VA_START,
		    DRM_MAIA_VA_END - DRM_MAIA_VA_START);

	if (!drm_dev_enter(&mdev->drm, &idx)) {
		ret = -ENODEV;
		goto err_free;
	}

	ret = maia_mmu_pgtable_init(mdev, &ctx->pgt, &ctx->lock);
	if (ret)
		goto err_exit;

	/* The mailbox is only usable while no reset is in progress. */
	ret = maia_reset_read_lock(mdev);
	if (ret)
		goto err_pgtable;
	mutex_lock(&contexts->lock);
	/*
	 * Cyclic: an ASID just given up is the last to be handed out again,
	 * so nothing about its old owner (a fault record the device or the
	 * driver still holds, see maia_vm_close()) meets its next one.
	 */
	ret = xa_alloc_cyclic(&contexts->by_asid, &ctx->asid, ctx,
			      XA_LIMIT(MAIA_ASID_PHYS + 1, MAIA_MAX_ASIDS - 1),
			      &contexts->next_asid, GFP_KERNEL);
	if (ret < 0) {
		if (ret == -EBUSY)
			maia_dbg(mdev, "all %u address spaces in use\n", MAIA_MAX_ASIDS - 1);
		goto err_unlock;
	}
	ret = maia_mmu_set_context(mdev, ctx->asid, ctx->pgt.root->hbm);
	if (ret) {
		xa_erase(&contexts->by_asid, ctx->asid);
		goto err_unlock;
	}
	mutex_unlock(&contexts->lock);
	maia_reset_read_unlock(mdev);
	drm_dev_exit(idx);

	to_maia_file(file)->ctx = ctx;
	maia_dbg(mdev, "asid %u: root at HBM %#llx\n", ctx->asid, ctx->pgt.root->hbm);
	return 0;

err_unlock:
	mutex_unlock(&contexts->lock);
	maia_reset_read_unlock(mdev);
err_pgtable:
	maia_mmu_pgtable_fini(mdev, &ctx->pgt);
err_exit:
	drm_dev_exit(idx);
err_free:
	drm_mm_takedown(&ctx->va_mm);
	maia_ctx_free(ctx);
	return ret;
}

/*
 * Drops the mapping's bookkeeping and its hold on the BO's pages. The
 * caller has cleared its PTEs and flushed the TLB, or disabled the ASID.
 */
static void maia_vm_mapping_free(struct maia_context *ctx, struct maia_vm_mapping *m)
{
	struct maia_device *mdev = ctx->mdev;

	lockdep_assert_held(&ctx->lock);
	mutex_lock(&mdev->gem.lock);
	list_del(&m->bo_link);
	mutex_unlock(&mdev->gem.lock);
	drm_mm_remove_node(&m->node);
	maia_bo_device_put(to_maia_bo(m->obj));
	drm_gem_object_put(m->obj);
	kfree(m);
}

void maia_vm_close(struct maia_device *mdev, struct drm_file *file)
{
	struct maia_context *ctx = maia_ctx_from_file(file);
	struct maia_contexts *contexts = &mdev->contexts;
	struct drm_mm_node *node, *next;
	int idx;

	if (!ctx)
		return;

	/* Not interruptible: a killed process closes its files too. */
	maia_reset_read_lock_uninterruptible(mdev);
	mutex_lock(&contexts->lock);
	if (drm_dev_enter(&mdev->drm, &idx)) {
		if (maia_mmu_set_context(mdev, ctx->asid, 0) ||
		    maia_mmu_tlb_invalidate(mdev, ctx->asid))
			maia_err(mdev, "asid %u: cannot disable the address space\n",
				 ctx->asid);
		drm_dev_exit(idx);
	}
	/* Out of the table first: maia_fault_forget_asid() then waits for its readers. */
	xa_erase(&contexts->by_asid, ctx->asid);
	maia_fault_forget_asid(mdev, ctx->asid);
	mutex_unlock(&contexts->lock);
	maia_reset_read_unlock(mdev);

	mutex_lock(&ctx->lock);
	/* Disabling the ASID closed its windows on the device. */
	maia_fabric_free_windows(to_maia_file(file));
	drm_mm_for_each_node_safe(node, next, &ctx->va_mm)
		maia_vm_mapping_free(ctx, container_of(node, struct maia_vm_mapping, node));
	maia_mmu_pgtable_fini(mdev, &ctx->pgt);
	mutex_unlock(&ctx->lock);
	drm_mm_takedown(&ctx->va_mm);

	to_maia_file(file)->ctx = NULL;
	maia_ctx_free(ctx);
}

int maia_vm_restore(struct maia_device *mdev)
{
	struct maia_contexts *contexts = &mdev->contexts;
	struct maia_context *ctx;
	unsigned long asid;
	int ret = 0, err;

	lockdep_assert_held_write(&mdev->reset->lock);
	mutex_lock(&contexts->lock);
	xa_for_each(&contexts->by_asid, asid, ctx) {
		err = maia_mmu_set_context(mdev, asid, ctx->pgt.root->hbm);
		if (err && !ret)
			ret = err;
	}
	mutex_unlock(&contexts->lock);
	return ret;
}

int maia_vm_find_bo_va(struct maia_context *ctx, struct drm_gem_object *obj,
		       u64 offset, u64 size, u64 *va)
{
	struct maia_device *mdev = ctx->mdev;
	struct maia_vm_mapping *m;
	int ret = -ENOENT;

	lockdep_assert_held(&ctx->lock);
	if (offset > obj->size || size > obj->size - offset)
		return -ENOENT;

	mutex_lock(&mdev->gem.lock);
	list_for_each_entry(m, &to_maia_bo(obj)->mappings, bo_link) {
		if (m->ctx != ctx || offset < m->offset ||
		    offset - m->offset + size > m->node.size)
			continue;
		*va = m->node.start + (offset - m->offset);
		ret = 0;
		break;
	}
	mutex_unlock(&mdev->gem.lock);
	return ret;
}

/* VM_BIND */

struct maia_vm_map_state {
	struct maia_bo_visitor visitor;
	struct maia_context *ctx;
	u64 va;		/* where BO offset @offset goes */
	u64 offset;
	u64 prot;
	u64 mapped;	/* bytes from @va mapped so far */
};

static int maia_vm_map_chunk(struct maia_bo_visitor *v, u64 bo_offset,
			     u64 addr, u64 len)
{
	struct maia_vm_map_state *st = container_of(v, struct maia_vm_map_state, visitor);
	int ret;

	ret = maia_mmu_map(st->ctx->mdev, &st->ctx->pgt,
			   st->va + (bo_offset - st->offset), addr, len, st->prot);
	if (!ret)
		st->mapped += len;
	return ret;
}

static int maia_vm_map(struct maia_context *ctx, struct drm_file *file,
		       const struct drm_maia_vm_bind *args)
{
	struct maia_device *mdev = ctx->mdev;
	struct maia_vm_map_state st = {
		.visitor.chunk = maia_vm_map_chunk,
		.ctx = ctx, .va = args->va, .offset = args->offset,
	};
	struct drm_gem_object *obj;
	struct maia_vm_mapping *m;
	struct maia_bo *bo;
	int idx, ret;

	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_maia_bo(obj);
	if (args->offset > obj->size || args->size > obj->size - args->offset) {
		ret = -EINVAL;
		goto err_put;
	}

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m) {
		ret = -ENOMEM;
		goto err_put;
	}
	m->ctx = ctx;
	m->obj = obj;
	m->offset = args->offset;
	m->flags = args->flags;
	m->node.start = args->va;
	m->node.size = args->size;

	st.prot = MAIA_PTE_READ;
	if (!(args->flags & DRM_MAIA_VM_READONLY))
		st.prot |= MAIA_PTE_WRITE;
	if (bo->placement == DRM_MAIA_BO_HOST)
		st.prot |= MAIA_PTE_SYSMEM;

	if (!drm_dev_enter(&mdev->drm, &idx)) {
		ret = -ENODEV;
		goto err_free;
	}
	mutex_lock(&ctx->lock);
	ret = drm_mm_reserve_node(&ctx->va_mm, &m->node);
	if (ret) {
		if (ret == -ENOSPC)
			ret = -EEXIST;	/* overlaps an existing mapping */
		goto err_unlock;
	}
	ret = maia_bo_device_get(bo);
	if (ret)
		goto err_remove;

	ret = maia_bo_visit_chunks(bo, args->offset, args->size, &st.visitor);
	if (ret) {
		maia_mmu_unmap(mdev, &ctx->pgt, args->va, st.mapped);
		/* A job aimed at the range may have cached what was there. */
		if (st.mapped) {
			maia_reset_read_lock_uninterruptible(mdev);
			maia_mmu_tlb_invalidate(mdev, ctx->asid);
			maia_reset_read_unlock(mdev);
		}
		maia_bo_device_put(bo);
		goto err_remove;
	}
	/* The device will see the new entries before any job that uses them. */
	maia_mmu_flush();

	mutex_lock(&mdev->gem.lock);
	list_add_tail(&m->bo_link, &bo->mappings);
	mutex_unlock(&mdev->gem.lock);
	mutex_unlock(&ctx->lock);
	drm_dev_exit(idx);

	maia_dbg(mdev, "asid %u: map %#llx+%#llx -> %s BO offset %#llx%s\n",
		 ctx->asid, args->va, args->size,
		 bo->placement == DRM_MAIA_BO_HBM ? "hbm" : "host", args->offset,
		 args->flags & DRM_MAIA_VM_READONLY ? " read-only" : "");
	return 0;

err_remove:
	drm_mm_remove_node(&m->node);
err_unlock:
	mutex_unlock(&ctx->lock);
	drm_dev_exit(idx);
err_free:
	kfree(m);
err_put:
	drm_gem_object_put(obj);
	return ret;
}

static struct maia_vm_mapping *maia_vm_find_mapping(struct maia_context *ctx,
						    u64 va, u64 size)
{
	struct drm_mm_node *node;

	drm_mm_for_each_node_in_range(node, &ctx->va_mm, va, va + size) {
		if (node->start == va && node->size == size)
			return container_of(node, struct maia_vm_mapping, node);
	}
	return NULL;
}

static int maia_vm_unmap(struct maia_file *mf, const struct drm_maia_vm_bind *args)
{
	struct maia_context *ctx = mf->ctx;
	struct maia_device *mdev = ctx->mdev;
	struct maia_vm_mapping *m;
	int idx, ret;

	ret = mutex_lock_interruptible(&ctx->lock);
	if (ret)
		return ret;
	m = maia_vm_find_mapping(ctx, args->va, args->size);
	if (!m) {
		ret = -ENOENT;
		goto out_unlock;
	}

	/* Nothing from the fabric may land in it once it is gone. */
	maia_fabric_close_range(mf, args->va, args->size);

	/* The device must never see a page after it is unmapped. */
	ret = maia_job_wait_idle(mf->jobs);
	if (ret)
		goto out_unlock;

	ret = maia_reset_read_lock(mdev);
	if (ret)
		goto out_unlock;
	if (drm_dev_enter(&mdev->drm, &idx)) {
		maia_mmu_unmap(mdev, &ctx->pgt, args->va, args->size);
		/* On failure the device is broken; its reset flushes the TLB. */
		if (maia_mmu_tlb_invalidate(mdev, ctx->asid))
			maia_err_ratelimited(mdev, "asid %u: TLB invalidation failed after unmap\n",
					     ctx->asid);
		drm_dev_exit(idx);
	}
	maia_reset_read_unlock(mdev);
	/* Jobs a user queue fetched before the unmap may still use the pages. */
	maia_userq_ctx_quiesce(ctx);
	maia_vm_mapping_free(ctx, m);
	maia_dbg(mdev, "asid %u: unmap %#llx+%#llx\n", ctx->asid, args->va, args->size);

out_unlock:
	mutex_unlock(&ctx->lock);
	return ret;
}

static bool maia_vm_range_valid(u64 va, u64 size)
{
	return size && IS_ALIGNED(va | size, MAIA_PAGE_SIZE) &&
	       va >= DRM_MAIA_VA_START && va < DRM_MAIA_VA_END &&
	       size <= DRM_MAIA_VA_END - va;
}

int maia_vm_bind_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_context *ctx = maia_ctx_from_file(file);
	struct drm_maia_vm_bind *args = data;

	if (args->pad || (args->flags & ~DRM_MAIA_VM_READONLY) ||
	    !maia_vm_range_valid(args->va, args->size))
		return -EINVAL;

	switch (args->op) {
	case DRM_MAIA_VM_MAP:
		if (!IS_ALIGNED(args->offset, MAIA_PAGE_SIZE))
			return -EINVAL;
		return maia_vm_map(ctx, file, args);
	case DRM_MAIA_VM_UNMAP:
		if (args->handle || args->offset || args->flags)
			return -EINVAL;
		return maia_vm_unmap(to_maia_file(file), args);
	default:
		return -EINVAL;
	}
}
