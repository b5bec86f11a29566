/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: device MMU page tables (maia/hw/mmu.h) and the
 * mailbox commands that install them and flush the device TLB.
 */
#ifndef __MAIA_MMU_H__
#define __MAIA_MMU_H__

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include <maia/hw/mmu.h>

struct maia_device;

/*
 * One 4 KiB table in HBM. @pte shadows what was written to HBM, so the
 * driver never reads page tables back through the BAR.
 */
struct maia_pt {
	u64 hbm;			/* HBM offset of the table */
	struct list_head blocks;	/* its buddy block */
	u64 *pte;			/* MAIA_PT_ENTRIES entries */
	struct maia_pt **child;		/* next level; NULL in L3 tables */
	unsigned int used;		/* valid entries */
};

/* The four-level page tables of one address space. */
struct maia_pgtable {
	struct maia_pt *root;
	struct mutex *lock;		/* the owner's lock over the tables (asserted) */
};

/*
 * Allocates the root; map and unmap then expect @lock held. Caller is
 * inside drm_dev_enter().
 */
int maia_mmu_pgtable_init(struct maia_device *mdev, struct maia_pgtable *pgt, struct mutex *lock);
/* Frees every table; touches no hardware (the context is disabled). */
void maia_mmu_pgtable_fini(struct maia_device *mdev, struct maia_pgtable *pgt);

/*
 * Maps [@va, @va + @size) to the contiguous range at @addr (an HBM offset,
 * or a bus address with MAIA_PTE_SYSMEM in @prot). @prot holds
 * MAIA_PTE_READ/WRITE/SYSMEM. Uses 2 MiB pages where @va and @addr allow.
 * On failure nothing of the range stays mapped. Caller is inside
 * drm_dev_enter() and holds @pgt->lock.
 */
int maia_mmu_map(struct maia_device *mdev, struct maia_pgtable *pgt,
		 u64 va, u64 addr, u64 size, u64 prot);
/* Clears the range and frees tables it leaves empty. Same rules. */
void maia_mmu_unmap(struct maia_device *mdev, struct maia_pgtable *pgt,
		    u64 va, u64 size);
/* Orders page-table writes before what tells the device to use them. */
void maia_mmu_flush(void);

/* Caller holds maia_contexts.lock, which covers SET_CONTEXT (asserted). */
int maia_mmu_set_context(struct maia_device *mdev, u32 asid, u64 root);
/* Caller holds the reset lock, for reading or writing (asserted). */
int maia_mmu_tlb_invalidate(struct maia_device *mdev, u32 asid);

#endif /* __MAIA_MMU_H__ */
