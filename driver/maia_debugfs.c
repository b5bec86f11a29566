// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: debugfs, in /sys/kernel/debug/accel/<PCI address>/.
 *
 * bos          every buffer object with its placement, owner and mappings,
 *              then an HBM object's blocks ("hbm@<offset>+<size>")
 * faults       the fault queue: on or off, faults taken from it, faults it
 *              could not keep (overflows: their contexts learn no address),
 *              notices the event thread missed
 * force_reset  any write resets the device and returns once it recovered
 * inject       error injection for recovery tests (MAIA_REG_DEBUG_INJECT):
 *              "fw_crash", "hang <queue>", "fault <queue>", or an HBM ECC
 *              error "ecc_ce <hbm offset>" / "ecc_ue <hbm offset>"
 *
 * Read-only files go through drm_debugfs_add_file(), which creates them when
 * the device registers and removes them with it. drm_debugfs_add_file() has
 * no write handler, so force_reset is a plain debugfs file in the device's
 * directory, removed with that directory.
 */

#include <drm/drm_debugfs.h>
#include <drm/drm_gem.h>
#include <drm/maia_accel.h>
#include <drm/drm_drv.h>
#include <linux/bitfield.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "maia_debugfs.h"
#include "maia_drv.h"
#include "maia_gem.h"
#include "maia_hbm.h"
#include "maia_hw.h"
#include "maia_reset.h"
#include "maia_vm.h"

static int maia_debugfs_bos_show(struct seq_file *m, void *unused)
{
	struct drm_debugfs_entry *entry = m->private;
	struct maia_device *mdev = to_maia_device(entry->dev);
	struct gpu_buddy_block *block;
	struct maia_vm_mapping *map;
	struct maia_bo *bo;
	u64 total[2] = {};

	seq_puts(m, "placement       size    pid refs mappings (asid:va+size) blocks (hbm@offset+size)\n");
	mutex_lock(&mdev->gem.lock);
	list_for_each_entry(bo, &mdev->gem.bos, dev_link) {
		struct drm_gem_object *obj = &bo->base.base;
		bool is_hbm = bo->placement == DRM_MAIA_BO_HBM;

		total[is_hbm] += obj->size;
		seq_printf(m, "%-9s %10zu %6d %4u", is_hbm ? "hbm" : "host",
			   obj->size, bo->owner_pid, kref_read(&obj->refcount));
		list_for_each_entry(map, &bo->mappings, bo_link)
			seq_printf(m, " %u:%#llx+%#llx%s", map->ctx->asid,
				   map->node.start, map->node.size,
				   map->flags & DRM_MAIA_VM_READONLY ? "(ro)" : "");
		/* Appended last, so the columns before keep their places. */
		if (is_hbm)
			list_for_each_entry(block, &bo->hbm_blocks, link)
				seq_printf(m, " hbm@%#llx+%#llx", maia_hbm_block_offset(block),
					   maia_hbm_block_size(mdev, block));
		seq_putc(m, '\n');
	}
	mutex_unlock(&mdev->gem.lock);
	seq_printf(m, "total: hbm %llu bytes, host %llu bytes\n", total[1], total[0]);
	return 0;
}

static ssize_t maia_debugfs_force_reset_write(struct file *file, const char __user *buf,
					      size_t size, loff_t *pos)
{
	struct maia_device *mdev = file->private_data;

	if (!size)
		return -EINVAL;
	maia_reset_force(mdev);
	return size;
}

static const struct file_operations maia_debugfs_force_reset_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = maia_debugfs_force_reset_write,
};

static ssize_t maia_debugfs_inject_write(struct file *file, const char __user *ubuf,
					 size_t size, loff_t *pos)
{
	struct maia_device *mdev = file->private_data;
	unsigned int queue = 0;
	char buf[48], *cmd;
	bool ecc = false;
	u64 addr = 0;
	u32 what;
	int idx;

	if (!size || size >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, size))
		return -EFAULT;
	buf[size] = '\0';
	cmd = strim(buf);
	if (!strcmp(cmd, "fw_crash"))
		what = MAIA_INJECT_FW_CRASH;
	else if (sscanf(cmd, "hang %u", &queue) == 1)
		what = MAIA_INJECT_HANG;
	else if (sscanf(cmd, "fault %u", &queue) == 1)
		what = MAIA_INJECT_MMU_FAULT;
	else if (!strncmp(cmd, "ecc_ce ", 7) && !kstrtou64(cmd + 7, 0, &addr))
		what = MAIA_INJECT_ECC_CE;
	else if (!strncmp(cmd, "ecc_ue ", 7) && !kstrtou64(cmd + 7, 0, &addr))
		what = MAIA_INJECT_ECC_UE;
	else
		return -EINVAL;
	ecc = what == MAIA_INJECT_ECC_CE || what == MAIA_INJECT_ECC_UE;
	if (queue >= mdev->hw.num_queues)
		return -EINVAL;
	if (ecc && (addr >= mdev->hw.hbm_size || !maia_hw_has(mdev, MAIA_HW_REVISION_ECC)))
		return -EINVAL;

	if (!drm_dev_enter(&mdev->drm, &idx))
		return -ENODEV;
	maia_warn(mdev, "injecting %s through debugfs\n", cmd);
	/* Under the reset lock: a reset would clear the address in between. */
	if (ecc && maia_reset_read_lock(mdev)) {
		drm_dev_exit(idx);
		return -EINTR;
	}
	if (ecc) {
		maia_wr(mdev, MAIA_REG_DEBUG_INJECT_ADDR_LO, lower_32_bits(addr));
		maia_wr(mdev, MAIA_REG_DEBUG_INJECT_ADDR_HI, upper_32_bits(addr));
	}
	maia_wr(mdev, MAIA_REG_DEBUG_INJECT,
		what | FIELD_PREP(MAIA_INJECT_QUEUE_MASK, queue));
	if (ecc)
		maia_reset_read_unlock(mdev);
	drm_dev_exit(idx);
	return size;
}

static const struct file_operations maia_debugfs_inject_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = maia_debugfs_inject_write,
};

static int maia_debugfs_faults_show(struct seq_file *m, void *unused)
{
	struct drm_debugfs_entry *entry = m->private;
	struct maia_device *mdev = to_maia_device(entry->dev);
	u64 queued, overflows, lost;

	maia_fault_counts(mdev, &queued, &overflows, &lost);
	seq_printf(m, "queue %s\nqueued %llu\noverflows %llu\nnotices_lost %llu\n",
		   mdev->faults.ring ? "on" : "off (hardware before 1.7)", queued, overflows, lost);
	return 0;
}

/* Before drm_dev_register(), which creates the files added here. */
void maia_debugfs_init(struct maia_device *mdev)
{
	drm_debugfs_add_file(&mdev->drm, "bos", maia_debugfs_bos_show, NULL);
	drm_debugfs_add_file(&mdev->drm, "faults", maia_debugfs_faults_show, NULL);
	debugfs_create_file("force_reset", 0200, mdev->drm.debugfs_root, mdev,
			    &maia_debugfs_force_reset_fops);
	debugfs_create_file("inject", 0200, mdev->drm.debugfs_root, mdev,
			    &maia_debugfs_inject_fops);
}
