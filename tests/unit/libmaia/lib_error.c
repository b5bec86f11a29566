// SPDX-License-Identifier: MIT
/* libmaia's error.c, built into the host tests (no device, no libdrm needed). */
#include "../../../userspace/lib/error.c"
