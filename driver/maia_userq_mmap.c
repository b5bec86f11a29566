// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: a user queue's pages in the process (maia_userq.c
 * has the queues). CREATE hands out three mmap offsets per queue, below
 * DRM_FILE_PAGE_OFFSET_START: the ring and the completion array (a page of
 * the kernel's each) and the queue's doorbell page in BAR1. Each mapping
 * holds a reference to its queue; a teardown zaps the doorbell, which then
 * faults in the queue's dummy page, so a process that rings a dead queue
 * rings nothing and is not killed for it.
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <linux/mm.h>
#include <linux/pfn_t.h>

#include "maia_userq_priv.h"

/* The process's doorbell mappings of @slot reach the dummy page from now on. */
void maia_userq_revoke_doorbell(struct maia_device *mdev, unsigned int hwq)
{
	unmap_mapping_range(mdev->drm.anon_inode->i_mapping,
			    (loff_t)MAIA_USERQ_PGOFF(hwq, MAIA_USERQ_PAGE_DB) << PAGE_SHIFT,
			    PAGE_SIZE, 1);
}

bool maia_userq_mmap_offset(unsigned long pgoff)
{
	return pgoff >= MAIA_USERQ_PGOFF_BASE &&
	       pgoff < MAIA_USERQ_PGOFF(MAIA_MAX_QUEUES, 0);
}

/*
 * Pages are mapped at mmap time; a zap (the doorbell at teardown, all of
 * them at unplug, drm_dev_unplug()) brings the process here. The ring and
 * the array come back as they are (they live as long as a mapping does);
 * the doorbell comes back as the queue's dummy page, where a store rings
 * nothing, so a process that rings a dead queue is not killed for it.
 */
static vm_fault_t maia_userq_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct maia_userq *uq = vma->vm_private_data;

	switch ((vma->vm_pgoff - MAIA_USERQ_PGOFF_BASE) % MAIA_USERQ_PAGES) {
	case MAIA_USERQ_PAGE_SQ:
		return vmf_insert_mixed(vma, vmf->address, page_to_pfn_t(uq->sq_page));
	case MAIA_USERQ_PAGE_CQ:
		return vmf_insert_mixed(vma, vmf->address, page_to_pfn_t(uq->cq_page));
	default:
		return vmf_insert_pfn_prot(vma, vmf->address, page_to_pfn(uq->dummy_page),
					   vm_get_page_prot(vma->vm_flags));
	}
}

/* A VMA of the queue is copied (split, mremap): one more mapping. */
static void maia_userq_vm_open(struct vm_area_struct *vma)
{
	struct maia_userq *uq = vma->vm_private_data;

	mutex_lock(&uq->uqs->lock);
	uq->maps++;
	kref_get(&uq->ref);
	mutex_unlock(&uq->uqs->lock);
}

static void maia_userq_vm_close(struct vm_area_struct *vma)
{
	struct maia_userq *uq = vma->vm_private_data;
	struct maia_userq_slot *slot = uq->slot;

	mutex_lock(&uq->uqs->lock);
	if (!--uq->maps && uq->torn_down && slot->uq == uq)
		slot->uq = NULL;
	mutex_unlock(&uq->uqs->lock);
	kref_put(&uq->ref, maia_userq_release);
}

static const struct vm_operations_struct maia_userq_vm_ops = {
	.fault = maia_userq_vm_fault,
	.open = maia_userq_vm_open,
	.close = maia_userq_vm_close,
};

/* mmap of one page of a user queue of this file (offsets from CREATE). */
int maia_userq_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct drm_file *file = filp->private_data;
	struct maia_device *mdev = to_maia_device(file->minor->dev);
	struct maia_userqs *uqs = mdev->userqs;
	unsigned long rel = vma->vm_pgoff - MAIA_USERQ_PGOFF_BASE;
	unsigned int hwq = rel / MAIA_USERQ_PAGES;
	struct maia_userq *uq;
	int ret, idx;

	if (vma_pages(vma) != 1 || !(vma->vm_flags & VM_SHARED) ||
	    hwq < uqs->first || hwq >= uqs->first + uqs->count)
		return -EINVAL;
	if (!drm_dev_enter(&mdev->drm, &idx))
		return -ENODEV;
	mutex_lock(&uqs->lock);
	uq = uqs->slots[hwq].uq;
	if (!uq || uq->file != file || uq->dying) {
		ret = -ENOENT;
		goto out;
	}
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &maia_userq_vm_ops;
	switch (rel % MAIA_USERQ_PAGES) {
	case MAIA_USERQ_PAGE_SQ:
		ret = vm_insert_page(vma, vma->vm_start, uq->sq_page);
		break;
	case MAIA_USERQ_PAGE_CQ:
		ret = vm_insert_page(vma, vma->vm_start, uq->cq_page);
		break;
	case MAIA_USERQ_PAGE_DB:
		vm_flags_set(vma, VM_IO | VM_PFNMAP);
		vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
		ret = io_remap_pfn_range(vma, vma->vm_start,
					 PHYS_PFN(uqs->doorbells + MAIA_UDB_PAGE(hwq)),
					 PAGE_SIZE, vma->vm_page_prot);
		break;
	default:
		ret = -EINVAL;
		break;
	}
	if (!ret) {
		vma->vm_private_data = uq;
		uq->maps++;
		kref_get(&uq->ref);
	}
out:
	mutex_unlock(&uqs->lock);
	drm_dev_exit(idx);
	return ret;
}

