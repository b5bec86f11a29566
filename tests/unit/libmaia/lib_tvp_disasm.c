// SPDX-License-Identifier: MIT
/* libmaia's tvp_disasm.c, built into the host tests (no device, no libdrm needed). */
#include "../../../userspace/lib/tvp_disasm.c"
