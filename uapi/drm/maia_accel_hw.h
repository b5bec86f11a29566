/* SPDX-License-Identifier: MIT */
/*
 * How the uAPI's values (maia_accel.h) stand for the device's (maia/hw/):
 * one list per kind of value, for the two sides that translate. The kernel
 * turns device values into uAPI ones (driver/maia_uapi.c); libmaia, whose
 * callers build device commands, turns them back (userspace/lib/uapi.c).
 * Both look values up in the tables here, so that a value added to the
 * device and the uAPI is paired in one place.
 *
 * Not part of the installed uAPI: it needs the hardware headers.
 */
#ifndef MAIA_ACCEL_HW_H
#define MAIA_ACCEL_HW_H

#include <maia/hw/dtype.h>
#include <maia/hw/model.h>
#include <maia/hw/queue.h>
#include <maia/hw/regs.h>
#include <maia/hw/tvp.h>

#include "maia_accel.h"

/* A device value and the uAPI value that stands for it. */
struct maia_accel_hw_pair {
	__u32 hw;
	__u64 uapi;
};

/* Capability bits: MAIA_REG_CAPS masks, DRM_MAIA_PARAM_CAPABILITIES masks. */
static const struct maia_accel_hw_pair maia_accel_hw_caps[] = {
	{ MAIA_CAP_MMU, DRM_MAIA_CAP_MMU },
	{ MAIA_CAP_SEMAPHORES, DRM_MAIA_CAP_SEMAPHORES },
	{ MAIA_CAP_TENSOR, DRM_MAIA_CAP_TENSOR },
	{ MAIA_CAP_TELEMETRY, DRM_MAIA_CAP_TELEMETRY },
	{ MAIA_CAP_FLR, DRM_MAIA_CAP_FLR },
	{ MAIA_CAP_FABRIC, DRM_MAIA_CAP_FABRIC },
};

/* Data type numbers (bit n of a mask stands for type n on each side). */
static const struct maia_accel_hw_pair maia_accel_hw_dtypes[] = {
	{ MAIA_DTYPE_FP32, DRM_MAIA_DTYPE_FP32 },
	{ MAIA_DTYPE_FP16, DRM_MAIA_DTYPE_FP16 },
	{ MAIA_DTYPE_BF16, DRM_MAIA_DTYPE_BF16 },
	{ MAIA_DTYPE_FP8_E4M3, DRM_MAIA_DTYPE_FP8_E4M3 },
	{ MAIA_DTYPE_FP8_E5M2, DRM_MAIA_DTYPE_FP8_E5M2 },
	{ MAIA_DTYPE_INT8, DRM_MAIA_DTYPE_INT8 },
	{ MAIA_DTYPE_INT32, DRM_MAIA_DTYPE_INT32 },
	{ MAIA_DTYPE_MXFP8_E4M3, DRM_MAIA_DTYPE_MXFP8_E4M3 },
	{ MAIA_DTYPE_MXFP8_E5M2, DRM_MAIA_DTYPE_MXFP8_E5M2 },
	{ MAIA_DTYPE_MXFP6_E3M2, DRM_MAIA_DTYPE_MXFP6_E3M2 },
	{ MAIA_DTYPE_MXFP6_E2M3, DRM_MAIA_DTYPE_MXFP6_E2M3 },
	{ MAIA_DTYPE_MXFP4_E2M1, DRM_MAIA_DTYPE_MXFP4_E2M1 },
	{ MAIA_DTYPE_MXINT8, DRM_MAIA_DTYPE_MXINT8 },
	{ MAIA_DTYPE_MX9, DRM_MAIA_DTYPE_MX9 },
	{ MAIA_DTYPE_MX6, DRM_MAIA_DTYPE_MX6 },
	{ MAIA_DTYPE_MX4, DRM_MAIA_DTYPE_MX4 },
};

/* A command's status: completion entries' MAIA_STATUS_*, drm_maia_wait.device_status. */
static const struct maia_accel_hw_pair maia_accel_hw_statuses[] = {
	{ MAIA_STATUS_OK, DRM_MAIA_DEVICE_OK },
	{ MAIA_STATUS_BAD_OPCODE, DRM_MAIA_DEVICE_BAD_OPCODE },
	{ MAIA_STATUS_BAD_CMD, DRM_MAIA_DEVICE_BAD_CMD },
	{ MAIA_STATUS_MMU_FAULT, DRM_MAIA_DEVICE_MMU_FAULT },
	{ MAIA_STATUS_DMA_ERROR, DRM_MAIA_DEVICE_DMA_ERROR },
	{ MAIA_STATUS_BAD_DESC, DRM_MAIA_DEVICE_BAD_DESC },
	{ MAIA_STATUS_BAD_CONTEXT, DRM_MAIA_DEVICE_BAD_CONTEXT },
	{ MAIA_STATUS_ABORTED, DRM_MAIA_DEVICE_ABORTED },
	{ MAIA_STATUS_SEM_TIMEOUT, DRM_MAIA_DEVICE_SEM_TIMEOUT },
	{ MAIA_STATUS_HBM_ECC, DRM_MAIA_DEVICE_HBM_ECC },
	{ MAIA_STATUS_FABRIC_LINK, DRM_MAIA_DEVICE_FABRIC_LINK },
	{ MAIA_STATUS_FABRIC_KEY, DRM_MAIA_DEVICE_FABRIC_KEY },
	{ MAIA_STATUS_FABRIC_REMOTE, DRM_MAIA_DEVICE_FABRIC_REMOTE },
	{ MAIA_STATUS_FABRIC_TIMEOUT, DRM_MAIA_DEVICE_FABRIC_TIMEOUT },
	{ MAIA_STATUS_ASID_DENIED, DRM_MAIA_DEVICE_ASID_DENIED },
	{ MAIA_STATUS_FABRIC_COMM_BUSY, DRM_MAIA_DEVICE_FABRIC_COMM_BUSY },
	{ MAIA_STATUS_KERNEL_INVALID, DRM_MAIA_DEVICE_KERNEL_INVALID },
	{ MAIA_STATUS_KERNEL_WATCHDOG, DRM_MAIA_DEVICE_KERNEL_WATCHDOG },
};

/* Chip models: MAIA_REG_MODEL_ID, DRM_MAIA_PARAM_MODEL. */
static const struct maia_accel_hw_pair maia_accel_hw_models[] = {
	{ MAIA_MODEL_MAIA100, DRM_MAIA_MODEL_MAIA100 },
	{ MAIA_MODEL_MAIA200, DRM_MAIA_MODEL_MAIA200 },
};

/* A fault's access: MAIA_REG_FAULT_INFO's, drm_maia_context_status.fault_access. */
static const struct maia_accel_hw_pair maia_accel_hw_accesses[] = {
	{ MAIA_ACCESS_READ, DRM_MAIA_ACCESS_READ },
	{ MAIA_ACCESS_WRITE, DRM_MAIA_ACCESS_WRITE },
};

/*
 * What a job's end means (DRM_MAIA_JOB_*), from the status the device gave
 * the command it ended on: the kernel's SUBMIT path and libmaia's user-queue
 * path, which reads completion entries itself, say the same.
 */
static inline __u32 maia_accel_job_status(__u32 device_status)
{
	switch (device_status) {
	case MAIA_STATUS_OK:
		return DRM_MAIA_JOB_OK;
	case MAIA_STATUS_MMU_FAULT:
		return DRM_MAIA_JOB_FAULT;
	case MAIA_STATUS_ABORTED:
		return DRM_MAIA_JOB_ABORTED;
	default:
		return DRM_MAIA_JOB_ERROR;
	}
}

#endif /* MAIA_ACCEL_HW_H */
