// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: device MMU page tables.
 *
 * Four levels of 512 entries (maia/hw/mmu.h). Tables are 4 KiB pages of
 * HBM, allocated from the top of HBM, zeroed on allocation and written
 * through the write-combined BAR2 mapping; a shadow copy in kernel memory
 * answers every question about them. Intermediate entries only carry
 * VALID; leaves carry the permissions. An L2 entry maps 2 MiB where both
 * the VA and the backing address are 2 MiB aligned and the L2 slot has no
 * L3 table. Tables that an unmap leaves empty are freed.
 */

#include <linux/io.h>
#include <linux/minmax.h>
#include <linux/slab.h>

#include <maia/hw/mbox.h>

#include "maia_drv.h"
#include "maia_hbm.h"
#include "maia_mbox.h"
#include "maia_mmu.h"
#include "maia_reset.h"

#define MAIA_PT_LEAF_LEVEL	(MAIA_PT_LEVELS - 1)
#define MAIA_PT_HUGE_LEVEL	(MAIA_PT_LEVELS - 2)

/* Bytes one entry of a level-@level table covers. */
static u64 maia_pt_span(int level)
{
	return 1ull << (39 - 9 * level);
}

static void maia_pt_free(struct maia_device *mdev, struct maia_pt *pt)
{
	maia_hbm_free(mdev, &pt->blocks);
	kfree(pt->child);
	kfree(pt->pte);
	kfree(pt);
}

static struct maia_pt *maia_pt_alloc(struct maia_device *mdev, int level)
{
	struct maia_pt *pt;
	int ret;

	pt = kzalloc(sizeof(*pt), GFP_KERNEL);
	if (!pt)
		return ERR_PTR(-ENOMEM);
	INIT_LIST_HEAD(&pt->blocks);
	pt->pte = kcalloc(MAIA_PT_ENTRIES, sizeof(*pt->pte), GFP_KERNEL);
	if (level < MAIA_PT_LEAF_LEVEL)
		pt->child = kcalloc(MAIA_PT_ENTRIES, sizeof(*pt->child), GFP_KERNEL);
	if (!pt->pte || (level < MAIA_PT_LEAF_LEVEL && !pt->child)) {
		ret = -ENOMEM;
		goto err;
	}

	ret = maia_hbm_alloc(mdev, MAIA_PAGE_SIZE, true, &pt->blocks);
	if (ret)
		goto err;
	pt->hbm = maia_hbm_block_offset(list_first_entry(&pt->blocks,
							 struct gpu_buddy_block, link));
	maia_hbm_clear(mdev, pt->hbm, MAIA_PAGE_SIZE);
	return pt;

err:
	maia_pt_free(mdev, pt);
	return ERR_PTR(ret);
}

/* The device reads entries with single 64-bit loads: write them whole. */
static void maia_pt_set(struct maia_device *mdev, struct maia_pt *pt,
			unsigned int idx, u64 entry)
{
	pt->pte[idx] = entry;
	writeq(entry, maia_hbm_io(mdev, pt->hbm + idx * sizeof(u64)));
}

/* Returns the table below @pt's entry @idx, creating it if needed. */
static struct maia_pt *maia_pt_get_child(struct maia_device *mdev,
					 struct maia_pt *pt, unsigned int idx,
					 int child_level)
{
	struct maia_pt *child = pt->child[idx];

	if (child)
		return child;
	if (pt->pte[idx])	/* a 2 MiB leaf is in the way */
		return ERR_PTR(-EEXIST);

	child = maia_pt_alloc(mdev, child_level);
	if (IS_ERR(child))
		return child;
	pt->child[idx] = child;
	maia_pt_set(mdev, pt, idx, child->hbm | MAIA_PTE_VALID);
	pt->used++;
	return child;
}

/* Maps one 4 KiB or 2 MiB page at @va; returns its size or an errno. */
static s64 maia_pt_map_page(struct maia_device *mdev, struct maia_pgtable *pgt,
			    u64 va, u64 addr, u64 size, u64 prot)
{
	struct maia_pt *pt = pgt->root;
	unsigned int idx;
	int level;

	for (level = 0; level < MAIA_PT_HUGE_LEVEL; level++) {
		pt = maia_pt_get_child(mdev, pt, MAIA_PT_INDEX(va, level), level + 1);
		if (IS_ERR(pt))
			return PTR_ERR(pt);
	}

	idx = MAIA_PT_INDEX(va, MAIA_PT_HUGE_LEVEL);
	if (!pt->child[idx] && !pt->pte[idx] && size >= MAIA_HUGE_PAGE_SIZE &&
	    IS_ALIGNED(va | addr, MAIA_HUGE_PAGE_SIZE)) {
		maia_pt_set(mdev, pt, idx, addr | prot | MAIA_PTE_HUGE | MAIA_PTE_VALID);
		pt->used++;
		return MAIA_HUGE_PAGE_SIZE;
	}

	pt = maia_pt_get_child(mdev, pt, idx, MAIA_PT_LEAF_LEVEL);
	if (IS_ERR(pt))
		return PTR_ERR(pt);
	idx = MAIA_PT_INDEX(va, MAIA_PT_LEAF_LEVEL);
	if (pt->pte[idx])
		return -EEXIST;
	maia_pt_set(mdev, pt, idx, addr | prot | MAIA_PTE_VALID);
	pt->used++;
	return MAIA_PAGE_SIZE;
}

static void maia_pt_unmap(struct maia_device *mdev, struct maia_pt *pt,
			  int level, u64 va, u64 end)
{
	u64 span = maia_pt_span(level);

	while (va < end) {
		unsigned int idx = MAIA_PT_INDEX(va, level);
		u64 next = min(round_down(va, span) + span, end);
		struct maia_pt *child = pt->child ? pt->child[idx] : NULL;

		if (child) {
			maia_pt_unmap(mdev, child, level + 1, va, next);
			if (!child->used) {
				maia_pt_set(mdev, pt, idx, 0);
				pt->child[idx] = NULL;
				pt->used--;
				maia_pt_free(mdev, child);
			}
		} else if (pt->pte[idx]) {
			/* A leaf: 4 KiB, or 2 MiB that mappings never split. */
			WARN_ON(level != MAIA_PT_LEAF_LEVEL && next - va != span);
			maia_pt_set(mdev, pt, idx, 0);
			pt->used--;
		}
		va = next;
	}
}

int maia_mmu_map(struct maia_device *mdev, struct maia_pgtable *pgt,
		 u64 va, u64 addr, u64 size, u64 prot)
{
	u64 done = 0;

	lockdep_assert_held(pgt->lock);
	if (WARN_ON(!IS_ALIGNED(va | addr | size, MAIA_PAGE_SIZE) ||
		    (addr & ~MAIA_PTE_ADDR_MASK) || va + size > BIT_ULL(MAIA_VA_BITS) ||
		    (prot & ~(MAIA_PTE_READ | MAIA_PTE_WRITE | MAIA_PTE_SYSMEM))))
		return -EINVAL;

	while (done < size) {
		s64 n = maia_pt_map_page(mdev, pgt, va + done, addr + done,
					 size - done, prot);

		if (n < 0) {
			maia_mmu_unmap(mdev, pgt, va, done);
			return n;
		}
		done += n;
	}
	return 0;
}

void maia_mmu_unmap(struct maia_device *mdev, struct maia_pgtable *pgt,
		    u64 va, u64 size)
{
	lockdep_assert_held(pgt->lock);
	if (size)
		maia_pt_unmap(mdev, pgt->root, 0, va, va + size);
}

/*
 * Page-table stores go through a write-combining mapping, which x86 does
 * not order against later uncached stores (the mailbox or a doorbell):
 * wmb() drains the WC buffers first.
 */
void maia_mmu_flush(void)
{
	wmb();	/* page-table stores (WC) before the next MMIO write */
}

int maia_mmu_pgtable_init(struct maia_device *mdev, struct maia_pgtable *pgt,
			  struct mutex *lock)
{
	pgt->lock = lock;
	pgt->root = maia_pt_alloc(mdev, 0);
	if (IS_ERR(pgt->root)) {
		int ret = PTR_ERR(pgt->root);

		pgt->root = NULL;
		return ret;
	}
	return 0;
}

static void maia_pt_free_tree(struct maia_device *mdev, struct maia_pt *pt)
{
	unsigned int i;

	if (pt->child)
		for (i = 0; i < MAIA_PT_ENTRIES; i++)
			if (pt->child[i])
				maia_pt_free_tree(mdev, pt->child[i]);
	maia_pt_free(mdev, pt);
}

void maia_mmu_pgtable_fini(struct maia_device *mdev, struct maia_pgtable *pgt)
{
	if (pgt->root)
		maia_pt_free_tree(mdev, pgt->root);
	pgt->root = NULL;
}

/* Installs @root (an HBM offset) for @asid; a root of 0 disables it. */
int maia_mmu_set_context(struct maia_device *mdev, u32 asid, u64 root)
{
	u32 args[MAIA_MBOX_NARGS] = { asid, lower_32_bits(root), upper_32_bits(root) };

	lockdep_assert_held(&mdev->contexts.lock);
	maia_mmu_flush();
	return maia_mbox_cmd(mdev, MAIA_MBOX_SET_CONTEXT, args, NULL);
}

int maia_mmu_tlb_invalidate(struct maia_device *mdev, u32 asid)
{
	u32 args[MAIA_MBOX_NARGS] = { asid };

	lockdep_assert_held(&mdev->reset->lock);
	maia_mmu_flush();
	return maia_mbox_cmd(mdev, MAIA_MBOX_TLB_INVALIDATE, args, NULL);
}
