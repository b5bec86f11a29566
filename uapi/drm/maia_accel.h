/* SPDX-License-Identifier: MIT WITH Linux-syscall-note */
/*
 * Maia accelerator kernel uAPI (DRM accel, /dev/accel/accelN).
 *
 * Conventions (Documentation/process/botching-up-ioctls.rst): every struct is
 * a multiple of 8 bytes, user pointers are __u64, pads and unknown flags must
 * be zero or the ioctl fails with -EINVAL, and on failure no output field is
 * written. An ioctl whose size does not match the struct below fails with
 * -EINVAL. Numbers are only ever appended. See Documentation/uapi.rst.
 */
#ifndef _UAPI_MAIA_ACCEL_H_
#define _UAPI_MAIA_ACCEL_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define MAIA_DRIVER_NAME		"maia"
#define MAIA_DRIVER_MAJOR		1

#define DRM_MAIA_GET_PARAM		0x00
#define DRM_MAIA_PING			0x01

#define DRM_IOCTL_MAIA_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_GET_PARAM, struct drm_maia_get_param)
#define DRM_IOCTL_MAIA_PING \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_PING, struct drm_maia_ping)

/* drm_maia_get_param.param */
#define DRM_MAIA_PARAM_DEVICE_ID	0	/* PCI vendor << 16 | device */
#define DRM_MAIA_PARAM_REVISION		1	/* MAIA_REG_REVISION */
#define DRM_MAIA_PARAM_FW_VERSION	2	/* major << 16 | minor << 8 | patch */
#define DRM_MAIA_PARAM_FW_ABI		3	/* major << 16 | minor */
#define DRM_MAIA_PARAM_HBM_SIZE		4	/* bytes */
#define DRM_MAIA_PARAM_NUM_CLUSTERS	5
#define DRM_MAIA_PARAM_TILES_PER_CLUSTER 6
#define DRM_MAIA_PARAM_DTYPES		7	/* bitmask of 1 << MAIA_DTYPE_* */
#define DRM_MAIA_PARAM_NUM_QUEUES	8	/* hardware queues */
#define DRM_MAIA_PARAM_CAPABILITIES	9	/* MAIA_CAP_* of the device */
#define DRM_MAIA_PARAM_SRAM_KIB		10	/* on-chip SRAM per cluster */
#define DRM_MAIA_PARAM_PCI_BDF		11	/* domain << 16 | bus << 8 | devfn */

/**
 * struct drm_maia_get_param - query one device parameter
 * @param: DRM_MAIA_PARAM_*
 * @index: must be 0 (reserved for per-instance parameters)
 * @value: out
 */
struct drm_maia_get_param {
	__u32 param;
	__u32 index;
	__u64 value;
};

/**
 * struct drm_maia_ping - round trip through a hardware queue
 *
 * The driver submits a NOP entry carrying @cookie on its kernel queue, rings
 * the doorbell, and waits for the completion interrupt.
 * @cookie: in, echoed into @echo
 * @flags: must be 0
 * @pad: must be 0
 * @echo: out, the job id the device completed
 * @round_trip_ns: out, doorbell write to completion handled, host clock
 * @device_ns: out, device time at completion
 */
struct drm_maia_ping {
	__u64 cookie;
	__u32 flags;
	__u32 pad;
	__u64 echo;
	__u64 round_trip_ns;
	__u64 device_ns;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_MAIA_ACCEL_H_ */
