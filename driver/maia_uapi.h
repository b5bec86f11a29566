/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: hardware values (maia/hw/) to the uAPI's own
 * DRM_MAIA_* values, so that the uAPI stays fixed if the device changes.
 */
#ifndef __MAIA_UAPI_H__
#define __MAIA_UAPI_H__

#include <linux/types.h>

u64 maia_uapi_caps(u32 hw_caps);
u64 maia_uapi_dtypes(u32 hw_dtypes);
u32 maia_uapi_device_status(u32 hw_status);
u32 maia_uapi_model(u32 hw_model);
bool maia_uapi_dtype_to_hw(u32 uapi_dtype, u32 *hw_dtype);
u32 maia_uapi_access(u32 hw_access);
u32 maia_uapi_job_status(u32 hw_status);

#endif /* __MAIA_UAPI_H__ */
