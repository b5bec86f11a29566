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

/* Elements per shared scale in the block formats. */
#define MAIA_MX_BLOCK			32u	/* OCP MX v1.0 formats */
#define MAIA_MSMX_BLOCK			16u	/* MX9 / MX6 / MX4 */

/*
 * Storage geometry, part of the ABI: how many bytes a tensor of a dtype
 * occupies. Block formats store whole blocks (elements packed, plus the
 * MX9/MX6/MX4 microexponent bits); their shared scales are stored apart.
 */

/* Bytes per element of a non-block dtype; 0 for block formats. */
static inline unsigned int maia_dtype_size(unsigned int dtype)
{
	switch (dtype) {
	case MAIA_DTYPE_FP32:
	case MAIA_DTYPE_INT32:
		return 4;
	case MAIA_DTYPE_FP16:
	case MAIA_DTYPE_BF16:
		return 2;
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_FP8_E5M2:
	case MAIA_DTYPE_INT8:
		return 1;
	default:
		return 0;
	}
}

static inline int maia_dtype_is_block(unsigned int dtype)
{
	return dtype >= MAIA_DTYPE_MXFP8_E4M3 && dtype <= MAIA_DTYPE_MX4;
}

/* Elements per block; 1 for non-block dtypes. */
static inline unsigned int maia_dtype_block(unsigned int dtype)
{
	if (dtype >= MAIA_DTYPE_MXFP8_E4M3 && dtype <= MAIA_DTYPE_MXINT8)
		return MAIA_MX_BLOCK;
	if (dtype >= MAIA_DTYPE_MX9 && dtype <= MAIA_DTYPE_MX4)
		return MAIA_MSMX_BLOCK;
	return 1;
}

/* Bytes per block; the element size for non-block dtypes. */
static inline unsigned int maia_dtype_block_bytes(unsigned int dtype)
{
	switch (dtype) {
	case MAIA_DTYPE_MXFP8_E4M3:
	case MAIA_DTYPE_MXFP8_E5M2:
	case MAIA_DTYPE_MXINT8:
		return 32;
	case MAIA_DTYPE_MXFP6_E3M2:
	case MAIA_DTYPE_MXFP6_E2M3:
		return 24;
	case MAIA_DTYPE_MXFP4_E2M1:
		return 16;
	case MAIA_DTYPE_MX9:
		return 17;	/* 16 x 8-bit elements + 8 microexponent bits */
	case MAIA_DTYPE_MX6:
		return 11;	/* 16 x 5 bits + 8 */
	case MAIA_DTYPE_MX4:
		return 7;	/* 16 x 3 bits + 8 */
	default:
		return maia_dtype_size(dtype);
	}
}

#endif /* MAIA_HW_DTYPE_H */
