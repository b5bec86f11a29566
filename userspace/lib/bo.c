// SPDX-License-Identifier: MIT
/*
 * Buffer objects: create, map into the device address space, CPU-map,
 * dma-buf export/import.
 *
 * libmaia picks device VAs with a bump allocator per open device: VAs are
 * never reused, which the 47-bit user range makes harmless, and a stale VA
 * held by a buggy program faults instead of aliasing a new buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xf86drm.h>

#include "drm/maia_accel.h"
#include "internal.h"

#define PAGE_4K		4096ull
#define PAGE_2M		(2ull << 20)

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Reserve a VA range; large buffers get 2 MiB alignment for huge pages. */
static int va_alloc(struct maia_device *dev, uint64_t size, uint64_t *va)
{
	uint64_t align = size >= PAGE_2M ? PAGE_2M : PAGE_4K;
	uint64_t start;

	if (!dev->next_va)
		dev->next_va = DRM_MAIA_VA_START;
	start = align_up(dev->next_va, align);
	if (start + size < start || start + size > DRM_MAIA_VA_END)
		return -ENOSPC;
	dev->next_va = start + size;
	*va = start;
	return 0;
}

static int vm_bind(struct maia_bo *bo, uint32_t op)
{
	struct drm_maia_vm_bind b = {
		.op = op,
		.handle = op == DRM_MAIA_VM_MAP ? bo->handle : 0,
		.va = bo->va,
		.size = bo->size,
	};

	return maia_ioctl(bo->dev, DRM_IOCTL_MAIA_VM_BIND, &b);
}

static void gem_close(struct maia_device *dev, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	maia_ioctl(dev, DRM_IOCTL_GEM_CLOSE, &c);
}

/* Does a live maia_bo of dev other than skip use this GEM handle? */
static bool handle_shared(struct maia_device *dev, uint32_t handle, const struct maia_bo *skip)
{
	const struct maia_bo *b;

	for (b = dev->bos; b; b = b->next)
		if (b != skip && b->handle == handle)
			return true;
	return false;
}

/* Wrap an existing handle: query it and map it on the device. */
static int bo_wrap(struct maia_device *dev, uint32_t handle, struct maia_bo **out)
{
	struct drm_maia_bo_info info = { .handle = handle };
	struct maia_bo *bo;
	int err;

	err = maia_ioctl(dev, DRM_IOCTL_MAIA_BO_INFO, &info);
	if (err)
		return err;
	bo = calloc(1, sizeof(*bo));
	if (!bo)
		return -ENOMEM;
	bo->dev = dev;
	bo->handle = handle;
	bo->placement = info.flags;
	bo->size = info.size;
	err = va_alloc(dev, bo->size, &bo->va);
	if (!err)
		err = vm_bind(bo, DRM_MAIA_VM_MAP);
	if (err) {
		free(bo);
		return err;
	}
	bo->next = dev->bos;
	dev->bos = bo;
	*out = bo;
	return 0;
}

MAIA_EXPORT int maia_bo_create(struct maia_device *dev, uint64_t size,
			       enum maia_placement placement, struct maia_bo **out)
{
	struct drm_maia_bo_create c = { .size = size };
	int err;

	maia_error_clear();
	if (!dev || !out || !size)
		return maia_error(-EINVAL, "maia_bo_create: NULL argument or size 0");
	if (placement == MAIA_BO_HBM)
		c.flags = DRM_MAIA_BO_HBM;
	else if (placement == MAIA_BO_HOST)
		c.flags = DRM_MAIA_BO_HOST;
	else
		return maia_error(-EINVAL, "maia_bo_create: placement %d is not MAIA_BO_HBM or "
				  "MAIA_BO_HOST", (int)placement);
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_BO_CREATE, &c);
	if (err)
		return maia_error(err, "maia_bo_create: %llu bytes of %s memory",
				  (unsigned long long)size,
				  placement == MAIA_BO_HBM ? "HBM" : "host");
	err = bo_wrap(dev, c.handle, out);
	if (err) {
		gem_close(dev, c.handle);
		return maia_error(err, "maia_bo_create: mapping %llu bytes on the device",
				  (unsigned long long)size);
	}
	return 0;
}

MAIA_EXPORT void maia_bo_destroy(struct maia_bo *bo)
{
	struct maia_bo **link;

	if (!bo)
		return;
	if (bo->cpu)
		munmap(bo->cpu, bo->size);
	if (bo->va) {
		/* A user-queue job may still use it (kernel-path jobs hold the BO). */
		maia_userq_drain(bo->dev);
		vm_bind(bo, DRM_MAIA_VM_UNMAP);
	}
	if (!handle_shared(bo->dev, bo->handle, bo))
		gem_close(bo->dev, bo->handle);
	for (link = &bo->dev->bos; *link; link = &(*link)->next) {
		if (*link == bo) {
			*link = bo->next;
			break;
		}
	}
	if (bo->dev->closing && !bo->dev->bos)
		maia_device_release(bo->dev);
	free(bo);
}

MAIA_EXPORT int maia_bo_map(struct maia_bo *bo, void **ptr)
{
	struct drm_maia_bo_info info;
	void *p;
	int err;

	if (!bo || !ptr)
		return -EINVAL;
	if (!bo->cpu) {
		info = (struct drm_maia_bo_info){ .handle = bo->handle };
		err = maia_ioctl(bo->dev, DRM_IOCTL_MAIA_BO_INFO, &info);
		if (err)
			return err;
		p = mmap(NULL, bo->size, PROT_READ | PROT_WRITE, MAP_SHARED, bo->dev->fd,
			 (off_t)info.mmap_offset);
		if (p == MAP_FAILED)
			return -errno;
		bo->cpu = p;
	}
	*ptr = bo->cpu;
	return 0;
}

MAIA_EXPORT uint64_t maia_bo_va(const struct maia_bo *bo)
{
	return bo ? bo->va : 0;
}

MAIA_EXPORT uint64_t maia_bo_size(const struct maia_bo *bo)
{
	return bo ? bo->size : 0;
}

MAIA_EXPORT uint32_t maia_bo_handle(const struct maia_bo *bo)
{
	return bo ? bo->handle : 0;
}

MAIA_EXPORT int maia_bo_export(struct maia_bo *bo, int *dmabuf_fd)
{
	if (!bo || !dmabuf_fd)
		return -EINVAL;
	if (drmPrimeHandleToFD(bo->dev->fd, bo->handle, DRM_CLOEXEC | DRM_RDWR, dmabuf_fd))
		return -errno;
	return 0;
}

MAIA_EXPORT int maia_bo_import(struct maia_device *dev, int dmabuf_fd, struct maia_bo **out)
{
	uint32_t handle;
	int err;

	if (!dev || !out || dmabuf_fd < 0)
		return -EINVAL;
	if (drmPrimeFDToHandle(dev->fd, dmabuf_fd, &handle))
		return -errno;
	err = bo_wrap(dev, handle, out);
	if (err && !handle_shared(dev, handle, NULL))
		gem_close(dev, handle);
	return err;
}
