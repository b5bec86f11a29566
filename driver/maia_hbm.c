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

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/io.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/sysfs.h>

#include <maia/hw/cmd.h>
#include <maia/hw/mmu.h>
#include <maia/hw/queue.h>
#include <maia/hw/regs.h>

#include "maia_drv.h"
#include "maia_hbm.h"
#include "maia_hw.h"
#include "maia_queue.h"
#include "maia_reset.h"
#include "maia_sysfs.h"

/* FILL commands per kernel-queue job; one per buddy block. */
#define MAIA_HBM_CLEAR_CMDS	(PAGE_SIZE / sizeof(struct maia_cmd_fill))
#define MAIA_HBM_CLEAR_JOB_ID	0x6862636c72000000ull	/* "hbclr" */

/*
 * Per 256 MiB cleared: a clear of 1 GiB on a host whose cores are all busy
 * took more than 10 s (the device touches HBM pages the host allocates on
 * first use), so a fixed limit would reset healthy devices.
 */
static unsigned int maia_hbm_clear_timeout_ms = 10000;
module_param_named(hbm_clear_timeout_ms, maia_hbm_clear_timeout_ms, uint, 0644);
MODULE_PARM_DESC(hbm_clear_timeout_ms,
		 "Time the device may take to clear each 256 MiB of new HBM before it is reset, in ms (default 10000)");
#define MAIA_HBM_CLEAR_TIMEOUT_UNIT	SZ_256M

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

#define MAIA_HBM_PAGE_PENDING	1ul
#define MAIA_HBM_PAGE_RETIRED	2ul

/*
 * Takes the bad page @index, recorded in hbm->bad, out of the allocator if
 * it is free: allocates exactly that page into @retired. False if someone
 * still owns it. Caller holds hbm->lock.
 */
static bool maia_hbm_try_retire(struct maia_hbm *hbm, unsigned long index)
{
	u64 start = (u64)index * MAIA_PAGE_SIZE;

	lockdep_assert_held(&hbm->lock);
	if (gpu_buddy_alloc_blocks(&hbm->mm, start, start + MAIA_PAGE_SIZE,
				   MAIA_PAGE_SIZE, MAIA_PAGE_SIZE, &hbm->retired,
				   GPU_BUDDY_RANGE_ALLOCATION))
		return false;
	/* Replaces an existing entry: allocates nothing, cannot fail. */
	xa_store(&hbm->bad, index, xa_mk_value(MAIA_HBM_PAGE_RETIRED), GFP_KERNEL);
	hbm->retired_pages++;
	return true;
}

/* Pages that went bad while owned: retire those the last free gave back. */
static void maia_hbm_retire_pending(struct maia_hbm *hbm)
{
	unsigned long index;
	void *entry;

	lockdep_assert_held(&hbm->lock);
	if (!hbm->pending_pages)
		return;
	xa_for_each(&hbm->bad, index, entry) {
		if (xa_to_value(entry) == MAIA_HBM_PAGE_PENDING &&
		    maia_hbm_try_retire(hbm, index))
			hbm->pending_pages--;
	}
}

/*
 * The device reported an uncorrectable ECC error in the page at @offset. A
 * free page leaves the allocator now; a page someone owns (a buffer object,
 * a page table, the reserved page) when its owner frees it. The record
 * lives as long as the driver is bound: the device forgets its poison at
 * reset, the driver keeps the page out anyway. Sleeps (allocates).
 */
void maia_hbm_retire_page(struct maia_device *mdev, u64 offset)
{
	struct maia_hbm *hbm = &mdev->hbm;
	unsigned long index = offset / MAIA_PAGE_SIZE;
	u64 page = offset & ~(u64)(MAIA_PAGE_SIZE - 1);
	bool retired;
	int ret;

	if (offset >= hbm->size)
		return;
	mutex_lock(&hbm->lock);
	ret = xa_insert(&hbm->bad, index, xa_mk_value(MAIA_HBM_PAGE_PENDING), GFP_KERNEL);
	if (ret) {
		mutex_unlock(&hbm->lock);
		/* -EBUSY: known already, nothing to do. */
		if (ret != -EBUSY)
			maia_err(mdev, "HBM page %#llx: cannot record its retirement: %pe\n",
				 page, ERR_PTR(ret));
		return;
	}
	retired = maia_hbm_try_retire(hbm, index);
	if (!retired)
		hbm->pending_pages++;
	mutex_unlock(&hbm->lock);
	maia_warn(mdev, "HBM page %#llx has an uncorrectable ECC error: %s\n", page,
		  retired ? "retired" : "retired when its owner frees it");
}

void maia_hbm_free(struct maia_device *mdev, struct list_head *blocks)
{
	struct maia_hbm *hbm = &mdev->hbm;

	if (list_empty(blocks))
		return;
	mutex_lock(&hbm->lock);
	gpu_buddy_free_list(&hbm->mm, blocks, 0);
	maia_hbm_retire_pending(hbm);
	mutex_unlock(&hbm->lock);
}

/*
 * Includes page tables, the reserved page and retired pages: what is not
 * available for allocation. used + free == size, always.
 */
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

/* Runs the first @n commands (@bytes) of the clear buffer as one kernel-queue job. */
static int maia_hbm_clear_job(struct maia_device *mdev, unsigned int n, u64 bytes)
{
	u64 units = max_t(u64, 1, DIV_ROUND_UP_ULL(bytes, MAIA_HBM_CLEAR_TIMEOUT_UNIT));
	u64 timeout_ms = min_t(u64, units * READ_ONCE(maia_hbm_clear_timeout_ms), UINT_MAX);
	const struct maia_sq_entry entry = {
		.cmdbuf_addr = mdev->hbm.clear_cmds_dma,
		.cmdbuf_size = n * sizeof(struct maia_cmd_fill),
		.asid = MAIA_ASID_PHYS,
		.job_id = MAIA_HBM_CLEAR_JOB_ID | n,
	};

	lockdep_assert_held(&mdev->hbm.clear_lock);
	/* Not interruptible: the device is writing memory the caller owns. */
	return maia_queue_run_sync(&mdev->kq, &entry, (unsigned int)timeout_ms, false, NULL, NULL);
}

/* FILL with zeros, at the device's memory speed rather than through BAR2. */
static int maia_hbm_clear_on_device(struct maia_device *mdev, struct list_head *blocks)
{
	struct maia_cmd_fill *cmds = mdev->hbm.clear_cmds;
	struct gpu_buddy_block *block;
	unsigned int n = 0;
	u64 bytes = 0;
	int ret = 0;

	mutex_lock(&mdev->hbm.clear_lock);
	list_for_each_entry(block, blocks, link) {
		cmds[n] = (struct maia_cmd_fill) {
			.hdr.opcode = MAIA_OP_FILL,
			.hdr.size = sizeof(*cmds),
			.dst = MAIA_PHYS_HBM | maia_hbm_block_offset(block),
			.size = maia_hbm_block_size(mdev, block),
		};
		bytes += cmds[n].size;
		if (++n == MAIA_HBM_CLEAR_CMDS) {
			ret = maia_hbm_clear_job(mdev, n, bytes);
			if (ret)
				goto out;
			n = 0;
			bytes = 0;
		}
	}
	if (n)
		ret = maia_hbm_clear_job(mdev, n, bytes);
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

/* HBM pages retired for an uncorrectable ECC error (out of the allocator). */
static ssize_t hbm_retired_pages_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	struct maia_hbm *hbm = &maia_from_dev(dev)->hbm;
	u64 n;

	mutex_lock(&hbm->lock);
	n = hbm->retired_pages;
	mutex_unlock(&hbm->lock);
	return sysfs_emit(buf, "%llu\n", n);
}
static DEVICE_ATTR_RO(hbm_retired_pages);

/* Bad HBM pages still owned, retired when their owner frees them. */
static ssize_t hbm_retired_pages_pending_show(struct device *dev,
					      struct device_attribute *attr, char *buf)
{
	struct maia_hbm *hbm = &maia_from_dev(dev)->hbm;
	u64 n;

	mutex_lock(&hbm->lock);
	n = hbm->pending_pages;
	mutex_unlock(&hbm->lock);
	return sysfs_emit(buf, "%llu\n", n);
}
static DEVICE_ATTR_RO(hbm_retired_pages_pending);

/* An ECC counter of the device (since power-on), or -ENODEV once it is gone. */
static ssize_t maia_hbm_ecc_count_show(struct device *dev, u32 reg, char *buf)
{
	struct maia_device *mdev = maia_from_dev(dev);
	u32 count;
	int idx;

	if (!drm_dev_enter(&mdev->drm, &idx))
		return -ENODEV;
	count = maia_rd(mdev, reg);
	drm_dev_exit(idx);
	return sysfs_emit(buf, "%u\n", count);
}

/* Correctable HBM ECC errors the device has corrected. */
static ssize_t hbm_ecc_ce_count_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return maia_hbm_ecc_count_show(dev, MAIA_REG_ECC_CE_COUNT, buf);
}
static DEVICE_ATTR_RO(hbm_ecc_ce_count);

/* Uncorrectable HBM ECC errors: pages the device found bad. */
static ssize_t hbm_ecc_ue_count_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return maia_hbm_ecc_count_show(dev, MAIA_REG_ECC_UE_COUNT, buf);
}
static DEVICE_ATTR_RO(hbm_ecc_ue_count);

static struct attribute *maia_hbm_attrs[] = {
	&dev_attr_hbm_used_bytes.attr,
	&dev_attr_hbm_free_bytes.attr,
	&dev_attr_hbm_retired_pages.attr,
	&dev_attr_hbm_retired_pages_pending.attr,
	&dev_attr_hbm_ecc_ce_count.attr,
	&dev_attr_hbm_ecc_ue_count.attr,
	NULL,
};

/* The ECC counters came with hardware revision 1.2. */
static umode_t maia_hbm_attr_visible(struct kobject *kobj, struct attribute *attr, int n)
{
	struct maia_device *mdev = maia_from_dev(kobj_to_dev(kobj));

	if ((attr == &dev_attr_hbm_ecc_ce_count.attr ||
	     attr == &dev_attr_hbm_ecc_ue_count.attr) &&
	    !maia_hw_has(mdev, MAIA_HW_REVISION_ECC))
		return 0;
	return attr->mode;
}

const struct attribute_group maia_hbm_attr_group = {
	.attrs = maia_hbm_attrs,
	.is_visible = maia_hbm_attr_visible,
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
	maia_hbm_retire_pending(hbm);
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
	gpu_buddy_free_list(&hbm->mm, &hbm->retired, 0);
	xa_destroy(&hbm->bad);
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
	INIT_LIST_HEAD(&hbm->retired);
	xa_init(&hbm->bad);
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
