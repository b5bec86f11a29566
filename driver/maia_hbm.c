// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: device memory (HBM).
 *
 * HBM is device-local memory the CPU reaches through BAR2, which covers all
 * of it. Buffer objects and page tables are carved out of it with the
 * kernel's buddy allocator (the VRAM allocator of amdgpu and xe). Blocks
 * are MAIA_PAGE_SIZE << order and aligned to their size, so a buffer of
 * 2 MiB or more usually gets blocks the device MMU can map with 2 MiB pages.
 */

#include <drm/drm_managed.h>
#include <linux/io.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/sysfs.h>

#include <maia/hw/cmd.h>
#include <maia/hw/mmu.h>
#include <maia/hw/queue.h>
#include <maia/hw/regs.h>

#include "maia_drv.h"
#include "maia_hbm.h"
#include "maia_queue.h"
#include "maia_reset.h"
#include "maia_sysfs.h"

/* FILL commands per kernel-queue job; one per buddy block. */
#define MAIA_HBM_CLEAR_CMDS	(PAGE_SIZE / sizeof(struct maia_cmd_fill))
#define MAIA_HBM_CLEAR_JOB_ID	0x6862636c72000000ull	/* "hbclr" */

static unsigned int maia_hbm_clear_timeout_ms = 10000;
module_param_named(hbm_clear_timeout_ms, maia_hbm_clear_timeout_ms, uint, 0644);
MODULE_PARM_DESC(hbm_clear_timeout_ms,
		 "Time the device may take to clear new HBM before it is reset, in ms (default 10000)");

u64 maia_hbm_block_size(struct maia_device *mdev, struct gpu_buddy_block *block)
{
	return gpu_buddy_block_size(&mdev->hbm.mm, block);
}

/*
 * Allocates @size bytes (a MAIA_PAGE_SIZE multiple) as a list of blocks,
 * largest first. Page tables pass @topdown to stay away from the low
 * addresses where large buffers are placed. -ENOMEM when HBM is full.
 */
int maia_hbm_alloc(struct maia_device *mdev, u64 size, bool topdown,
		   struct list_head *blocks)
{
	struct maia_hbm *hbm = &mdev->hbm;
	unsigned long flags = topdown ? GPU_BUDDY_TOPDOWN_ALLOCATION : 0;
	int ret;

	if (!size || !IS_ALIGNED(size, MAIA_PAGE_SIZE) || size > hbm->usable)
		return -EINVAL;

	mutex_lock(&hbm->lock);
	ret = gpu_buddy_alloc_blocks(&hbm->mm, 0, hbm->size, size,
				     MAIA_PAGE_SIZE, blocks, flags);
	mutex_unlock(&hbm->lock);
	if (ret == -ENOSPC)
		ret = -ENOMEM;
	return ret;
}

void maia_hbm_free(struct maia_device *mdev, struct list_head *blocks)
{
	struct maia_hbm *hbm = &mdev->hbm;

	if (list_empty(blocks))
		return;
	mutex_lock(&hbm->lock);
	gpu_buddy_free_list(&hbm->mm, blocks, 0);
	mutex_unlock(&hbm->lock);
}

/* Includes page tables and the reserved page: what the device has in use. */
u64 maia_hbm_used_bytes(struct maia_device *mdev)
{
	struct maia_hbm *hbm = &mdev->hbm;
	u64 used;

	mutex_lock(&hbm->lock);
	used = hbm->size - hbm->mm.avail;
	mutex_unlock(&hbm->lock);
	return used;
}

u64 maia_hbm_free_bytes(struct maia_device *mdev)
{
	struct maia_hbm *hbm = &mdev->hbm;
	u64 avail;

	mutex_lock(&hbm->lock);
	avail = hbm->mm.avail;
	mutex_unlock(&hbm->lock);
	return avail;
}

void __iomem *maia_hbm_io(struct maia_device *mdev, u64 offset)
{
	return mdev->hbm.wc + offset;
}

void maia_hbm_clear(struct maia_device *mdev, u64 offset, u64 size)
{
	memset_io(maia_hbm_io(mdev, offset), 0, size);
}

/* Runs the first @n commands of the clear buffer as one kernel-queue job. */
static int maia_hbm_clear_job(struct maia_device *mdev, unsigned int n)
{
	const struct maia_sq_entry entry = {
		.cmdbuf_addr = mdev->hbm.clear_cmds_dma,
		.cmdbuf_size = n * sizeof(struct maia_cmd_fill),
		.asid = MAIA_ASID_PHYS,
		.job_id = MAIA_HBM_CLEAR_JOB_ID | n,
	};

	lockdep_assert_held(&mdev->hbm.clear_lock);
	/* Not interruptible: the device is writing memory the caller owns. */
	return maia_queue_run_sync(&mdev->kq, &entry, READ_ONCE(maia_hbm_clear_timeout_ms),
				   false, NULL, NULL);
}

/* FILL with zeros, at the device's memory speed rather than through BAR2. */
static int maia_hbm_clear_on_device(struct maia_device *mdev, struct list_head *blocks)
{
	struct maia_cmd_fill *cmds = mdev->hbm.clear_cmds;
	struct gpu_buddy_block *block;
	unsigned int n = 0;
	int ret = 0;

	mutex_lock(&mdev->hbm.clear_lock);
	list_for_each_entry(block, blocks, link) {
		cmds[n] = (struct maia_cmd_fill) {
			.hdr.opcode = MAIA_OP_FILL,
			.hdr.size = sizeof(*cmds),
			.dst = MAIA_PHYS_HBM | maia_hbm_block_offset(block),
			.size = maia_hbm_block_size(mdev, block),
		};
		if (++n == MAIA_HBM_CLEAR_CMDS) {
			ret = maia_hbm_clear_job(mdev, n);
			if (ret)
				goto out;
			n = 0;
		}
	}
	if (n)
		ret = maia_hbm_clear_job(mdev, n);
out:
	mutex_unlock(&mdev->hbm.clear_lock);
	return ret;
}

int maia_hbm_clear_blocks(struct maia_device *mdev, struct list_head *blocks)
{
	struct maia_hbm *hbm = &mdev->hbm;
	struct gpu_buddy_block *block;
	int ret;

	ret = maia_hbm_clear_on_device(mdev, blocks);
	if (!ret)
		return 0;

	if (ret == -ETIMEDOUT) {
		/*
		 * The kernel queue is stuck. The FILL may still land, so nobody
		 * may own these blocks until a device reset has ended all device
		 * DMA; the reset then gives them back.
		 */
		maia_err(mdev, "HBM clear timed out: resetting the device; its memory is back after the reset\n");
		mutex_lock(&hbm->lock);
		list_splice_tail_init(blocks, &hbm->quarantine);
		mutex_unlock(&hbm->lock);
		maia_reset_schedule(mdev, "kernel queue timeout");
		return ret;
	}

	/* The device did not take the job: clear through the aperture. */
	maia_dbg(mdev, "device clear failed (%d), clearing through BAR%d\n",
		 ret, MAIA_BAR_HBM);
	list_for_each_entry(block, blocks, link)
		maia_hbm_clear(mdev, maia_hbm_block_offset(block),
			       maia_hbm_block_size(mdev, block));
	return 0;
}

/* HBM bytes allocated: buffer objects, page tables, driver reservations. */
static ssize_t hbm_used_bytes_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", maia_hbm_used_bytes(maia_from_dev(dev)));
}
static DEVICE_ATTR_RO(hbm_used_bytes);

/* HBM bytes free (possibly fragmented). */
static ssize_t hbm_free_bytes_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", maia_hbm_free_bytes(maia_from_dev(dev)));
}
static DEVICE_ATTR_RO(hbm_free_bytes);

static struct attribute *maia_hbm_attrs[] = {
	&dev_attr_hbm_used_bytes.attr,
	&dev_attr_hbm_free_bytes.attr,
	NULL,
};

const struct attribute_group maia_hbm_attr_group = {
	.attrs = maia_hbm_attrs,
};

/*
 * Runs when the last reference to the DRM device goes, after every buffer
 * object has been freed: anything still allocated then is a leak.
 */
/*
 * After a device reset, when no device DMA from before it can land: blocks
 * whose clear timed out are free again (they are cleared when next handed
 * out, as all new HBM is).
 */
void maia_hbm_release_quarantine(struct maia_device *mdev)
{
	struct maia_hbm *hbm = &mdev->hbm;
	struct gpu_buddy_block *block;
	u64 bytes = 0;

	mutex_lock(&hbm->lock);
	list_for_each_entry(block, &hbm->quarantine, link)
		bytes += gpu_buddy_block_size(&hbm->mm, block);
	gpu_buddy_free_list(&hbm->mm, &hbm->quarantine, 0);
	mutex_unlock(&hbm->lock);
	if (bytes)
		maia_info(mdev, "%llu bytes of HBM whose clear timed out are back in use\n", bytes);
}

static void maia_hbm_fini(struct drm_device *drm, void *arg)
{
	struct maia_hbm *hbm = arg;

	mutex_lock(&hbm->lock);
	gpu_buddy_free_list(&hbm->mm, &hbm->reserved, 0);
	gpu_buddy_free_list(&hbm->mm, &hbm->quarantine, 0);
	drm_WARN(drm, hbm->mm.avail != hbm->size,
		 "%llu bytes of HBM leaked\n", hbm->size - hbm->mm.avail);
	gpu_buddy_fini(&hbm->mm);
	mutex_unlock(&hbm->lock);
}

int maia_hbm_init(struct maia_device *mdev)
{
	struct pci_dev *pdev = to_pci_dev(mdev->drm.dev);
	struct maia_hbm *hbm = &mdev->hbm;
	u64 bar_len = pci_resource_len(pdev, MAIA_BAR_HBM);
	int ret;

	hbm->size = mdev->hw.hbm_size;
	INIT_LIST_HEAD(&hbm->reserved);
	INIT_LIST_HEAD(&hbm->quarantine);
	if (hbm->size < 2 * MAIA_PAGE_SIZE || !IS_ALIGNED(hbm->size, MAIA_PAGE_SIZE)) {
		maia_err(mdev, "device reports %llu bytes of HBM, not usable\n",
			 hbm->size);
		return -ENODEV;
	}
	if (bar_len < hbm->size) {
		maia_err(mdev, "BAR%d is %llu bytes, smaller than the %llu bytes of HBM\n",
			 MAIA_BAR_HBM, bar_len, hbm->size);
		return -ENODEV;
	}

	ret = pcim_request_region(pdev, MAIA_BAR_HBM, "maia-hbm");
	if (ret) {
		maia_err(mdev, "cannot claim BAR%d: %pe\n", MAIA_BAR_HBM, ERR_PTR(ret));
		return ret;
	}
	hbm->bar_base = pci_resource_start(pdev, MAIA_BAR_HBM);
	hbm->wc = devm_ioremap_wc(&pdev->dev, hbm->bar_base, hbm->size);
	if (!hbm->wc) {
		maia_err(mdev, "cannot map BAR%d\n", MAIA_BAR_HBM);
		return -ENOMEM;
	}

	ret = drmm_mutex_init(&mdev->drm, &hbm->lock);
	if (ret)
		return ret;
	ret = drmm_mutex_init(&mdev->drm, &hbm->clear_lock);
	if (ret)
		return ret;

	hbm->clear_cmds = dmam_alloc_coherent(&pdev->dev, MAIA_HBM_CLEAR_CMDS *
					      sizeof(*hbm->clear_cmds),
					      &hbm->clear_cmds_dma, GFP_KERNEL);
	if (!hbm->clear_cmds)
		return -ENOMEM;

	ret = gpu_buddy_init(&hbm->mm, hbm->size, MAIA_PAGE_SIZE);
	if (ret) {
		maia_err(mdev, "cannot set up the HBM allocator: %pe\n", ERR_PTR(ret));
		return ret;
	}
	ret = drmm_add_action_or_reset(&mdev->drm, maia_hbm_fini, hbm);
	if (ret)
		return ret;

	/* Page 0: SET_CONTEXT takes a root of 0 to mean "disable". */
	mutex_lock(&hbm->lock);
	ret = gpu_buddy_alloc_blocks(&hbm->mm, 0, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE,
				     MAIA_PAGE_SIZE, &hbm->reserved,
				     GPU_BUDDY_RANGE_ALLOCATION);
	mutex_unlock(&hbm->lock);
	if (ret)
		return ret;
	hbm->usable = hbm->size - MAIA_PAGE_SIZE;

	maia_dbg(mdev, "HBM %llu MiB at BAR%d %pa\n", hbm->size >> 20,
		 MAIA_BAR_HBM, &hbm->bar_base);
	return 0;
}
