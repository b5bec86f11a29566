/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: tensor data types. MAIA_REG_DTYPES advertises the
 * supported set as a bitmask of (1 << MAIA_DTYPE_*).
 * Documentation/hw/dtypes.rst gives each format's rounding and NaN rules.
 */
#ifndef MAIA_HW_DTYPE_H
#define MAIA_HW_DTYPE_H

#define MAIA_DTYPE_FP32			0u
#define MAIA_DTYPE_FP16			1u
#define MAIA_DTYPE_BF16			2u
#define MAIA_DTYPE_FP8_E4M3		3u
#define MAIA_DTYPE_FP8_E5M2		4u
#define MAIA_DTYPE_INT8			5u	/* with a per-tensor scale */
#define MAIA_DTYPE_INT32		6u
#define MAIA_DTYPE_MXFP8_E4M3		7u	/* OCP MX v1.0, 32-element blocks */
#define MAIA_DTYPE_MXFP8_E5M2		8u
#define MAIA_DTYPE_MXFP6_E3M2		9u
#define MAIA_DTYPE_MXFP6_E2M3		10u
#define MAIA_DTYPE_MXFP4_E2M1		11u
#define MAIA_DTYPE_MXINT8		12u
#define MAIA_DTYPE_MX9			13u	/* Microsoft MX, 16-element blocks */
#define MAIA_DTYPE_MX6			14u
#define MAIA_DTYPE_MX4			15u
#define MAIA_DTYPE_COUNT		16u

#endif /* MAIA_HW_DTYPE_H */
