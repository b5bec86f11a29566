// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: PCI probe and remove, the DRM accel device and
 * its ioctl table.
 */

#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/maia_accel.h>
#include <linux/compat.h>
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/pci.h>

#include "maia_debugfs.h"
#include "maia_fabric.h"
#include "maia_fw.h"
#include "maia_gem.h"
#include "maia_hbm.h"
#include "maia_heartbeat.h"
#include "maia_mbox.h"
#include "maia_vm.h"
#include "maia_hw.h"
#include "maia_irq.h"
#include "maia_job.h"
#include "maia_queue.h"
#include "maia_reset.h"
#include "maia_sched.h"
#include "maia_sysfs.h"
#include "maia_telemetry.h"
#include "maia_uapi.h"
#include "maia_userq.h"

static int maia_get_param_ioctl(struct drm_device *drm, void *data,
				struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct pci_dev *pdev = to_pci_dev(drm->dev);
	struct drm_maia_get_param *args = data;
	u32 dtype;
	u64 value;
	int idx;

	if (args->param == DRM_MAIA_PARAM_PEAK_GFLOPS) {
		/* The only per-instance parameter: the index is a data type. */
		if (!maia_uapi_dtype_to_hw(args->index, &dtype) || dtype >= MAIA_DTYPE_COUNT)
			return -EINVAL;
		value = mdev->model.peak_gflops[dtype];
		goto out;
	}
	if (args->index)
		return -EINVAL;

	switch (args->param) {
	case DRM_MAIA_PARAM_DEVICE_ID:
		value = (u32)pdev->vendor << 16 | pdev->device;
		break;
	case DRM_MAIA_PARAM_REVISION:
		value = mdev->hw.revision;
		break;
	case DRM_MAIA_PARAM_FW_VERSION:
		value = mdev->fw.version;
		break;
	case DRM_MAIA_PARAM_FW_ABI:
		value = mdev->fw.abi;
		break;
	case DRM_MAIA_PARAM_HBM_SIZE:
		value = mdev->hw.hbm_size;
		break;
	case DRM_MAIA_PARAM_NUM_CLUSTERS:
		value = mdev->hw.clusters;
		break;
	case DRM_MAIA_PARAM_TILES_PER_CLUSTER:
		value = mdev->hw.tiles_per_cluster;
		break;
	case DRM_MAIA_PARAM_DTYPES:
		value = maia_uapi_dtypes(mdev->hw.dtypes);
		break;
	case DRM_MAIA_PARAM_NUM_QUEUES:
		value = mdev->hw.num_queues;
		break;
	case DRM_MAIA_PARAM_CAPABILITIES:
		value = maia_uapi_caps(mdev->hw.caps);
		break;
	case DRM_MAIA_PARAM_SRAM_KIB:
		value = mdev->hw.sram_kib;
		break;
	case DRM_MAIA_PARAM_USER_QUEUES:
		value = maia_userq_count(mdev);
		break;
	case DRM_MAIA_PARAM_PCI_BDF:
		value = (u64)pci_domain_nr(pdev->bus) << 16 |
			pdev->bus->number << 8 | pdev->devfn;
		break;
	case DRM_MAIA_PARAM_FABRIC_PORTS:
		value = maia_fabric_ports(mdev);
		break;
	case DRM_MAIA_PARAM_FABRIC_SERIAL:
		value = maia_fabric_serial(mdev);
		break;
	case DRM_MAIA_PARAM_MODEL:
		value = maia_uapi_model(mdev->model.id);
		break;
	case DRM_MAIA_PARAM_HBM_MBPS:
		value = mdev->model.hbm_mbps;
		break;
	case DRM_MAIA_PARAM_HOST_MBPS:
		value = mdev->model.host_mbps;
		break;
	case DRM_MAIA_PARAM_LINK_MBPS:
		value = mdev->model.link_mbps;
		break;
	case DRM_MAIA_PARAM_LINK_LAT_NS:
		value = mdev->model.link_lat_ns;
		break;
	case DRM_MAIA_PARAM_CMD_NS:
		value = mdev->model.cmd_ns;
		break;
	case DRM_MAIA_PARAM_JOB_NS:
		value = mdev->model.job_ns;
		break;
	case DRM_MAIA_PARAM_VECTOR_GFLOPS:
		value = mdev->model.vector_gflops;
		break;
	case DRM_MAIA_PARAM_CHIP_SRAM_KIB:
		value = mdev->model.sram_kib;
		break;
	case DRM_MAIA_PARAM_DESIGN_POWER_MW:
		value = mdev->model.design_power_mw;
		break;
	default:
		return -EINVAL;
	}

out:
	/* The values are cached, but a device that is gone answers nothing. */
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	args->value = value;
	drm_dev_exit(idx);
	return 0;
}

static const struct drm_ioctl_desc maia_drm_ioctls[] = {
	DRM_IOCTL_DEF_DRV(MAIA_GET_PARAM, maia_get_param_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_PING, maia_ping_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_BO_CREATE, maia_bo_create_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_BO_INFO, maia_bo_info_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_VM_BIND, maia_vm_bind_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_SUBMIT, maia_submit_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_WAIT, maia_wait_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_CONTEXT_STATUS, maia_context_status_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_FABRIC_PORT, maia_fabric_port_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_FABRIC_WINDOW, maia_fabric_window_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_USERQ_CREATE, maia_userq_create_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_USERQ_DESTROY, maia_userq_destroy_ioctl, 0),
	DRM_IOCTL_DEF_DRV(MAIA_USERQ_WAIT, maia_userq_wait_ioctl, 0),
};

/*
 * The first size of each ioctl's struct (driver 1.0, or the minor that added
 * the ioctl): a struct only grows at its end, so this is the shortest one
 * userspace can have been built with.
 */
static const u16 maia_ioctl_first_size[] = {
	[DRM_MAIA_GET_PARAM] = offsetofend(struct drm_maia_get_param, value),
	[DRM_MAIA_PING] = offsetofend(struct drm_maia_ping, device_ns),
	[DRM_MAIA_BO_CREATE] = offsetofend(struct drm_maia_bo_create, handle),
	[DRM_MAIA_BO_INFO] = offsetofend(struct drm_maia_bo_info, mmap_offset),
	[DRM_MAIA_VM_BIND] = offsetofend(struct drm_maia_vm_bind, pad),
	[DRM_MAIA_SUBMIT] = offsetofend(struct drm_maia_submit, seqno),
	[DRM_MAIA_WAIT] = offsetofend(struct drm_maia_wait, pad),
	[DRM_MAIA_CONTEXT_STATUS] = offsetofend(struct drm_maia_context_status, device_resets),
	[DRM_MAIA_FABRIC_PORT] = offsetofend(struct drm_maia_fabric_port, pad),
	[DRM_MAIA_FABRIC_WINDOW] = offsetofend(struct drm_maia_fabric_window, pad),
	/* Driver 1.4 */
	[DRM_MAIA_USERQ_CREATE] = offsetofend(struct drm_maia_userq_create, doorbell_offset),
	[DRM_MAIA_USERQ_DESTROY] = offsetofend(struct drm_maia_userq_destroy, pad),
	[DRM_MAIA_USERQ_WAIT] = offsetofend(struct drm_maia_userq_wait, state),
};

static_assert(ARRAY_SIZE(maia_ioctl_first_size) == ARRAY_SIZE(maia_drm_ioctls));

/*
 * The growth rule of the uAPI (Documentation/uapi.rst), checked before
 * drm_ioctl(): a driver ioctl must have the table's type and direction and a
 * size from its first size up to the current one. drm_ioctl() then
 * zero-extends a shorter struct and copies only the caller's bytes back. A
 * longer struct is refused because its tail would be ignored unchecked, and
 * unknown driver numbers fail the same way.
 */
static bool maia_ioctl_cmd_valid(unsigned int cmd)
{
	unsigned int nr = _IOC_NR(cmd);
	unsigned int index, size, table_cmd;

	if (nr < DRM_COMMAND_BASE || nr >= DRM_COMMAND_END)
		return true;	/* DRM core ioctl: the core checks it */

	index = nr - DRM_COMMAND_BASE;
	if (index >= ARRAY_SIZE(maia_drm_ioctls))
		return false;
	index = array_index_nospec(index, ARRAY_SIZE(maia_drm_ioctls));
	table_cmd = maia_drm_ioctls[index].cmd;
	size = _IOC_SIZE(cmd);
	return _IOC_TYPE(cmd) == _IOC_TYPE(table_cmd) &&
	       _IOC_DIR(cmd) == _IOC_DIR(table_cmd) &&
	       size >= maia_ioctl_first_size[index] && size <= _IOC_SIZE(table_cmd);
}

/*
 * DRM core ioctls that use the file's master. An accel file never has one
 * (the core sets masters up on primary nodes only), yet the core lets these
 * two through on accel nodes and dereferences the NULL master while holding
 * dev->master_mutex: an oops, and every later caller of the mutex hangs. A
 * render node refuses them with -EACCES; so does this driver. drm_ioctl()
 * picks the handler by number alone, so the number alone is checked.
 */
static bool maia_ioctl_needs_master(unsigned int cmd)
{
	unsigned int nr = _IOC_NR(cmd);

	return nr == _IOC_NR(DRM_IOCTL_GET_UNIQUE) || nr == _IOC_NR(DRM_IOCTL_GET_MAGIC);
}

static long maia_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	if (maia_ioctl_needs_master(cmd))
		return -EACCES;
	if (!maia_ioctl_cmd_valid(cmd))
		return -EINVAL;
	return drm_ioctl(filp, cmd, arg);
}

#ifdef CONFIG_COMPAT
/* Every maia uAPI struct has the same layout for 32-bit callers. */
static long maia_compat_ioctl(struct file *filp, unsigned int cmd,
			      unsigned long arg)
{
	if (maia_ioctl_needs_master(cmd))
		return -EACCES;
	if (!maia_ioctl_cmd_valid(cmd))
		return -EINVAL;
	return drm_compat_ioctl(filp, cmd, arg);
}
#else
#define maia_compat_ioctl NULL
#endif

/* GEM objects, or below their offsets the pages of a user queue. */
static int maia_mmap(struct file *filp, struct vm_area_struct *vma)
{
	if (maia_userq_mmap_offset(vma->vm_pgoff))
		return maia_userq_mmap(filp, vma);
	return drm_gem_mmap(filp, vma);
}

/* DEFINE_DRM_ACCEL_FOPS(), with the ioctl entry points checked first. */
static const struct file_operations maia_fops = {
	.owner		= THIS_MODULE,
	.open		= accel_open,
	.release	= drm_release,
	.unlocked_ioctl	= maia_ioctl,
	.compat_ioctl	= maia_compat_ioctl,
	.poll		= drm_poll,
	.read		= drm_read,
	.llseek		= noop_llseek,
	.mmap		= maia_mmap,
	.show_fdinfo	= drm_show_fdinfo,
	.fop_flags	= FOP_UNSIGNED_OFFSET,
};

/*
 * A file's context: its device address space (maia_vm.c), then its job
 * state (maia_job.c). Close undoes them in the opposite order: no job of the
 * file may run once its page tables are gone.
 */
/* A file's state (struct maia_file): its address space, then its submission state. */
static int maia_open(struct drm_device *drm, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct maia_file *mf;
	int ret;

	mf = kzalloc(sizeof(*mf), GFP_KERNEL);
	if (!mf)
		return -ENOMEM;
	mf->mdev = mdev;
	INIT_LIST_HEAD(&mf->fabric_windows);
	file->driver_priv = mf;

	ret = maia_vm_open(mdev, file);
	if (ret)
		goto err_free;
	ret = maia_job_file_open(mdev, file);
	if (ret)
		goto err_vm;
	return 0;

err_vm:
	maia_vm_close(mdev, file);
err_free:
	file->driver_priv = NULL;
	kfree(mf);
	return ret;
}

/*
 * The opposite order: the file's user queues are disabled before its jobs
 * end, and its jobs before its address space goes.
 */
static void maia_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct maia_file *mf = to_maia_file(file);

	maia_userq_file_close(mdev, file);
	maia_job_file_close(mdev, file);
	maia_vm_close(mdev, file);
	file->driver_priv = NULL;
	kfree(mf);
}

/* /proc/<pid>/fdinfo/<fd>: drm-usage-stats of this file. */
static void maia_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	maia_gem_show_fdinfo(p, file);
	maia_job_show_fdinfo(p, file);
}

static const struct drm_driver maia_drm_driver = {
	.driver_features = DRIVER_GEM | DRIVER_COMPUTE_ACCEL | DRIVER_SYNCOBJ |
			   DRIVER_SYNCOBJ_TIMELINE,
	.ioctls = maia_drm_ioctls,
	.num_ioctls = ARRAY_SIZE(maia_drm_ioctls),
	.fops = &maia_fops,
	.name = MAIA_DRIVER_NAME,
	.desc = MAIA_DRIVER_DESC,
	.major = MAIA_DRIVER_MAJOR,
	.minor = MAIA_DRIVER_MINOR,
	.open = maia_open,
	.postclose = maia_postclose,
	.gem_create_object = maia_gem_create_object,
	.show_fdinfo = maia_show_fdinfo,
};

/*
 * Managed action, runs on probe failure and after remove: stops the device
 * touching host memory and raising interrupts before the rings and vectors
 * it used are released (they were allocated earlier, so are freed later).
 */
static void maia_device_quiesce(void *arg)
{
	struct maia_device *mdev = arg;

	maia_irq_disable(mdev);
	maia_queue_disable(&mdev->kq);
	if (maia_hw_reset(mdev))
		maia_warn(mdev, "device did not come out of reset\n");
	maia_irq_sync(mdev);
}

int maia_device_start(struct maia_device *mdev)
{
	int ret;

	maia_irq_enable(mdev);
	ret = maia_fw_boot(mdev);
	if (ret)
		return ret;
	maia_fault_queue_start(mdev);
	return maia_queue_enable(&mdev->kq);
}

static int maia_pci_init(struct maia_device *mdev)
{
	struct pci_dev *pdev = to_pci_dev(mdev->drm.dev);
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret) {
		maia_err(mdev, "cannot enable the PCI device: %pe\n", ERR_PTR(ret));
		return ret;
	}

	if (pci_resource_len(pdev, MAIA_BAR_REGS) < MAIA_BAR0_SIZE) {
		maia_err(mdev, "BAR%d is %llu bytes, expected at least %#x\n",
			 MAIA_BAR_REGS,
			 (u64)pci_resource_len(pdev, MAIA_BAR_REGS),
			 MAIA_BAR0_SIZE);
		return -ENODEV;
	}
	mdev->regs = pcim_iomap_region(pdev, MAIA_BAR_REGS, MAIA_DRIVER_NAME);
	if (IS_ERR(mdev->regs)) {
		ret = PTR_ERR(mdev->regs);
		maia_err(mdev, "cannot map BAR%d: %pe\n", MAIA_BAR_REGS, mdev->regs);
		return ret;
	}

	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret) {
		maia_err(mdev, "no 64-bit DMA: %pe\n", ERR_PTR(ret));
		return ret;
	}
	pci_set_master(pdev);
	return 0;
}

static int maia_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct maia_device *mdev;
	int ret;

	mdev = devm_drm_dev_alloc(&pdev->dev, &maia_drm_driver,
				  struct maia_device, drm);
	if (IS_ERR(mdev))
		return PTR_ERR(mdev);
	pci_set_drvdata(pdev, mdev);
	init_completion(&mdev->fw.boot_done);
	mdev->kq.mdev = mdev;
	mdev->kq.index = MAIA_KQ_INDEX;

	ret = maia_pci_init(mdev);
	if (ret)
		return ret;

	ret = maia_hw_identify(mdev);
	if (ret)
		return ret;

	/* Start from WAIT_FW even if an earlier driver left firmware running. */
	maia_wr(mdev, MAIA_REG_INT_MASK, MAIA_INT_ALL);
	ret = maia_hw_reset(mdev);
	if (ret) {
		maia_err(mdev, "device did not come out of reset\n");
		return ret;
	}

	ret = maia_fault_init(mdev);
	if (ret)
		return ret;

	ret = maia_irq_init(mdev);
	if (ret)
		return ret;

	ret = maia_queue_init(mdev, &mdev->kq, MAIA_KQ_INDEX, MAIA_KQ_ENTRIES);
	if (ret)
		return ret;
	/*
	 * PING and the HBM clear must not wait behind user work: the kernel
	 * queue takes turns with the HIGH user queue, job by job.
	 */
	mdev->kq.prio = MAIA_QUEUE_PRIO_HIGH;

	ret = devm_add_action_or_reset(&pdev->dev, maia_device_quiesce, mdev);
	if (ret)
		return ret;

	ret = maia_device_start(mdev);
	if (ret)
		return ret;

	ret = maia_mbox_init(mdev);
	if (ret)
		return ret;
	ret = maia_hbm_init(mdev);
	if (ret)
		return ret;
	ret = maia_gem_init(mdev);
	if (ret)
		return ret;
	ret = maia_vm_init(mdev);
	if (ret)
		return ret;
	/* Recovery first: user queues and the scheduler use its lock and workqueue. */
	ret = maia_reset_init(mdev);
	if (ret)
		return ret;
	/* User queues before the scheduler: they keep the last hardware queues. */
	ret = maia_userq_init(mdev);
	if (ret)
		return ret;
	ret = maia_sched_init(mdev);
	if (ret)
		return ret;
	ret = maia_telemetry_init(mdev);
	if (ret)
		return ret;
	ret = maia_heartbeat_init(mdev);
	if (ret)
		return ret;
	ret = maia_fabric_init(mdev);
	if (ret)
		return ret;
	maia_debugfs_init(mdev);

	ret = drm_dev_register(&mdev->drm, 0);
	if (ret) {
		maia_err(mdev, "cannot register the accel device: %pe\n", ERR_PTR(ret));
		return ret;
	}

	maia_info(mdev, "Maia rev %u.%u%s%s: %ux%u tiles, %llu MiB HBM, %u queues, accel%d\n",
		  mdev->hw.revision >> 8 & 0xff, mdev->hw.revision & 0xff,
		  mdev->model.id ? ", " : "", maia_model_name(mdev),
		  mdev->hw.clusters, mdev->hw.tiles_per_cluster,
		  mdev->hw.hbm_size >> 20, mdev->hw.num_queues,
		  mdev->drm.accel->index);
	return 0;
}

/* Users still holding the device see -ENODEV; managed actions do the rest. */
static void maia_remove(struct pci_dev *pdev)
{
	struct maia_device *mdev = pci_get_drvdata(pdev);

	drm_dev_unplug(&mdev->drm);
	maia_userq_unplug(mdev);
	maia_gem_unplug(mdev);
}

static const struct pci_device_id maia_pci_ids[] = {
	{ PCI_DEVICE(MAIA_PCI_VENDOR_ID, MAIA_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, maia_pci_ids);

static struct pci_driver maia_pci_driver = {
	.name = MAIA_DRIVER_NAME,
	.id_table = maia_pci_ids,
	.probe = maia_probe,
	.remove = maia_remove,
	.dev_groups = maia_sysfs_groups,
};
module_pci_driver(maia_pci_driver);

MODULE_DESCRIPTION("Maia accelerator DRM accel driver");
MODULE_LICENSE("GPL");
