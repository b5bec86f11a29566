/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: buffer objects in HBM or host memory.
 */
#ifndef __MAIA_GEM_H__
#define __MAIA_GEM_H__

#include <drm/drm_gem_shmem_helper.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>

struct drm_device;
struct drm_file;
struct drm_printer;
struct maia_device;

/* Device-wide list of buffer objects, for debugfs. */
struct maia_gem {
	/* Protects @bos and the @mappings list of every BO. */
	struct mutex lock;
	struct list_head bos;
	/* Bytes of host BOs pinned for the device (capped by max_pinned_mb). */
	atomic64_t pinned_bytes;
};

/*
 * A buffer object. Host BOs are shmem objects: pages are allocated on first
 * use, and pinned and DMA-mapped while the BO is mapped on the device (by
 * any context). HBM BOs own a list of buddy blocks (their backing, in BO
 * offset order) and use only the drm_gem_object part of @base.
 */
struct maia_bo {
	struct drm_gem_shmem_object base;	/* first: shmem frees it with kfree() */
	u32 placement;				/* DRM_MAIA_BO_HBM or DRM_MAIA_BO_HOST */
	pid_t owner_pid;			/* creator's thread group, for debugfs */
	struct list_head hbm_blocks;
	struct list_head dev_link;		/* in maia_gem.bos */
	struct list_head mappings;		/* maia_vm_mapping.bo_link */
	/* Host BOs, under the reservation lock: device mappings, and their pages. */
	unsigned int device_maps;
	struct sg_table *device_sgt;
};

static inline struct maia_bo *to_maia_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct maia_bo, base.base);
}

int maia_gem_init(struct maia_device *mdev);
struct drm_gem_object *maia_gem_create_object(struct drm_device *drm, size_t size);

/*
 * Visits the physically contiguous pieces of a BO's backing: @addr is an
 * HBM offset (HBM BOs) or a DMA address (host BOs). Embed it and use
 * container_of() in @chunk.
 */
struct maia_bo_visitor {
	int (*chunk)(struct maia_bo_visitor *v, u64 bo_offset, u64 addr, u64 len);
};

/*
 * A device mapping of @bo starts with maia_bo_device_get() (host BOs: pins
 * and DMA-maps the pages for the first one) and ends with
 * maia_bo_device_put(), once the device can no longer reach the pages
 * (PTEs cleared and TLB flushed).
 */
int maia_bo_device_get(struct maia_bo *bo);
void maia_bo_device_put(struct maia_bo *bo);

/*
 * Calls @v->chunk for each piece of the backing that overlaps [@offset,
 * @offset + @size), in BO order. Host BOs must be held by
 * maia_bo_device_get(). Stops at the first error @v->chunk returns.
 */
int maia_bo_visit_chunks(struct maia_bo *bo, u64 offset, u64 size,
			 struct maia_bo_visitor *v);

/* After drm_dev_unplug(): takes HBM out of every CPU mapping. */
void maia_gem_unplug(struct maia_device *mdev);
void maia_gem_show_fdinfo(struct drm_printer *p, struct drm_file *file);

int maia_bo_create_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int maia_bo_info_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* __MAIA_GEM_H__ */
