/* SPDX-License-Identifier: MIT */
/*
 * libmaia: the userspace library for Maia accelerators.
 *
 * Every function returning int returns 0 (or a non-negative count) on
 * success and a negative errno on failure; maia_strerror() describes it.
 * Set MAIA_TRACE=1 in the environment to log every ioctl to stderr.
 * See Documentation/libmaia.rst.
 */
#ifndef LIBMAIA_H
#define LIBMAIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/hw/tensor.h"	/* device command and tensor descriptor formats */

#ifdef __cplusplus
extern "C" {
#endif

#define LIBMAIA_VERSION_MAJOR 1
#define LIBMAIA_VERSION_MINOR 0

struct maia_device;

/* What maia_device_info() reports; strings are NUL-terminated. */
struct maia_device_info {
	int index;			/* N in /dev/accel/accelN */
	char node[32];			/* "/dev/accel/accel0" */
	char pci_address[16];		/* "0000:00:03.0" */
	uint16_t vendor_id;
	uint16_t device_id;
	uint32_t revision;		/* hardware revision, major << 8 | minor */
	uint32_t link_speed_gts_x10;	/* PCIe link speed in GT/s times 10, 0 unknown */
	uint32_t link_width;		/* lanes, 0 unknown */
	uint32_t fw_version;		/* major << 16 | minor << 8 | patch */
	uint32_t fw_abi;		/* major << 16 | minor */
	uint64_t hbm_size;		/* bytes */
	uint32_t clusters;
	uint32_t tiles_per_cluster;
	uint32_t sram_kib;		/* per cluster */
	uint32_t num_queues;
	uint32_t dtypes;		/* bitmask of 1 << MAIA_DTYPE_* */
	uint32_t capabilities;		/* MAIA_CAP_* */
	char driver_version[32];	/* "maia 1.0.0" */
};

struct maia_ping_result {
	uint64_t echo;			/* cookie the device completed */
	uint64_t round_trip_ns;		/* kernel-measured doorbell to completion */
	uint64_t device_ns;		/* device clock at completion */
};

/* Number of Maia devices present, or a negative errno. */
int maia_device_count(void);

/* Open the index-th Maia device (in /dev/accel order). */
int maia_device_open(int index, struct maia_device **out);
/* Open by PCI address, "0000:00:03.0" or "00:03.0". */
int maia_device_open_pci(const char *pci_address, struct maia_device **out);
void maia_device_close(struct maia_device *dev);

/* The DRM fd, for poll() and for interop (syncobjs, dma-bufs). */
int maia_device_fd(const struct maia_device *dev);

int maia_device_info(struct maia_device *dev, struct maia_device_info *info);

/* One DRM_MAIA_PARAM_* value. */
int maia_query(struct maia_device *dev, uint32_t param, uint64_t *value);

/* Round trip through a hardware queue: doorbell, device, interrupt. */
int maia_ping(struct maia_device *dev, uint64_t cookie, struct maia_ping_result *result);

/* ---- Buffer objects -------------------------------------------------- */

struct maia_bo;

enum maia_placement {
	MAIA_BO_HBM = 1,	/* device memory; CPU access through the BAR, write-combined */
	MAIA_BO_HOST = 2,	/* host memory the device reaches by DMA */
};

/*
 * Create a buffer object and map it into the device address space at an
 * address libmaia picks (maia_bo_va). size is rounded up to 4 KiB.
 */
int maia_bo_create(struct maia_device *dev, uint64_t size, enum maia_placement placement,
		   struct maia_bo **out);
/* Unmap from the device and free (the kernel keeps it while jobs use it). */
void maia_bo_destroy(struct maia_bo *bo);
/* CPU pointer to the contents (mapped on first use). */
int maia_bo_map(struct maia_bo *bo, void **ptr);
uint64_t maia_bo_va(const struct maia_bo *bo);
uint64_t maia_bo_size(const struct maia_bo *bo);
uint32_t maia_bo_handle(const struct maia_bo *bo);
/* dma-buf export and import (PRIME). */
int maia_bo_export(struct maia_bo *bo, int *dmabuf_fd);
int maia_bo_import(struct maia_device *dev, int dmabuf_fd, struct maia_bo **out);

/* ---- Command buffers ------------------------------------------------- */

/*
 * A command buffer in the device format (maia/hw/cmd.h, maia/hw/tensor.h),
 * built in a host buffer object. Append commands, then submit. Append
 * functions return 0 or -ENOSPC when the buffer is full (nothing appended).
 */
struct maia_cmdbuf;

int maia_cmdbuf_create(struct maia_device *dev, uint32_t capacity, struct maia_cmdbuf **out);
void maia_cmdbuf_destroy(struct maia_cmdbuf *cb);
void maia_cmdbuf_reset(struct maia_cmdbuf *cb);
uint32_t maia_cmdbuf_size(const struct maia_cmdbuf *cb);
/* Append any device command; cmd->size bytes are copied. */
int maia_cmd_raw(struct maia_cmdbuf *cb, const void *cmd);
int maia_cmd_nop(struct maia_cmdbuf *cb);
int maia_cmd_copy(struct maia_cmdbuf *cb, uint64_t dst, uint64_t src, uint64_t bytes);
int maia_cmd_copy_2d(struct maia_cmdbuf *cb, uint64_t dst, uint64_t dst_stride, uint64_t src,
		     uint64_t src_stride, uint64_t width, uint32_t height);
int maia_cmd_fill(struct maia_cmdbuf *cb, uint64_t dst, uint64_t bytes, uint32_t pattern);
int maia_cmd_fence_write(struct maia_cmdbuf *cb, uint64_t addr, uint64_t value);
int maia_cmd_timestamp(struct maia_cmdbuf *cb, uint64_t addr);
int maia_cmd_sem_signal(struct maia_cmdbuf *cb, uint32_t index, uint32_t value);
int maia_cmd_sem_wait(struct maia_cmdbuf *cb, uint32_t index, uint32_t value,
		      uint32_t timeout_us);

/* Tensor descriptor for a contiguous tensor (row-major, innermost last). */
int maia_tensor_init(struct maia_tensor_desc *desc, uint64_t va, unsigned int dtype,
		     unsigned int rank, const uint32_t *shape);
/* GEMM: C = alpha * op(A) * op(B) + beta * C; flags MAIA_GEMM_F_*. */
int maia_cmd_gemm(struct maia_cmdbuf *cb, const struct maia_tensor_desc *a,
		  const struct maia_tensor_desc *b, const struct maia_tensor_desc *c,
		  float alpha, float beta, uint32_t flags);

/* ---- Submission ------------------------------------------------------ */

struct maia_submit_opts {
	uint32_t priority;		/* DRM_MAIA_PRIO_*, default NORMAL */
	const uint32_t *in_syncobjs;	/* wait for these first */
	uint32_t num_in_syncobjs;
	uint32_t out_syncobj;		/* receives the job's fence, or 0 */
};

struct maia_job_status {
	uint32_t status;		/* DRM_MAIA_JOB_* */
	uint32_t device_status;		/* MAIA_STATUS_* */
	uint32_t error_offset;		/* failing command's offset */
};

/* Submit; *seqno identifies the job for maia_wait. opts may be NULL. */
int maia_submit(struct maia_device *dev, struct maia_cmdbuf *cb,
		const struct maia_submit_opts *opts, uint64_t *seqno);
/* Wait up to timeout_ns (relative); -ETIME when it passes. */
int maia_wait(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
	      struct maia_job_status *status);
/* Submit, wait, and turn a failed job into a negative errno (-EIO, -EFAULT, -ETIMEDOUT). */
int maia_run(struct maia_device *dev, struct maia_cmdbuf *cb, int64_t timeout_ns,
	     struct maia_job_status *status);

struct maia_context_status {
	bool faulted;
	uint32_t asid;
	uint64_t fault_addr;
	uint32_t fault_access;		/* MAIA_ACCESS_READ / WRITE */
	uint64_t device_resets;		/* since the device was opened */
};

int maia_context_status(struct maia_device *dev, struct maia_context_status *st);

/* Name of a DRM_MAIA_JOB_* status. */
const char *maia_job_status_name(uint32_t status);

/* Name of a MAIA_DTYPE_* ("bf16", "mxfp8_e4m3", ...), or NULL. */
const char *maia_dtype_name(unsigned int dtype);

/* Text for a negative errno returned by this library. */
const char *maia_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* LIBMAIA_H */
