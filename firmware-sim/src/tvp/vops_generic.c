// SPDX-License-Identifier: MIT
/* The element-wise vector ops (vops.h) for any x86-64 or other host. */
#define VOP_NAME		fw_tvp_vop_generic
#define VOP_CMP_NAME		cmp_generic
#define VOP_TRIG_FIX_NAME	trig_fix_generic
#include "vops.h"
