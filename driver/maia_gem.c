// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: buffer objects.
 *
 * DRM_MAIA_BO_HBM objects live in device memory: their backing is a list
 * of buddy blocks, zeroed before the object is handed out, and the CPU maps
 * them write-combined through BAR2. The device reaches them through the
 * page tables of the contexts that map them, so the blocks need not be
 * contiguous. DRM_MAIA_BO_HOST objects are shmem objects in system memory;
 * the device reaches their pages by DMA once they are mapped on it.
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <drm/maia_accel.h>
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>

#include <maia/hw/mmu.h>

#include "maia_drv.h"
#include "maia_gem.h"
#include "maia_hbm.h"

static_assert(PAGE_SIZE == MAIA_PAGE_SIZE, "CPU and device pages differ");

/*
 * Host BOs are pinned while the device maps them. The total per device is
 * capped so that one user cannot pin all of RAM through it.
 */
static unsigned int maia_max_pinned_mb;
module_param_named(max_pinned_mb, maia_max_pinned_mb, uint, 0644);
MODULE_PARM_DESC(max_pinned_mb,
		 "Host memory a device may have pinned for its mappings, in MiB (default 0: half of RAM)");

static u64 maia_pinned_limit(void)
{
	unsigned int mb = READ_ONCE(maia_max_pinned_mb);

	return mb ? (u64)mb << 20 : (u64)totalram_pages() << (PAGE_SHIFT - 1);
}

static void maia_bo_init_common(struct maia_bo *bo, u32 placement)
{
	bo->placement = placement;
	bo->owner_pid = task_tgid_nr(current);
	INIT_LIST_HEAD(&bo->hbm_blocks);
	INIT_LIST_HEAD(&bo->dev_link);
	INIT_LIST_HEAD(&bo->mappings);
}

static void maia_bo_link(struct maia_device *mdev, struct maia_bo *bo)
{
	mutex_lock(&mdev->gem.lock);
	list_add_tail(&bo->dev_link, &mdev->gem.bos);
	mutex_unlock(&mdev->gem.lock);
}

/* A mapping holds a reference, so no mapping can be left at free time. */
static void maia_bo_unlink(struct maia_device *mdev, struct maia_bo *bo)
{
	mutex_lock(&mdev->gem.lock);
	drm_WARN_ON(&mdev->drm, !list_empty(&bo->mappings));
	list_del_init(&bo->dev_link);
	mutex_unlock(&mdev->gem.lock);
}

/* HBM objects */

static void maia_hbm_bo_free(struct drm_gem_object *obj)
{
	struct maia_device *mdev = to_maia_device(obj->dev);
	struct maia_bo *bo = to_maia_bo(obj);

	maia_bo_unlink(mdev, bo);
	maia_hbm_free(mdev, &bo->hbm_blocks);
	drm_gem_object_release(obj);
	kfree(bo);
}

/*
 * The page of the object a mapping starts at. Both mmap paths leave DRM's
 * fake offset in vm_pgoff: drm_gem_mmap() on the device fd (which only
 * maps from the object's start) and drm_gem_prime_mmap() for its dma-buf,
 * which adds it to the page offset the caller asked for. The dma-buf core
 * has checked that the range fits in the object.
 */
static pgoff_t maia_bo_vma_first_page(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	return vma->vm_pgoff - drm_vma_node_start(&obj->vma_node);
}

/*
 * Maps the whole range now: the pages are device memory that never moves
 * while the BO lives, and the VMA holds a reference on the BO.
 */
static int maia_hbm_bo_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	struct maia_device *mdev = to_maia_device(obj->dev);
	struct maia_bo *bo = to_maia_bo(obj);
	u64 skip = (u64)maia_bo_vma_first_page(obj, vma) << PAGE_SHIFT;
	unsigned long uaddr = vma->vm_start;
	struct gpu_buddy_block *block;
	int idx, ret = 0;

	/* Copy-on-write of device memory makes no sense. */
	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;

	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot = pgprot_writecombine(vm_get_page_prot(vma->vm_flags));

	list_for_each_entry(block, &bo->hbm_blocks, link) {
		u64 size = maia_hbm_block_size(mdev, block), len;

		if (skip >= size) {
			skip -= size;
			continue;
		}
		len = min_t(u64, size - skip, vma->vm_end - uaddr);
		ret = io_remap_pfn_range(vma, uaddr,
					 PHYS_PFN(mdev->hbm.bar_base +
						  maia_hbm_block_offset(block) + skip),
					 len, vma->vm_page_prot);
		skip = 0;
		if (ret)
			break;
		uaddr += len;
		if (uaddr >= vma->vm_end)
			break;
	}

	drm_dev_exit(idx);
	return ret;
}

static void maia_bo_print_info(struct drm_printer *p, unsigned int indent,
			       const struct drm_gem_object *obj)
{
	const struct maia_bo *bo = container_of(obj, struct maia_bo, base.base);

	drm_printf_indent(p, indent, "placement=%s\n",
			  bo->placement == DRM_MAIA_BO_HBM ? "hbm" : "host");
}

static const struct vm_operations_struct maia_hbm_bo_vm_ops = {
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static const struct drm_gem_object_funcs maia_hbm_bo_funcs = {
	.free = maia_hbm_bo_free,
	.print_info = maia_bo_print_info,
	.mmap = maia_hbm_bo_mmap,
	.vm_ops = &maia_hbm_bo_vm_ops,
};

static struct drm_gem_object *maia_hbm_bo_create(struct maia_device *mdev, u64 size)
{
	struct drm_gem_object *obj;
	struct maia_bo *bo;
	int idx, ret;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	maia_bo_init_common(bo, DRM_MAIA_BO_HBM);
	obj = &bo->base.base;
	obj->funcs = &maia_hbm_bo_funcs;
	drm_gem_private_object_init(&mdev->drm, obj, size);
	/* From here on, drm_gem_object_put() undoes everything. */

	ret = maia_hbm_alloc(mdev, size, false, &bo->hbm_blocks);
	if (ret)
		goto err_put;

	/* Never hand out what an earlier owner left in device memory. */
	if (!drm_dev_enter(&mdev->drm, &idx)) {
		ret = -ENODEV;
		goto err_put;
	}
	ret = maia_hbm_clear_blocks(mdev, &bo->hbm_blocks);
	drm_dev_exit(idx);
	if (ret)
		goto err_put;

	ret = drm_gem_create_mmap_offset(obj);
	if (ret)
		goto err_put;
	maia_bo_link(mdev, bo);
	return obj;

err_put:
	drm_gem_object_put(obj);
	return ERR_PTR(ret);
}

/* Host objects */

static void maia_host_bo_free(struct drm_gem_object *obj)
{
	struct maia_bo *bo = to_maia_bo(obj);

	maia_bo_unlink(to_maia_device(obj->dev), bo);
	drm_gem_shmem_free(&bo->base);
}

/*
 * drm_gem_shmem_fault() picks the page from the fault's distance to the
 * start of the VMA, so a dma-buf mapped at a nonzero page offset would show
 * the object from page 0. This is that handler with the page taken from
 * the fault's page offset.
 */
static vm_fault_t maia_host_bo_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct drm_gem_shmem_object *shmem = to_drm_gem_shmem_obj(obj);
	pgoff_t page = vmf->pgoff - drm_vma_node_start(&obj->vma_node);
	vm_fault_t ret;

	dma_resv_lock(obj->resv, NULL);
	if (page >= obj->size >> PAGE_SHIFT || drm_WARN_ON_ONCE(obj->dev, !shmem->pages) ||
	    shmem->madv < 0)
		ret = VM_FAULT_SIGBUS;
	else
		ret = vmf_insert_pfn(vma, vmf->address, page_to_pfn(shmem->pages[page]));
	dma_resv_unlock(obj->resv);
	return ret;
}

/* Page references are counted as drm_gem_shmem_vm_ops counts them. */
static void maia_host_bo_vm_open(struct vm_area_struct *vma)
{
	drm_gem_shmem_vm_ops.open(vma);
}

static void maia_host_bo_vm_close(struct vm_area_struct *vma)
{
	drm_gem_shmem_vm_ops.close(vma);
}

static const struct vm_operations_struct maia_host_bo_vm_ops = {
	.fault = maia_host_bo_fault,
	.open = maia_host_bo_vm_open,
	.close = maia_host_bo_vm_close,
};

static const struct drm_gem_object_funcs maia_host_bo_funcs = {
	.free = maia_host_bo_free,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = drm_gem_shmem_object_mmap,
	.vm_ops = &maia_host_bo_vm_ops,
};

/* drm_driver.gem_create_object: drm_gem_shmem_create() allocates through it. */
struct drm_gem_object *maia_gem_create_object(struct drm_device *drm, size_t size)
{
	struct maia_bo *bo;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	maia_bo_init_common(bo, DRM_MAIA_BO_HOST);
	bo->base.base.funcs = &maia_host_bo_funcs;
	return &bo->base.base;
}

static struct drm_gem_object *maia_host_bo_create(struct maia_device *mdev, u64 size)
{
	struct drm_gem_shmem_object *shmem;
	int ret;

	shmem = drm_gem_shmem_create(&mdev->drm, size);
	if (IS_ERR(shmem))
		return ERR_CAST(shmem);
	ret = drm_gem_create_mmap_offset(&shmem->base);
	if (ret) {
		drm_gem_object_put(&shmem->base);
		return ERR_PTR(ret);
	}
	maia_bo_link(mdev, to_maia_bo(&shmem->base));
	return &shmem->base;
}

/* Device access */

int maia_bo_device_get(struct maia_bo *bo)
{
	struct drm_gem_shmem_object *shmem = &bo->base;
	struct drm_gem_object *obj = &shmem->base;
	atomic64_t *pinned = &to_maia_device(obj->dev)->gem.pinned_bytes;
	struct sg_table *sgt;
	int ret;

	if (bo->placement != DRM_MAIA_BO_HOST)
		return 0;

	ret = dma_resv_lock_interruptible(obj->resv, NULL);
	if (ret)
		return ret;
	if (bo->device_maps) {
		bo->device_maps++;
		goto out;
	}

	if (atomic64_add_return(obj->size, pinned) > maia_pinned_limit()) {
		atomic64_sub(obj->size, pinned);
		drm_dbg(obj->dev, "pinning %zu more bytes would pass max_pinned_mb\n", obj->size);
		ret = -ENOMEM;
		goto out;
	}
	ret = drm_gem_shmem_pin_locked(shmem);
	if (ret)
		goto err_unaccount;
	sgt = drm_gem_shmem_get_sg_table(shmem);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto err_unpin;
	}
	ret = dma_map_sgtable(obj->dev->dev, sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto err_free;
	WRITE_ONCE(bo->device_sgt, sgt);
	bo->device_maps = 1;
	goto out;

err_free:
	sg_free_table(sgt);
	kfree(sgt);
err_unpin:
	drm_gem_shmem_unpin_locked(shmem);
err_unaccount:
	atomic64_sub(obj->size, pinned);
out:
	dma_resv_unlock(obj->resv);
	return ret;
}

void maia_bo_device_put(struct maia_bo *bo)
{
	struct drm_gem_shmem_object *shmem = &bo->base;
	struct drm_gem_object *obj = &shmem->base;
	struct sg_table *sgt;

	if (bo->placement != DRM_MAIA_BO_HOST)
		return;

	dma_resv_lock(obj->resv, NULL);
	if (!drm_WARN_ON(obj->dev, !bo->device_maps) && !--bo->device_maps) {
		sgt = bo->device_sgt;
		WRITE_ONCE(bo->device_sgt, NULL);
		dma_unmap_sgtable(obj->dev->dev, sgt, DMA_BIDIRECTIONAL, 0);
		sg_free_table(sgt);
		kfree(sgt);
		drm_gem_shmem_unpin_locked(shmem);
		atomic64_sub(obj->size, &to_maia_device(obj->dev)->gem.pinned_bytes);
	}
	dma_resv_unlock(obj->resv);
}

static int maia_bo_chunk(u64 *skip, u64 *left, u64 *bo_offset, u64 addr, u64 len,
			 struct maia_bo_visitor *v)
{
	u64 n;
	int ret;

	if (*skip >= len) {
		*skip -= len;
		*bo_offset += len;
		return 0;
	}
	addr += *skip;
	len -= *skip;
	*bo_offset += *skip;
	*skip = 0;
	n = min(len, *left);
	ret = v->chunk(v, *bo_offset, addr, n);
	if (ret)
		return ret;
	*bo_offset += n;
	*left -= n;
	return 0;
}

int maia_bo_visit_chunks(struct maia_bo *bo, u64 offset, u64 size,
			 struct maia_bo_visitor *v)
{
	struct maia_device *mdev = to_maia_device(bo->base.base.dev);
	u64 skip = offset, left = size, bo_offset = 0;
	int ret = 0;

	if (offset > bo->base.base.size || size > bo->base.base.size - offset)
		return -EINVAL;

	if (bo->placement == DRM_MAIA_BO_HBM) {
		struct gpu_buddy_block *block;

		list_for_each_entry(block, &bo->hbm_blocks, link) {
			if (!left)
				break;
			ret = maia_bo_chunk(&skip, &left, &bo_offset,
					    maia_hbm_block_offset(block),
					    maia_hbm_block_size(mdev, block), v);
			if (ret)
				return ret;
		}
	} else {
		/* Stable while the caller holds a device reference. */
		struct sg_table *sgt = READ_ONCE(bo->device_sgt);
		struct scatterlist *sg;
		unsigned int i;

		if (drm_WARN_ON(&mdev->drm, !sgt))
			return -EINVAL;
		for_each_sgtable_dma_sg(sgt, sg, i) {
			dma_addr_t addr = sg_dma_address(sg);
			u64 len = sg_dma_len(sg);

			if (!left)
				break;
			if (!IS_ALIGNED(addr | len, MAIA_PAGE_SIZE))
				return -EINVAL;
			ret = maia_bo_chunk(&skip, &left, &bo_offset, addr, len, v);
			if (ret)
				return ret;
		}
	}

	return left ? -EINVAL : 0;
}

/*
 * The BAR goes with the device: CPU mappings of HBM must not outlive it.
 * Zapped mappings fault (SIGBUS) from now on; new ones are refused by
 * drm_dev_enter() in maia_hbm_bo_mmap().
 */
void maia_gem_unplug(struct maia_device *mdev)
{
	struct maia_bo *bo;

	mutex_lock(&mdev->gem.lock);
	list_for_each_entry(bo, &mdev->gem.bos, dev_link)
		if (bo->placement == DRM_MAIA_BO_HBM)
			drm_vma_node_unmap(&bo->base.base.vma_node,
					   mdev->drm.anon_inode->i_mapping);
	mutex_unlock(&mdev->gem.lock);
}

/* fdinfo: drm-total-{hbm,host}, drm-shared-*, drm-resident-* */
void maia_gem_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct drm_memory_stats hbm = {}, host = {};
	struct drm_gem_object *obj;
	int id;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, obj, id) {
		struct maia_bo *bo = to_maia_bo(obj);
		bool is_hbm = bo->placement == DRM_MAIA_BO_HBM;
		struct drm_memory_stats *s = is_hbm ? &hbm : &host;

		if (obj->handle_count > 1)
			s->shared += obj->size;
		else
			s->private += obj->size;
		/* HBM backing exists from creation, shmem pages on first use. */
		if (is_hbm || READ_ONCE(bo->base.pages))
			s->resident += obj->size;
	}
	spin_unlock(&file->table_lock);

	drm_print_memory_stats(p, &hbm, DRM_GEM_OBJECT_RESIDENT, "hbm");
	drm_print_memory_stats(p, &host, DRM_GEM_OBJECT_RESIDENT, "host");
}

/* ioctls */

int maia_bo_create_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct drm_maia_bo_create *args = data;
	struct drm_gem_object *obj;
	u64 size;
	u32 handle;
	int ret;

	if (!args->size || args->size > U64_MAX - (MAIA_PAGE_SIZE - 1))
		return -EINVAL;
	size = round_up(args->size, MAIA_PAGE_SIZE);

	switch (args->flags) {
	case DRM_MAIA_BO_HBM:
		if (size > mdev->hbm.usable)
			return -EINVAL;
		obj = maia_hbm_bo_create(mdev, size);
		break;
	case DRM_MAIA_BO_HOST:
		if (size > (u64)totalram_pages() << PAGE_SHIFT)
			return -EINVAL;
		obj = maia_host_bo_create(mdev, size);
		break;
	default:
		return -EINVAL;
	}
	if (IS_ERR(obj))
		return PTR_ERR(obj);

	ret = drm_gem_handle_create(file, obj, &handle);
	drm_gem_object_put(obj);
	if (ret)
		return ret;

	args->handle = handle;
	maia_dbg(mdev, "handle %u: %llu bytes %s\n", handle, size,
		 args->flags == DRM_MAIA_BO_HBM ? "hbm" : "host");
	return 0;
}

int maia_bo_info_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_maia_bo_info *args = data;
	struct drm_gem_object *obj;

	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;

	args->flags = to_maia_bo(obj)->placement;
	args->size = obj->size;
	args->mmap_offset = drm_vma_node_offset_addr(&obj->vma_node);
	drm_gem_object_put(obj);
	return 0;
}

int maia_gem_init(struct maia_device *mdev)
{
	INIT_LIST_HEAD(&mdev->gem.bos);
	atomic64_set(&mdev->gem.pinned_bytes, 0);
	return drmm_mutex_init(&mdev->drm, &mdev->gem.lock);
}
