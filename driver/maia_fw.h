/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: firmware image loading and the boot handshake.
 */
#ifndef __MAIA_FW_H__
#define __MAIA_FW_H__

#include "maia_drv.h"

int maia_fw_boot(struct maia_device *mdev);

#endif /* __MAIA_FW_H__ */
