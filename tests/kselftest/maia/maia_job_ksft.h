/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers for the job kselftests (submit_test, recovery_test): buffer
 * objects mapped for the CPU and the device, command buffer building,
 * SUBMIT and WAIT with relative timeouts.
 */
#ifndef MAIA_JOB_KSFT_H
#define MAIA_JOB_KSFT_H

#include <sys/mman.h>

#include <maia/hw/cmd.h>
#include <maia/hw/queue.h>

#include "maia_ksft.h"

#define KSFT_PAGE	4096ull
#define KSFT_MIB	(1ull << 20)
#define NS_PER_SEC	1000000000ll

/* A buffer object, mapped for the CPU at @cpu and for the device at @va. */
struct kbo {
	__u32 handle;
	__u64 size;
	__u64 va;
	void *cpu;
};

static inline int kbo_create(int fd, __u64 size, __u32 placement, __u64 va, struct kbo *bo)
{
	struct drm_maia_bo_create c = { .size = size, .flags = placement };
	struct drm_maia_bo_info info;
	struct drm_maia_vm_bind b;
	void *p;

	memset(bo, 0, sizeof(*bo));
	if (ioctl(fd, DRM_IOCTL_MAIA_BO_CREATE, &c))
		return -errno;
	bo->handle = c.handle;
	bo->size = size;
	memset(&info, 0, sizeof(info));
	info.handle = c.handle;
	if (ioctl(fd, DRM_IOCTL_MAIA_BO_INFO, &info))
		return -errno;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.mmap_offset);
	if (p == MAP_FAILED)
		return -errno;
	bo->cpu = p;
	if (va) {
		memset(&b, 0, sizeof(b));
		b.op = DRM_MAIA_VM_MAP;
		b.handle = c.handle;
		b.va = va;
		b.size = size;
		if (ioctl(fd, DRM_IOCTL_MAIA_VM_BIND, &b))
			return -errno;
		bo->va = va;
	}
	return 0;
}

/* Unmapping is implied by closing the file; this drops the CPU mapping and handle. */
static inline void kbo_destroy(int fd, struct kbo *bo)
{
	struct drm_gem_close c = { .handle = bo->handle };

	if (bo->cpu)
		munmap(bo->cpu, bo->size);
	if (bo->va) {
		struct drm_maia_vm_bind b = {
			.op = DRM_MAIA_VM_UNMAP, .va = bo->va, .size = bo->size,
		};

		ioctl(fd, DRM_IOCTL_MAIA_VM_BIND, &b);
	}
	if (bo->handle)
		ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
	memset(bo, 0, sizeof(*bo));
}

/* Appends commands to a command buffer in a CPU-mapped BO. */
struct kcmd {
	struct kbo *bo;
	__u64 start;	/* offset of the first command of the job being built */
	__u64 used;	/* offset of the next command */
};

static inline void *kcmd_add(struct kcmd *cb, __u16 opcode, __u32 size)
{
	struct maia_cmd_header *hdr = (void *)((char *)cb->bo->cpu + cb->used);

	memset(hdr, 0, size);
	hdr->opcode = opcode;
	hdr->size = size;
	cb->used += size;
	return hdr;
}

static inline void kcmd_nop(struct kcmd *cb)
{
	kcmd_add(cb, MAIA_OP_NOP, sizeof(struct maia_cmd_nop));
}

static inline void kcmd_fill(struct kcmd *cb, __u64 dst, __u64 size, __u32 pattern)
{
	struct maia_cmd_fill *c = kcmd_add(cb, MAIA_OP_FILL, sizeof(*c));

	c->dst = dst;
	c->size = size;
	c->pattern = pattern;
}

static inline void kcmd_copy(struct kcmd *cb, __u64 src, __u64 dst, __u64 width,
			     __u32 height, __u64 src_stride, __u64 dst_stride)
{
	struct maia_cmd_dma_copy *c = kcmd_add(cb, MAIA_OP_DMA_COPY, sizeof(*c));

	c->src = src;
	c->dst = dst;
	c->width = width;
	c->height = height;
	c->src_stride = src_stride;
	c->dst_stride = dst_stride;
}

static inline void kcmd_fence_write(struct kcmd *cb, __u64 addr, __u64 value)
{
	struct maia_cmd_fence_write *c = kcmd_add(cb, MAIA_OP_FENCE_WRITE, sizeof(*c));

	c->addr = addr;
	c->value = value;
}

static inline void kcmd_sem_signal(struct kcmd *cb, __u32 index, __u32 value)
{
	struct maia_cmd_sem_signal *c = kcmd_add(cb, MAIA_OP_SEM_SIGNAL, sizeof(*c));

	c->index = index;
	c->value = value;
}

static inline void kcmd_sem_wait(struct kcmd *cb, __u32 index, __u32 value, __u32 timeout_us)
{
	struct maia_cmd_sem_wait *c = kcmd_add(cb, MAIA_OP_SEM_WAIT, sizeof(*c));

	c->index = index;
	c->value = value;
	c->timeout_us = timeout_us;
}

struct ksubmit_opts {
	__u32 priority;
	const __u32 *in;
	__u32 num_in;
	__u32 out;
};

/* Submits the commands added since the last submit; returns 0 or -errno. */
static inline int kcmd_submit(int fd, struct kcmd *cb, const struct ksubmit_opts *o,
			      __u64 *seqno)
{
	struct drm_maia_submit s = {
		.cmdbuf_handle = cb->bo->handle,
		.cmdbuf_offset = cb->start,
		.cmdbuf_size = cb->used - cb->start,
		.priority = o ? o->priority : DRM_MAIA_PRIO_NORMAL,
		.in_syncobjs = o ? (__u64)(uintptr_t)o->in : 0,
		.num_in_syncobjs = o ? o->num_in : 0,
		.out_syncobj = o ? o->out : 0,
	};

	if (ioctl(fd, DRM_IOCTL_MAIA_SUBMIT, &s))
		return -errno;
	*seqno = s.seqno;
	/* The next job starts 8-byte aligned after this one. */
	cb->start = cb->used;
	return 0;
}

static inline __s64 kmono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* WAIT with a timeout relative to now; 0 or -errno, the result in *w. */
static inline int kwait(int fd, __u64 seqno, __s64 rel_ns, struct drm_maia_wait *w)
{
	memset(w, 0, sizeof(*w));
	w->seqno = seqno;
	w->timeout_ns = kmono_ns() + rel_ns;
	return ioctl(fd, DRM_IOCTL_MAIA_WAIT, w) ? -errno : 0;
}

static inline int kcontext_status(int fd, struct drm_maia_context_status *cs)
{
	memset(cs, 0, sizeof(*cs));
	return ioctl(fd, DRM_IOCTL_MAIA_CONTEXT_STATUS, cs) ? -errno : 0;
}

/* Reads a decimal sysfs or module-parameter file; -1 on error. */
static inline long long kread_ll(const char *path)
{
	char buf[64];

	if (maia_read_file(path, buf, sizeof(buf)))
		return -1;
	return strtoll(buf, NULL, 0);
}

static inline long long kreset_count(const struct maia_node *node)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/reset_count",
		 node->minor);
	return kread_ll(path);
}

/* dev_dir/hwmon/hwmonN of a PCI device directory into out; false without one. */
static inline bool khwmon_dir(const char *dev_dir, char *out, size_t size)
{
	char dir[PATH_MAX + 16];
	struct dirent *de;
	bool found = false;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/hwmon", dev_dir);
	dp = opendir(dir);
	if (!dp)
		return false;
	while ((de = readdir(dp)) && !found) {
		if (strncmp(de->d_name, "hwmon", 5) == 0) {
			snprintf(out, size, "%s/%s", dir, de->d_name);
			found = true;
		}
	}
	closedir(dp);
	return found;
}

/* A file of a directory (sysfs), decimal or 0x; -1 if unreadable. */
static inline long long kread_attr(const char *dir, const char *attr)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	return kread_ll(path);
}

/*
 * Brings a throttled clock back to nominal (throttle_reasons 0). On
 * hardware 1.8 the power controller runs in modeled time, which passes
 * only while the device works: idle time on the chip is a job of NOPs
 * (each about 0.1 us of modeled time, no dynamic power), so the
 * controller sees idle periods and steps the clock back up. The command
 * buffer is used from its start. 0, or -EBUSY if it stayed throttled.
 */
static inline int ksettle_clock(int fd, struct kcmd *cb, const char *dev_dir)
{
	struct drm_maia_wait w;
	__u64 seqno = 0;
	int i, k;

	for (i = 0; i < 8; i++) {
		if (kread_attr(dev_dir, "throttle_reasons") == 0)
			return 0;
		cb->start = cb->used = 0;
		for (k = 0; k < 32768; k++)	/* 256 KiB of NOPs, about 3 ms on the chip */
			kcmd_nop(cb);
		if (kcmd_submit(fd, cb, NULL, &seqno) || kwait(fd, seqno, 60 * NS_PER_SEC, &w))
			return -EIO;
		cb->start = cb->used = 0;
	}
	return kread_attr(dev_dir, "throttle_reasons") == 0 ? 0 : -EBUSY;
}

#endif /* MAIA_JOB_KSFT_H */
