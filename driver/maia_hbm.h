/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: device memory (HBM) allocator and the BAR2
 * aperture through which the CPU reaches it.
 */
#ifndef __MAIA_HBM_H__
#define __MAIA_HBM_H__

#include <linux/gpu_buddy.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sysfs.h>
#include <linux/types.h>
#include <linux/xarray.h>

struct maia_cmd_fill;
struct maia_device;

/*
 * HBM is managed in MAIA_PAGE_SIZE chunks by the kernel's buddy allocator.
 * The first page is reserved: SET_CONTEXT reads a page-table root of 0 as
 * "disable", so no table may ever live there.
 */
struct maia_hbm {
	/* Protects @mm (free trees and its avail counter). */
	struct mutex lock;
	struct gpu_buddy mm;
	u64 size;			/* bytes of HBM on the device */
	u64 usable;			/* @size minus the reserved page */
	struct list_head reserved;	/* blocks held by the driver forever */
	resource_size_t bar_base;	/* bus address of BAR2 */
	void __iomem *wc;		/* BAR2 mapped write-combined, whole HBM */

	/*
	 * Device-side clearing: FILL commands run on the kernel queue. Blocks
	 * a clear may still write after it timed out stay in @quarantine until
	 * the device goes.
	 */
	struct mutex clear_lock;	/* protects @clear_cmds; taken before the kernel queue's */
	struct maia_cmd_fill *clear_cmds;
	dma_addr_t clear_cmds_dma;
	struct list_head quarantine;	/* under @lock; freed by the next reset */

	/*
	 * Pages with an uncorrectable ECC error (Documentation/reliability.rst):
	 * @bad holds every such page the device reported, by page index, with
	 * the value MAIA_HBM_PAGE_PENDING while an owner still holds it and
	 * MAIA_HBM_PAGE_RETIRED once it sits in @retired, allocated for good.
	 * All under @lock.
	 */
	struct xarray bad;
	struct list_head retired;
	u64 retired_pages;
	u64 pending_pages;
};

int maia_hbm_init(struct maia_device *mdev);
void maia_hbm_release_quarantine(struct maia_device *mdev);

int maia_hbm_alloc(struct maia_device *mdev, u64 size, bool topdown,
		   struct list_head *blocks);
void maia_hbm_free(struct maia_device *mdev, struct list_head *blocks);

/* An uncorrectable ECC error at HBM @offset: take its page out of use. */
void maia_hbm_retire_page(struct maia_device *mdev, u64 offset);

u64 maia_hbm_used_bytes(struct maia_device *mdev);
u64 maia_hbm_free_bytes(struct maia_device *mdev);

static inline u64 maia_hbm_block_offset(struct gpu_buddy_block *block)
{
	return gpu_buddy_block_offset(block);
}

u64 maia_hbm_block_size(struct maia_device *mdev, struct gpu_buddy_block *block);

/* Caller is inside drm_dev_enter(): the aperture is unmapped after unplug. */
void maia_hbm_clear(struct maia_device *mdev, u64 offset, u64 size);
/*
 * Zeroes every block of @blocks, by the device when it can. Same rule. On
 * failure the blocks belong to the allocator again (or to the quarantine)
 * and @blocks is empty.
 */
int maia_hbm_clear_blocks(struct maia_device *mdev, struct list_head *blocks);

/* CPU address of HBM @offset; same rule as maia_hbm_clear(). */
void __iomem *maia_hbm_io(struct maia_device *mdev, u64 offset);

/* sysfs: HBM use, in maia_sysfs_groups */
extern const struct attribute_group maia_hbm_attr_group;

#endif /* __MAIA_HBM_H__ */
