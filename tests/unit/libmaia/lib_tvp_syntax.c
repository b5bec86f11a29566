// SPDX-License-Identifier: MIT
/* libmaia's tvp_syntax.c, built into the host tests (no device, no libdrm needed). */
#include "../../../userspace/lib/tvp_syntax.c"
